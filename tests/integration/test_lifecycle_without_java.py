"""The whole lifecycle with no Java on the machine (issue 51): the seed scene — Iceberg
``fintech.payments`` (partitioned, several commits, a tag on an old snapshot) and the derived
``fintech.payments_by_user``, in the Iceberg JDBC catalog's tables in PostgreSQL (pyiceberg's ``sql``
catalog, psycopg2, the password only in ``PGPASSWORD``), data on the S3 server — erased through the
real CLI by processes whose ``PATH`` holds no ``java`` and whose environment has no ``JAVA_HOME``:
``init``, ``catalog discover --write``, ``plan``, ``execute --dry-run`` (which says no step starts
Spark), ``execute``, ``verify``, ``requests close``, ``audit verify``; then ``guard scan`` (issue 52) on
that catalog and bucket: a backfill of the subject's row is found in the new file alone and reopened,
a decoy beside it is not.

The test can fail: the same environment is first shown unable to start Spark at all, so any step
that needed a JVM would fail the command. Then the bucket's every object, decoded, holds none of
the subject's values, and every other row is there (count and checksum)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from byte_scan import find_values
from paths import REPO
from pyiceberg_lakehouse import CTAS, SUBJECT, SUBJECT_VALUES, TAG, checksum, create_derived, create_payments, others
from s3_server import s3_server

CLI = [sys.executable, "-m", "piitracer.cli.main"]
BUCKET = "nojava-lake"
PASSWORD = "only-in-the-environment-5c1e"
REQUEST = "dsr-2026-0512"


@pytest.fixture(scope="module")
def s3():
    with s3_server(bucket=BUCKET, authenticated=True) as server:
        yield server


@pytest.fixture
def no_java(tmp_path: Path) -> dict[str, str]:
    """An environment with no Java: ``PATH`` is an empty folder (the CLI is started by its absolute
    interpreter path), no ``JAVA_HOME``, no Spark variables."""
    empty = tmp_path / "bin"
    empty.mkdir()
    assert shutil.which("java", path=str(empty)) is None
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("JAVA_HOME", "SPARK_HOME", "PATH") and not key.startswith(("PYSPARK_", "PYICEBERG_", "AWS_"))}
    return {**environment, "PATH": str(empty), "PYTHONPATH": str(REPO)}


@pytest.fixture
def catalog_environment(s3, postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The ``prod`` catalog as a pyiceberg user configures it: PostgreSQL's JDBC catalog tables, S3's
    endpoint and key in the catalog's own properties (no AWS_* variable anywhere)."""
    database = postgres.create_database("nojava")
    user = postgres.create_role("nojava_etl", PASSWORD, database)
    for key in list(os.environ):
        if key.upper().startswith(("PYICEBERG_", "AWS_")):
            monkeypatch.delenv(key)
    environment = {
        "PYICEBERG_HOME": str(tmp_path / "pyiceberg-home"),
        "PYICEBERG_CATALOG__PROD__TYPE": "sql",
        "PYICEBERG_CATALOG__PROD__URI": postgres.sqlalchemy_uri(database, user),
        "PYICEBERG_CATALOG__PROD__WAREHOUSE": f"s3://{BUCKET}/warehouse",
        "PYICEBERG_CATALOG__PROD__S3__ENDPOINT": s3.endpoint,
        "PYICEBERG_CATALOG__PROD__S3__REGION": "us-east-1",
        "PYICEBERG_CATALOG__PROD__S3__ACCESS_KEY_ID": s3.env["AWS_ACCESS_KEY_ID"],
        "PYICEBERG_CATALOG__PROD__S3__SECRET_ACCESS_KEY": s3.env["AWS_SECRET_ACCESS_KEY"],
        "PGPASSWORD": PASSWORD,
    }
    (tmp_path / "pyiceberg-home").mkdir()
    for key, value in environment.items():
        monkeypatch.setenv(key, value)
    return environment


def run(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=600, env=env, cwd=cwd)


def said(done: subprocess.CompletedProcess) -> str:
    return done.stdout[-3000:] + done.stderr[-3000:]


def test_the_seed_scene_is_erased_proven_and_closed_with_no_java(s3, catalog_environment, no_java, tmp_path: Path) -> None:
    from pyiceberg.catalog import load_catalog

    from piitracer.formats.iceberg_catalogs import pyiceberg_configuration

    # The test can fail: in this environment Spark cannot start (a resolve on Spark would fail so).
    spark = subprocess.run([sys.executable, "-c", "from pyspark.sql import SparkSession; "
                            "SparkSession.builder.master('local[1]').getOrCreate()"],
                           capture_output=True, text=True, timeout=300, env=no_java, cwd=tmp_path)
    assert spark.returncode != 0

    catalog = load_catalog("prod", **pyiceberg_configuration()["prod"])
    payments = create_payments(catalog)
    derived = create_derived(catalog, payments)
    kept = {"payments": checksum(others(payments.scan().to_arrow())), "derived": checksum(others(derived.scan().to_arrow()))}
    assert find_values(s3.download(tmp_path / "before"), SUBJECT_VALUES)

    env = {**no_java, **catalog_environment}
    ws = tmp_path / "ws"
    made = run(env, "init", str(ws), "--warehouse-root", f"s3://{BUCKET}/", "--keys-dir", str(tmp_path / "keys"), cwd=tmp_path)
    assert made.returncode == 0, said(made)
    exports = dict(line.removeprefix("export ").split("=", 1) for line in made.stdout.splitlines() if line.startswith("export "))
    env.update({key: value.strip("'\"") for key, value in exports.items()})
    (ws / "lineage.sql").write_text(CTAS)
    config = (ws / "piitracer.yaml").read_text().replace("  sql: []", "  sql: [{path: lineage.sql, dialect: spark}]")
    (ws / "piitracer.yaml").write_text(config)
    at = ["--workspace", str(ws)]
    discovered = run(env, *at, "catalog", "discover", "--write", cwd=tmp_path)
    assert discovered.returncode == 0, said(discovered)
    with (ws / "piitracer.yaml").open("a") as handle:
        handle.write("catalog:\n  fintech.payments:\n    identifiers: [user_id, pan, phone, aadhaar_ref]\n"
                     "    subject_key: user_id\n")

    plan_file = tmp_path / "plan.json"
    planned = run(env, *at, "plan", "--source", "fintech.payments.user_id", "--subject", str(SUBJECT["user_id"]),
                  "--request-id", REQUEST, "--received-at", "2026-11-20T09:00:00Z", "-o", str(plan_file), cwd=tmp_path)
    assert planned.returncode == 0, said(planned)
    steps = json.loads(plan_file.read_text())["steps"]
    assert {s["dataset"] for s in steps} == {"fintech.payments", "fintech.payments_by_user"}
    assert {s.get("engine") for s in steps} == {"pyiceberg"}

    dry = run(env, *at, "execute", str(plan_file), "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0, said(dry)
    (resolve,) = [line for line in dry.stdout.splitlines() if " resolve: " in line]
    assert "with no Spark" in resolve and "starts Spark" not in dry.stdout

    executed = run(env, *at, "execute", str(plan_file), "--no-concurrent-writers", cwd=tmp_path)
    assert executed.returncode == 0, said(executed)
    verified = run(env, *at, "verify", str(plan_file), "--output", "json", cwd=tmp_path)
    assert verified.returncode == 0, said(verified)
    states = {item["dataset"]: item["state"] for item in json.loads(verified.stdout)["datasets"]}
    assert states == {"fintech.payments": "erased", "fintech.payments_by_user": "erased"}
    closed = run(env, *at, "requests", "close", REQUEST, "--now", "the no-Java acceptance", "--output", "json", cwd=tmp_path)
    assert closed.returncode == 0, said(closed)
    assert json.loads(closed.stdout)["state"] == "closed"
    audited = run(env, *at, "audit", "verify", cwd=tmp_path)
    assert audited.returncode == 0, said(audited)

    catalog = load_catalog("prod", **pyiceberg_configuration()["prod"])
    payments, derived = catalog.load_table("fintech.payments"), catalog.load_table("fintech.payments_by_user")
    for table, name in ((payments, "payments"), (derived, "derived")):
        rows = table.scan().to_arrow()
        assert SUBJECT["user_id"] not in rows["user_id"].to_pylist()
        assert checksum(rows) == kept[name], name
    assert TAG in payments.metadata.refs
    assert find_values(s3.download(tmp_path / "after"), SUBJECT_VALUES) == []

    # Erased people stay erased (issue 52), on the same catalog and bucket, still with no Java: a
    # backfill appends the subject's row and a decoy's (the neighbouring id, a phone ending in the
    # same four digits) through pyiceberg; `guard scan` (after a first one right after close) reads
    # only the new snapshot's file, finds the subject (exit 1), opens one request linked to the
    # closed one, and leaves the decoy alone.
    from pyiceberg_lakehouse import arrow

    first = run(env, *at, "guard", "scan", "--output", "json", cwd=tmp_path)  # right after close: nobody back
    assert first.returncode == 0, said(first)
    assert json.loads(first.stdout)["came_back"] == [] and json.loads(first.stdout)["complete"]
    decoy = {"user_id": SUBJECT["user_id"] + 1, "pan": "ZZZZZ9999Z", "phone": "+919999990001",
             "aadhaar_ref": "AADH-9999-0002", "amount": 3.5, "dt": "2026-04-19"}
    payments.append(arrow([{**SUBJECT, "amount": 99.5, "dt": "2026-04-19"}, decoy]))
    scanned = run(env, *at, "guard", "scan", "--output", "json", cwd=tmp_path)
    assert scanned.returncode == 1, said(scanned)
    scan = json.loads(scanned.stdout)
    assert scan["complete"] and not scan["full"]
    (back,) = scan["came_back"]
    assert back["earlier_requests"] == [REQUEST] and back["new_request"].startswith(f"{REQUEST}-back-")
    assert {place["dataset"] for place in back["found"]} == {"fintech.payments"}
    read = {table["dataset"]: table for table in scan["tables"]}
    assert read["fintech.payments"]["files_read"] == 1 and read["fintech.payments"]["rows_read"] == 2  # the new file only
    assert read["fintech.payments_by_user"]["files_read"] == 0
    board = run(env, *at, "requests", "--output", "json", cwd=tmp_path)
    assert board.returncode == 0, said(board)
    assert {r["request_id"]: r["state"] for r in json.loads(board.stdout)} == {REQUEST: "closed", back["new_request"]: "queued"}
    again = run(env, *at, "guard", "scan", "--output", "json", cwd=tmp_path)
    assert again.returncode == 0, said(again)  # noted once: nothing new since
    assert [t["files_read"] for t in json.loads(again.stdout)["tables"]] == [0, 0]
