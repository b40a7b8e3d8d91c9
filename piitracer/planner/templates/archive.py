"""Archive exports: rewritten like plain Parquet, priced with the archive's restore delay and
cost; their own retention (``archive_of.retention``) removes whole objects eventually."""

from __future__ import annotations

from datetime import timedelta

from piitracer.model.plan import Action, RewriteArchiveParams
from piitracer.model.table_state import TableState
from piitracer.model.workspace import CatalogDataset, DatasetFormat, Policy
from piitracer.planner.templates import FormatTemplate, StepTemplate, days


def steps(entry: CatalogDataset, state: TableState | None, policy: Policy | None = None) -> list[StepTemplate]:
    archive = entry.archive_of
    params = RewriteArchiveParams(
        alternative="delete the affected archived objects",
        restore_delay=_hours(archive.restore_delay) if archive is not None and archive.restore_delay is not None else None,
        cost_per_gb_restore=archive.cost_per_gb_restore if archive is not None else None,
    )
    return [StepTemplate(Action.REWRITE_ARCHIVE, physical=False, params=params)]


def retention_window(entry: CatalogDataset) -> tuple[timedelta | None, str]:
    if entry.archive_of is None:
        return None, "an archive without archive_of: nothing removes the rows unless they are rewritten"
    return entry.archive_of.retention, f"archive_of.retention {days(entry.archive_of.retention)}"


def _hours(value: timedelta) -> str:
    return f"{int(value.total_seconds() // 3600)}h"


TEMPLATE = FormatTemplate(
    format=DatasetFormat.ARCHIVE, steps=steps, retention_window=retention_window,
    override="rewrite_archive rewrites the affected archived objects now instead of waiting for them to expire",
)
