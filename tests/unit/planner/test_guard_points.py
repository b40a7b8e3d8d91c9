"""Where a pipeline guard belongs (issue 52): the plan names each source (with what the lineage
says feeds it) and each planned dataset whose key column the lineage fills from outside the
erasure; a dataset fed only from inside the erasure, or only through an INDIRECT edge, is not one."""

from __future__ import annotations

from datetime import datetime, timezone

from piitracer.graph.lineage_graph import LineageGraph
from piitracer.model.lineage import ColumnEdge, ColumnRef, EdgeKind, EdgeSubtype, LineageBatch, Origin, OriginKind
from piitracer.model.plan import PlanRequest, Subject
from piitracer.model.workspace import CatalogDataset, Policy
from piitracer.planner.build import build_plan

ORIGIN = Origin(kind=OriginKind.SQL, file="jobs.sql", line=1)


def edge(source: str, target: str, kind: EdgeKind = EdgeKind.DIRECT) -> ColumnEdge:
    dataset, _, column = source.rpartition(".")
    target_dataset, _, target_column = target.rpartition(".")
    return ColumnEdge(source=ColumnRef(dataset=dataset, column=column), target_dataset=target_dataset,
                      target_column=target_column, kind=kind,
                      subtype=EdgeSubtype.IDENTITY if kind is EdgeKind.DIRECT else EdgeSubtype.FILTER, origin=ORIGIN)


def plan_of(*edges: ColumnEdge):
    catalog = {name: CatalogDataset(format="parquet", location=f"wh/{name}") for name in
               ("raw.signups", "crm.users", "analytics.daily", "analytics.weekly", "partner.ids", "ops.audit")}
    catalog["crm.users"] = CatalogDataset(format="parquet", location="wh/users", identifiers=("user_id", "email"),
                                          column_types={"user_id": "bigint"})
    graph = LineageGraph.build(LineageBatch(column_edges=edges))
    request = PlanRequest(sources=(ColumnRef(dataset="crm.users", column="user_id"),), subjects=(
        Subject(value="8841302", request_id="r1", received_at=datetime(2026, 11, 1, tzinfo=timezone.utc)),))
    return build_plan(graph, catalog, Policy(), request)


def test_the_source_and_a_key_column_fed_from_outside_are_guard_points() -> None:
    plan = plan_of(edge("raw.signups.uid", "crm.users.user_id"),
                   edge("crm.users.user_id", "analytics.daily.customer_id"),
                   edge("partner.ids.customer_id", "analytics.daily.customer_id"),  # a second writer of the key
                   edge("analytics.daily.customer_id", "analytics.weekly.customer_id"),  # fed from inside only
                   edge("ops.audit.customer_id", "analytics.weekly.customer_id", EdgeKind.INDIRECT))  # a filter, no values
    assert [(g.dataset, g.columns, g.fed_by) for g in plan.guard_points] == [
        ("analytics.daily", ("customer_id",), ("partner.ids",)),
        ("crm.users", ("email", "user_id"), ("raw.signups",)),
    ]
    assert "partner.ids" in plan.guard_points[0].reason


def test_a_plan_with_no_outside_writer_names_its_source_only() -> None:
    plan = plan_of(edge("crm.users.user_id", "analytics.daily.customer_id"))
    assert [(g.dataset, g.fed_by) for g in plan.guard_points] == [("crm.users", ())]
    assert plan_of(edge("crm.users.user_id", "analytics.daily.customer_id")).to_json() == plan.to_json()  # deterministic
