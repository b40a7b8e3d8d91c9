"""The verifier on real files (no mocks): each place bytes hide is planted and found with the
right kind, typed matching does not confuse 7000000001 with "17000000001" or 7000000001.0, the
verdicts follow the journal's step states, and the CLI exits 0/1 without printing a value."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

import piitracer
from piitracer.api import audit_log, plan_deletion, verify_plan, write_private
from piitracer.formats import delta as delta_eraser
from piitracer.executor.journal import COMMITTED, Journal
from piitracer.model.plan import Action, Subject
from piitracer.model.verification import ErasureState
from piitracer.verify import VerificationError
from piitracer.verify.decoders import scan_location
from piitracer.verify.values import ValueIndex
from piitracer.storage.locations import Location
from piitracer.storage.store import Store

STORE = Store()

SUBJECT = 7_000_000_001
PAN = "0000-0000-0000-0001"
RECEIVED = "2026-11-20T09:00:00Z"
CLI = [sys.executable, "-m", "piitracer.cli.main"]


def people(extra: int = 2000) -> pa.Table:
    """The subject holds the column minimums (the worst case for statistics)."""
    ids = [SUBJECT, SUBJECT] + [8_000_000_000 + i for i in range(extra)]
    pans = [PAN, PAN] + [f"4111-0000-{i:04d}-1111" for i in range(extra)]
    return pa.table({"user_id": pa.array(ids, pa.int64()), "pan": pans, "amount": [float(i) for i in range(extra + 2)]})


def ws_with(tmp_path: Path, fmt: str, location: Path) -> piitracer.Workspace:
    import yaml

    folder = tmp_path / "ws"
    (folder / "sql").mkdir(parents=True)
    (folder / "sql" / "none.sql").write_text("-- no pipelines\n")
    config = {"lineage": {"sql": [{"path": "sql"}]},
              "catalog": {"crm.people": {"format": fmt, "location": str(location), "columns": ["user_id", "pan", "amount"],
                                         "identifiers": ["user_id", "pan"], "subject_key": "user_id"}}}
    (folder / "piitracer.yaml").write_text(yaml.safe_dump(config))
    return piitracer.load_workspace(folder)


def plan_for(ws):
    return plan_deletion(ws, piitracer.build_lineage_graph(ws), ["crm.people.user_id"],
                         [Subject(value=str(SUBJECT), request_id="r1", received_at=RECEIVED)])


VALUES = {"crm.people.user_id": [SUBJECT], "crm.people.pan": [PAN]}


def states(plan, committed_actions) -> dict[str, str]:
    return {s.id: COMMITTED for s in plan.steps if s.action in committed_actions or s.action is Action.RESOLVE}


def kinds(result) -> set[str]:
    return {f.kind for f in result.findings}


# ---- typed matching -------------------------------------------------------------------------------

def test_an_int_subject_is_not_found_in_longer_text_or_a_float(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    folder.mkdir()
    pq.write_table(pa.table({"note": ["17000000001", "id 17000000001", "x7000000001.5"], "score": [7000000001.0, 1.0, 2.0],
                             "other": pa.array([17000000001, 1, 2], pa.int64())}), folder / "lookalikes.parquet")
    (folder / "notes.txt").write_text("ids: 17000000001, 7000000001.0, -7000000001\n")
    index = ValueIndex.build({"u": [SUBJECT]})
    assert scan_location(Location.parse(folder), index, STORE).hits == []
    # The same file with the real value, typed as an integer and as the exact text of it, is found.
    pq.write_table(pa.table({"user_id": pa.array([SUBJECT], pa.int64()), "as_text": [str(SUBJECT)],
                             "free": [f"user {SUBJECT} asked"]}), folder / "real.parquet")
    (folder / "more.txt").write_text(f"subject {SUBJECT}.\n")
    hits = {(h.file, h.where, h.kind) for h in scan_location(Location.parse(folder), index, STORE).hits}
    assert ("real.parquet", "column user_id", "data") in hits
    assert ("real.parquet", "column as_text", "data") in hits
    assert ("real.parquet", "column free (inside text)", "data") in hits
    assert ("real.parquet", "footer statistics min of user_id", "statistics") in hits
    assert ("more.txt", "raw bytes", "raw") in hits
    assert not [h for h in hits if h[0] in ("lookalikes.parquet", "notes.txt")]


# ---- Delta ----------------------------------------------------------------------------------------

def test_delta_delete_without_vacuum_keeps_old_file_log_stats_and_versions(tmp_path: Path) -> None:
    location = tmp_path / "people"
    write_deltalake(str(location), people())
    DeltaTable(str(location)).delete(f"user_id = {SUBJECT}")  # no vacuum, no log cleanup
    ws = ws_with(tmp_path, "delta", location)
    plan = plan_for(ws)

    report = verify_plan(ws, plan, VALUES, states(plan, {Action.DELETE_ROWS}))
    result = report.result("crm.people")
    assert result.state is ErasureState.PENDING
    by_kind = {f.kind: f for f in result.findings}
    assert by_kind["log_stats"].file.startswith("_delta_log/") and "minValues" in by_kind["log_stats"].where
    assert by_kind["data"].file.endswith(".parquet") and not by_kind["data"].file.startswith("_")
    assert by_kind["statistics"].file == by_kind["data"].file
    # delta-rs wrote the delete's predicate, value included, into the commit's operationParameters.
    assert by_kind["log"].where.endswith("commitInfo.operationParameters.predicate (inside text)")
    assert by_kind["snapshot"].where == "version 0"  # the current version holds no subject row
    assert {f.value_set for f in result.findings} == {"crm.people.user_id", "crm.people.pan"}
    assert "vacuum" in result.pending_until and "clean_delta_log" in result.pending_until
    assert result.snapshots_checked == 2 and result.files_scanned >= 4

    # Every planned step committed but the bytes are still there: found, not pending.
    done = verify_plan(ws, plan, VALUES, states(plan, set(Action))).result("crm.people")
    assert done.state is ErasureState.FOUND

    # The real physical erasure (the executor's vacuum, then its log and checkpoint cleanup) leaves nothing.
    erase_delta_files(location)
    clean = verify_plan(ws, plan, VALUES, states(plan, set(Action))).result("crm.people")
    assert clean.findings == (), [(f.file, f.where, f.kind) for f in clean.findings]
    assert clean.state is ErasureState.ERASED


def test_a_stray_file_in_an_underscore_folder_is_found_and_nothing_planned_removes_it(tmp_path: Path) -> None:
    location = tmp_path / "people"
    rest = people().filter(pa.compute.not_equal(people().column("user_id"), SUBJECT))
    write_deltalake(str(location), rest)
    (location / "_tmp").mkdir()
    pq.write_table(people().slice(0, 5), location / "_tmp" / "part-x.parquet")
    (location / "_tmp" / "export.csv").write_text(f"user_id,pan\n{SUBJECT},{PAN}\n")
    ws = ws_with(tmp_path, "delta", location)
    plan = plan_for(ws)
    result = verify_plan(ws, plan, VALUES, states(plan, {Action.DELETE_ROWS})).result("crm.people")
    assert result.state is ErasureState.FOUND  # pending steps exist, but none of them removes _tmp/
    places = {(f.file, f.kind) for f in result.findings}
    assert ("_tmp/part-x.parquet", "data") in places and ("_tmp/export.csv", "raw") in places
    assert {f.file.split("/")[0] for f in result.findings} == {"_tmp"}


def test_plain_parquet_pending_until_rewrite_then_erased(tmp_path: Path) -> None:
    location = tmp_path / "people"
    location.mkdir()
    pq.write_table(people(), location / "part-0.parquet")
    ws = ws_with(tmp_path, "parquet", location)
    plan = plan_for(ws)
    before = verify_plan(ws, plan, VALUES, states(plan, set())).result("crm.people")
    assert before.state is ErasureState.PENDING and "rewrite_files (not run)" in before.pending_until
    assert "snapshot" in kinds(before) and "data" in kinds(before)
    pq.write_table(people().slice(2), location / "part-0.parquet")
    after = verify_plan(ws, plan, VALUES, states(plan, set(Action))).result("crm.people")
    assert after.state is ErasureState.ERASED and after.snapshots_checked == 1


# ---- API and CLI ----------------------------------------------------------------------------------

def test_verify_needs_resolved_values(tmp_path: Path) -> None:
    location = tmp_path / "people"
    write_deltalake(str(location), people(10))
    ws = ws_with(tmp_path, "delta", location)
    with pytest.raises(VerificationError, match="piitracer execute"):
        verify_plan(ws, plan_for(ws))


def test_cli_exit_codes_and_no_value_in_output(tmp_path: Path) -> None:
    location = tmp_path / "people"
    write_deltalake(str(location), people(200))
    DeltaTable(str(location)).delete(f"user_id = {SUBJECT}")
    ws = ws_with(tmp_path, "delta", location)
    plan = plan_for(ws)
    plan_file = tmp_path / "plan.json"
    write_private(plan_file, plan.to_json())
    journal = Journal(ws.root / ".piitracer" / "journal.sqlite")
    journal.save_values(plan.plan_id, {"r1": VALUES})
    journal.start_run("run1", plan.plan_id, {})
    for step in plan.steps:
        journal.mark(plan.plan_id, "run1", step, COMMITTED)
    journal.close()

    def run(*args: str, key: bool = True, log_level: str = "WARNING") -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIITRACER_AUDIT")}
        if key:
            env["PIITRACER_AUDIT_KEY"] = "verify-test-audit-key-0123456789"
        return subprocess.run([*CLI, "--log-level", log_level, "--workspace", str(ws.root), "verify", str(plan_file), *args],
                              capture_output=True, text=True, timeout=120, env=env)

    no_key = run(key=False)  # every verification is recorded: without an audit key nothing is scanned
    assert no_key.returncode == 2 and "no audit key" in no_key.stderr
    assert run("--no-record", key=False).returncode == 1  # a read-only check needs no key

    found_text, found_json = run(), run("--output", "json")
    assert found_text.returncode == 1 and found_json.returncode == 1, found_text.stderr
    rows = [[c.strip() for c in line.strip("│").split("│")] for line in found_text.stdout.splitlines() if line.startswith("│")]
    assert [row[:2] for row in rows if row[0]] == [["crm.people", "found"]] and "_delta_log/" in found_text.stdout
    document = json.loads(found_json.stdout)
    assert document["datasets"][0]["state"] == "found" and document["datasets"][0]["findings"]
    # The same files decoded as Spark tasks: the same table and findings a person reads.
    in_tasks = run("--no-record", "--engine", "spark", key=False, log_level="INFO")
    assert in_tasks.returncode == 1, in_tasks.stderr
    assert "of 1 datasets with the spark engine" in in_tasks.stderr
    assert in_tasks.stdout.splitlines()[1:] == found_text.stdout.splitlines()[1:]  # all but the title's time
    assert "Parquet column chunks: " in in_tasks.stdout
    for output in (found_text.stdout + found_text.stderr, found_json.stdout):
        assert str(SUBJECT) not in output and PAN not in output

    erase_delta_files(location)
    erased = run()
    assert erased.returncode == 0, erased.stdout
    # What a person reads: one table row per dataset with its state (the table used to print None).
    rows = [[c.strip() for c in line.strip("│").split("│")] for line in erased.stdout.splitlines() if line.startswith("│")]
    assert [row[:2] for row in rows] == [["crm.people", "erased"]]
    assert "1 of 1 datasets done; complete" in erased.stdout
    log = audit_log(ws, key="verify-test-audit-key-0123456789", create=False)
    verdicts = [e.body["datasets"][0]["state"] for e in log.entries(plan_id=plan.plan_id) if e.kind.value == "verification"]
    log.close()
    assert verdicts[-2:] == ["found", "erased"]  # the recorded runs, in order (not the --no-record one)

    (ws.root / ".piitracer" / "journal.sqlite").unlink()
    error = run()
    assert error.returncode == 2 and "piitracer execute" in error.stderr


def erase_delta_files(location: Path) -> None:
    """The executor's physical Delta steps: vacuum, then the log and checkpoint cleanup."""
    delta_eraser.vacuum(Location.parse(location), STORE)
    delta_eraser.clean_delta_log(Location.parse(location), STORE)


# ---- Iceberg (Spark local mode, the real runtime jar) ------------------------------------------------

def iceberg_setup(tmp_path: Path, warehouse: Path, prefix: str):
    from spark_lakehouse import build, new_namespace, spark_for, workspace

    spark = spark_for(warehouse)
    ns = new_namespace(prefix)
    build(spark, warehouse, ns)
    ws = piitracer.load_workspace(workspace(tmp_path, warehouse, ns))
    from spark_lakehouse import SUBJECTS

    subjects = [Subject(value=str(u), request_id=f"r{u}", received_at=RECEIVED) for u in SUBJECTS]
    plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), [f"{ns}.src.user_id"], subjects)
    return spark, ns, ws, plan


def test_iceberg_delete_without_maintenance_leaves_data_files_bounds_and_snapshots(tmp_path: Path, warehouse: Path) -> None:
    from spark_lakehouse import SUBJECT_PANS, SUBJECTS

    spark, ns, ws, plan = iceberg_setup(tmp_path, warehouse, "vplace")
    ids = ", ".join(str(u) for u in SUBJECTS)
    spark.sql(f"DELETE FROM lake.{ns}.src WHERE user_id IN ({ids})")  # merge-on-read: position deletes
    spark.sql(f"DELETE FROM lake.{ns}.cow WHERE customer_id IN ({ids})")  # copy-on-write: files replaced
    values = {f"{ns}.src.user_id": SUBJECTS, f"{ns}.src.pan": SUBJECT_PANS}
    deleted = {s.id: COMMITTED for s in plan.steps if s.action in (Action.RESOLVE, Action.DELETE_ROWS) and s.dataset != f"{ns}.clone"}

    report = verify_plan(ws, plan, values, deleted)

    src, cow = report.result(f"{ns}.src"), report.result(f"{ns}.cow")
    assert src.state is ErasureState.PENDING and cow.state is ErasureState.PENDING
    # MoR: the data files the position deletes point at still hold the rows (in the live snapshot).
    assert [f for f in src.findings if f.kind == "data" and f.file.startswith("data/") and f.where == "column user_id"]
    # The subject is the column minimum: manifests keep it as a lower bound.
    bounds = [f for f in src.findings if f.kind == "manifest_bound"]
    assert bounds and all(f.file.startswith("metadata/") and f.file.endswith(".avro") for f in bounds)
    assert {f.value_set for f in bounds} == {f"{ns}.src.user_id", f"{ns}.src.pan"}
    assert [f for f in src.findings if f.kind == "snapshot" and "(current)" not in f.where]  # pre-delete snapshots
    assert not [f for f in src.findings if f.kind == "snapshot" and "(current)" in f.where]
    assert "rewrite_data_files (not run)" in src.pending_until and "expire_snapshots (not run)" in src.pending_until
    # CoW: the replaced data file is stale (only pre-delete snapshots use it) until expiry.
    stale = [f for f in cow.findings if f.kind == "data"]
    assert stale and "expire_snapshots (not run)" in cow.pending_until
    assert cow.snapshots_checked >= 2 and cow.files_scanned > 5
    # Every planned step marked committed while the bytes are still there: found, not pending.
    everything = {s.id: COMMITTED for s in plan.steps}
    assert verify_plan(ws, plan, values, everything).result(f"{ns}.src").state is ErasureState.FOUND


def test_iceberg_after_execute_is_erased_and_orphans_step_is_judged_by_what_remains(tmp_path: Path, warehouse: Path) -> None:
    from executor_runs import run_plan
    from piitracer.executor.runner import ExecuteOptions
    from piitracer.model.settings import TaskEngine
    from piitracer.verify.engines import JOB_GROUP

    spark, ns, ws, plan = iceberg_setup(tmp_path, warehouse, "vexec")
    summary = run_plan(ws, plan, ExecuteOptions())  # no --no-concurrent-writers: orphan steps pending
    assert summary.status == "incomplete"
    step = {(s.dataset, s.action): s.id for s in plan.steps}
    report = verify_plan(ws, plan)
    states_seen = {d.dataset: d.state for d in report.datasets}
    # What really happens: expire_snapshots leaves no file behind for cow, so its pending orphan
    # removal has nothing left to remove: erased. The shallow clone's expiry deletes no file (it
    # would delete the source's), so its own expired files wait for its orphan removal: pending.
    assert states_seen[f"{ns}.cow"] is ErasureState.ERASED
    clone = report.result(f"{ns}.clone")
    assert clone.state is ErasureState.PENDING
    assert clone.pending_until.startswith(f"{step[(f'{ns}.clone', Action.REMOVE_ORPHAN_FILES)]} remove_orphan_files")
    # The source's expiry waits for the shallow clone's orphan removal (the clone shares its files),
    # so the pre-delete manifests (subject = column minimum) remain: pending on that blocked step.
    src = report.result(f"{ns}.src")
    assert src.state is ErasureState.PENDING
    assert src.pending_until.startswith(f"{step[(f'{ns}.src', Action.EXPIRE_SNAPSHOTS)]} expire_snapshots (blocked)")
    # Its pre-delete snapshots, their data files and manifests all remain until that expiry (the
    # clone's expiry no longer deletes the files the two share).
    assert src.findings and {f.kind for f in src.findings} == {"data", "statistics", "manifest_bound", "snapshot"}
    assert not report.all_erased
    # The same files decoded as Spark tasks (local mode here; tests/integration/test_spark_cluster.py on a
    # standalone cluster) give the same report: this plan is small, so auto decodes in the driver.
    tracker = spark.sparkContext.statusTracker()
    before = len(tracker.getJobIdsForGroup(JOB_GROUP))
    in_tasks = verify_plan(ws, plan, engine=TaskEngine.SPARK)
    assert len(tracker.getJobIdsForGroup(JOB_GROUP)) == before + 1  # one job for every dataset's files
    assert in_tasks.model_copy(update={"checked_at": report.checked_at}) == report

    resumed = run_plan(ws, plan, ExecuteOptions(resume=True, no_concurrent_writers=True))
    assert resumed.status == "complete"
    final = verify_plan(ws, plan)
    assert {d.dataset: d.state for d in final.datasets} == {d: ErasureState.ERASED for d in states_seen}
    assert final.all_erased
    assert all(d.files_scanned > 0 and d.snapshots_checked >= 1 and d.findings == () for d in final.datasets)


def test_auto_engine_decodes_in_spark_tasks_from_the_configured_file_count_or_size(tmp_path: Path) -> None:
    from piitracer.model.settings import TaskEngine, FileWorkSettings
    from piitracer.storage.locations import Location
    from piitracer.storage.store import Store
    from piitracer.verify.engines import ScanRequest, SparkFileScanner, choose_scanner, list_requests

    for number, size in enumerate((10, 20, 30)):
        (tmp_path / "t" / "_delta_log").mkdir(parents=True, exist_ok=True)
        (tmp_path / "t" / ("_delta_log" if number else "") / f"f{number}").write_bytes(b"x" * size)
    listing = list_requests([ScanRequest(Location.parse(tmp_path / "t"), ("s",))], Store())
    assert (listing.file_count, listing.byte_count) == (3, 60)  # hidden and underscore folders included
    spark = SparkFileScanner(lambda: pytest.fail("choosing must not start Spark"))

    def chosen(engine=None, **limits) -> str:
        return choose_scanner(FileWorkSettings(**limits), listing, spark, engine).name

    assert chosen(spark_min_files=3) == "spark"
    assert chosen(spark_min_files=4, spark_min_bytes=60) == "spark"
    assert chosen(spark_min_files=4, spark_min_bytes=61) == "driver"
    assert chosen(TaskEngine.DRIVER, spark_min_files=1) == "driver"
    assert chosen(TaskEngine.SPARK, spark_min_files=4, spark_min_bytes=61) == "spark"


def test_footer_statistics_prove_chunks_without_decoding_and_never_hide_a_value(tmp_path: Path) -> None:
    """An integer chunk whose exact min/max exclude every searched value, and a chunk of a type no
    searched value has (a double, a boolean), are not decoded; a string chunk always is (a value can
    sit inside a longer text whatever its bounds). Checked against a brute-force search of 60
    random files: pruning never loses a place, and the counts are exact."""
    import random

    from piitracer.storage.locations import Location
    from piitracer.storage.store import Store
    from piitracer.verify.decoders import scan_location
    from piitracer.verify.values import ValueIndex

    subject = 7_000_000_001
    folder = tmp_path / "t"
    folder.mkdir()
    # Two row groups: the first's ids exclude the subject, the second's range holds it (not equal).
    pq.write_table(pa.table({"user_id": pa.array([10, 20, 7_000_000_000, 7_000_000_002], pa.int64()),
                             "amount": [1.0, 2.0, 3.0, 4.0], "ok": [True, False, True, True],
                             "note": ["a", f"called by {subject} today", "c", "d"]}), folder / "a.parquet", row_group_size=2)
    index = ValueIndex.build({"s.user_id": [subject]})
    scan = scan_location(Location.parse(folder), index, Store())
    assert {(h.where, h.kind) for h in scan.hits} == {("column note (inside text)", "data"),
                                                      ("footer statistics max of note", "statistics")}
    # Row group 1: user_id (min/max), amount and ok (type) proven, note decoded (its dictionary
    # holds the subject inside text); group 2: user_id's range admits the subject but its
    # dictionary does not hold it, amount and ok by type, note by its dictionary.
    assert (scan.chunks.proven, scan.chunks.decoded) == (7, 1)
    assert scan.chunks.by_method == {"statistics": 1, "type": 4, "dictionary": 2, "decoded": 1}

    rng = random.Random(5)
    expected: set[tuple[str, str]] = set()
    for number in range(60):
        ids = [rng.randrange(1, 400) for _ in range(rng.randrange(1, 30))]
        pq.write_table(pa.table({"user_id": pa.array(ids, pa.int32()), "day": pa.array(ids, pa.date32())}),
                       folder / f"r{number:02d}.parquet", row_group_size=rng.randrange(1, 8))
        searched = {7, 150, 399}
        if set(ids) & searched:
            expected |= {(f"r{number:02d}.parquet", "column user_id")}
    index = ValueIndex.build({"s.user_id": [7, 150, 399]})
    scan = scan_location(Location.parse(folder), index, Store(), [f"r{n:02d}.parquet" for n in range(60)])
    assert {(h.file, h.where) for h in scan.hits if h.kind == "data"} == expected
    assert scan.chunks.proven > 0 and scan.chunks.decoded > 0  # dates: no date searched, always proven
