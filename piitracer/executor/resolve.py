"""Resolve, before anything is deleted: read the subjects' rows in each source and capture every
identifier value they hold and every computed key downstream tables need, evaluated by Spark's own
functions so they match what the pipelines wrote."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from piitracer.model.plan import DeletionPlan, ValueKind

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SUBJECT_COLUMN = "__piitracer_subject"


def subject_frame(spark: "SparkSession", values: list[Any], data_type) -> "DataFrame":
    """The values as a one-column DataFrame of ``data_type``: bound as data, never SQL text. A
    value that does not cast to the type cannot match and is dropped."""
    from pyspark.sql import functions as F

    frame = spark.createDataFrame([(None if v is None else str(v),) for v in values], f"{SUBJECT_COLUMN} STRING")
    typed = frame.select(F.col(SUBJECT_COLUMN).cast(data_type).alias(SUBJECT_COLUMN))
    return typed.where(F.col(SUBJECT_COLUMN).isNotNull()).distinct()


def resolve_values(
    spark: "SparkSession", plan: DeletionPlan, source_frame: Callable[[str], "DataFrame"]
) -> dict[str, list[Any]]:
    """Value set name -> sorted distinct values, for every identifier and computed key of the plan."""
    from pyspark.sql import functions as F

    value_sets: dict[str, list[Any]] = {}
    subject_values = [s.value for s in plan.subjects]
    for capture in plan.resolve:
        frame = source_frame(capture.dataset)
        matched = None
        for key in capture.key_columns:
            subjects = subject_frame(spark, subject_values, frame.schema[key].dataType)
            rows = frame.join(F.broadcast(subjects), frame[key] == subjects[SUBJECT_COLUMN], "left_semi")
            matched = rows if matched is None else matched.unionByName(rows)
            # The subjects' own key values count even where the source has no row of theirs (left
            # over downstream after an earlier partial erasure).
            name = f"{capture.dataset}.{key}"
            value_sets[name] = sorted({r[0] for r in subjects.collect()}, key=repr)
        computed = [v for v in capture.computed if v.kind is ValueKind.COMPUTED]
        projections = [F.col(c).alias(f"i{i}") for i, c in enumerate(capture.identifiers)]
        projections += [F.expr(v.expression).alias(f"c{i}") for i, v in enumerate(computed)]
        collected = matched.select(*projections).distinct().collect() if matched is not None else []
        for i, column in enumerate(capture.identifiers):
            name = f"{capture.dataset}.{column}"
            found = {row[f"i{i}"] for row in collected if row[f"i{i}"] is not None}
            value_sets[name] = sorted(found | set(value_sets.get(name, [])), key=repr)
        for i, value in enumerate(computed):
            value_sets[value.name] = sorted({row[f"c{i}"] for row in collected if row[f"c{i}"] is not None}, key=repr)
    return value_sets


def values_for(step_sources, value_sets: dict[str, list[Any]]) -> list[Any]:
    """The union of the value sets a step's key column is matched against."""
    values: set[Any] = set()
    for source in step_sources:
        values.update(value_sets.get(source.name, []))
    return sorted(values, key=repr)
