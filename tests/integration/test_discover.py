"""Catalog discovery and drift on small real tables (no Spark): an Iceberg table written by
pyiceberg with its retention and write-mode properties, a Delta table with its configuration,
plain Parquet folders (Hive partitions, dated export folders), and tables whose metadata cannot be
read — reported per table while the rest is still discovered."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from click.testing import CliRunner
from deltalake import write_deltalake

import piitracer
from piitracer.api import catalog_drift, discover_catalog
from piitracer.cli.main import cli
from piitracer.storage.guard import canonical

PEOPLE = pa.table({"user_id": pa.array([1, 2], pa.int64()), "email": ["a@x.in", "b@x.in"]})


def lakehouse(root: Path) -> dict[str, dict]:
    """The tables, and the catalog entries that describe them exactly."""
    from pyiceberg.catalog.sql import SqlCatalog

    warehouse = root / "warehouse"
    warehouse.mkdir(parents=True)
    catalog = SqlCatalog("lake", uri=f"sqlite:///{root}/catalog.db", warehouse=str(warehouse))
    catalog.create_namespace("crm")
    people = catalog.create_table("crm.people", schema=PEOPLE.schema, properties={
        "write.delete.mode": "merge-on-read", "history.expire.max-snapshot-age-ms": str(5 * 86400 * 1000),
        "history.expire.min-snapshots-to-keep": "2"})
    people.append(PEOPLE)
    write_deltalake(str(root / "delta" / "crm" / "contacts"), PEOPLE, configuration={
        "delta.deletedFileRetentionDuration": "interval 7 days", "delta.logRetentionDuration": "interval 30 days",
        "delta.enableChangeDataFeed": "true"})
    for day in ("2026-11-10", "2026-11-17"):  # weekly exports: one dataset
        (root / "archive" / "people" / day).mkdir(parents=True)
        pq.write_table(PEOPLE, root / "archive" / "people" / day / "part-0.parquet")
    for country in ("in", "de"):  # Hive partitions: one dataset with a partition column
        (root / "parquet" / "crm" / "visits" / f"country={country}").mkdir(parents=True)
        pq.write_table(PEOPLE, root / "parquet" / "crm" / "visits" / f"country={country}" / "part-0.parquet")
    return {
        "crm.people": {"format": "iceberg", "table": "lake.crm.people", "location": people.location().removeprefix("file://"),
                       "write_mode": "merge-on-read", "columns": ["user_id", "email"],
                       "retention": {"snapshot_max_age": "5d", "min_snapshots_to_keep": 2}},
        "crm.contacts": {"format": "delta", "location": "delta/crm/contacts", "columns": ["user_id", "email"],
                         "retention": {"deleted_file_retention": "7d", "log_retention": "30d"}},
        "archive.people": {"format": "archive", "location": "archive/people", "columns": ["user_id", "email"],
                           "archive_of": {"dataset": "crm.contacts", "schedule": "7d", "retention": "365d"}},
        "crm.visits": {"format": "parquet", "location": "parquet/crm/visits", "columns": ["user_id", "email", "country"]},
    }


def workspace(root: Path, catalog: dict) -> Path:
    config = {"version": 1, "spark": {"warehouse": "warehouse"}, "catalog": catalog}
    (root / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return root


def test_discovery_reads_each_format_and_the_catalog_agrees(tmp_path: Path) -> None:
    ws = piitracer.load_workspace(workspace(tmp_path, lakehouse(tmp_path)))
    found = {str(canonical(t.location).uri).removeprefix(str(tmp_path.resolve()) + "/"): t for t in discover_catalog(ws).tables}
    assert sorted(found) == ["archive/people", "delta/crm/contacts", "parquet/crm/visits", "warehouse/crm/people"]
    people, contacts, visits = found["warehouse/crm/people"], found["delta/crm/contacts"], found["parquet/crm/visits"]
    assert (people.format.value, people.table, people.write_mode.value, people.format_version) == \
        ("iceberg", "lake.crm.people", "merge-on-read", 2)
    assert {k: str(v) for k, v in people.retention.items()} == {"snapshot_max_age": "5 days, 0:00:00", "min_snapshots_to_keep": "2"}
    assert contacts.features == ("change data feed",) and str(contacts.retention["log_retention"]) == "30 days, 0:00:00"
    assert visits.columns == ("user_id", "email", "country") and visits.partition_columns == ("country",)
    assert found["archive/people"].columns == ("user_id", "email")
    assert catalog_drift(ws) == []
    shown = CliRunner().invoke(cli, ["--workspace", str(tmp_path), "catalog", "check"])
    assert shown.exit_code == 0 and "the catalog agrees with the lakehouse" in shown.output


def test_drift_of_every_kind_exits_1_naming_dataset_and_field(tmp_path: Path) -> None:
    catalog = lakehouse(tmp_path)
    catalog["crm.contacts"]["columns"] = ["user_id", "phone"]  # phone is gone, email is not listed
    catalog["crm.contacts"]["retention"]["deleted_file_retention"] = "14d"  # the table says 7d
    catalog["crm.people"]["write_mode"] = "copy-on-write"
    catalog["crm.gone"] = {"format": "delta", "location": "delta/crm/gone", "columns": ["user_id"]}
    del catalog["crm.visits"]  # a table no entry names
    catalog["archive.people"]["retention"] = {"log_retention": "1d"}  # set only in the catalog: an override
    workspace(tmp_path, catalog)
    shown = CliRunner().invoke(cli, ["--workspace", str(tmp_path), "catalog", "check"])
    assert shown.exit_code == 1, shown.output
    rows = [[c.strip() for c in line.strip("│").split("│")] for line in shown.output.splitlines() if line.startswith("│")]
    assert sorted((r[0], r[1], r[-1]) for r in rows if r[0]) == [
        ("archive.people", "retention.log_retention", "override"),
        ("crm.contacts", "columns.email", "drift"),
        ("crm.contacts", "columns.phone", "drift"),
        ("crm.contacts", "retention.deleted_file_retention", "drift"),
        ("crm.gone", "location", "drift"),
        ("crm.people", "write_mode", "drift"),
        ("crm.visits", "catalog", "drift"),
    ], shown.output
    assert "6 difference(s) of drift, 1 override(s)" in shown.output


def test_unreadable_metadata_is_reported_per_table_and_the_rest_still_discovered(tmp_path: Path) -> None:
    catalog = lakehouse(tmp_path)
    broken_iceberg = tmp_path / "warehouse" / "crm" / "broken" / "metadata"
    broken_iceberg.mkdir(parents=True)
    (broken_iceberg / "v1.metadata.json").write_text("{not json")
    (broken_iceberg / "version-hint.text").write_text("1")
    broken_delta = tmp_path / "delta" / "crm" / "broken" / "_delta_log"
    broken_delta.mkdir(parents=True)
    (broken_delta / "00000000000000000000.json").write_text("garbage\n")
    (tmp_path / "parquet" / "crm" / "odd").mkdir(parents=True)
    (tmp_path / "parquet" / "crm" / "odd" / "x.parquet").write_bytes(b"not parquet")
    workspace(tmp_path, catalog)
    shown = CliRunner().invoke(cli, ["--workspace", str(tmp_path), "catalog", "discover", "--output", "json"])
    assert shown.exit_code == 0, shown.output
    listed = {Path(t["location"]).relative_to(tmp_path.resolve()).as_posix(): t for t in json.loads(shown.output)["tables"]}
    assert sorted(listed) == ["archive/people", "delta/crm/broken", "delta/crm/contacts", "parquet/crm/odd",
                              "parquet/crm/visits", "warehouse/crm/broken", "warehouse/crm/people"]
    problems = {place: table["problems"] for place, table in listed.items() if table["problems"]}
    assert sorted(problems) == ["delta/crm/broken", "parquet/crm/odd", "warehouse/crm/broken"]
    assert all(p[0].startswith(("cannot read its metadata", "cannot read its files")) for p in problems.values())
    assert listed["warehouse/crm/people"]["columns"] == ["user_id", "email"]


def test_an_email_table_no_lineage_reaches_is_pii_without_lineage(tmp_path: Path) -> None:
    """crm.people's email is a catalogued identifier; the SQL copies it into crm.visits (reached);
    crm.contacts holds e-mail addresses that no lineage brings there (nor to its archive,
    archive.people): classify says so, by values validated with email-validator, and never prints
    one."""
    catalog = lakehouse(tmp_path)
    catalog["crm.people"]["identifiers"] = ["user_id", "email"]
    catalog["crm.people"]["subject_key"] = "user_id"
    (tmp_path / "sql").mkdir()
    (tmp_path / "sql" / "visits.sql").write_text(
        "INSERT INTO crm.visits SELECT user_id, email, 'in' AS country FROM lake.crm.people;\n")
    config = {"version": 1, "spark": {"warehouse": "warehouse"}, "catalog": catalog,
              "lineage": {"sql": [{"path": "sql"}], "spark_catalogs": ["spark_catalog", "lake"]}}
    (tmp_path / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    shown = CliRunner().invoke(cli, ["--workspace", str(tmp_path), "catalog", "classify", "--output", "json"])
    assert shown.exit_code == 0, shown.output
    columns = {(c["dataset"], c["column"]): c for c in json.loads(shown.output)["columns"]}
    assert sorted(key for key, c in columns.items() if c["pii_without_lineage"]) == [
        ("archive.people", "email"), ("crm.contacts", "email")]
    assert columns[("crm.contacts", "email")]["kind"] == "email"
    assert "'email' reads as e-mail address; 2 of 2 sampled values validate as e-mail address" in \
        columns[("crm.contacts", "email")]["reasons"]
    assert (columns[("crm.contacts", "email")]["valid"], columns[("crm.contacts", "email")]["sampled"]) == (2, 2)
    assert columns[("crm.visits", "email")]["kind"] == "email" and not columns[("crm.visits", "email")]["pii_without_lineage"]
    assert columns[("crm.visits", "country")]["kind"] is None
    text = CliRunner().invoke(cli, ["--workspace", str(tmp_path), "catalog", "classify"])
    assert "PII without lineage: crm.contacts.email holds e-mail address values" in text.output
    assert "a@x.in" not in text.output + shown.output and "b@x.in" not in text.output + shown.output


def test_an_unreachable_root_is_reported_and_lineage_only_datasets_are_listed(tmp_path: Path) -> None:
    """warehouse_roots names an object store nobody answers on: that root is one line on stderr and
    the local roots are still discovered; a table the lineage writes that is nowhere in storage or
    the catalog is 'seen in lineage, not found in storage'."""
    import os
    import subprocess
    import sys

    from s3_server import free_port

    catalog = lakehouse(tmp_path)
    (tmp_path / "sql").mkdir()
    (tmp_path / "sql" / "export.sql").write_text("INSERT INTO crm.people_export SELECT user_id, email FROM lake.crm.people;\n")
    config = {"version": 1, "spark": {"warehouse": "warehouse"}, "catalog": catalog,
              "lineage": {"sql": [{"path": "sql"}], "spark_catalogs": ["spark_catalog", "lake"]},
              "warehouse_roots": [str(tmp_path), "s3://lake/warehouse"]}
    (tmp_path / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    env = {**os.environ, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}", "AWS_ACCESS_KEY_ID": "x",
           "AWS_SECRET_ACCESS_KEY": "y", "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true", "AWS_EC2_METADATA_DISABLED": "true"}
    done = subprocess.run([sys.executable, "-m", "piitracer.cli.main", "--workspace", str(tmp_path), "catalog", "discover",
                           "--output", "json"], capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert sorted(document["unreadable_roots"]) == ["s3://lake/warehouse"]
    assert len(document["tables"]) == 4  # every local table still discovered
    assert document["seen_in_lineage_not_found_in_storage"] == ["crm.people_export"]
    assert "s3://lake/warehouse: not discovered: " in done.stderr and "Traceback" not in done.stderr
