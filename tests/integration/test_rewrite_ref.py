"""rewrite_ref: a person is erased from an Iceberg tag and a branch without destroying them. A tag
on an early snapshot and a branch with commits of its own both hold the subjects; after the plan
runs (without --drop-refs), both still exist, each returns exactly its old rows minus the
subjects' (count and checksum of every other row), the main branch is as after any erasure, and
no file of the table holds a subject's value (decoded: Parquet, manifests, manifest lists)."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from byte_scan import find_values
from spark_lakehouse import (SUBJECT_PANS, SUBJECTS, checksum, mor_properties, new_namespace, record_made_plan, rows,
                             single_source_plan, spark_for)

from executor_runs import run_plan
from piitracer.api import verify_plan, write_private
from piitracer.executor.runner import ExecuteOptions
from piitracer.model.plan import Action
from piitracer.model.verification import ErasureState

NINETY_DAYS_MS = 90 * 86_400_000
FLAGS = ("--no-concurrent-writers", "--unsealed")  # the test plans without an audit key (no seal)


def tagged_and_branched(spark, ns: str) -> str:
    """lake.<ns>.src: the first load tagged month_end (kept 90 days); a branch 'experiment' made
    from the second load, with a commit of its own that adds a row of a subject and another's."""
    table = f"lake.{ns}.src"
    spark.sql(f"CREATE TABLE {table} (user_id BIGINT, pan STRING, amount DOUBLE, dt STRING) USING iceberg "
              f"PARTITIONED BY (dt) TBLPROPERTIES ({mor_properties()})")
    data = rows(600)
    schema = "user_id BIGINT, pan STRING, amount DOUBLE, dt STRING"
    spark.createDataFrame(data[:300], schema).writeTo(table).append()
    first = spark.sql(f"SELECT snapshot_id FROM {table}.snapshots ORDER BY committed_at DESC LIMIT 1").collect()[0][0]
    spark.sql(f"ALTER TABLE {table} CREATE TAG month_end AS OF VERSION {first} RETAIN 90 DAYS")
    spark.createDataFrame(data[300:], schema).writeTo(table).append()
    spark.sql(f"ALTER TABLE {table} CREATE BRANCH experiment")
    spark.createDataFrame([(SUBJECTS[1], SUBJECT_PANS[1], 99.0, "2026-11-02"), (9_000_000_001, "4111-9999-0000-1111", 1.0,
                                                                                  "2026-11-02")], schema) \
        .writeTo(f"{table}.branch_experiment").append()
    return table


def read(spark, table: str, version: str | None = None) -> list[tuple]:
    frame = spark.sql(f"SELECT * FROM {table} VERSION AS OF '{version}'") if version else spark.table(table)
    return [tuple(r) for r in frame.collect()]


def setup(spark, warehouse: Path, tmp_path: Path):
    """(table, workspace, plan, rows to keep per ref, the tag's snapshot before the run)."""
    ns = new_namespace("refs")
    table = tagged_and_branched(spark, ns)
    before = {ref: read(spark, table, ref) for ref in ("month_end", "experiment")} | {"main": read(spark, table)}
    for ref, found in before.items():  # the test can fail: every ref holds the subjects before the run
        assert [r for r in found if r[0] in SUBJECTS], ref
    keep = {ref: checksum(r for r in found if r[0] not in SUBJECTS) for ref, found in before.items()}
    old_tag = spark.sql(f"SELECT snapshot_id FROM {table}.refs WHERE name = 'month_end'").collect()[0][0]
    ws, plan = single_source_plan(tmp_path, warehouse, table, SUBJECTS)
    assert sorted((s.params.ref, s.params.ref_type) for s in plan.steps if s.action is Action.REWRITE_REF) == [
        ("experiment", "branch"), ("month_end", "tag")]
    return table, ws, plan, keep, old_tag


def assert_refs_kept_without_the_subjects(spark, warehouse: Path, table: str, ws, plan, keep) -> None:
    spark.catalog.clearCache()
    refs = {r["name"]: (r["type"], r["max_reference_age_in_ms"]) for r in
            spark.sql(f"SELECT name, type, max_reference_age_in_ms FROM {table}.refs").collect()}
    assert refs == {"main": ("BRANCH", None), "month_end": ("TAG", NINETY_DAYS_MS), "experiment": ("BRANCH", None)}
    for ref in ("month_end", "experiment", "main"):
        after = read(spark, table, ref if ref != "main" else None)
        assert not [r for r in after if r[0] in SUBJECTS or r[1] in SUBJECT_PANS], ref
        assert checksum(after) == keep[ref], f"{ref}: the other rows changed"
    assert find_values(warehouse / table.split(".")[1] / "src", SUBJECTS + SUBJECT_PANS) == []
    properties = {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}
    assert properties["write.delete.mode"] == "merge-on-read" and not [k for k in properties if k.startswith("piitracer.")]
    report = verify_plan(ws, plan)
    assert [(d.dataset, d.state) for d in report.datasets] == [(plan.sources[0].dataset, ErasureState.ERASED)]


def test_a_tag_and_a_branch_keep_their_rows_minus_the_subjects_and_no_byte_is_left(tmp_path: Path, warehouse: Path) -> None:
    spark = spark_for(warehouse)
    table, ws, plan, keep, old_tag = setup(spark, warehouse, tmp_path)

    summary = run_plan(ws, plan, ExecuteOptions(no_concurrent_writers=True))  # no --drop-refs

    assert summary.status == "complete", [(r.step.id, r.state, r.message) for r in summary.results]
    assert_refs_kept_without_the_subjects(spark, warehouse, table, ws, plan, keep)
    moved = {r.step.params.ref: r.outcome.details for r in summary.results if r.step.action is Action.REWRITE_REF}
    assert moved["month_end"]["ref_snapshot_before"] == str(old_tag) != moved["month_end"]["ref_snapshot_after"]
    assert moved["month_end"]["ref_rows_removed"] == 6 and moved["experiment"]["ref_rows_removed"] == 7


def test_killed_with_the_switch_on_and_before_the_tag_moves_then_resumed(tmp_path: Path, warehouse: Path) -> None:
    """SIGKILL while the table's deletes are switched to copy-on-write, then (on resume) after a
    ref's new snapshot is written but before it is moved: the last resume ends as an
    uninterrupted run, the table's own delete mode back, no working branch left."""
    from fault_lakehouse import ENV, Lake, execute

    spark = spark_for(warehouse)
    table, ws, plan, keep, _ = setup(spark, warehouse, tmp_path)
    plan_file = tmp_path / "plan.json"
    write_private(plan_file, plan.to_json())
    record_made_plan(ws, plan, ENV["PIITRACER_AUDIT_KEY"])  # as `plan -o` records it
    lake = Lake(table.split(".")[1], ws, plan, plan_file, {}, {}, {}, {})
    for number, point in enumerate(["iceberg.rewrite_ref.copy_on_write", "iceberg.rewrite_ref.before_move"]):
        run = execute(lake, resume=number > 0, failpoint=point, flags=FLAGS)
        assert run.returncode == -signal.SIGKILL, f"{point}: not killed there: {run.stderr[-2000:]}"
    final = execute(lake, resume=True, failpoint=None, flags=FLAGS)
    assert final.returncode == 0, final.stderr[-3000:]
    assert_refs_kept_without_the_subjects(spark, warehouse, table, ws, plan, keep)


def test_another_writer_appends_and_deletes_on_main_while_a_ref_is_rewritten(tmp_path: Path, warehouse: Path) -> None:
    """The executor pauses inside rewrite_ref with the table's deletes switched to copy-on-write;
    another job (its own Spark session) appends other users' rows to main and deletes one. Its
    append survives, its DELETE (run as copy-on-write meanwhile) removed exactly its row, the
    refs end exact, the table's own delete mode is back, and no byte of a subject is left."""
    import threading

    from fault_lakehouse import ENV, Lake, execute

    spark = spark_for(warehouse)
    table, ws, plan, keep, _ = setup(spark, warehouse, tmp_path)
    plan_file = tmp_path / "plan.json"
    write_private(plan_file, plan.to_json())
    record_made_plan(ws, plan, ENV["PIITRACER_AUDIT_KEY"])  # as `plan -o` records it
    lake = Lake(table.split(".")[1], ws, plan, plan_file, {}, {}, {}, {})
    original = [r for r in read(spark, table) if r[0] not in SUBJECTS]
    gone = original[0][0]  # another user's row the other job deletes
    control = tmp_path / "control"
    control.mkdir()
    point = "iceberg.rewrite_ref.copy_on_write"
    result = {}
    runner = threading.Thread(target=lambda: result.update(run=execute(
        lake, resume=False, failpoint=None, flags=FLAGS,
        env_extra={"PIITRACER_PAUSEPOINT": point, "PIITRACER_PAUSE_DIR": str(control)})))
    runner.start()
    try:
        deadline = time.monotonic() + 600
        while not (control / f"{point}.paused").exists():
            assert runner.is_alive() and time.monotonic() < deadline, result.get("run")
            time.sleep(0.1)
        others = [(9_500_000_000 + i, f"5500-95-{i:04d}-3333", float(i), "2026-11-03") for i in range(40)]
        spark.sql(f"REFRESH TABLE {table}")
        switched = {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}
        assert (switched["write.delete.mode"], switched["piitracer.saved.write.delete.mode"]) == ("copy-on-write", "merge-on-read")
        spark.createDataFrame(others, "user_id BIGINT, pan STRING, amount DOUBLE, dt STRING").writeTo(table).append()
        spark.sql(f"DELETE FROM {table} WHERE user_id = {gone}")
    finally:
        (control / f"{point}.go").touch()
        runner.join(900)
    assert result["run"].returncode == 0, result["run"].stderr[-3000:]

    spark.sql(f"REFRESH TABLE {table}")
    main = read(spark, table)
    assert checksum(r for r in main if r[0] >= 9_500_000_000) == checksum(others)  # the append survived
    assert checksum(r for r in main if r[0] < 9_500_000_000) == checksum(r for r in original if r[0] != gone)
    keep = {**keep, "main": checksum(main)}  # main as the other job left it, minus the subjects' rows
    assert_refs_kept_without_the_subjects(spark, warehouse, table, ws, plan, keep)
