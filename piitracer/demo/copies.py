"""Copies of the demo's data outside its pipelines: dev clones (shallow and deep) and the weekly
archive of snapshot exports."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from piitracer.demo.arrow_bridge import read_delta
from piitracer.demo.iceberg_tables import create_table, quoted_table
from piitracer.demo.sql_pipelines import write_delta, write_parquet_files
from piitracer.model.workspace import CatalogDataset

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def iceberg_deep_clone(spark: "SparkSession", source: CatalogDataset, clone: CatalogDataset, partitioned_by: Sequence[str]) -> None:
    """A full copy: its own data files, one commit."""
    schema = spark.table(quoted_table(source.table)).schema
    create_table(spark, clone, schema, partitioned_by=partitioned_by)
    spark.sql(f"INSERT INTO {quoted_table(clone.table)} SELECT * FROM {quoted_table(source.table)}")


def iceberg_shallow_clone(spark: "SparkSession", source: CatalogDataset, source_location: Path,
                          clone: CatalogDataset, partitioned_by: Sequence[str]) -> None:
    """A table whose manifests point at the source's own data files (``add_files`` registers them
    in place, copying nothing). The source must hold only live data files (appends, no deletes):
    add_files registers every Parquet file under the folder."""
    schema = spark.table(quoted_table(source.table)).schema
    create_table(spark, clone, schema, partitioned_by=partitioned_by)
    catalog, namespace_table = clone.table.split(".", 1)
    data_folder = str(Path(source_location, "data")).replace("`", "``")
    spark.sql(f"CALL {catalog}.system.add_files(table => '{namespace_table}', source_table => '`parquet`.`{data_folder}`')")


def delta_deep_clone(source_location: Path, clone_location: Path, configuration: Mapping[str, str] | None = None) -> None:
    """A Delta table of the source's current rows, in one commit (created with ``configuration``)."""
    write_delta(clone_location, read_delta(source_location), overwrite=True, configuration=configuration)


def weekly_exports(payments: pa.Table, location: Path, export_dates: Sequence[date]) -> None:
    """One folder per export date (``YYYY-MM-DD/``) holding the table as it was that day: every
    payment up to the date, as plain Parquet (what a cold-storage export job writes)."""
    for day in export_dates:
        snapshot = payments.filter(pc.less_equal(payments["dt"], pa.scalar(day, pa.date32())))
        write_parquet_files(location / day.isoformat(), snapshot, overwrite=True, stem="payments")
