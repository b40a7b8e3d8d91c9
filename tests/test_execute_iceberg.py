"""Executing a plan on real Iceberg tables (Spark local mode, the real runtime jar): merge-on-read,
copy-on-write and a shallow clone that shares the source's data files. The subjects' values are
the columns' minimums, so any statistics that kept them would show."""

from __future__ import annotations

from pathlib import Path

import pytest
from byte_scan import find_values
from spark_lakehouse import checksum, cow_properties, mor_properties, new_namespace, spark_for, write_workspace

import piitracer
from piitracer.api import execute_plan, plan_deletion
from piitracer.executor.runner import ExecuteOptions
from piitracer.model.plan import Action, Subject

# The smallest user ids and PANs (the worst case: they are every statistics' minimum), distinctive
# enough that no count or size in the metadata equals them.
SUBJECTS = [7_000_000_001, 7_000_000_002, 7_000_000_003]
SUBJECT_PANS = [f"0000-0000-0000-000{i}" for i in range(1, 4)]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("warehouse")


def rows() -> list[tuple]:
    data = [(u, pan, 10.5, "2026-11-01") for u, pan in zip(SUBJECTS, SUBJECT_PANS) for _ in range(2)]
    data += [(8_000_000_000 + i, f"4111-0000-{i:04d}-1111", float(i), f"2026-11-0{1 + i % 3}") for i in range(1500)]
    return data


def build(spark, warehouse: Path, ns: str) -> None:
    spark.sql(f"CREATE TABLE lake.{ns}.src (user_id BIGINT, pan STRING, amount DOUBLE, dt STRING) USING iceberg "
              f"PARTITIONED BY (dt) TBLPROPERTIES ({mor_properties()})")
    data = rows()
    for part in (data[:700], data[700:]):  # two commits: several data files per partition
        spark.createDataFrame(part, "user_id BIGINT, pan STRING, amount DOUBLE, dt STRING").writeTo(f"lake.{ns}.src").append()
    spark.sql(f"CREATE TABLE lake.{ns}.cow (customer_id BIGINT, pan STRING, amount DOUBLE) USING iceberg TBLPROPERTIES ({cow_properties()})")
    spark.sql(f"INSERT INTO lake.{ns}.cow SELECT user_id, pan, amount FROM lake.{ns}.src")
    # A shallow clone: a table whose manifests point at the source's own data files.
    spark.sql(f"CREATE TABLE lake.{ns}.clone (user_id BIGINT, pan STRING, amount DOUBLE, dt STRING) USING iceberg "
              f"PARTITIONED BY (dt) TBLPROPERTIES ({mor_properties()})")
    spark.sql(f"CALL lake.system.add_files(table => '{ns}.clone', source_table => '`parquet`.`{warehouse / ns / 'src' / 'data'}`')")


def workspace(tmp_path: Path, warehouse: Path, ns: str) -> Path:
    loc = lambda name: str(warehouse / ns / name)  # noqa: E731
    catalog = {
        f"{ns}.src": {"format": "iceberg", "write_mode": "merge-on-read", "table": f"lake.{ns}.src", "location": loc("src"),
                      "columns": ["user_id", "pan", "amount", "dt"], "identifiers": ["user_id", "pan"], "subject_key": "user_id"},
        f"{ns}.cow": {"format": "iceberg", "write_mode": "copy-on-write", "table": f"lake.{ns}.cow", "location": loc("cow"),
                      "columns": ["customer_id", "pan", "amount"]},
        f"{ns}.clone": {"format": "iceberg", "write_mode": "merge-on-read", "table": f"lake.{ns}.clone", "location": loc("clone"),
                        "clone_of": {"dataset": f"{ns}.src", "mode": "shallow"}},
    }
    sql = f"INSERT INTO lake.{ns}.cow SELECT user_id AS customer_id, pan, amount FROM lake.{ns}.src;\n"
    return write_workspace(tmp_path / "ws", warehouse, catalog, sql)


def table_rows(spark, table: str) -> list[tuple]:
    return [tuple(r) for r in spark.table(table).collect()]


def test_iceberg_mor_cow_and_shallow_clone_are_erased_to_the_bytes(tmp_path: Path, warehouse: Path) -> None:
    spark = spark_for(warehouse)
    ns = new_namespace("ice")
    build(spark, warehouse, ns)
    ws = piitracer.load_workspace(workspace(tmp_path, warehouse, ns))
    keep = {name: checksum(r for r in table_rows(spark, f"lake.{ns}.{name}") if r[0] not in SUBJECTS) for name in ("src", "cow", "clone")}
    for name in ("src", "cow"):  # the test can fail: before the plan runs, the values are on disk
        assert find_values(warehouse / ns / name, SUBJECTS + SUBJECT_PANS)

    graph = piitracer.build_lineage_graph(ws)
    subjects = [Subject(value=str(u), request_id=f"r{u}", received_at="2026-11-20T09:00:00Z") for u in SUBJECTS]
    plan = plan_deletion(ws, graph, [f"{ns}.src.user_id"], subjects)
    assert plan.decision(f"{ns}.cow").key_column == "customer_id"
    summary = execute_plan(ws, plan, ExecuteOptions(no_concurrent_writers=True))

    assert summary.status == "complete", [(r.step.id, r.state, r.message) for r in summary.results]
    deletes = [r for r in summary.results if r.step.action is Action.DELETE_ROWS]
    assert {r.step.dataset: r.outcome.rows_deleted for r in deletes} == {f"{ns}.src": 6, f"{ns}.cow": 6, f"{ns}.clone": 6}
    for name in ("src", "cow", "clone"):
        remaining = table_rows(spark, f"lake.{ns}.{name}")
        assert not [r for r in remaining if r[0] in SUBJECTS or r[1] in SUBJECT_PANS]
        assert checksum(remaining) == keep[name], f"{name}: other rows changed"
        assert find_values(warehouse / ns / name, SUBJECTS + SUBJECT_PANS) == [], f"{name}: subject bytes remain"
