"""`catalog discover` through the Iceberg catalogs (issue 38.2), on a real pyiceberg ``sql`` catalog
(SQLite) over a local folder, configured only by ``PYICEBERG_CATALOG__PROD__*`` as a pyiceberg user
configures it: every namespace (nested too) and table, named ``namespace.table`` with ``table:
prod.<namespace>.<table>``, read from the metadata its catalog names; not found a second time by
its folder; a table outside the roots listed with the reason and not read; an unreachable catalog
reported (no credential, no traceback) while the others are read; a stray newer metadata file a
warning; the same ``namespace.table`` in two catalogs one line naming both."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from iceberg_catalog_lakehouse import build, catalog_environment, write_stray_metadata
from pyiceberg.catalog.sql import SqlCatalog
from s3_server import free_port

import piitracer
from piitracer.cli.main import cli

TABLES = {"crm.people": "prod.crm.people", "fintech.payments": "prod.fintech.payments",
          "fintech.payments_daily": "prod.fintech.payments_daily", "ops.audit.events": "prod.ops.audit.events"}


@pytest.fixture(autouse=True)
def own_pyiceberg_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.upper().startswith("PYICEBERG_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))


def lakehouse(root: Path, monkeypatch: pytest.MonkeyPatch, name: str = "prod", folder: str = "lake"):
    catalog = SqlCatalog(name, uri=f"sqlite:///{root}/{name}.db", warehouse=f"file://{root}/{folder}")
    built = build(catalog)
    for key, value in catalog_environment(f"sqlite:///{root}/{name}.db", f"file://{root}/{folder}", name=name).items():
        monkeypatch.setenv(key, value)
    return catalog, built


def workspace(root: Path, **more) -> Path:
    (root / "piitracer.yaml").write_text(yaml.safe_dump({"version": 1, "warehouse_roots": ["lake"], **more}))
    return root


def discover(root: Path, *args: str):
    result = CliRunner().invoke(cli, ["--workspace", str(root), "catalog", "discover", *args])
    assert result.exit_code == 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result


def listed(result) -> dict[str, dict]:
    return {table["dataset"]: table for table in json.loads(result.stdout)["tables"]}


def test_every_namespace_and_table_of_the_catalog_named_as_the_catalog_names_it(tmp_path: Path, monkeypatch) -> None:
    _, built = lakehouse(tmp_path, monkeypatch)
    found = listed(discover(workspace(tmp_path), "--output", "json"))
    assert {d: t["table"] for d, t in found.items()} == TABLES  # no 'lake.fintech' or 'fintech.payments' by its folder
    payments = found["fintech.payments"]
    assert (payments["format"], payments["catalog"], payments["location"]) == ("iceberg", "prod", str(tmp_path / "lake/fintech/payments"))
    assert payments["columns"] == ["user_id", "pan", "amount", "dt"] and payments["partition_columns"] == ["dt"]
    assert payments["refs"] == ["tag eoy"] and payments["problems"] == [] and payments["warnings"] == []
    assert found["ops.audit.events"]["location"] == str(tmp_path / "lake/ops.audit/events")  # a nested namespace

    discover(tmp_path, "--write")
    written = yaml.safe_load((tmp_path / "catalog.discovered.yaml").read_text())["catalog"]
    assert written["fintech.payments"] == {"format": "iceberg", "location": "lake/fintech/payments",
                                           "table": "prod.fintech.payments", "write_mode": "copy-on-write",
                                           "columns": ["user_id", "pan", "amount", "dt"]}
    assert {d: e["table"] for d, e in written.items()} == TABLES
    assert built.locations["crm.people"] == f"file://{tmp_path}/lake/crm/people"


def test_a_table_outside_the_roots_is_listed_with_the_reason_and_not_read(tmp_path: Path, monkeypatch) -> None:
    lakehouse(tmp_path, monkeypatch)
    result = discover(workspace(tmp_path, warehouse_roots=["lake/fintech"]), "--output", "json", "--write")
    found = listed(result)
    assert found["crm.people"]["problems"] == ["kept by the Iceberg catalog prod outside the discovery roots: not read "
                                               "(piitracer touches nothing there)"]
    assert found["crm.people"]["columns"] == [] and found["crm.people"]["location"] == str(tmp_path / "lake/crm/people")
    assert found["fintech.payments"]["columns"] and not found["fintech.payments"]["problems"]
    assert "prod.crm.people: not written: kept by the Iceberg catalog prod outside the discovery roots" in result.stderr
    written = yaml.safe_load((tmp_path / "catalog.discovered.yaml").read_text())["catalog"]
    assert sorted(written) == ["fintech.payments", "fintech.payments_daily"]


def test_an_unreachable_catalog_is_reported_and_the_others_read(tmp_path: Path, monkeypatch) -> None:
    lakehouse(tmp_path, monkeypatch)
    monkeypatch.setenv("PYICEBERG_CATALOG__BROKEN__TYPE", "rest")
    monkeypatch.setenv("PYICEBERG_CATALOG__BROKEN__URI", f"http://svc:s3cretpass@127.0.0.1:{free_port()}/")
    monkeypatch.setenv("PYICEBERG_CATALOG__BROKEN__TOKEN", "tok-5f2b9c1e")
    result = discover(workspace(tmp_path), "--output", "json")
    assert set(listed(result)) == set(TABLES)
    assert result.stderr.startswith("Iceberg catalog broken: not discovered: Iceberg catalog 'broken' ({'token': '***', "
                                    "'type': 'rest', 'uri': 'http://svc:***@127.0.0.1:")
    assert "ConnectionError" in result.stderr and "Traceback" not in result.stderr
    assert "s3cretpass" not in result.output and "tok-5f2b9c1e" not in result.output
    assert json.loads(result.stdout)["unreadable_iceberg_catalogs"]["broken"].startswith("Iceberg catalog 'broken'")


def test_a_stray_newer_metadata_file_is_a_warning_never_the_state(tmp_path: Path, monkeypatch) -> None:
    catalog, _ = lakehouse(tmp_path, monkeypatch)
    payments = catalog.load_table("fintech.payments")
    stray = write_stray_metadata(payments).rsplit("/", 1)[1]
    result = discover(workspace(tmp_path), "--output", "json")
    found = listed(result)["fintech.payments"]
    assert found["refs"] == ["tag eoy"]  # the stray file has no tag: its state was not read
    current = payments.metadata_location.rsplit("/", 1)[1]
    warning = (f"metadata/{stray} is newer than the catalog's current metadata/{current}: another writer's uncommitted "
               "file? not read (the catalog's pointer is the table's state)")
    assert found["warnings"] == [warning]
    assert f"prod.fintech.payments: warning: {warning}" in result.stderr


def test_the_same_namespace_table_in_two_catalogs_is_one_line_naming_both(tmp_path: Path, monkeypatch) -> None:
    lakehouse(tmp_path, monkeypatch)
    lakehouse(tmp_path, monkeypatch, name="dev", folder="lake/dev")
    result = discover(workspace(tmp_path), "--write")
    line = next(line for line in result.stderr.splitlines() if line.startswith("fintech.payments: not written"))
    assert line == (f"fintech.payments: not written: dev.fintech.payments (at {tmp_path}/lake/dev/fintech/payments) and "
                    f"prod.fintech.payments (at {tmp_path}/lake/fintech/payments) are both fintech.payments: not guessing "
                    "which; give each a name in piitracer.yaml with its table: and location:")
    written = yaml.safe_load((tmp_path / "catalog.discovered.yaml").read_text())["catalog"]
    assert "fintech.payments" not in written and "crm.people" not in written


def test_a_dataset_named_by_its_table_takes_the_catalogs_location(tmp_path: Path, monkeypatch) -> None:
    lakehouse(tmp_path, monkeypatch)
    workspace(tmp_path, catalog={"payments": {"format": "iceberg", "table": "prod.fintech.payments",
                                              "identifiers": ["user_id"], "subject_key": "user_id"}})
    discover(tmp_path, "--write")
    written = yaml.safe_load((tmp_path / "catalog.discovered.yaml").read_text())["catalog"]
    assert written["payments"]["location"] == "lake/fintech/payments" and "fintech.payments" not in written



def test_what_is_read_next_of_a_discovered_catalog_table_is_read_through_its_catalog(tmp_path: Path, monkeypatch) -> None:
    """classify samples the tables discovery found: a catalog's through the catalog's pointer."""
    from piitracer.api.catalog import discover_catalog, discovery_store
    from piitracer.formats.iceberg_table import newest_metadata_file
    from piitracer.storage.locations import Location

    catalog, built = lakehouse(tmp_path, monkeypatch)
    people = catalog.load_table("crm.people")
    write_stray_metadata(people)
    ws = piitracer.load_workspace(workspace(tmp_path))
    found = discover_catalog(ws)
    location = Location.parse(built.locations["crm.people"])
    assert found.bindings[location] == "prod.crm.people"
    assert newest_metadata_file(location, discovery_store(ws, found.bindings)).uri == Location.parse(people.metadata_location).uri
