"""A Delta table's retained versions from its log (:mod:`~piitracer.formats.history`): which data
files each version reads, with the deletion vector each carries there, replayed from the log once
instead of opening and reading every version back.

The first version delta-rs can still load (a checkpoint or an unbroken run of commits from 0) is
opened with delta-rs for its files; every later commit's ``add`` and ``remove`` actions are
replayed from its JSON (a commit that is gone with no checkpoint in its place ends the run until
the next checkpoint, which delta-rs opens again). A version whose data files were vacuumed is
``gone`` (not retained: it cannot be time-travelled to), as when it was read back. A deletion
vector is decoded by delta-rs (``DeltaTable.deletion_vectors`` at the version that added it), and
only for a file holding a subject's key.

Not derived (read back version by version instead, ``None``): a table whose key column is a
partition column in some version (its value lives in the log, typed by the schema), or with column
mapping (files name columns by physical names).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Collection, Iterator
from urllib.parse import unquote

from piitracer.formats import TableFiles, relative_to
from piitracer.formats.delta_tables import arrow_table, open_table
from piitracer.formats.history import DataFile, HistoryVersion, KeyColumn, TableHistory
from piitracer.storage.locations import Location
from piitracer.storage.store import Store


@dataclass
class _Span:
    """One add action of a path: active from ``start`` (the version that added it, or the first
    loaded one) until ``end`` (the version that removed or replaced it; None: still active)."""

    start: int
    end: int | None
    vector: bool  # the add carries a deletion vector (or, for the first loaded version: ask delta-rs)


def _log_versions(root: Location, store: Store) -> tuple[dict[int, str], set[int]]:
    """Commit files by version, and the versions that have a checkpoint."""
    commits, checkpoints = {}, set()
    for entry in store.list_files(root.child("_delta_log")):
        name = entry.relative
        if "/" in name:
            continue
        head = name.split(".", 1)[0]
        if not head.isdigit():
            continue
        if name == f"{head}.json":
            commits[int(head)] = name
        elif ".checkpoint" in name:
            checkpoints.add(int(head))
    return commits, checkpoints


def _path(raw: str) -> str:
    """A log path as a reference the table root resolves (relative paths are URL-encoded)."""
    return unquote(raw) if "://" not in raw and not raw.startswith("/") else raw


def history(root: Location, store: Store, key_column: str | None) -> "DeltaHistory | None":
    """The table's current files and, with ``key_column``, its retained versions (module docstring)."""
    latest_table = open_table(root, store)
    latest = latest_table.version()
    result = DeltaHistory(root, store, latest_table, key=KeyColumn(key_column) if key_column else None)
    result.files = TableFiles(live={p for uri in latest_table.file_uris() if (p := relative_to(root, uri))})
    if key_column is None:
        return result
    commits, checkpoints = _log_versions(root, store)
    spans: dict[str, list[_Span]] = {}
    active: dict[tuple[str, Any], _Span] = {}  # by (path, deletion vector id): a file action's key
    loaded: list[int] = []  # the versions delta-rs can load, ascending

    def seed(version: int) -> bool:
        """Start (again) from what delta-rs loads at ``version``; False when it cannot."""
        try:
            table = latest_table if version == latest else open_table(root, store, version=version)
        except Exception:  # noqa: BLE001 - log entries cleaned up: the version is not retained
            return False
        if not _derivable(table.metadata().partition_columns, table.metadata().configuration, key_column):
            raise _NotDerivable
        for span in active.values():
            span.end = version
        active.clear()
        for action in arrow_table(table.get_add_actions(flatten=True)).select(["path"]).to_pylist():
            span = _Span(version, None, True)
            path = _path(action["path"])
            active[path, _SEEDED] = span  # delta-rs does not say its vector's id: a remove of the path matches
            spans.setdefault(path, []).append(span)
        return True

    try:
        candidates = sorted(v for v in set(commits) | checkpoints if v <= latest)
        # The first loadable version, as the log's listing says it: 0 when its commit is there, else
        # the first checkpoint (each failed open of a cleaned-up version costs delta-rs a log read).
        likely = [v for v in candidates if v == 0 or v in checkpoints][:1]
        version = next((v for v in likely + candidates if seed(v)), None)
        while version is not None:
            loaded.append(version)
            following = version + 1
            if following > latest:
                break
            if following in commits:
                try:
                    _replay(store.read_bytes(root.child("_delta_log/" + commits[following])), following, active, spans,
                            key_column)
                    version = following
                    continue
                except _Broken:
                    pass
            # No commit to replay: the next version delta-rs loads (from a checkpoint) starts again.
            version = next((v for v in candidates if v >= following and seed(v)), None)
    except _NotDerivable:
        return None
    for number in loaded:
        result.versions.append(HistoryVersion(str(number), number == latest))
    result._spans = spans
    for path in spans:
        uri = root.resolve_reference(path).uri
        result.data_files[uri] = DataFile(uri, relative_to(root, uri))
        result._uris[uri] = path
    return result


_SEEDED = object()  # the vector id of a file loaded by delta-rs (not read from a commit)


def _vector_id(action: dict) -> Any:
    """A file action's deletion vector id (protocol: storage type, path or inline data, offset), None without one."""
    vector = action.get("deletionVector")
    if not vector:
        return None
    return f"{vector.get('storageType')}{vector.get('pathOrInlineDv')}@{vector.get('offset')}"


class _NotDerivable(Exception):
    """The table's history is read back version by version instead (module docstring)."""


class _Broken(Exception):
    """A commit file that is not a readable JSON-lines commit (delta-rs would not load it either)."""


def _derivable(partition_columns, configuration: dict, key_column: str) -> bool:
    mapping = (configuration or {}).get("delta.columnMapping.mode", "none")
    return key_column not in (partition_columns or ()) and mapping in (None, "none")


def _replay(text: bytes, version: int, active: dict[tuple[str, Any], _Span], spans: dict[str, list[_Span]],
            key_column: str) -> None:
    """One commit's actions, removes first (a deletion vector's update removes and adds the same
    path); a file action is keyed by its path and its deletion vector's id (Delta protocol)."""
    actions = []
    for line in text.decode("utf-8", "replace").splitlines():
        if line.strip():
            try:
                actions.append(json.loads(line))
            except json.JSONDecodeError:
                raise _Broken from None
    for action in actions:
        if "metaData" in action:
            meta = action["metaData"] or {}
            if not _derivable(meta.get("partitionColumns"), meta.get("configuration"), key_column):
                raise _NotDerivable
    for action in actions:
        removed = action.get("remove")
        if removed and removed.get("path"):
            path = _path(removed["path"])
            span = active.pop((path, _vector_id(removed)), None) or active.pop((path, _SEEDED), None)
            if span is not None:
                span.end = version
    for action in actions:
        added = action.get("add")
        if added and added.get("path"):
            path, vector = _path(added["path"]), _vector_id(added)
            previous = active.get((path, vector))
            if previous is not None:
                previous.end = version
            span = _Span(version, None, vector is not None)
            active[path, vector] = span
            spans.setdefault(path, []).append(span)


class DeltaHistory(TableHistory):
    """The loadable versions of one Delta table, by its log (module docstring)."""

    def __init__(self, root: Location, store: Store, latest_table, key: KeyColumn | None = None) -> None:
        super().__init__(key=key)
        self.root, self.store, self._latest = root, store, latest_table
        self._spans: dict[str, list[_Span]] = {}
        self._uris: dict[str, str] = {}
        self._vectors: dict[int, dict[str, Any]] = {}

    def reading(self, number: int, wanted: Collection[str]) -> Iterator[tuple[str, Any]]:
        version = int(self.versions[number].version)
        for uri in wanted:
            for span in self._spans.get(self._uris.get(uri, ""), ()):
                if span.start <= version and (span.end is None or version < span.end):
                    yield uri, span

    def deleted(self, uri: str, positions, deletes: Any):
        import numpy as np

        span: _Span = deletes
        gone = np.zeros(len(positions), dtype=bool)
        if not span.vector:
            return gone
        keep = self._selection(span.start).get(uri)
        if keep is None:
            return gone
        inside = positions < len(keep)
        gone[inside] = ~keep[positions[inside]]
        return gone

    def _selection(self, version: int) -> dict[str, Any]:
        """Data file URI -> keep mask of every file with a deletion vector at ``version`` (delta-rs)."""
        if version not in self._vectors:
            import numpy as np

            found: dict[str, Any] = {}
            table = self._latest if version == self._latest.version() else open_table(self.root, self.store, version=version)
            if "deletionVectors" in set(table.protocol().reader_features or ()):
                for row in arrow_table(table.deletion_vectors()).to_pylist():
                    found[Location.parse(row["filepath"]).uri] = np.asarray(row["selection_vector"], dtype=bool)
            self._vectors[version] = found
        return self._vectors[version]

    def unreadable(self, number: int, error: str) -> tuple[str | None, bool]:
        if error in ("FileNotFoundError", "DeltaFileNotFound"):
            return None, True  # its files were vacuumed: not retained
        return f"version {self.versions[number].version} could not be read back ({error})", False
