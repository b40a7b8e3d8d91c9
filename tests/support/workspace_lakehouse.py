"""A whole workspace with its lakehouse inside it, as a team keeps one: ``piitracer.yaml``, the
pipelines' SQL, an Iceberg warehouse (merge-on-read source, copy-on-write copy, a shallow clone), a
Delta table and a plain Parquet folder, all under the workspace folder with relative locations.

Built in its own process (``python tests/support/workspace_lakehouse.py FOLDER``): the test process's Spark
session is bound to the shared test warehouse, and this lakehouse needs its own."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

SUBJECT = 7_000_000_001
OTHERS = [8_000_000_000 + i for i in range(600)]
MOR = ("'format-version'='2', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
       "'write.merge.mode'='merge-on-read'")
COW = ("'format-version'='2', 'write.delete.mode'='copy-on-write', 'write.update.mode'='copy-on-write', "
       "'write.merge.mode'='copy-on-write'")


def config() -> dict:
    columns = ["user_id", "pan", "amount"]
    return {
        "lineage": {"sql": [{"path": "sql"}], "spark_catalogs": ["lake"]},
        "spark": {"master": "local[1]", "catalog": "lake", "warehouse": "warehouse", "driver_memory": "1g",
                  "conf": {"spark.ui.showConsoleProgress": "false"}},
        "warehouse_roots": ["warehouse", "delta", "parquet"],
        "catalog": {
            "shop.users": {"format": "iceberg", "table": "lake.shop.users", "location": "warehouse/shop/users",
                           "columns": columns, "identifiers": ["user_id", "pan"], "subject_key": "user_id",
                           "column_types": {"user_id": "bigint", "pan": "string"}},
            "shop.orders": {"format": "iceberg", "write_mode": "copy-on-write", "table": "lake.shop.orders",
                            "location": "warehouse/shop/orders", "columns": ["customer_id", "pan", "amount"]},
            "dev.users_shallow": {"format": "iceberg", "table": "lake.dev.users_shallow",
                                  "location": "warehouse/dev/users_shallow", "columns": columns,
                                  "clone_of": {"dataset": "shop.users", "mode": "shallow"}},
            "shop.events": {"format": "delta", "location": "delta/shop/events", "columns": columns},
            "shop.exports": {"format": "parquet", "location": "parquet/shop/exports", "columns": columns},
        },
    }


SQL = """INSERT INTO lake.shop.orders SELECT user_id AS customer_id, pan, amount FROM lake.shop.users;
INSERT INTO shop.events SELECT user_id, pan, amount FROM lake.shop.users;
INSERT INTO shop.exports SELECT user_id, pan, amount FROM lake.shop.users;
"""


def build(folder: Path) -> None:
    from deltalake import write_deltalake

    from piitracer.executor.spark_session import spark_session
    from piitracer.model.settings import SparkSettings

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sql").mkdir(exist_ok=True)
    (folder / "sql" / "pipelines.sql").write_text(SQL)
    (folder / "piitracer.yaml").write_text(yaml.safe_dump(config(), sort_keys=False))
    settings = SparkSettings(**config()["spark"])
    spark = spark_session(settings, folder / "warehouse")
    rows = [(SUBJECT, "0000-0000-0000-0001", 1.0)] * 2 + [(u, f"4111-0000-{i:04d}-1111", float(i)) for i, u in enumerate(OTHERS)]
    schema = "user_id BIGINT, pan STRING, amount DOUBLE"
    spark.sql(f"CREATE TABLE lake.shop.users (user_id BIGINT, pan STRING, amount DOUBLE) USING iceberg TBLPROPERTIES ({MOR})")
    for part in (rows[:300], rows[300:]):
        spark.createDataFrame(part, schema).writeTo("lake.shop.users").append()
    spark.sql(f"CREATE TABLE lake.shop.orders (customer_id BIGINT, pan STRING, amount DOUBLE) USING iceberg TBLPROPERTIES ({COW})")
    spark.sql("INSERT INTO lake.shop.orders SELECT user_id, pan, amount FROM lake.shop.users")
    spark.sql(f"CREATE TABLE lake.dev.users_shallow (user_id BIGINT, pan STRING, amount DOUBLE) USING iceberg TBLPROPERTIES ({MOR})")
    spark.sql("CALL lake.system.add_files(table => 'dev.users_shallow', source_table => "
              f"'`parquet`.`{folder / 'warehouse' / 'shop' / 'users' / 'data'}`')")
    table = pa.Table.from_pylist([{"user_id": u, "pan": p, "amount": a} for u, p, a in rows],
                                 pa.schema([("user_id", pa.int64()), ("pan", pa.string()), ("amount", pa.float64())]))
    write_deltalake(str(folder / "delta" / "shop" / "events"), table)
    (folder / "parquet" / "shop" / "exports").mkdir(parents=True)
    pq.write_table(table, folder / "parquet" / "shop" / "exports" / "part-0.parquet")
    spark.stop()


if __name__ == "__main__":
    build(Path(sys.argv[1]).absolute())
