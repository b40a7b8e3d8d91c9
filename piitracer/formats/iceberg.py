"""Iceberg tables read without Spark (pyiceberg ``StaticTable`` reads a metadata file directly in
~0.1 s, whichever engine wrote it). The one place that decides which ``metadata.json`` is a
table's newest."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator
from urllib.parse import unquote, urlparse

from piitracer.formats import FormatError

_METADATA_VERSION = re.compile(r"^v?(\d+)[.-]")


def newest_metadata_file(location: Path) -> Path | None:
    """The current ``metadata.json`` of the table folder: the one ``version-hint.text`` names
    (Hadoop catalog) when present, else the highest-numbered file (``v3.metadata.json``,
    ``00003-<uuid>.metadata.json``, gzip-compressed ones too); mtime is never used."""
    folder = Path(location) / "metadata"
    hint = folder / "version-hint.text"
    if hint.is_file():
        text = hint.read_text().strip()
        for name in (f"v{text}.metadata.json", f"v{text}.gz.metadata.json", f"v{text}.metadata.json.gz"):
            if (folder / name).is_file():
                return folder / name
    numbered = []
    for path in folder.glob("*.metadata.json*"):
        match = _METADATA_VERSION.match(path.name)
        if match:
            numbered.append((int(match.group(1)), path.name, path))
    return max(numbered)[2] if numbered else None


def static_table(location: Path):
    """pyiceberg's ``StaticTable`` of the newest metadata, or None when there is no table yet."""
    from pyiceberg.table import StaticTable

    metadata_file = newest_metadata_file(location)
    if metadata_file is None:
        return None
    try:
        return StaticTable.from_metadata(str(metadata_file))
    except Exception as error:  # pyiceberg raises many types for a corrupt or foreign file
        raise FormatError(f"{metadata_file}: cannot read Iceberg metadata: {type(error).__name__}: {error}") from error


def arrow_schema(location: Path):
    """The current schema as Arrow, or None when there is no table."""
    table = static_table(location)
    return None if table is None else table.schema().as_arrow()


def local_path(uri: str) -> str:
    """A ``file:`` URI or plain path as a local path; other schemes are returned as they are."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return unquote(parsed.path) if parsed.scheme else uri
    return uri


def referenced_paths(location: Path) -> Iterator[tuple[str, str]]:
    """(what, path) for every place the table's metadata points at: its ``location``, the
    write paths its properties set, every previous metadata file, statistics files, and for every
    retained snapshot its manifest list, manifests and data/delete files. A copied table folder
    keeps the original's absolute paths here: they are what Iceberg reads, writes, expires and
    deletes, whatever folder the metadata file itself sits in."""
    table = static_table(location)
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
