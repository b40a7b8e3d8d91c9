"""Surrogate keys found in SQL and planned (issue 32): which columns are derived identifiers of the
person, the exact edges the SQL gives, the exact plan steps and what the plan says of a ranking
that is no identifier. Pure: SQL text -> lineage graph -> plan, no tables."""

from __future__ import annotations

from datetime import datetime, timezone

from piitracer.graph.lineage_graph import LineageGraph
from piitracer.ingest.sql.lineage import ingest_sql_text
from piitracer.model.lineage import ColumnRef, EdgeSubtype
from piitracer.model.naming import DatasetNamer
from piitracer.model.plan import Action, DatasetStatus, PlanRequest, Subject, SurrogateLookup, ValueKind
from piitracer.model.workspace import CatalogDataset, Policy
from piitracer.planner.build import build_plan
from piitracer.render.plan_text import explain_text

SCHEMAS = {"raw.customers": ["customer_id", "name", "region", "source_system", "amount"],
           "raw.orders": ["order_id", "customer_id", "amount"]}
FACT = "INSERT INTO dw.fact SELECT d.{key}, o.order_id, o.amount FROM raw.orders o JOIN dw.dim d ON o.customer_id = d.customer_id;"
RULE = "3s: surrogate key assigned per subject key, read from the dataset that maps them"


def ingest(sql: str):
    return ingest_sql_text(sql, file="star.sql", namer=DatasetNamer(), schemas=SCHEMAS)


def edges(batch) -> set[tuple]:
    return {(str(e.source), e.target_dataset, e.target_column, e.kind.value, e.subtype.value, e.expression)
            for e in batch.column_edges}


def star(select: str, key: str = "sk"):
    """A dimension made by ``select`` (its surrogate key named ``key``), a fact that takes the key by
    a join on the natural key, and the plan for one subject of ``raw.customers.customer_id``."""
    return planned(ingest(f"INSERT INTO dw.dim {select};\n{FACT.format(key=key)}\n"))


def planned(batch):
    """(batch, the plan for one subject of ``raw.customers.customer_id`` over the star schema)."""
    assert [p for p in batch.problems if p.severity.value != "info"] == []
    table = lambda **kw: CatalogDataset(format="iceberg", location="x", write_mode="copy-on-write", **kw)  # noqa: E731
    catalog = {"raw.customers": table(columns=tuple(SCHEMAS["raw.customers"]), identifiers=("customer_id",),
                                      subject_key="customer_id", column_types={"customer_id": "bigint"}),
               "raw.orders": table(columns=tuple(SCHEMAS["raw.orders"])), "dw.dim": table(), "dw.fact": table()}
    request = PlanRequest(sources=(ColumnRef(dataset="raw.customers", column="customer_id"),),
                          subjects=(Subject(value="42", request_id="r1",
                                            received_at=datetime(2026, 11, 20, tzinfo=timezone.utc)),))
    graph = LineageGraph.build(batch, catalog)
    return batch, build_plan(graph, catalog, Policy(), request)


def steps(plan, dataset: str) -> list[tuple]:
    return [(s.action, s.key_column, tuple(v.name for v in s.values_from)) for s in plan.steps if s.dataset == dataset]


ERASE_BY_SK = [(Action.DELETE_ROWS, "sk", ("dw.dim.sk~surrogate",)), (Action.REWRITE_MANIFESTS, None, ()),
               (Action.EXPIRE_SNAPSHOTS, None, ()), (Action.REMOVE_ORPHAN_FILES, None, ())]


def test_a_row_number_ordered_by_the_key_is_a_surrogate_key() -> None:
    batch, plan = star("SELECT row_number() OVER (ORDER BY customer_id) AS sk, customer_id, name FROM raw.customers")
    text = "ROW_NUMBER() OVER (ORDER BY customer_id)"
    assert {e for e in edges(batch) if e[1] == "dw.dim"} == {
        ("raw.customers.customer_id", "dw.dim", "sk", "DIRECT", "SURROGATE", text),
        ("raw.customers.customer_id", "dw.dim", "sk", "INDIRECT", "WINDOW", text),
        ("raw.customers.customer_id", "dw.dim", "customer_id", "DIRECT", "IDENTITY", None),
        ("raw.customers.name", "dw.dim", "name", "DIRECT", "IDENTITY", None),
    }
    fact = plan.decision("dw.fact")
    assert (fact.status, fact.key_column, fact.rule) == (DatasetStatus.ERASE, "sk", RULE)
    assert fact.reason == ("sk holds the surrogate key dw.dim.sk (ROW_NUMBER() OVER (ORDER BY customer_id)), read at "
                           "run time from dw.dim by its customer_id")
    (value,) = fact.values_from
    assert value.kind is ValueKind.SURROGATE and value.source == ColumnRef(dataset="raw.customers", column="customer_id")
    assert value.lookup == SurrogateLookup(dataset="dw.dim", key_column="customer_id", key_from=("raw.customers.customer_id",),
                                           value_column="sk", how=text)
    assert fact.lineage_path == (
        f"raw.customers.customer_id -[DIRECT SURROGATE {text}]-> dw.dim.sk (star.sql:1)",
        "dw.dim.sk -[DIRECT IDENTITY]-> dw.fact.sk (star.sql:2)",
    )
    assert steps(plan, "dw.fact") == ERASE_BY_SK
    # The dimension is erased by its natural key, and searched for the surrogate values too.
    dim = plan.decision("dw.dim")
    assert (dim.key_column, dim.column_forms["sk"]) == ("customer_id", ("dw.dim.sk~surrogate",))
    # The resolve step reads the mapping before anything is deleted.
    resolve = plan.steps[0]
    assert (resolve.action, [v.name for v in resolve.values_from]) == (
        Action.RESOLVE, ["dw.dim.sk~surrogate", "raw.customers.customer_id"])
    assert all(resolve.id in s.depends_on or s.depends_on for s in plan.steps[1:])
    assert [v.name for v in plan.resolve[0].computed] == ["dw.dim.sk~surrogate"]
    assert "surrogate key read at run time from dw.dim.sk, assigned by " + text in explain_text(plan, "dw.fact")


def test_rank_and_dense_rank_by_the_key_are_surrogate_keys_too() -> None:
    for function in ("rank", "dense_rank"):
        _, plan = star(f"SELECT {function}() OVER (ORDER BY customer_id DESC) AS sk, customer_id FROM raw.customers")
        assert plan.decision("dw.fact").values_from[0].lookup.how == f"{function.upper()}() OVER (ORDER BY customer_id DESC)"
        assert steps(plan, "dw.fact") == ERASE_BY_SK


def test_a_hash_of_the_key_with_another_column_is_read_from_the_dimension() -> None:
    batch, plan = star("SELECT md5(concat(customer_id, '-', source_system)) AS sk, customer_id FROM raw.customers")
    text = "MD5(CONCAT(customer_id, '-', source_system))"
    assert ("raw.customers.customer_id", "dw.dim", "sk", "DIRECT", "TRANSFORMATION", text) in edges(batch)
    fact = plan.decision("dw.fact")
    assert (fact.status, fact.key_column, fact.rule) == (DatasetStatus.ERASE, "sk", RULE)
    assert fact.values_from[0].lookup == SurrogateLookup(dataset="dw.dim", key_column="customer_id",
                                                         key_from=("raw.customers.customer_id",), value_column="sk", how=text)
    assert steps(plan, "dw.fact") == ERASE_BY_SK


def test_a_concatenation_of_the_key_with_another_column_is_a_surrogate_key() -> None:
    for select in ("SELECT concat(source_system, ':', customer_id) AS sk, customer_id FROM raw.customers",
                   "SELECT customer_id || '-' || region AS sk, customer_id FROM raw.customers"):
        _, plan = star(select)
        assert (plan.decision("dw.fact").rule, steps(plan, "dw.fact")) == (RULE, ERASE_BY_SK), select


def test_a_hash_of_the_key_and_constants_stays_a_computed_key() -> None:
    """Computable from the source row: evaluated there, as before (no mapping needed)."""
    _, plan = star("SELECT md5(concat(customer_id, '-', 'crm')) AS sk, customer_id FROM raw.customers")
    fact = plan.decision("dw.fact")
    assert (fact.key_column, fact.rule) == ("sk", "3: deterministic transform known from SQL")
    assert [(v.kind, v.expression) for v in fact.values_from] == [(ValueKind.COMPUTED, "MD5(CONCAT(customer_id, '-', 'crm'))")]


def test_a_ranking_restarted_per_partition_is_not_an_identifier() -> None:
    batch, plan = star("SELECT row_number() OVER (PARTITION BY region ORDER BY customer_id) AS sk, customer_id "
                       "FROM raw.customers")
    assert not [e for e in batch.column_edges if e.subtype is EdgeSubtype.SURROGATE]
    fact = plan.decision("dw.fact")
    assert (fact.status, fact.key_column) == (DatasetStatus.NO_ACTION, None)
    assert fact.reason.endswith("; sk (a copy of dw.dim.sk) is ROW_NUMBER() OVER (PARTITION BY region ORDER BY "
                                "customer_id), not an identifier of the person: its numbers restart for every region, "
                                "so one number belongs to many persons")
    assert steps(plan, "dw.fact") == []


def test_a_ranking_partitioned_by_the_key_is_not_an_identifier() -> None:
    _, plan = star("SELECT row_number() OVER (PARTITION BY customer_id ORDER BY amount) AS sk, customer_id "
                   "FROM raw.customers")
    fact = plan.decision("dw.fact")
    assert fact.status is DatasetStatus.NO_ACTION
    assert "its numbers restart for every customer_id, so one number belongs to many persons" in fact.reason


def test_a_ranking_ordered_by_amount_is_not_an_identifier_and_the_plan_says_why() -> None:
    batch, plan = star("SELECT row_number() OVER (ORDER BY amount) AS sk, customer_id FROM raw.customers")
    # The number follows the amount (an edge from amount), not the person's key.
    assert {e for e in edges(batch) if e[2] == "sk" and e[1] == "dw.dim"} == {
        ("raw.customers.amount", "dw.dim", "sk", "DIRECT", "SURROGATE", "ROW_NUMBER() OVER (ORDER BY amount)"),
        ("raw.customers.amount", "dw.dim", "sk", "INDIRECT", "WINDOW", "ROW_NUMBER() OVER (ORDER BY amount)"),
    }
    fact = plan.decision("dw.fact")
    assert (fact.status, fact.rule) == (DatasetStatus.NO_ACTION, "influenced only through INDIRECT edges")
    assert fact.reason == ("the subjects' values only filter, join, group or order its rows: it holds none of them; "
                           "sk (a copy of dw.dim.sk) is ROW_NUMBER() OVER (ORDER BY amount), not an identifier of the "
                           "person: it numbers rows in the order of amount, which does not follow the subject's key")
    assert steps(plan, "dw.fact") == []
    assert plan.resolve[0].computed == ()


def test_a_dimension_without_the_natural_key_cannot_map_its_surrogate() -> None:
    batch = ingest("INSERT INTO dw.dim SELECT row_number() OVER (ORDER BY customer_id) AS sk, name FROM raw.customers;\n"
                   "INSERT INTO dw.fact SELECT d.sk, d.name FROM dw.dim d;\n")
    table = lambda **kw: CatalogDataset(format="iceberg", location="x", write_mode="copy-on-write", **kw)  # noqa: E731
    catalog = {"raw.customers": table(columns=tuple(SCHEMAS["raw.customers"]), identifiers=("customer_id",),
                                      subject_key="customer_id", column_types={"customer_id": "bigint"}),
               "dw.dim": table(), "dw.fact": table()}
    request = PlanRequest(sources=(ColumnRef(dataset="raw.customers", column="customer_id"),),
                          subjects=(Subject(value="42", request_id="r1",
                                            received_at=datetime(2026, 11, 20, tzinfo=timezone.utc)),))
    plan = build_plan(LineageGraph.build(batch, catalog), catalog, Policy(), request)
    for dataset in ("dw.dim", "dw.fact"):
        decision = plan.decision(dataset)
        assert decision.status is DatasetStatus.MANUAL_REVIEW, dataset
        assert decision.reason == (f"{dataset}.sk holds the surrogate key dw.dim.sk (ROW_NUMBER() OVER (ORDER BY "
                                   "customer_id)) of raw.customers.customer_id, but its values cannot be read: dw.dim "
                                   "keeps no column holding the subjects' key to map it from")


def test_a_surrogate_of_a_surrogate_is_read_after_it() -> None:
    """A snowflake: an outrigger numbered by the dimension's surrogate key, a fact taking its key."""
    batch = ingest("INSERT INTO dw.dim SELECT row_number() OVER (ORDER BY customer_id) AS sk, customer_id FROM raw.customers;\n"
                   "INSERT INTO dw.outrigger SELECT dense_rank() OVER (ORDER BY sk) AS sk2, sk FROM dw.dim;\n"
                   "INSERT INTO dw.fact2 SELECT o.sk2, o.sk AS ignored_sk FROM dw.outrigger o;\n")
    table = lambda **kw: CatalogDataset(format="iceberg", location="x", write_mode="copy-on-write", **kw)  # noqa: E731
    catalog = {"raw.customers": table(columns=tuple(SCHEMAS["raw.customers"]), identifiers=("customer_id",),
                                      subject_key="customer_id", column_types={"customer_id": "bigint"}),
               "dw.dim": table(), "dw.outrigger": table(), "dw.fact2": table()}
    request = PlanRequest(sources=(ColumnRef(dataset="raw.customers", column="customer_id"),),
                          subjects=(Subject(value="42", request_id="r1",
                                            received_at=datetime(2026, 11, 20, tzinfo=timezone.utc)),))
    plan = build_plan(LineageGraph.build(batch, catalog), catalog, Policy(), request)
    outrigger = plan.decision("dw.outrigger")
    assert outrigger.key_column == "sk" and outrigger.rule == RULE
    assert {v.name: v.lookup.key_from for v in plan.resolve[0].computed} == {
        "dw.dim.sk~surrogate": ("raw.customers.customer_id",),
        "dw.outrigger.sk2~surrogate": ("dw.dim.sk~surrogate",),
    }
    # The outrigger keys on the dimension's key it carries, not on the one it assigns itself.
    assert [v.name for v in outrigger.values_from] == ["dw.dim.sk~surrogate"]
    assert (plan.decision("dw.fact2").key_column, [v.name for v in plan.decision("dw.fact2").values_from]) == (
        "sk2", ["dw.outrigger.sk2~surrogate"])


def test_plans_with_surrogate_keys_are_deterministic() -> None:
    select = "SELECT row_number() OVER (ORDER BY customer_id) AS sk, customer_id FROM raw.customers"
    assert star(select)[1].to_json() == star(select)[1].to_json()


def test_a_sequence_drawn_per_row_is_a_surrogate_key() -> None:
    for select, how in (
        ("SELECT nextval('customer_seq') AS sk, customer_id FROM raw.customers GROUP BY customer_id",
         "NEXTVAL('customer_seq'), one per row"),
        ("SELECT customer_seq.nextval AS sk, customer_id FROM raw.customers", "customer_seq.nextval, one per row"),
        ("SELECT monotonically_increasing_id() AS sk, customer_id FROM raw.customers",
         "MONOTONICALLY_INCREASING_ID(), one per row"),
    ):
        batch, plan = star(select)
        assert ("raw.customers.customer_id", "dw.dim", "sk", "DIRECT", "SURROGATE", how) in edges(batch), select
        fact = plan.decision("dw.fact")
        assert (fact.rule, fact.values_from[0].lookup.how, steps(plan, "dw.fact")) == (RULE, how, ERASE_BY_SK), select


def test_an_identity_column_filled_by_the_table_is_a_surrogate_key() -> None:
    batch = ingest("CREATE TABLE dw.dim (sk BIGINT GENERATED ALWAYS AS IDENTITY, customer_id BIGINT, name STRING) USING delta;\n"
                   "INSERT INTO dw.dim (customer_id, name) SELECT customer_id, name FROM raw.customers;\n"
                   + FACT.format(key="sk") + "\n")
    how = "GENERATED AS IDENTITY, one per row"
    assert {e for e in edges(batch) if e[1] == "dw.dim"} == {
        ("raw.customers.customer_id", "dw.dim", "customer_id", "DIRECT", "IDENTITY", None),
        ("raw.customers.name", "dw.dim", "name", "DIRECT", "IDENTITY", None),
        # One number per row inserted: a surrogate of every value the row copies, its natural key among them.
        ("raw.customers.customer_id", "dw.dim", "sk", "DIRECT", "SURROGATE", how),
        ("raw.customers.name", "dw.dim", "sk", "DIRECT", "SURROGATE", how),
    }
    _, plan = planned(batch)
    fact = plan.decision("dw.fact")
    assert (fact.rule, fact.values_from[0].lookup, steps(plan, "dw.fact")) == (
        RULE, SurrogateLookup(dataset="dw.dim", key_column="customer_id", key_from=("raw.customers.customer_id",),
                              value_column="sk", how=how), ERASE_BY_SK)


def test_a_request_naming_the_dimensions_own_natural_key_reaches_its_surrogate_key_and_the_facts() -> None:
    batch = ingest("INSERT INTO dw.dim SELECT row_number() OVER (ORDER BY customer_id) AS sk, customer_id FROM raw.customers;\n"
                   + FACT.format(key="sk") + "\n")
    table = lambda **kw: CatalogDataset(format="iceberg", location="x", write_mode="copy-on-write", **kw)  # noqa: E731
    catalog = {"raw.customers": table(columns=tuple(SCHEMAS["raw.customers"])), "raw.orders": table(),
               "dw.dim": table(columns=("sk", "customer_id"), identifiers=("customer_id",), subject_key="customer_id",
                               column_types={"customer_id": "bigint"}),
               "dw.fact": table()}
    request = PlanRequest(sources=(ColumnRef(dataset="dw.dim", column="customer_id"),),
                          subjects=(Subject(value="42", request_id="r1",
                                            received_at=datetime(2026, 11, 20, tzinfo=timezone.utc)),))
    plan = build_plan(LineageGraph.build(batch, catalog), catalog, Policy(), request)
    fact = plan.decision("dw.fact")
    assert (fact.status, fact.key_column, fact.rule) == (DatasetStatus.ERASE, "sk", RULE)
    assert fact.values_from[0].lookup == SurrogateLookup(dataset="dw.dim", key_column="customer_id",
                                                         key_from=("dw.dim.customer_id",), value_column="sk",
                                                         how="ROW_NUMBER() OVER (ORDER BY customer_id)")
    assert fact.lineage_path == (
        "raw.customers.customer_id -[DIRECT SURROGATE ROW_NUMBER() OVER (ORDER BY customer_id)]-> dw.dim.sk (star.sql:1)",
        "dw.dim.sk -[DIRECT IDENTITY]-> dw.fact.sk (star.sql:2)",
    )
    assert [(c.dataset, [v.name for v in c.computed]) for c in plan.resolve] == [("dw.dim", ["dw.dim.sk~surrogate"])]


def test_a_foreign_key_equal_to_the_surrogate_key_through_a_join_is_planned_by_it() -> None:
    """A fact that never reads the dimension's column but joins its own foreign key to it."""
    schemas = dict(SCHEMAS, **{"stage.sales": ["sk_ref", "amount"]})
    batch = ingest_sql_text(
        "INSERT INTO dw.dim SELECT row_number() OVER (ORDER BY customer_id) AS sk, customer_id FROM raw.customers;\n"
        "INSERT INTO dw.fact SELECT s.sk_ref, s.amount FROM stage.sales s JOIN dw.dim d ON s.sk_ref = d.sk;\n",
        file="star.sql", namer=DatasetNamer(), schemas=schemas)
    _, plan = planned(batch.merged(ingest("")))
    fact = plan.decision("dw.fact")
    assert (fact.status, fact.key_column, fact.rule) == (
        DatasetStatus.ERASE, "sk_ref", "3s: surrogate key equal through an equi-join, read from the dataset that maps it")
    assert fact.lineage_path[-1] == ("dw.dim.sk -[DIRECT IDENTITY equal through the join s.sk_ref = d.sk]-> "
                                     "dw.fact.sk_ref (star.sql:2)")
    assert steps(plan, "dw.fact") == [(Action.DELETE_ROWS, "sk_ref", ("dw.dim.sk~surrogate",))] + ERASE_BY_SK[1:]
