"""Decode every file under a dataset location and report where a resolved value still lives.

Every file is listed (hidden and underscore folders included: ``_delta_log``, ``_change_data``,
``.crc`` side files, a writer's ``_tmp`` leftovers) and decoded by what it is, not by where it
sits: Parquet (every column chunk of every row group that :mod:`~piitracer.verify.parquet_proofs`
cannot prove free of the values from its dictionary, statistics, page index, Bloom filter or type,
nested fields flattened; and the footer statistics), Avro (Iceberg manifests and manifest lists,
bounds decoded with the table schema the manifest carries), JSON and JSON lines (Delta logs with
their ``stats`` strings parsed, Iceberg metadata), and anything else as raw bytes. A hit names
the file, the place and the value set; never the value: paths and field names that contain a
value are redacted.

Not every place can hold a subject value (:class:`~piitracer.verify.values.Place`): counts,
sizes, ids, offsets and sequence numbers in Iceberg manifests and metadata and in Delta logs
(``record_count``, ``value_counts``, ``file_size_in_bytes``, ``added-records``, ``numRecords``,
snapshot ids...) are never matched as numbers; only value-bearing places are (data, partition
values, lower/upper bounds, min/max statistics, default values, predicates and free text of a
commit). Strings are searched everywhere: a name in a file path or a table property is a leak.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Iterator

from piitracer.storage.locations import Location
from piitracer.storage.store import Store
from piitracer.verify.scope import ScopedIndex
from piitracer.verify.values import Place, ValueIndex, url_decodings

PARQUET_MAGIC = b"PAR1"
AVRO_MAGIC = b"Obj\x01"
PUFFIN_MAGIC = b"PFA1"  # Iceberg's Puffin files: v3 deletion vectors, statistics


@dataclass(frozen=True)
class Hit:
    """One place holding a value of one value set (the value itself is never kept)."""

    file: str  # relative to the scanned root, values redacted
    where: str
    value_set: str
    kind: str  # data | statistics | manifest_bound | manifest | log_stats | log | metadata | raw | path


@dataclass
class ScanResult:
    files: list[str] = field(default_factory=list)  # every file listed (relative paths, redacted)
    hits: list[Hit] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # 'file: why' (decoded as raw bytes instead)
    chunks: "ChunkCounts" = field(default_factory=lambda: ChunkCounts())
    key_rows: list = field(default_factory=list)  # per file of ``files``: its KeyRows when asked (else None)

    def add(self, scan: "FileScan") -> None:
        """Append one file's outcome (files in listing order give the same result anywhere)."""
        self.files.append(scan.shown)
        self.key_rows.append(scan.key_rows)
        self.hits.extend(scan.hits)
        if scan.unreadable:
            self.unreadable.append(scan.unreadable)
        self.chunks.add(scan.chunks)


DECODED_LISTED = 10_000  # decoded chunks listed with why (verify --explain); all are counted


@dataclass
class ChunkCounts:
    """Parquet column chunks (one column of one row group): how each was proven to hold no
    searched value without decoding its rows (:data:`~piitracer.verify.parquet_proofs.METHODS`:
    type, statistics, page_index, bloom, dictionary, pages) or that it was decoded; the bytes read from
    the Parquet files against their total size; and, per decoded chunk, where and why (no value)."""

    proven: int = 0
    decoded: int = 0
    by_method: dict[str, int] = field(default_factory=dict)
    bytes_read: int = 0
    bytes_total: int = 0
    decoded_chunks: list["DecodedChunk"] = field(default_factory=list)

    def count(self, method: str, chunk: "DecodedChunk | None" = None) -> None:
        """One chunk settled by ``method``; a decoded one with its place and reason (the first
        :data:`DECODED_LISTED` only: a scan of millions of chunks keeps counts, not a list)."""
        self.by_method[method] = self.by_method.get(method, 0) + 1
        if method == "decoded":
            self.decoded += 1
            if chunk is not None and len(self.decoded_chunks) < DECODED_LISTED:
                self.decoded_chunks.append(chunk)
        else:
            self.proven += 1

    def add(self, other: "ChunkCounts") -> None:
        self.proven += other.proven
        self.decoded += other.decoded
        for method, number in other.by_method.items():
            self.by_method[method] = self.by_method.get(method, 0) + number
        self.bytes_read += other.bytes_read
        self.bytes_total += other.bytes_total
        self.decoded_chunks.extend(other.decoded_chunks[:max(0, DECODED_LISTED - len(self.decoded_chunks))])


def chunk_facts(chunks: ChunkCounts, explain: bool = False) -> dict[str, Any]:
    """The verification model's fields for these counts; ``explain``: with every decoded chunk and why."""
    from piitracer.model.verification import ChunkProofs, DecodedChunkNote

    proofs = ChunkProofs(**{method: chunks.by_method.get(method, 0) for method in
                            ("type", "statistics", "page_index", "bloom", "dictionary", "pages", "decoded")},
                         bytes_read=chunks.bytes_read, bytes_total=chunks.bytes_total)
    notes = tuple(DecodedChunkNote(file=c.file, row_group=c.row_group, column=c.column, why=c.why)
                  for c in chunks.decoded_chunks) if explain else ()
    return dict(column_chunks_proven=chunks.proven, column_chunks_decoded=chunks.decoded, chunk_proofs=proofs,
                decoded_chunks=notes)


@dataclass(frozen=True)
class DecodedChunk:
    """A chunk that had to be decoded: file (redacted), row group, column (redacted) and why."""

    file: str
    row_group: int
    column: str
    why: str


@dataclass
class FileSource:
    """One file to decode, wherever it lives (a local folder, an object store): opened at random
    access for Parquet and Avro, read whole at most once for text and raw bytes."""

    store: Store
    location: Location  # the file itself
    relative: str  # its path relative to the scanned location
    shown: str | None = None  # that path as a report shows it (redacted), when already known

    @property
    def name(self) -> str:
        return self.relative.rsplit("/", 1)[-1]

    def open(self):
        """A random-access file (Parquet footers are read from the end)."""
        return self.store.open_input(self.location)

    def head(self, size: int = 4) -> bytes:
        with self.open() as handle:
            return handle.read(size)

    @cached_property
    def data(self) -> bytes:
        return self.store.read_bytes(self.location)

    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


def scan_location(root: Location, index: ValueIndex, store: Store, files: list[str] | None = None,
                  scope: ScopedIndex | None = None, keys: dict[str, Any] | None = None) -> ScanResult:
    """Decode every file under ``root`` (or just ``files``, paths relative to ``root``) and collect
    the places holding a value of ``index`` (identifier columns: of ``scope``'s whole values);
    ``keys``: data files whose key rows to read too (relative path -> key column)."""
    result = ScanResult()
    keys = keys or {}
    for relative in ([entry.relative for entry in store.list_files(root)] if files is None else files):
        result.add(scan_one_file(root, relative, index, store, scope, keys.get(relative)))
    return result


@dataclass(frozen=True)
class FileScan:
    """What decoding one file found: its shown (redacted) path, its hits, and why it could only be
    read as raw bytes (if so). Holds no value: this is what a Spark task sends back."""

    shown: str
    hits: tuple[Hit, ...] = ()
    unreadable: str | None = None
    chunks: ChunkCounts = field(default_factory=ChunkCounts)
    key_rows: Any = None  # the data file's KeyRows (verify.key_rows) when its key column was asked for


def scan_one_file(root: Location, relative: str, index: ValueIndex, store: Store,
                  scope: ScopedIndex | None = None, key: Any = None) -> FileScan:
    """Decode one file (``relative`` to ``root``): the same work wherever it runs, in the driver or
    in a Spark task. ``scope``: the dataset's identifier columns, searched for whole values of
    their own value sets only (:mod:`~piitracer.verify.scope`); ``index`` is ``scope.index`` then.
    ``key`` (a :class:`~piitracer.formats.history.KeyColumn`): the file is a table's data file and
    the rows its key column matches are read in the same pass (:mod:`~piitracer.verify.key_rows`)."""
    shown = redact_path(relative, index)
    if not index:
        return FileScan(shown)
    source = FileSource(store, root.child(relative), relative, shown)
    hits: set[tuple[str, str, str]] = set()
    for where, names, kind in _path_hits(relative, index):
        hits |= {(where, n, kind) for n in names}
    unreadable = None
    chunks = ChunkCounts()
    keys: list = []
    try:
        for where, names, kind in scan_file(source, index, chunks, scope, key, keys):
            hits |= {(where, n, kind) for n in names}
    except Exception as error:  # a file we cannot decode is still searched as raw bytes
        unreadable = f"{shown}: {type(error).__name__}"
        chunks, keys = ChunkCounts(), []
        for where, names, kind in _raw(source, index):
            hits |= {(where, n, kind) for n in names}
    return FileScan(shown, tuple(Hit(shown, where, name, kind) for where, name, kind in sorted(hits)), unreadable, chunks,
                    keys[0] if keys else None)


def scan_file(source: FileSource, index: ValueIndex, chunks: ChunkCounts | None = None,
              scope: ScopedIndex | None = None, key: Any = None, keys: list | None = None
              ) -> Iterator[tuple[str, set[str], str]]:
    """(where, value-set names, kind) for every place in one file; ``chunks`` counts the Parquet
    column chunks proven without decoding and those decoded; with ``key``, a Parquet data file's
    key rows are appended to ``keys`` once it is read through."""
    head = source.head(4)
    in_log = "_delta_log" in source.relative.split("/")
    name = source.name
    if head == PARQUET_MAGIC:
        yield from _parquet(source, index, in_log, chunks if chunks is not None else ChunkCounts(), scope,
                            None if in_log else key, keys)
    elif head == AVRO_MAGIC:
        yield from _avro(source, index)
    elif head == PUFFIN_MAGIC:
        yield from _puffin(source, index)
    elif name.endswith(".gz") and name[:-3].endswith(".json"):
        yield from _json_text(gzip.decompress(source.data).decode("utf-8", "replace"), index, "metadata")
    elif name.endswith((".json", ".jsonl", ".ndjson")) or (in_log and not name.endswith(".bin")) or name == "_last_checkpoint":
        kind = "log" if in_log else ("metadata" if name.endswith(".metadata.json") else "raw")
        if index.may_be_in_json(source.data):  # else no value is in it: not even decoded
            yield from _json_text(source.text(), index, kind)
    else:
        yield from _raw(source, index)


# ---- paths ----------------------------------------------------------------------------------

def _path_hits(relative: str, index: ValueIndex) -> Iterator[tuple[str, set[str], str]]:
    # Hive-style partition folders ('user_id=7000000001') carry values; writers' file names carry
    # task and sequence numbers, which are not (a name string in a file name still is).
    names = set().union(*(index.find(form, Place.PATH) for form in (relative, *url_decodings(relative))))
    if names:
        yield "file path", names, "path"


def redact_path(relative: str, index: ValueIndex) -> str:
    """The path with every value in it replaced by ``<value set>``."""
    parts = []
    for segment in relative.split("/"):
        if "=" in segment:
            key, value = segment.split("=", 1)
            names = set().union(*(index.match(form) for form in (value, *url_decodings(value))))
            if names:
                parts.append(f"{key}=<{sorted(names)[0]}>")
                continue
        parts.append(index.redact_text(segment))
    return "/".join(parts)


# ---- Parquet --------------------------------------------------------------------------------

def _parquet(source: FileSource, index: ValueIndex, in_log: bool, chunks: ChunkCounts,
             scope: ScopedIndex | None = None, key: Any = None, keys: list | None = None
             ) -> Iterator[tuple[str, set[str], str]]:
    import pyarrow.parquet as pq

    from piitracer.verify.parquet_pages import CountingFile, read_metadata

    with CountingFile(source.open()) as counted:
        try:
            metadata, footer = read_metadata(counted)
            handle = pq.ParquetFile(counted, metadata=metadata)
            reader = None
            if key is not None and keys is not None:
                from piitracer.verify.key_rows import KeyRowsReader

                reader = KeyRowsReader.open(handle, key, index, index.whole_values())
            yield from _parquet_file(handle, counted, footer, source, index, in_log, chunks, scope, reader)
            if reader is not None:
                keys.append(reader.result())
        finally:
            chunks.bytes_read += counted.bytes_read
            chunks.bytes_total += counted.size()


def _parquet_file(handle, counted, footer: bytes, source: FileSource, index: ValueIndex, in_log: bool,
                  chunks: ChunkCounts, scope: ScopedIndex | None = None, keys=None) -> Iterator[tuple[str, set[str], str]]:
    from piitracer.verify.parquet_proofs import ParquetProver

    metadata = handle.metadata
    schema = handle.schema_arrow
    offsets = _offset_columns(schema)
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for number in range(row_group.num_columns):
            column = row_group.column(number)
            stats = column.statistics
            if stats is None or not stats.has_min_max:
                continue
            # A checkpoint's statistics are those of its actions: read by the log's places.
            place = (delta_log_place(tuple(column.path_in_schema.split("."))) if in_log
                     else Place.COUNT if column.path_in_schema in offsets else Place.VALUE)
            for label, bound in (("min", stats.min), ("max", stats.max)):
                names = index.find(bound, place)
                if names:
                    yield f"footer statistics {label} of {index.redact_text(column.path_in_schema)}", names, "statistics"
    shown = source.shown if source.shown is not None else redact_path(source.relative, index)
    if in_log:
        # Delta checkpoints: the add actions' 'stats' are JSON strings; small files, walk them.
        table = handle.read()
        for group in range(metadata.num_row_groups):
            for name in schema.names:
                chunks.count("decoded", DecodedChunk(shown, group, index.redact_text(name), "Delta checkpoint: read whole"))
        for number, record in enumerate(table.to_pylist()):
            for where, names in _walk(record, index, "", (), delta_log_place):
                yield f"checkpoint row {number} {where}", names, "log_stats" if "stats" in where else "log"
        return
    from piitracer.verify.columns import column_hits

    searched = [name for name in schema.names if name not in offsets]  # a position delete's 'pos' is an offset
    # Identifier columns: whole values of their own value sets, on every path (verify.scope).
    per_column = scope.for_schema(schema) if scope is not None else {}
    prover = ParquetProver(counted, metadata, schema, index, footer, per_column)
    if keys is not None:
        keys.prover = prover
    for group in range(metadata.num_row_groups):
        needed = []
        for name in searched:
            proof = prover.prove(group, name)
            if keys is not None and name == keys.name:
                keys.prove(group)
            if proof.method == "decoded":
                needed.append(name)
                chunks.count("decoded", DecodedChunk(shown, group, index.redact_text(name), proof.why))
            else:
                chunks.count(proof.method)
        part = handle.read_row_group(group, columns=needed) if needed else None
        for name in needed:
            for where, names in column_hits(name, part.column(name), per_column.get(name, index), redact=index):
                yield where, names, "data"
        if keys is not None:  # the key column's matching rows, from the columns just decoded when it is one
            keys.add(group, part)


# Iceberg's reserved field ids of a position delete file's row position (the spec's 'pos').
ICEBERG_POSITION_FIELD_IDS = {b"2147483545"}


def _offset_columns(schema) -> set[str]:
    """Columns of a Parquet file that hold row positions, not values: Iceberg position deletes."""
    return {f.name for f in schema if (f.metadata or {}).get(b"PARQUET:field_id") in ICEBERG_POSITION_FIELD_IDS}


# ---- Avro (Iceberg manifests, manifest lists) ------------------------------------------------

def _avro(source: FileSource, index: ValueIndex) -> Iterator[tuple[str, set[str], str]]:
    import io

    import fastavro

    from piitracer.formats.avro_container import read_container

    container = read_container(source.data)  # AvroContainerError: searched as raw bytes
    if container is None:  # a codec only fastavro reads
        reader = fastavro.block_reader(io.BytesIO(source.data))
        metadata, blocks = reader.metadata, [block.bytes_.getvalue() for block in reader]
    else:
        metadata, blocks = container.metadata, [block for _, block in container.blocks]
    iceberg = "format-version" in metadata
    # An Iceberg manifest or manifest list says its format version; any other Avro is data.
    # Its blocks, decompressed, are searched for every form a value takes there first: most
    # hold none, and decoding every record of every list of a long history is not needed.
    if iceberg and not any(index.may_be_in_avro(block) for block in blocks):
        return
    records = container.records() if container is not None else fastavro.reader(io.BytesIO(source.data))
    field_types = _iceberg_field_types(metadata.get("schema"))
    # A manifest list repeats the entry of every manifest its snapshot still reads, so a table's
    # lists hold its history again and again: each distinct record (the same bytes, under the
    # same table schema) is walked once per scan; its places are the same wherever it sits.
    seen = index.__dict__.setdefault("_avro_records", {})
    for number, record in enumerate(records):
        if iceberg:
            key = (metadata.get("schema"), repr(record))
            found = seen.get(key)
            if found is None:
                found = seen[key] = list(_avro_record(record, index, field_types, "", ()))
            for where, names, kind in found:
                yield f"record {number}{where}", names, kind
        else:
            for where, names in _walk(record, index, f"record {number}", (), _any_place_holds_values):
                yield where, names, "data"


# Manifest fields that are paths; everything else outside 'partition' and the bounds is a count,
# a size, an id, an offset or a sequence number (Iceberg spec, manifest and manifest list fields).
ICEBERG_PATH_FIELDS = {"file_path", "manifest_path", "referenced_data_file"}


def _manifest_place(keys: tuple[str, ...]) -> Place:
    if "partition" in keys:
        return Place.VALUE
    if keys and keys[-1] in ICEBERG_PATH_FIELDS:
        return Place.PATH
    return Place.COUNT


def _avro_record(value: Any, index: ValueIndex, types: dict[int, str], where: str,
                 keys: tuple[str, ...]) -> Iterator[tuple[str, set[str], str]]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("lower_bounds", "upper_bounds") and isinstance(item, (list, dict)):
                pairs = item.items() if isinstance(item, dict) else ((p.get("key"), p.get("value")) for p in item)
                for field_id, raw in pairs:
                    if isinstance(raw, (bytes, bytearray)):
                        names, truncated = index.match_bound(bytes(raw), types.get(int(field_id)) if field_id is not None else None)
                        if names:
                            label = f"{where} {key} of field {field_id}" + (" (truncated prefix)" if truncated else "")
                            yield label, names, "manifest_bound"
            elif key in ("lower_bound", "upper_bound") and isinstance(item, (bytes, bytearray)):
                # Manifest-list partition summaries: the partition field's type is not in the file.
                names, _ = index.match_bound(bytes(item), None)
                if names:
                    yield f"{where} partition summary {key}", names, "manifest_bound"
            else:
                yield from _avro_record(item, index, types, f"{where}.{key}", keys + (key,))
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _avro_record(item, index, types, where, keys)
    elif isinstance(value, (bytes, bytearray)):
        return  # key metadata and the like: not values
    else:
        names = index.find(value, _manifest_place(keys))
        if names:
            yield where, names, "manifest"


def _iceberg_field_types(schema_text: Any) -> dict[int, str]:
    """Field id -> Iceberg primitive type name, from the table schema a manifest carries."""
    if not schema_text:
        return {}
    try:
        schema = json.loads(schema_text)
    except (TypeError, json.JSONDecodeError):
        return {}
    types: dict[int, str] = {}

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if "id" in node and isinstance(node.get("type"), str):
                types[int(node["id"])] = node["type"]
            if node.get("type") == "list" and isinstance(node.get("element"), str):
                types[int(node["element-id"])] = node["element"]
            if node.get("type") == "map":
                if isinstance(node.get("key"), str):
                    types[int(node["key-id"])] = node["key"]
                if isinstance(node.get("value"), str):
                    types[int(node["value-id"])] = node["value"]
            for item in node.values():
                visit(item)
        elif isinstance(node, list):
            for item in node:
                visit(item)

    visit(schema)
    return types


# ---- JSON, JSON lines, raw ---------------------------------------------------------------------

# Delta log: the places that hold table values (Delta protocol: add/remove partitionValues, the
# stats' minValues/maxValues, a commit's operationParameters such as the DELETE predicate, and the
# free-text userMetadata). numRecords, nullCount, size, modificationTime, deletion vector offsets
# and cardinalities, operationMetrics, versions and timestamps are counts, sizes and ids.
DELTA_VALUE_FIELDS = {"partitionValues", "partitionValues_parsed", "minValues", "maxValues",
                      "operationParameters", "userMetadata"}
DELTA_PATH_FIELDS = {"path"}
# Iceberg table metadata: column default values hold values; these fields hold paths; the rest
# (ids, sequence numbers, timestamps, snapshot summaries' counts, properties) hold no numbers of
# a subject. A snapshot summary's partition key ('partitions.user_id=7') is read as a path.
ICEBERG_METADATA_PATH_FIELDS = {"location", "metadata-file", "manifest-list", "statistics-path", "path"}


def _any_place_holds_values(keys: tuple[str, ...]) -> Place:
    """Files whose layout piitracer does not know (unknown JSON, non-Iceberg Avro): every leaf may be a value."""
    return Place.VALUE


def delta_log_place(keys: tuple[str, ...]) -> Place:
    """Where a number in a Delta log (JSON commit, checkpoint, .crc) can be a subject value."""
    if any(key in DELTA_VALUE_FIELDS for key in keys):
        return Place.VALUE
    if keys and keys[-1] in DELTA_PATH_FIELDS:
        return Place.PATH
    return Place.COUNT


def iceberg_metadata_place(keys: tuple[str, ...]) -> Place:
    """Where a number in an Iceberg ``*.metadata.json`` can be a subject value."""
    if any(key.endswith("-default") for key in keys):
        return Place.VALUE
    if keys and keys[-1] in ICEBERG_METADATA_PATH_FIELDS:
        return Place.PATH
    return Place.COUNT


def _json_text(text: str, index: ValueIndex, kind: str) -> Iterator[tuple[str, set[str], str]]:
    if not index.may_be_in_json(text):  # no value's literal in the text: nothing to walk
        return
    try:
        documents: list[tuple[str, Any]] = [("", json.loads(text))]
    except json.JSONDecodeError:
        documents = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                documents.append((f"line {number}", json.loads(line)))
            except json.JSONDecodeError:
                names = index.search_text(line)
                if names:
                    yield f"line {number} (text)", names, "raw"
    place_of = {"log": delta_log_place, "metadata": iceberg_metadata_place}.get(kind, _any_place_holds_values)
    for prefix, document in documents:
        for where, names in _walk(document, index, "", (), place_of):
            label = f"{prefix} {where}".strip() or "(document)"
            yield label, names, "log_stats" if kind == "log" and ".stats" in where else kind


def _walk(value: Any, index: ValueIndex, where: str, keys: tuple[str, ...],
          place_of: Callable[[tuple[str, ...]], Place]) -> Iterator[tuple[str, set[str]]]:
    """Every leaf of a JSON-like value, searched as its place allows (``place_of`` the keys that
    lead to it); JSON held in strings (Delta 'stats') is parsed too. Keys are read as paths where
    the place holds no values (a summary's 'partitions.user_id=7'), as values where it does."""
    if isinstance(value, dict):
        for key, item in value.items():
            shown = index.redact_text(str(key))
            place = place_of(keys + (str(key),))
            key_names = index.find(key, Place.VALUE if place is Place.VALUE else Place.PATH)
            if key_names:
                yield f"{where}.{shown} (key)", key_names
            yield from _walk(item, index, f"{where}.{shown}", keys + (str(key),), place_of)
    elif isinstance(value, (list, tuple)):
        for number, item in enumerate(value):
            yield from _walk(item, index, f"{where}[{number}]", keys, place_of)
    elif isinstance(value, str) and value[:1] in "{[":
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parsed = None
        if parsed is not None:
            yield from _walk(parsed, index, where + " (JSON string)", keys, place_of)
            return
        names = index.find(value, place_of(keys))
        if names:
            yield where or "(value)", names
    else:
        place = place_of(keys)
        names = index.match(value, numbers=place is Place.VALUE)
        if not names and isinstance(value, str):
            names = index.find(value, place)
            if names:
                yield f"{where} (inside text)", names
                return
        if names:
            yield where or "(value)", names


def _puffin(source: FileSource, index: ValueIndex) -> Iterator[tuple[str, set[str], str]]:
    """A Puffin file (Iceberg v3): its footer's JSON (blob types and properties, e.g. the data
    file a deletion vector refers to, whose path may carry a partition value) searched as text,
    and each blob as bytes. A ``deletion-vector-v1`` blob is a bitmap of row positions: it holds
    which rows are gone, never a row's value (``PUFFIN_NOTE``). A compressed footer is refused
    here, so the caller searches the whole file as raw bytes and says so."""
    data = source.data
    if len(data) < 16 or data[-4:] != PUFFIN_MAGIC:
        raise ValueError("no Puffin footer magic")
    payload_size = int.from_bytes(data[-12:-8], "little")
    flags = int.from_bytes(data[-8:-4], "little")
    if flags & 1:
        raise ValueError("compressed Puffin footer")
    footer = data[-12 - payload_size:-12]
    yield from ((f"Puffin footer{(' ' + where.lstrip('.')) if where else ''}", names, "metadata")
                for where, names, _ in _json_text(footer.decode("utf-8", "replace"), index, "metadata"))
    for number, blob in enumerate(json.loads(footer).get("blobs", [])):
        offset, length = int(blob["offset"]), int(blob["length"])
        names = index.search_bytes(data[offset:offset + length])
        if names:
            yield f"blob {number} ({blob.get('type')})", names, "raw"


PUFFIN_NOTE = "Puffin deletion vectors decoded: their blobs hold row positions, not values (searched as bytes too)"


def _raw(source: FileSource, index: ValueIndex) -> Iterator[tuple[str, set[str], str]]:
    names = index.search_bytes(source.data)
    if names:
        yield "raw bytes", names, "raw"
