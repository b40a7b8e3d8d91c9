"""Executing a plan on real Iceberg tables (Spark local mode, the real runtime jar): merge-on-read,
copy-on-write and a shallow clone that shares the source's data files. The subjects' values are
the columns' minimums, so any statistics that kept them would show."""

from __future__ import annotations

from pathlib import Path

from byte_scan import find_values
from spark_lakehouse import SUBJECT_PANS, SUBJECTS, build, checksum, new_namespace, spark_for, table_rows, workspace

from executor_runs import run_plan
import piitracer
from piitracer.api import plan_deletion
from piitracer.executor.runner import ExecuteOptions
from piitracer.model.plan import Action, Subject


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
    summary = run_plan(ws, plan, ExecuteOptions(no_concurrent_writers=True))

    assert summary.status == "complete", [(r.step.id, r.state, r.message) for r in summary.results]
    deletes = [r for r in summary.results if r.step.action is Action.DELETE_ROWS]
    assert {r.step.dataset: r.outcome.rows_deleted for r in deletes} == {f"{ns}.src": 6, f"{ns}.cow": 6, f"{ns}.clone": 6}
    for name in ("src", "cow", "clone"):
        remaining = table_rows(spark, f"lake.{ns}.{name}")
        assert not [r for r in remaining if r[0] in SUBJECTS or r[1] in SUBJECT_PANS]
        assert checksum(remaining) == keep[name], f"{name}: other rows changed"
        assert find_values(warehouse / ns / name, SUBJECTS + SUBJECT_PANS) == [], f"{name}: subject bytes remain"


def test_shallow_clone_expiry_leaves_the_sources_files_alone(tmp_path: Path, warehouse: Path) -> None:
    """Without --no-concurrent-writers the source's expiry waits (for the clone's orphan step), so
    the source keeps its pre-delete snapshots: each must still be readable. Expiring the clone
    must not delete the data files it shares with the source."""
    spark = spark_for(warehouse)
    ns = new_namespace("shallow")
    build(spark, warehouse, ns)
    ws = piitracer.load_workspace(workspace(tmp_path, warehouse, ns))
    subjects = [Subject(value=str(u), request_id=f"r{u}", received_at="2026-11-20T09:00:00Z") for u in SUBJECTS]
    plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), [f"{ns}.src.user_id"], subjects)
    summary = run_plan(ws, plan, ExecuteOptions())

    states = {(r.step.dataset, r.step.action): r.state for r in summary.results}
    assert states[(f"{ns}.clone", Action.EXPIRE_SNAPSHOTS)] == "committed"
    assert states[(f"{ns}.src", Action.EXPIRE_SNAPSHOTS)] != "committed"
    snapshots = [r.snapshot_id for r in spark.sql(f"SELECT snapshot_id FROM lake.{ns}.src.snapshots").collect()]
    assert len(snapshots) > 1, "the source's pre-delete snapshots are still retained"
    for snapshot in snapshots:  # raises if a data file of a retained snapshot was deleted
        assert spark.read.option("snapshot-id", snapshot).table(f"lake.{ns}.src").count() > 0
