"""Moving tables between Spark and Arrow: Spark has no Delta reader or writer here, so Delta and
Parquet tables reach Spark as temp views of their Arrow data, and query results leave Spark as
Arrow tables that delta-rs or pyarrow write."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def enable_arrow(spark: "SparkSession") -> None:
    """Let Spark convert to and from pandas through Arrow (columnar, fast) for this session."""
    spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", "true")
    spark.conf.set("spark.sql.execution.arrow.pyspark.fallback.enabled", "false")


def to_arrow(frame: "DataFrame") -> pa.Table:
    """A Spark result as an Arrow table with Spark's own types (decimals keep their scale)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    schema = to_arrow_schema(frame.schema)
    return pa.Table.from_pandas(frame.toPandas(), schema=schema, preserve_index=False)


def to_spark(spark: "SparkSession", table: pa.Table) -> "DataFrame":
    """An Arrow table as a Spark DataFrame, with the Arrow types mapped to Spark's."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return spark.createDataFrame(table.to_pandas(), schema=from_arrow_schema(table.schema))


def read_delta(location: Path) -> pa.Table:
    """The current version of a Delta table (delta-rs reads the log: removed files stay out)."""
    from deltalake import DeltaTable

    return DeltaTable(str(location)).to_pyarrow_table()


def read_parquet_folder(location: Path) -> pa.Table:
    """Every Parquet file under a plain (non-Delta) folder, as one table."""
    files = sorted(p for p in Path(location).rglob("*.parquet") if p.is_file())
    if not files:
        raise FileNotFoundError(f"{location}: no Parquet files")
    return pa.concat_tables([pq.read_table(p) for p in files])
