"""Delta tables with delta-rs (no Delta jars in Spark here; shared/lakehouse-notes.md), local or on
an object store: the log readers, the erasure, and what the verifier reads.

A delete only writes a new version: the old files stay until VACUUM, and the ``_delta_log`` add
actions (their min/max ``stats``) and checkpoints keep the values until the log is cleaned. Every
eraser is idempotent, so a step that was running when the process died can simply run again.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from piitracer.formats import FormatError, FormatSupport, TableFacts, TableFiles, VersionRows, hidden, may_hold, relative_to
from piitracer.formats import delta_history
from piitracer.formats.delta_tables import arrow_table, is_table, open_table  # noqa: F401  (the Delta module's own API too)
from piitracer.formats.prepare import BLOOM_FPP, file_columns, proof_columns
from piitracer.formats.values import SUBJECT_COLUMN, arrow_frame, typed_values
from piitracer.model.outcome import Attempt, SafetyError, StepOutcome
from piitracer.model.plan import Action
from piitracer.model.workspace import CatalogDataset, DatasetFormat
from piitracer.storage.disk import removed_between, removed_since_first_attempt
from piitracer.storage.failpoints import failpoint
from piitracer.storage.locations import Location
from piitracer.storage.store import Store

LOG_RETENTION = "delta.logRetentionDuration"
DEFAULT_LOG_RETENTION = "interval 30 days"  # Delta's default when the table does not set one


def arrow_schema(location: Location, store: Store):
    """The table's current schema as Arrow, or None when the location is not a Delta table."""
    if not is_table(location, store):
        return None
    return pa.schema(open_table(location, store).schema().to_arrow())


def newest_commit(location: Location, store: Store) -> Location | None:
    """The last ``_delta_log/NNNNNNNNNNNNNNNNNNNN.json`` commit file."""
    commits = [e.relative for e in store.list_files(location.child("_delta_log"))
               if "/" not in e.relative and e.relative.endswith(".json") and e.relative[:-5].isdigit()]
    return location.child("_delta_log/" + max(commits)) if commits else None


def referenced_paths(location: Location, store: Store) -> Iterator[tuple[str, str]]:
    """(what, path) for every file path a commit in ``_delta_log`` names (add, remove, cdc; a
    shallow clone's adds are absolute paths into another table) — vacuum deletes removed paths,
    so each must lie where piitracer may act. Relative paths are under the table root."""
    log = location.child("_delta_log")
    for entry in store.list_files(log):
        name = entry.relative
        if "/" in name or not name.endswith(".json") or not name[:-5].isdigit():
            continue
        text = store.read_bytes(log.child(name)).decode("utf-8", "replace")
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                action = json.loads(line)
            except json.JSONDecodeError:
                raise FormatError(f"{log.child(name)}:{number}: not a JSON line of a Delta commit") from None
            for kind in ("add", "remove", "cdc"):
                path = (action.get(kind) or {}).get("path") if isinstance(action, dict) else None
                if path:
                    from urllib.parse import unquote

                    yield f"{name} {kind}", unquote(path) if "://" not in path and not path.startswith("/") else path


# ---- erasure ---------------------------------------------------------------------------------

def _table(location: Location, store: Store):
    if not is_table(location, store):
        raise SafetyError(f"{location}: not a Delta table (no _delta_log)")
    return open_table(location, store)


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _key_type(table, key_column: str) -> pa.DataType:
    schema = pa.schema(table.schema().to_arrow())
    if key_column not in schema.names:
        raise SafetyError(f"{table.table_uri}: no column {key_column!r} (columns: {', '.join(schema.names)})")
    return schema.field(key_column).type


def delete_rows(location: Location, store: Store, key_column: str | None, values: list[Any],
                attempt: Attempt | None = None, prepare: tuple[str, ...] = ()) -> StepOutcome:
    """Delete the rows whose key is one of ``values``: a MERGE with a source table of the values
    and a when-matched delete, so the values are data, never predicate text (a ``delete(predicate)``
    would also write the values into the commit's operation parameters in the log).
    ``rows_deleted`` counts from the first attempt (``Attempt``): a resumed run that finds the
    rows already gone reports what the killed attempt removed.

    ``prepare`` (``verify.prepare``): the columns the rewritten files get Bloom filters on
    (:func:`_prepared_writer`); empty: delta-rs's own writer defaults."""
    attempt = attempt or Attempt()
    if not key_column:
        raise SafetyError(f"{location}: a delete needs a key column")
    table = _table(location, store)
    subjects = typed_values(values, _key_type(table, key_column))
    before = table.version()
    dataset = table.to_pyarrow_dataset()
    total_before = dataset.count_rows()
    # Count by reading the key column: a dataset filter on a string key fails in pyarrow when it is
    # simplified against delta-rs's file statistics (string vs string_view kernels).
    keys = dataset.to_table(columns=[key_column]).column(key_column)
    expected = int(pc.sum(pc.is_in(keys, value_set=subjects.cast(keys.type))).as_py() or 0) if len(subjects) else 0
    first = attempt.start({"expected": expected, "version_before": str(before)})
    outcome = StepOutcome(version_before=first["version_before"], version_after=str(before),
                          rows_deleted=max(int(first["expected"]) - expected, 0))
    if expected == 0:  # nothing left to match (already deleted, or a resumed run): commit nothing
        outcome.details["matched"] = 0
        return outcome
    source = pa.table({SUBJECT_COLUMN: subjects})
    writer = _prepared_writer(table, location, store, prepare, total_before) if prepare else None
    metrics = (table.merge(source=source, predicate=f"t.{_quote(key_column)} = s.{SUBJECT_COLUMN}",
                           source_alias="s", target_alias="t", writer_properties=writer)
               .when_matched_delete().execute())
    failpoint("delta.delete.after_commit")  # test-only: the MERGE is committed, the journal does not know
    table = _table(location, store)
    total_after = table.to_pyarrow_dataset().count_rows()
    if total_after != total_before - expected:
        raise SafetyError(
            f"{location}: expected {total_before} - {expected} = {total_before - expected} rows after the delete, "
            f"found {total_after}: stopping (a concurrent writer, or a delete that did not do what it should)")
    outcome.rows_deleted, outcome.version_after = outcome.rows_deleted + expected, str(table.version())
    outcome.files_rewritten = int(metrics.get("num_target_files_removed", 0))
    outcome.details.update(total_rows_after=total_after, files_added=int(metrics.get("num_target_files_added", 0)))
    if writer is not None:
        outcome.details["prepared_for_proof"] = ", ".join(prepare)
    return outcome


ROW_GROUP_ROWS = 1024 * 1024  # delta-rs's (arrow-rs's) default max rows per row group


def _prepared_writer(table, location: Location, store: Store, prepare: tuple[str, ...], rows: int):
    """delta-rs ``WriterProperties`` for the files a prepared delete rewrites: a Bloom filter on
    each of ``prepare`` the table has (sized for at most a row group's rows, or the table's when
    fewer), dictionary encoding and page-level statistics (the page index) on every column, and
    the codec of the table's current files: given any writer properties, delta-rs drops its own
    default codec (snappy) and writes uncompressed."""
    from deltalake import BloomFilterProperties, ColumnProperties, WriterProperties

    schema = pa.schema(table.schema().to_arrow())
    ndv = max(min(rows, ROW_GROUP_ROWS), 1)
    bloomed = {name: ColumnProperties(dictionary_enabled=True, statistics_enabled="PAGE",
                                      bloom_filter_properties=BloomFilterProperties(True, BLOOM_FPP, ndv))
               for name in file_columns(schema, prepare)}
    return WriterProperties(compression=_current_codec(table, location, store),
                            default_column_properties=ColumnProperties(dictionary_enabled=True, statistics_enabled="PAGE"),
                            column_properties=bloomed)


DELTA_RS_CODECS = ("UNCOMPRESSED", "SNAPPY", "GZIP", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW")


def _current_codec(table, location: Location, store: Store) -> str:
    """The codec of the first column of the table's first current data file (as its footer says),
    or SNAPPY (delta-rs's default) for a table without a file or with a codec delta-rs cannot write."""
    import pyarrow.parquet as pq

    for uri in sorted(table.file_uris()):
        relative = relative_to(location, uri)
        if relative is None:
            continue
        metadata = pq.ParquetFile(store.open_input(location.child(relative))).metadata
        if metadata.num_row_groups and metadata.num_columns:
            codec = str(metadata.row_group(0).column(0).compression).upper()
            return codec if codec in DELTA_RS_CODECS else "SNAPPY"
    return "SNAPPY"


def purge_deletion_vectors(location: Location, store: Store) -> StepOutcome:
    """Deletion vectors only mark rows deleted: the rows stay in the data files. delta-rs writes
    none; a table that has them (written by Spark/Databricks) needs ``REORG TABLE ... APPLY
    (PURGE)`` on a Delta-enabled engine, which this step cannot run: it stops with that fix."""
    table = _table(location, store)
    version = str(table.version())
    features = set(table.protocol().reader_features or ())
    marked = 0
    if "deletionVectors" in features:
        marked = sum(len(batch) for batch in table.deletion_vectors())
    if marked:
        raise SafetyError(
            f"{location}: {marked} data file(s) carry deletion vectors; their rows are still in the files. "
            "Run `REORG TABLE <table> APPLY (PURGE)` on a Delta-enabled Spark, then `piitracer execute --resume`")
    return StepOutcome(version_before=version, version_after=version, details={"deletion_vectors": 0})


def vacuum(location: Location, store: Store, attempt: Attempt | None = None) -> StepOutcome:
    """Remove every file the current version no longer references (retention 0: the plan's
    override of the table's deleted-file retention), ``_change_data`` files included. Counts the
    files removed since the step's first attempt (a resumed vacuum reports the killed one's too)."""
    table = _table(location, store)
    before_files = removed_since_first_attempt(location, store, attempt)
    removed = table.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    files, size = removed_between(before_files, store.sizes(location))
    version = str(table.version())
    return StepOutcome(files_removed=files, bytes_removed=size, version_before=version, version_after=version,
                       details={"vacuumed": len(removed)})


def clean_delta_log(location: Location, store: Store, attempt: Attempt | None = None) -> StepOutcome:
    """Drop every log entry and checkpoint written before now: their add actions' ``stats``
    (minValues/maxValues) hold the subjects' values. A fresh checkpoint keeps the table readable;
    the table's own log retention is restored afterwards (time travel to before now is gone,
    which is the point).

    The table's own retention is journaled (``Attempt``) before it is overridden: an attempt
    killed between the override and the restore left ``interval 0 hours`` on the table, and a
    resumed run must restore the original, not the override."""
    table = _table(location, store)
    before_files = store.sizes(location)
    first = (attempt or Attempt()).start({"log_retention": table.metadata().configuration.get(LOG_RETENTION),
                                           "version_before": str(table.version())})
    version_before, original = first["version_before"], first["log_retention"]
    table.alter.set_table_properties({LOG_RETENTION: "interval 0 hours"})
    failpoint("delta.clean_log.after_override")  # test-only: the table's retention is 0 hours now
    table = _table(location, store)
    table.create_checkpoint()
    table.cleanup_metadata()
    failpoint("delta.clean_log.after_cleanup")  # test-only: the old log is gone, the retention not restored
    # Put the table's setting back: a later writer must not lose its time travel to our override.
    table.alter.set_table_properties({LOG_RETENTION: original or DEFAULT_LOG_RETENTION})
    table = _table(location, store)
    table.create_checkpoint()
    table.cleanup_metadata()  # only removes entries older than the restored retention: none of ours
    _remove_superseded_checkpoints(location, store, table.version())
    files, size = removed_between(before_files, store.sizes(location))
    return StepOutcome(files_removed=files, bytes_removed=size, version_before=version_before,
                       version_after=str(table.version()), details={"log_retention_restored": original or DEFAULT_LOG_RETENTION})


def _remove_superseded_checkpoints(location: Location, store: Store, version: int) -> None:
    """Checkpoints older than the newest one describe earlier versions (with their stats):
    ``cleanup_metadata`` keeps them under the restored retention, so they go here."""
    log = location.child("_delta_log")
    for entry in store.list_files(log):
        name = entry.relative
        number = name.split(".", 1)[0]
        if "/" not in name and ".checkpoint" in name and name.endswith(".parquet") and number.isdigit() and int(number) < version:
            store.delete(log.child(name))


PERFORM = {
    Action.DELETE_ROWS: lambda work: delete_rows(work.location, work.store, work.step.key_column, work.values, work.attempt,
                                                 proof_columns(work.entry, work.step.key_column)),
    Action.PURGE_DELETION_VECTORS: lambda work: purge_deletion_vectors(work.location, work.store),
    Action.VACUUM: lambda work: vacuum(work.location, work.store, work.attempt),
    Action.CLEAN_DELTA_LOG: lambda work: clean_delta_log(work.location, work.store, work.attempt),
}


DESCRIBE = {
    Action.DELETE_ROWS: lambda s: (
        f"delta-rs MERGE INTO {s.table} USING <values> ON t.{s.key} = s.v WHEN MATCHED DELETE  -- values = {s.values} (redacted)"),
    Action.PURGE_DELETION_VECTORS: lambda s: (
        f"check {s.table} for deletion vectors (REORG TABLE ... APPLY (PURGE) on a Delta-enabled engine if any)"),
    Action.VACUUM: lambda s: f"delta-rs vacuum {s.table} retention 0 hours (check disabled)",
    Action.CLEAN_DELTA_LOG: lambda s: (
        f"delta-rs checkpoint + log cleanup of {s.table} with logRetentionDuration 0 hours, then the table's own restored"),
}


def source_rows(spark, entry: CatalogDataset, location: Location, store: Store):
    """The current version's rows, read by delta-rs (Spark has no Delta jars here)."""
    return arrow_frame(spark, open_table(location, store).to_pyarrow_table())


# ---- what the verifier reads ----------------------------------------------------------------------

def files(root: Location, store: Store) -> TableFiles:
    """The data files of the current version (every other data file is for VACUUM)."""
    table = open_table(root, store)
    return TableFiles(live={p for uri in table.file_uris() if (p := relative_to(root, uri))})


def versions(root: Location, store: Store, key_column: str) -> Iterator[VersionRows]:
    """Every version whose log entry is still there, read back; a version whose files were
    vacuumed is ``gone`` (it cannot be time-travelled to: not retained)."""
    table = open_table(root, store)
    latest = table.version()
    for version in range(latest + 1):
        try:
            old = table if version == latest else open_table(root, store, version=version)
        except Exception:  # log entries cleaned up: the version is no longer retained
            continue
        try:
            frame = old.to_pyarrow_dataset().to_table(columns=[key_column])
        except Exception as error:
            message = str(error)
            if "No such file" in message or "not found" in message.lower() or isinstance(error, FileNotFoundError):
                yield VersionRows(str(version), version == latest, gone=True)
            else:
                yield VersionRows(str(version), version == latest,
                                  problem=f"version {version} could not be read back ({type(error).__name__})")
            continue
        yield VersionRows(str(version), version == latest, frame.column(key_column).combine_chunks())


def file_removers(found: TableFiles, path: str) -> list[Action]:
    """The planned actions that remove (or rewrite) a file holding a subject's value."""
    if path.startswith("_delta_log/"):
        return [Action.CLEAN_DELTA_LOG]
    if path.startswith("_change_data/"):
        return [Action.VACUUM]
    if hidden(path):
        return []
    if path in found.live:
        return [Action.DELETE_ROWS, Action.PURGE_DELETION_VECTORS]
    return [Action.VACUUM]


def logical_removers(current: bool, held_by_ref: bool) -> list[Action]:
    """The planned actions that remove a version still holding a subject's row."""
    return [Action.DELETE_ROWS, Action.PURGE_DELETION_VECTORS] if current else [Action.VACUUM, Action.CLEAN_DELTA_LOG]


def candidate_files(location: Location, store: Store, key_column: str | None, values: list[Any] | None):
    """(file, size) of the current version's files whose partition value or add-action min/max
    statistics admit a value."""
    actions = arrow_table(open_table(location, store).get_add_actions(flatten=True)).to_pylist()
    found = []
    for action in actions:
        partition = action.get(f"partition.{key_column}")
        if partition is not None and values is not None:
            keep = any(str(partition) == str(value) for value in values)
        else:
            keep = may_hold(action.get(f"min.{key_column}"), action.get(f"max.{key_column}"), values)
        if keep:
            found.append((str(action["path"]), int(action["size_bytes"])))
    return sorted(found)


# ---- catalog discovery ----------------------------------------------------------------------------

def table_folder(parts: tuple[str, ...]) -> str | None:
    """``<table>/_delta_log/<n>.json`` marks a Delta table at ``<table>``."""
    if len(parts) >= 2 and parts[-2] == "_delta_log" and parts[-1].endswith(".json"):
        return "/".join(parts[:-2])
    return None


def table_facts(location: Location, store: Store) -> TableFacts:
    """Schema, retention (``delta.deletedFileRetentionDuration``, ``delta.logRetentionDuration``),
    change data feed, deletion vectors, ``delta.dataSkippingStatsColumns``, partition columns."""
    from piitracer.model.table_properties import delta_retention

    table = open_table(location, store)
    metadata = table.metadata()
    configuration = dict(metadata.configuration)
    retention, problems = delta_retention(configuration)
    features = []
    if configuration.get("delta.enableChangeDataFeed", "").lower() == "true":
        features.append("change data feed")
    if "deletionVectors" in (table.protocol().writer_features or []) or \
            configuration.get("delta.enableDeletionVectors", "").lower() == "true":
        features.append("deletion vectors")
    if configuration.get("delta.dataSkippingStatsColumns"):
        features.append(f"stats columns: {configuration['delta.dataSkippingStatsColumns']}")
    schema = pa.schema(table.schema().to_arrow())
    return TableFacts(columns=tuple(n.lower() for n in schema.names), retention=retention,
                      partition_columns=tuple(metadata.partition_columns), features=tuple(features),
                      problems=tuple(problems))


def sample_rows(location: Location, store: Store, limit: int):
    """At most ``limit`` current rows (delta-rs dataset head)."""
    return open_table(location, store).to_pyarrow_dataset().head(limit)


SUPPORT = FormatSupport(
    format=DatasetFormat.DELTA, perform=PERFORM, describe=DESCRIBE, schema=arrow_schema,
    newest_metadata=newest_commit, referenced_paths=referenced_paths, source_rows=source_rows, files=files,
    versions=versions, history=delta_history.history, file_removers=file_removers, logical_removers=logical_removers,
    candidate_files=candidate_files, estimate_basis="Delta add actions' min/max statistics",
    table_folder=table_folder, table_facts=table_facts, sample_rows=sample_rows,
)
