"""Iceberg tables read without Spark (pyiceberg ``StaticTable`` reads a metadata file directly in
~0.1 s, whichever engine wrote it). The one place that decides which ``metadata.json`` is a
table's newest, on a local folder or an object store."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Iterator

from piitracer.formats import FormatError
from piitracer.model.table_state import RefType, TableRef, TableState
from piitracer.storage.locations import Location
from piitracer.storage.store import Store

_METADATA_VERSION = re.compile(r"^v?(\d+)[.-]")


def newest_metadata_file(location: Location, store: Store) -> Location | None:
    """The current ``metadata.json`` of the table: the one ``version-hint.text`` names (Hadoop
    catalog) when present, else the highest-numbered file (``v3.metadata.json``,
    ``00003-<uuid>.metadata.json``, gzip-compressed ones too); mtime is never used."""
    folder = location.child("metadata")
    names = {entry.relative for entry in store.list_files(folder) if "/" not in entry.relative}
    if "version-hint.text" in names:
        hint = store.read_bytes(folder.child("version-hint.text")).decode("utf-8", "replace").strip()
        for name in (f"v{hint}.metadata.json", f"v{hint}.gz.metadata.json", f"v{hint}.metadata.json.gz"):
            if name in names:
                return folder.child(name)
    numbered = []
    for name in names:
        match = _METADATA_VERSION.match(name)
        if match and ".metadata.json" in name:
            numbered.append((int(match.group(1)), name))
    return folder.child(max(numbered)[1]) if numbered else None


def static_table(location: Location, store: Store):
    """pyiceberg's ``StaticTable`` of the newest metadata, or None when there is no table yet."""
    from pyiceberg.table import StaticTable

    metadata_file = newest_metadata_file(location, store)
    if metadata_file is None:
        return None
    try:
        return StaticTable.from_metadata(metadata_file.uri, properties=store.iceberg_properties(location))
    except Exception as error:  # pyiceberg raises many types for a corrupt or foreign file
        raise FormatError(f"{metadata_file}: cannot read Iceberg metadata: {type(error).__name__}: {error}") from error


def arrow_schema(location: Location, store: Store):
    """The current schema as Arrow, or None when there is no table."""
    table = static_table(location, store)
    return None if table is None else table.schema().as_arrow()


def table_state(dataset: str, location: Location, store: Store) -> TableState | None:
    """The table's current snapshot, tags and branches (the planner's input), or None."""
    from pyiceberg.table.refs import SnapshotRefType

    table = static_table(location, store)
    if table is None:
        return None
    metadata = table.metadata
    refs = []
    for name, ref in sorted(metadata.refs.items()):
        if name == "main":
            continue
        snapshot = metadata.snapshot_by_id(ref.snapshot_id)
        refs.append(TableRef(
            name=name, type=RefType.TAG if ref.snapshot_ref_type is SnapshotRefType.TAG else RefType.BRANCH,
            snapshot_id=ref.snapshot_id,
            snapshot_timestamp=datetime.fromtimestamp(snapshot.timestamp_ms / 1000, timezone.utc) if snapshot else None,
        ))
    return TableState(dataset=dataset, current_snapshot_id=metadata.current_snapshot_id, refs=tuple(refs))


def referenced_paths(location: Location, store: Store) -> Iterator[tuple[str, str]]:
    """(what, path) for every place the table's metadata points at: its ``location``, the
    write paths its properties set, every previous metadata file, statistics files, and for every
    retained snapshot its manifest list, manifests and data/delete files. A copied table folder
    keeps the original's absolute paths here: they are what Iceberg reads, writes, expires and
    deletes, whatever folder the metadata file itself sits in."""
    table = static_table(location, store)
    if table is None:
        return
    try:
        yield from _referenced(table)
    except FormatError:
        raise
    except Exception as error:  # a missing or corrupt manifest list or manifest: name it
        raise FormatError(f"cannot read the table's manifests: {type(error).__name__}: {error}") from error


def _referenced(table) -> Iterator[tuple[str, str]]:
    metadata = table.metadata
    yield "table location", metadata.location
    for key in ("write.data.path", "write.metadata.path", "write.object-storage.path", "write.folder-storage.path"):
        if metadata.properties.get(key):
            yield f"property {key}", metadata.properties[key]
    for entry in metadata.metadata_log:
        yield "previous metadata file", entry.metadata_file
    for statistics in getattr(metadata, "statistics", None) or ():
        yield "statistics file", statistics.statistics_path
    for statistics in getattr(metadata, "partition_statistics", None) or ():
        yield "partition statistics file", statistics.statistics_path
    seen_manifests: set[str] = set()
    for snapshot in metadata.snapshots:
        yield f"snapshot {snapshot.snapshot_id} manifest list", snapshot.manifest_list
        for manifest in snapshot.manifests(table.io):
            if manifest.manifest_path in seen_manifests:
                continue
            seen_manifests.add(manifest.manifest_path)
            yield "manifest", manifest.manifest_path
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=False):
                yield "data or delete file", entry.data_file.file_path
