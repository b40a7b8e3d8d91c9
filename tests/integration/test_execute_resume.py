"""A run killed with SIGKILL after step k (the real CLI in a subprocess, its whole process group,
JVM included) and resumed ends in the same state as an uninterrupted run, for several k."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from byte_scan import find_values
from spark_lakehouse import SUBJECT_PANS, SUBJECTS, build, checksum, new_namespace, spark_for, table_rows, workspace, record_made_plan

import piitracer
from piitracer.audit import load_audit_key
from piitracer.api import seal_plan, audit_log, plan_deletion, write_private
from piitracer.model.plan import Subject

CLI = [sys.executable, "-m", "piitracer.cli.main"]
# Every execution is recorded in the audit trail: the CLI refuses to run without a key.
ENV = {**os.environ, "PIITRACER_AUDIT_KEY": "resume-test-audit-key-0123456789"}


def committed(journal: Path) -> int:
    if not journal.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{journal}?mode=ro", uri=True, timeout=1) as db:
            return db.execute("SELECT count(*) FROM steps WHERE state = 'committed'").fetchone()[0]
    except sqlite3.OperationalError:  # the writer holds the lock or the schema is not there yet
        return 0


def run_killed_after(ws_root: Path, plan_file: Path, k: int) -> None:
    journal = ws_root / ".piitracer" / "journal.sqlite"
    process = subprocess.Popen([*CLI, "--workspace", str(ws_root), "execute", str(plan_file), "--no-concurrent-writers"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, env=ENV)
    deadline = time.monotonic() + 300
    while committed(journal) < k:
        assert process.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline, "no progress"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


# One kill point here (polling the journal, no failpoint hooks): tests/integration/test_fault_injection.py
# kills at every kind of step boundary and mid-step with failpoints; CI time is spent there.
@pytest.mark.parametrize("k", [6])
def test_killed_and_resumed_equals_uninterrupted(tmp_path: Path, warehouse: Path, k: int) -> None:
    spark = spark_for(warehouse)
    ns = new_namespace(f"kill{k}_")
    build(spark, warehouse, ns)
    ws = piitracer.load_workspace(workspace(tmp_path, warehouse, ns))
    keep = {name: checksum(r for r in table_rows(spark, f"lake.{ns}.{name}") if r[0] not in SUBJECTS) for name in ("src", "cow", "clone")}
    subjects = [Subject(value=str(u), request_id=f"r{u}", received_at="2026-11-20T09:00:00Z") for u in SUBJECTS]
    plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), [f"{ns}.src.user_id"], subjects)
    plan = seal_plan(plan, load_audit_key(ENV["PIITRACER_AUDIT_KEY"]))  # the CLI runs sealed plans only
    plan_file = tmp_path / "plan.json"
    write_private(plan_file, plan.to_json())
    record_made_plan(ws, plan, ENV["PIITRACER_AUDIT_KEY"])

    run_killed_after(ws.root, plan_file, k)
    journal = ws.root / ".piitracer" / "journal.sqlite"
    assert k <= committed(journal) < len(plan.steps), "killed part-way"
    resumed = subprocess.run([*CLI, "--workspace", str(ws.root), "execute", str(plan_file), "--resume", "--no-concurrent-writers"],
                             capture_output=True, text=True, timeout=600, env=ENV)
    assert resumed.returncode == 0, resumed.stderr[-2000:]

    spark.catalog.clearCache()
    for name in ("src", "cow", "clone"):
        spark.sql(f"REFRESH TABLE lake.{ns}.{name}")
        assert checksum(table_rows(spark, f"lake.{ns}.{name}")) == keep[name], f"{name}: rows differ from an uninterrupted run"
        assert find_values(warehouse / ns / name, SUBJECTS + SUBJECT_PANS) == [], f"{name}: subject bytes remain"
    with sqlite3.connect(journal) as db:
        states = dict(db.execute("SELECT step_id, state FROM steps WHERE plan_id = ?", (plan.plan_id,)).fetchall())
        runs = db.execute("SELECT status FROM runs ORDER BY started_at").fetchall()
    assert states == {step.id: "committed" for step in plan.steps}
    assert [r[0] for r in runs] == ["running", "complete"]  # the killed run never finished
    # The audit trail of both runs is intact and ends with every step committed.
    with audit_log(ws, key=ENV["PIITRACER_AUDIT_KEY"], create=False) as log:
        assert log.verify().ok
        last_state = {e.body["step_id"]: e.body["state"] for e in log.entries(plan_id=plan.plan_id) if e.kind.value == "step"}
    assert last_state == {step.id: "committed" for step in plan.steps}
