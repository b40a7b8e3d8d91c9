"""Delta erasure with delta-rs (no Delta jars in Spark here; shared/lakehouse-notes.md).

A delete only writes a new version: the old files stay until VACUUM, and the ``_delta_log`` add
actions (their min/max ``stats``) and checkpoints keep the values until the log is cleaned. Every
function is idempotent, so a step that was running when the process died can simply run again.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from piitracer.executor.arrow_values import SUBJECT_COLUMN, typed_values
from piitracer.executor.disk import removed_between, removed_since_first_attempt
from piitracer.executor.failpoints import failpoint
from piitracer.executor.outcome import Attempt, SafetyError, StepOutcome
from piitracer.formats import delta as delta_format
from piitracer.storage.locations import Location
from piitracer.storage.store import Store

LOG_RETENTION = "delta.logRetentionDuration"
DEFAULT_LOG_RETENTION = "interval 30 days"  # Delta's default when the table does not set one


def _table(location: Location, store: Store):
    if not delta_format.is_table(location, store):
        raise SafetyError(f"{location}: not a Delta table (no _delta_log)")
    return delta_format.open_table(location, store)


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _key_type(table, key_column: str) -> pa.DataType:
    schema = pa.schema(table.schema().to_arrow())
    if key_column not in schema.names:
        raise SafetyError(f"{table.table_uri}: no column {key_column!r} (columns: {', '.join(schema.names)})")
    return schema.field(key_column).type


def delete_rows(location: Location, store: Store, key_column: str | None, values: list[Any],
                attempt: Attempt | None = None) -> StepOutcome:
    """Delete the rows whose key is one of ``values``: a MERGE with a source table of the values
    and a when-matched delete, so the values are data, never predicate text (a ``delete(predicate)``
    would also write the values into the commit's operation parameters in the log).
    ``rows_deleted`` counts from the first attempt (``Attempt``): a resumed run that finds the
    rows already gone reports what the killed attempt removed."""
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
    metrics = (table.merge(source=source, predicate=f"t.{_quote(key_column)} = s.{SUBJECT_COLUMN}",
                           source_alias="s", target_alias="t")
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
    return outcome


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
