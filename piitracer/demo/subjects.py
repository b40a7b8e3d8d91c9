"""The demo's data subjects: the README's user, or a seeded sample of users that still have rows.
Subject values are bound as data (DataFrame filters), never pasted into SQL text."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Sequence

from piitracer.demo.iceberg_tables import DemoBuildError, quoted_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def existing_subjects(spark: "SparkSession", table: str, column: str, count: int, seed: int) -> list[str]:
    """``count`` distinct values of ``column`` that have rows in ``table``, a seeded sample (the same
    lakehouse state gives the same subjects)."""
    values = sorted(str(row[0]) for row in spark.table(quoted_table(table)).select(column).distinct().collect()
                    if row[0] is not None)
    if count > len(values):
        raise DemoBuildError(f"--subjects {count}: the source holds only {len(values)} subjects")
    return sorted(random.Random(seed).sample(values, count))


def subject_rows(spark: "SparkSession", table: str, column: str, values: Sequence[str]) -> int:
    """How many rows of ``table`` hold one of ``values`` in ``column`` (compared as text)."""
    from pyspark.sql import functions as F

    return spark.table(quoted_table(table)).where(F.col(column).cast("string").isin(list(values))).count()
