"""Surrogate keys carry the person, end to end on a star schema of real tables (issue 32).

The pipelines (their SQL is the lineage, and Spark runs the same SELECTs to build the tables):

    dw.dim_customer  row_number() OVER (ORDER BY customer_id) AS customer_sk     -- ranked
    dw.dim_account   md5(concat(customer_id, '-', source_system)) AS account_hk  -- hashed with another column
    dw.dim_value     row_number() OVER (ORDER BY lifetime_value) AS value_rank   -- ranked, not by the person
    dw.fact_orders   d.customer_sk, order_id, amount   FROM raw.orders JOIN dim_customer ON customer_id
    dw.fact_payments a.account_hk, order_id, amount    FROM raw.orders JOIN dim_account ON customer_id
    dw.fact_value    r.value_rank, order_id, amount    FROM raw.orders JOIN dim_value ON customer_id

The request names only ``raw.customers.customer_id``; the facts carry no customer_id. Before
surrogate keys, both facts were "influenced only through INDIRECT edges" and kept every row of the
person under the surrogate key.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from byte_scan import find_values
from spark_lakehouse import checksum, spark_for, write_workspace

import piitracer
from piitracer.api import execution_context, plan_deletion, request_store, verify_plan
from executor_runs import run_plan
from piitracer.crypto.envelope import write_master_key
from piitracer.executor.journal import Journal
from piitracer.executor.runner import ExecuteOptions, ExecutionError
from piitracer.model.plan import DatasetStatus, Subject, ValueKind
from piitracer.render.plan_text import explain_text

pytestmark = pytest.mark.slow

SUBJECT = 7_000_000_001  # the smallest key: every ranking gives the subject the first numbers
SELECTS = {
    "dw.dim_customer": "SELECT row_number() OVER (ORDER BY customer_id) AS customer_sk, customer_id, name FROM raw.customers",
    "dw.dim_account": "SELECT md5(concat(customer_id, '-', source_system)) AS account_hk, customer_id, source_system "
                      "FROM raw.customers",
    "dw.dim_value": "SELECT row_number() OVER (ORDER BY lifetime_value) AS value_rank, customer_id FROM raw.customers",
    "dw.fact_orders": "SELECT d.customer_sk, o.order_id, o.amount FROM raw.orders o "
                      "JOIN dw.dim_customer d ON o.customer_id = d.customer_id",
    "dw.fact_payments": "SELECT a.account_hk, o.order_id, o.amount FROM raw.orders o "
                        "JOIN dw.dim_account a ON o.customer_id = a.customer_id",
    "dw.fact_value": "SELECT r.value_rank, o.order_id, o.amount FROM raw.orders o "
                     "JOIN dw.dim_value r ON o.customer_id = r.customer_id",
}
SQL = "".join(f"INSERT INTO {table} {select};\n" for table, select in SELECTS.items())


def _customers() -> list[tuple]:
    # The subject is in two source systems (two rows, two hashed keys); lifetime values put the
    # subject in the middle of the value ranking, so a rank by value would name somebody else.
    rows = [(SUBJECT, "Subject Person", "crm", 500.25), (SUBJECT, "Subject Person", "web", 500.25)]
    rows += [(8_000_000_000 + i, f"Customer {i}", "crm" if i % 2 else "web", 100.5 * i + 0.25) for i in range(1, 11)]
    return rows


def _orders() -> list[tuple]:
    keys = [SUBJECT] * 3 + [8_000_000_000 + i for i in range(1, 11) for _ in range(2)]
    return [(1000 + n, key, 10.5 + n) for n, key in enumerate(keys)]


RAW = {
    "raw.customers": (_customers, "customer_id BIGINT, name STRING, source_system STRING, lifetime_value DOUBLE"),
    "raw.orders": (_orders, "order_id BIGINT, customer_id BIGINT, amount DOUBLE"),
}


def _view(name: str) -> str:
    return name.replace(".", "_")


def _build(spark, lake: Path) -> dict[str, pa.Table]:
    """Every table, computed by Spark from the pipelines' own SELECTs, written as Parquet."""
    tables: dict[str, pa.Table] = {}
    for name, (rows, schema) in RAW.items():
        frame = spark.createDataFrame(rows(), schema)
        frame.createOrReplaceTempView(_view(name))
        tables[name] = pa.Table.from_pylist([dict(zip(frame.columns, r)) for r in rows()], _arrow_schema(frame))
    shuffle = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "1")  # a dozen rows: one task per stage
    try:
        for name, select in SELECTS.items():
            text = re.sub(r"\b(raw|dw)\.(\w+)", lambda m: f"{m.group(1)}_{m.group(2)}", select)
            frame = spark.sql(text)
            tables[name] = pa.Table.from_pylist([r.asDict() for r in frame.collect()], _arrow_schema(frame))
            spark.createDataFrame(tables[name].to_pylist(), frame.schema).createOrReplaceTempView(_view(name))
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", shuffle)
    for name, table in tables.items():
        folder = lake / name.replace(".", "/")
        folder.mkdir(parents=True)
        pq.write_table(table, folder / "part-0.parquet")
    return tables


def _arrow_schema(frame) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(frame.schema)


def _workspace(tmp_path: Path, warehouse: Path, lake: Path, tables: dict[str, pa.Table], sql: str = SQL):
    catalog = {name: {"format": "parquet", "location": str(lake / name.replace(".", "/")),
                      "columns": table.column_names} for name, table in tables.items()}
    catalog["raw.customers"] |= {"identifiers": ["customer_id"], "subject_key": "customer_id"}
    return piitracer.load_workspace(write_workspace(tmp_path / "ws", warehouse, catalog, sql))


def _plan(ws):
    return plan_deletion(ws, piitracer.build_lineage_graph(ws), ["raw.customers.customer_id"],
                         [Subject(value=str(SUBJECT), request_id="r1", received_at="2026-11-20T09:00:00Z")])


def _rows(table: pa.Table) -> list[tuple]:
    return [tuple(row.values()) for row in table.to_pylist()]


def test_a_star_schema_is_erased_by_its_surrogate_keys(tmp_path: Path, warehouse: Path) -> None:
    lake = tmp_path / "lake"
    tables = _build(spark_for(warehouse), lake)
    dims = {name: tables[name].to_pylist() for name in ("dw.dim_customer", "dw.dim_account", "dw.dim_value")}
    subject_sks = {r["customer_sk"] for r in dims["dw.dim_customer"] if r["customer_id"] == SUBJECT}
    subject_hks = {r["account_hk"] for r in dims["dw.dim_account"] if r["customer_id"] == SUBJECT}
    assert subject_sks == {1, 2} and len(subject_hks) == 2
    ws = _workspace(tmp_path, warehouse, lake, tables)
    plan = _plan(ws)

    # The plan: each fact erased by the surrogate key it carries, read from the dimension that assigns it.
    orders, payments = plan.decision("dw.fact_orders"), plan.decision("dw.fact_payments")
    assert (orders.status, orders.key_column) == (DatasetStatus.ERASE, "customer_sk")
    assert (payments.status, payments.key_column) == (DatasetStatus.ERASE, "account_hk")
    assert orders.rule == payments.rule == "3s: surrogate key assigned per subject key, read from the dataset that maps them"
    (sk,) = orders.values_from
    assert (sk.name, sk.kind) == ("dw.dim_customer.customer_sk~surrogate", ValueKind.SURROGATE)
    assert (sk.lookup.dataset, sk.lookup.key_column, sk.lookup.value_column, sk.lookup.key_from, sk.lookup.how) == (
        "dw.dim_customer", "customer_id", "customer_sk", ("raw.customers.customer_id",),
        "ROW_NUMBER() OVER (ORDER BY customer_id)")
    (hk,) = payments.values_from
    assert hk.lookup.how == "MD5(CONCAT(customer_id, '-', source_system))"
    assert orders.lineage_path == (
        "raw.customers.customer_id -[DIRECT SURROGATE ROW_NUMBER() OVER (ORDER BY customer_id)]-> "
        "dw.dim_customer.customer_sk (sql/pipelines.sql:1)",
        "dw.dim_customer.customer_sk -[DIRECT IDENTITY]-> dw.fact_orders.customer_sk (sql/pipelines.sql:4)",
    )
    explained = explain_text(plan, "dw.fact_orders")
    assert ("values:     dw.dim_customer.customer_sk~surrogate (surrogate key read at run time from "
            "dw.dim_customer.customer_sk, assigned by ROW_NUMBER() OVER (ORDER BY customer_id), on the rows whose "
            "customer_id holds raw.customers.customer_id)") in explained
    # The ranking by lifetime value is no identifier: that fact is left, and the plan says why.
    value = plan.decision("dw.fact_value")
    assert value.status is DatasetStatus.NO_ACTION
    assert value.reason.endswith("; value_rank (a copy of dw.dim_value.value_rank) is ROW_NUMBER() OVER (ORDER BY "
                                 "lifetime_value), not an identifier of the person: it numbers rows in the order of "
                                 "lifetime_value, which does not follow the subject's key")
    (resolve,) = plan.resolve
    assert sorted(v.name for v in resolve.computed) == ["dw.dim_account.account_hk~surrogate",
                                                         "dw.dim_customer.customer_sk~surrogate"]

    # The values are kept sealed under the request's data key, as the CLI keeps them.
    with request_store(ws, write_master_key(tmp_path / "master.key")) as store:
        store.add("r1", datetime(2026, 11, 20, 9, tzinfo=timezone.utc), plan.deadline_at, ["raw.customers.customer_id"],
                  [str(SUBJECT)])
        cipher = store.cipher(["r1"])
    summary = run_plan(ws, plan, ExecuteOptions(no_concurrent_writers=True), cipher=cipher)
    assert summary.status == "complete", [(r.step.id, r.state, r.message) for r in summary.results]
    journal_path = execution_context(ws).journal_path
    journal = Journal(journal_path)
    try:
        resolved = journal.load_values(plan.plan_id, cipher)
    finally:
        journal.close()
    assert resolved["dw.dim_customer.customer_sk~surrogate"] == [1, 2]
    assert set(resolved["dw.dim_account.account_hk~surrogate"]) == subject_hks
    journal_bytes = b"".join(f.read_bytes() for f in journal_path.parent.rglob("*") if f.is_file())
    assert not any(hk.encode() in journal_bytes for hk in subject_hks)

    # Exactly the subject's rows are gone from every table the plan erases; every other row is kept.
    gone = {
        "raw.customers": lambda r: r[0] == SUBJECT,
        "dw.dim_customer": lambda r: r[1] == SUBJECT,
        "dw.dim_account": lambda r: r[1] == SUBJECT,
        "dw.dim_value": lambda r: r[1] == SUBJECT,
        "dw.fact_orders": lambda r: r[0] in subject_sks,
        "dw.fact_payments": lambda r: r[0] in subject_hks,
        "dw.fact_value": lambda r: False,
        "raw.orders": lambda r: False,  # not reached: nothing says its rows are the subject's to erase
    }
    for name, table in tables.items():
        before = _rows(table)
        after = _rows(pq.read_table(lake / name.replace(".", "/")))
        kept = [r for r in before if not gone[name](r)]
        assert checksum(after) == checksum(kept), name
    assert len(_rows(tables["dw.fact_orders"])) - len(_rows(pq.read_table(lake / "dw/fact_orders"))) == 6
    assert len(_rows(tables["dw.fact_payments"])) - len(_rows(pq.read_table(lake / "dw/fact_payments"))) == 6

    report = verify_plan(ws, plan, cipher=cipher)
    assert report.complete
    for name in ("dw.fact_orders", "dw.fact_payments", "dw.dim_customer", "dw.dim_account"):
        assert report.result(name).state.value == "erased", name
    for name in ("dw/fact_payments", "dw/dim_account", "dw/dim_customer", "raw/customers"):
        assert find_values(lake / name, [SUBJECT, *subject_hks]) == [], name

    # The proof searches the facts for the surrogate values: a late row under the subject's key is found.
    late = pa.table({"customer_sk": pa.array([2], pa.int32()), "order_id": pa.array([9999], pa.int64()),
                     "amount": pa.array([0.75], pa.float64())})
    pq.write_table(late, lake / "dw/fact_orders" / "part-late.parquet")
    report = verify_plan(ws, plan, cipher=cipher)
    assert not report.complete and report.result("dw.fact_orders").state.value == "found"
    assert [d.dataset for d in report.datasets if d.state.value == "found"] == ["dw.fact_orders"]


def test_a_surrogate_value_another_person_holds_stops_the_run_before_any_delete(tmp_path: Path, warehouse: Path) -> None:
    """The dimension on disk gives another customer one of the subject's numbers (a rebuilt
    dimension, a hand edit): erasing the facts by it would erase that person's rows too."""
    lake = tmp_path / "lake"
    sql = (f"INSERT INTO dw.dim_customer {SELECTS['dw.dim_customer']};\n"
           f"INSERT INTO dw.fact_orders {SELECTS['dw.fact_orders']};\n")
    tables = {name: pa.table({c: pa.array(v, t) for c, (v, t) in columns.items()}) for name, columns in {
        "raw.customers": {"customer_id": ([SUBJECT, 8_000_000_001], pa.int64()), "name": (["S", "O"], pa.string()),
                          "source_system": (["crm", "crm"], pa.string()), "lifetime_value": ([1.5, 2.5], pa.float64())},
        "raw.orders": {"order_id": ([1000, 1001], pa.int64()), "customer_id": ([SUBJECT, 8_000_000_001], pa.int64()),
                       "amount": ([1.5, 2.5], pa.float64())},
        "dw.dim_customer": {"customer_sk": ([1, 1], pa.int32()), "customer_id": ([SUBJECT, 8_000_000_001], pa.int64()),
                            "name": (["S", "O"], pa.string())},
        "dw.fact_orders": {"customer_sk": ([1, 1], pa.int32()), "order_id": ([1000, 1001], pa.int64()),
                           "amount": ([1.5, 2.5], pa.float64())},
    }.items()}
    for name, table in tables.items():
        folder = lake / name.replace(".", "/")
        folder.mkdir(parents=True)
        pq.write_table(table, folder / "part-0.parquet")
    ws = _workspace(tmp_path, warehouse, lake, tables, sql)
    plan = _plan(ws)
    assert plan.decision("dw.fact_orders").key_column == "customer_sk"

    with pytest.raises(ExecutionError, match=r"surrogate key dw\.dim_customer\.customer_sk: rows of 1 other customer_id value\(s\) of dw\.dim_customer "
                                             r"\(no subject.s, or none\) hold one of the subjects. customer_sk values"):
        run_plan(ws, plan, ExecuteOptions(no_concurrent_writers=True))
    for name, table in tables.items():
        assert pq.read_table(lake / name.replace(".", "/")).equals(table), name
