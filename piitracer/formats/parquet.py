"""Plain Parquet folders (Hive-style partitions) and archive exports, local or on an object store."""

from __future__ import annotations

from typing import Any

from piitracer.storage.locations import Location
from piitracer.storage.store import Store

HIDDEN = (".", "_")  # readers skip these names: temporaries, markers, metadata


def data_files(location: Location, store: Store) -> list[str]:
    """The Parquet files readers see (relative paths): hidden and underscore files and folders are
    not data."""
    return [entry.relative for entry in store.list_files(location)
            if entry.relative.endswith(".parquet") and not any(part.startswith(HIDDEN) for part in entry.relative.split("/"))]


def key_ranges(metadata, key_column: str) -> list[tuple[Any, Any] | None] | None:
    """Per row group of a Parquet footer (``pyarrow`` ``FileMetaData``), the (min, max) statistics
    of ``key_column``, or None for a group without them; None when the file has no such column.
    What the rewrite and the batch estimate prune files by."""
    leaf = next((i for i in range(metadata.num_columns) if metadata.schema.column(i).path == key_column), None)
    if leaf is None:
        return None
    ranges: list[tuple[Any, Any] | None] = []
    for group in range(metadata.num_row_groups):
        stats = metadata.row_group(group).column(leaf).statistics
        ranges.append((stats.min, stats.max) if stats is not None and stats.has_min_max else None)
    return ranges


def dataset(location: Location, store: Store):
    """A pyarrow dataset of the folder as readers see it (Hive partitions)."""
    import pyarrow.dataset as ds

    fs, path = store.filesystem(location)
    files = [f"{path.rstrip('/')}/{relative}" for relative in data_files(location, store)]
    return ds.dataset(files, filesystem=fs, format="parquet", partitioning=ds.partitioning(flavor="hive"),
                      partition_base_dir=path) if files else None


def arrow_schema(location: Location, store: Store):
    """The schema readers see (Hive partition columns included), or None when the folder holds
    no Parquet file."""
    found = dataset(location, store)
    return None if found is None else found.schema
