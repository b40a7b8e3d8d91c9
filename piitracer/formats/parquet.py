"""Plain Parquet folders (Hive-style partitions), local or on an object store: the files readers
see, the rewrite that erases (no table format keeps history here, so the rewrite is the erasure),
and what the verifier reads. Archive exports are Parquet too (``formats.archive``).

Crash safety without a transaction log: the replacement is written under a hidden temporary name
beside the original (readers skip ``.``/``_`` names), flushed, read back and checked, then put over
the original with ``Store.replace`` — an atomic rename on a local filesystem, a server-side copy
over the original's key on an object store (one atomic PUT), then the temporary is deleted. At any
moment readers see either the original or its complete replacement, never both and never neither.
A re-run first removes temporaries a killed run left behind, then finds nothing more to delete in
files already rewritten.
"""

from __future__ import annotations

import uuid
from typing import Any, Callable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from piitracer.formats import FormatError, FormatSupport, Shown, StepWork, TableFacts, TableFiles, VersionRows, hidden, may_hold
from piitracer.formats.prepare import proof_columns, pyarrow_write_options
from piitracer.formats.values import arrow_frame, typed_values
from piitracer.model.outcome import Attempt, SafetyError, StepOutcome
from piitracer.model.plan import Action
from piitracer.model.workspace import CatalogDataset, DatasetFormat
from piitracer.storage.failpoints import failpoint
from piitracer.storage.file_tasks import FileTasks, in_this_process
from piitracer.storage.locations import Location
from piitracer.storage.store import Store

TEMP_SUFFIX = ".piitracer-tmp"


def data_files(location: Location, store: Store) -> list[str]:
    """The Parquet files readers see (relative paths): hidden and underscore files and folders are
    not data."""
    return [entry.relative for entry in store.list_files(location)
            if entry.relative.endswith(".parquet") and not hidden(entry.relative)]


def key_ranges(metadata, key_column: str) -> list[tuple[Any, Any] | None] | None:
    """Per row group of a Parquet footer (``pyarrow`` ``FileMetaData``), the (min, max) statistics
    of ``key_column``, or None for a group without them; None when the file has no such column.
    What the rewrite and the batch estimate prune files by."""
    leaf = next((i for i in range(metadata.num_columns) if metadata.schema.column(i).path == key_column), None)
    if leaf is None:
        return None
    ranges: list[tuple[Any, Any] | None] = []
    for group in range(metadata.num_row_groups):
        stats = metadata.row_group(group).column(leaf).statistics
        ranges.append((stats.min, stats.max) if stats is not None and stats.has_min_max else None)
    return ranges


def dataset(location: Location, store: Store):
    """A pyarrow dataset of the folder as readers see it (Hive partitions)."""
    import pyarrow.dataset as ds

    fs, path = store.filesystem(location)
    files = [f"{path.rstrip('/')}/{relative}" for relative in data_files(location, store)]
    return ds.dataset(files, filesystem=fs, format="parquet", partitioning=ds.partitioning(flavor="hive"),
                      partition_base_dir=path) if files else None


def arrow_schema(location: Location, store: Store):
    """The schema readers see (Hive partition columns included), or None when the folder holds
    no Parquet file."""
    found = dataset(location, store)
    return None if found is None else found.schema


# ---- erasure: rewrite without the subjects' rows -----------------------------------------------

def rewrite_files(location: Location, store: Store, key_column: str | None, values: list[Any],
                  attempt: Attempt | None = None, tasks_for: Callable[[int, int], FileTasks] | None = None,
                  prepare: tuple[str, ...] = ()) -> StepOutcome:
    """Rewrite every data file under ``location`` holding a row whose ``key_column`` is one of
    ``values``; files that cannot hold one (by their footer statistics or their key column) are
    not touched.

    The files to rewrite are found first and their counts journaled (``Attempt``) before the first
    one changes: a run killed part-way and resumed reports, in one outcome, the rows and files of
    both attempts (the resumed attempt only finds the files the killed one did not reach).

    ``tasks_for(files, bytes)`` says where the per-file work runs (both passes: finding the files,
    rewriting them): in this process by default, or as Spark tasks, one file per item
    (:mod:`piitracer.storage.file_tasks`). A task run twice (an executor lost) is harmless: a file
    is replaced only by its complete rewrite, and a rewritten file holds nothing more to remove.

    ``prepare`` (``verify.prepare``): the columns to write Bloom filters on; then each file is
    also written with its original dictionary use, statistics and a page index
    (:func:`piitracer.formats.prepare.pyarrow_write_options`). Empty: written as pyarrow's
    defaults with the original's codec."""
    if not key_column:
        raise SafetyError(f"{location}: a rewrite needs a key column")
    if not store.exists(location):
        raise SafetyError(f"{location}: no such folder")
    stale = _remove_stale_temporaries(location, store)
    sizes = store.sizes(location)
    candidates = [(relative, sizes.get(relative, 0)) for relative in data_files(location, store)]
    tasks = (tasks_for or in_this_process)(len(candidates), sum(size for _, size in candidates))
    matches = tasks.run(_FindSubjects(location, store, key_column, values), candidates, "rewrite.find")
    outcome = StepOutcome(details={"files_scanned": len(candidates),
                                   "files_skipped_by_statistics": sum(1 for m in matches if m == SKIPPED_BY_STATISTICS),
                                   "stale_temporaries_removed": stale, "ran_in": tasks.name})
    holders = [(relative, size, matched) for (relative, size), matched in zip(candidates, matches) if matched > 0]
    now = {"rows": sum(h[2] for h in holders), "files": len(holders), "bytes": sum(h[1] for h in holders)}
    first = (attempt or Attempt()).start(now)
    # What a killed earlier attempt already rewrote: its files no longer hold a subject.
    outcome.rows_deleted = max(int(first["rows"]) - now["rows"], 0)
    outcome.files_rewritten = max(int(first["files"]) - now["files"], 0)
    outcome.bytes_removed = max(int(first["bytes"]) - now["bytes"], 0)
    tasks.run(_RewriteWithout(location, store, key_column, values, prepare), holders, "rewrite")
    # A rewrite task that died after writing its own temporary (a lost executor, then Spark's rerun
    # wrote another) left it behind: the complete replacements are in place, so it goes.
    outcome.details["stale_temporaries_removed"] += _remove_stale_temporaries(location, store)
    outcome.rows_deleted += now["rows"]
    outcome.files_rewritten += now["files"]
    outcome.bytes_removed += now["bytes"]
    if prepare:
        outcome.details["prepared_for_proof"] = ", ".join(prepare)
    return outcome


SKIPPED_BY_STATISTICS = -1


class _FindSubjects:
    """One file (relative path, size) -> the subjects' rows in it; 0 when it has no such row or no
    key column, ``SKIPPED_BY_STATISTICS`` when its footer statistics exclude every value. Picklable:
    a Spark task runs it."""

    def __init__(self, location: Location, store: Store, key_column: str, values: list[Any]) -> None:
        self.location, self.store, self.key_column, self.values = location, store, key_column, values

    def __call__(self, item: tuple[str, int]) -> int:
        relative, _ = item
        handle = pq.ParquetFile(self.store.open_input(self.location.child(relative)))
        schema = handle.schema_arrow
        if self.key_column not in schema.names:
            return 0  # a file of another shape (schema evolution): it has no key to match
        subjects = typed_values(self.values, schema.field(self.key_column).type)
        if len(subjects) == 0:
            return 0
        if not _row_groups_may_hold(handle, self.key_column, subjects):
            return SKIPPED_BY_STATISTICS
        keys = handle.read(columns=[self.key_column]).column(self.key_column)
        return int(pc.sum(pc.is_in(keys, value_set=subjects)).as_py() or 0)


class _RewriteWithout(_FindSubjects):
    """One holder (relative path, size, rows matched) -> replaced by its rewrite without the
    subjects' rows; returns the rows kept."""

    def __init__(self, location: Location, store: Store, key_column: str, values: list[Any],
                 prepare: tuple[str, ...] = ()) -> None:
        super().__init__(location, store, key_column, values)
        self.prepare = prepare

    def __call__(self, item: tuple[str, int, int]) -> int:  # type: ignore[override]
        relative, _, matched = item
        handle = pq.ParquetFile(self.store.open_input(self.location.child(relative)))
        subjects = typed_values(self.values, handle.schema_arrow.field(self.key_column).type)
        kept = _replace_without(self.location, self.store, relative, handle, self.key_column, subjects, matched,
                                self.prepare)
        failpoint("parquet.after_rename", self.location.name)  # test-only: some files rewritten, others not yet
        return kept


def _replace_without(location: Location, store: Store, relative: str, handle: pq.ParquetFile, key_column: str,
                     subjects: pa.Array, matched: int, prepare: tuple[str, ...] = ()) -> int:
    table = handle.read()
    kept = table.filter(pc.invert(pc.fill_null(pc.is_in(table.column(key_column), value_set=subjects), False)))
    if kept.num_rows == table.num_rows:
        # Rewritten since it was found: by a task of a failed earlier run that was still finishing
        # (Spark cancels those asynchronously); its replacement is complete and in place.
        return kept.num_rows
    if kept.num_rows != table.num_rows - matched:
        raise SafetyError(f"{location.child(relative)}: expected {table.num_rows} - {matched} rows after the rewrite, got {kept.num_rows}")
    folder, _, name = relative.rpartition("/")
    # A temporary of this writer's own: two writers of one file (a straggling task and a resumed
    # one) never write into the same temporary, so neither can put the other's half-written file in place.
    mine = f".{name}.{uuid.uuid4().hex[:12]}{TEMP_SUFFIX}"
    temporary = location.child(f"{folder}/{mine}" if folder else mine)
    target = location.child(relative)
    # Prepared: Bloom filters, dictionaries and a page index for the next verification to prove
    # this file without decoding it; else pyarrow's defaults with the original's codec.
    options = pyarrow_write_options(kept, handle.metadata, prepare) if prepare else {"compression": _compression(handle)}
    with store.open_durable_output(temporary) as sink:
        pq.write_table(kept, sink, **options)
    failpoint("parquet.after_temp_write", location.name)  # test-only: the replacement is written, not in place
    written = pq.ParquetFile(store.open_input(temporary)).metadata.num_rows
    if written != kept.num_rows:
        store.delete(temporary)
        raise SafetyError(f"{target}: the replacement holds {written} rows, expected {kept.num_rows}")
    store.replace(temporary, target)
    return kept.num_rows


def _row_groups_may_hold(handle: pq.ParquetFile, key_column: str, subjects: pa.Array) -> bool:
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


def rewrite_text(shown: Shown) -> str:
    """The dry-run line of a rewrite (plain folder or archive)."""
    return f"rewrite files under {shown.table} holding {shown.key} in {shown.values} (redacted), then replace the originals"


def perform_rewrite(work: StepWork) -> StepOutcome:
    """The rewrite step of a plain folder or an archive (its files in this process or as Spark
    tasks, as ``work.file_tasks`` decides by their number and size)."""
    return rewrite_files(work.location, work.store, work.step.key_column, work.values, work.attempt, work.file_tasks,
                         proof_columns(work.entry, work.step.key_column))


def source_rows(spark, entry: CatalogDataset, location: Location, store: Store):
    """The folder's rows: Spark reads a local folder itself; on an object store (Spark here has no
    S3A connector, shared/lakehouse-notes.md) pyarrow reads it."""
    if location.is_local:
        return spark.read.parquet(location.uri)
    found = dataset(location, store)
    if found is None:
        raise SafetyError(f"cannot read source {location}: no Parquet file there")
    return arrow_frame(spark, found.to_table())


# ---- what the verifier reads ----------------------------------------------------------------------

def files(root: Location, store: Store) -> TableFiles:
    """Every file a reader sees is live: there are no versions."""
    return TableFiles(live=set(data_files(root, store)))


def versions(root: Location, store: Store, key_column: str) -> Iterator[VersionRows]:
    """The folder as a reader sees it (hidden and underscore files ignored, Hive partitions)."""
    found = dataset(root, store)
    if found is not None and key_column in found.schema.names:
        yield VersionRows("current", True, found.to_table(columns=[key_column]).column(key_column).combine_chunks())


def history(root: Location, store: Store, key_column: str | None):
    """The folder's one version (the files a reader sees) for the logical check, from the files'
    key column as the verifier decodes them (:mod:`~piitracer.formats.history`); None when the key
    is a Hive partition value (read back through a pyarrow dataset instead, which types it)."""
    from piitracer.formats.history import DataFile, HistoryVersion, KeyColumn, OneVersion

    visible = data_files(root, store)
    found = OneVersion(files=TableFiles(live=set(visible)), key=KeyColumn(key_column) if key_column else None)
    if key_column is None or not visible:
        return found
    if any(_hive_value(relative, key_column) is not None for relative in visible):
        return None
    # A reader's schema is its first file's: no key column there, no version to check (as read back).
    with store.open_input(root.child(visible[0])) as handle:
        if key_column not in pq.ParquetFile(handle).schema_arrow.names:
            return found
    found.versions.append(HistoryVersion("current", True))
    for relative in visible:
        uri = root.child(relative).uri
        found.data_files[uri] = DataFile(uri, relative)
    return found


def rewrite_removers(action: Action):
    """Which action removes a leftover of a folder whose erasure is ``action``: the rewrite,
    for every visible file and for its current rows."""
    return (lambda found, path: [] if hidden(path) else [action]), (lambda current, held_by_ref: [action])


def candidate_files(location: Location, store: Store, key_column: str | None, values: list[Any] | None):
    """(file, size) of every file whose Hive partition value or footer statistics admit a value."""
    sizes = store.sizes(location)
    found = []
    for relative in data_files(location, store):
        if values is None or key_column is None:
            found.append((relative, sizes.get(relative, 0)))
            continue
        partition = _hive_value(relative, key_column)
        if partition is not None:
            if any(partition == str(value) for value in values):
                found.append((relative, sizes.get(relative, 0)))
            continue
        ranges = key_ranges(pq.ParquetFile(store.open_input(location.child(relative))).metadata, key_column)
        if ranges is None:
            continue  # no key column in this file: nothing of a subject to rewrite
        if any(bounds is None or may_hold(bounds[0], bounds[1], values) for bounds in ranges):
            found.append((relative, sizes.get(relative, 0)))
    return found


def _hive_value(relative: str, key_column: str) -> str | None:
    for segment in relative.split("/")[:-1]:
        name, _, value = segment.partition("=")
        if name == key_column and _:
            return value
    return None


_FILE_REMOVERS, _LOGICAL_REMOVERS = rewrite_removers(Action.REWRITE_FILES)
# ---- catalog discovery ----------------------------------------------------------------------------

def table_facts(location: Location, store: Store) -> TableFacts:
    """The columns readers see (Hive partition columns included) and the partition columns."""
    try:
        found = dataset(location, store)
    except (OSError, ValueError) as error:  # pyarrow: a file that is no Parquet, schemas that do not merge
        raise FormatError(f"{location}: cannot read its Parquet files: {error}") from error
    if found is None:
        return TableFacts()
    partitioning = found.partitioning.schema.names if found.partitioning else []
    return TableFacts(columns=tuple(n.lower() for n in found.schema.names), partition_columns=tuple(partitioning))


def sample_rows(location: Location, store: Store, limit: int):
    """At most ``limit`` rows (pyarrow dataset head)."""
    found = dataset(location, store)
    return None if found is None else found.head(limit)


SUPPORT = FormatSupport(
    format=DatasetFormat.PARQUET, perform={Action.REWRITE_FILES: perform_rewrite},
    describe={Action.REWRITE_FILES: rewrite_text}, schema=arrow_schema, source_rows=source_rows, files=files,
    versions=versions, history=history, file_removers=_FILE_REMOVERS, logical_removers=_LOGICAL_REMOVERS,
    candidate_files=candidate_files, estimate_basis="Parquet footer statistics",
    table_facts=table_facts, sample_rows=sample_rows, loose_files=True,
)
