"""A table kept in an Iceberg catalog may be named on the command line with its catalog in front
(issue 38.1: ``prod.fintech.payments.user_id``) wherever a dataset or a column is named — ``lineage
show --from``, ``plan --source``/``--explain``, ``verify --explain``, ``requests add --source``,
``batch plan --source`` — and means what its catalog dataset's name (``fintech.payments.user_id``)
means. On a real pyiceberg ``sql`` catalog (SQLite) over a local folder, configured only by
``PYICEBERG_CATALOG__PROD__*``; the workspace is what ``catalog discover --write`` writes, with the
identifiers confirmed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from iceberg_catalog_lakehouse import LINEAGE_SQL, SUBJECT, build, catalog_environment
from pyiceberg.catalog.sql import SqlCatalog

from piitracer.cli.main import cli

KEYS = {"PIITRACER_AUDIT_KEY": "catalog-names-audit-key-0123456789", "PIITRACER_MASTER_KEY": "m" * 64,
        "PIITRACER_AUDIT_KEY_FILE": None, "PIITRACER_MASTER_KEY_FILE": None}


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key in list(os.environ):
        if key.upper().startswith("PYICEBERG_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))
    build(SqlCatalog("prod", uri=f"sqlite:///{tmp_path}/prod.db", warehouse=f"file://{tmp_path}/lake"))
    for key, value in catalog_environment(f"sqlite:///{tmp_path}/prod.db", f"file://{tmp_path}/lake").items():
        monkeypatch.setenv(key, value)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "lineage.sql").write_text(LINEAGE_SQL)
    (ws / "piitracer.yaml").write_text(f"version: 1\nwarehouse_roots: [{tmp_path / 'lake'}]\n"
                                       "lineage:\n  sql: [{path: lineage.sql, dialect: spark}]\n")
    assert run(ws, "catalog", "discover", "--write")[0] == 0
    with (ws / "piitracer.yaml").open("a") as handle:
        handle.write("catalog:\n  fintech.payments:\n    identifiers: [user_id, pan]\n    subject_key: user_id\n")
    return ws


def run(ws: Path, *args: str) -> tuple[int, str]:
    result = CliRunner(env=KEYS).invoke(cli, ["--workspace", str(ws), *args])
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output  # stdout and stderr


def test_lineage_show_from_a_column_named_with_its_catalog(workspace: Path) -> None:
    plain = run(workspace, "lineage", "show", "--from", "fintech.payments.user_id", "--format", "json")
    assert plain[0] == 0 and "fintech.payments_daily" in plain[1]
    assert run(workspace, "lineage", "show", "--from", "prod.fintech.payments.user_id", "--format", "json") == plain
    assert run(workspace, "lineage", "show", "--from", "Prod.Fintech.Payments", "--format", "json") \
        == run(workspace, "lineage", "show", "--from", "fintech.payments", "--format", "json")


def test_plan_verify_and_requests_take_the_catalog_prefix(workspace: Path, tmp_path: Path) -> None:
    plan = ("plan", "--source", "prod.fintech.payments.user_id", "--subject", str(SUBJECT), "--request-id", "dsr-1",
            "--received-at", "2026-11-20")
    explained = run(workspace, *plan, "--explain", "prod.fintech.payments_daily")
    assert explained[0] == 0 and explained == run(workspace, *plan, "--explain", "fintech.payments_daily")
    assert "fintech.payments_daily" in explained[1]

    plan_file = tmp_path / "plan.json"
    assert run(workspace, *plan, "-o", str(plan_file))[0] == 0
    # verify takes the name (the run itself needs Spark's resolve: here it stops at "never executed").
    code, out = run(workspace, "verify", str(plan_file), "--no-record", "--explain", "prod.fintech.payments")
    assert code == 2 and "never executed in this workspace" in out and "not a dataset of plan" not in out
    assert "not a dataset of plan" in run(workspace, "verify", str(plan_file), "--no-record", "--explain", "prod.crm.people")[1]

    code, out = run(workspace, "requests", "add", "--source", "prod.fintech.payments.user_id", "--subject", "1001",
                    "--request-id", "dsr-2")
    assert code == 0 and "queued dsr-2" in out
    code, out = run(workspace, "batch", "plan", "--all-open", "--source", "prod.fintech.payments.user_id", "-o",
                    str(tmp_path / "batch.json"), "--output", "json")
    assert code == 0 and json.loads((tmp_path / "batch.json").read_text())["sources"] == [
        {"dataset": "fintech.payments", "column": "user_id"}]
