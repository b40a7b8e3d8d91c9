"""One test per planner rule (design.md, "Semantics the planner must get right"), on small graphs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from lineage_builders import A, I, T, col, edge, flow, graph_of, request, table

from piitracer.model.lineage import EdgeSubtype
from piitracer.model.plan import Action, DatasetStatus, ValueKind
from piitracer.model.table_state import RefType, TableRef, TableState
from piitracer.model.workspace import RefHandling, Policy
from piitracer.planner.build import PlanningError, build_plan

POLICY = Policy()


def plan_for(*edges, catalog=None, flows=(), states=None, req=None):
    graph, full = graph_of(*edges, catalog=catalog, flows=flows)
    return build_plan(graph, full, POLICY, req or request(), states)


def actions(plan, dataset):
    return [s.action for s in plan.steps if s.dataset == dataset and s.action is not Action.RESOLVE]


def test_renamed_key_twice() -> None:
    plan = plan_for(edge("src.pay.user_id", "a.enriched.customer_id", I), edge("a.enriched.customer_id", "b.txn.cust", I))
    for dataset, key in (("src.pay", "user_id"), ("a.enriched", "customer_id"), ("b.txn", "cust")):
        decision = plan.decision(dataset)
        assert (decision.status, decision.key_column, decision.rule) == (DatasetStatus.ERASE, key, "1: identity of the subject key")
        assert [v.name for v in decision.values_from] == ["src.pay.user_id"]
    assert plan.decision("b.txn").lineage_path == (
        "src.pay.user_id -[DIRECT IDENTITY]-> a.enriched.customer_id (t.sql:1)",
        "a.enriched.customer_id -[DIRECT IDENTITY]-> b.txn.cust (t.sql:1)",
    )


def test_subject_key_beats_another_identifier() -> None:
    plan = plan_for(edge("src.pay.pan", "a.t.card", I), edge("src.pay.user_id", "a.t.uid", I))
    assert plan.decision("a.t").key_column == "uid"


def test_alternate_identifier_pan_only_table() -> None:
    plan = plan_for(edge("src.pay.pan", "risk.cards.pan", I), edge("src.pay.amount", "risk.cards.total", A))
    decision = plan.decision("risk.cards")
    assert (decision.status, decision.key_column, decision.rule) == (DatasetStatus.ERASE, "pan", "2: identity of another identifier")
    assert [(v.name, v.kind) for v in decision.values_from] == [("src.pay.pan", ValueKind.IDENTIFIER)]
    (capture,) = plan.resolve
    assert capture.identifiers == ("email", "pan", "phone", "user_id")


def test_computed_key_through_two_hops() -> None:
    plan = plan_for(
        edge("src.pay.email", "a.clean.email_norm", T, expression="LOWER(TRIM(email))"),
        edge("a.clean.email_norm", "b.hashed.email_hash", T, masking=True, expression="SHA2(email_norm, 256)"),
    )
    decision = plan.decision("b.hashed")
    assert (decision.status, decision.key_column, decision.rule) == (DatasetStatus.ERASE, "email_hash", "3: deterministic transform known from SQL")
    (value,) = decision.values_from
    assert (value.kind, value.source, value.expression) == (ValueKind.COMPUTED, col("src.pay.email"), "SHA2(LOWER(TRIM(email)), 256)")
    # The intermediate table is erased by its own computed key, LOWER(TRIM(email)).
    assert [v.expression for v in plan.resolve[0].computed] == ["LOWER(TRIM(email))", "SHA2(LOWER(TRIM(email)), 256)"]
    resolve = plan.steps[0]
    assert resolve.action is Action.RESOLVE and value in resolve.values_from


def test_union_gets_the_union_of_value_sets() -> None:
    plan = plan_for(edge("src.pay.pan", "risk.contacts.contact", I), edge("src.pay.phone", "risk.contacts.contact", I))
    decision = plan.decision("risk.contacts")
    assert decision.key_column == "contact"
    assert [v.name for v in decision.values_from] == ["src.pay.pan", "src.pay.phone"]
    (delete,) = [s for s in plan.steps if s.dataset == "risk.contacts" and s.action is Action.DELETE_ROWS]
    assert [v.name for v in delete.values_from] == ["src.pay.pan", "src.pay.phone"]


def test_aggregate_without_key_is_recomputed() -> None:
    plan = plan_for(edge("src.pay.user_id", "a.daily.active_users", A), edge("src.pay.dt", "a.daily.dt", I))
    decision = plan.decision("a.daily")
    assert (decision.status, decision.key_column) == (DatasetStatus.RECOMPUTE, None)
    assert decision.rule == "aggregation without an identifying group key"
    assert actions(plan, "a.daily") == [Action.RECOMPUTE]


def test_aggregate_grouped_by_user_is_erased_by_the_group_key() -> None:
    plan = plan_for(edge("src.pay.user_id", "a.monthly.user_id", I), edge("src.pay.amount", "a.monthly.spend", A),
                    edge("src.pay.user_id", None, EdgeSubtype.GROUP_BY, dataset="a.monthly"))
    decision = plan.decision("a.monthly")
    assert (decision.status, decision.key_column) == (DatasetStatus.ERASE, "user_id")


def test_view_gets_no_action() -> None:
    plan = plan_for(edge("src.pay.user_id", "a.v_recent.user_id", I), catalog={"a.v_recent": table("view")})
    decision = plan.decision("a.v_recent")
    assert (decision.status, decision.rule) == (DatasetStatus.NO_ACTION, "view: stores no rows")
    assert actions(plan, "a.v_recent") == []


def test_indirect_only_gets_no_action() -> None:
    plan = plan_for(edge("src.pay.user_id", None, EdgeSubtype.JOIN, dataset="a.merchants"), edge("src.pay.amount", "a.merchants.total", A))
    decision = plan.decision("a.merchants")
    assert decision.status is DatasetStatus.NO_ACTION
    assert decision.lineage_path == ("src.pay.user_id -[INDIRECT JOIN]-> a.merchants (all rows) (t.sql:1)",)


def test_masked_edge_with_unknown_transform_needs_manual_review() -> None:
    plan = plan_for(edge("src.pay.user_id", "ml.features.user_token", T, masking=True, description="vault tokenize"))
    decision = plan.decision("ml.features")
    assert decision.status is DatasetStatus.MANUAL_REVIEW
    assert "masked transform with no known expression (vault tokenize)" in decision.reason
    (step,) = [s for s in plan.steps if s.dataset == "ml.features"]
    assert step.action is Action.MANUAL_REVIEW and step.blocking


def test_non_deterministic_transform_is_not_a_key() -> None:
    plan = plan_for(edge("src.pay.user_id", "a.t.tok", T, expression="CONCAT(user_id, RAND())"))
    assert plan.decision("a.t").status is DatasetStatus.MANUAL_REVIEW
    assert "not deterministic" in plan.decision("a.t").reason


def test_cycle_is_condensed_and_erased_as_one_group() -> None:
    plan = plan_for(
        edge("src.pay.user_id", "a.enriched.customer_id", I),
        edge("a.enriched.customer_id", "a.risk.customer_id", I),
        edge("a.risk.score", "a.enriched.risk_score", I),  # MERGE back upstream
        edge("a.risk.customer_id", None, EdgeSubtype.JOIN, dataset="a.enriched"),
    )
    assert plan.decision("a.enriched").group == plan.decision("a.risk").group == "cycle-1"
    order = [(s.dataset, s.action) for s in plan.steps]
    deletes = [order.index(("a.enriched", Action.DELETE_ROWS)), order.index(("a.risk", Action.DELETE_ROWS))]
    physical = [i for i, (d, a) in enumerate(order) if d in ("a.enriched", "a.risk") and a is not Action.DELETE_ROWS]
    assert max(deletes) < min(physical), "both logical deletes of a cycle precede its physical steps"


def test_upstream_first_and_physical_after_logical() -> None:
    plan = plan_for(edge("src.pay.user_id", "a.enriched.customer_id", I), edge("a.enriched.customer_id", "b.txn.cust", I))
    assert plan.steps[0].action is Action.RESOLVE
    datasets = [s.dataset for s in plan.steps if s.action is Action.DELETE_ROWS]
    assert datasets == ["src.pay", "a.enriched", "b.txn"]
    assert actions(plan, "src.pay") == [Action.DELETE_ROWS, Action.REWRITE_DATA_FILES, Action.REWRITE_MANIFESTS, Action.EXPIRE_SNAPSHOTS, Action.REMOVE_ORPHAN_FILES]
    cow = plan_for(edge("src.pay.user_id", "a.c.u", I), catalog={"a.c": table(write_mode="copy-on-write")})
    assert actions(cow, "a.c") == [Action.DELETE_ROWS, Action.REWRITE_MANIFESTS, Action.EXPIRE_SNAPSHOTS, Action.REMOVE_ORPHAN_FILES]


def test_delta_and_parquet_steps() -> None:
    plan = plan_for(edge("src.pay.user_id", "d.t.u", I), edge("src.pay.user_id", "p.t.u", I),
                    catalog={"d.t": table("delta"), "p.t": table("parquet")})
    assert actions(plan, "d.t") == [Action.DELETE_ROWS, Action.PURGE_DELETION_VECTORS, Action.VACUUM, Action.CLEAN_DELTA_LOG]
    assert actions(plan, "p.t") == [Action.REWRITE_FILES]


def test_shallow_clone_blocks_source_file_removal_until_the_clone_is_erased() -> None:
    clone = table(write_mode="merge-on-read", clone_of={"dataset": "src.pay", "mode": "shallow"})
    plan = plan_for(edge("src.pay.amount", "x.y.z", A), catalog={"dev.shallow": clone})
    decision = plan.decision("dev.shallow")
    assert (decision.status, decision.key_column) == (DatasetStatus.ERASE, "user_id")
    position = {(s.dataset, s.action): s.order for s in plan.steps}
    clone_expire = position[("dev.shallow", Action.EXPIRE_SNAPSHOTS)]
    assert position[("src.pay", Action.EXPIRE_SNAPSHOTS)] > clone_expire
    assert position[("src.pay", Action.REMOVE_ORPHAN_FILES)] > clone_expire
    assert position[("src.pay", Action.DELETE_ROWS)] < position[("dev.shallow", Action.DELETE_ROWS)]
    orphan = [s for s in plan.steps if s.dataset == "dev.shallow" and s.action is Action.REMOVE_ORPHAN_FILES][0]
    assert "clone's own location only" in orphan.params.scope


def test_deep_clone_is_its_own_dataset() -> None:
    clone = table(write_mode="merge-on-read", clone_of={"dataset": "src.pay", "mode": "deep"})
    plan = plan_for(edge("src.pay.amount", "x.y.z", A), catalog={"dev.deep": clone})
    assert plan.decision("dev.deep").key_column == "user_id"
    position = {(s.dataset, s.action): s.order for s in plan.steps}
    # No cross-dependency: the source expires right after its own steps, before the clone is touched.
    assert position[("src.pay", Action.REMOVE_ORPHAN_FILES)] < position[("dev.deep", Action.DELETE_ROWS)]


def test_archive_is_rewritten_and_its_retention_flagged() -> None:
    archive = table("archive", archive_of={"dataset": "src.pay", "schedule": "7d", "retention": "90d", "restore_delay": "12h", "cost_per_gb_restore": 0.02})
    plan = plan_for(edge("src.pay.amount", "x.y.z", A), catalog={"arc.weekly": archive})
    decision = plan.decision("arc.weekly")
    assert (decision.status, decision.key_column) == (DatasetStatus.ERASE, "user_id")
    (step,) = [s for s in plan.steps if s.dataset == "arc.weekly"]
    assert step.action is Action.REWRITE_ARCHIVE
    assert step.params.restore_delay == "12h" and step.params.cost_per_gb_restore == 0.02
    assert decision.deadline.violates_deadline and decision.deadline.retention_window == timedelta(days=90)
    assert "rewrites the affected archived objects now" in decision.deadline.override


def test_a_tag_holding_the_subject_is_rewritten_by_default_and_released_only_by_policy() -> None:
    state = TableState(dataset="src.pay", current_snapshot_id=9, refs=(TableRef(name="eoy-2025", type=RefType.TAG, snapshot_id=7),))
    plan = plan_for(edge("src.pay.amount", "x.y.z", A), states={"src.pay": state})
    (rewrite,) = [s for s in plan.steps if s.action is Action.REWRITE_REF]
    delete = next(s for s in plan.steps if s.dataset == "src.pay" and s.action is Action.DELETE_ROWS)
    assert not rewrite.blocking and (rewrite.params.ref, rewrite.params.ref_type, rewrite.params.snapshot_id) == ("eoy-2025", "tag", 7)
    assert (rewrite.key_column, rewrite.values_from) == (delete.key_column, delete.values_from) and rewrite.owner is None
    expire = [s for s in plan.steps if s.dataset == "src.pay" and s.action is Action.EXPIRE_SNAPSHOTS][0]
    assert rewrite.id in expire.depends_on and not [s for s in plan.steps if s.action is Action.RELEASE_REF]

    graph, full = graph_of(edge("src.pay.amount", "x.y.z", A))
    released = build_plan(graph, full, POLICY.model_copy(update={"refs": RefHandling.RELEASE}), request(), {"src.pay": state})
    (release,) = [s for s in released.steps if s.action is Action.RELEASE_REF]
    assert release.blocking and release.params.ref == "eoy-2025" and release.params.snapshot_id == 7
    assert any("tag 'eoy-2025' retains snapshot 7" in w for w in released.warnings)
    assert not [s for s in released.steps if s.action is Action.REWRITE_REF]


def test_retention_longer_than_the_deadline_is_flagged() -> None:
    slow = table(write_mode="merge-on-read", retention={"snapshot_max_age": "45d", "maintenance_every": "7d"})
    fast = table(write_mode="merge-on-read", retention={"snapshot_max_age": "5d", "maintenance_every": "1d"})
    plan = plan_for(edge("src.pay.user_id", "a.slow.u", I), edge("src.pay.user_id", "a.fast.u", I),
                    catalog={"a.slow": slow, "a.fast": fast})
    slow_deadline, fast_deadline = plan.decision("a.slow").deadline, plan.decision("a.fast").deadline
    assert slow_deadline.violates_deadline and slow_deadline.retention_window == timedelta(days=52)
    assert "expire_snapshots older than the delete's commit time" in slow_deadline.override
    assert not fast_deadline.violates_deadline and fast_deadline.override is None
    assert fast_deadline.deadline_at == request().subjects[0].received_at + timedelta(days=30)


def test_flow_without_column_lineage_needs_review() -> None:
    plan = plan_for(edge("src.pay.user_id", "a.t.u", I), flows=[flow("a.t", "b.export")], catalog={"b.export": table("parquet")})
    assert plan.decision("b.export").status is DatasetStatus.MANUAL_REVIEW


def test_external_system_is_a_manual_step_with_its_owner() -> None:
    plan = plan_for(edge("src.pay.user_id", "stream.cdc.user_id", I), catalog={"stream.cdc": table("external", owner="streaming-team")})
    (step,) = [s for s in plan.steps if s.dataset == "stream.cdc"]
    assert (step.action, step.owner, step.key_column, step.blocking) == (Action.MANUAL, "streaming-team", "user_id", True)


def test_uncatalogued_dataset_is_never_dropped() -> None:
    graph, full = graph_of(edge("src.pay.user_id", "a.t.u", I))
    del full["a.t"]
    plan = build_plan(graph, full, POLICY, request())
    assert plan.decision("a.t").status is DatasetStatus.MANUAL_REVIEW
    assert any("not in the catalog" in w for w in plan.warnings)


def test_bad_requests_are_clear_errors() -> None:
    graph, full = graph_of(edge("src.pay.user_id", "a.t.u", I))
    with pytest.raises(PlanningError, match="unknown column 'nope'"):
        build_plan(graph, full, POLICY, request(source="src.pay.nope"))
    with pytest.raises(PlanningError, match="'a.x' is not in the catalog"):
        build_plan(graph, full, POLICY, request(source="a.x.u"))


def test_same_inputs_give_byte_identical_plans() -> None:
    edges = (edge("src.pay.user_id", "a.enriched.customer_id", I), edge("src.pay.email", "b.h.e", T, expression="SHA2(email, 256)"))
    first = plan_for(*edges, req=request("1", "2")).to_json()
    second = plan_for(*reversed(edges), req=request("2", "1")).to_json()
    assert first == second
    assert '"plan_id"' in first and '"schema_version": "2.0"' in first


# ---- equi-join key equivalence (the SQL lineage marks the edges; see ColumnEdge.join_equality) --

def _join_catalog():
    accounts = table(columns=("account_id", "iban"), identifiers=("account_id", "iban"), subject_key="account_id",
                     column_types={"account_id": "bigint", "iban": "string"})
    transfers = table(columns=("account_ref", "amount"), identifiers=("account_ref",), subject_key="account_ref",
                      column_types={"account_ref": "bigint"})
    return {"bank.accounts": accounts, "bank.transfers": transfers}


def _holders_edges():
    """INSERT INTO risk.holders SELECT t.account_ref AS holder, t.amount FROM transfers t JOIN accounts a
    ON t.account_ref = a.account_id; INSERT INTO risk.by_holder SELECT holder, sum(amount) ... GROUP BY holder."""
    on = "t.account_ref = a.account_id"
    return (
        edge("bank.transfers.account_ref", "risk.holders.holder", I),
        edge("bank.transfers.amount", "risk.holders.amount", I),
        edge("bank.accounts.account_id", "risk.holders.holder", I, join_equality=on),
        edge("bank.accounts.account_id", None, EdgeSubtype.JOIN, dataset="risk.holders"),
        edge("risk.holders.holder", "risk.by_holder.holder", I),
        edge("risk.holders.amount", "risk.by_holder.total", A),
        edge("risk.holders.holder", None, EdgeSubtype.GROUP_BY, dataset="risk.by_holder"),
    )


def test_a_request_from_the_joined_side_reaches_the_column_the_join_equates_with_it() -> None:
    plan = plan_for(*_holders_edges(), catalog=_join_catalog(), req=request("42", source="bank.accounts.account_id"))
    for dataset in ("risk.holders", "risk.by_holder"):
        decision = plan.decision(dataset)
        assert (decision.status, decision.key_column, decision.rule) == (
            DatasetStatus.ERASE, "holder", "1: equal to the subject key through an equi-join")
        assert "equal to bank.accounts.account_id through the join t.account_ref = a.account_id (t.sql:1)" in decision.reason
        assert [v.name for v in decision.values_from] == ["bank.accounts.account_id"]
    assert plan.decision("risk.by_holder").lineage_path == (
        "bank.accounts.account_id -[DIRECT IDENTITY equal through the join t.account_ref = a.account_id]-> risk.holders.holder (t.sql:1)",
        "risk.holders.holder -[DIRECT IDENTITY]-> risk.by_holder.holder (t.sql:1)",
    )
    # Without the equality edge the downstream aggregate holds the subject's row and is not planned.
    plain = plan_for(*[e for e in _holders_edges() if not e.join_equality], catalog=_join_catalog(),
                     req=request("42", source="bank.accounts.account_id"))
    assert "risk.by_holder" not in {d.dataset for d in plain.datasets}


def test_a_request_from_the_other_side_of_the_join() -> None:
    on = "t.account_ref = a.account_id"
    edges = (edge("bank.accounts.account_id", "risk.accts.acct", I),
             edge("bank.transfers.account_ref", "risk.accts.acct", I, join_equality=on))
    plan = plan_for(*edges, catalog=_join_catalog(), req=request("42", source="bank.transfers.account_ref"))
    decision = plan.decision("risk.accts")
    assert (decision.key_column, decision.rule) == ("acct", "1: equal to the subject key through an equi-join")
    assert [v.name for v in decision.values_from] == ["bank.transfers.account_ref"]


def test_a_two_hop_chain_of_joins() -> None:
    edges = _holders_edges() + (
        edge("risk.holders.holder", "risk.alerts.who", I),
        edge("risk.cases.case_holder", "risk.alerts.who", I, join_equality="c.case_holder = h.holder"),
        edge("risk.holders.holder", "risk.case_notes.holder_ref", I, join_equality="n.holder_ref = h.holder"),
    )
    plan = plan_for(*edges, catalog=_join_catalog(), req=request("42", source="bank.accounts.account_id"))
    assert plan.decision("risk.case_notes").key_column == "holder_ref"
    assert plan.decision("risk.case_notes").rule == "1: equal to the subject key through an equi-join"
    assert "t.account_ref = a.account_id" in plan.decision("risk.case_notes").reason  # the first join on the path


def test_an_identity_column_beats_a_join_equivalent_one() -> None:
    edges = (edge("bank.accounts.account_id", "risk.both.account_id", I),
             edge("bank.accounts.account_id", "risk.both.holder", I, join_equality="t.x = a.account_id"))
    plan = plan_for(*edges, catalog=_join_catalog(), req=request("42", source="bank.accounts.account_id"))
    decision = plan.decision("risk.both")
    assert (decision.key_column, decision.rule) == ("account_id", "1: identity of the subject key")
    assert decision.column_forms == {"account_id": ("bank.accounts.account_id",), "holder": ("bank.accounts.account_id",)}


def test_a_delta_erasure_says_which_time_travel_it_ends_before_it_runs() -> None:
    """Delta versions cannot be rewritten without the subject (unlike an Iceberg tag): the plan
    tells the owner that every version before the delete becomes unreadable once cleaned."""
    from rich.console import Console

    from piitracer.render.plan_text import plan_tables

    plan = plan_for(edge("src.pay.user_id", "d.t.user_id", I), catalog={"d.t": table("delta")})
    (clean,) = [s for s in plan.steps if s.dataset == "d.t" and s.action is Action.CLEAN_DELTA_LOG]
    assert clean.reason.startswith("time travel ends at the delete: once vacuumed and the log cleaned, every version "
                                   "before it can no longer be read, for anyone")
    assert not [s for s in plan.steps if s.dataset == "src.pay" and s.reason and "time travel" in s.reason]
    console = Console(width=2000, record=True, file=open("/dev/null", "w"))
    console.print(plan_tables(plan))
    row = next(line for line in console.export_text().splitlines() if f" {clean.id} " in line)
    assert "clean_delta_log" in row and "time travel ends at the delete" in row


def test_a_plain_column_name_is_written_as_sqlglot_writes_it() -> None:
    """The planner writes a plain column name itself (no sqlglot import on the execute path): for
    every keyword sqlglot knows and random plain names it is what sqlglot writes; any other name
    goes to sqlglot (quoted)."""
    import random
    import string

    from sqlglot.tokens import Tokenizer

    from piitracer.planner.derivations import column_expression
    from piitracer.planner.expressions import column_expression as written_by_sqlglot

    rng = random.Random(7)
    first, rest = string.ascii_letters + "_", string.ascii_letters + string.digits + "_"
    names = [word for word in Tokenizer.KEYWORDS if word.replace("_", "").isalnum()]
    names += [name.lower() for name in names] + ["user_id", "_x", "a1", "x" * 200]
    names += ["".join([rng.choice(first)] + [rng.choice(rest) for _ in range(rng.randrange(12))]) for _ in range(2000)]
    names += ["user id", "1st", "café", "a-b", "`x`", "ÄÖ", "x.y", ""]
    assert [column_expression(n) for n in names] == [written_by_sqlglot(n) for n in names]
