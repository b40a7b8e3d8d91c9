"""Issue 38's acceptance on object storage, as a new user would do it: an Iceberg table in a SQL
catalog (pyiceberg's ``sql`` catalog over SQLite) whose data sits on S3 (moto's server on
127.0.0.1), partitioned, written in several commits, with a tag on an old snapshot, and a derived
table made by a CTAS in the workspace's ``lineage.sql``. Configured only as pyiceberg users do it:
``PYICEBERG_CATALOG__PROD__*``, the S3 endpoint, region and key among them (``...__S3__*``). No
``AWS_*`` variable is set for the CLI's processes, and the S3 server checks the key, so piitracer's
own file access (the walk of the roots, metadata reads, the stray-metadata check, the byte scan,
the removals, the preflight) reaches the bucket only through the catalog's properties.

Through the real CLI: ``init``, ``catalog discover --write``, the identifiers confirmed in
piitracer.yaml, ``plan -o``, ``execute`` (killed once between the expiry's listing and its removal,
then ``--resume``), ``verify``. Spark has no S3 connector here, so every
Iceberg step runs through pyiceberg (the plan says so). Then: both tables planned, execute and
verify exit 0, the catalog's current view has no subject row and every other row is identical
(count and checksum), the tag is kept (moved to a snapshot without the subject, its max-ref-age
kept; the rewrite reported), and every object in the bucket, decoded (Parquet, Avro manifests, JSON
metadata), holds none of the subject's id, PAN, phone or Aadhaar reference; no credential is in the
plan, the journal or the audit log."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from byte_scan import find_values
from paths import REPO
from pyiceberg_lakehouse import CTAS, SUBJECT, SUBJECT_VALUES, TAG, TAG_AGE_MS, checksum, create_derived, create_payments, others
from s3_server import s3_server

CLI = [sys.executable, "-m", "piitracer.cli.main"]
BUCKET = "prod-lake"


@pytest.fixture(scope="module")
def s3():
    with s3_server(bucket=BUCKET, authenticated=True) as server:  # a wrong or missing key is refused
        yield server


@pytest.fixture
def catalog_environment(s3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The ``prod`` catalog as a pyiceberg user configures it: PYICEBERG_CATALOG__PROD__* only (no
    AWS_* variable in this process or the CLI's: the S3 server's own are removed until the test ends)."""
    for key in list(os.environ):
        if key.upper().startswith(("PYICEBERG_", "AWS_")):
            monkeypatch.delenv(key)
    environment = {
        "PYICEBERG_HOME": str(tmp_path / "pyiceberg-home"),
        "PYICEBERG_CATALOG__PROD__TYPE": "sql",
        "PYICEBERG_CATALOG__PROD__URI": f"sqlite:///{tmp_path}/catalog.db",
        "PYICEBERG_CATALOG__PROD__WAREHOUSE": f"s3://{BUCKET}/warehouse",
        "PYICEBERG_CATALOG__PROD__S3__ENDPOINT": s3.endpoint,
        "PYICEBERG_CATALOG__PROD__S3__REGION": "us-east-1",
        "PYICEBERG_CATALOG__PROD__S3__ACCESS_KEY_ID": s3.env["AWS_ACCESS_KEY_ID"],
        "PYICEBERG_CATALOG__PROD__S3__SECRET_ACCESS_KEY": s3.env["AWS_SECRET_ACCESS_KEY"],
    }
    (tmp_path / "pyiceberg-home").mkdir()
    for key, value in environment.items():
        monkeypatch.setenv(key, value)
    return environment


def prod_catalog():
    """The ``prod`` catalog as the environment configures it now (pyiceberg's ``load_catalog`` alone
    reads the environment pyiceberg was first imported under: another test's, in a full run)."""
    from pyiceberg.catalog import load_catalog

    from piitracer.formats.iceberg_catalogs import pyiceberg_configuration

    return load_catalog("prod", **pyiceberg_configuration()["prod"])


def cli(folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    assert not [key for key in {**os.environ, **env} if key.upper().startswith("AWS_")]  # the catalog's key only
    return subprocess.run([*CLI, "--workspace", str(folder), *args], capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": str(REPO), **env}, cwd=folder.parent)


def test_a_new_user_erases_and_proves_it_on_s3_through_pyiceberg(s3, catalog_environment, tmp_path: Path) -> None:
    catalog = prod_catalog()
    payments = create_payments(catalog)
    derived = create_derived(catalog, payments)
    kept = {"payments": checksum(others(payments.scan().to_arrow())), "derived": checksum(others(derived.scan().to_arrow())),
            "tag": checksum(others(payments.scan(snapshot_id=payments.metadata.refs[TAG].snapshot_id).to_arrow()))}
    assert find_values(s3.download(tmp_path / "before"), SUBJECT_VALUES)  # the subject is there to be erased

    # A new user: init, the CTAS that made the derived table, discovery, the identifiers confirmed.
    ws = tmp_path / "ws"
    made = subprocess.run([*CLI, "init", str(ws), "--warehouse-root", f"s3://{BUCKET}/", "--keys-dir", str(tmp_path / "keys")],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert made.returncode == 0, made.stderr
    env = dict(line.removeprefix("export ").split("=", 1) for line in made.stdout.splitlines() if line.startswith("export "))
    env = {key: value.strip("'\"") for key, value in env.items()}
    (ws / "lineage.sql").write_text(CTAS)
    config = (ws / "piitracer.yaml").read_text().replace("  sql: []", "  sql: [{path: lineage.sql, dialect: spark}]")
    (ws / "piitracer.yaml").write_text(config + "spark:\n  master: local[1]\n  driver_memory: 1g\n")
    discovered = cli(ws, env, "catalog", "discover", "--write")
    assert discovered.returncode == 0, discovered.stdout[-2000:] + discovered.stderr[-2000:]
    assert "not discovered" not in discovered.stderr, discovered.stderr  # the root s3://prod-lake/ walked too
    with (ws / "piitracer.yaml").open("a") as handle:
        handle.write("catalog:\n  fintech.payments:\n    identifiers: [user_id, pan, phone, aadhaar_ref]\n"
                     "    subject_key: user_id\n")

    plan_file = tmp_path / "plan.json"
    planned = cli(ws, env, "plan", "--wide", "--source", "fintech.payments.user_id", "--subject", str(SUBJECT["user_id"]),
                  "--request-id", "dsr-2026-0419", "--received-at", "2026-11-20T09:00:00Z", "-o", str(plan_file))
    assert planned.returncode == 0, planned.stdout[-3000:] + planned.stderr[-3000:]
    plan = json.loads(plan_file.read_text())
    datasets = {d["dataset"]: d["status"] for d in plan["datasets"]}
    assert datasets == {"fintech.payments": "erase", "fintech.payments_by_user": "erase"}
    steps = [(s["dataset"], s["action"], s.get("engine")) for s in plan["steps"]]
    assert {engine for _, _, engine in steps} == {"pyiceberg"}  # no S3 connector for Spark: every step on pyiceberg
    assert ("fintech.payments", "rewrite_ref", "pyiceberg") in steps and "via pyiceberg" in planned.stdout

    dry = cli(ws, env, "execute", str(plan_file), "--dry-run")
    assert dry.returncode == 0, dry.stdout[-2000:] + dry.stderr[-2000:]
    lines = [line for line in dry.stdout.splitlines() if line.startswith("s0")]
    assert len(lines) == len(steps) and all(": [pyiceberg] " in line for line in lines), dry.stdout
    assert not any(str(value) in dry.stdout for value in SUBJECT_VALUES)

    # The run is killed (SIGKILL) once the first expiry has listed and journaled the files it will
    # remove, before it removes any; the resumed run finishes it and counts what it removed.
    killed = cli(ws, {**env, "PIITRACER_FAILPOINT": "iceberg.pyiceberg.before_removal"}, "execute", str(plan_file),
                 "--no-concurrent-writers")
    assert killed.returncode == -9, killed.stdout[-2000:] + killed.stderr[-3000:]
    ran = cli(ws, env, "execute", str(plan_file), "--resume", "--no-concurrent-writers")
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert "complete" in ran.stdout

    # The catalog's current view: no subject row; every other row identical; the tag kept, moved.
    catalog = prod_catalog()
    payments, derived = catalog.load_table("fintech.payments"), catalog.load_table("fintech.payments_by_user")
    for table, name in ((payments, "payments"), (derived, "derived")):
        rows = table.scan().to_arrow()
        assert SUBJECT["user_id"] not in rows["user_id"].to_pylist()
        assert checksum(rows) == kept[name], name
    tag = payments.metadata.refs[TAG]
    assert tag.snapshot_ref_type.value == "tag" and tag.max_ref_age_ms == TAG_AGE_MS
    assert checksum(payments.scan(snapshot_id=tag.snapshot_id).to_arrow()) == kept["tag"]
    journal = sqlite3.connect(ws / ".piitracer" / "journal.sqlite")
    outcomes = {(dataset, action): json.loads(outcome) for dataset, action, outcome
                in journal.execute("SELECT dataset, action, outcome FROM steps")}
    rewrite = outcomes[("fintech.payments", "rewrite_ref")]["details"]
    assert rewrite["ref"] == TAG and rewrite["ref_rows_removed"] == 2 and rewrite["ref_snapshot_after"] == str(tag.snapshot_id)
    expired = outcomes[("fintech.payments", "expire_snapshots")]
    assert expired["files_removed"] == expired["details"]["unreferenced_files_removed"] > 0  # resumed, counted once

    # Every object in the bucket, decoded: none of the subject's values.
    assert find_values(s3.download(tmp_path / "after"), SUBJECT_VALUES) == []

    verified = cli(ws, env, "verify", str(plan_file), "--output", "json")
    assert verified.returncode == 0, verified.stdout[-3000:] + verified.stderr[-3000:]
    states = {item["dataset"]: item["state"] for item in json.loads(verified.stdout)["datasets"]}
    assert states == {"fintech.payments": "erased", "fintech.payments_by_user": "erased"}

    secrets = [catalog_environment["PYICEBERG_CATALOG__PROD__S3__SECRET_ACCESS_KEY"], s3.env["AWS_SECRET_ACCESS_KEY"]]
    for path in (plan_file, ws / ".piitracer" / "journal.sqlite", ws / ".piitracer" / "audit.sqlite"):
        data = path.read_bytes()
        assert all(f'"{secret}"'.encode() not in data and f"={secret}".encode() not in data for secret in secrets), path
