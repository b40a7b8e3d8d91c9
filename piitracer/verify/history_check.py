"""The logical check: which retained snapshot, tag, branch or version still shows a subject's row
(design.md, "The proof's cost follows files, not history").

Derived, not read back: each data file's key rows are read once (:mod:`~piitracer.verify.key_rows`,
in the pass that searches its bytes), and a version shows a subject's row when a data file it reads
(as its format's metadata says, :mod:`~piitracer.formats.history`) holds a matching row that none of
the deletes applying there removes. The cost grows with the files that could hold a subject, not
with the number of versions a table keeps: a version reading no such file costs a lookup.

A table whose format cannot derive its history (``FormatSupport.history`` is None, or returns None
for this table) is read back version by version (``FormatSupport.versions``), as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from piitracer.formats import FormatSupport, TableFiles
from piitracer.formats.history import NO_CONSTANT, DataFile, TableHistory
from piitracer.storage.locations import Location
from piitracer.storage.store import Store
from piitracer.verify.columns import exact_hits
from piitracer.verify.key_rows import KeyRows, read_key_rows
from piitracer.verify.values import ValueIndex


@dataclass(frozen=True)
class LogicalHit:
    """A retained snapshot/version whose key column holds a subject's value."""

    version: str  # snapshot id or Delta version
    current: bool
    value_sets: frozenset[str]
    ref: str | None = None  # an Iceberg tag/branch (other than main) that retains this snapshot


@dataclass
class TableView:
    """One table's files (as its format's metadata says) and the logical check of every retained
    snapshot/version."""

    files: TableFiles = field(default_factory=TableFiles)
    versions_checked: int = 0
    logical: list[LogicalHit] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class HistoryRead:
    """A table's history as read before its files are decoded: ``history`` (None: read its versions
    back instead), or why it could not be read (``failed``: the exception's type name)."""

    history: TableHistory | None = None
    failed: str | None = None

    def scan_keys(self) -> dict[str, Any] | None:
        """Relative path -> key column of every data file under the location whose key rows the
        check needs (asked of the byte search)."""
        history = self.history
        if history is None or history.key is None:
            return None
        return {f.relative: history.key for f in history.data_files.values() if f.relative is not None}


def read_history(support: FormatSupport, location: Location, store: Store, key: str | None) -> HistoryRead:
    """The table's history (files and, with ``key``, its retained versions), read once."""
    if support.history is None:
        return HistoryRead()
    try:
        return HistoryRead(support.history(location, store, key))
    except Exception as error:  # noqa: BLE001 - the byte scan still stands; the report says why
        return HistoryRead(failed=type(error).__name__)


def table_view(support: FormatSupport, location: Location, store: Store, key: str | None, index: ValueIndex,
               read: HistoryRead, scanned_rows: Mapping[str, KeyRows | None]) -> TableView:
    """The table's files and logical check: derived from ``read`` and the key rows the byte search
    read (``scanned_rows``: relative path -> rows, None where the file was not decoded as Parquet)."""
    if read.failed:
        return TableView(problems=[f"logical check failed: {read.failed}"])
    history = read.history
    try:
        if history is None or (key and index and history.key is None):
            return read_back(support, location, store, key, index)
        view = TableView(files=history.files, problems=list(history.files.problems))
        if key and index:
            whole = index.whole_values()

            def rows_of(data_file: DataFile) -> KeyRows:
                if data_file.relative is not None:
                    if data_file.relative not in scanned_rows:
                        raise FileNotFoundError(data_file.relative)
                    found = scanned_rows[data_file.relative]
                    if found is not None:
                        return found
                return read_key_rows(store, location.resolve_reference(data_file.uri), history.key, index, whole)

            derive(history, rows_of, index, view)
        return view
    except Exception as error:  # the byte scan still stands; say why the logical check did not
        return TableView(problems=[f"logical check failed: {type(error).__name__}"])


def derive(history: TableHistory, rows_of: Callable[[DataFile], KeyRows], index: ValueIndex, view: TableView) -> None:
    """Fill ``view``'s logical check from ``history``: each data file's key rows once, then each
    version from the few files holding a subject's key (module docstring)."""
    import numpy as np

    matched: dict[str, KeyRows] = {}
    broken: dict[str, str] = {}
    for uri, data_file in history.data_files.items():
        try:
            rows = rows_of(data_file)
        except Exception as error:  # noqa: BLE001 - every version reading it says so
            broken[uri] = type(error).__name__
            continue
        if rows.absent and data_file.constant is not NO_CONSTANT:
            # The key is a partition value the file does not store: every row holds it.
            names = exact_hits(_constant_array(data_file.constant), index)
            if names:
                matched[uri] = KeyRows(((tuple(sorted(names)), np.arange(rows.rows, dtype=np.int64)),), rows=rows.rows)
        elif rows.groups:
            matched[uri] = rows
    wanted = set(matched) | set(broken)
    gone = 0
    for number, version in enumerate(history.versions):
        if version.problem:
            view.problems.append(version.problem)
            continue
        names: set[str] = set()
        failure = None
        for uri, deletes in history.reading(number, wanted) if wanted else ():
            if uri in broken:
                failure = broken[uri]
                break
            rows = matched[uri]
            try:
                removed = history.deleted(uri, rows.positions, deletes)
            except Exception as error:  # noqa: BLE001 - a delete file that cannot be read: said per version
                failure = type(error).__name__
                break
            names |= rows.names_of(~removed)
        if failure is not None:
            problem, is_gone = history.unreadable(number, failure)
            if is_gone:
                gone += 1
            else:
                view.problems.append(problem)
            continue
        view.versions_checked += 1
        if names:
            view.logical.append(LogicalHit(version.version, version.current, frozenset(names), version.ref))
    if gone:
        view.problems.append(f"{gone} older version(s) have removed files and cannot be read (not retained)")


def _constant_array(value: Any):
    import pyarrow as pa

    return pa.array([value])


def read_back(support: FormatSupport, location: Location, store: Store, key: str | None,
               index: ValueIndex) -> TableView:
    """Every retained version read back, one by one (formats that cannot derive their history)."""
    view = TableView()
    view.files = support.files(location, store)
    view.problems += view.files.problems
    if key and index:
        gone = 0
        for version in support.versions(location, store, key):
            if version.gone:
                gone += 1
            elif version.problem:
                view.problems.append(version.problem)
            else:
                view.versions_checked += 1
                names = exact_hits(version.keys, index) if version.keys is not None else set()
                if names:
                    view.logical.append(LogicalHit(version.version, version.current, frozenset(names), version.ref))
        if gone:
            view.problems.append(f"{gone} older version(s) have removed files and cannot be read (not retained)")
    return view
