"""LineageGraph on small in-memory graphs: traversal, reach kinds, explanations, clones, stats."""

from __future__ import annotations

from lineage_builders import A, I, ORIGIN, T, col, edge

from piitracer.graph.lineage_graph import LineageGraph, Reach
from piitracer.model.lineage import (DatasetEdge, DatasetRelation, EdgeSubtype, IngestProblem, LineageBatch,
                                     ProblemSeverity)
from piitracer.model.workspace import CatalogDataset


def small_graph() -> LineageGraph:
    batch = LineageBatch(
        column_edges=(
            edge("src.pay.user_id", "a.enriched.customer_id", I),
            edge("a.enriched.customer_id", "b.txn.cust", I),
            edge("src.pay.email", "c.hashes.h", T, masking=True, expression="SHA2(LOWER(email), 256)"),
            edge("src.pay.amount", "d.daily.revenue", A),
            edge("src.pay.user_id", None, EdgeSubtype.FILTER, dataset="e.filtered"),
            edge("src.pay.amount", "e.filtered.amount", I),
            edge("src.pay.user_id", "f.ranked.rn", EdgeSubtype.WINDOW),
        ),
        dataset_edges=(
            DatasetEdge(source="src.pay", target="e.filtered", relation=DatasetRelation.FLOW, origin=ORIGIN),
            DatasetEdge(source="b.txn", target="g.export", relation=DatasetRelation.FLOW, origin=ORIGIN),
        ),
    )
    catalog = {
        "src.pay": CatalogDataset(format="iceberg", location="x", columns=("user_id", "email", "amount"), identifiers=("user_id", "email"), subject_key="user_id"),
        "dev.clone": CatalogDataset(format="iceberg", location="y", clone_of={"dataset": "src.pay", "mode": "shallow"}),
    }
    return LineageGraph.build(batch, catalog)


def test_downstream_columns_follow_direct_edges_transitively() -> None:
    graph = small_graph()
    assert graph.downstream_columns(col("src.pay.user_id")) == [
        col("a.enriched.customer_id"),
        col("b.txn.cust"),
        col("dev.clone.user_id"),
    ]


def test_reach_kinds() -> None:
    reached = small_graph().reachable_datasets(col("src.pay.user_id"))
    assert reached == {
        "src.pay": Reach.START,
        "a.enriched": Reach.DIRECT,
        "b.txn": Reach.DIRECT,
        "dev.clone": Reach.DIRECT,
        "e.filtered": Reach.INDIRECT,  # only a FILTER: it holds no user id
        "f.ranked": Reach.INDIRECT,
        "g.export": Reach.FLOW,  # a job reads b.txn and writes it, with no column lineage known
    }


def test_indirect_edges_are_not_followed_further() -> None:
    graph = small_graph()
    assert col("e.filtered.amount") not in graph.reach(col("src.pay.user_id")).columns


def test_clone_copies_every_column_as_identity() -> None:
    graph = small_graph()
    assert graph.dataset("dev.clone").columns == ["user_id", "email", "amount"]
    relations = [(e.source, e.target, e.relation) for e in graph.dataset_edges()]
    assert ("src.pay", "dev.clone", DatasetRelation.SHALLOW_CLONE) in relations
    clone_edges = [e for e in graph.edges_into("dev.clone")]
    assert {(e.source.column, e.target_column, e.subtype) for e in clone_edges} == {(c, c, I) for c in ("user_id", "email", "amount")}


def test_explain_gives_the_path() -> None:
    graph = small_graph()
    path = graph.explain(col("src.pay.user_id"), "b.txn")
    assert [(str(e.source), str(e.target)) for e in path] == [
        ("src.pay.user_id", "a.enriched.customer_id"),
        ("a.enriched.customer_id", "b.txn.cust"),
    ]
    indirect = graph.explain(col("src.pay.user_id"), "e.filtered")
    assert [(str(e.source), e.target_dataset, e.subtype) for e in indirect] == [("src.pay.user_id", "e.filtered", EdgeSubtype.FILTER)]
    assert graph.explain(col("src.pay.amount"), "b.txn") == []


def test_masked_edge_keeps_its_expression() -> None:
    (hashed,) = [e for e in small_graph().edges_from(col("src.pay.email")) if e.target_dataset == "c.hashes"]
    assert hashed.masking and hashed.expression == "SHA2(LOWER(email), 256)"


def test_stats_count_by_type() -> None:
    stats = small_graph().stats()
    assert stats["column_edges_by_type"] == {
        "DIRECT AGGREGATION": 1,
        "DIRECT IDENTITY": 6,  # 3 edges + 3 clone columns
        "DIRECT TRANSFORMATION": 1,
        "INDIRECT FILTER": 1,
        "INDIRECT WINDOW": 1,
    }
    assert stats["masked_edges"] == 1
    assert stats["dataset_edges_by_relation"] == {"flow": 2, "shallow_clone": 1}
    assert "a.enriched" in stats["datasets_not_in_catalog"]


def test_stats_do_not_count_info_lines_as_problems() -> None:
    def problem(severity: ProblemSeverity) -> IngestProblem:
        return IngestProblem(severity=severity, origin=ORIGIN, reason=severity.value)

    batch = LineageBatch(problems=tuple(problem(s) for s in (ProblemSeverity.ERROR, ProblemSeverity.WARNING,
                                                              ProblemSeverity.INFO, ProblemSeverity.INFO)))
    stats = LineageGraph.build(batch).stats()
    assert (stats["ingest_problems"], stats["ingest_errors"], stats["ingest_info"]) == (2, 1, 2)
    assert str(problem(ProblemSeverity.INFO)) == "t.sql:1: info: info"


def test_json_is_deterministic_and_typed() -> None:
    first = small_graph().to_json(col("src.pay.user_id"))
    second = small_graph().to_json(col("src.pay.user_id"))
    assert first == second
    kinds = {(e["source"]["column"], e["target_dataset"], e["kind"], e["subtype"]) for e in first["column_edges"]}
    assert ("user_id", "e.filtered", "INDIRECT", "FILTER") in kinds
    assert {d["id"]: d["reached"] for d in first["datasets"]}["g.export"] == "flow"


def test_edges_into_a_dataset_are_every_edge_whose_target_it_is() -> None:
    """``edges_into`` reads a dataset's in-edges (the planner asks it of every planned dataset):
    on random graphs (column- and dataset-level edges, clones from the catalog) it is exactly the
    sorted edges of the whole graph whose target is that dataset."""
    import random

    from piitracer.model.lineage import ColumnEdge

    subtypes = [I, T, A, EdgeSubtype.FILTER, EdgeSubtype.WINDOW, EdgeSubtype.JOIN]
    for seed in range(20):
        rng = random.Random(seed)
        datasets = [f"s{n}.t{n}" for n in range(8)]
        edges = []
        for _ in range(60):
            source, target = rng.sample(datasets, 2)
            subtype = rng.choice(subtypes)
            if rng.random() < 0.2:
                edges.append(edge(f"{source}.c{rng.randrange(4)}", None, subtype, dataset=target))
            else:
                edges.append(edge(f"{source}.c{rng.randrange(4)}", f"{target}.c{rng.randrange(4)}", subtype))
        catalog = {"dev.copy": CatalogDataset(format="iceberg", location="y", clone_of={"dataset": datasets[0], "mode": "shallow"})}
        graph = LineageGraph.build(LineageBatch(column_edges=tuple(edges)), catalog)
        everything = graph.column_edges()
        assert everything == sorted(everything, key=ColumnEdge.sort_key)
        for dataset in [*datasets, "dev.copy", "not.there"]:
            assert graph.edges_into(dataset) == [e for e in everything if e.target_dataset == dataset]
        assert sum(len(graph.edges_into(d)) for d in [*datasets, "dev.copy"]) == len(everything)
