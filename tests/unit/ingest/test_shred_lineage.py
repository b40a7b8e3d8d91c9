"""Lineage carries ciphertext (issue 42.3), from the edges the SQL gives, not from names: a filter, a
join on another column, a union and a join *on* the ciphertext (deterministic encryption: equal
values, equal ciphertext) keep a shredded column's value the same ciphertext under the same
subject key, so those tables are shredded with the key; a cast, a concatenation, a hash, an
aggregate or a decrypt UDF make something else, and those tables are erased physically, the
reason naming the column and the expression. SQL text -> lineage graph -> plan; no tables."""

from __future__ import annotations

from lineage_builders import request
from sql_edges import AGG, D, I, ID, TR, edges

from piitracer.graph.lineage_graph import LineageGraph
from piitracer.ingest.sql.lineage import ingest_sql_text
from piitracer.model.naming import DatasetNamer
from piitracer.model.plan import Action, DatasetStatus
from piitracer.model.workspace import CatalogDataset, Policy
from piitracer.planner.build import build_plan

SCHEMAS = {"prod.payments": ["user_id", "card", "email", "amount", "merchant_id"],
           "prod.merchants": ["merchant_id", "city"], "prod.orders": ["order_id", "card"]}
JOBS = """INSERT INTO a.filtered SELECT user_id, card FROM prod.payments WHERE amount > 10;
INSERT INTO a.joined SELECT p.user_id, p.card, m.city FROM prod.payments p JOIN prod.merchants m ON p.merchant_id = m.merchant_id;
INSERT INTO a.by_card SELECT o.order_id, o.card FROM prod.orders o JOIN prod.payments p ON o.card = p.card;
INSERT INTO a.unioned SELECT user_id, card FROM prod.payments UNION ALL SELECT user_id, card FROM a.filtered;
INSERT INTO a.cast SELECT user_id, CAST(card AS BINARY) AS card FROM prod.payments;
INSERT INTO a.concat SELECT user_id, concat(card, '|', email) AS contact FROM prod.payments;
INSERT INTO a.hashed SELECT user_id, sha2(card, 256) AS card_hash FROM prod.payments;
INSERT INTO a.counted SELECT user_id, count(card) AS cards FROM prod.payments GROUP BY user_id;
INSERT INTO a.decrypted SELECT user_id, decrypt(card, user_id) AS card FROM prod.payments;
"""
CARD, EMAIL = "prod.payments.card", "prod.payments.email"
SHRED = "ciphertext under prod.payments.user_id's key: destroyed with the key ({})"
ERASE = "user_id holds prod.payments.user_id; erase, not shred: {}"


def batch():
    found = ingest_sql_text(JOBS, file="jobs.sql", namer=DatasetNamer(), schemas=SCHEMAS)
    assert found.problems == ()
    return found


def plan_of(found):
    catalog = {"prod.payments": CatalogDataset(
        format="parquet", location="wh/payments", columns=SCHEMAS["prod.payments"], identifiers=["user_id"],
        column_types={"user_id": "bigint"}, shredded={"key": "user_id", "columns": ["card", "email"]})}
    catalog.update({d: CatalogDataset(format="parquet", location=f"wh/{d}") for d in {e.target_dataset for e in found.column_edges}})
    return build_plan(LineageGraph.build(found, catalog), catalog, Policy(), request(source="prod.payments.user_id"))


def test_the_sql_gives_identity_for_copies_and_a_transformation_for_everything_else() -> None:
    found = batch()
    assert {e for e in edges(found) if e[0] in (CARD, EMAIL)} == {
        (CARD, "a.filtered", "card", D, ID, False, None),
        (CARD, "a.joined", "card", D, ID, False, None),
        (CARD, "a.by_card", "card", D, ID, False, None),
        (CARD, "a.by_card", None, I, "JOIN", False, None),
        (CARD, "a.unioned", "card", D, ID, False, None),
        (CARD, "a.cast", "card", D, TR, False, "CAST(card AS BINARY)"),
        (CARD, "a.concat", "contact", D, TR, False, "CONCAT(card, '|', email)"),
        (EMAIL, "a.concat", "contact", D, TR, False, "CONCAT(card, '|', email)"),
        (CARD, "a.hashed", "card_hash", D, TR, True, "SHA2(card, 256)"),
        (CARD, "a.counted", "cards", D, AGG, False, None),
        (CARD, "a.decrypted", "card", D, TR, False, "DECRYPT(card, user_id)"),
    }
    (joined_on_card,) = [e for e in found.column_edges if str(e.source) == CARD and e.target_dataset == "a.by_card"
                         and e.target_column == "card"]
    assert joined_on_card.join_equality == "o.card = p.card"


def test_a_filter_a_join_and_a_union_keep_ciphertext_any_transform_is_erased() -> None:
    plan = plan_of(batch())
    assert {d.dataset: (d.status, d.reason) for d in plan.datasets} == {
        "prod.payments": (DatasetStatus.SHRED, SHRED.format("card stored as ciphertext; email stored as ciphertext; "
                                                            "user_id holds the key's subject id")),
        "a.filtered": (DatasetStatus.SHRED, SHRED.format("card copies prod.payments.card; user_id holds the key's subject id")),
        "a.joined": (DatasetStatus.SHRED, SHRED.format("card copies prod.payments.card; user_id holds the key's subject id")),
        "a.by_card": (DatasetStatus.SHRED, SHRED.format("card equals prod.payments.card through the join o.card = p.card")),
        "a.unioned": (DatasetStatus.SHRED, SHRED.format("card copies prod.payments.card; user_id holds the key's subject id")),
        "a.cast": (DatasetStatus.ERASE, ERASE.format("column card decrypts shredded column prod.payments.card in "
                                                      "CAST(card AS BINARY)")),
        "a.concat": (DatasetStatus.ERASE, ERASE.format("column contact decrypts shredded column prod.payments.card in "
                                                        "CONCAT(card, '|', email)")),
        "a.hashed": (DatasetStatus.ERASE, ERASE.format("column card_hash decrypts shredded column prod.payments.card in "
                                                        "SHA2(card, 256)")),
        "a.counted": (DatasetStatus.ERASE, ERASE.format("column cards holds an aggregation of shredded column "
                                                         "prod.payments.card (jobs.sql:8)")),
        "a.decrypted": (DatasetStatus.ERASE, ERASE.format("column card decrypts shredded column prod.payments.card in "
                                                           "DECRYPT(card, user_id)")),
    }
    assert [(s.action, s.dataset) for s in plan.steps] == [
        (Action.RESOLVE, "prod.payments"), (Action.DESTROY_SUBJECT_KEY, "prod.payments"),
        *((Action.REWRITE_FILES, d) for d in ("a.cast", "a.concat", "a.counted", "a.decrypted", "a.hashed"))]
    assert plan.steps[1].params.datasets == ("prod.payments", "a.by_card", "a.filtered", "a.joined", "a.unioned")
