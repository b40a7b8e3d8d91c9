"""Plain Parquet folders and archives (periodic snapshot exports): rewrite each file that holds a
subject without the subjects' rows.

No table format keeps history here, so the rewrite is the erasure. Crash safety without a
transaction log: the replacement is written under a hidden temporary name in the same folder
(readers skip ``.``/``_`` names), flushed to disk, then renamed over the original with
``os.replace`` — atomic on one filesystem, so at any moment the folder holds either the original or
its complete replacement, never both and never neither. A re-run first removes temporaries a
killed run left behind, then finds nothing more to delete in files already rewritten.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from piitracer.executor.arrow_values import typed_values
from piitracer.executor.failpoints import failpoint
from piitracer.executor.outcome import Attempt, SafetyError, StepOutcome

TEMP_SUFFIX = ".piitracer-tmp"


def data_files(location: Path) -> list[Path]:
    """The Parquet files readers see: hidden and underscore files and folders are not data."""
    found = []
    for path in sorted(location.rglob("*.parquet")):
        relative = path.relative_to(location).parts
        if not any(part.startswith((".", "_")) for part in relative):
            found.append(path)
    return found


def rewrite_files(location: Path, key_column: str | None, values: list[Any], attempt: Attempt | None = None) -> StepOutcome:
    """Rewrite every data file under ``location`` holding a row whose ``key_column`` is one of
    ``values``; files that cannot hold one (by their footer statistics or their key column) are
    not touched.

    The files to rewrite are found first and their counts journaled (``Attempt``) before the first
    one changes: a run killed part-way and resumed reports, in one outcome, the rows and files of
    both attempts (the resumed attempt only finds the files the killed one did not reach)."""
    if not key_column:
        raise SafetyError(f"{location}: a rewrite needs a key column")
    if not location.is_dir():
        raise SafetyError(f"{location}: no such folder")
    stale = _remove_stale_temporaries(location)
    outcome = StepOutcome(details={"files_scanned": 0, "files_skipped_by_statistics": 0, "stale_temporaries_removed": stale})
    holders = []
    for path in data_files(location):
        outcome.details["files_scanned"] += 1
        handle = pq.ParquetFile(path)
        schema = handle.schema_arrow
        if key_column not in schema.names:
            continue  # a file of another shape (schema evolution): it has no key to match
        subjects = typed_values(values, schema.field(key_column).type)
        if len(subjects) == 0:
            continue
        if not _may_hold(handle, key_column, subjects):
            outcome.details["files_skipped_by_statistics"] += 1
            continue
        keys = handle.read(columns=[key_column]).column(key_column)
        matched = int(pc.sum(pc.is_in(keys, value_set=subjects)).as_py() or 0)
        if matched:
            holders.append((path, handle, subjects, matched, path.stat().st_size))
    now = {"rows": sum(h[3] for h in holders), "files": len(holders), "bytes": sum(h[4] for h in holders)}
    first = (attempt or Attempt()).start(now)
    # What a killed earlier attempt already rewrote: its files no longer hold a subject.
    outcome.rows_deleted = max(int(first["rows"]) - now["rows"], 0)
    outcome.files_rewritten = max(int(first["files"]) - now["files"], 0)
    outcome.bytes_removed = max(int(first["bytes"]) - now["bytes"], 0)
    for path, handle, subjects, matched, size in holders:
        _replace_without(path, handle, key_column, subjects, matched, location.name)
        failpoint("parquet.after_rename", location.name)  # test-only: some files rewritten, others not yet
        outcome.rows_deleted += matched
        outcome.files_rewritten += 1
        outcome.bytes_removed += size
    return outcome


def _replace_without(path: Path, handle: pq.ParquetFile, key_column: str, subjects: pa.Array, matched: int,
                     tag: str | None = None) -> None:
    table = handle.read()
    kept = table.filter(pc.invert(pc.fill_null(pc.is_in(table.column(key_column), value_set=subjects), False)))
    if kept.num_rows != table.num_rows - matched:
        raise SafetyError(f"{path}: expected {table.num_rows} - {matched} rows after the rewrite, got {kept.num_rows}")
    temporary = path.with_name("." + path.name + TEMP_SUFFIX)
    compression = _compression(handle)
    with temporary.open("wb") as sink:
        pq.write_table(kept, sink, compression=compression)
        sink.flush()
        os.fsync(sink.fileno())
    failpoint("parquet.after_temp_write", tag)  # test-only: the replacement is written, not renamed
    written = pq.ParquetFile(temporary).metadata.num_rows
    if written != kept.num_rows:
        temporary.unlink()
        raise SafetyError(f"{path}: the replacement holds {written} rows, expected {kept.num_rows}")
    os.replace(temporary, path)
    _fsync_folder(path.parent)


def _may_hold(handle: pq.ParquetFile, key_column: str, subjects: pa.Array) -> bool:
    """False only when every row group's min/max statistics exclude every subject value."""
    metadata = handle.metadata
    index = handle.schema_arrow.get_field_index(key_column)
    leaf = next((i for i in range(metadata.num_columns) if metadata.schema.column(i).path == key_column), None)
    if index < 0 or leaf is None:
        return True
    lowest, highest = pc.min(subjects).as_py(), pc.max(subjects).as_py()
    for group in range(metadata.num_row_groups):
        stats = metadata.row_group(group).column(leaf).statistics
        if stats is None or not stats.has_min_max:
            return True
        try:
            if not (highest < stats.min or lowest > stats.max):
                return True
        except TypeError:  # statistics of a type that does not compare with the key's: read it
            return True
    return False


def _compression(handle: pq.ParquetFile) -> str:
    metadata = handle.metadata
    if metadata.num_row_groups and metadata.num_columns:
        codec = metadata.row_group(0).column(0).compression
        return codec.lower() if codec and codec != "UNCOMPRESSED" else "none"
    return "snappy"


def _remove_stale_temporaries(location: Path) -> int:
    stale = list(location.rglob("*" + TEMP_SUFFIX))
    for path in stale:
        path.unlink()
    return len(stale)


def _fsync_folder(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
