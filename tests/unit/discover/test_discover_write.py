"""`catalog discover --write` and `catalog classify --write`: the lakehouse's own facts in
catalog.discovered.yaml under a piitracer.yaml that says only what a person must, tried end to
end from an empty workspace as the README's "Start on your own lakehouse" says (no Spark: tables
written by pyiceberg, delta-rs and pyarrow)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner
from deltalake import write_deltalake

import piitracer
from piitracer.cli.main import cli
from piitracer.model.workspace import ClassifiedBy, DatasetFormat

PEOPLE = pa.table({"user_id": pa.array([1, 2, 3], pa.int64()),
                   "email": ["asha@example.in", "ravi@example.in", "meera@example.in"],
                   "plan": ["gold", "free", "free"]})
CONTACTS = pa.table({"cust_id": pa.array([1, 2, 3], pa.int64()),
                     "email": ["asha@example.in", "ravi@example.in", "meera@example.in"]})
LEADS = pa.table({"lead": ["asha@example.in", "kiran@example.in"], "score": [3, 5]})

PIPELINE = """
INSERT OVERWRITE crm.contacts SELECT user_id AS cust_id, email FROM lake.crm.people;
CREATE VIEW crm.v_people AS SELECT user_id, email FROM lake.crm.people;
"""
EMPTY_WORKSPACE = {"version": 1, "lineage": {"sql": [{"path": "sql", "dialect": "spark"}]},
                   "spark": {"catalog": "lake", "warehouse": "warehouse"}}


def lakehouse(root: Path) -> None:
    """An Iceberg source, a Delta table derived from it by SQL, and a Parquet folder of e-mail
    addresses no lineage reaches (a hidden copy)."""
    from pyiceberg.catalog.sql import SqlCatalog

    (root / "warehouse").mkdir(parents=True)
    catalog = SqlCatalog("lake", uri=f"sqlite:///{root}/catalog.db", warehouse=str(root / "warehouse"))
    catalog.create_namespace("crm")
    people = catalog.create_table("crm.people", schema=PEOPLE.schema, location=str(root / "warehouse" / "crm" / "people"),
                                  properties={"write.delete.mode": "merge-on-read",
                                              "history.expire.max-snapshot-age-ms": str(5 * 86400 * 1000)})
    people.append(PEOPLE)
    write_deltalake(str(root / "delta" / "crm" / "contacts"), CONTACTS, configuration={
        "delta.deletedFileRetentionDuration": "interval 7 days", "delta.logRetentionDuration": "interval 30 days"})
    (root / "parquet" / "marketing" / "leads").mkdir(parents=True)
    pq.write_table(LEADS, root / "parquet" / "marketing" / "leads" / "part-0.parquet")
    (root / "sql").mkdir()
    (root / "sql" / "pipeline.sql").write_text(PIPELINE)


def run(root: Path, *args: str):
    result = CliRunner().invoke(cli, ["--workspace", str(root), *args])
    assert result.exit_code in (0, 1), result.output
    return result


def say(root: Path, catalog: dict) -> None:
    """piitracer.yaml: the empty workspace plus what a person says of the catalog."""
    (root / "piitracer.yaml").write_text(yaml.safe_dump({**EMPTY_WORKSPACE, "catalog": catalog}, sort_keys=False))


def test_start_on_your_own_lakehouse_from_an_empty_workspace(tmp_path: Path) -> None:
    """README "Start on your own lakehouse": discover, classify, review, plan."""
    lakehouse(tmp_path)
    say(tmp_path, {})
    discovered = run(tmp_path, "catalog", "discover", "--write")
    assert discovered.exit_code == 0, discovered.output
    written = yaml.safe_load((tmp_path / "catalog.discovered.yaml").read_text())["catalog"]
    assert written == {
        "crm.contacts": {"format": "delta", "location": "delta/crm/contacts", "columns": ["cust_id", "email"],
                         "retention": {"deleted_file_retention": "7d", "log_retention": "30d"}},
        "crm.people": {"format": "iceberg", "location": "warehouse/crm/people", "table": "lake.crm.people",
                       "write_mode": "merge-on-read", "columns": ["user_id", "email", "plan"],
                       "retention": {"snapshot_max_age": "5d"}},
        "crm.v_people": {"format": "view", "columns": ["user_id", "email"]},
        "marketing.leads": {"format": "parquet", "location": "parquet/marketing/leads", "columns": ["lead", "score"]},
    }

    classified = run(tmp_path, "catalog", "classify", "--write", "--output", "json")
    verdicts = {(v["dataset"], v["column"]): (v["kind"], v["pii_without_lineage"]) for v in json.loads(classified.stdout)["columns"]}
    # values only; not yet "PII without lineage": no identifier is catalogued before the first review
    assert verdicts[("marketing.leads", "lead")] == ("email", False)
    assert json.loads(classified.stdout)["lineage_checked"] is False
    entries = yaml.safe_load((tmp_path / "catalog.discovered.yaml").read_text())["catalog"]
    assert {d: (e.get("identifiers"), e.get("classified_by")) for d, e in entries.items()} == {
        "crm.contacts": (["cust_id", "email"], "auto"), "crm.people": (["user_id", "email"], "auto"),
        "crm.v_people": (None, None), "marketing.leads": (["lead"], "auto")}  # a view stores nothing to sample

    # Review: the person names the source's subject key; the identifiers are still the proposal.
    say(tmp_path, {"crm.people": {"subject_key": "user_id", "owner": "crm-team"}})
    unconfirmed = run(tmp_path, "plan", "--source", "crm.people.user_id", "--subject", "2", "--output", "json")
    plan = json.loads(unconfirmed.stdout)
    assert [w for w in plan["warnings"] if "classified_by: auto" in w] == [
        "crm.people: the plan relies on identifiers ['user_id', 'email'] that are classified_by: auto (catalog "
        "classify's proposal in catalog.discovered.yaml): confirm them in piitracer.yaml"]
    erased = {d["dataset"]: (d["status"], d["key_column"]) for d in plan["datasets"]}
    assert erased["crm.people"] == ("erase", "user_id") and erased["crm.contacts"] == ("erase", "cust_id")
    assert erased["crm.v_people"][0] == "no_action"  # a view: no files of its own

    # Confirmed: the same plan without the warning.
    say(tmp_path, {"crm.people": {"subject_key": "user_id", "owner": "crm-team", "classified_by": "person"}})
    confirmed = json.loads(run(tmp_path, "plan", "--source", "crm.people.user_id", "--subject", "2",
                               "--output", "json").stdout)
    assert not [w for w in confirmed["warnings"] if "classified_by" in w]
    assert confirmed["steps"] == plan["steps"]
    workspace = piitracer.load_workspace(tmp_path)
    assert workspace.config.catalog["crm.people"].classified_by is ClassifiedBy.PERSON
    assert workspace.config.catalog["crm.contacts"].classified_by is ClassifiedBy.AUTO


def test_a_second_discovery_keeps_the_proposals_a_person_has_not_reviewed(tmp_path: Path) -> None:
    lakehouse(tmp_path)
    say(tmp_path, {})
    run(tmp_path, "catalog", "classify", "--write")
    before = (tmp_path / "catalog.discovered.yaml").read_text()
    run(tmp_path, "catalog", "discover", "--write")
    assert (tmp_path / "catalog.discovered.yaml").read_text() == before


def test_the_persons_fields_win_one_by_one_and_an_override_is_reported_not_drift(tmp_path: Path) -> None:
    lakehouse(tmp_path)
    say(tmp_path, {})
    run(tmp_path, "catalog", "discover", "--write")
    say(tmp_path, {"crm.people": {"retention": {"snapshot_max_age": "3d", "maintenance_every": "1d"}}})
    people = piitracer.load_workspace(tmp_path).config.catalog["crm.people"]
    assert (people.format, people.write_mode.value, str(people.retention.snapshot_max_age),
            str(people.retention.maintenance_every)) == (DatasetFormat.ICEBERG, "merge-on-read", "3 days, 0:00:00",
                                                         "1 day, 0:00:00")
    checked = run(tmp_path, "catalog", "check")
    rows = [[c.strip() for c in line.strip("│").split("│")] for line in checked.output.splitlines() if line.startswith("│")]
    assert checked.exit_code == 0, checked.output
    assert rows == [["crm.people", "retention.snapshot_max_age", "3d", "5d", "override"]]


def test_a_discovered_entry_is_never_merged_into_an_entry_placed_elsewhere(tmp_path: Path) -> None:
    """The person moved crm.contacts to another folder: the discovered columns describe the old
    one and must not be merged in; the workspace warns and the person's entry stands alone."""
    lakehouse(tmp_path)
    say(tmp_path, {})
    run(tmp_path, "catalog", "discover", "--write")
    write_deltalake(str(tmp_path / "delta" / "crm" / "contacts_v2"), pa.table({"id": [1]}))
    say(tmp_path, {"crm.contacts": {"format": "delta", "location": "delta/crm/contacts_v2"}})
    workspace = piitracer.load_workspace(tmp_path)
    assert workspace.config.catalog["crm.contacts"].columns == ()
    assert [w for w in workspace.warnings if "ignored" in w] == [
        f"{tmp_path / 'catalog.discovered.yaml'}: catalog.crm.contacts: describes delta/crm/contacts, but piitracer.yaml "
        "places crm.contacts at delta/crm/contacts_v2: ignored (run `piitracer catalog discover --write` again)"]


def test_two_tables_with_one_name_are_not_written_and_say_why(tmp_path: Path) -> None:
    for region in ("eu", "in"):
        write_deltalake(str(tmp_path / region / "sales" / "orders"), pa.table({"order_id": [1]}))
    say(tmp_path, {})
    result = CliRunner().invoke(cli, ["--workspace", str(tmp_path), "catalog", "discover", "--write"])
    assert result.exit_code == 0, result.output
    assert yaml.safe_load((tmp_path / "catalog.discovered.yaml").read_text())["catalog"] == {}
    both = f"2 tables would be named sales.orders ({tmp_path}/eu/sales/orders, {tmp_path}/in/sales/orders)"
    assert [line for line in result.stderr.splitlines() if "not written" in line] == [
        f"{tmp_path}/{r}/sales/orders: not written: {both}: give each a name in piitracer.yaml with its location"
        for r in ("eu", "in")]
    # Named by the person with its location: written under that name; the other keeps the folder name.
    say(tmp_path, {"sales.orders_eu": {"format": "delta", "location": "eu/sales/orders"}})
    run(tmp_path, "catalog", "discover", "--write")
    assert sorted(yaml.safe_load((tmp_path / "catalog.discovered.yaml").read_text())["catalog"]) == \
        ["sales.orders", "sales.orders_eu"]


def test_an_entry_with_no_format_waits_for_discovery_and_a_typo_is_still_an_error(tmp_path: Path) -> None:
    lakehouse(tmp_path)
    say(tmp_path, {"crm.people": {"subject_key": "user_id", "owner": "crm-team"}})
    workspace = piitracer.load_workspace(tmp_path)
    assert "crm.people" not in workspace.config.catalog
    assert [w.split(": ", 1)[1] for w in workspace.warnings] == [
        "catalog.crm.people: no format yet (say it, or run `piitracer catalog discover --write`): left out of the "
        "catalog until then"]
    say(tmp_path, {"crm.people": {"subject_key": "user_id", "ownr": "crm-team"}})
    result = CliRunner().invoke(cli, ["--workspace", str(tmp_path), "catalog", "discover"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "piitracer.yaml:" in result.output and "catalog.crm.people.ownr: not a catalog field" in result.output


def test_an_invalid_discovered_file_is_named_with_its_line(tmp_path: Path) -> None:
    say(tmp_path, {})
    (tmp_path / "catalog.discovered.yaml").write_text("version: 1\ncatalog:\n  a.b:\n    format: icebreg\n    location: x\n")
    result = CliRunner().invoke(cli, ["--workspace", str(tmp_path), "catalog", "check"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"{tmp_path / 'catalog.discovered.yaml'}:4: catalog.a.b.format:" in result.output


@pytest.mark.parametrize("declared", ["archive", "external"])
def test_a_table_the_person_declares_as_another_format_is_not_described_over(tmp_path: Path, declared: str) -> None:
    lakehouse(tmp_path)
    entry = {"format": declared, "owner": "growth"}
    if declared == "archive":
        entry.update(location="parquet/marketing/leads", archive_of={"dataset": "crm.people", "schedule": "7d",
                                                                    "retention": "30d"})
    say(tmp_path, {"crm.people": {"owner": "crm-team"}, "marketing.leads": entry})
    run(tmp_path, "catalog", "discover", "--write")
    assert "marketing.leads" not in yaml.safe_load((tmp_path / "catalog.discovered.yaml").read_text())["catalog"]
    assert piitracer.load_workspace(tmp_path).config.catalog["marketing.leads"].format.value == declared
