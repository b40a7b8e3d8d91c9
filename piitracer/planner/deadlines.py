"""When would the bytes disappear under a dataset's own retention, and does that meet the deadline?

The window runs from the logical delete (at the earliest, when the request arrived) until the
dataset's own maintenance removes the files that still hold the values. The plan never waits for
it: its own physical steps are the override, stated for every dataset that would miss the deadline.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from piitracer.model.plan import Deadline
from piitracer.model.workspace import CatalogDataset, DatasetFormat

# Delta Lake's defaults when a table does not set them.
DELTA_DEFAULT_DELETED_FILE_RETENTION = timedelta(days=7)
DELTA_DEFAULT_LOG_RETENTION = timedelta(days=30)


def deadline_for(entry: CatalogDataset, received_at: datetime, deadline: timedelta) -> Deadline:
    """The deadline facts of one dataset the plan erases."""
    window, basis = _retention_window(entry)
    deadline_at = received_at + deadline
    natural = received_at + window if window is not None else None
    violates = natural is None or natural > deadline_at
    return Deadline(
        deadline_at=deadline_at,
        retention_window=window,
        natural_completion=natural,
        violates_deadline=violates,
        override=_override(entry) if violates else None,
        basis=basis,
    )


def _retention_window(entry: CatalogDataset) -> tuple[timedelta | None, str]:
    window = WINDOWS.get(entry.format)
    if window is None:
        return None, "plain files: nothing removes the rows unless they are rewritten"
    return window(entry)


def _iceberg_window(entry: CatalogDataset) -> tuple[timedelta | None, str]:
    retention = entry.retention
    every = retention.maintenance_every
    if retention.snapshot_max_age is None:
        return None, "no retention.snapshot_max_age: snapshots are never expired"
    if every is None:
        return None, "no retention.maintenance_every: expiry never runs"
    if (retention.min_snapshots_to_keep or 0) > 1:
        return None, f"retention.min_snapshots_to_keep={retention.min_snapshots_to_keep} keeps pre-delete snapshots until later commits"
    return retention.snapshot_max_age + every, (
        f"retention.snapshot_max_age {_days(retention.snapshot_max_age)} + maintenance_every {_days(every)}")


def _delta_window(entry: CatalogDataset) -> tuple[timedelta | None, str]:
    retention = entry.retention
    every = retention.maintenance_every
    files = retention.deleted_file_retention or DELTA_DEFAULT_DELETED_FILE_RETENTION
    log = retention.log_retention or DELTA_DEFAULT_LOG_RETENTION
    if every is None:
        return None, "no retention.maintenance_every: VACUUM never runs"
    defaults = "" if retention.deleted_file_retention and retention.log_retention else " (Delta defaults where unset)"
    return max(files, log) + every, (
        f"max(deleted_file_retention {_days(files)}, log_retention {_days(log)}) + maintenance_every {_days(every)}{defaults}")


def _archive_window(entry: CatalogDataset) -> tuple[timedelta | None, str]:
    if entry.archive_of is None:
        return None, "an archive without archive_of: nothing removes the rows unless they are rewritten"
    return entry.archive_of.retention, f"archive_of.retention {_days(entry.archive_of.retention)}"


# How long each format keeps bytes after a delete, under its own maintenance (a lookup by format).
WINDOWS = {DatasetFormat.ICEBERG: _iceberg_window, DatasetFormat.DELTA: _delta_window, DatasetFormat.ARCHIVE: _archive_window}


OVERRIDES = {
    DatasetFormat.ICEBERG: "expire_snapshots older than the delete's commit time (retain_last 1), then remove_orphan_files",
    DatasetFormat.DELTA: "vacuum with 0 hours retention (check disabled), then checkpoint and log cleanup",
    DatasetFormat.ARCHIVE: "rewrite_archive rewrites the affected archived objects now instead of waiting for them to expire",
}


def _override(entry: CatalogDataset) -> str:
    return OVERRIDES.get(entry.format, "rewrite_files replaces the affected files and removes the originals at once")


def _days(value: timedelta) -> str:
    if value % timedelta(days=1) == timedelta(0):
        return f"{value.days}d"
    return f"{value.total_seconds() / 3600:g}h"
