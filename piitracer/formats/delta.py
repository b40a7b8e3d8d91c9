"""Delta tables read with delta-rs (no Delta jars in Spark here), local or on an object store."""

from __future__ import annotations

import json
from typing import Iterator

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


def arrow_schema(location: Location, store: Store):
    """The table's current schema as Arrow, or None when the location is not a Delta table."""
    import pyarrow as pa

    if not is_table(location, store):
        return None
    return pa.schema(open_table(location, store).schema().to_arrow())


def newest_commit(location: Location, store: Store) -> Location | None:
    """The last ``_delta_log/NNNNNNNNNNNNNNNNNNNN.json`` commit file."""
    commits = [e.relative for e in store.list_files(location.child("_delta_log"))
               if "/" not in e.relative and e.relative.endswith(".json") and e.relative[:-5].isdigit()]
    return location.child("_delta_log/" + max(commits)) if commits else None


def referenced_paths(location: Location, store: Store) -> Iterator[tuple[str, str]]:
    """(what, path) for every file path a commit in ``_delta_log`` names (add, remove, cdc; a
    shallow clone's adds are absolute paths into another table) — vacuum deletes removed paths,
    so each must lie where piitracer may act. Relative paths are under the table root."""
    log = location.child("_delta_log")
    for entry in store.list_files(log):
        name = entry.relative
        if "/" in name or not name.endswith(".json") or not name[:-5].isdigit():
            continue
        text = store.read_bytes(log.child(name)).decode("utf-8", "replace")
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                action = json.loads(line)
            except json.JSONDecodeError:
                raise FormatError(f"{log.child(name)}:{number}: not a JSON line of a Delta commit") from None
            for kind in ("add", "remove", "cdc"):
                path = (action.get(kind) or {}).get("path") if isinstance(action, dict) else None
                if path:
                    from urllib.parse import unquote

                    yield f"{name} {kind}", unquote(path) if "://" not in path and not path.startswith("/") else path
