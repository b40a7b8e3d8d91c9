"""Equi-joins carry the subject's key, end to end on real tables.

The pipelines (their SQL is the lineage):

    INSERT INTO risk.holders SELECT t.account_ref AS holder, a.iban, t.amount
      FROM bank.transfers t JOIN bank.accounts a ON t.account_ref = a.account_id;
    INSERT INTO risk.by_holder SELECT holder, count(*) AS transfers, sum(amount) AS total
      FROM risk.holders GROUP BY holder;

The request names only ``bank.accounts.account_id``. Every ``holder`` equals an ``account_id``, so
``risk.by_holder`` holds one row per account holder — the subject's included — although no
projection copies ``account_id`` into it. Before join equivalence, the plan left ``risk.by_holder``
out (its only edge from the subject was a GROUP BY influence) and ``verify`` said all clear with the
subject's row still in it."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from byte_scan import find_values
from spark_lakehouse import write_workspace

from executor_runs import run_plan
import piitracer
from piitracer.api import plan_deletion, verify_plan
from piitracer.executor.runner import ExecuteOptions
from piitracer.model.plan import DatasetStatus, Subject

SUBJECT = 7_000_000_001
SQL = """INSERT INTO risk.holders SELECT t.account_ref AS holder, a.iban, t.amount
  FROM bank.transfers t JOIN bank.accounts a ON t.account_ref = a.account_id;
INSERT INTO risk.by_holder SELECT holder, count(*) AS transfers, sum(amount) AS total
  FROM risk.holders GROUP BY holder;
"""


def test_a_grouped_table_downstream_of_an_equi_join_is_planned_and_erased(tmp_path: Path, warehouse: Path) -> None:
    lake = tmp_path / "lake"
    accounts = {SUBJECT: "DE00SUBJECT"} | {8_000_000_000 + i: f"DE{i:08d}" for i in range(50)}
    transfers = [(account, float(n)) for n, account in enumerate(list(accounts) * 3)]
    holders = [(ref, accounts[ref], amount) for ref, amount in transfers]
    by_holder = {}
    for ref, _, amount in holders:
        count, total = by_holder.get(ref, (0, 0.0))
        by_holder[ref] = (count + 1, total + amount)
    tables = {
        "bank/accounts": pa.table({"account_id": pa.array(list(accounts), pa.int64()), "iban": list(accounts.values())}),
        "bank/transfers": pa.table({"account_ref": pa.array([t[0] for t in transfers], pa.int64()),
                                    "amount": [t[1] for t in transfers]}),
        "risk/holders": pa.table({"holder": pa.array([h[0] for h in holders], pa.int64()), "iban": [h[1] for h in holders],
                                  "amount": [h[2] for h in holders]}),
        "risk/by_holder": pa.table({"holder": pa.array(list(by_holder), pa.int64()),
                                    "transfers": [v[0] for v in by_holder.values()], "total": [v[1] for v in by_holder.values()]}),
    }
    for name, table in tables.items():
        (lake / name).mkdir(parents=True)
        pq.write_table(table, lake / name / "part-0.parquet")
    catalog = {
        "bank.accounts": {"format": "parquet", "location": str(lake / "bank/accounts"), "columns": ["account_id", "iban"],
                          "identifiers": ["account_id", "iban"], "subject_key": "account_id"},
        "bank.transfers": {"format": "parquet", "location": str(lake / "bank/transfers"), "columns": ["account_ref", "amount"]},
        "risk.holders": {"format": "parquet", "location": str(lake / "risk/holders"), "columns": ["holder", "iban", "amount"]},
        "risk.by_holder": {"format": "parquet", "location": str(lake / "risk/by_holder"),
                           "columns": ["holder", "transfers", "total"]},
    }
    ws = piitracer.load_workspace(write_workspace(tmp_path / "ws", warehouse, catalog, SQL))
    plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), ["bank.accounts.account_id"],
                         [Subject(value=str(SUBJECT), request_id="r1", received_at="2026-11-20T09:00:00Z")])

    by = plan.decision("risk.by_holder")
    assert (by.status, by.key_column, by.rule) == (DatasetStatus.ERASE, "holder", "1: equal to the subject key through an equi-join")
    assert "through the join t.account_ref = a.account_id (sql/pipelines.sql:1)" in by.reason
    assert by.lineage_path[0].startswith("bank.accounts.account_id -[DIRECT IDENTITY equal through the join "
                                         "t.account_ref = a.account_id]-> risk.holders.holder")
    assert plan.decision("risk.holders").key_column == "holder"

    summary = run_plan(ws, plan, ExecuteOptions(no_concurrent_writers=True))
    assert summary.status == "complete", [(r.step.id, r.state, r.message) for r in summary.results]
    report = verify_plan(ws, plan)
    assert report.result("risk.by_holder").state.value == "erased" and report.complete
    remaining = pq.read_table(lake / "risk/by_holder")
    assert remaining.num_rows == len(by_holder) - 1 and SUBJECT not in remaining.column("holder").to_pylist()
    for name in ("bank/accounts", "risk/holders", "risk/by_holder"):
        assert find_values(lake / name, [SUBJECT, "DE00SUBJECT"]) == [], name
    # The transfers table keeps the subject's account reference: nothing in the lineage says it is
    # theirs to erase (a transfer to their account is the sender's record) — it only joins.
    assert find_values(lake / "bank/transfers", [SUBJECT])
