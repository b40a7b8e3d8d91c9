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
has few distinct values (:func:`_bytes_per_value`). Each column chunk is read and matched by one
task on a few threads, the next row group's tasks queued behind this one's.
A value on the list is a :class:`Found`: where (dataset, snapshot or version, file, column) and
which hash; the value itself is kept only in memory, for the new request that erases it again.
"""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor, wait
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
    own_pool = pool is None
    if own_pool:
        pool = matching_pool()
    # Each column chunk of a row group is read and matched by one task on the pool: its threads do
    # all the work (Arrow's reader on the task's thread alone; hashing and searching are NumPy
    # loops, which release the GIL). A row group read on Arrow's threads and then matched on the
    # pool leaves a core idle for much of each step (three columns do not spread evenly over two
    # threads); as tasks of one queue, one column is matched while another is read. The next row
    # group's tasks are queued before this one's are collected, no more: two in memory at most.
    pending: deque[_RowGroup] = deque()
    groups: Iterator[_RowGroup] | None = None  # the file being queued
    try:
        for identity in unread:
            relative, where = now.files[identity]
            if on_file is not None:
                on_file(relative)
            groups = _submit_row_groups(target, relative, where, suppression, store, scan, pool, columns_used)
            for group in groups:
                pending.append(group)
                while len(pending) > 1:
                    pending.popleft().collect(suppression, target.dataset, scan, found)
            scan.files_read.append(identity)
        while pending:
            pending.popleft().collect(suppression, target.dataset, scan, found)
    finally:
        for group in pending:  # stopped by an error: what this table queued is not run for nothing
            group.cancel()
        if groups is not None:
            groups.close()  # its file, when no queued row group was left to close it
        if own_pool:
            pool.shutdown(cancel_futures=True)
    scan.columns = tuple(sorted(columns_used))
    return scan, list(found.values())


def matching_pool() -> ThreadPoolExecutor:
    """Threads to read and match column chunks on (:func:`column_threads` of them)."""
    return ThreadPoolExecutor(column_threads(), thread_name_prefix="piitracer-guard-scan")


def column_threads() -> int:
    """Threads column chunks are read and matched on: the cores this process may use, at
    most 4 (as the verifier decodes files)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4))


@dataclass
class _RowGroup:
    """One row group whose candidate columns are being read and matched on the pool, a task each."""

    relative: str
    where: str
    rows: int
    columns: list[tuple[str, Future]]  # each task gives (the column's values, their flags)
    closes: pa.NativeFile | None = None  # the file, closed once its last row group's tasks are done

    def cancel(self) -> None:
        """Drop the tasks not started yet and wait for the running ones (a scan stopped by an
        error), then close the file if this is its last row group: no task reads a closed file."""
        for _, future in self.columns:
            future.cancel()
        wait([future for _, future in self.columns])
        for _, future in self.columns:  # the read ones: their pieces' matching (no file read there)
            if not future.cancelled() and future.exception() is None:
                for piece in future.result()[1]:
                    piece.cancel()
        self._close()

    def collect(self, suppression: SuppressionList, dataset: str, scan: TableScan,
                found: dict[tuple[str, str, bytes], Found]) -> None:
        """Wait for the flags and keep every value on the list, with where it was found."""
        try:
            for name, future in self.columns:
                column, pieces = future.result()
                matched = _joined([piece.result() for piece in pieces])
                if not pc.any(matched).as_py():
                    continue
                values = pc.unique(pc.filter(column, matched))
                if pa.types.is_dictionary(values.type):
                    values = values.cast(values.type.value_type)
                for value in values.to_pylist():
                    hashed = suppression_hash(suppression.key, value)
                    entry = found.setdefault((self.relative, name, hashed), Found(dataset, self.where, self.relative, name, hashed))
                    entry.values.add(value)
            scan.rows_read += self.rows
        except BaseException:
            self.cancel()  # the other columns' tasks may still be reading the file
            raise
        self._close()

    def _close(self) -> None:
        if self.closes is not None:
            self.closes.close()
            self.closes = None


@dataclass(frozen=True)
class _ColumnRead:
    """How one column chunk is read and matched."""

    name: str
    through_dictionary: bool  # read as a dictionary, its distinct values hashed (_through_dictionary)
    distinct: bool  # dictionary-encoded before hashing (SuppressionList.matches)


def _submit_row_groups(target: ScanTarget, relative: str, where: str, suppression: SuppressionList, store: Store,
                       scan: TableScan, pool: ThreadPoolExecutor, columns_used: set[str]) -> Iterator[_RowGroup]:
    """Open one file, read its footer and queue a read-and-match task for each candidate column
    of each row group, a row group at a time. The last row group closes the file once its tasks
    are done; closed before that (the scan stopped, its queued row groups cancelled first), this
    closes it."""
    handle = store.open_input(target.location.child(relative))
    handed = False  # whether the last row group took the file to close
    try:
        parquet = pq.ParquetFile(handle)
        metadata = parquet.metadata
        plan = _row_group_reads(metadata, parquet.schema_arrow, target.columns)
        scan.bytes_read += metadata.serialized_size
        if plan:  # every row group reads the same columns
            columns_used.update(read.name for read in plan[0][2])
        for number, (group, rows, reads) in enumerate(plan):
            tasks = [(read.name, pool.submit(_read_and_match, handle, metadata, group, read, suppression, pool))
                     for read in reads]
            handed = number == len(plan) - 1
            yield _RowGroup(relative, where, rows, tasks, closes=handle if handed else None)
    finally:
        if not handed:
            handle.close()


def _row_group_reads(metadata: pq.FileMetaData, schema: pa.Schema,
                     wanted: Sequence[str] | None) -> list[tuple[int, int, list[_ColumnRead]]]:
    """For each row group of a file: its number, its rows and how each candidate column is read
    (none when the file has no candidate column), judged from the footer alone."""
    chosen = _candidate_columns(schema, wanted)
    if not chosen:
        return []
    text = {name for name in chosen if pa.types.is_string(schema.field(name).type)
            or pa.types.is_large_string(schema.field(name).type)}
    leaf = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
    plan = []
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        reads = []
        for name in chosen:
            width = _bytes_per_value(row_group.column(leaf[name])) if name in leaf else None
            # A text column whose chunk is all dictionary-encoded and holds few distinct values for
            # its rows is read as a dictionary: its distinct values come with it, each hashed once.
            # Any other is read as plain values (_through_dictionary), and dictionary-encoded
            # before hashing only when its chunk says it has few distinct values (an index of a
            # byte or less); otherwise every value is hashed.
            reads.append(_ColumnRead(name, name in text and _through_dictionary(width, row_group.num_rows),
                                     _below(width, _FEW_DISTINCT)))
        plan.append((group, row_group.num_rows, reads))
    return plan


def _read_and_match(handle: pa.NativeFile, metadata: pq.FileMetaData, group: int, read: _ColumnRead,
                    suppression: SuppressionList, pool: ThreadPoolExecutor) -> tuple[pa.ChunkedArray, list[Future]]:
    """One column chunk read on this thread alone (the pool's threads are the parallelism; the
    file is read at offsets, safe from several threads), its matching queued on the pool in pieces
    of up to :data:`_MATCH_ROWS` values: its values and the pieces' flags to come. Queued behind
    the row group's other reads, the matching of the first columns read runs while the last are
    read, and pieces let a thread that would sit idle at the end take half a column's matching."""
    reader = pq.ParquetFile(handle, metadata=metadata, read_dictionary=[read.name] if read.through_dictionary else None)
    values = reader.read_row_group(group, columns=[read.name], use_threads=False).column(0)
    if read.distinct or pa.types.is_dictionary(values.type) or len(values) <= _MATCH_ROWS:
        # A dictionary, or a column to dictionary-encode first, is matched whole: each piece would
        # hash the dictionary again.
        return values, [pool.submit(suppression.matches, values, distinct=read.distinct)]
    step = -(-len(values) // -(-len(values) // _MATCH_ROWS))  # equal pieces of at most _MATCH_ROWS
    return values, [pool.submit(suppression.matches, values.slice(start, step), distinct=False)
                    for start in range(0, len(values), step)]


def _joined(flags: list[pa.BooleanArray]) -> pa.BooleanArray:
    """A column's flags from its pieces' flags, in order."""
    return flags[0] if len(flags) == 1 else pa.concat_arrays(flags)


# Bytes a value of a chunk's data pages (its dictionary page aside). Dictionary indices take at most
# ~3 (a dictionary holds < 2^24 values), a byte or less for 256 distinct values or fewer; plain
# values take more: 4 bytes of length and the text's bytes, 8 bytes an int64.
_DICTIONARY_ONLY = 3.0
_FEW_DISTINCT = 1.0
# Read through its dictionary only a chunk with at most this many distinct values per row.
_DISTINCT_SHARE = 0.5
# A plain column is matched in pieces of at most this many values (_read_and_match).
_MATCH_ROWS = 1 << 17


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

