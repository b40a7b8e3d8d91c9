"""The table's state from its catalog (issue 38.3), for plan and verify, on a real pyiceberg ``sql``
catalog (SQLite) over a local folder configured only by ``PYICEBERG_CATALOG__PROD__*``.

Another writer left a newer ``*.metadata.json`` in ``fintech.payments``' folder that the catalog
does not name (its tag gone, its current snapshot the first one, which holds the subject's rows).
Plan and verify read the catalog's pointer — the tag is planned and verify finds the subject only
in the tagged snapshot — and verify reports the stray file; read from the folder instead, the
same checks give another plan and another verdict (the tests can fail). A catalog dataset with no
``location:`` takes the catalog's; one whose location disagrees is refused naming both; the
catalog's credentials reach no plan file, audit entry, log line or error message.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from iceberg_catalog_lakehouse import LINEAGE_SQL, SUBJECT, SUBJECT_PAN, build, catalog_environment, write_stray_metadata
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import EqualTo

import piitracer
from piitracer.api import dataset_locations, plan_erasure, workspace_store
from piitracer.cli.main import cli
from piitracer.model.plan import Action, Subject
from piitracer.model.verification import ErasureState
from piitracer.planner.build import PlanningError
from piitracer.storage.locations import Location
from piitracer.storage.store import Store
from piitracer.verify import verify_datasets
from piitracer.verify.verifier import sets_for

SUBJECTS = [Subject(value=str(SUBJECT), request_id="r-8841302", received_at="2026-11-20T09:00:00Z")]
SOURCE = "prod.fintech.payments.user_id"  # named with its catalog, as the SQL names it


@pytest.fixture(autouse=True)
def own_pyiceberg_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.upper().startswith("PYICEBERG_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))


def lakehouse(root: Path, monkeypatch: pytest.MonkeyPatch, extra: dict | None = None, payments_location: str | None = None):
    """The catalog, its tables, and a workspace: fintech.payments with its location said,
    fintech.payments_daily (the CTAS's table) with only its table: (the catalog places it)."""
    catalog = SqlCatalog("prod", uri=f"sqlite:///{root}/prod.db", warehouse=f"file://{root}/lake")
    built = build(catalog)
    for key, value in catalog_environment(f"sqlite:///{root}/prod.db", f"file://{root}/lake", extra).items():
        monkeypatch.setenv(key, value)
    (root / "sql").mkdir()
    (root / "sql" / "pipeline.sql").write_text(LINEAGE_SQL)
    config = {"version": 1, "lineage": {"sql": [{"path": "sql", "dialect": "spark"}]}, "warehouse_roots": ["lake"],
              "catalog": {"fintech.payments": {"format": "iceberg", "table": "prod.fintech.payments",
                                               "location": payments_location or "lake/fintech/payments",
                                               "columns": ["user_id", "pan", "amount", "dt"],
                                               "identifiers": ["user_id", "pan"], "subject_key": "user_id"},
                          "fintech.payments_daily": {"format": "iceberg", "table": "prod.fintech.payments_daily",
                                                     "columns": ["user_id", "total"]}}}
    (root / "piitracer.yaml").write_text(yaml.safe_dump(config))
    return catalog, built, piitracer.load_workspace(root)


def value_sets(plan) -> dict[str, list]:
    names = {name for decision in plan.datasets for name in sets_for(plan, decision)}
    return {name: [SUBJECT_PAN] if name.endswith(".pan") else [SUBJECT] for name in names}


def snapshot_findings(report, dataset: str) -> list[str]:
    return sorted(f.where for f in report.result(dataset).findings if f.kind == "snapshot")


def test_plan_reads_the_catalogs_state_not_a_stray_newer_file(tmp_path: Path, monkeypatch) -> None:
    catalog, built, workspace = lakehouse(tmp_path, monkeypatch)
    write_stray_metadata(catalog.load_table("fintech.payments"))
    plan = plan_erasure(workspace, [SOURCE], SUBJECTS)
    assert [d.dataset for d in plan.datasets] == ["fintech.payments", "fintech.payments_daily"]
    rewrites = [(s.dataset, s.params.ref, s.params.snapshot_id) for s in plan.steps if s.action is Action.REWRITE_REF]
    assert rewrites == [("fintech.payments", "eoy", built.tagged_snapshot)]  # the stray file has no tag

    # The same plan with the table read from its folder follows the stray file: no tag planned.
    from piitracer.api.lakehouse import Lakehouse

    folder_only = Lakehouse(workspace)
    folder_only._store = Store(workspace.config.storage)  # no catalog keeps any pointer: the folders say
    from_folder = plan_erasure(workspace, [SOURCE], SUBJECTS, lakehouse=folder_only)
    assert not [s for s in from_folder.steps if s.action is Action.REWRITE_REF]


def test_verify_reads_the_catalogs_state_and_reports_the_stray_file(tmp_path: Path, monkeypatch) -> None:
    catalog, built, workspace = lakehouse(tmp_path, monkeypatch)
    plan = plan_erasure(workspace, [SOURCE], SUBJECTS)
    payments = catalog.load_table("fintech.payments")
    payments.delete(EqualTo("user_id", SUBJECT))  # the delete committed through the catalog; the tag still holds them
    catalog.load_table("fintech.payments_daily").delete(EqualTo("user_id", SUBJECT))
    stray = write_stray_metadata(catalog.load_table("fintech.payments"))
    current = catalog.load_table("fintech.payments").metadata_location.rsplit("/", 1)[1]

    report = verify_datasets(plan, workspace.config.catalog, dataset_locations(workspace), value_sets(plan),
                             store=workspace_store(workspace))
    appended = payments.metadata.snapshots[1].snapshot_id  # after the tag, before the delete: expired by the plan
    assert snapshot_findings(report, "fintech.payments") == sorted(
        [f"snapshot {built.tagged_snapshot}, retained by eoy", f"snapshot {appended}"])
    assert (f"metadata/{stray.rsplit('/', 1)[1]} is newer than the catalog's current metadata/{current}: another "
            "writer's uncommitted file? not read (the catalog's pointer is the table's state)") \
        in report.result("fintech.payments").notes
    daily = report.result("fintech.payments_daily")  # no location: in the workspace: the catalog's was checked
    assert daily.state is not ErasureState.NOT_CHECKED and daily.files_scanned > 0

    from_folder = verify_datasets(plan, workspace.config.catalog, dataset_locations(workspace), value_sets(plan),
                                  store=Store())
    assert snapshot_findings(from_folder, "fintech.payments") == sorted(
        [f"snapshot {built.tagged_snapshot} (current)", f"snapshot {appended}"])


def test_a_dataset_without_location_takes_the_catalogs(tmp_path: Path, monkeypatch) -> None:
    _, built, workspace = lakehouse(tmp_path, monkeypatch)
    locations = dataset_locations(workspace)
    assert locations["fintech.payments_daily"] == Location.parse(built.locations["fintech.payments_daily"])
    assert "fintech.payments_daily" not in dataset_locations(workspace, ask_catalogs=False)


def test_a_location_that_disagrees_with_the_catalogs_is_refused_naming_both(tmp_path: Path, monkeypatch) -> None:
    catalog = tmp_path / "lake" / "fintech" / "payments"
    copy = tmp_path / "lake" / "copies" / "payments"
    _, _, workspace = lakehouse(tmp_path, monkeypatch)
    plan = plan_erasure(workspace, [SOURCE], SUBJECTS)
    shutil.copytree(catalog, copy)
    config = yaml.safe_load((tmp_path / "piitracer.yaml").read_text())
    config["catalog"]["fintech.payments"]["location"] = "lake/copies/payments"  # a copy, as the workspace now says
    (tmp_path / "piitracer.yaml").write_text(yaml.safe_dump(config))
    moved = piitracer.load_workspace(tmp_path)
    refusal = (f"Iceberg table prod.fintech.payments: its catalog keeps it at {catalog}, the workspace catalogues it at "
               f"{copy}: refusing to read or change either (make the dataset's location the catalog's)")
    with pytest.raises(PlanningError) as refused:
        plan_erasure(moved, [SOURCE], SUBJECTS)
    assert str(refused.value) == f"dataset fintech.payments: {refusal}"
    # verify does not vouch for the copy's files either: the dataset is not checked, with the reason
    report = verify_datasets(plan, moved.config.catalog, dataset_locations(moved), value_sets(plan),
                             store=workspace_store(moved))
    assert (report.result("fintech.payments").state, report.result("fintech.payments").reason) == (
        ErasureState.NOT_CHECKED, refusal)


def test_no_credential_reaches_a_plan_the_audit_log_a_log_line_or_an_error(tmp_path: Path, monkeypatch, caplog) -> None:
    secret_key, key_id = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYsecretkey", "AKIAIOSFODNN7SECRETID"
    _, _, workspace = lakehouse(tmp_path, monkeypatch, extra={"s3.secret-access-key": secret_key,
                                                              "s3.access-key-id": key_id, "token": "tok-catalog-7f3a"})
    # A second catalog whose URI holds a password, unreachable: its table has no location: here.
    password = "pg-hunter2-pass"
    monkeypatch.setenv("PYICEBERG_CATALOG__PG__TYPE", "sql")
    monkeypatch.setenv("PYICEBERG_CATALOG__PG__URI", f"postgresql+psycopg2://etl:{password}@127.0.0.1:1/lake")
    monkeypatch.setenv("PYICEBERG_CATALOG__PG__S3__SECRET_ACCESS_KEY", secret_key)
    secrets = (secret_key, key_id, "tok-catalog-7f3a", password)
    caplog.set_level(logging.DEBUG)  # every logger: piitracer's, pyiceberg's, SQLAlchemy's, urllib3's
    runner = CliRunner()
    environment = {"PIITRACER_AUDIT_KEY": "catalog-secrets-test-audit-key-0123456789"}

    def run(*args: str):
        return runner.invoke(cli, ["--workspace", str(tmp_path), "--log-level", "debug", "--log-file",
                                   str(tmp_path / "piitracer.log"), *args], env=environment)

    outputs = [run("catalog", "discover", "--write", "--output", "json"),
               run("plan", "--source", SOURCE, "--subject", str(SUBJECT), "--received-at", "2026-11-20",
                   "-o", str(tmp_path / "plan.json"))]
    assert outputs[1].exit_code == 0, outputs[1].output
    config = yaml.safe_load((tmp_path / "piitracer.yaml").read_text())
    config["catalog"]["sales.orders"] = {"format": "iceberg", "table": "pg.sales.orders", "columns": ["user_id"]}
    (tmp_path / "piitracer.yaml").write_text(yaml.safe_dump(config))
    outputs.append(run("plan", "--source", SOURCE, "--subject", str(SUBJECT), "--received-at", "2026-11-20"))
    assert outputs[2].exit_code == 2 and len(outputs[2].stderr.splitlines()) == 1  # one line, no traceback
    assert outputs[2].stderr.startswith(
        f"error: {tmp_path / 'piitracer.yaml'}: catalog.sales.orders: no location: here, and its table pg.sales.orders "
        "cannot be placed by its catalog: Iceberg catalog 'pg' ({'s3.secret-access-key': '***', 'type': 'sql', 'uri': "
        "'postgresql+psycopg2://etl:***@127.0.0.1:1/lake'}): cannot load it: OperationalError: "), outputs[2].stderr
    state = tmp_path / ".piitracer"
    files = [tmp_path / "plan.json", tmp_path / "catalog.discovered.yaml", tmp_path / "piitracer.log",
             *(p for p in state.rglob("*") if p.is_file())]
    assert any(p.name.startswith("audit") for p in files), files  # the plan's audit entry was written
    for secret in secrets:
        for result in outputs:
            assert secret not in result.output and secret not in (result.stderr or ""), secret
        assert secret not in caplog.text, secret
        for path in files:
            assert secret.encode() not in path.read_bytes(), (secret, path)
    assert any(record.name.startswith("pyiceberg") for record in caplog.records)  # the libraries' records were looked at
