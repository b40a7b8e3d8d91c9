"""What piitracer knows about each table format, one module per format (iceberg, delta, parquet,
archive), below the executor and the verifier: a table's schema, its newest metadata, where its
files really are. Modules here may read files; they import only ``model`` (and, when it exists,
``storage``). A new format is one new module here (see the README, "Adding a format")."""

from __future__ import annotations

from piitracer.model.workspace import CatalogDataset, DatasetFormat
from piitracer.storage.locations import Location
from piitracer.storage.store import Store
from piitracer.model.errors import PiitracerError


class FormatError(PiitracerError):
    """A table's metadata cannot be read or does not say what piitracer needs; names the file."""


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


def table_schema(entry: CatalogDataset, location: Location | None, store: Store):
    """The Arrow schema of a catalogued table as its own metadata says, or None when the table is
    not there (or the format stores no rows). Raises :class:`FormatError` for unreadable metadata."""
    if location is None or not store.exists(location):
        return None
    if entry.format is DatasetFormat.ICEBERG:
        from piitracer.formats import iceberg

        return iceberg.arrow_schema(location, store)
    if entry.format is DatasetFormat.DELTA:
        from piitracer.formats import delta

        return delta.arrow_schema(location, store)
    if entry.format in (DatasetFormat.PARQUET, DatasetFormat.ARCHIVE):
        from piitracer.formats import parquet

        return parquet.arrow_schema(location, store)
    return None
