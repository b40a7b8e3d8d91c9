"""Resolve, before anything is deleted: read the subjects' rows in each source and capture every
identifier value they hold and every computed key downstream tables need, evaluated by Spark's own
functions so they match what the pipelines wrote.

Values are always bound as typed data, never cast: the subjects' values are parsed strictly
against the key column's type (``model.key_values``), and the values a later step matches are
kept only when they are exactly of the key column's type (an integer id may also meet a string
column as its decimal text, which is the same datum). Spark's lenient cast — ``'4242.9'`` to 4242,
``' 17 '`` to 17 — never runs on a subject value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable

from piitracer.model.key_values import KeyType, KeyValueError, parse_key_type, parse_key_value, same_type
from piitracer.model.plan import DeletionPlan, ValueKind

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SUBJECT_COLUMN = "__piitracer_subject"


def exact_values(values: Iterable[Any], key_type: KeyType | None) -> list[Any]:
    """The distinct values that are exactly values of ``key_type`` (an int also as the decimal
    text of a string key); every other value is left out: it cannot be equal to a key of that
    type without a conversion that could change it. ``key_type`` None (a type piitracer does not
    compare keys of) keeps nothing."""
    if key_type is None:
        return []
    kept = set()
    for value in values:
        if value is None:
            continue
        if same_type(value, key_type):
            kept.add(value)
        elif key_type.name == "string" and isinstance(value, int) and not isinstance(value, bool):
            kept.add(str(value))
    return sorted(kept, key=repr)


def spark_key_type(data_type) -> KeyType | None:
    """The key type of a Spark column type (``bigint``, ``string``, ``decimal(12,2)``...)."""
    try:
        return parse_key_type(data_type.simpleString())
    except KeyValueError:
        return None


def subject_frame(spark: "SparkSession", values: list[Any], data_type) -> "DataFrame":
    """The values as a one-column DataFrame of ``data_type``, built from typed Python values with
    that exact schema (no cast): a value of another type is left out and matches nothing."""
    from pyspark.sql.types import StructField, StructType

    kept = exact_values(values, spark_key_type(data_type))
    schema = StructType([StructField(SUBJECT_COLUMN, data_type, True)])
    return spark.createDataFrame([(v,) for v in kept], schema).distinct()


def subject_key_values(plan: DeletionPlan, dataset: str, column: str) -> list[Any]:
    """The subjects' values as typed values of the source key column (strict parse; the
    preflight already refused a plan whose values do not parse, so a failure here is a bug)."""
    for capture in plan.resolve:
        if capture.dataset == dataset and column in capture.key_columns:
            key_type = parse_key_type(capture.key_types[column])
            steps = capture.normalised.get(column, ())
            return sorted({parse_key_value(s.value, key_type, steps) for s in plan.subjects}, key=repr)
    raise KeyError(f"{dataset}.{column} is not a source key of the plan")


def resolve_values(
    spark: "SparkSession", plan: DeletionPlan, source_frame: Callable[[str], "DataFrame"]
) -> dict[str, list[Any]]:
    """Value set name -> sorted distinct values, for every identifier and computed key of the plan."""
    from pyspark.sql import functions as F

    value_sets: dict[str, list[Any]] = {}
    for capture in plan.resolve:
        frame = source_frame(capture.dataset)
        matched = None
        for key in capture.key_columns:
            typed = subject_key_values(plan, capture.dataset, key)
            subjects = subject_frame(spark, typed, frame.schema[key].dataType)
            rows = frame.join(F.broadcast(subjects), frame[key] == subjects[SUBJECT_COLUMN], "left_semi")
            matched = rows if matched is None else matched.unionByName(rows)
            # The subjects' own key values count even where the source has no row of theirs (left
            # over downstream after an earlier partial erasure).
            value_sets[f"{capture.dataset}.{key}"] = typed
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
