"""One catalog, two engines, on a real PostgreSQL (Debian's server, tests/support/postgres_server.py):
Iceberg tables Spark creates in its JDBC catalog (Debian's libpostgresql-jdbc-java driver) are the
tables pyiceberg's ``sql`` catalog (psycopg2) reads on the same database, and piitracer erases them
through that catalog on Spark, down to the bytes.

The catalog is given to the suite's one Spark session (``spark_lakehouse.spark_for``) at run time:
its jars are fixed at start (the shared settings put the PostgreSQL driver on them), catalogs are
registered when first asked for. No second JVM. The catalog's user logs in with a password that
only the environment holds (``PGPASSWORD``): the workspace names no credential."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from byte_scan import find_values
from spark_lakehouse import (SUBJECT_PANS, SUBJECTS, checksum, cow_properties, mor_properties, new_namespace, rows,
                             settings, spark_for, table_rows, write_workspace)

from executor_runs import run_plan
import piitracer
from piitracer.api import plan_deletion, verify_plan
from piitracer.executor.runner import ExecuteOptions
from piitracer.executor.spark_session import SparkSetupError, spark_session
from piitracer.formats.iceberg_catalogs import IcebergCatalogs
from piitracer.formats.iceberg_eraser import IcebergEraser
from piitracer.formats.iceberg_table import newest_metadata_file
from piitracer.model.outcome import SafetyError
from piitracer.model.plan import Action, Subject
from piitracer.model.settings import IcebergSettings
from piitracer.storage.locations import Location
from piitracer.storage.store import Store

CATALOG = "pgerase"
PASSWORD = "only-in-the-environment-7f3a"


@pytest.fixture(scope="module")
def jdbc(postgres, tmp_path_factory, warehouse: Path):
    """(spark, catalog definition, the catalog's warehouse folder): a database and a password-only
    role in the session's PostgreSQL, ``PGPASSWORD`` set for the module, and the catalog given to
    the suite's Spark session."""
    database = postgres.create_database("erasure")
    user = postgres.create_role("etl", PASSWORD, database)
    folder = tmp_path_factory.mktemp("jdbc-warehouse")
    definition = {"type": "sql", "uri": postgres.sqlalchemy_uri(database, user), "warehouse": str(folder)}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PGPASSWORD", PASSWORD)
        spark_for(warehouse)
        spark = spark_session(settings(), warehouse, IcebergCatalogs(IcebergSettings(catalogs={CATALOG: definition})))
        yield spark, definition, folder


def metadata_location(spark, table: str) -> str:
    """The metadata file Spark's catalog names as the table's current state."""
    loaded = spark._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, table)
    loaded.refresh()
    return str(loaded.operations().current().metadataFileLocation())


def build(spark, ns: str) -> None:
    """A merge-on-read source partitioned by day (two commits) and a copy-on-write table derived
    from it with the key renamed, both in the PostgreSQL catalog."""
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{ns}")
    spark.sql(f"CREATE TABLE {CATALOG}.{ns}.src (user_id BIGINT, pan STRING, amount DOUBLE, dt STRING) USING iceberg "
              f"PARTITIONED BY (dt) TBLPROPERTIES ({mor_properties()})")
    data = rows(extra=300)
    for part in (data[:150], data[150:]):
        spark.createDataFrame(part, "user_id BIGINT, pan STRING, amount DOUBLE, dt STRING").writeTo(f"{CATALOG}.{ns}.src").append()
    spark.sql(f"CREATE TABLE {CATALOG}.{ns}.cow (customer_id BIGINT, pan STRING, amount DOUBLE) USING iceberg "
              f"TBLPROPERTIES ({cow_properties()})")
    spark.sql(f"INSERT INTO {CATALOG}.{ns}.cow SELECT user_id, pan, amount FROM {CATALOG}.{ns}.src")


def workspace(tmp_path: Path, warehouse: Path, folder: Path, definition: dict, ns: str) -> Path:
    """A workspace whose two datasets are tables of the PostgreSQL catalog (``iceberg.catalogs``:
    no password in it), with the SQL that derives one from the other."""
    loc = lambda name: str(folder / ns / name)  # noqa: E731
    catalog = {
        f"{ns}.src": {"format": "iceberg", "write_mode": "merge-on-read", "table": f"{CATALOG}.{ns}.src", "location": loc("src"),
                      "columns": ["user_id", "pan", "amount", "dt"], "identifiers": ["user_id", "pan"], "subject_key": "user_id"},
        f"{ns}.cow": {"format": "iceberg", "write_mode": "copy-on-write", "table": f"{CATALOG}.{ns}.cow", "location": loc("cow"),
                      "columns": ["customer_id", "pan", "amount"]},
    }
    sql = f"INSERT INTO {CATALOG}.{ns}.cow SELECT user_id AS customer_id, pan, amount FROM {CATALOG}.{ns}.src;\n"
    root = write_workspace(tmp_path / "ws", warehouse, catalog, sql, roots=[str(folder), str(warehouse)])
    config = yaml.safe_load((root / "piitracer.yaml").read_text())
    config["iceberg"] = {"catalogs": {CATALOG: definition}}
    config["lineage"]["spark_catalogs"] = ["lake", CATALOG]
    (root / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return root


def test_spark_and_pyiceberg_read_one_table_state_from_the_postgresql_catalog(jdbc) -> None:
    spark, definition, folder = jdbc
    ns = new_namespace("jdbc")
    build(spark, ns)
    table = f"{CATALOG}.{ns}.src"
    catalogs = IcebergCatalogs(IcebergSettings(catalogs={CATALOG: definition}),
                               bindings={Location.parse(folder / ns / "src"): table})
    pointer = metadata_location(spark, table)
    loaded = catalogs.load_table(table)  # pyiceberg's sql catalog, psycopg2, the password from PGPASSWORD
    assert loaded.metadata_location == pointer
    assert loaded.location().removeprefix("file:") == str(folder / ns / "src")
    assert checksum(tuple(r.values()) for r in loaded.scan().to_arrow().to_pylist()) == checksum(table_rows(spark, table))
    # plan, execute and verify read the state the catalog names (formats/iceberg_table.py)
    assert newest_metadata_file(Location.parse(folder / ns / "src"), Store(pointers=catalogs)).uri.removeprefix("file:") \
        == pointer.removeprefix("file:")
    spark.sql(f"DELETE FROM {table} WHERE user_id = {SUBJECTS[0]}")  # Spark commits behind the loaded table's back:
    assert catalogs.load_table(table).metadata_location == pointer  # loaded once, kept (one ask per use case) ...
    Store(pointers=catalogs).committed(Location.parse(folder / ns / "src"))  # ... until the committing step says so
    assert catalogs.load_table(table).metadata_location == metadata_location(spark, table) != pointer
    assert catalogs.loads == 2
    # Where Spark shows configuration (its UI, event log), the catalog's credential keys are redacted.
    redaction = re.compile(spark.sparkContext.getConf().get("spark.redaction.regex"))
    assert all(redaction.search(f"spark.sql.catalog.{CATALOG}.{key}") for key in ("jdbc.password", "credential", "token"))


def test_the_erasure_runs_on_spark_through_the_jdbc_catalog_to_the_bytes(tmp_path: Path, warehouse: Path, jdbc,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    spark, definition, folder = jdbc
    ns = new_namespace("jdbc")
    build(spark, ns)
    ws = piitracer.load_workspace(workspace(tmp_path, warehouse, folder, definition, ns))
    tables = {name: f"{CATALOG}.{ns}.{name}" for name in ("src", "cow")}
    keep = {name: checksum(r for r in table_rows(spark, t) if r[0] not in SUBJECTS) for name, t in tables.items()}
    for name in tables:  # the test can fail: before the plan runs, the values are on disk
        assert find_values(folder / ns / name, SUBJECTS + SUBJECT_PANS)

    subjects = [Subject(value=str(u), request_id=f"r{u}", received_at="2026-11-20T09:00:00Z") for u in SUBJECTS]
    plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), [f"{ns}.src.user_id"], subjects)
    assert plan.decision(f"{ns}.cow").key_column == "customer_id"
    assert {getattr(s.engine, "value", "spark") for s in plan.steps if s.dataset in (f"{ns}.src", f"{ns}.cow")} == {"spark"}
    caplog.set_level("DEBUG")
    summary = run_plan(ws, plan, ExecuteOptions(no_concurrent_writers=True))

    assert summary.status == "complete", [(r.step.id, r.state, r.message) for r in summary.results]
    deletes = {r.step.dataset: r.outcome.rows_deleted for r in summary.results if r.step.action is Action.DELETE_ROWS}
    assert deletes == {f"{ns}.src": 6, f"{ns}.cow": 6}
    assert any(r.step.action is Action.REWRITE_DATA_FILES and r.state == "committed" for r in summary.results)
    catalogs = IcebergCatalogs(IcebergSettings(catalogs={CATALOG: definition}))
    for name, table in tables.items():
        remaining = table_rows(spark, table)
        assert not [r for r in remaining if r[0] in SUBJECTS or r[1] in SUBJECT_PANS]
        assert checksum(remaining) == keep[name], f"{name}: other rows changed"
        through_pyiceberg = catalogs.load_table(table)  # the catalog's state is the erased one
        assert through_pyiceberg.metadata_location == metadata_location(spark, table)
        assert checksum(tuple(r.values()) for r in through_pyiceberg.scan().to_arrow().to_pylist()) == keep[name]
        assert find_values(folder / ns / name, SUBJECTS + SUBJECT_PANS) == [], f"{name}: subject bytes remain"
    report = verify_plan(ws, plan)
    assert report.complete, [(i.dataset, i.state.value) for i in report.open_items()]
    # The password lived in the environment only: not in the workspace's files or what was logged.
    written = [p for p in ws.root.rglob("*") if p.is_file()]
    assert written and not [p for p in written if PASSWORD.encode() in p.read_bytes()]
    assert PASSWORD not in caplog.text


def test_execute_gives_spark_the_workspaces_catalog_for_tables_pyiceberg_wrote(tmp_path: Path, warehouse: Path,
                                                                               postgres, jdbc) -> None:
    """A catalog only the workspace names (``pgexec``: no Spark session has it yet), its table
    written by pyiceberg: ``execute`` gives Spark the catalog from the same definition, as a fresh
    ``piitracer execute`` process does, and Spark erases the pyiceberg-written table through it."""
    import pyarrow as pa

    spark, definition, _ = jdbc
    folder = tmp_path / "pyiceberg-warehouse"
    mine = {**definition, "warehouse": str(folder)}
    assert spark.conf.get("spark.sql.catalog.pgexec", None) is None
    ns = new_namespace("pyi")
    writer = IcebergCatalogs(IcebergSettings(catalogs={"pgexec": mine})).catalog("pgexec")
    writer.create_namespace(ns)
    data = pa.table({"user_id": pa.array([r[0] for r in rows(extra=40)], pa.int64()),
                     "pan": [r[1] for r in rows(extra=40)]})
    table = writer.create_table(f"{ns}.src", schema=data.schema, properties={"format-version": "2"})
    table.append(data.slice(0, 20))
    table.append(data.slice(20))
    location = table.location().removeprefix("file:")  # pyiceberg's own layout: <warehouse>/<ns>.db/<table>
    catalog = {f"{ns}.src": {"format": "iceberg", "table": f"pgexec.{ns}.src", "location": location,
                             "columns": ["user_id", "pan"], "identifiers": ["user_id", "pan"], "subject_key": "user_id"}}
    root = write_workspace(tmp_path / "ws", warehouse, catalog, "SELECT 1;", roots=[str(folder), str(warehouse)])
    config = yaml.safe_load((root / "piitracer.yaml").read_text())
    config["iceberg"] = {"catalogs": {"pgexec": mine}}
    (root / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    ws = piitracer.load_workspace(root)
    keep = checksum((u, pan) for u, pan in zip(data["user_id"].to_pylist(), data["pan"].to_pylist()) if u not in SUBJECTS)

    subjects = [Subject(value=str(u), request_id=f"r{u}", received_at="2026-11-20T09:00:00Z") for u in SUBJECTS]
    plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), [f"{ns}.src.user_id"], subjects)
    summary = run_plan(ws, plan, ExecuteOptions(no_concurrent_writers=True))

    assert summary.status == "complete", [(r.step.id, r.state, r.message) for r in summary.results]
    assert {r.step.dataset: r.outcome.rows_deleted for r in summary.results if r.step.action is Action.DELETE_ROWS} == \
        {f"{ns}.src": 6}
    assert spark.conf.get("spark.sql.catalog.pgexec") == "org.apache.iceberg.spark.SparkCatalog"
    assert checksum(table_rows(spark, f"pgexec.{ns}.src")) == keep
    assert checksum(tuple(r.values()) for r in writer.load_table(f"{ns}.src").scan().to_arrow().to_pylist()) == keep
    assert find_values(Path(location), SUBJECTS + SUBJECT_PANS) == []


def test_spark_refuses_a_catalog_table_that_is_not_at_its_catalogued_location(jdbc, tmp_path: Path) -> None:
    spark, _, folder = jdbc
    ns = new_namespace("jdbc")
    build(spark, ns)
    IcebergEraser(spark, f"{CATALOG}.{ns}.src", Location.parse(folder / ns / "src")).check_location()  # the right place
    with pytest.raises(SafetyError, match="not at its catalogued location"):
        IcebergEraser(spark, f"{CATALOG}.{ns}.src", Location.parse(folder / ns / "cow")).check_location()


def test_a_catalog_spark_cannot_load_is_left_out_and_its_steps_say_why(jdbc, warehouse: Path, tmp_path: Path) -> None:
    spark, definition, _ = jdbc
    # No AWS SDK on this machine's classpath (shared/lakehouse-notes.md): Glue cannot load in Spark.
    others = {"gluecat": {"type": "glue", "warehouse": "s3://lake/wh", "glue.region": "ap-south-1"},
              "mem": {"type": "in-memory"}}
    spark_session(settings(), warehouse, IcebergCatalogs(IcebergSettings(catalogs=others)))
    assert spark.conf.get("spark.sql.catalog.gluecat", None) is None
    with pytest.raises(SafetyError, match="GlueClient .*iceberg-aws-bundle"):
        IcebergEraser(spark, "gluecat.fin.payments", Location.parse(tmp_path)).check_location()
    with pytest.raises(SafetyError, match="'in-memory'"):
        IcebergEraser(spark, "mem.fin.payments", Location.parse(tmp_path)).check_location()
    with pytest.raises(SafetyError, match="Spark has no Iceberg catalog 'nowhere'"):
        IcebergEraser(spark, "nowhere.fin.payments", Location.parse(tmp_path)).check_location()
    # The catalog Spark has loaded cannot change under it: another definition of the name is refused,
    # naming what differs, not its value.
    moved = {**definition, "warehouse": str(tmp_path / "elsewhere")}
    with pytest.raises(SparkSetupError, match=r"'pgerase'.*\(spark\.sql\.catalog\.pgerase\.warehouse\)") as refused:
        spark_session(settings(), warehouse, IcebergCatalogs(IcebergSettings(catalogs={CATALOG: moved})))
    assert str(tmp_path) not in str(refused.value)
