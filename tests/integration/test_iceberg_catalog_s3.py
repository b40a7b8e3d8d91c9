"""An Iceberg lakehouse as most teams run it (issue 38, points 1-3): pyiceberg's ``sql`` catalog
(SQLite) named ``prod``, the tables' files on the S3 server on 127.0.0.1 (moto, checking
credentials), configured for piitracer only the way a pyiceberg user configures it: the
``PYICEBERG_CATALOG__PROD__*`` environment, the S3 keys among it (and the standard ``AWS_*``
variables for piitracer's own listing of the bucket).

Through the real CLI in a new process: ``catalog discover --write`` lists both namespaces' tables
(and a nested one's) named as the catalog and SQL name them, with the tag, and no table a second
time by its bucket path; a plan from ``--source prod.fintech.payments.user_id`` reaches the table a
``CREATE TABLE prod.fintech.payments_daily AS`` in lineage.sql derives, and plans the catalog's
tag. A stray newer metadata file another writer left on S3 is a warning of discovery and verify
and changes nothing they read. The S3 secret key is in no plan file, audit entry, log line,
written catalog or output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from iceberg_catalog_lakehouse import (LINEAGE_SQL, SUBJECT, SUBJECT_PAN, build, catalog_environment, s3_properties,
                                       write_stray_metadata)
from paths import REPO
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import EqualTo
from s3_server import s3_server

import piitracer
from piitracer.api.wiring import dataset_locations, workspace_store
from piitracer.model.plan import Action, DeletionPlan
from piitracer.verify import verify_datasets
from piitracer.verify.verifier import sets_for

CLI = [sys.executable, "-m", "piitracer.cli.main"]
TABLES = {"crm.people": "prod.crm.people", "fintech.payments": "prod.fintech.payments",
          "fintech.payments_daily": "prod.fintech.payments_daily", "ops.audit.events": "prod.ops.audit.events"}


@pytest.fixture(scope="module")
def s3():
    with s3_server(bucket="prod-lake", authenticated=True) as server:
        yield server


@pytest.fixture
def lakehouse(s3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for key in list(os.environ):
        if key.upper().startswith("PYICEBERG_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))
    warehouse = f"s3://prod-lake/{tmp_path.name}"  # one warehouse per test in the module's bucket
    catalog = SqlCatalog("prod", uri=f"sqlite:///{tmp_path}/prod.db", warehouse=warehouse, **s3_properties(s3))
    built = build(catalog)
    environment = catalog_environment(f"sqlite:///{tmp_path}/prod.db", warehouse, s3_properties(s3))
    for key, value in environment.items():
        monkeypatch.setenv(key, value)
    ws = tmp_path / "ws"
    (ws / "sql").mkdir(parents=True)
    (ws / "sql" / "pipeline.sql").write_text(LINEAGE_SQL)
    (ws / "piitracer.yaml").write_text(yaml.safe_dump({"version": 1, "warehouse_roots": [warehouse + "/"],
                                                       "lineage": {"sql": [{"path": "sql", "dialect": "spark"}]}}))
    return catalog, built, ws, warehouse


def cli(ws: Path, *args: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PIITRACER_AUDIT_KEY": "iceberg-catalog-s3-audit-key-0123456789", "PYTHONPATH": str(REPO)}
    return subprocess.run([*CLI, "--workspace", str(ws), "--log-level", "debug", "--log-file", str(ws / "piitracer.log"),
                           *args], capture_output=True, text=True, env=environment, timeout=600)


def test_discover_name_plan_and_verify_through_the_catalog_on_s3(lakehouse, s3) -> None:
    catalog, built, ws, warehouse = lakehouse
    assert built.locations["fintech.payments"].startswith(f"{warehouse}/")
    discovered = cli(ws, "catalog", "discover", "--write", "--output", "json")
    assert discovered.returncode == 0, discovered.stderr
    found = {t["dataset"]: t for t in json.loads(discovered.stdout)["tables"]}
    assert {d: t["table"] for d, t in found.items()} == TABLES  # nothing again by its bucket path
    assert found["fintech.payments"]["refs"] == ["tag eoy"]
    assert found["fintech.payments"]["location"] == built.locations["fintech.payments"]
    written = yaml.safe_load((ws / "catalog.discovered.yaml").read_text())["catalog"]
    assert written["fintech.payments"]["location"] == built.locations["fintech.payments"]
    assert written["fintech.payments"]["table"] == "prod.fintech.payments"

    config = yaml.safe_load((ws / "piitracer.yaml").read_text())  # the identifiers confirmed
    config["catalog"] = {"fintech.payments": {"identifiers": ["user_id", "pan"], "subject_key": "user_id"}}
    (ws / "piitracer.yaml").write_text(yaml.safe_dump(config))
    planned = cli(ws, "plan", "--source", "prod.fintech.payments.user_id", "--subject", str(SUBJECT),
                  "--received-at", "2026-11-20", "-o", str(ws / "plan.json"), "--output", "json")
    assert planned.returncode == 0, planned.stderr
    workspace = piitracer.load_workspace(ws)
    plan = DeletionPlan.model_validate_json((ws / "plan.json").read_text())  # its subject values stay sealed: not needed
    assert [d.dataset for d in plan.datasets] == ["fintech.payments", "fintech.payments_daily"]
    assert [(s.params.ref, s.params.snapshot_id) for s in plan.steps if s.action is Action.REWRITE_REF] == [
        ("eoy", built.tagged_snapshot)]

    # The delete committed through the catalog (here by pyiceberg itself); then another writer's stray file.
    payments = catalog.load_table("fintech.payments")
    payments.delete(EqualTo("user_id", SUBJECT))
    catalog.load_table("fintech.payments_daily").delete(EqualTo("user_id", SUBJECT))
    stray = write_stray_metadata(catalog.load_table("fintech.payments")).rsplit("/", 1)[1]
    again = cli(ws, "catalog", "discover", "--output", "json")
    assert f"prod.fintech.payments: warning: metadata/{stray} is newer than the catalog's current" in again.stderr
    assert {t["dataset"]: t for t in json.loads(again.stdout)["tables"]}["fintech.payments"]["refs"] == ["tag eoy"]

    names = {name for decision in plan.datasets for name in sets_for(plan, decision)}
    report = verify_datasets(plan, workspace.config.catalog, dataset_locations(workspace),
                             {n: [SUBJECT_PAN] if n.endswith(".pan") else [SUBJECT] for n in names},
                             store=workspace_store(workspace))
    result = report.result("fintech.payments")
    appended = payments.metadata.snapshots[1].snapshot_id
    assert sorted(f.where for f in result.findings if f.kind == "snapshot") == sorted(
        [f"snapshot {built.tagged_snapshot}, retained by eoy", f"snapshot {appended}"])  # never the stray's "current"
    assert any(note.startswith(f"metadata/{stray} is newer than the catalog's current") for note in result.notes)

    secret = s3.env["AWS_SECRET_ACCESS_KEY"]
    assert os.environ["PYICEBERG_CATALOG__PROD__S3__SECRET_ACCESS_KEY"] == secret
    for run in (discovered, planned, again):
        assert secret not in run.stdout and secret not in run.stderr
    kept = [ws / "plan.json", ws / "catalog.discovered.yaml", ws / "piitracer.log",
            *(p for p in (ws / ".piitracer").rglob("*") if p.is_file())]
    assert any(p.name.startswith("audit") for p in kept)
    assert not [p for p in kept if secret.encode() in p.read_bytes()]


def test_a_catalog_with_no_warehouse_is_asked_where_its_tables_are_and_read_through_its_endpoint(
        s3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As with Glue: the catalog sets no ``warehouse`` (each table's location is the catalog's
    answer), its ``s3.endpoint`` and key are the only way to the files (no AWS_* variable). Discovery
    reads each table, and looks for another writer's stray metadata file, through the catalog that
    placed it: the stray file is found and reported, and nothing is asked of the real AWS host."""
    for key in list(os.environ):
        if key.upper().startswith(("PYICEBERG_", "AWS_")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))
    uri, place = f"sqlite:///{tmp_path}/glue-like.db", f"s3://prod-lake/{tmp_path.name}"
    catalog = SqlCatalog("prod", uri=uri, warehouse=place, **s3_properties(s3))  # the tables' writer knows a place
    build(catalog)
    stray = write_stray_metadata(catalog.load_table("fintech.payments")).rsplit("/", 1)[1]
    environment = catalog_environment(uri, place, s3_properties(s3))
    for key, value in environment.items():
        if not key.endswith("__WAREHOUSE"):  # piitracer's catalog names no warehouse
            monkeypatch.setenv(key, value)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "piitracer.yaml").write_text(yaml.safe_dump({"version": 1, "warehouse_roots": [place + "/"], "lineage": {}}))
    discovered = cli(ws, "catalog", "discover", "--output", "json")
    assert discovered.returncode == 0, discovered.stderr
    assert {t["dataset"]: t["table"] for t in json.loads(discovered.stdout)["tables"]} == TABLES
    assert f"prod.fintech.payments: warning: metadata/{stray} is newer than the catalog's current" in discovered.stderr
    assert "resolve host" not in discovered.stderr and "amazonaws.com" not in discovered.stderr, discovered.stderr
