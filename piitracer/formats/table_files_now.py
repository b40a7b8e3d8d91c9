"""The data files a table holds now, each with where it is seen (issue 52's guard scan), and a
marker that changes whenever the table does: an Iceberg table's current metadata file, a Delta
table's latest version, a plain folder's file list.

A scan keeps the marker: an unchanged marker means nothing new to read, and only the files not
read before are read otherwise. Only data files are listed: an Iceberg delete file or a Delta
deletion vector holding a person's key records a deletion, not a return.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from piitracer.formats import relative_to
from piitracer.model.workspace import DatasetFormat
from piitracer.storage.locations import Location
from piitracer.storage.store import Store


@dataclass(frozen=True)
class DataFilesNow:
    """A table's data files now: ``files`` maps each file's identity (its relative path; for a
    plain folder's file also its size and write time) to (its relative path, where it is seen:
    'snapshot 123', 'version 4', 'file'); ``marker`` changes whenever the table does."""

    marker: str
    files: dict[str, tuple[str, str]] = field(default_factory=dict)


def lists_data_files(fmt: DatasetFormat) -> bool:
    """Whether :func:`data_files_now` lists the data files of a table of this format."""
    return fmt in _LISTERS


def data_files_now(fmt: DatasetFormat, location: Location, store: Store) -> DataFilesNow | None:
    """The data files of the table at ``location`` (None when there is no table there, or its
    format has no data files piitracer reads: a view, an external system)."""
    lister = _LISTERS.get(fmt)
    return None if lister is None else lister(location, store)


def _iceberg(location: Location, store: Store) -> DataFilesNow | None:
    from pyiceberg.manifest import ManifestContent

    from piitracer.formats.iceberg_table import manifest_entry_paths, newest_metadata_file, snapshot_manifests, static_table

    metadata_file = newest_metadata_file(location, store)
    if metadata_file is None:
        return None
    table = static_table(location, store)
    files: dict[str, tuple[str, str]] = {}
    # Newest first: a file is reported as seen in the newest snapshot that holds it (every retained
    # snapshot, tags' and branches' among them: a restore may roll the table back to one).
    for snapshot in sorted(table.metadata.snapshots, key=lambda s: (s.timestamp_ms, s.snapshot_id), reverse=True):
        for manifest in snapshot_manifests(table, snapshot, store):
            if manifest.content != ManifestContent.DATA:
                continue
            for path, live in manifest_entry_paths(table, manifest, store):
                relative = relative_to(location, path) if live else None
                if relative is not None:
                    files.setdefault(relative, (relative, f"snapshot {snapshot.snapshot_id}"))
    return DataFilesNow(marker=metadata_file.uri, files=files)


def _delta(location: Location, store: Store) -> DataFilesNow | None:
    from piitracer.formats.delta_tables import is_table, open_table

    if not is_table(location, store):
        return None
    table = open_table(location, store)
    version = table.version()
    files = {relative: (relative, f"version {version}") for uri in table.file_uris() if (relative := relative_to(location, uri))}
    return DataFilesNow(marker=f"version {version}", files=files)


def _plain(location: Location, store: Store) -> DataFilesNow | None:
    from piitracer.formats import hidden

    if not store.exists(location):
        return None
    # A plain file may be written again under its old name (a restore): its identity is its path,
    # size and write time, and the folder's marker is the digest of every file's identity.
    found = {f"{e.relative}|{e.size}|{e.modified_ns}": (e.relative, "file") for e in store.list_files(location)
             if e.relative.endswith(".parquet") and not hidden(e.relative)}
    marker = hashlib.sha256("\n".join(sorted(found)).encode()).hexdigest()
    return DataFilesNow(marker=f"files {marker}", files=found)


_LISTERS = {DatasetFormat.ICEBERG: _iceberg, DatasetFormat.DELTA: _delta, DatasetFormat.PARQUET: _plain,
            DatasetFormat.ARCHIVE: _plain}
