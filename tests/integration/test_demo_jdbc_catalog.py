"""The demo with its Iceberg tables in a PostgreSQL JDBC catalog (issue 38's acceptance): the fixture
workspace prepared with ``DemoCatalog.postgresql`` keeps every Iceberg table in the catalog (Spark
creates them through its JDBC catalog, Debian's driver), pyiceberg's ``sql`` catalog on the same
database names the same tables and states, and the demo's erasure runs through that catalog and
leaves no form of the person in any file.

Small (600 payments) and on the suite's one Spark session (``spark_for``): the catalog is given to
the running session, whose jars carry the PostgreSQL driver; the tables live under their own
catalog warehouse, so the Hadoop warehouse test_demo builds in is not touched. The catalog's user
logs in with a password only the environment holds."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow.compute as pc
import pytest
from byte_scan import find_values
from spark_lakehouse import spark_for

import piitracer
from piitracer.api import run_demo
from piitracer.demo import SUBJECT_USER_ID, DemoCatalog, build_lakehouse
from piitracer.demo.workspace_files import prepare_workspace
from piitracer.formats.iceberg_catalogs import IcebergCatalogs
from piitracer.model.workspace import DatasetFormat

CATALOG = "pgdemo"
PASSWORD = "demo-secret-only-in-the-environment"
ROWS = 600


def pointer(spark, table: str) -> str:
    loaded = spark._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, table)
    loaded.refresh()
    return str(loaded.operations().current().metadataFileLocation())


def test_the_demo_erases_through_its_postgresql_jdbc_catalog(postgres, tmp_path: Path, warehouse: Path) -> None:
    database = postgres.create_database("demo")
    user = postgres.create_role("demo_owner", PASSWORD, database)
    catalog = DemoCatalog.postgresql(postgres.sqlalchemy_uri(database, user), tmp_path / "catalog-warehouse", name=CATALOG)
    root = prepare_workspace(tmp_path / "demo", warehouse=warehouse, catalog=catalog)
    assert PASSWORD not in (root / "piitracer.yaml").read_text()
    workspace = piitracer.load_workspace(root)
    iceberg = {d: e for d, e in workspace.config.catalog.items() if e.format is DatasetFormat.ICEBERG}
    assert len(iceberg) >= 9
    for dataset, entry in iceberg.items():
        assert entry.table == f"{CATALOG}.{dataset}", dataset
        assert workspace.location_of(dataset) == catalog.warehouse / Path(*dataset.split(".")), dataset

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PGPASSWORD", PASSWORD)
        spark = spark_for(warehouse)
        build = build_lakehouse(workspace, rows=ROWS)
        assert not build.reused
        # One catalog, two engines: the tables Spark created are the catalog's, as pyiceberg reads it.
        catalogs = IcebergCatalogs(workspace.config.iceberg)
        assert catalogs.list_tables(CATALOG) == sorted(iceberg)
        rows_in_postgres = postgres.psql(database, f"SELECT count(*) FROM iceberg_tables WHERE catalog_name = '{CATALOG}'")
        assert int(rows_in_postgres) == len(iceberg)
        for dataset, entry in iceberg.items():
            table = catalogs.load_table(entry.table)
            assert (table.metadata_location, table.location().removeprefix("file:")) == \
                (pointer(spark, entry.table), str(workspace.location_of(dataset))), dataset
        assert catalogs.load_table(f"{CATALOG}.analytics.user_monthly_spend").format_version == 3  # as in test_demo
        # Every form a key column may hold the person in (as test_demo reads them): the id, PAN, phone,
        # Aadhaar reference and the hashes the pipelines compute.
        payments = catalogs.load_table(f"{CATALOG}.prod.payments").scan().to_arrow()
        own = payments.filter(pc.equal(payments["user_id"], SUBJECT_USER_ID)).to_pylist()
        assert own, "the subject has no payments"
        forms = {SUBJECT_USER_ID, hashlib.sha256(str(SUBJECT_USER_ID).encode()).hexdigest()}
        for row in own:
            forms |= {row["pan"], row["phone"], row["aadhaar_ref"],
                      hashlib.sha256(row["phone"].strip().lower().encode()).hexdigest()}
        folders = sorted({workspace.location_of(d) for d in workspace.config.catalog} - {None})
        assert [f for f in folders if f.exists() and find_values(f, forms)], "the person is on disk before the run"

        result = run_demo(root, warehouse=warehouse)  # builds nothing: the lakehouse above is reused

        assert result.build.reused and result.subject_rows == len(own)
        assert result.verification.complete, [(d.dataset, d.state.value) for d in result.verification.open_items()]
        committed = {(r.step.dataset, r.step.action.value) for r in result.run.results if r.state == "committed"}
        assert {("prod.payments", "delete_rows"), ("prod.payments", "rewrite_ref"),
                ("prod.payments", "expire_snapshots")} <= committed
        assert spark.table(f"{CATALOG}.prod.payments").where(f"user_id = {SUBJECT_USER_ID}").count() == 0
        catalogs.forget_tables()  # this instance keeps the tables it loaded before the run: ask the catalog again
        for dataset, entry in iceberg.items():  # the catalog's state is the erased one, for both engines
            assert catalogs.load_table(entry.table).metadata_location == pointer(spark, entry.table), dataset
        left = [f"{folder}: {hit}" for folder in folders if folder.exists() for hit in find_values(folder, forms)]
        assert left == []
        written = [p for p in root.rglob("*") if p.is_file()]
        assert not [p for p in written if PASSWORD.encode() in p.read_bytes()]
