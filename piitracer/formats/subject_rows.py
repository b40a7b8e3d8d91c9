"""A source's rows of the subjects, read by the dataset's own engine with no Spark (issue 51): the
resolve step reads each source's identifier values this way, so a plan whose keys are all stored
values (no expression to evaluate) runs with no JVM on the machine.

- Iceberg: pyiceberg, through the table's catalog when one keeps it, else from its folder's newest
  metadata (a table of Spark's Hadoop catalog), a scan filtered on the key column;
- Delta: delta-rs's Arrow dataset of the current version, filtered;
- plain Parquet and archives: pyarrow's dataset of the files readers see (Hive partitions).

The subjects' values are bound as typed values of the key column's exact type
(:func:`~piitracer.formats.values.typed_values`: nothing is cast leniently), and column names are
matched as the engines match them (ignoring case; two names equal ignoring case are refused). A
table pyiceberg cannot read (equality deletes) is a :class:`SparkNeeded`: the caller reads it on
Spark instead.
"""

from __future__ import annotations

from typing import Any, Sequence

from piitracer.formats import FormatError
from piitracer.formats.current_rows import current_rows
from piitracer.formats.values import typed_values
from piitracer.model.workspace import CatalogDataset, DatasetFormat
from piitracer.storage.locations import Location
from piitracer.storage.store import Store


class SparkNeeded(FormatError):
    """This table cannot be read without Spark here (the message says why)."""


def subject_rows(entry: CatalogDataset, location: Location, store: Store, key: str, values: Sequence[Any],
                 columns: Sequence[str]):
    """The rows of the table whose ``key`` column holds one of ``values``, with ``columns``.

    Args:
        entry: the dataset's catalog entry (its format and, for Iceberg, its ``table:``).
        location: where it is.
        store: the file access (and the catalogs keeping Iceberg tables).
        key: the key column (a lineage name: matched ignoring case).
        values: the subjects' values (a value not exactly of the column's type matches nothing).
        columns: the columns to read, ``key`` among them (lineage names).

    Returns:
        An Arrow table whose columns are named as asked (``columns``), one row per matching row.

    Raises:
        FormatError: the table or a column is not there, or two of its names differ only in case.
        SparkNeeded: the table cannot be read without Spark (pyiceberg and equality deletes).
    """
    if entry.format is DatasetFormat.ICEBERG:
        return _iceberg(entry, location, store, key, values, columns)
    if entry.format not in (DatasetFormat.DELTA, DatasetFormat.PARQUET, DatasetFormat.ARCHIVE):
        raise FormatError(f"{location}: a {entry.format.value} dataset stores no rows to read")
    # an archive's files are Parquet files
    dataset = current_rows(DatasetFormat.PARQUET if entry.format is DatasetFormat.ARCHIVE else entry.format, location, store)
    if dataset is None:
        return _empty(columns)
    import pyarrow.dataset as ds

    stored = _stored_names(dataset.schema.names, columns, location)
    field = dataset.schema.field(stored[key])
    wanted = typed_values(list(values), field.type)
    if len(wanted) == 0:
        return _empty(columns)
    if _is_float(field.type):  # -0.0 equals 0.0, as in Spark's comparison (a hash lookup would tell them apart)
        condition = None
        for value in wanted.to_pylist():
            each = ds.field(stored[key]) == value
            condition = each if condition is None else condition | each
    else:
        condition = ds.field(stored[key]).isin(wanted)
    names = [stored[c] for c in columns]
    try:
        table = dataset.to_table(columns=names, filter=condition)
    except NotImplementedError:
        # pyarrow cannot simplify a string filter against delta-rs's string_view statistics (as in
        # delta.delete_rows): read the columns and compare in memory, exactly as the filter would.
        table = dataset.to_table(columns=names)
        import pyarrow.compute as pc

        keys = table.column(stored[key])
        if _is_float(field.type):
            mask = None
            for value in wanted.to_pylist():
                each = pc.equal(keys, value)
                mask = each if mask is None else pc.or_(mask, each)
        else:
            mask = pc.is_in(keys, value_set=wanted.cast(keys.type))
        table = table.filter(mask)
    return table.rename_columns(list(columns))


def _iceberg(entry: CatalogDataset, location: Location, store: Store, key: str, values: Sequence[Any],
             columns: Sequence[str]):
    from pyiceberg.expressions import EqualTo, In, Or
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    table = _iceberg_table(entry, location, store)
    if table is None:
        return _empty(columns)
    schema = table.schema()
    stored = _stored_names([f.name for f in schema.fields], columns, location)
    arrow_type = schema_to_pyarrow(schema).field(stored[key]).type
    wanted = typed_values(list(values), arrow_type).to_pylist()
    if not wanted:
        return _empty(columns)
    if _is_float(arrow_type):
        condition = EqualTo(stored[key], wanted[0])
        for value in wanted[1:]:
            condition = Or(condition, EqualTo(stored[key], value))
    else:
        condition = In(stored[key], wanted)
    try:
        found = table.scan(row_filter=condition, selected_fields=tuple(stored[c] for c in columns)).to_arrow()
    except Exception as error:  # pyiceberg 0.12 refuses equality deletes (and raises its own types for them)
        if "equality" in str(error).lower():
            raise SparkNeeded(f"{location}: pyiceberg cannot apply its equality deletes: read on Spark") from None
        raise
    return found.select([stored[c] for c in columns]).rename_columns(list(columns))


def _iceberg_table(entry: CatalogDataset, location: Location, store: Store):
    """The table through its catalog when a configured catalog keeps it, else from its folder."""
    owns = getattr(store.pointers, "owns", None)
    if entry.table and owns is not None and owns(entry.table):
        from piitracer.formats.iceberg_pyiceberg import eraser

        return eraser(entry, location, store).table()  # refused unless the catalog keeps it at its location
    from piitracer.formats.iceberg_table import static_table

    return static_table(location, store)


def _stored_names(names: Sequence[str], columns: Sequence[str], location: Location) -> dict[str, str]:
    """Each asked column's name as the table stores it (the exact name, else the one equal ignoring case)."""
    found = {}
    for column in columns:
        if column in names:
            found[column] = column
            continue
        matches = [n for n in names if n.lower() == column.lower()]
        if len(matches) > 1:
            raise FormatError(f"{location}: the table stores {' and '.join(matches)}, which differ only in case: which one "
                              f"is {column} is ambiguous")
        if not matches:
            raise FormatError(f"{location}: the table has no column {column!r} (columns: {', '.join(names)})")
        found[column] = matches[0]
    return found


def _is_float(arrow_type) -> bool:
    import pyarrow as pa

    return pa.types.is_floating(arrow_type)


def _empty(columns: Sequence[str]):
    import pyarrow as pa

    return pa.table({c: pa.array([], pa.null()) for c in columns})
