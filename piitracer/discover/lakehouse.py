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
from typing import Any, Callable, Iterable, Mapping, Sequence

from piitracer.formats import FormatError, FormatSupport, TableFacts, hidden, support_for, supported_formats
from piitracer.model.workspace import DatasetFormat, IcebergWriteMode
from piitracer.storage.guard import canonical
from piitracer.storage.locations import Location
from piitracer.storage.store import StorageError, Store


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
    catalog: str | None = None  # the configured Iceberg catalog that lists it (its pointer is the table's state)
    properties: dict[str, str] = field(default_factory=dict)  # a catalog table's properties, credentials redacted
    warnings: tuple[str, ...] = ()  # worth a look, not a reason to skip it (a stray newer metadata file)

    @property
    def name(self) -> str:
        """A dataset id for a table no catalog entry names: the Iceberg identifier without its
        catalog, else the last two folders (``delta/analytics/customer_txn`` -> ``analytics.customer_txn``)."""
        if self.table:
            return self.table.split(".", 1)[1]
        parts = self.location.uri.rstrip("/").split("/")
        return ".".join(parts[-2:])


@dataclass
class Discovery:
    """The tables found, sorted by location, and the roots that could not be listed (with why)."""

    tables: list[DiscoveredTable]
    unreadable_roots: dict[str, str] = field(default_factory=dict)
    # Views the Spark catalogs keep (dataset id -> columns), when they were asked, and per catalog
    # why it could not be listed.
    views: dict[str, tuple[str, ...]] = field(default_factory=dict)
    unreadable_catalogs: dict[str, str] = field(default_factory=dict)
    # The configured Iceberg catalogs that could not be listed, with why (the others still are).
    unreadable_iceberg_catalogs: dict[str, str] = field(default_factory=dict)
    # Tables a configured Iceberg catalog lists but cannot load or place (identifier -> why).
    unreadable_iceberg_tables: dict[str, str] = field(default_factory=dict)


def discover_tables(roots: Sequence[Location], store: Store, warehouse: Location | None = None,
                    catalog_name: str = "lake", progress: Callable[[str], None] | None = None,
                    catalogued: Sequence[DiscoveredTable] = ()) -> Discovery:
    """Every table under ``roots``. A table of a format Spark reaches by identifier, under
    ``warehouse`` (a Hadoop catalog), gets ``<catalog_name>.<namespace>.<table>``. A root that
    cannot be listed (an unreachable store, wrong credentials) is reported and the others are
    still read; ``progress`` hears of each table as it is read. ``catalogued``: the tables the
    Iceberg catalogs list (:mod:`piitracer.discover.catalog_tables`), found as they are: a folder
    at one's location is that table, not another one named by its path."""
    known = {canonical(table.location).uri for table in catalogued}
    supports = [support_for(fmt) for fmt in supported_formats()]
    loose = next(support for support in supports if support.loose_files)
    folders: dict[str, FormatSupport] = {}
    loose_folders: set[str] = set()
    unreadable: dict[str, str] = {}
    readable = []
    for root in roots:
        try:
            if store.exists(root):
                readable.append(root)
        except StorageError as error:
            unreadable[str(root)] = str(error)
    for root in _distinct(readable, store):
        try:
            files = [entry.relative for entry in store.list_files(root)]
        except StorageError as error:
            unreadable[str(root)] = str(error)
            continue
        tables = _table_folders(files, supports)
        folders.update({root.child(folder).uri if folder else root.uri: support for folder, support in tables.items()})
        for relative in files:
            if relative.endswith(".parquet") and not hidden(relative) and not _inside(relative, tables):
                loose_folders.add(_dataset_folder(root, relative))
    say = progress or (lambda text: None)
    found = []
    for uri, support in [*folders.items(), *((uri, loose) for uri in sorted(loose_folders))]:
        if canonical(Location.parse(uri)).uri in known:
            continue
        say(uri)
        found.append(_describe(Location.parse(uri), support, store, warehouse if support is not loose else None,
                               catalog_name))
    found += catalogued
    _mark_shallow_clones(found)
    return Discovery(sorted(found, key=lambda table: table.location.uri), unreadable)


def describe_catalog_tables(tables: Mapping[str, str], found: Discovery, store: Store,
                            roots: Sequence[Location]) -> list[DiscoveredTable]:
    """The tables a Spark catalog lists (identifier -> location) that the walk of ``roots`` did
    not find: described from their folder when it lies inside a root; otherwise listed with the
    reason only (outside every root piitracer reads nothing and touches nothing)."""
    known = {canonical(t.location).uri for t in found.tables}
    supports = [support_for(fmt) for fmt in supported_formats()]
    extra = []
    for identifier, text in sorted(tables.items()):
        try:
            location = Location.parse(text)
        except ValueError as error:
            extra.append(DiscoveredTable(Location.parse("/"), DatasetFormat.EXTERNAL, table=identifier,
                                         problems=(f"the Spark catalog gives it location {text!r}: {error}",)))
            continue
        if canonical(location).uri in known:
            continue
        if not any(canonical(root).contains(canonical(location)) for root in roots):
            extra.append(DiscoveredTable(location, DatasetFormat.EXTERNAL, table=identifier, problems=(
                "kept by the Spark catalog outside the discovery roots: not read (piitracer touches nothing there)",)))
            continue
        try:
            files = [entry.relative for entry in store.list_files(location)]
        except StorageError as error:
            extra.append(DiscoveredTable(location, DatasetFormat.EXTERNAL, table=identifier, problems=(str(error),)))
            continue
        support = next((s for s in supports for relative in files if s.table_folder(tuple(relative.split("/"))) == ""),
                       None)
        if support is None:
            extra.append(DiscoveredTable(location, DatasetFormat.EXTERNAL, table=identifier,
                                         problems=("the Spark catalog lists it, but its folder holds no table metadata",)))
            continue
        table = _describe(location, support, store, None, "")
        table.table = identifier
        extra.append(table)
    return extra


def _distinct(roots: Iterable[Location], store: Store) -> list[Location]:
    """The existing roots, without one that lies inside another (its tables would be found twice)."""
    existing = sorted({canonical(root).uri: canonical(root) for root in roots}.values(),
                      key=lambda location: len(location.uri))
    kept: list[Location] = []
    for root in existing:
        if not any(outer.contains(root) for outer in kept):
            kept.append(root)
    return kept


def _table_folders(files: Sequence[str], supports: Sequence[FormatSupport]) -> dict[str, FormatSupport]:
    """Relative folder -> format of every table a file among ``files`` marks (each format says
    which files mark its tables: Iceberg's metadata files, Delta's log)."""
    tables: dict[str, FormatSupport] = {}
    for relative in files:
        parts = tuple(relative.split("/"))
        for support in supports:
            folder = support.table_folder(parts)
            if folder is not None:
                tables.setdefault(folder, support)
                break
    return tables


def _inside(relative: str, tables: Mapping[str, Any]) -> bool:
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


def _describe(location: Location, support: FormatSupport, store: Store, warehouse: Location | None,
              catalog_name: str) -> DiscoveredTable:
    """The table at ``location`` as its format's own metadata describes it (a read error is the
    table's problem, not the discovery's end)."""
    try:
        facts = support.table_facts(location, store) if support.table_facts else TableFacts()
    except (FormatError, OSError, ValueError) as error:
        return DiscoveredTable(location, support.format, problems=(f"cannot read its metadata: {error}",))
    identifier = None
    if support.spark_table and warehouse is not None and canonical(warehouse).contains(canonical(location)):
        relative = canonical(warehouse).relative(canonical(location))
        identifier = ".".join([catalog_name, *relative.split("/")]) if relative else None
    return DiscoveredTable(
        location=location, format=support.format, columns=facts.columns, table=identifier, write_mode=facts.write_mode,
        retention=dict(facts.retention), format_version=facts.format_version, refs=facts.refs,
        partition_columns=facts.partition_columns, features=facts.features, problems=facts.problems,
        data_folders=facts.data_folders)


def _mark_shallow_clones(tables: list[DiscoveredTable]) -> None:
    """A table whose current data files live under another discovered table's location is that
    table's shallow clone."""
    for table in tables:
        own = canonical(table.location)
        for folder in table.data_folders:
            place = canonical(Location.parse(folder))
            if own.contains(place):
                continue
            source = next((other for other in tables if other is not table and canonical(other.location).contains(place)),
                          None)
            if source is not None:
                table.shallow_clone_of = source.location
                break


def sample_rows(table: DiscoveredTable, store: Store, limit: int):
    """At most ``limit`` rows of a discovered table as Arrow, read by its format's own reader: for
    the classifier's validators only, never shown."""
    return support_for(table.format).sample_rows(table.location, store, limit)
