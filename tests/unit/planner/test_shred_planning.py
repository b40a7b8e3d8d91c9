"""Crypto-shredding in the plan (issue 42.3): per dataset, shred (destroy the subject's key; nothing
of the dataset rewritten) or erase (physically, as before), and why. Pure: SQL text -> lineage
graph -> plan, no tables; the executor's preflight refuses the key destruction without a key vault."""

from __future__ import annotations

from pathlib import Path

import pytest
from lineage_builders import I, T, edge, graph_of, request, table

from piitracer.executor.preflight import PlanRefused, preflight
from piitracer.graph.lineage_graph import LineageGraph
from piitracer.ingest.sql.lineage import ingest_sql_text
from piitracer.model.naming import DatasetNamer
from piitracer.model.plan import (Action, CiphertextColumn, CiphertextHeld, DatasetStatus, DeletionPlan,
                                  DestroySubjectKeyParams)
from piitracer.model.settings import SparkSettings
from piitracer.model.stored import StoredColumn, StoredSchema
from piitracer.model.workspace import CatalogDataset, Policy
from piitracer.planner.build import build_plan
from piitracer.storage.locations import Location

SCHEMAS = {"prod.payments": ["user_id", "card", "email", "amount"]}
JOBS = """INSERT INTO analytics.cards SELECT user_id, card, amount FROM prod.payments WHERE amount > 0;
INSERT INTO analytics.cards_clear SELECT user_id, piitracer_decrypt(card) AS card FROM prod.payments;
INSERT INTO analytics.card_report SELECT user_id, card FROM analytics.cards_clear;
"""
SHREDDED = {"key": "user_id", "columns": ["card", "email"]}
DERIVED = ("analytics.cards", "analytics.cards_clear", "analytics.card_report")
RULE_1, RULE_SHRED = "1: identity of the subject key", "shred: ciphertext under the subject's key"
DELTA_PHYSICAL = [("purge_deletion_vectors", None, [], {"when": "the table has deletion vectors"}),
                  ("vacuum", None, [], {"retention_hours": 0, "enforce_retention_duration": False,
                                        "includes": "removed data files and _change_data files"}),
                  ("clean_delta_log", None, [], {"log_retention": "0 hours", "create_checkpoint": True, "cleanup_metadata": True,
                                                 "why": "add-action stats (minValues/maxValues) in _delta_log JSON and "
                                                        "checkpoints hold the values"})]


def catalog(shredded: dict | None = SHREDDED) -> dict[str, CatalogDataset]:
    """Delta tables: the payments source (its card and email stored as ciphertext under the key of
    the subject in user_id) and the three tables the jobs write."""
    found = {"prod.payments": CatalogDataset(format="delta", location="wh/payments", columns=SCHEMAS["prod.payments"],
                                             identifiers=["user_id"], column_types={"user_id": "bigint"}, shredded=shredded)}
    found.update({d: CatalogDataset(format="delta", location=f"wh/{d}") for d in DERIVED})
    return found


def plan_of(sql: str = JOBS, shredded: dict | None = SHREDDED):
    full = catalog(shredded)
    graph = LineageGraph.build(ingest_sql_text(sql, file="jobs.sql", namer=DatasetNamer(), schemas=SCHEMAS), full)
    return build_plan(graph, full, Policy(), request(source="prod.payments.user_id")), full


def steps(plan) -> list[tuple]:
    return [(s.id, s.action.value, s.dataset, s.key_column, [v.name for v in s.values_from], list(s.depends_on))
            for s in plan.steps]


def test_the_exact_plan_shreds_ciphertext_and_erases_what_decrypts_it() -> None:
    plan, _ = plan_of()
    assert steps(plan) == [
        ("s001", "resolve", "prod.payments", None, ["prod.payments.user_id"], []),
        ("s002", "destroy_subject_key", "prod.payments", "user_id", ["prod.payments.user_id"], ["s001"]),
        ("s003", "delete_rows", "analytics.cards_clear", "user_id", ["prod.payments.user_id"], ["s001", "s002"]),
        ("s004", "purge_deletion_vectors", "analytics.cards_clear", None, [], ["s003"]),
        ("s005", "vacuum", "analytics.cards_clear", None, [], ["s004"]),
        ("s006", "clean_delta_log", "analytics.cards_clear", None, [], ["s005"]),
        ("s007", "delete_rows", "analytics.card_report", "user_id", ["prod.payments.user_id"], ["s001", "s003"]),
        ("s008", "purge_deletion_vectors", "analytics.card_report", None, [], ["s007"]),
        ("s009", "vacuum", "analytics.card_report", None, [], ["s008"]),
        ("s010", "clean_delta_log", "analytics.card_report", None, [], ["s009"]),
    ]
    destroy = plan.steps[1]
    card, email = (CiphertextColumn(column=c, origin=f"prod.payments.{c}", subject_column="user_id",
                                    plaintext=f"decrypted:prod.payments.{c}") for c in ("card", "email"))
    assert destroy.params == DestroySubjectKeyParams(
        keys=("prod.payments.user_id",), datasets=("prod.payments", "analytics.cards"),
        ciphertext=(CiphertextHeld(dataset="prod.payments", columns=(card, email)),
                    CiphertextHeld(dataset="analytics.cards", columns=(card,))))
    assert destroy.reason == ("destroy the subjects' keys in the key vault (found by prod.payments.user_id): the ciphertext "
                              "under them in prod.payments, analytics.cards becomes unreadable, and nothing there is rewritten")
    assert not destroy.blocking and destroy.engine is None
    for erased in ("analytics.cards_clear", "analytics.card_report"):
        assert [(s.action.value, s.key_column, [v.name for v in s.values_from], s.params.model_dump())
                for s in plan.steps if s.dataset == erased][1:] == DELTA_PHYSICAL
    assert [(d.dataset, d.status, d.key_column, d.rule, d.reason) for d in plan.datasets] == [
        ("prod.payments", DatasetStatus.SHRED, "user_id", RULE_SHRED,
         "ciphertext under prod.payments.user_id's key: destroyed with the key (card stored as ciphertext; email stored "
         "as ciphertext; user_id holds the key's subject id)"),
        ("analytics.cards", DatasetStatus.SHRED, "user_id", RULE_SHRED,
         "ciphertext under prod.payments.user_id's key: destroyed with the key (card copies prod.payments.card; user_id "
         "holds the key's subject id)"),
        ("analytics.cards_clear", DatasetStatus.ERASE, "user_id", RULE_1,
         "user_id holds prod.payments.user_id; erase, not shred: column card decrypts shredded column prod.payments.card "
         "in PIITRACER_DECRYPT(card)"),
        ("analytics.card_report", DatasetStatus.ERASE, "user_id", RULE_1,
         "user_id holds prod.payments.user_id; erase, not shred: column card holds shredded column prod.payments.card "
         "decrypted in analytics.cards_clear.card by PIITRACER_DECRYPT(card)"),
    ]
    shredded = [d for d in plan.datasets if d.status is DatasetStatus.SHRED]
    assert [d.deadline for d in shredded] == [None, None]  # no retention to wait for: the key is gone at once


def test_plans_stay_deterministic_and_without_shredded_are_todays() -> None:
    plan, _ = plan_of()
    assert plan_of()[0].to_json() == plan.to_json()
    read_back = DeletionPlan.model_validate_json(plan.to_json())  # a plan file: the key destruction's params typed
    assert read_back == plan and read_back.content_hash() == plan.plan_id
    assert isinstance(read_back.steps[1].params, DestroySubjectKeyParams)
    today, _ = plan_of(shredded=None)
    assert {d.dataset: (d.status, d.reason) for d in today.datasets} == {
        "prod.payments": (DatasetStatus.ERASE, "user_id holds prod.payments.user_id"),
        **{d: (DatasetStatus.ERASE, "user_id holds prod.payments.user_id") for d in DERIVED}}
    assert Action.DESTROY_SUBJECT_KEY not in {s.action for s in today.steps}
    assert "shred" not in today.to_json()


def test_the_executor_refuses_the_key_destruction_without_a_vault_before_anything_runs(tmp_path: Path) -> None:
    plan, full = plan_of()
    with pytest.raises(PlanRefused) as refused:
        preflight(plan, full, {}, SparkSettings(), tmp_path, (Location.parse(str(tmp_path)),))
    assert str(refused.value) == (
        "step s002: destroy_subject_key (crypto-shredding prod.payments, analytics.cards) needs the key vault the "
        "pipelines encrypt with: set shred.vault in piitracer.yaml (a Delta dataset of the catalog, or a SQLite file); "
        "nothing ran")


# ---- the rules on small graphs (lineage_builders: src.pay is the source, keyed by user_id) ------------------


def shredded_source(**kw) -> dict[str, CatalogDataset]:
    return {"src.pay": table(write_mode="merge-on-read", columns=("user_id", "pan", "phone", "amount"),
                             identifiers=("user_id", "phone"), subject_key="user_id", column_types={"user_id": "bigint"},
                             shredded={"key": "user_id", "columns": ["pan"]}), **kw}


def planned(*edges, **catalog):
    graph, full = graph_of(*edges, catalog=shredded_source(**catalog))
    return build_plan(graph, full, Policy(), request())


def test_a_plaintext_identifier_beside_the_ciphertext_keeps_the_erasure_physical() -> None:
    plan = planned(edge("src.pay.user_id", "a.t.user_id", I), edge("src.pay.pan", "a.t.pan", I),
                   edge("src.pay.phone", "a.t.phone", I))
    for dataset in ("src.pay", "a.t"):
        decision = plan.decision(dataset)
        assert decision.status is DatasetStatus.ERASE
        assert decision.reason.endswith("; erase, not shred: column phone holds src.pay.phone, not ciphertext")
    assert Action.DESTROY_SUBJECT_KEY not in {s.action for s in plan.steps}  # nothing relies on the key


def test_ciphertext_without_the_subjects_key_column_is_shredded_and_its_decryption_needs_a_person() -> None:
    plan = planned(edge("src.pay.user_id", "a.keyed.user_id", I), edge("src.pay.pan", "a.keyed.pan", I),
                   edge("src.pay.pan", "a.bare.pan", I),
                   edge("src.pay.pan", "a.clear.pan", T, expression="AES_DECRYPT(pan, 'k')"))
    bare, clear = plan.decision("a.bare"), plan.decision("a.clear")
    assert (bare.status, bare.key_column, bare.reason) == (
        DatasetStatus.SHRED, None, "ciphertext under src.pay.user_id's key: destroyed with the key (pan copies src.pay.pan)")
    assert (clear.status, clear.rule, clear.reason) == (
        DatasetStatus.MANUAL_REVIEW, "4: holds the subject's data but cannot be filtered",
        "column pan decrypts shredded column src.pay.pan in AES_DECRYPT(pan, 'k'); no column identifies the subjects' "
        "rows (not shred)")
    assert [(s.action, s.dataset) for s in plan.steps if s.dataset != "src.pay"] == [(Action.MANUAL_REVIEW, "a.clear")]
    (destroy,) = [s for s in plan.steps if s.action is Action.DESTROY_SUBJECT_KEY]
    assert destroy.params.datasets == ("a.bare", "a.keyed")


def test_plaintext_copied_into_a_declared_ciphertext_column_is_said_and_erased() -> None:
    plan = planned(edge("src.pay.user_id", "a.clear.user_id", I),
                   edge("src.pay.pan", "a.clear.pan", T, expression="DECRYPT(pan)"),
                   edge("a.clear.user_id", "a.again.user_id", I), edge("a.clear.pan", "a.again.pan", I),
                   **{"a.again": table(columns=("user_id", "pan"), shredded={"key": "user_id", "columns": ["pan"]})})
    again = plan.decision("a.again")
    assert again.status is DatasetStatus.ERASE
    assert again.warnings == ("catalog.a.again.shredded lists pan as ciphertext, but lineage copies plaintext into it "
                              "(column pan holds shredded column src.pay.pan decrypted in a.clear.pan by DECRYPT(pan)): "
                              "planned for physical erasure",)


# ---- the stored schema decides, not the declaration (issue 49) ---------------------------------------------


def stored(**tables: dict[str, str]) -> dict[str, StoredSchema]:
    """dataset -> its stored columns ({name: Arrow type}); binary types can hold ciphertext."""
    return {d: StoredSchema(columns=tuple(StoredColumn(name=n, type=t, binary=t in ("binary", "large_binary"))
                                          for n, t in columns.items())) for d, columns in tables.items()}


def plan_stored(schemas: dict[str, StoredSchema], sql: str = JOBS, **extra: CatalogDataset):
    full = {**catalog(), **extra}
    graph = LineageGraph.build(ingest_sql_text(sql, file="jobs.sql", namer=DatasetNamer(), schemas=SCHEMAS), full)
    return build_plan(graph, full, Policy(), request(source="prod.payments.user_id"), stored=schemas)


HONEST = {"prod.payments": {"user_id": "int64", "card": "binary", "email": "binary", "amount": "double"},
          "analytics.cards": {"user_id": "int64", "card": "binary", "amount": "double"}}


def test_honest_binary_columns_keep_the_plan_as_without_a_schema() -> None:
    assert plan_stored(stored(**HONEST)).to_json() == plan_of()[0].to_json()


def test_a_copy_whose_bytes_are_plaintext_is_erased_naming_the_column_and_its_type() -> None:
    plan = plan_stored(stored(**{**HONEST, "analytics.cards": {"user_id": "int64", "card": "string", "amount": "double"}}))
    cards = plan.decision("analytics.cards")
    assert (cards.status, cards.key_column) == (DatasetStatus.ERASE, "user_id")
    assert cards.reason == ("user_id holds prod.payments.user_id; erase, not shred: column card is stored as string, "
                            "which cannot hold piitracer's ciphertext (binary): it is not ciphertext")
    assert [s.action.value for s in plan.steps if s.dataset == "analytics.cards"] == [
        "delete_rows", "purge_deletion_vectors", "vacuum", "clean_delta_log"]
    (destroy,) = [s for s in plan.steps if s.action is Action.DESTROY_SUBJECT_KEY]
    assert destroy.params.datasets == ("prod.payments",)
    assert [h.dataset for h in destroy.params.ciphertext] == ["prod.payments"]


def test_a_source_storing_a_declared_column_in_plaintext_is_erased_and_warned() -> None:
    plan = plan_stored(stored(**{**HONEST, "prod.payments": {**HONEST["prod.payments"], "email": "string"}}))
    source = plan.decision("prod.payments")
    assert source.status is DatasetStatus.ERASE
    assert source.reason.endswith("erase, not shred: column email is stored as string, which cannot hold piitracer's "
                                  "ciphertext (binary): it is not ciphertext")
    assert source.warnings == ("catalog.prod.payments.shredded lists email as ciphertext, but column email is stored as "
                               "string, which cannot hold piitracer's ciphertext (binary): it is not ciphertext: planned "
                               "for physical erasure",)
    assert plan.decision("analytics.cards").status is DatasetStatus.SHRED  # its card is ciphertext, stored as binary
    assert [s.action.value for s in plan.steps if s.dataset == "prod.payments"] == [
        "resolve", "destroy_subject_key", "delete_rows", "purge_deletion_vectors", "vacuum", "clean_delta_log"]


def test_names_are_matched_as_the_engines_match_them() -> None:
    mixed = {"prod.payments": {"User_Id": "int64", "Card": "binary", "EMAIL": "large_binary", "amount": "double"},
             "analytics.cards": {"User_ID": "int64", "CARD": "binary", "amount": "double"}}
    assert plan_stored(stored(**mixed)).to_json() == plan_of()[0].to_json()
    twice = {**HONEST, "analytics.cards": {"user_id": "int64", "card": "binary", "Card": "binary"}}
    cards = plan_stored(stored(**twice)).decision("analytics.cards")
    assert cards.status is DatasetStatus.ERASE and cards.reason.endswith(
        "the table stores card and Card, which differ only in case: which one holds the ciphertext is ambiguous")
    gone = {**HONEST, "analytics.cards": {"user_id": "int64", "amount": "double"}}
    cards = plan_stored(stored(**gone)).decision("analytics.cards")
    assert cards.status is DatasetStatus.ERASE and cards.reason.endswith(
        "column card is not in the table's stored schema (columns: user_id, amount), so it holds no ciphertext there")


def test_a_ciphertext_only_copy_is_found_by_its_ciphertext_and_a_join_key_copy_stays_shred() -> None:
    sql = JOBS + ("INSERT INTO analytics.bare SELECT card FROM prod.payments;\n"
                  "INSERT INTO analytics.joined SELECT p.user_id, c.card FROM prod.payments p "
                  "JOIN analytics.cards c ON p.card = c.card;\n")
    extra = {d: CatalogDataset(format="delta", location=f"wh/{d}") for d in ("analytics.bare", "analytics.joined")}
    plan = plan_stored(stored(**HONEST, **{"analytics.bare": {"card": "binary"},
                                           "analytics.joined": {"user_id": "int64", "card": "binary"}}), sql, **extra)
    assert plan.decision("analytics.bare").status is DatasetStatus.SHRED
    assert plan.decision("analytics.joined").status is DatasetStatus.SHRED
    (destroy,) = [s for s in plan.steps if s.action is Action.DESTROY_SUBJECT_KEY]
    bare, joined = destroy.params.held("analytics.bare"), destroy.params.held("analytics.joined")
    assert bare.columns == (CiphertextColumn(column="card", origin="prod.payments.card", subject_column=None,
                                             plaintext="decrypted:prod.payments.card"),)
    assert joined.columns == (CiphertextColumn(column="card", origin="prod.payments.card", subject_column="user_id",
                                               plaintext="decrypted:prod.payments.card"),)
    demoted = plan_stored(stored(**HONEST, **{"analytics.bare": {"card": "string"},
                                              "analytics.joined": {"user_id": "int64", "card": "binary"}}), sql, **extra)
    bare = demoted.decision("analytics.bare")
    assert (bare.status, bare.rule) == (DatasetStatus.MANUAL_REVIEW, "4: holds the subject's data but cannot be filtered")
