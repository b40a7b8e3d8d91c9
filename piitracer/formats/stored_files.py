"""Every row a table stores, file by file: the Parquet data files of every version a reader could
still reach (Delta's removed-but-not-vacuumed files and change-data files, every Iceberg data file,
a Parquet folder's and an archive's files), read one at a time with their columns matched the way
the engines match names (case-insensitively), for the crypto-shredding checks (issue 49): the
resolve step decrypts a subject's ciphertext wherever it is stored, not only where the current
version shows it, and the proof samples other people's rows from the same files.

A file's own columns are what it stores; a Hive-style partition folder (``dt=2026-11-01``) stands
for a column the file does not store. Reading is per file, so files written under different
schemas (a column added later, a type changed) are each read as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator
from urllib.parse import unquote

from piitracer.formats import FormatError, hidden
from piitracer.model.workspace import DatasetFormat
from piitracer.storage.locations import Location
from piitracer.storage.store import Store


def stored_files(fmt: DatasetFormat, location: Location, store: Store) -> list[str]:
    """The Parquet data files under a table's location a version of it may read (relative paths,
    sorted): every ``.parquet`` file but a Delta log's checkpoints; a Parquet folder's or an
    archive's files that readers see (hidden ones are not data).

    Args:
        fmt: the catalog's format of the table.
        location: where it is.
        store: the file access.

    Returns:
        The relative paths (empty when the format stores no rows or nothing is there).
    """
    if not fmt.stores_rows or not store.exists(location):
        return []
    names = sorted(entry.relative for entry in store.list_files(location) if entry.relative.lower().endswith(".parquet"))
    if fmt is DatasetFormat.DELTA:
        return [name for name in names if not name.startswith("_delta_log/")]
    if fmt is DatasetFormat.ICEBERG:
        return names
    return [name for name in names if not hidden(name)]


@dataclass
class FileColumns:
    """What one stored file holds: each column by its lower-case name (its stored name and Arrow
    type), the partition values its folders stand for, and names it spells twice (ignoring case)."""

    relative: str
    stored: dict[str, tuple[str, Any]] = field(default_factory=dict)  # lower name -> (name as stored, Arrow type)
    partition: dict[str, str] = field(default_factory=dict)  # lower name -> its folder's value (text)
    ambiguous: list[str] = field(default_factory=list)

    def name(self, column: str) -> str | None:
        """The stored name of ``column`` (matched ignoring case), None when the file does not store it."""
        found = self.stored.get(column.lower())
        return found[0] if found else None

    def type(self, column: str) -> Any:
        """The Arrow type the file stores ``column`` as (None when it does not store it)."""
        found = self.stored.get(column.lower())
        return found[1] if found else None


class StoredRows:
    """The stored files of one table, each read on its own."""

    def __init__(self, fmt: DatasetFormat, location: Location, store: Store) -> None:
        self.location, self.store = location, store
        self.files = stored_files(fmt, location, store)

    def columns(self, relative: str) -> FileColumns:
        """The columns one file stores (its footer), and its partition folders' values.

        Raises:
            FormatError: the file is not readable Parquet.
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            with self.store.open_input(self.location.child(relative)) as handle:
                schema = pq.read_schema(handle)
        except (OSError, pa.ArrowException) as error:
            raise FormatError(f"{relative}: not readable as Parquet ({type(error).__name__})") from None
        found = FileColumns(relative)
        for item in schema:
            lower = item.name.lower()
            if lower in found.stored:
                found.ambiguous.append(f"{found.stored[lower][0]} and {item.name}")
            found.stored[lower] = (item.name, item.type)
        for part in relative.split("/")[:-1]:
            if "=" in part:
                name, value = part.split("=", 1)
                found.partition.setdefault(name.lower(), unquote(value))
        return found

    def read(self, relative: str, names: list[str], where: tuple[str, Any] | None = None):
        """Columns of one file as an Arrow table (stored names), only the rows whose ``where``
        column (a stored name) holds one of the values of the Arrow array given with it; row groups
        whose statistics exclude them are not read.

        Raises:
            FormatError: the file is not readable Parquet.
        """
        import pyarrow as pa
        import pyarrow.dataset as ds

        fs, path = self.store.filesystem(self.location.child(relative))
        try:
            fragment = ds.dataset(path, filesystem=fs, format="parquet")
            if where is None:
                return fragment.to_table(columns=names)
            column, values = where
            return fragment.to_table(columns=names, filter=ds.field(column).isin(values))
        except (OSError, pa.ArrowException) as error:
            raise FormatError(f"{relative}: not readable as Parquet ({type(error).__name__})") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.files)
