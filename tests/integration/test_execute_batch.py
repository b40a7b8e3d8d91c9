"""Batches and hostile values on a real Iceberg table: 100 subjects rewrite exactly the data files
that held them and touch the table once; values such as ``1 OR 1=1`` are data, never SQL."""

from __future__ import annotations

from pathlib import Path

from byte_scan import find_values
from pyspark.sql import functions as F
from spark_lakehouse import checksum, mor_properties, new_namespace, spark_for, table_rows, write_workspace

import piitracer
from piitracer.api import plan_deletion
from executor_runs import run_plan as run_unrecorded
from piitracer.model.plan import Action, Subject

RECEIVED = "2026-11-20T09:00:00Z"


def single_table_workspace(tmp_path: Path, warehouse: Path, ns: str, table: str, columns: list[str], key: str) -> piitracer.Workspace:
    catalog = {f"{ns}.{table}": {"format": "iceberg", "write_mode": "merge-on-read", "table": f"lake.{ns}.{table}",
                                 "location": str(warehouse / ns / table), "columns": columns,
                                 "identifiers": [key], "subject_key": key}}
    return piitracer.load_workspace(write_workspace(tmp_path / "ws", warehouse, catalog, "-- no pipelines\n"))


def run_plan(ws, source: str, values: list[str]):
    graph = piitracer.build_lineage_graph(ws)
    plan = plan_deletion(ws, graph, [source], [Subject(value=v, request_id=f"r{i}", received_at=RECEIVED) for i, v in enumerate(values)])
    from piitracer.executor.runner import ExecuteOptions

    return plan, run_unrecorded(ws, plan, ExecuteOptions(no_concurrent_writers=True))


def data_files(spark, table: str) -> set[str]:
    return {r.file_path for r in spark.table(f"{table}.files").where("content = 0").select("file_path").collect()}


def test_a_batch_of_100_rewrites_only_the_files_that_held_them(tmp_path: Path, warehouse: Path) -> None:
    spark = spark_for(warehouse)
    ns, table = new_namespace("batch"), "events"
    full = f"lake.{ns}.{table}"
    subjects = [6_000_000_000 + i for i in range(100)]  # the column minimum
    rows = [(u, f"user{u}@example.org", f"2026-11-0{1 + i % 2}") for i, u in enumerate(subjects) for _ in range(2)]
    rows += [(8_000_000_000 + i, f"other{i}@example.org", f"2026-11-{1 + i % 10:02d}") for i in range(5000)]
    spark.sql(f"CREATE TABLE {full} (user_id BIGINT, email STRING, dt STRING) USING iceberg PARTITIONED BY (dt) "
              f"TBLPROPERTIES ({mor_properties()})")
    # Seven appends: seven small files per partition, enough for bin-packing to compact a partition
    # whole if its size rules were on (they were, until the rewrite options turned them off).
    for part in range(7):
        spark.createDataFrame(rows[part::7], "user_id BIGINT, email STRING, dt STRING").writeTo(full).append()
    ws = single_table_workspace(tmp_path, warehouse, ns, table, ["user_id", "email", "dt"], "user_id")
    before = data_files(spark, full)
    holders = {r._file for r in spark.table(full).where(F.col("user_id").isin(subjects)).select("_file").distinct().collect()}
    assert 0 < len(holders) < len(before)
    keep = checksum(r for r in table_rows(spark, full) if r[0] not in subjects)

    plan, summary = run_plan(ws, f"{ns}.{table}.user_id", [str(s) for s in subjects])

    assert summary.status == "complete"
    assert [s.action for s in plan.steps if s.action is Action.DELETE_ROWS] == [Action.DELETE_ROWS]  # touched once
    (delete,) = [r for r in summary.results if r.step.action is Action.DELETE_ROWS]
    assert delete.outcome.rows_deleted == 200
    after = data_files(spark, full)
    assert before - after == holders, "exactly the files that held subjects were replaced"
    (rewrite,) = [r for r in summary.results if r.step.action is Action.REWRITE_DATA_FILES]
    assert rewrite.outcome.files_rewritten == len(holders)
    assert checksum(table_rows(spark, full)) == keep
    assert find_values(warehouse / ns / table, subjects + [f"user{u}@example.org" for u in subjects]) == []


HOSTILE = ["1 OR 1=1", "x'; DROP TABLE t; --", 'say "hi"', "Zoë 😀", "back\\slash", "%", "_"]
LOOKALIKES = ["1", "x", "say hi", "Zoe", "backslash", "%%", "a_b", "1 OR 1=2"]


def test_hostile_values_delete_exactly_the_intended_rows(tmp_path: Path, warehouse: Path) -> None:
    spark = spark_for(warehouse)
    ns, table = new_namespace("hostile"), "users"
    full = f"lake.{ns}.{table}"
    rows = [(value, "subject") for value in HOSTILE] + [(value, "other") for value in LOOKALIKES]
    rows += [(f"user{i}", "other") for i in range(300)]
    spark.sql(f"CREATE TABLE {full} (handle STRING, note STRING) USING iceberg TBLPROPERTIES ({mor_properties()})")
    spark.createDataFrame(rows, "handle STRING, note STRING").writeTo(full).append()
    ws = single_table_workspace(tmp_path, warehouse, ns, table, ["handle", "note"], "handle")
    keep = checksum(r for r in rows if r[1] == "other")

    _, summary = run_plan(ws, f"{ns}.{table}.handle", HOSTILE)

    assert summary.status == "complete"
    assert checksum(table_rows(spark, full)) == keep
    assert spark.sql(f"SHOW TABLES IN lake.{ns}").count() == 1  # nothing was dropped
    assert find_values(warehouse / ns / table, [v for v in HOSTILE if len(v) >= 4]) == []
    # The journal keeps the resolved values for resume: only its owner may read it.
    assert (ws.root / ".piitracer" / "journal.sqlite").stat().st_mode & 0o777 == 0o600
