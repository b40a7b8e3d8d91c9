"""Plain Parquet folders (Hive-style partitions) and archive exports."""

from __future__ import annotations

from pathlib import Path


def arrow_schema(location: Path):
    """The schema readers see (hidden and underscore files skipped, Hive partition columns
    included), or None when the folder holds no Parquet file."""
    import pyarrow.dataset as ds

    dataset = ds.dataset(str(location), format="parquet", partitioning="hive")
    return dataset.schema if dataset.files else None
