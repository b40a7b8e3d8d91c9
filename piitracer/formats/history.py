"""A table's retained history as its metadata states it, for the verifier's logical check
(design.md, "The proof's cost follows files, not history").

Which retained snapshot, tag, branch or version still shows a subject's row is derived here from
the metadata — which data files each version reads and which deletes apply to each — not by
reading every version back. The verifier decodes each data file's key column once (in the same
pass as its byte search), then asks :meth:`TableHistory.reading` which of the few files holding a
subject's key each version reads, and :meth:`TableHistory.deleted` which of those rows the deletes
applying there remove. A format hands over files, deletes and rows; matching the subjects' values
stays in ``verify``.

Each format module builds its own history (:func:`~piitracer.formats.iceberg_history.history`,
:func:`~piitracer.formats.delta_history.history`, :func:`~piitracer.formats.parquet.history`);
a table whose history a format cannot derive exactly (a key column that is a partition value it
does not type, a Delta table with column mapping) gets ``None`` and is read back version by version
as before (``FormatSupport.versions``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Collection, Iterator

from piitracer.formats import TableFiles

NO_CONSTANT = object()  # a data file whose key column is its own (not a partition value)


@dataclass(frozen=True)
class KeyColumn:
    """Where a data file holds the table's key column: the Parquet field id (Iceberg writes one on
    every column; matched first) and the column name (files without field ids, Delta, Parquet)."""

    name: str
    field_id: int | None = None


@dataclass(frozen=True)
class DataFile:
    """One data file some retained version reads: ``relative`` to the table's location (None when
    it lies elsewhere, e.g. a shallow clone's source), its row count when the metadata says it, and
    ``constant``: the key value of every row when the key is a partition value the file does not
    store (``NO_CONSTANT`` otherwise)."""

    uri: str
    relative: str | None
    rows: int | None = None
    constant: Any = NO_CONSTANT


@dataclass(frozen=True)
class HistoryVersion:
    """A retained snapshot or version: its id, whether it is the current one, the tag or branch
    (other than main) that retains it, and why it cannot be derived (``problem``)."""

    version: str
    current: bool
    ref: str | None = None
    problem: str | None = None


@dataclass
class TableHistory:
    """One table's files (``TableFiles``, what the byte findings are judged by) and its retained
    versions in the order the format lists them. Subclasses say which data files a version reads
    and which of their rows its deletes remove."""

    files: TableFiles = field(default_factory=TableFiles)
    key: KeyColumn | None = None
    versions: list[HistoryVersion] = field(default_factory=list)
    data_files: dict[str, DataFile] = field(default_factory=dict)  # uri -> file, every version's

    def reading(self, number: int, wanted: Collection[str]) -> Iterator[tuple[str, Any]]:
        """(uri, deletes) for each file of ``wanted`` that version ``number`` reads, with the
        deletes that apply to it there (an opaque value for :meth:`deleted`)."""
        return iter(())

    def deleted(self, uri: str, positions, deletes: Any):
        """A boolean NumPy mask over ``positions`` (row numbers of data file ``uri``, ascending):
        which of those rows ``deletes`` remove. Reads each delete file once per history."""
        import numpy as np

        return np.zeros(len(positions), dtype=bool)

    def unreadable(self, number: int, error: str) -> tuple[str | None, bool]:
        """How a version is reported when a file it reads cannot be read (``error``: the
        exception's type name): (problem text, gone). Gone: not retained any more (files removed)."""
        version = self.versions[number]
        return f"version {version.version} could not be read back ({error})", False


class OneVersion(TableHistory):
    """A history of one version that reads every data file, with no deletes (a plain folder)."""

    def reading(self, number: int, wanted: Collection[str]) -> Iterator[tuple[str, Any]]:
        return ((uri, ()) for uri in wanted if uri in self.data_files)
