"""Read the catalog from the lakehouse itself: every table under the discovery roots, with what its
own metadata says — format, location, columns, Iceberg write mode, retention properties, format
version, tags and branches, shallow clones; Delta retention, change data feed, deletion vectors,
statistics columns; plain Parquet folders with their partition columns.

A folder is an Iceberg table when it has ``metadata/*.metadata.json``, a Delta table when it has a
``_delta_log`` with a commit, and a plain Parquet dataset when it holds visible ``.parquet`` files
in no table (Hive partition folders ``k=v`` belong to the dataset above them). Everything is read
through the storage layer and the formats' own readers (pyiceberg, delta-rs, pyarrow), so local
folders and object-store URIs work the same. A table whose metadata cannot be read is reported
with the reason and the rest is still discovered.

What only a person knows (owners, how often maintenance really runs, identifiers, archives,
external systems) is not here: the workspace keeps it (``catalog check`` compares the two).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Iterable, Mapping, Sequence

from piitracer.formats import FormatError, hidden
from piitracer.formats import delta as delta_format
from piitracer.formats import iceberg as iceberg_format
from piitracer.formats import parquet as parquet_format
from piitracer.model.table_properties import ICEBERG_DELETE_MODE, delta_retention, iceberg_retention
from piitracer.model.workspace import DatasetFormat, IcebergWriteMode
from piitracer.storage.guard import canonical
from piitracer.storage.locations import Location
from piitracer.storage.store import Store


@dataclass
class DiscoveredTable:
    """One table as its own metadata describes it (never a row's value)."""

    location: Location
    format: DatasetFormat
    columns: tuple[str, ...] = ()
    table: str | None = None  # the Spark identifier, for an Iceberg table in the warehouse
    write_mode: IcebergWriteMode | None = None
    retention: dict[str, Any] = field(default_factory=dict)  # catalog retention fields the table's properties set
    format_version: int | None = None
    refs: tuple[str, ...] = ()  # 'tag month_end_close (max-ref-age 90d)', ...
    shallow_clone_of: Location | None = None  # an Iceberg table whose manifests list another table's files
    partition_columns: tuple[str, ...] = ()
    features: tuple[str, ...] = ()  # 'change data feed', 'deletion vectors', 'stats columns: a, b'
    problems: tuple[str, ...] = ()
    data_folders: tuple[str, ...] = ()  # Iceberg: where the current snapshot's data files live

    @property
    def name(self) -> str:
        """A dataset id for a table no catalog entry names: the Iceberg identifier without its
        catalog, else the last two folders (``delta/analytics/customer_txn`` -> ``analytics.customer_txn``)."""
        if self.table:
            return self.table.split(".", 1)[1]
        parts = self.location.uri.rstrip("/").split("/")
        return ".".join(parts[-2:])


def discover_tables(roots: Sequence[Location], store: Store, warehouse: Location | None = None,
                    catalog_name: str = "lake") -> list[DiscoveredTable]:
    """Every table under ``roots``, sorted by location. An Iceberg table under ``warehouse`` (a
    Hadoop catalog) gets its Spark identifier ``<catalog_name>.<namespace>.<table>``."""
    folders: dict[str, DatasetFormat] = {}
    parquet_folders: set[str] = set()
    for root in _distinct(roots, store):
        files = [entry.relative for entry in store.list_files(root)]
        tables = _table_folders(files)
        folders.update({root.child(folder).uri if folder else root.uri: fmt for folder, fmt in tables.items()})
        for relative in files:
            if not relative.endswith(".parquet") or hidden(relative) or _inside(relative, tables):
                continue
            parquet_folders.add(_dataset_folder(root, relative))
    found = [_describe(Location.parse(uri), fmt, store, warehouse, catalog_name) for uri, fmt in folders.items()]
    found += [_parquet(Location.parse(uri), store) for uri in parquet_folders]
    _mark_shallow_clones(found)
    return sorted(found, key=lambda table: table.location.uri)


def _distinct(roots: Iterable[Location], store: Store) -> list[Location]:
    """The existing roots, without one that lies inside another (its tables would be found twice)."""
    existing = sorted({canonical(root).uri: canonical(root) for root in roots if store.exists(root)}.values(),
                      key=lambda location: len(location.uri))
    kept: list[Location] = []
    for root in existing:
        if not any(outer.contains(root) for outer in kept):
            kept.append(root)
    return kept


def _table_folders(files: Sequence[str]) -> dict[str, DatasetFormat]:
    """Relative folder -> format of every Iceberg and Delta table among ``files``."""
    tables: dict[str, DatasetFormat] = {}
    for relative in files:
        parts = relative.split("/")
        if len(parts) >= 2 and parts[-2] == "metadata" and parts[-1].endswith((".metadata.json", ".metadata.json.gz")):
            tables.setdefault("/".join(parts[:-2]), DatasetFormat.ICEBERG)
        elif len(parts) >= 2 and parts[-2] == "_delta_log" and parts[-1].endswith(".json"):
            tables.setdefault("/".join(parts[:-2]), DatasetFormat.DELTA)
    return tables


def _inside(relative: str, tables: Mapping[str, DatasetFormat]) -> bool:
    parts = relative.split("/")
    return any("/".join(parts[:n]) in tables for n in range(len(parts)))


# A folder named by a date or a number (an export's day, a snapshot's sequence) is part of the dataset above.
_SNAPSHOT_FOLDER = re.compile(r"^(\d{4}-\d{2}-\d{2}([T_ ][\d:.-]+)?|\d{8}|\d+)$")


def _dataset_folder(root: Location, relative: str) -> str:
    """The dataset a plain Parquet file belongs to: its folder, above any Hive partition folders
    (``dt=2026-11-10``) and folders named by a date or a number (``2026-11-10``: weekly exports)."""
    parts = relative.split("/")[:-1]
    while parts and ("=" in parts[-1] or _SNAPSHOT_FOLDER.match(parts[-1])):
        parts.pop()
    return root.child("/".join(parts)).uri if parts else root.uri


def _describe(location: Location, fmt: DatasetFormat, store: Store, warehouse: Location | None,
              catalog_name: str) -> DiscoveredTable:
    try:
        if fmt is DatasetFormat.ICEBERG:
            return _iceberg(location, store, warehouse, catalog_name)
        return _delta(location, store)
    except (FormatError, OSError, ValueError) as error:
        return DiscoveredTable(location, fmt, problems=(f"cannot read its metadata: {error}",))


def _iceberg(location: Location, store: Store, warehouse: Location | None, catalog_name: str) -> DiscoveredTable:
    from pyiceberg.table.refs import SnapshotRefType

    table = iceberg_format.static_table(location, store)
    metadata = table.metadata
    properties = dict(metadata.properties)
    retention, problems = iceberg_retention(properties)
    mode = properties.get(ICEBERG_DELETE_MODE, IcebergWriteMode.COPY_ON_WRITE.value)  # Iceberg's default
    refs = []
    for name, ref in sorted(metadata.refs.items()):
        if name == "main":
            continue
        kind = "tag" if ref.snapshot_ref_type is SnapshotRefType.TAG else "branch"
        age = f" (max-ref-age {_days(ref.max_ref_age_ms)})" if ref.max_ref_age_ms else ""
        refs.append(f"{kind} {name}{age}")
    identifier = None
    if warehouse is not None and canonical(warehouse).contains(canonical(location)):
        relative = canonical(warehouse).relative(canonical(location))
        identifier = ".".join([catalog_name, *relative.split("/")]) if relative else None
    schema = table.schema()
    return DiscoveredTable(
        location=location, format=DatasetFormat.ICEBERG, columns=tuple(f.name.lower() for f in schema.fields),
        table=identifier, write_mode=IcebergWriteMode(mode) if mode in {m.value for m in IcebergWriteMode} else None,
        retention=retention, format_version=int(metadata.format_version), refs=tuple(refs),
        partition_columns=tuple(schema.find_field(f.source_id).name for f in metadata.spec().fields),
        data_folders=tuple(sorted(_data_file_folders(table))), problems=tuple(problems))


def _data_file_folders(table) -> set[str]:
    """The folders of the current snapshot's data files (one file per manifest says where that
    manifest's files live)."""
    snapshot = table.current_snapshot()
    if snapshot is None:
        return set()
    found = set()
    for manifest in snapshot.manifests(table.io):
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            path = entry.data_file.file_path
            found.add(path.removeprefix("file:").rsplit("/", 1)[0])
            break
    return found


def _mark_shallow_clones(tables: list[DiscoveredTable]) -> None:
    """An Iceberg table whose data files live under another discovered table's location is that
    table's shallow clone."""
    icebergs = [t for t in tables if t.format is DatasetFormat.ICEBERG]
    for table in icebergs:
        own = canonical(table.location)
        for folder in table.data_folders:
            place = canonical(Location.parse(folder))
            if own.contains(place):
                continue
            source = next((other for other in icebergs if other is not table and canonical(other.location).contains(place)),
                          None)
            if source is not None:
                table.shallow_clone_of = source.location
                break


def _delta(location: Location, store: Store) -> DiscoveredTable:
    table = delta_format.open_table(location, store)
    metadata = table.metadata()
    configuration = dict(metadata.configuration)
    retention, problems = delta_retention(configuration)
    features = []
    if configuration.get("delta.enableChangeDataFeed", "").lower() == "true":
        features.append("change data feed")
    protocol = table.protocol()
    if "deletionVectors" in (protocol.writer_features or []) or \
            configuration.get("delta.enableDeletionVectors", "").lower() == "true":
        features.append("deletion vectors")
    if configuration.get("delta.dataSkippingStatsColumns"):
        features.append(f"stats columns: {configuration['delta.dataSkippingStatsColumns']}")
    schema = delta_format.arrow_schema(location, store)
    return DiscoveredTable(location=location, format=DatasetFormat.DELTA, columns=tuple(n.lower() for n in schema.names),
                           retention=retention, partition_columns=tuple(metadata.partition_columns),
                           features=tuple(features), problems=tuple(problems))


def _parquet(location: Location, store: Store) -> DiscoveredTable:
    try:
        found = parquet_format.dataset(location, store)
    except (OSError, ValueError) as error:  # pyarrow: a file that is no Parquet, schemas that do not merge
        return DiscoveredTable(location, DatasetFormat.PARQUET, problems=(f"cannot read its files: {error}",))
    partitioning = found.partitioning.schema.names if found is not None and found.partitioning else []
    names = tuple(n.lower() for n in found.schema.names) if found is not None else ()
    return DiscoveredTable(location=location, format=DatasetFormat.PARQUET, columns=names,
                           partition_columns=tuple(partitioning))


def _days(milliseconds: int) -> str:
    from piitracer.model.workspace import duration_text

    return duration_text(timedelta(milliseconds=milliseconds))


def sample_rows(table: DiscoveredTable, store: Store, limit: int):
    """At most ``limit`` rows of a discovered table as Arrow, read by its format's own reader
    (pyiceberg scan with a limit, delta-rs dataset head, pyarrow dataset head): for the
    classifier's validators only, never shown."""
    if table.format is DatasetFormat.ICEBERG:
        found = iceberg_format.static_table(table.location, store)
        return found.scan(limit=limit).to_arrow()
    if table.format is DatasetFormat.DELTA:
        return delta_format.open_table(table.location, store).to_pyarrow_dataset().head(limit)
    found = parquet_format.dataset(table.location, store)
    return found.head(limit) if found is not None else None
