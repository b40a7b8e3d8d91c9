"""Creating and dropping the demo's Iceberg tables with the catalog's formats: format-version 2
(one table format-version 3, whose deletes write deletion vectors) and the write mode
(merge-on-read or copy-on-write) the catalog declares for each table."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from piitracer.model.table_properties import iceberg_properties
from piitracer.model.workspace import CatalogDataset, IcebergWriteMode
from piitracer.model.errors import UnavailableError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType


class DemoBuildError(UnavailableError, RuntimeError):
    """The demo lakehouse cannot be built as the workspace describes it; the message says why."""


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def quoted_table(table: str) -> str:
    """``lake.prod.payments`` -> ```lake`.`prod`.`payments```."""
    return ".".join(quote(part) for part in table.split("."))


# Newer engines create v3 tables by default: the demo erases one (its DELETE writes Puffin
# deletion vectors, which rewrite_data_files applies). By namespace.table, in whichever catalog.
FORMAT_V3_TABLES = frozenset({"analytics.user_monthly_spend"})


def table_properties(entry: CatalogDataset) -> dict[str, str]:
    """Iceberg properties for the catalog entry: format-version 2 (3 for ``FORMAT_V3_TABLES``),
    its delete/update/merge mode and its retention, as the table itself would carry them
    (``model.table_properties``)."""
    return {"format-version": "3" if (entry.table or "").lower().split(".", 1)[-1] in FORMAT_V3_TABLES else "2",
            **iceberg_properties(entry.retention, entry.write_mode or IcebergWriteMode.MERGE_ON_READ)}


def check_location(dataset: str, entry: CatalogDataset, location: Path | None, warehouse: Path) -> None:
    """A hadoop catalog puts ``catalog.db.t`` at ``<warehouse>/db/t``, and so does Spark's JDBC catalog
    for a table it creates (``warehouse``: the table's catalog's): the catalog's location must agree,
    or planning and verification would look at another folder than Spark writes."""
    if not entry.table:
        raise DemoBuildError(f"catalog.{dataset}: an Iceberg dataset needs 'table:' for the demo to create it")
    parts = entry.table.split(".")
    expected = Path(warehouse, *parts[1:]).absolute()
    if location is None or Path(location).absolute() != expected:
        raise DemoBuildError(f"catalog.{dataset}.location: {location} is not where its catalog keeps "
                             f"{entry.table} ({expected}); point it at the catalog's warehouse folder")


def create_table(spark: "SparkSession", entry: CatalogDataset, schema: "StructType",
                 columns: Sequence[str] = (), partitioned_by: Sequence[str] = ()) -> None:
    """``CREATE TABLE IF NOT EXISTS`` with ``schema``'s types, renamed to ``columns`` (by position)
    when given, partitioned by identity columns, with the catalog's write mode."""
    names = list(columns) if len(columns) == len(schema.fields) else [f.name for f in schema.fields]
    body = ", ".join(f"{quote(name)} {field.dataType.simpleString()}" for name, field in zip(names, schema.fields))
    partitions = f" PARTITIONED BY ({', '.join(quote(c) for c in partitioned_by)})" if partitioned_by else ""
    properties = ", ".join(f"'{k}'='{v}'" for k, v in table_properties(entry).items())
    namespace = ".".join(quoted_table(entry.table).split(".")[:-1])
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {quoted_table(entry.table)} ({body}) USING iceberg{partitions} "
              f"TBLPROPERTIES ({properties})")


def drop_table(spark: "SparkSession", table: str) -> None:
    """Drop a table; the hadoop catalog deletes its folder. No PURGE: a shallow clone's manifests
    list the source's data files, and purging the clone would delete files the source still uses."""
    spark.sql(f"DROP TABLE IF EXISTS {quoted_table(table)}")
