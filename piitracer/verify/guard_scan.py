"""Has anyone erased come back? (issue 52): the lakehouse's data files read against the
suppression list, only what is new since the last scan unless asked for everything.

For each table it is given, the scan lists the data files the table holds now
(:mod:`piitracer.formats.table_files_now`), skips the table when its marker is the one the last
scan kept (nothing changed), and reads only the files not read before. Each file's candidate
columns are read a row group at a time and every value is hashed with the suppression key, a
whole column at once (:meth:`piitracer.guard.SuppressionList.matches`): a text column chunk that
is all dictionary-encoded with few distinct values for its rows is read as a dictionary and its
distinct values hashed (:func:`_through_dictionary`); any other is
read as plain values and every value hashed, dictionary-encoded first only when the chunk says it
has few distinct values (:func:`_bytes_per_value`). The columns of a row group are matched on a
few threads while the next row group is read.
A value on the list is a :class:`Found`: where (dataset, snapshot or version, file, column) and
which hash; the value itself is kept only in memory, for the new request that erases it again.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass, field
from typing import Callable, Iterator, Protocol, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from piitracer.formats.table_files_now import data_files_now
from piitracer.guard import SuppressionList, suppression_hash
from piitracer.model.workspace import DatasetFormat
from piitracer.storage.locations import Location
from piitracer.storage.store import Store


@dataclass(frozen=True)
class ScanTarget:
    """One table to scan: ``columns`` are its candidate columns (None: every column whose type can
    hold an identifier: text and integers)."""

    dataset: str
    format: DatasetFormat
    location: Location
    columns: tuple[str, ...] | None


@dataclass
class Found:
    """A value on the suppression list found in a table. ``values`` are the values as stored (kept
    in memory only, never printed: the new request seals them)."""

    dataset: str
    where: str  # 'snapshot 123', 'version 4', 'file'
    file: str  # relative to the table's location
    column: str
    hash: bytes
    values: set = field(default_factory=set, repr=False)

    def place(self) -> dict[str, str]:
        """Where it was found, without the value."""
        return {"dataset": self.dataset, "where": self.where, "file": self.file, "column": self.column}


@dataclass
class TableScan:
    """What the scan did with one table."""

    dataset: str
    marker: str | None = None
    unchanged: bool = False  # the table's marker is the last scan's: nothing read
    files: int = 0  # data files the table holds now
    files_read: list[str] = field(default_factory=list)  # identities of the files read
    rows_read: int = 0
    bytes_read: int = 0
    columns: tuple[str, ...] = ()
    absent: bool = False  # nothing at its location: no table, nothing to read (said, not a failure)
    problem: str | None = None  # it could not be read: the scan is not complete


class ScanPositions(Protocol):
    """Where the last scan got to (the suppression list keeps it)."""

    def position(self, dataset: str) -> tuple[str, dict] | None: ...

    def seen(self, dataset: str) -> set[str]: ...


IDENTIFIER_TYPES = (pa.types.is_string, pa.types.is_large_string, pa.types.is_integer)


def holds_identifiers(kind: pa.DataType) -> bool:
    """Whether a column of this type can hold an identifier (text or an integer)."""
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return any(test(kind) for test in IDENTIFIER_TYPES)


def scan_table(target: ScanTarget, suppression: SuppressionList, store: Store, positions: ScanPositions,
               full: bool = False, on_file: Callable[[str], None] | None = None,
               pool: ThreadPoolExecutor | None = None) -> tuple[TableScan, list[Found]]:
    """Scan one table (module docstring). A table that cannot be read is reported (``problem``),
    never silently skipped; the caller decides what that means for the exit code. ``pool``: the
    threads to match columns on (:func:`scan_tables` shares one between tables: starting them
    costs ~1 ms a thread); None starts this table's own."""
    scan = TableScan(target.dataset)
    now = data_files_now(target.format, target.location, store)
    if now is None:
        scan.absent = True
        return scan, []
    scan.marker, scan.files = now.marker, len(now.files)
    kept = None if full else positions.position(target.dataset)
    if kept is not None and kept[1].get("marker") == now.marker:
        scan.unchanged = True
        return scan, []
    seen = set() if full else positions.seen(target.dataset)
    found: dict[tuple[str, str, bytes], Found] = {}
    columns_used: set[str] = set()
    unread = [identity for identity in sorted(now.files) if identity not in seen]
    if not unread:
        return scan, []
    # A row group's candidate columns are matched side by side on a few threads (hashing and
    # searching are mostly NumPy loops, which release the GIL) while this thread reads the next
    # row group (Arrow's reader on its own threads): one row group read ahead, no more.
    own_pool = pool is None
    if own_pool:
        pool = matching_pool()
    pending: _RowGroup | None = None
    try:
        for identity in unread:
            relative, where = now.files[identity]
            if on_file is not None:
                on_file(relative)
            with closing(_read_row_groups(target, relative, where, suppression, store, scan, pool, columns_used)) as groups:
                for group in groups:
                    if pending is not None:
                        pending.collect(suppression, target.dataset, found)
                    pending = group
            scan.files_read.append(identity)
        if pending is not None:
            pending.collect(suppression, target.dataset, found)
            pending = None
    finally:
        if pending is not None:  # stopped by an error: what this table queued is not run for nothing
            pending.cancel()
        if own_pool:
            pool.shutdown(cancel_futures=True)
    scan.columns = tuple(sorted(columns_used))
    return scan, list(found.values())


def matching_pool() -> ThreadPoolExecutor:
    """Threads to match a row group's columns on (:func:`column_threads` of them)."""
    return ThreadPoolExecutor(column_threads(), thread_name_prefix="piitracer-guard-scan")


def column_threads() -> int:
    """Threads a row group's candidate columns are matched on: the cores this process may use, at
    most 4 (as the verifier decodes files)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4))


@dataclass
class _RowGroup:
    """One row group read, its columns being matched on the pool."""

    relative: str
    where: str
    table: pa.Table
    flags: list[tuple[str, Future]]

    def cancel(self) -> None:
        """Drop the matching not started yet (a scan stopped by an error)."""
        for _, future in self.flags:
            future.cancel()

    def collect(self, suppression: SuppressionList, dataset: str, found: dict[tuple[str, str, bytes], Found]) -> None:
        """Wait for the flags and keep every value on the list, with where it was found."""
        for name, future in self.flags:
            matched = future.result()
            if not pc.any(matched).as_py():
                continue
            values = pc.unique(pc.filter(self.table.column(name), matched))
            if pa.types.is_dictionary(values.type):
                values = values.cast(values.type.value_type)
            for value in values.to_pylist():
                hashed = suppression_hash(suppression.key, value)
                entry = found.setdefault((self.relative, name, hashed), Found(dataset, self.where, self.relative, name, hashed))
                entry.values.add(value)


def _read_row_groups(target: ScanTarget, relative: str, where: str, suppression: SuppressionList, store: Store,
                     scan: TableScan, pool: ThreadPoolExecutor, columns_used: set[str]) -> Iterator[_RowGroup]:
    """Read each row group of one file's candidate columns and set their matching going."""
    with store.open_input(target.location.child(relative)) as handle:
        parquet = pq.ParquetFile(handle)
        schema = parquet.schema_arrow
        chosen = _candidate_columns(schema, target.columns)
        metadata = parquet.metadata
        scan.bytes_read += metadata.serialized_size
        if not chosen:
            return
        columns_used.update(chosen)
        text = [name for name in chosen if pa.types.is_string(schema.field(name).type)
                or pa.types.is_large_string(schema.field(name).type)]
        leaf = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
        readers: dict[tuple[str, ...], pq.ParquetFile] = {}
        for group in range(metadata.num_row_groups):
            row_group = metadata.row_group(group)
            widths = {name: _bytes_per_value(row_group.column(leaf[name])) if name in leaf else None for name in chosen}
            # A text column whose chunk is all dictionary-encoded and holds few distinct values for
            # its rows is read as a dictionary: its distinct values come with it, each hashed once.
            # Any other is read as plain values (_through_dictionary).
            as_dictionary = tuple(name for name in text if _through_dictionary(widths[name], row_group.num_rows))
            reader = readers.get(as_dictionary)
            if reader is None:
                reader = readers[as_dictionary] = (pq.ParquetFile(handle, read_dictionary=list(as_dictionary), metadata=metadata)
                                                   if as_dictionary else parquet)
            table = reader.read_row_group(group, columns=chosen)
            scan.rows_read += table.num_rows
            # A plain column is dictionary-encoded before hashing only when its chunk says it has
            # few distinct values (an index of a byte or less); otherwise every value is hashed.
            flags = [(name, pool.submit(suppression.matches, table.column(name),
                                        distinct=_below(widths[name], _FEW_DISTINCT))) for name in chosen]
            yield _RowGroup(relative, where, table, flags)


# Bytes a value of a chunk's data pages (its dictionary page aside). Dictionary indices take at most
# ~3 (a dictionary holds < 2^24 values), a byte or less for 256 distinct values or fewer; plain
# values take more: 4 bytes of length and the text's bytes, 8 bytes an int64.
_DICTIONARY_ONLY = 3.0
_FEW_DISTINCT = 1.0
# Read through its dictionary only a chunk with at most this many distinct values per row.
_DISTINCT_SHARE = 0.5


def _through_dictionary(width: float | None, rows: int) -> bool:
    """Whether a text chunk (``width`` bytes a value in its data pages, of a row group of ``rows``
    rows) is read as a dictionary: all dictionary-encoded (under :data:`_DICTIONARY_ONLY` bytes a
    value), and its indices' width says at most half as many distinct values as rows (an index of ``w``
    bytes a value is ~``2^(8w)`` distinct values, bit-packed). Arrow's dictionary reader is slower
    than its plain one where most values are distinct (measured at 75,000 rows: 10.3 ms against
    7.8 ms for ~47,000 distinct ten-character texts), and much slower for a chunk that outgrew its
    dictionary near its end, which the width does not show (20 ms against 8 ms for 75,000 PANs,
    all but a few distinct: pyarrow's 1 MiB dictionary limit is ~73,000 such values): a handful of
    hashes saved does not pay for that. With few distinct values the dictionary wins by far (100
    to 30,000 distinct in 75,000 or 300,000 rows: 2.7-11.5 ms against 8.6-35 ms, reading and
    matching). A wrong guess costs time, never a match: the flags are the same either way."""
    return _below(width, _DICTIONARY_ONLY) and 2.0 ** (8 * width) <= _DISTINCT_SHARE * rows


def _bytes_per_value(chunk: pq.ColumnChunkMetaData) -> float | None:
    """The compressed bytes a value of a column chunk's data pages take, when it has a dictionary
    page (None without one). Under 3, the chunk looks all dictionary-encoded: a writer whose
    dictionary outgrows its limit (1 MiB in pyarrow, parquet-rs and Spark) writes the rest of the
    chunk as plain values. Parquet's page encoding stats would say it exactly; pyarrow does not
    expose them. A wrong guess costs time, never a match: the flags are the same either way."""
    if not chunk.has_dictionary_page or not chunk.num_values or chunk.dictionary_page_offset is None:
        return None
    dictionary_bytes = chunk.data_page_offset - chunk.dictionary_page_offset
    if dictionary_bytes <= 0:
        return None
    return (chunk.total_compressed_size - dictionary_bytes) / chunk.num_values


def _below(width: float | None, limit: float) -> bool:
    return width is not None and width < limit


def _candidate_columns(schema: pa.Schema, wanted: Sequence[str] | None) -> list[str]:
    """The schema's columns to read: the candidates (matched case-insensitively), or every column
    that can hold an identifier; only those of a type that can."""
    if wanted is None:
        return [f.name for f in schema if holds_identifiers(f.type)]
    lowered = {name.lower() for name in wanted}
    return [f.name for f in schema if f.name.lower() in lowered and holds_identifiers(f.type)]


def scan_tables(targets: Sequence[ScanTarget], suppression: SuppressionList, store: Store, positions: ScanPositions,
                full: bool = False, on_table: Callable[[str], None] | None = None
                ) -> tuple[list[TableScan], list[Found]]:
    """Scan every target in order (:func:`scan_table`); a table that cannot be read is a
    ``problem`` of its own and the others are still scanned."""
    scans: list[TableScan] = []
    found: list[Found] = []
    with matching_pool() as pool:  # one for every table
        for target in targets:
            if on_table is not None:
                on_table(target.dataset)
            try:
                scan, hits = scan_table(target, suppression, store, positions, full, pool=pool)
            except Exception as error:  # one unreadable table must not hide the others: reported, not dropped
                scan, hits = TableScan(target.dataset, problem=f"cannot read it: {type(error).__name__}: {_first_line(error)}"), []
            scans.append(scan)
            found += hits
    return scans, found


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [""])[0][:300]

