"""Real local lakehouses for executor tests: one Spark session (local mode, the real Iceberg jar)
per test process, one shared warehouse, one namespace per test."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path
from typing import Any, Iterable

import yaml

from piitracer.executor.spark_session import spark_session
from piitracer.formats.iceberg_spark import DRIVERS
from piitracer.model.settings import SparkSettings

_namespaces = itertools.count(1)


# Debian's PostgreSQL JDBC driver (libpostgresql-jdbc-java, installed by scripts/setup.sh) is on the
# shared session's classpath from its start: jars are fixed when a session starts, and a test gives
# the running session a JDBC catalog later (catalogs are registered when first asked for).
POSTGRES_JDBC_JAR = DRIVERS["postgresql"].debian_jar


def settings() -> SparkSettings:
    conf = {"spark.ui.showConsoleProgress": "false"}
    if Path(POSTGRES_JDBC_JAR).is_file():
        conf["spark.jars"] = POSTGRES_JDBC_JAR
    return SparkSettings(master="local[2]", catalog="lake", driver_memory="1g", conf=conf)


def spark_for(warehouse: Path):
    return spark_session(settings(), warehouse)


def new_namespace(prefix: str = "t") -> str:
    return f"{prefix}{next(_namespaces)}"


def write_workspace(folder: Path, warehouse: Path, catalog: dict[str, dict], sql: str,
                    roots: list[str] | None = None) -> Path:
    """A workspace folder whose Spark settings point at the shared warehouse; ``roots`` are its
    warehouse roots (default: the warehouse and every absolute catalog location)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sql").mkdir(exist_ok=True)
    (folder / "sql" / "pipelines.sql").write_text(sql)
    config = {
        "lineage": {"sql": [{"path": "sql"}], "spark_catalogs": ["lake"]},
        # The shared session's settings (its jars too): whichever starts it first, it is the same session.
        "spark": {"master": "local[2]", "catalog": "lake", "warehouse": str(warehouse), "driver_memory": "1g",
                  "conf": dict(settings().conf)},
        "catalog": catalog,
        # Every place a run may change lies inside a root: the shared warehouse and the tables' own folders.
        "warehouse_roots": roots if roots is not None else table_roots(warehouse, catalog),
    }
    (folder / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return folder


def table_roots(warehouse: Path, catalog: dict[str, dict]) -> list[str]:
    """The warehouse and every absolute catalog location (a relative one lies in the workspace)."""
    places = {str(warehouse)}
    for entry in catalog.values():
        location = entry.get("location")
        if location and (str(location).startswith("/") or "://" in str(location)):
            places.add(str(location))
        for replica in entry.get("replicas", ()):
            if str(replica.get("location", "")).startswith("/"):
                places.add(str(replica["location"]))
    return sorted(places)


def checksum(rows: Iterable[tuple[Any, ...]]) -> tuple[int, str]:
    """(count, sha256 over the sorted rows): equal for the same multiset of rows."""
    ordered = sorted(repr(tuple(r)) for r in rows)
    return len(ordered), hashlib.sha256("\n".join(ordered).encode()).hexdigest()


def mor_properties() -> str:
    return ("'format-version'='2', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
            "'write.merge.mode'='merge-on-read'")


def cow_properties() -> str:
    return ("'format-version'='2', 'write.delete.mode'='copy-on-write', 'write.update.mode'='copy-on-write', "
            "'write.merge.mode'='copy-on-write'")


# The smallest user ids and PANs (the worst case: they are every statistics' minimum), distinctive
# enough that no count or size in the metadata equals them.
SUBJECTS = [7_000_000_001, 7_000_000_002, 7_000_000_003]
SUBJECT_PANS = [f"0000-0000-0000-000{i}" for i in range(1, 4)]


def rows(extra: int = 1500) -> list[tuple]:
    data = [(u, pan, 10.5, "2026-11-01") for u, pan in zip(SUBJECTS, SUBJECT_PANS) for _ in range(2)]
    data += [(8_000_000_000 + i, f"4111-0000-{i:04d}-1111", float(i), f"2026-11-0{1 + i % 3}") for i in range(extra)]
    return data


def build(spark, warehouse: Path, ns: str, data: list[tuple] | None = None) -> None:
    """A merge-on-read source, a copy-on-write copy with the key renamed, and a shallow clone."""
    spark.sql(f"CREATE TABLE lake.{ns}.src (user_id BIGINT, pan STRING, amount DOUBLE, dt STRING) USING iceberg "
              f"PARTITIONED BY (dt) TBLPROPERTIES ({mor_properties()})")
    data = data or rows()
    for part in (data[:700], data[700:]):  # two commits: several data files per partition
        spark.createDataFrame(part, "user_id BIGINT, pan STRING, amount DOUBLE, dt STRING").writeTo(f"lake.{ns}.src").append()
    spark.sql(f"CREATE TABLE lake.{ns}.cow (customer_id BIGINT, pan STRING, amount DOUBLE) USING iceberg TBLPROPERTIES ({cow_properties()})")
    spark.sql(f"INSERT INTO lake.{ns}.cow SELECT user_id, pan, amount FROM lake.{ns}.src")
    # A shallow clone: a table whose manifests point at the source's own data files.
    spark.sql(f"CREATE TABLE lake.{ns}.clone (user_id BIGINT, pan STRING, amount DOUBLE, dt STRING) USING iceberg "
              f"PARTITIONED BY (dt) TBLPROPERTIES ({mor_properties()})")
    spark.sql(f"CALL lake.system.add_files(table => '{ns}.clone', source_table => '`parquet`.`{warehouse / ns / 'src' / 'data'}`')")


def workspace(tmp_path: Path, warehouse: Path, ns: str) -> Path:
    """The catalog and the SQL lineage of :func:`build`'s tables."""
    loc = lambda name: str(warehouse / ns / name)  # noqa: E731
    catalog = {
        f"{ns}.src": {"format": "iceberg", "write_mode": "merge-on-read", "table": f"lake.{ns}.src", "location": loc("src"),
                      "columns": ["user_id", "pan", "amount", "dt"], "identifiers": ["user_id", "pan"], "subject_key": "user_id"},
        f"{ns}.cow": {"format": "iceberg", "write_mode": "copy-on-write", "table": f"lake.{ns}.cow", "location": loc("cow"),
                      "columns": ["customer_id", "pan", "amount"]},
        f"{ns}.clone": {"format": "iceberg", "write_mode": "merge-on-read", "table": f"lake.{ns}.clone", "location": loc("clone"),
                        "clone_of": {"dataset": f"{ns}.src", "mode": "shallow"}},
    }
    sql = f"INSERT INTO lake.{ns}.cow SELECT user_id AS customer_id, pan, amount FROM lake.{ns}.src;\n"
    return write_workspace(tmp_path / "ws", warehouse, catalog, sql)


def table_rows(spark, table: str) -> list[tuple]:
    return [tuple(r) for r in spark.table(table).collect()]


def single_source_plan(tmp_path: Path, warehouse: Path, table: str, subjects: Iterable[Any], **entry: Any):
    """(workspace, plan) erasing ``subjects`` from one Iceberg merge-on-read source ``table``
    (``lake.<ns>.src``: user_id, pan, amount, dt; subject key user_id) with no lineage; ``entry``
    adds catalog fields (``delete_mode``...)."""
    import piitracer
    from piitracer.api import plan_deletion
    from piitracer.model.plan import Subject

    dataset = table.split(".", 1)[1]
    catalog = {dataset: {"format": "iceberg", "write_mode": "merge-on-read", "table": table,
                         "location": str(warehouse / Path(*dataset.split("."))), "columns": ["user_id", "pan", "amount", "dt"],
                         "identifiers": ["user_id", "pan"], "subject_key": "user_id", **entry}}
    ws = piitracer.load_workspace(write_workspace(tmp_path / "ws", warehouse, catalog, "SELECT 1;"))
    people = [Subject(value=str(u), request_id=f"r{u}", received_at="2026-11-20T09:00:00Z") for u in subjects]
    return ws, plan_deletion(ws, piitracer.build_lineage_graph(ws), [f"{dataset}.user_id"], people)


def record_made_plan(workspace, plan, key: str) -> None:
    """What `piitracer plan -o` does when it writes a plan: record its id and its subjects' keyed
    digests in the workspace's audit log (execute runs only plans recorded there). For tests that
    make their plan through the API."""
    from piitracer.api import audit_log, record_plan
    from piitracer.audit import load_audit_key

    with audit_log(workspace, key=load_audit_key(key)) as log:
        record_plan(log, plan)
