"""Delta: a delete writes a new version; VACUUM removes the old files and ``_change_data``, and
the log (its add actions' min/max stats, checkpoints) is cleaned with a checkpoint under a zero
log retention (shared/lakehouse-notes.md)."""

from __future__ import annotations

from datetime import timedelta

from piitracer.model.plan import Action, CleanDeltaLogParams, PurgeDeletionVectorsParams, VacuumParams
from piitracer.model.table_state import TableState
from piitracer.model.workspace import CatalogDataset, DatasetFormat, Policy
from piitracer.planner.templates import FormatTemplate, StepTemplate, days

# What the owner loses, said before the run: unlike an Iceberg tag, a Delta version cannot be
# rewritten (the log is immutable and delta-rs has no history rewrite), so the erasure keeps
# everyone's history only back to the delete.
TIME_TRAVEL_LOST = ("time travel ends at the delete: once vacuumed and the log cleaned, every version before it "
                    "can no longer be read, for anyone (a Delta version cannot be rewritten without the subjects: the "
                    "log is immutable and delta-rs has no history rewrite)")

# Delta Lake's defaults when a table does not set them.
DELTA_DEFAULT_DELETED_FILE_RETENTION = timedelta(days=7)
DELTA_DEFAULT_LOG_RETENTION = timedelta(days=30)


def steps(entry: CatalogDataset, state: TableState | None, policy: Policy | None = None) -> list[StepTemplate]:
    return [
        StepTemplate(Action.DELETE_ROWS, physical=False),
        StepTemplate(Action.PURGE_DELETION_VECTORS, params=PurgeDeletionVectorsParams(when="the table has deletion vectors")),
        StepTemplate(Action.VACUUM, params=VacuumParams(retention_hours=0, enforce_retention_duration=False,
                                                        includes="removed data files and _change_data files")),
        StepTemplate(Action.CLEAN_DELTA_LOG, reason=TIME_TRAVEL_LOST, params=CleanDeltaLogParams(
            log_retention="0 hours", create_checkpoint=True, cleanup_metadata=True,
            why="add-action stats (minValues/maxValues) in _delta_log JSON and checkpoints hold the values",
        )),
    ]


def retention_window(entry: CatalogDataset) -> tuple[timedelta | None, str]:
    """VACUUM removes files older than the deleted-file retention and log cleanup entries older
    than the log retention, at the next maintenance run."""
    retention = entry.retention
    every = retention.maintenance_every
    files = retention.deleted_file_retention or DELTA_DEFAULT_DELETED_FILE_RETENTION
    log = retention.log_retention or DELTA_DEFAULT_LOG_RETENTION
    if every is None:
        return None, "no retention.maintenance_every: VACUUM never runs"
    defaults = "" if retention.deleted_file_retention and retention.log_retention else " (Delta defaults where unset)"
    return max(files, log) + every, (
        f"max(deleted_file_retention {days(files)}, log_retention {days(log)}) + maintenance_every {days(every)}{defaults}")


TEMPLATE = FormatTemplate(
    format=DatasetFormat.DELTA, steps=steps, retention_window=retention_window,
    override="vacuum with 0 hours retention (check disabled), then checkpoint and log cleanup",
)
