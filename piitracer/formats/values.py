"""Subject values as typed engine data: an Arrow array for delta-rs and pyarrow, a one-column
DataFrame for Spark. Both keep only values exactly of the key column's type
(``model.key_values.exact_values``: an int may meet a string key as its decimal text); nothing is
cast leniently, so text never becomes a number and a fraction never an id."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from piitracer.model.key_values import KeyType, KeyValueError, exact_values, parse_key_type

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

# The column name the subject values travel under (a MERGE source, a broadcast view).
SUBJECT_COLUMN = "__piitracer_subject"


def key_type_name(arrow_type) -> str | None:
    """The key type name (``model.key_values``) of an Arrow type, or None when keys of that type
    are not compared by piitracer (booleans, timestamps, nested types...)."""
    import pyarrow as pa

    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    for check, name in ((pa.types.is_int8, "tinyint"), (pa.types.is_int16, "smallint"), (pa.types.is_int32, "int"),
                        (pa.types.is_int64, "bigint"), (pa.types.is_float32, "float"), (pa.types.is_float64, "double"),
                        (pa.types.is_date32, "date")):
        if check(arrow_type):
            return name
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) or getattr(pa.types, "is_string_view", lambda t: False)(arrow_type):
        return "string"
    if pa.types.is_decimal(arrow_type):
        return f"decimal({arrow_type.precision},{arrow_type.scale})"
    return None


def typed_values(values: list[Any], arrow_type: "pa.DataType") -> "pa.Array":
    """Distinct ``values`` that are exactly values of ``arrow_type``, as an array of that type."""
    import pyarrow as pa

    name = key_type_name(arrow_type)
    kept = exact_values(values, parse_key_type(name) if name else None)
    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    if getattr(pa.types, "is_string_view", lambda t: False)(arrow_type):
        return pa.array(kept, type=pa.string()).cast(arrow_type)
    return pa.array(kept, type=arrow_type)


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


def arrow_frame(spark: "SparkSession", table) -> "DataFrame":
    """A Spark DataFrame of an Arrow table (its types kept: no pandas inference), for tables
    Spark cannot read itself here (Delta without Delta jars, object storage without S3A)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    # integer_object_nulls: an integer column with a null stays Python ints (pandas would make it
    # float64: a bigint above 2**53 changed, and refused by Spark's LongType)
    return spark.createDataFrame(table.to_pandas(integer_object_nulls=True), schema=from_arrow_schema(table.schema))
