"""``catalog check`` and ``catalog discover`` on tables an Iceberg catalog keeps (issue 38.2), on a
real pyiceberg ``sql`` catalog (SQLite) over a local folder configured only by
``PYICEBERG_CATALOG__PROD__*``, the workspace what ``catalog discover --write`` wrote:

- drift is the catalog's facts against the entry — the schema of the metadata file the catalog names
  (a stray newer file in the folder changes nothing), the catalog keeping the table elsewhere
  (``location``, both named), the catalog no longer listing it or unable to load it (``table``) —
  never whatever a walk finds in the entry's folder;
- a table the catalog lists but cannot load is listed by discovery by its identifier with the
  reason, never at a made-up location (``/``), and nothing is written for it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from iceberg_catalog_lakehouse import build, catalog_environment, write_stray_metadata
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.types import StringType

import piitracer
from piitracer.api import catalog_drift, discover_catalog
from piitracer.cli.main import cli
from piitracer.discover.drift import Difference


@pytest.fixture
def lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The ``prod`` catalog's tables under ``lake/``, and a workspace (``ws/``) discovery wrote."""
    for key in list(os.environ):
        if key.upper().startswith("PYICEBERG_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))
    catalog = SqlCatalog("prod", uri=f"sqlite:///{tmp_path}/prod.db", warehouse=f"file://{tmp_path}/lake")
    build(catalog)
    for key, value in catalog_environment(f"sqlite:///{tmp_path}/prod.db", f"file://{tmp_path}/lake").items():
        monkeypatch.setenv(key, value)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "piitracer.yaml").write_text(yaml.safe_dump({"version": 1, "warehouse_roots": [str(tmp_path / "lake")]}))
    assert cli_run(ws, "catalog", "discover", "--write").exit_code == 0
    assert catalog_drift(piitracer.load_workspace(ws)) == []
    return catalog, ws


def cli_run(ws: Path, *args: str):
    result = CliRunner().invoke(cli, ["--workspace", str(ws), *args])
    assert "Traceback" not in result.output, result.output
    return result


def remove_current_metadata(table) -> None:
    os.remove(table.metadata_location.removeprefix("file://"))


def test_drift_is_the_catalogs_facts_against_the_entry_and_names_the_field(lake, tmp_path: Path) -> None:
    catalog, ws = lake
    # A column added through the catalog, and a stray newer metadata file (without it) in the folder.
    people = catalog.load_table("crm.people")
    with people.update_schema() as update:
        update.add_column("phone", StringType())
    write_stray_metadata(catalog.load_table("crm.people"))
    # The catalog drops one table (its files stay), keeps another elsewhere, and cannot load a third.
    catalog.drop_table("ops.audit.events")
    daily = catalog.load_table("fintech.payments_daily")
    catalog.drop_table("fintech.payments_daily")
    moved = catalog.create_table("fintech.payments_daily", schema=daily.schema(),
                                 location=f"file://{tmp_path}/lake/moved/payments_daily")
    moved.append(daily.scan().to_arrow())
    payments = catalog.load_table("fintech.payments")
    remove_current_metadata(payments)

    differences = catalog_drift(piitracer.load_workspace(ws))
    by_dataset = {(d.dataset, d.field): d for d in differences}
    assert by_dataset.pop(("crm.people", "columns.phone")) == Difference("crm.people", "columns.phone", "not listed", "exists")
    events = by_dataset.pop(("ops.audit.events", "table"))
    assert (events.catalog, events.lakehouse) == (
        "prod.ops.audit.events", f"not in the Iceberg catalog prod (dropped or renamed?); iceberg files are still at "
        f"{tmp_path}/lake/ops.audit/events")
    assert by_dataset.pop(("fintech.payments_daily", "location")) == Difference(
        "fintech.payments_daily", "location", f"{tmp_path}/lake/fintech/payments_daily",
        f"{tmp_path}/lake/moved/payments_daily (where the Iceberg catalog prod keeps prod.fintech.payments_daily)")
    unloadable = by_dataset.pop(("fintech.payments", "table"))
    assert unloadable.catalog == "prod.fintech.payments"
    assert unloadable.lakehouse.startswith("cannot be read through its Iceberg catalog: Iceberg catalog 'prod': cannot "
                                           "load table fintech.payments: FileNotFoundError")
    assert by_dataset == {}  # nothing else: no folder read as the table, no "new table at /"
    assert all(d.drift for d in differences)

    checked = cli_run(ws, "catalog", "check")
    assert checked.exit_code == 1 and "4 difference(s) of drift" in checked.stdout


def test_a_table_its_catalog_cannot_load_is_listed_by_its_identifier_never_at_slash(lake) -> None:
    catalog, ws = lake
    remove_current_metadata(catalog.load_table("crm.people"))
    found = discover_catalog(piitracer.load_workspace(ws))
    assert all(table.location.uri != "/" for table in found.tables)
    assert "prod.crm.people" not in {table.table for table in found.tables}
    assert found.unreadable_iceberg_tables["prod.crm.people"].startswith(
        "Iceberg catalog 'prod': cannot load table crm.people: FileNotFoundError")

    result = cli_run(ws, "catalog", "discover", "--output", "json", "--write")
    assert result.exit_code == 0
    listed = json.loads(result.stdout)
    assert all(table["location"] != "/" for table in listed["tables"])
    assert list(listed["unreadable_iceberg_tables"]) == ["prod.crm.people"]
    assert "Iceberg table prod.crm.people: not discovered: Iceberg catalog 'prod': cannot load table crm.people" \
        in result.stderr
    written = yaml.safe_load((ws / "catalog.discovered.yaml").read_text())["catalog"]
    assert all(entry.get("location") != "/" for entry in written.values())
