"""When would the bytes disappear under a dataset's own retention, and does that meet the deadline?

The window runs from the logical delete (at the earliest, when the request arrived) until the
dataset's own maintenance removes the files that still hold the values. The plan never waits for
it: its own physical steps are the override, stated for every dataset that would miss the deadline.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from piitracer.model.plan import Deadline
from piitracer.model.workspace import CatalogDataset
from piitracer.planner.templates import NO_RETENTION, template_for


def deadline_for(entry: CatalogDataset, received_at: datetime, deadline: timedelta) -> Deadline:
    """The deadline facts of one dataset the plan erases.

    Examples:
        >>> from datetime import datetime, timedelta, timezone
        >>> from piitracer.model.workspace import CatalogDataset
        >>> received = datetime(2026, 3, 1, tzinfo=timezone.utc)
        >>> vacuumed = CatalogDataset.model_validate({"format": "delta", "location": "wh/events", "retention": {
        ...     "deleted_file_retention": "7d", "log_retention": "14d", "maintenance_every": "7d"}})
        >>> facts = deadline_for(vacuumed, received, timedelta(days=30))
        >>> facts.natural_completion, facts.violates_deadline
        (datetime.datetime(2026, 3, 22, 0, 0, tzinfo=datetime.timezone.utc), False)
        >>> facts.basis
        'max(deleted_file_retention 7d, log_retention 14d) + maintenance_every 7d'
        >>> never = deadline_for(CatalogDataset(format="delta", location="wh/raw"), received, timedelta(days=30))
        >>> never.violates_deadline, never.basis
        (True, 'no retention.maintenance_every: VACUUM never runs')
        >>> never.override  # what the plan's own steps do instead of waiting
        'vacuum with 0 hours retention (check disabled), then checkpoint and log cleanup'
    """
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
    template = template_for(entry.format)
    if template is None:
        return None, NO_RETENTION
    return template.retention_window(entry)


def _override(entry: CatalogDataset) -> str:
    template = template_for(entry.format)
    return template.override if template else "no step of piitracer's removes them: the dataset's owner must"
