"""One lakehouse holding every format the executor erases, so one plan exercises every step kind:
an Iceberg merge-on-read source and a copy-on-write copy (Spark, the real Iceberg jar), a Delta
source and a Delta copy (delta-rs), a Hive-partitioned Parquet folder and an archive of weekly
Parquet exports. The same subjects are in both sources; their values are every column's minimum
(the worst case: statistics and manifest bounds keep them)."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import delta_parquet_lakehouse as dp
import pyarrow.parquet as pq
import spark_lakehouse as sl
import yaml
from deltalake import DeltaTable
from spark_lakehouse import SUBJECT_PANS, SUBJECTS, checksum, new_namespace, table_rows, record_made_plan

import piitracer
from piitracer.audit import load_audit_key
from piitracer.api import seal_plan, plan_deletion, write_private
from piitracer.model.plan import DeletionPlan, Subject

CLI = [sys.executable, "-m", "piitracer.cli.main"]
# Every execution is recorded in the audit trail: the CLI refuses to run without a key.
ENV = {**os.environ, "PIITRACER_AUDIT_KEY": "fault-test-audit-key-0123456789"}
for _name in ("PIITRACER_FAILPOINT", "PIITRACER_PAUSEPOINT"):
    ENV.pop(_name, None)

# Step ids of the combined plan: s001-s002 resolve, s003-s006 crm.people (delete, purge deletion
# vectors, vacuum, clean log), s007 archive rewrite, s008 cards rewrite, s009-s012
# crm.people_copy, s013-s017 Iceberg merge-on-read src (delete, rewrite_data_files,
# rewrite_manifests, expire, orphans), s018-s021 Iceberg copy-on-write cow (delete,
# rewrite_manifests, expire, orphans). Ties in the plan's order go by dataset name: the namespace
# must sort after "crm" (make_lake checks the layout).
LAYOUT = [("crm.people", "resolve"), ("{ns}.src", "resolve"),
          *[("crm.people", a) for a in ("delete_rows", "purge_deletion_vectors", "vacuum", "clean_delta_log")],
          ("archive.people_weekly", "rewrite_archive"), ("crm.cards", "rewrite_files"),
          *[("crm.people_copy", a) for a in ("delete_rows", "purge_deletion_vectors", "vacuum", "clean_delta_log")],
          *[("{ns}.src", a) for a in ("delete_rows", "rewrite_data_files", "rewrite_manifests", "expire_snapshots", "remove_orphan_files")],
          *[("{ns}.cow", a) for a in ("delete_rows", "rewrite_manifests", "expire_snapshots", "remove_orphan_files")]]
STEPS = len(LAYOUT)
ICEBERG = ("src", "cow")
LOG_RETENTION, PEOPLE_LOG_RETENTION = "delta.logRetentionDuration", "interval 7 days"
OTHERS = ("crm.people", "crm.people_copy", "crm.cards", "archive.people_weekly")


def build(spark, warehouse: Path, ns: str, root: Path) -> dict[str, Path]:
    """Write every table; returns dataset id -> location (Iceberg ids are ``<ns>.src``/``<ns>.cow``).
    The merge-on-read source is format v3: its DELETE writes deletion vectors (Puffin), so the kills
    land on vectors being written and applied."""
    v3 = sl.mor_properties().replace("'format-version'='2'", "'format-version'='3'")
    spark.sql(f"CREATE TABLE lake.{ns}.src (user_id BIGINT, pan STRING, amount DOUBLE, dt STRING) USING iceberg "
              f"PARTITIONED BY (dt) TBLPROPERTIES ({v3})")
    data = sl.rows()
    for part in (data[:700], data[700:]):  # two commits: several data files per partition
        spark.createDataFrame(part, "user_id BIGINT, pan STRING, amount DOUBLE, dt STRING").writeTo(f"lake.{ns}.src").append()
    spark.sql(f"CREATE TABLE lake.{ns}.cow (customer_id BIGINT, pan STRING, amount DOUBLE) USING iceberg TBLPROPERTIES ({sl.cow_properties()})")
    spark.sql(f"INSERT INTO lake.{ns}.cow SELECT user_id, pan, amount FROM lake.{ns}.src")
    locations = dp.build(root)
    # A table setting of its own, which clean_delta_log overrides and must put back even when killed.
    DeltaTable(str(locations["crm.people"])).alter.set_table_properties({LOG_RETENTION: PEOPLE_LOG_RETENTION})
    locations.update({f"{ns}.{name}": warehouse / ns / name for name in ICEBERG})
    return locations


def workspace(tmp_path: Path, warehouse: Path, ns: str, locations: dict[str, Path]) -> Path:
    """Both lakehouses' catalogs and SQL lineage in one workspace."""
    folder = sl.workspace(tmp_path / "iceberg", warehouse, ns)
    iceberg = yaml.safe_load((folder / "piitracer.yaml").read_text())["catalog"]
    del iceberg[f"{ns}.clone"]  # its steps duplicate the source's kinds: not worth their time here
    iceberg_sql = (folder / "sql" / "pipelines.sql").read_text()
    folder = dp.workspace(tmp_path / "delta", warehouse, locations)
    other = yaml.safe_load((folder / "piitracer.yaml").read_text())["catalog"]
    other_sql = (folder / "sql" / "pipelines.sql").read_text()
    return sl.write_workspace(tmp_path / "ws", warehouse, {**iceberg, **other}, iceberg_sql + other_sql)


def sources(ns: str) -> list[str]:
    return [f"{ns}.src.user_id", "crm.people.user_id"]


@dataclass
class Lake:
    ns: str
    ws: piitracer.Workspace
    plan: DeletionPlan
    plan_file: Path
    locations: dict[str, Path]
    keep: dict[str, tuple[int, str]]  # dataset -> checksum of its non-subject rows
    subject_rows: dict[str, int]  # dataset -> the subjects' rows in it (what an uninterrupted run deletes)
    untouched: dict[str, str]  # cards files without a subject -> sha256

    @property
    def journal(self) -> Path:
        return self.ws.root / ".piitracer" / "journal.sqlite"


def is_subject(row: tuple) -> bool:
    return any(v in SUBJECTS or v in SUBJECT_PANS for v in row)


def rows_of(spark, lake: Lake, dataset: str) -> list[tuple]:
    location = lake.locations[dataset]
    if dataset.startswith(lake.ns + "."):
        spark.sql(f"REFRESH TABLE lake.{dataset}")
        return table_rows(spark, f"lake.{dataset}")
    if dataset in ("crm.people", "crm.people_copy"):
        return [tuple(r.values()) for r in DeltaTable(str(location)).to_pyarrow_table().to_pylist()]
    return [tuple(r.values()) for r in pq.read_table(str(location)).to_pylist()]


def digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*.parquet"))}


def make_lake(tmp_path: Path, warehouse: Path, spark, prefix: str) -> Lake:
    ns = new_namespace(prefix)
    locations = build(spark, warehouse, ns, tmp_path / "lake")
    ws = piitracer.load_workspace(workspace(tmp_path, warehouse, ns, locations))
    subjects = [Subject(value=str(u), request_id=f"r{u}", received_at="2026-11-20T09:00:00Z") for u in SUBJECTS]
    plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), sources(ns), subjects)
    layout = [(dataset.format(ns=ns), action) for dataset, action in LAYOUT]
    assert [(s.dataset, s.action.value) for s in plan.steps] == layout, "the tests' step ids assume this order"
    assert [s.id for s in plan.steps] == [f"s{n:03d}" for n in range(1, STEPS + 1)]
    plan = seal_plan(plan, load_audit_key(ENV["PIITRACER_AUDIT_KEY"]))  # the CLI runs sealed plans only
    plan_file = tmp_path / "plan.json"
    write_private(plan_file, plan.to_json())
    record_made_plan(ws, plan, ENV["PIITRACER_AUDIT_KEY"])
    lake = Lake(ns, ws, plan, plan_file, locations, {}, {}, {})
    for dataset in locations:
        rows = rows_of(spark, lake, dataset)
        lake.keep[dataset] = checksum(r for r in rows if not is_subject(r))
        lake.subject_rows[dataset] = sum(1 for r in rows if is_subject(r))
        assert lake.subject_rows[dataset] > 0, dataset  # the test can fail: every dataset has rows to erase
    cards = locations["crm.cards"]
    lake.untouched = {f: d for f, d in digests(cards).items()
                      if not set(pq.read_table(cards / f, columns=["pan"]).column("pan").to_pylist()) & set(SUBJECT_PANS)}
    assert lake.untouched and len(lake.untouched) < len(digests(cards))
    return lake


def execute(lake: Lake, resume: bool, failpoint: str | None, flags: tuple[str, ...] = ("--no-concurrent-writers",),
            env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The CLI in its own session (process group: it and its JVM), optionally armed to die."""
    env = {**ENV, **(env_extra or {})}
    if failpoint:
        env["PIITRACER_FAILPOINT"] = failpoint
    command = [*CLI, "--workspace", str(lake.ws.root), "execute", str(lake.plan_file), *flags]
    process = subprocess.Popen(command + (["--resume"] if resume else []), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True, env=env)
    try:
        out, err = process.communicate(timeout=900)
    finally:
        if process.poll() is None:  # only our own group, on a hang
            os.killpg(process.pid, signal.SIGKILL)
    if failpoint:  # the JVM died with it: nothing of the group is left
        deadline = time.monotonic() + 20
        while _group_alive(process.pid):
            assert time.monotonic() < deadline, f"{failpoint}: processes of the killed group are still running"
            time.sleep(0.1)
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
