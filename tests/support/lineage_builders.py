"""Small in-memory lineage graphs for unit tests (no files, no Spark)."""

from __future__ import annotations

from datetime import datetime, timezone

from piitracer.graph.lineage_graph import LineageGraph
from piitracer.model.lineage import (
    DIRECT_SUBTYPES,
    ColumnEdge,
    ColumnRef,
    DatasetEdge,
    DatasetRelation,
    EdgeKind,
    EdgeSubtype,
    LineageBatch,
    Origin,
    OriginKind,
)
from piitracer.model.plan import PlanRequest, Subject
from piitracer.model.workspace import CatalogDataset

ORIGIN = Origin(kind=OriginKind.SQL, file="t.sql", line=1)
RECEIVED = datetime(2026, 11, 20, 9, 0, tzinfo=timezone.utc)
I, T, A = EdgeSubtype.IDENTITY, EdgeSubtype.TRANSFORMATION, EdgeSubtype.AGGREGATION


def col(text: str) -> ColumnRef:
    dataset, _, column = text.rpartition(".")
    return ColumnRef(dataset=dataset, column=column)


def edge(source: str, target: str | None, subtype: EdgeSubtype, *, dataset: str | None = None, **kw) -> ColumnEdge:
    """``edge('a.t.x', 'b.u.y', I)``; a dataset-level edge: ``edge('a.t.x', None, FILTER, dataset='b.u')``."""
    kind = EdgeKind.DIRECT if subtype in DIRECT_SUBTYPES else EdgeKind.INDIRECT
    target_ref = col(target) if target else None
    return ColumnEdge(
        source=col(source),
        target_dataset=target_ref.dataset if target_ref else dataset,
        target_column=target_ref.column if target_ref else None,
        kind=kind,
        subtype=subtype,
        origin=ORIGIN,
        **kw,
    )


def flow(source: str, target: str) -> DatasetEdge:
    return DatasetEdge(source=source, target=target, relation=DatasetRelation.FLOW, origin=ORIGIN)


def table(fmt: str = "iceberg", **kw) -> CatalogDataset:
    kw.setdefault("location", "somewhere")
    if fmt in ("view", "external"):
        kw.pop("location")
    return CatalogDataset(format=fmt, **kw)


SOURCE = table(
    write_mode="merge-on-read",
    columns=("user_id", "pan", "phone", "email", "amount", "dt"),
    identifiers=("user_id", "pan", "phone", "email"),
    subject_key="user_id",
    column_types={"user_id": "bigint", "pan": "string", "phone": "string", "email": "string"},
    retention={"snapshot_max_age": "5d", "maintenance_every": "1d"},
)


def graph_of(*edges, catalog: dict[str, CatalogDataset] | None = None, flows=()) -> tuple[LineageGraph, dict]:
    """A graph of ``edges`` with ``src.pay`` as the PII source; every target dataset is catalogued
    as Iceberg unless ``catalog`` says otherwise."""
    full = {"src.pay": SOURCE}
    for e in edges:
        full.setdefault(e.target_dataset, table())
    full.update(catalog or {})
    return LineageGraph.build(LineageBatch(column_edges=tuple(edges), dataset_edges=tuple(flows)), full), full


def request(*values: str, source: str = "src.pay.user_id") -> PlanRequest:
    return PlanRequest(
        sources=(col(source),),
        subjects=tuple(Subject(value=v, request_id=f"req-{v}", received_at=RECEIVED) for v in values or ("8841302",)),
    )
