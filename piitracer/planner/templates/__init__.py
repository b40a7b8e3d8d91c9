"""The planner's half of a table format: the steps that make its bytes disappear and how long its
own maintenance keeps them after a delete. One module per stored format (``iceberg``, ``delta``,
``parquet``, ``archive``), each ending with ``TEMPLATE = FormatTemplate(...)``, found by the
registry below; the format's other half (erasers, verification) is ``piitracer/formats/<format>.py``.

Pure like the rest of the planner: templates read the catalog entry and the table state the API
read for them, never a file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from functools import lru_cache
from typing import Callable

from piitracer.model.plan import Action, NoParams, StepEngine, StepParams, ValueSource
from piitracer.model.registry import discover
from piitracer.model.settings import IcebergSettings, SparkSettings
from piitracer.model.table_state import TableState
from piitracer.model.workspace import CatalogDataset, DatasetFormat, Policy


NO_RETENTION = "plain files: nothing removes the rows unless they are rewritten"


@dataclass
class StepTemplate:
    """A step before ordering gives it its number and id."""

    action: Action
    params: StepParams = field(default_factory=NoParams)
    blocking: bool = False
    reason: str | None = None
    warning: str | None = None
    physical: bool = True  # False for the logical step (delete, rewrite, manual...)
    # destroy_subject_key only: the key column and value sets naming the subjects' keys (other
    # steps take their dataset decision's).
    key_column: str | None = None
    values_from: tuple[ValueSource, ...] = ()


class EngineRefused(ValueError):
    """A dataset no engine can erase as the workspace configures it; the message says why and what
    to change (the planner turns it into a ``PlanningError``)."""


def _one_engine(dataset: str, entry: CatalogDataset, iceberg: IcebergSettings, spark: SparkSettings) -> StepEngine | None:
    return None


@dataclass(frozen=True)
class FormatTemplate:
    """How the plan erases one stored format.

    ``steps``: every step of one dataset, logical step first (shared/lakehouse-notes.md says which
    sequences remove the bytes). ``retention_window``: how long the format's own maintenance keeps
    the bytes after a delete, and why ((None, why) when it never removes them). ``override``: what
    the plan's own physical steps do instead, stated when the window misses the deadline.
    ``engine``: what runs the dataset's steps given the workspace's ``iceberg:`` and ``spark:``
    settings (None: the format has one way; raises :class:`EngineRefused` when none can)."""

    format: DatasetFormat
    steps: Callable[[CatalogDataset, TableState | None, Policy | None], list[StepTemplate]]
    override: str
    retention_window: Callable[[CatalogDataset], tuple[timedelta | None, str]] = lambda entry: (None, NO_RETENTION)
    engine: Callable[[str, CatalogDataset, IcebergSettings, SparkSettings], StepEngine | None] = _one_engine


@lru_cache(maxsize=1)
def _registry() -> dict[DatasetFormat, FormatTemplate]:
    return discover(__name__, __path__, "TEMPLATE", FormatTemplate)


def template_for(fmt: DatasetFormat) -> FormatTemplate | None:
    """The template of a stored format (None for one the planner cannot erase)."""
    return _registry().get(fmt)


def templated_formats() -> list[DatasetFormat]:
    """Every format a template module plans."""
    return sorted(_registry(), key=lambda f: f.value)


def days(value: timedelta) -> str:
    """A retention as a plan shows it: ``7d``, or ``36h`` when not whole days."""
    if value % timedelta(days=1) == timedelta(0):
        return f"{value.days}d"
    return f"{value.total_seconds() / 3600:g}h"
