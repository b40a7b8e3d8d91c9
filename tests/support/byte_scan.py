"""An independent decoder for erasure tests: open every file under a folder (hidden and underscore
folders included) and report where any of the given values still lives.

Deliberately separate from piitracer's own verifier, so a bug cannot hide itself in both:
Parquet (every column of every row group, and the footer min/max statistics) with pyarrow, Avro
(Iceberg manifests and manifest lists, including the binary lower/upper bounds) with fastavro, JSON
and JSON-lines (Delta logs, Iceberg metadata; JSON strings inside them such as Delta's ``stats`` are
parsed too), anything else as raw bytes. Values compare as typed values: the integer 7 is not found
in the text "17".
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any, Iterable, Iterator

import fastavro
import pyarrow.parquet as pq


def find_values(root: Path, values: Iterable[Any]) -> list[str]:
    """``file: where`` for every place under ``root`` that holds one of ``values``."""
    wanted = list(values)
    found = []
    for path in sorted(p for p in Path(root).rglob("*") if p.is_file()):
        for where in _scan(path, wanted):
            found.append(f"{path.relative_to(root)}: {where}")
    return found


def values_in_file(path: Path, values: Iterable[Any]) -> list[str]:
    """``where`` for every place in the one file ``path`` that holds one of ``values``."""
    return list(_scan(Path(path), list(values)))


def _scan(path: Path, wanted: list[Any]) -> Iterator[str]:
    name = path.name
    if name.endswith(".parquet"):
        yield from _parquet(path, wanted)
    elif name.endswith(".avro"):
        yield from _avro(path, wanted)
    elif name.endswith((".json", ".jsonl", ".crc", ".checkpoint")) or "_delta_log" in path.parts:
        yield from _json_text(path.read_text(errors="replace"), wanted)
    else:
        yield from _raw(path.read_bytes(), wanted)


def _parquet(path: Path, wanted: list[Any]) -> Iterator[str]:
    handle = pq.ParquetFile(path)
    metadata = handle.metadata
    for group in range(metadata.num_row_groups):
        for index in range(metadata.num_columns):
            column = metadata.row_group(group).column(index)
            stats = column.statistics
            if stats is not None and stats.has_min_max:
                for bound in (stats.min, stats.max):
                    if _matches(bound, wanted):
                        yield f"row group {group} footer statistics of {column.path_in_schema}"
    table = handle.read()
    for name in table.column_names:
        for value in table.column(name).to_pylist():
            for hit in _walk(value, wanted):
                yield f"column {name} holds a value{hit}"


def _avro(path: Path, wanted: list[Any]) -> Iterator[str]:
    with path.open("rb") as handle:
        for number, record in enumerate(fastavro.reader(handle)):
            for hit in _walk(record, wanted):
                yield f"record {number}{hit}"


def _json_text(text: str, wanted: list[Any]) -> Iterator[str]:
    try:
        documents = [json.loads(text)]
    except json.JSONDecodeError:
        documents = []
        for line in text.splitlines():
            try:
                documents.append(json.loads(line))
            except json.JSONDecodeError:
                yield from _raw(line.encode(), wanted)
    for document in documents:
        for hit in _walk(document, wanted):
            yield f"JSON{hit}"


def _raw(data: bytes, wanted: list[Any]) -> Iterator[str]:
    for value in wanted:
        if isinstance(value, str) and len(value) >= 4 and value.encode() in data:
            yield "raw bytes"


def _walk(value: Any, wanted: list[Any], where: str = "") -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, wanted, f"{where}.{key}")
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _walk(item, wanted, where)
    elif isinstance(value, str) and value[:1] in "{[":
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parsed = None
        if parsed is not None:
            yield from _walk(parsed, wanted, where + " (JSON string)")
        elif _matches(value, wanted):
            yield f" at {where or '(value)'}"
    elif _matches(value, wanted):
        yield f" at {where or '(value)'}"


def _matches(value: Any, wanted: list[Any]) -> bool:
    """Typed equality: an int matches an int, a string a string; bytes match a value's binary
    encoding (Iceberg bounds). A float 1.0 is not the BIGINT key 1."""
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, bytes):
        return any(value in _encodings(target) for target in wanted)
    return any(type(value) is type(target) and value == target for target in wanted)


def _encodings(target: Any) -> set[bytes]:
    """How Iceberg manifests store a single value as a bound (little-endian, UTF-8)."""
    if isinstance(target, bool):
        return set()
    if isinstance(target, int):
        out = {struct.pack("<q", target)}
        if -(2**31) <= target < 2**31:
            out.add(struct.pack("<i", target))
        return out
    if isinstance(target, str):
        return {target.encode()}
    return set()
