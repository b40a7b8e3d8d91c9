"""Plain Parquet folders and archives (periodic snapshot exports): rewrite each file that holds a
subject without the subjects' rows — on a local folder or an object store (``storage.Store``).

No table format keeps history here, so the rewrite is the erasure. Crash safety without a
transaction log: the replacement is written under a hidden temporary name beside the original
(readers skip ``.``/``_`` names), flushed, read back and checked, then put over the original with
``Store.replace`` — an atomic rename on a local filesystem, a server-side copy over the original's
key on an object store (one atomic PUT), then the temporary is deleted. At any moment readers see
either the original or its complete replacement, never both and never neither. A re-run first
removes temporaries a killed run left behind, then finds nothing more to delete in files already
rewritten.
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from piitracer.executor.arrow_values import typed_values
from piitracer.executor.failpoints import failpoint
from piitracer.executor.outcome import Attempt, SafetyError, StepOutcome
from piitracer.formats.parquet import data_files, key_ranges
from piitracer.storage.locations import Location
from piitracer.storage.store import Store

TEMP_SUFFIX = ".piitracer-tmp"


def rewrite_files(location: Location, store: Store, key_column: str | None, values: list[Any],
                  attempt: Attempt | None = None) -> StepOutcome:
    """Rewrite every data file under ``location`` holding a row whose ``key_column`` is one of
    ``values``; files that cannot hold one (by their footer statistics or their key column) are
    not touched.

    The files to rewrite are found first and their counts journaled (``Attempt``) before the first
    one changes: a run killed part-way and resumed reports, in one outcome, the rows and files of
    both attempts (the resumed attempt only finds the files the killed one did not reach)."""
    if not key_column:
        raise SafetyError(f"{location}: a rewrite needs a key column")
    if not store.exists(location):
        raise SafetyError(f"{location}: no such folder")
    stale = _remove_stale_temporaries(location, store)
    outcome = StepOutcome(details={"files_scanned": 0, "files_skipped_by_statistics": 0, "stale_temporaries_removed": stale})
    holders = []
    sizes = store.sizes(location)
    for relative in data_files(location, store):
        outcome.details["files_scanned"] += 1
        handle = pq.ParquetFile(store.open_input(location.child(relative)))
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
            holders.append((relative, handle, subjects, matched, sizes.get(relative, 0)))
    now = {"rows": sum(h[3] for h in holders), "files": len(holders), "bytes": sum(h[4] for h in holders)}
    first = (attempt or Attempt()).start(now)
    # What a killed earlier attempt already rewrote: its files no longer hold a subject.
    outcome.rows_deleted = max(int(first["rows"]) - now["rows"], 0)
    outcome.files_rewritten = max(int(first["files"]) - now["files"], 0)
    outcome.bytes_removed = max(int(first["bytes"]) - now["bytes"], 0)
    for relative, handle, subjects, matched, size in holders:
        _replace_without(location, store, relative, handle, key_column, subjects, matched)
        failpoint("parquet.after_rename", location.name)  # test-only: some files rewritten, others not yet
        outcome.rows_deleted += matched
        outcome.files_rewritten += 1
        outcome.bytes_removed += size
    return outcome


def _replace_without(location: Location, store: Store, relative: str, handle: pq.ParquetFile, key_column: str,
                     subjects: pa.Array, matched: int) -> None:
    table = handle.read()
    kept = table.filter(pc.invert(pc.fill_null(pc.is_in(table.column(key_column), value_set=subjects), False)))
    if kept.num_rows != table.num_rows - matched:
        raise SafetyError(f"{location.child(relative)}: expected {table.num_rows} - {matched} rows after the rewrite, got {kept.num_rows}")
    folder, _, name = relative.rpartition("/")
    temporary = location.child(f"{folder}/.{name}{TEMP_SUFFIX}" if folder else f".{name}{TEMP_SUFFIX}")
    target = location.child(relative)
    compression = _compression(handle)
    if temporary.is_local:
        with open(temporary.uri, "wb") as sink:
            pq.write_table(kept, sink, compression=compression)
            sink.flush()
            os.fsync(sink.fileno())  # the replacement is on disk before it replaces anything
    else:
        with store.open_output(temporary) as sink:
            pq.write_table(kept, sink, compression=compression)
    failpoint("parquet.after_temp_write", location.name)  # test-only: the replacement is written, not in place
    written = pq.ParquetFile(store.open_input(temporary)).metadata.num_rows
    if written != kept.num_rows:
        store.delete(temporary)
        raise SafetyError(f"{target}: the replacement holds {written} rows, expected {kept.num_rows}")
    store.replace(temporary, target)


def _may_hold(handle: pq.ParquetFile, key_column: str, subjects: pa.Array) -> bool:
    """False only when every row group's min/max statistics exclude every subject value."""
    ranges = key_ranges(handle.metadata, key_column)
    if handle.schema_arrow.get_field_index(key_column) < 0 or ranges is None:
        return True
    lowest, highest = pc.min(subjects).as_py(), pc.max(subjects).as_py()
    for bounds in ranges:
        if bounds is None:
            return True
        try:
            if not (highest < bounds[0] or lowest > bounds[1]):
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


def _remove_stale_temporaries(location: Location, store: Store) -> int:
    stale = [entry.relative for entry in store.list_files(location) if entry.relative.endswith(TEMP_SUFFIX)]
    for relative in stale:
        store.delete(location.child(relative))
    return len(stale)
