"""What a table holds now, per format, for the proof of a crypto-shredded dataset
(verify/shred_proof.py): its current rows as a pyarrow dataset, and the Iceberg field id its
manifests key a column's bounds by. Each reader is its format module's own; the layers above the
formats never branch on a stored format (tests/unit/formats/test_formats_registry.py)."""

from __future__ import annotations

from piitracer.formats import FormatError
from piitracer.model.workspace import DatasetFormat
from piitracer.storage.locations import Location
from piitracer.storage.store import Store


def current_rows(fmt: DatasetFormat, location: Location, store: Store):
    """The table's current rows as a pyarrow dataset (``to_table(columns, filter)``).

    Args:
        fmt: the catalog's format of the table.
        location: where it is.
        store: the file access.

    Returns:
        The dataset, or None when the format has no reader here or no table is there.
    """
    reader = _READERS.get(fmt)
    return reader(location, store) if reader is not None else None


def key_field_ids(fmt: DatasetFormat, location: Location, store: Store, column: str) -> set[int]:
    """The field id an Iceberg table's manifests key ``column``'s bounds by.

    Args:
        fmt: the catalog's format of the table.
        location: where it is.
        store: the file access.
        column: the column's name (case-insensitive).

    Returns:
        The field id in a set; empty for another format, or when the table or column is not found.
    """
    if fmt is not DatasetFormat.ICEBERG:
        return set()
    from piitracer.formats.iceberg_table import static_table

    try:
        table = static_table(location, store)
        return {table.schema().find_field(column, case_sensitive=False).field_id} if table is not None else set()
    except (FormatError, ValueError):
        return set()


def _delta_rows(location: Location, store: Store):
    from piitracer.formats import delta

    return delta.open_table(location, store).to_pyarrow_dataset() if delta.is_table(location, store) else None


def _parquet_rows(location: Location, store: Store):
    from piitracer.formats import parquet

    return parquet.dataset(location, store)


def _iceberg_rows(location: Location, store: Store):
    import pyarrow.dataset as ds

    from piitracer.formats.iceberg_table import static_table

    table = static_table(location, store)
    return None if table is None else ds.dataset(table.scan().to_arrow())


_READERS = {DatasetFormat.DELTA: _delta_rows, DatasetFormat.PARQUET: _parquet_rows, DatasetFormat.ICEBERG: _iceberg_rows}
