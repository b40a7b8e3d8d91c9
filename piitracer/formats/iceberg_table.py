"""Which metadata file is an Iceberg table's current state, and the table read from it.

The one place that answers it, for every reader of Iceberg metadata (plan, execute's checks,
verify, estimate, discovery): a configured catalog's pointer when a catalog keeps the table (the
store's :class:`~piitracer.storage.store.MetadataPointers`, i.e.
:class:`~piitracer.formats.iceberg_catalogs.IcebergCatalogs`), else the folder itself
(``version-hint.text`` of Spark's Hadoop catalog, or the highest-numbered ``metadata.json``).
pyiceberg's ``StaticTable`` reads the file directly in ~0.1 s, whichever engine wrote it, on a
local folder or an object store.
"""

from __future__ import annotations

import re

from piitracer.formats import FormatError
from piitracer.formats.iceberg_catalogs import scrubbed
from piitracer.storage.locations import Location
from piitracer.storage.store import Store


_METADATA_VERSION = re.compile(r"^v?(\d+)[.-]")


def newest_metadata_file(location: Location, store: Store) -> Location | None:
    """The current ``metadata.json`` of the table: the one its catalog names when a configured
    catalog keeps the table (it must lie under the table's catalogued location); else the one
    ``version-hint.text`` names (Hadoop catalog) when present, else the highest-numbered file
    (``v3.metadata.json``, ``00003-<uuid>.metadata.json``, gzip-compressed ones too); mtime is
    never used."""
    pointer = store.current_metadata(location)
    if pointer is not None:
        return catalog_metadata_file(location, pointer)
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


def newer_metadata_files(location: Location, current: Location, store: Store) -> list[Location]:
    """Metadata files in the table's ``metadata`` folder numbered above ``current`` (the one its
    catalog names): another writer's uncommitted or failed commit. Reported, never read as the
    table's state; none when ``current`` bears no version number."""
    match = _METADATA_VERSION.match(current.name)
    if match is None:
        return []
    folder = location.child("metadata")
    found = []
    for entry in store.list_files(folder):
        name = entry.relative
        other = _METADATA_VERSION.match(name)
        if "/" not in name and ".metadata.json" in name and other and int(other.group(1)) > int(match.group(1)):
            found.append(folder.child(name))
    return sorted(found)


def stray_metadata_notes(location: Location, store: Store) -> list[str]:
    """What :func:`newer_metadata_files` finds for a table a catalog keeps, in words (a warning of
    discovery and verify); none for a table read from its folder."""
    pointer = store.current_metadata(location)
    if pointer is None:
        return []
    current = catalog_metadata_file(location, pointer)
    return [stray_note(found, current) for found in newer_metadata_files(location, current, store)]


def stray_note(found: Location, current: Location) -> str:
    """One stray metadata file, in words."""
    return (f"metadata/{found.name} is newer than the catalog's current metadata/{current.name}: another writer's "
            "uncommitted file? not read (the catalog's pointer is the table's state)")


def static_table(location: Location, store: Store):
    """pyiceberg's ``StaticTable`` of the newest metadata, or None when there is no table yet. Each
    metadata file is read once per store: a commit writes a new one, under a path no later commit
    reuses (which file is the newest is asked every time)."""
    metadata_file = newest_metadata_file(location, store)
    if metadata_file is None:
        return None
    key = ("iceberg metadata", metadata_file.uri)
    found = store.written_once.get(key)
    if found is not None:
        return found
    from pyiceberg.table import StaticTable  # ~1 s to import: only once there is a table to read

    properties = store.iceberg_properties(location)  # the catalog's key among them: kept out of the message
    try:
        found = StaticTable.from_metadata(metadata_file.uri, properties=properties)
    except Exception as error:  # pyiceberg raises many types for a corrupt or foreign file
        raise FormatError(f"{metadata_file}: cannot read Iceberg metadata: {type(error).__name__}: "
                          f"{scrubbed(str(error), properties)}") from None
    store.written_once[key] = found
    return found


def catalog_metadata_file(location: Location, pointer: str) -> Location:
    """The metadata file a catalog names for the table at ``location``, refused (``FormatError``)
    when it lies outside that location: whatever the catalog says, piitracer reads and changes
    only what lies under the catalogued place."""
    from piitracer.storage.guard import canonical

    found = location.resolve_reference(pointer)
    if not canonical(location).contains(canonical(found)):
        raise FormatError(f"{location}: its catalog names {pointer} as the current metadata, outside the table's "
                          "catalogued location: refusing to read it (fix the catalog entry's location)")
    return found


def snapshot_manifests(table, snapshot, store: Store) -> tuple:
    """The manifests (pyiceberg ``ManifestFile``) of ``snapshot``'s manifest list, read once per
    store: a manifest list is written once, under a path no later commit reuses."""
    key = ("iceberg manifest list", snapshot.manifest_list)
    found = store.written_once.get(key)
    if found is None:
        found = tuple(snapshot.manifests(table.io))
        store.written_once[key] = found
    return found


def manifest_entry_paths(table, manifest, store: Store) -> tuple[tuple[str, bool], ...]:
    """(data or delete file path, live) of every entry of ``manifest`` (live: not DELETED), read
    once per store: a manifest is written once (its path and length are the key)."""
    key = ("iceberg manifest", manifest.manifest_path, manifest.manifest_length)
    found = store.written_once.get(key)
    if found is None:
        from pyiceberg.manifest import ManifestEntryStatus

        found = tuple((entry.data_file.file_path, entry.status != ManifestEntryStatus.DELETED)
                      for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=False))
        store.written_once[key] = found
    return found
