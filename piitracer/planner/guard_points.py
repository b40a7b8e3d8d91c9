"""Where a pipeline guard belongs (issue 52): the lineage's entry points into the erased person's
datasets, named in the plan so that the team knows which jobs to put ``piitracer.guard`` in.

An erased person comes back through whatever writes their identifiers into a dataset they were
erased from: a source's own writers (a backfill, a replay, a restore), and any job that carries
identifier values into a planned dataset from a dataset outside the plan. For each source dataset
the point is the source itself (with the datasets the lineage says feed it, if any); for every
other planned dataset, a point exists when the lineage carries values straight into its key column
from outside the plan. Pure: from the graph and the decisions, sorted.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from piitracer.graph.lineage_graph import LineageGraph
from piitracer.model.lineage import ColumnRef, EdgeKind
from piitracer.model.plan import DatasetStatus, GuardPoint
from piitracer.model.workspace import CatalogDataset

HOLDS_THE_PERSON = {DatasetStatus.ERASE, DatasetStatus.SHRED, DatasetStatus.MANUAL_REVIEW}


def guard_points(graph: LineageGraph, catalog: Mapping[str, CatalogDataset], sources: Iterable[ColumnRef],
                 decisions: Mapping[str, object]) -> tuple[GuardPoint, ...]:
    """The guard points of a plan (module docstring). ``decisions``: dataset -> the planner's
    decision (``status``, ``key_column``)."""
    planned = {d for d, decision in decisions.items() if decision.status in HOLDS_THE_PERSON}
    points: dict[str, GuardPoint] = {}
    for dataset in sorted({ref.dataset for ref in sources}):
        entry = catalog.get(dataset)
        columns = sorted({ref.column for ref in sources if ref.dataset == dataset} | set(entry.identifiers if entry else ()))
        fed_by = _fed_from_outside(graph, dataset, planned | {dataset}, None)
        points[dataset] = GuardPoint(
            dataset=dataset, columns=tuple(columns), fed_by=fed_by,
            reason="a source of the erasure: every job that writes it (a backfill, a replay, a restore) can bring the "
                   "person back" + (f"; the lineage says it is fed from {', '.join(fed_by)}" if fed_by else ""))
    for dataset in sorted(planned - set(points)):
        key = getattr(decisions[dataset], "key_column", None)
        if not key:
            continue
        fed_by = _fed_from_outside(graph, dataset, planned, key)
        if fed_by:
            points[dataset] = GuardPoint(
                dataset=dataset, columns=(key,), fed_by=fed_by,
                reason=f"the lineage carries values into its key column {key} from outside the erasure ({', '.join(fed_by)})")
    return tuple(points[d] for d in sorted(points))


def _fed_from_outside(graph: LineageGraph, dataset: str, inside: set[str], column: str | None) -> tuple[str, ...]:
    """The datasets outside ``inside`` whose values a DIRECT column edge carries into ``dataset``
    (into ``column`` only, when given), sorted."""
    if not graph.has_dataset(dataset):
        return ()
    return tuple(sorted({e.source.dataset for e in graph.edges_into(dataset)
                         if e.kind is EdgeKind.DIRECT and e.source.dataset not in inside
                         and (column is None or (e.target_column or "").lower() == column.lower())}))
