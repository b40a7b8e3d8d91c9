"""Opening a Delta table with delta-rs, and reading what it returns as Arrow: the access the Delta
eraser (``formats/delta.py``) and the log's history (``formats/delta_history.py``) share, in a
module of its own so that neither imports the other."""

from __future__ import annotations

import pyarrow as pa

from piitracer.formats import FormatError
from piitracer.storage.locations import Location
from piitracer.storage.store import Store


def is_table(location: Location, store: Store) -> bool:
    """Whether a ``_delta_log`` with at least one commit is there."""
    return any(entry.relative.endswith(".json") for entry in store.list_files(location.child("_delta_log")))


def open_table(location: Location, store: Store, version: int | None = None):
    """The ``DeltaTable`` (delta-rs) at a location, with the workspace's storage options."""
    from deltalake import DeltaTable

    try:
        return DeltaTable(location.uri, version=version, storage_options=store.delta_options(location) or None)
    except Exception as error:  # delta-rs raises its own error types for a broken or missing log
        raise FormatError(f"{location}: cannot read the Delta log: {type(error).__name__}: {error}") from error


def arrow_table(stream) -> pa.Table:
    """A pyarrow table of what delta-rs returns (an arro3 table or stream), read through the Arrow C
    stream interface. Not ``pa.table(...)``: for an object it does not know, that asks whether it is
    a pandas DataFrame, importing pandas (half a second of a verify process)."""
    return pa.RecordBatchReader.from_stream(stream).read_all()
