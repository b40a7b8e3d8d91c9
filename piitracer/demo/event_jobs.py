"""The three tables whose lineage exists only as OpenLineage events (``events/``), built by code
that does what the events say (the latest event of a job wins, as in the ingest):

- ``ml.payment_features`` (Iceberg): per user, a vault token of ``user_id`` (masked, transform not
  published), 7-day amount and count, merchant diversity, the feature date; appended per run.
- ``support.phone_directory`` (Delta): per phone, the merchant and date of its latest payment
  (strings, as the event's schema says); overwritten per sync.
- ``finance.settlements`` (Parquet): per day, user and card, the settled amount of payments to
  merchants that are not blocked; one file per settlement day.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from piitracer.demo.arrow_bridge import ArrowBridge
from piitracer.demo.iceberg_tables import create_table, quoted_table
from piitracer.demo.sql_pipelines import write_delta, write_parquet_files

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# Stands in for the token vault's secret: the planner must not be able to recompute the token
# (the event publishes no transform), so the demo keys its hash with a value no catalog names.
VAULT_KEY = "demo-token-vault-k1"
BLOCKED_MERCHANT_EVERY = 50  # merchant ids divisible by this are blocked from settlement


def payment_features(spark: "SparkSession", payments: "DataFrame", table: str, entry, as_of: date) -> None:
    """Append the features of the 7 days up to ``as_of`` to the Iceberg table ``table``."""
    from pyspark.sql import functions as F

    window = payments.where((F.col("dt") > F.date_sub(F.lit(as_of), 7)) & (F.col("dt") <= F.lit(as_of)))
    features = window.groupBy("user_id").agg(
        F.sum("amount").cast("decimal(14,2)").alias("amount_7d"),
        F.count(F.lit(1)).alias("txn_count_7d"),
        F.countDistinct("merchant_id").alias("merchant_diversity"),
        F.max("dt").alias("dt"),
    ).select(
        F.substring(F.sha2(F.concat(F.lit(VAULT_KEY + ":"), F.col("user_id").cast("string")), 256), 1, 32).alias("user_token"),
        "amount_7d", "txn_count_7d", "merchant_diversity", "dt",
    )
    create_table(spark, entry, features.schema)
    features.writeTo(quoted_table(table)).append()


def phone_directory(bridge: ArrowBridge, payments: "DataFrame", location: Path,
                    configuration: Mapping[str, str] | None = None) -> None:
    """Overwrite the Delta phone directory: each phone's latest merchant and payment date (a new
    table gets ``configuration``)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    latest = Window.partitionBy("phone").orderBy(F.col("dt").desc(), F.col("merchant_id").desc())
    directory = (payments.where(F.col("phone").isNotNull())
                 .withColumn("rank", F.row_number().over(latest)).where("rank = 1")
                 .select("phone", F.col("merchant_id").cast("string").alias("last_merchant_id"),
                         F.col("dt").cast("string").alias("last_seen")))
    write_delta(location, bridge.to_arrow(directory), overwrite=True, configuration=configuration)


def settlements(bridge: ArrowBridge, payments: "DataFrame", location: Path, days: Sequence[date]) -> None:
    """Write one Parquet file per settlement day in ``days`` (the daily job settles yesterday)."""
    from pyspark.sql import functions as F

    settled = (payments.where(F.col("dt").isin(list(days)) & (F.col("merchant_id") % BLOCKED_MERCHANT_EVERY != 0))
               .groupBy("dt", "user_id", F.substring("pan", -4, 4).alias("pan_last4"))
               .agg(F.sum("amount").cast("decimal(14,2)").alias("settled_amount"))
               .select("user_id", "pan_last4", "settled_amount", "dt"))
    data = bridge.to_arrow(settled)
    for day in days:
        one_day = data.filter(pc.equal(data["dt"], pa.scalar(day, pa.date32()))).sort_by("user_id")
        write_parquet_files(location, one_day, overwrite=False, stem=f"settlements-{day.isoformat()}")
