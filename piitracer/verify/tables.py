"""What each table format says about its own files and versions, read without Spark:

- which files the current snapshot/version uses, which only older retained ones use, and which
  none (so a leftover byte can be attributed to the planned step that will remove it);
- the logical check: every retained Iceberg snapshot (pyiceberg ``StaticTable``) or loadable
  Delta version (delta-rs) read back, the key column compared with the subjects' values.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from piitracer.formats import delta as delta_format
from piitracer.formats import iceberg as iceberg_format
from piitracer.formats import parquet as parquet_format
from piitracer.storage.locations import Location, LocationError
from piitracer.storage.store import Store
from piitracer.verify.columns import exact_hits
from piitracer.verify.values import ValueIndex


@dataclass(frozen=True)
class LogicalHit:
    version: str  # snapshot id or Delta version
    current: bool
    value_sets: frozenset[str]
    ref: str | None = None  # an Iceberg tag/branch (other than main) that retains this snapshot


@dataclass
class TableView:
    """One table's files and versions, as its own metadata says."""

    live: set[str] = field(default_factory=set)  # data/delete files of the current snapshot/version
    current_meta: set[str] = field(default_factory=set)  # manifests + manifest list of the current snapshot
    retained: set[str] = field(default_factory=set)  # files only older retained snapshots use
    ref_files: dict[str, str] = field(default_factory=dict)  # file -> tag/branch whose snapshot uses it
    versions_checked: int = 0
    logical: list[LogicalHit] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def relative_to(root: Location, uri: str) -> str | None:
    """A path a table's metadata names (a URI, an absolute path or one relative to ``root``) as a
    path relative to ``root``; None when it lies outside."""
    from piitracer.storage.guard import canonical

    try:
        return canonical(root).relative(canonical(root.resolve_reference(uri)))
    except LocationError:
        return None


# ---- Iceberg ------------------------------------------------------------------------------------

def iceberg_view(root: Location, store: Store, key_column: str | None, index: ValueIndex) -> TableView:
    """Files per snapshot and the logical check of every retained snapshot."""
    view = TableView()
    table = iceberg_format.static_table(root, store)
    if table is None:
        view.problems.append("no Iceberg metadata.json under metadata/")
        return view
    metadata = table.metadata
    current = metadata.current_snapshot_id
    refs = {ref.snapshot_id: name for name, ref in metadata.refs.items() if name != "main"}
    entries_cache: dict[str, list] = {}
    for snapshot in metadata.snapshots:
        is_current = snapshot.snapshot_id == current
        used: set[str] = set()
        meta: set[str] = {relative_to(root, snapshot.manifest_list) or ""}
        for manifest in snapshot.manifests(table.io):
            meta.add(relative_to(root, manifest.manifest_path) or "")
            if manifest.manifest_path not in entries_cache:
                entries_cache[manifest.manifest_path] = manifest.fetch_manifest_entry(table.io, discard_deleted=False)
            for entry in entries_cache[manifest.manifest_path]:
                path = relative_to(root, entry.data_file.file_path)
                deleted = int(entry.status) == 2  # ManifestEntryStatus.DELETED: tombstone, file not live
                if path and not (is_current and deleted):
                    used.add(path)
        meta.discard("")
        if is_current:
            view.live |= used
            view.current_meta |= meta
        else:
            view.retained |= used | meta
        if snapshot.snapshot_id in refs:
            for path in used | meta:
                view.ref_files.setdefault(path, refs[snapshot.snapshot_id])
    view.retained -= view.live | view.current_meta
    if key_column and index:
        for snapshot in metadata.snapshots:
            try:
                rows = table.scan(snapshot_id=snapshot.snapshot_id, selected_fields=(key_column,)).to_arrow()
            except Exception as error:  # e.g. equality deletes, which pyiceberg 0.12 cannot read
                view.problems.append(f"snapshot {snapshot.snapshot_id} could not be read back ({type(error).__name__})")
                continue
            view.versions_checked += 1
            if key_column not in rows.column_names:
                continue
            names = exact_hits(rows.column(key_column).combine_chunks(), index)
            if names:
                view.logical.append(LogicalHit(str(snapshot.snapshot_id), snapshot.snapshot_id == current,
                                               frozenset(names), refs.get(snapshot.snapshot_id)))
    return view


# ---- Delta --------------------------------------------------------------------------------------

def delta_view(root: Location, store: Store, key_column: str | None, index: ValueIndex) -> TableView:
    """Files of the current version, and every version still loadable read back."""
    view = TableView()
    table = delta_format.open_table(root, store)
    latest = table.version()
    view.live = {p for uri in table.file_uris() if (p := relative_to(root, uri))}
    if not (key_column and index):
        return view
    unreadable = 0
    for version in range(latest + 1):
        try:
            old = table if version == latest else delta_format.open_table(root, store, version=version)
        except Exception:  # log entries cleaned up: the version is no longer retained
            continue
        try:
            frame = old.to_pyarrow_dataset().to_table(columns=[key_column])
        except Exception as error:
            message = str(error)
            if "No such file" in message or "not found" in message.lower() or isinstance(error, FileNotFoundError):
                unreadable += 1  # its files were vacuumed: the version cannot be time-travelled to
                continue
            view.problems.append(f"version {version} could not be read back ({type(error).__name__})")
            continue
        view.versions_checked += 1
        names = exact_hits(frame.column(key_column).combine_chunks(), index)
        if names:
            view.logical.append(LogicalHit(str(version), version == latest, frozenset(names)))
    if unreadable:
        view.problems.append(f"{unreadable} older version(s) have vacuumed files and cannot be read (not retained)")
    return view


# ---- plain Parquet ------------------------------------------------------------------------------

def parquet_view(root: Location, store: Store, key_column: str | None, index: ValueIndex) -> TableView:
    """The folder as a reader sees it (hidden and underscore files ignored, Hive partitions)."""
    view = TableView()
    view.live = set(parquet_format.data_files(root, store))
    dataset = parquet_format.dataset(root, store)
    if dataset is not None and key_column and index and key_column in dataset.schema.names:
        names = exact_hits(dataset.to_table(columns=[key_column]).column(key_column).combine_chunks(), index)
        view.versions_checked = 1
        if names:
            view.logical.append(LogicalHit("current", True, frozenset(names)))
    return view
