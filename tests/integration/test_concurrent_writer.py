"""Another job writes while a plan runs: its own SparkSession in a separate process (the same
Hadoop-catalog warehouse) appends to the Iceberg source, a delta-rs writer appends to the Delta
source, each with other users' rows and late rows of a subject (one with a PAN of theirs never seen
before); a second Iceberg batch is in flight (data files written under the table, not committed)
while the executor expires snapshots, and commits after the run.

The executor runs WITHOUT ``--no-concurrent-writers``, as it must when other jobs write: the
plan's ``remove_orphan_files`` steps stay pending (an in-flight writer's files look like orphans),
everything else runs. The timing is exact: the executor waits at pause points
(``PIITRACER_PAUSEPOINT``, test-only) after each source's delete committed, and resumes when the
writer has written (tests/support/concurrent_writer.py).

Asserts: every other user's appended row survives (count + checksum), the in-flight files too;
the verifier reports the subject's late rows as ``found`` in exactly the two sources; ``execute
--rerun`` (a new run of the completed plan, re-resolving the sources) erases them, the verifier
then reports every dataset erased, no file holds any subject value (the late PAN included), and
the audit chain verifies.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from byte_scan import find_values
from fault_lakehouse import ENV, execute, make_lake, rows_of
from spark_lakehouse import SUBJECT_PANS, SUBJECTS, checksum, spark_for

from piitracer.api import audit_log, verify_plan
from piitracer.model.verification import ErasureState
from paths import SUPPORT

TESTS = SUPPORT
LATE_PANS = ["0000-0000-0000-0008", "0000-0000-0000-0009"]  # subjects' PANs first written after the plan resolved
DT = "2026-11-01"


def batches() -> dict[str, list[list]]:
    """Other users' rows (ids and PANs no other row has) and late rows of the subjects."""
    def others(base: int, count: int) -> list[list]:
        return [[base + i, f"5500-{base // 1_000_000_000}-{i:04d}-2222", float(i), DT] for i in range(count)]
    return {
        "delta": others(9_100_000_000, 40) + [[SUBJECTS[0], SUBJECT_PANS[0], 1.0, DT], [SUBJECTS[0], LATE_PANS[0], 2.0, DT]],
        "iceberg": others(9_200_000_000, 40) + [[SUBJECTS[1], LATE_PANS[1], 3.0, DT]],
        "staged": others(9_300_000_000, 30) + [[SUBJECTS[2], SUBJECT_PANS[2], 4.0, DT]],
    }


def appended_others(rows: list[tuple], batch: list[list]) -> tuple[int, str]:
    ids = {r[0] for r in batch if r[0] not in SUBJECTS}
    return checksum(r for r in rows if r[0] in ids)


def expected_others(batch: list[list]) -> tuple[int, str]:
    return checksum(tuple(r) for r in batch if r[0] not in SUBJECTS)


def states(report) -> dict[str, str]:
    return {d.dataset: d.state.value for d in report.datasets}


def test_concurrent_appends_survive_and_late_subject_rows_are_found_then_erased_by_rerun(tmp_path: Path, warehouse: Path) -> None:
    spark = spark_for(warehouse)
    lake = make_lake(tmp_path, warehouse, spark, "writer_")
    src, people = f"{lake.ns}.src", "crm.people"
    # The pause points (and tests/support/concurrent_writer.py) name the two sources' deletes.
    assert [(s.id, s.dataset, s.action.value) for s in lake.plan.steps if s.id in ("s003", "s013")] == [
        ("s003", people, "delete_rows"), ("s013", src, "delete_rows")]
    control = tmp_path / "control"
    control.mkdir()
    data = batches()
    (tmp_path / "batches.json").write_text(json.dumps(data))
    env = {**ENV, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)])}
    writer = subprocess.Popen([sys.executable, str(TESTS / "concurrent_writer.py"), str(warehouse), lake.ns,
                               str(lake.locations[people]), str(control), str(tmp_path / "batches.json")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        run = execute(lake, resume=False, failpoint=None, flags=(), env_extra={
            "PIITRACER_PAUSEPOINT": "executor.after_commit@s003,executor.after_commit@s013",
            "PIITRACER_PAUSE_DIR": str(control)})
        assert run.returncode == 0, run.stderr[-3000:]
        assert (control / "staged.done").exists(), "the in-flight batch was written before the executor went on"
        staged = list((warehouse / lake.ns / "src" / "data" / "inflight-batch").rglob("*.parquet"))
        assert staged, "the in-flight writer's files survived the run (orphan removal stayed pending)"
        (control / "commit-staged.go").touch()
        _, err = writer.communicate(timeout=600)
        assert writer.returncode == 0, err[-3000:]
    finally:
        if writer.poll() is None:
            os.killpg(writer.pid, 9)
    with sqlite3.connect(f"file:{lake.journal}?mode=ro", uri=True) as db:
        journaled = dict(db.execute("SELECT step_id, state FROM steps WHERE plan_id = ?", (lake.plan.plan_id,)).fetchall())
    orphans = {s.id for s in lake.plan.steps if s.action.value == "remove_orphan_files"}
    assert {k: v for k, v in journaled.items() if v != "committed"} == {step: "pending" for step in orphans}

    spark.catalog.clearCache()
    src_rows, people_rows = rows_of(spark, lake, src), rows_of(spark, lake, people)
    for rows, batch in ((src_rows, data["iceberg"]), (src_rows, data["staged"]), (people_rows, data["delta"])):
        assert appended_others(rows, batch) == expected_others(batch), "another user's appended row was lost"
    assert checksum(r for r in src_rows if r[0] < 9_100_000_000 and r[0] not in SUBJECTS) == lake.keep[src]

    first = verify_plan(lake.ws, lake.plan)
    late = {d.dataset for d in first.datasets if d.state is ErasureState.FOUND}
    assert late == {src, people}, states(first)
    assert all(d.state in (ErasureState.ERASED, ErasureState.NOT_CHECKED) for d in first.datasets if d.dataset not in late), states(first)

    again = execute(lake, resume=False, failpoint=None, flags=("--rerun",))
    assert again.returncode == 0, again.stderr[-3000:]

    second = verify_plan(lake.ws, lake.plan)
    assert second.all_erased, states(second)
    spark.catalog.clearCache()
    src_rows, people_rows = rows_of(spark, lake, src), rows_of(spark, lake, people)
    for rows, batch in ((src_rows, data["iceberg"]), (src_rows, data["staged"]), (people_rows, data["delta"])):
        assert appended_others(rows, batch) == expected_others(batch), "another user's appended row was lost by the rerun"
    assert not [r for r in src_rows + people_rows if r[0] in SUBJECTS or r[1] in LATE_PANS]
    for dataset in (src, people):
        assert find_values(lake.locations[dataset], SUBJECTS + SUBJECT_PANS + LATE_PANS) == [], dataset
    with audit_log(lake.ws, key=ENV["PIITRACER_AUDIT_KEY"], create=False) as log:
        assert log.verify().ok
        runs = {e.body.get("run_id") for e in log.entries(plan_id=lake.plan.plan_id) if e.kind.value == "step"}
    assert len(runs) == 2, "the rerun is recorded as a run of its own"
