"""What a plan will rewrite and cost before it runs, from table metadata and statistics only.

For each step that rewrites data (``delete_rows``, ``rewrite_files``, ``rewrite_archive``) the
files that can hold a subject are found the way the engines prune them, without reading a row:
Delta add actions' ``minValues``/``maxValues`` of the key column (delta-rs), Parquet footer
min/max statistics of each file, Iceberg manifests' partition values and column bounds (a
pyiceberg scan plan with ``key IN values``). The sum of their sizes is the estimate.

The values are known at planning only for a step keyed by a plan source (``user_id`` everywhere):
a step keyed by another identifier (an e-mail resolved from the source at run time) cannot be
pruned, so its estimate is every file of the table, marked as an upper bound.

Cost uses the workspace's ``pricing`` (per GB rewritten, per object deleted, per archived object
plus the archive's restore price per GB); run time uses a throughput measured on this lakehouse:
the bytes the journal's committed rewrite steps removed divided by their seconds (none measured
yet: no run time estimate, said so).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping

from piitracer.executor.journal import COMMITTED, Journal
from piitracer.executor.resolve import subject_key_values
from piitracer.formats import support_for
from piitracer.model.plan import Action, DeletionPlan, Step, ValueKind
from piitracer.model.progress import Progress, report
from piitracer.model.workspace import CatalogDataset, Pricing
from piitracer.storage.locations import Location
from piitracer.storage.store import Store

GB = 1024 ** 3
REWRITING = {Action.DELETE_ROWS, Action.EQUALITY_DELETE, Action.REWRITE_FILES, Action.REWRITE_ARCHIVE}


@dataclass(frozen=True)
class StepEstimate:
    """One rewriting step: the files that may hold a subject, their bytes, the cost."""

    step_id: str
    dataset: str
    action: str
    files: int
    bytes: int
    cost: float
    upper_bound: bool  # the key's values are only known at run time: every file counted
    basis: str  # where the figures come from
    delay: str | None = None  # an archive's restore delay


@dataclass
class PlanEstimate:
    """The whole plan's estimate (see the module docstring)."""

    currency: str
    steps: list[StepEstimate] = field(default_factory=list)
    throughput: float | None = None  # bytes per second measured on this lakehouse (None: no run yet)

    @property
    def files(self) -> int:
        return sum(s.files for s in self.steps)

    @property
    def bytes(self) -> int:
        return sum(s.bytes for s in self.steps)

    @property
    def cost(self) -> float:
        return round(sum(s.cost for s in self.steps), 2)

    @property
    def seconds(self) -> float | None:
        return self.bytes / self.throughput if self.throughput else None

    def top_costs(self, count: int = 5) -> list[StepEstimate]:
        return sorted(self.steps, key=lambda s: (-s.cost, s.step_id))[:count]

    def as_dict(self) -> dict[str, Any]:
        return {"currency": self.currency, "files": self.files, "bytes": self.bytes, "cost": self.cost,
                "seconds": round(self.seconds, 1) if self.seconds is not None else None,
                "throughput_bytes_per_second": round(self.throughput, 1) if self.throughput else None,
                "steps": [s.__dict__ for s in self.steps]}


def estimate_plan(plan: DeletionPlan, catalog: Mapping[str, CatalogDataset], locations: Mapping[str, Location],
                  store: Store, pricing: Pricing, journal: Journal | None = None,
                  progress: Progress | None = None) -> PlanEstimate:
    """The estimate of every rewriting step of ``plan`` (reads metadata and footers, never rows);
    ``progress`` hears of each step estimated."""
    estimate = PlanEstimate(currency=pricing.currency, throughput=measured_throughput(journal) if journal else None)
    rewriting = [s for s in plan.steps if s.action in REWRITING and s.dataset in locations]
    for number, step in enumerate(rewriting):
        report(progress, "estimating steps", number, len(rewriting))
        entry, location = catalog[step.dataset], locations[step.dataset]
        values = known_values(plan, step)
        files = candidate_files(entry, location, store, step.key_column, values)
        sizes = [size for _, size in files]
        archived = step.action is Action.REWRITE_ARCHIVE
        per_object = pricing.archive_per_object_deleted if archived else pricing.per_object_deleted
        restore = (entry.archive_of.cost_per_gb_restore or 0.0) if archived and entry.archive_of else 0.0
        cost = len(files) * per_object + sum(sizes) / GB * (pricing.per_gb_rewritten + restore)
        delay = str(entry.archive_of.restore_delay) if archived and entry.archive_of and entry.archive_of.restore_delay else None
        estimate.steps.append(StepEstimate(
            step_id=step.id, dataset=step.dataset, action=step.action.value, files=len(files), bytes=sum(sizes),
            cost=round(cost, 2), upper_bound=values is None, delay=delay,
            basis=support_for(entry.format).estimate_basis + ("; values known only at run time: every file" if values is None else "")))
    report(progress, "estimating steps", len(rewriting), len(rewriting))
    return estimate


def known_values(plan: DeletionPlan, step: Step) -> list[Any] | None:
    """The step's key values when planning knows them (the key is a plan source's identifier);
    None when they come from the source rows at run time."""
    sources = {(ref.dataset, ref.column) for ref in plan.sources}
    values: list[Any] = []
    for source in step.values_from:
        if source.kind is not ValueKind.IDENTIFIER or (source.source.dataset, source.source.column) not in sources:
            return None
        values += list(subject_key_values(plan, source.source.dataset, source.source.column))
    return values or None


def candidate_files(entry: CatalogDataset, location: Location, store: Store, key_column: str | None,
                    values: list[Any] | None) -> list[tuple[str, int]]:
    """(file, size) of every file whose metadata says it may hold one of ``values`` in
    ``key_column`` (every file when ``values`` is None or no statistics exclude it)."""
    return support_for(entry.format).candidate_files(location, store, key_column, values)


def measured_throughput(journal: Journal) -> float | None:
    """Bytes per second of the rewriting steps this lakehouse committed (None when none did)."""
    total_bytes, total_seconds = 0, 0.0
    rewriting = {action.value for action in REWRITING}
    for record in journal.records(None):
        if record.state != COMMITTED or record.action not in rewriting:
            continue
        seconds = _seconds(record.started_at, record.finished_at)
        if record.bytes_removed and seconds:
            total_bytes += record.bytes_removed
            total_seconds += seconds
    return total_bytes / total_seconds if total_seconds else None


def _seconds(started: str | None, finished: str | None) -> float | None:
    if not started or not finished:
        return None
    return max((datetime.fromisoformat(finished) - datetime.fromisoformat(started)).total_seconds(), 0.001)
