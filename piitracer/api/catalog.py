"""The catalog: discover the lakehouse's tables (``catalog discover``), classify their columns
(``catalog classify``), compare the catalog with the lakehouse (``catalog check``) and write
``catalog.discovered.yaml``. Rooms: discover, storage, formats, ingest (catalog layers), lineage
(for views and inherited identifiers), executor (the Spark catalogs, only with ``spark_views``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import yaml

from piitracer.api.wiring import dataset_locations, iceberg_catalogs, warehouse_roots, workspace_store
from piitracer.api.lineage import build_lineage_graph
from piitracer.discover.catalog_file import DiscoveredCatalog, catalog_entries, kept_identifiers, with_identifiers
from piitracer.discover.classify import ClassifyOptions, ColumnVerdict, classify_columns, inherited
from piitracer.discover.classify_sample import key_values as read_key_values
from piitracer.discover.classify_sample import sample_table
from piitracer.discover.drift import Difference, compare
from piitracer.discover.catalog_tables import discover_catalog_tables
from piitracer.discover.lakehouse import DiscoveredTable, Discovery, describe_catalog_tables, discover_tables
from piitracer.executor.spark_catalog import list_catalogs
from piitracer.executor.spark_session import spark_session
from piitracer.formats import FormatError
from piitracer.formats.iceberg_catalogs import catalog_table
from piitracer.model.progress import Progress, report
from piitracer.workspace.catalog_layers import DISCOVERED_FILE, DISCOVERED_HEADER
from piitracer.workspace.model import Workspace, WorkspaceError
from piitracer.model.lineage import ColumnRef
from piitracer.model.workspace import REPLICA_SEPARATOR, DatasetFormat
from piitracer.storage.guard import canonical
from piitracer.storage.locations import Location, LocationError
from piitracer.storage.store import StorageError, Store
from piitracer.ingest.workspace.loader import where_said


def discover_catalog(workspace: Workspace, progress: Callable[[str], None] | None = None,
                     spark_views: bool = False) -> Discovery:
    """Every table the lakehouse has under the discovery roots, as its own metadata describes it
    (``catalog discover``; :mod:`piitracer.discover.lakehouse`).

    The configured Iceberg catalogs' tables are listed through their catalogs
    (:mod:`piitracer.discover.catalog_tables`): each named ``namespace.table``, read from the
    metadata file its catalog names, and not found again by its folder. A root or a catalog that
    cannot be listed is reported with the reason, never a stop.

    Args:
        workspace: the loaded workspace (its warehouse roots, Spark and Iceberg catalogs).
        progress: gets one line per root or catalog listed.
        spark_views: also what the workspace's Spark catalogs list (this starts Spark): their views,
            and their tables the walk did not find (described when inside a root, else listed with
            the reason).

    Returns:
        The tables found, the views, and the roots, catalogs and tables that could not be read.

    Raises:
        SparkSetupError: ``spark_views`` and Spark cannot start.
    """
    refuse_missing_roots(workspace)
    warehouse, roots = Location.parse(workspace.resolve(workspace.config.spark.warehouse)), warehouse_roots(workspace)
    catalogs = iceberg_catalogs(workspace, ask_catalogs=False)  # it lists them itself: one unreachable is reported
    store = Store(workspace.config.storage, pointers=catalogs)  # one store: the tables stay bound to their catalogs
    listed = discover_catalog_tables(catalogs, roots, store, progress)
    found = discover_tables(roots, store, warehouse, workspace.config.spark.catalog, progress, catalogued=listed.tables)
    found.unreadable_iceberg_catalogs, found.bindings = listed.unreadable, listed.bindings()
    found.unreadable_iceberg_tables = listed.unloadable
    if spark_views:
        if progress:
            progress("the Spark catalogs")
        settings = workspace.config.spark
        catalogs = tuple(dict.fromkeys(("spark_catalog", *workspace.config.lineage.spark_catalogs, settings.catalog)))
        listed = list_catalogs(spark_session(settings, workspace.resolve(settings.warehouse)), catalogs)
        found.views, found.unreadable_catalogs = listed.views, listed.problems
        found.tables = sorted([*found.tables, *describe_catalog_tables(listed.tables, found, workspace_store(workspace),
                                                                       warehouse_roots(workspace))],
                              key=lambda table: table.location.uri)
    return found


def refuse_missing_roots(workspace: Workspace) -> None:
    """Refuse to discover (and so to classify, or to check the catalog) under a configured
    warehouse root that does not exist: the walk would find no table there, and a check would
    "agree" with a lakehouse it never saw. Raises :class:`WorkspaceError` naming the file, line
    and root, and the fix. A root whose store cannot be reached is left to discovery, which reports
    it with the reason."""
    store = workspace_store(workspace)
    for index, text in enumerate(workspace.config.warehouse_roots):
        try:
            if store.exists(Location.parse(text, workspace.root)):
                continue
        except (StorageError, LocationError):
            continue
        raise WorkspaceError(f"{where_said(workspace.root, ['warehouse_roots', index])}: warehouse root {text} does not "
                             "exist: create it and put your tables under it, or fix warehouse_roots (no table can be "
                             "discovered or checked there)")


def discovery_store(workspace: Workspace, bindings: Mapping[Location, str]) -> Store:
    """The workspace's store, with the tables discovery listed through their catalogs
    (``bindings``: location -> identifier) read through those catalogs too."""
    catalogs = iceberg_catalogs(workspace, ask_catalogs=False)
    catalogs.bind(bindings)
    return Store(workspace.config.storage, pointers=catalogs)


def discovered_name(workspace: Workspace) -> Callable[[DiscoveredTable], str]:
    """How discovery names a table in the workspace's ids.

    Args:
        workspace: the loaded workspace.

    Returns:
        A function from a discovered table to its dataset id: the catalog's for a catalogued
            location, else the catalog's for its table identifier (``table: prod.fintech.payments``),
            else its own name.
    """
    names = {canonical(location).uri: dataset
             for dataset, location in dataset_locations(workspace, ask_catalogs=False).items()}
    tables = declared_tables(workspace)
    return lambda table: (names.get(canonical(table.location).uri)
                          or (tables.get((table.table or "").lower()) if table.catalog else None) or table.name)


def declared_tables(workspace: Workspace) -> dict[str, str]:
    """``<catalog>.<namespace>.<table>`` (lower case) -> the dataset whose ``table:`` it is."""
    return {entry.table.lower(): dataset for dataset, entry in workspace.config.catalog.items() if entry.table}


def lineage_only_datasets(workspace: Workspace, discovery: Discovery) -> list[str]:
    """Datasets the lineage names that neither the catalog nor the lakehouse has: seen in
    lineage, not found in storage (a table since dropped, a name the events spell otherwise, a
    system outside the roots).

    Args:
        workspace: the loaded workspace.
        discovery: what discovery found.

    Returns:
        The dataset ids, sorted.
    """
    name_of = discovered_name(workspace)
    found = {name_of(t) for t in discovery.tables}
    graph = build_lineage_graph(workspace)
    return sorted(d for d in graph.datasets() if d not in workspace.config.catalog and d not in found)


def catalog_drift(workspace: Workspace, tables: Sequence[DiscoveredTable] | None = None, *,
                  discovery: Discovery | None = None) -> list[Difference]:
    """Where the workspace's catalog and the lakehouse disagree (:mod:`piitracer.discover.drift`).

    An entry kept by a configured Iceberg catalog is compared with the table its catalog lists by
    its ``table:`` identifier (the catalog's facts), never with what a walk finds in its folder.

    Args:
        workspace: The workspace whose catalog is checked.
        tables: The lakehouse's tables to compare with (default: ``discovery``'s).
        discovery: A discovery already made (its tables, and why a catalog or a table could not be
            read through its catalog); default: one made now.

    Returns:
        Every difference, drift and overrides alike (:class:`~piitracer.discover.drift.Difference`).
    """
    if tables is None:
        discovery = discovery or discover_catalog(workspace)
        tables = discovery.tables
    unlisted = {**discovery.unreadable_iceberg_catalogs, **discovery.unreadable_iceberg_tables} if discovery else {}
    catalogs = iceberg_catalogs(workspace, ask_catalogs=False)
    kept = {dataset: entry.table for dataset, entry in workspace.config.catalog.items()
            if catalog_table(entry, workspace.config.spark.catalog) and catalogs.owns(entry.table)}
    return compare(workspace.config.catalog, dataset_locations(workspace, ask_catalogs=False), tables,
                   workspace.layers.overrides, catalog_tables=kept, unlisted=unlisted)


def write_discovered_catalog(workspace: Workspace, discovery: Discovery | None = None,
                             classification: "Classification | None" = None) -> tuple[Path, DiscoveredCatalog]:
    """Write ``catalog.discovered.yaml`` (``catalog discover --write``): an entry per discovered
    table (and per view the lineage creates), under the person's ``piitracer.yaml``
    (:mod:`piitracer.workspace.catalog_layers`).

    Args:
        workspace: the loaded workspace.
        discovery: what discovery found; default: ``classification``'s, else a discovery made now.
        classification: its identifier columns are added as ``classified_by: auto``; without it, the
            identifiers an earlier classification proposed are kept where their columns still exist.

    Returns:
        The file written and its content.

    Raises:
        WorkspaceError: a catalog entry set aside at load names a location that cannot be parsed.
    """
    if discovery is None:
        discovery = classification.discovery if classification is not None else None
    found = discover_catalog(workspace) if discovery is None else discovery
    supplied = workspace.layers.from_discovery
    declared = {d: location for d, location in dataset_locations(workspace, ask_catalogs=False).items()
                if "location" not in supplied.get(d, ())}
    formats = {d: entry.format for d, entry in workspace.config.catalog.items() if "format" not in supplied.get(d, ())}
    for dataset, raw in workspace.set_aside.items():  # what the person says of tables not yet described
        declared.update(_said_locations(workspace, dataset, raw))
        if raw.get("format"):
            formats[dataset] = DatasetFormat(str(raw["format"]).lower())
    root = Location.parse(workspace.root)

    def place_text(location: Location) -> str:
        inside = root.relative(location)
        return inside if inside else str(location)

    graph = build_lineage_graph(workspace)
    name_of = discovered_name(workspace)  # built once: it canonicalises every catalogued location
    stored = {name_of(t) for t in found.tables}
    views = {d: tuple(graph.dataset(d).columns) for d in graph.datasets() if graph.dataset(d).view and d not in stored}
    views.update({d: columns for d, columns in found.views.items() if d not in stored})  # what the catalog keeps wins
    written = catalog_entries(found.tables, declared, formats, place_text, views, declared_tables(workspace))
    path = workspace.root / DISCOVERED_FILE
    if classification is not None:
        with_identifiers(written, classification.verdicts)
    elif path.is_file():
        previous = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        kept_identifiers(written, (previous.get("catalog") or {}) if isinstance(previous, dict) else {})
    path.write_text(written.to_yaml(DISCOVERED_HEADER), encoding="utf-8")
    return path, written


def _said_locations(workspace: Workspace, dataset: str, raw: Mapping[str, Any]) -> dict[str, Location]:
    """The locations a catalog entry set aside at load names: its own and its replicas'
    (``<dataset>@<name>``), so discovery names those tables after it."""
    said = {}
    try:
        if raw.get("location"):
            said[dataset] = Location.parse(str(raw["location"]), workspace.root)
        for replica in raw.get("replicas") or []:
            if isinstance(replica, dict) and replica.get("location") and replica.get("name"):
                said[f"{dataset}{REPLICA_SEPARATOR}{str(replica['name']).lower()}"] = Location.parse(str(replica["location"]),
                                                                                                     workspace.root)
    except LocationError as error:
        raise WorkspaceError(f"{workspace.root / 'piitracer.yaml'}: catalog.{dataset}: {error}") from None
    return said


@dataclass
class Classification:
    """``catalog classify``: a verdict per column of every discovered table, and per table what
    could not be read (named, never a value)."""

    verdicts: list[ColumnVerdict]
    problems: dict[str, str]
    discovery: Discovery | None = None  # the tables classified
    lineage_checked: bool = True  # False before the catalog has an identifier: no "PII without lineage" yet

    @property
    def without_lineage(self) -> list[ColumnVerdict]:
        """Columns that look like PII by their values and that no catalogued identifier reaches."""
        return [v for v in self.verdicts if v.pii_without_lineage]


def classify_catalog(workspace: Workspace, sample: int = 50, progress: Progress | None = None) -> Classification:
    """Classify every column of every discovered table (``catalog classify``;
    :mod:`piitracer.discover.classify`): by name, by sampled values validated with python-stdnum,
    phonenumbers and email-validator, and by lineage from the catalog's identifiers.

    Args:
        workspace: the loaded workspace.
        sample: rows sampled per table (0: names and lineage only).
        progress: told of each table sampled, then classified
            ([`Progress`][piitracer.model.progress.Progress]).

    Returns:
        A verdict per column, what could not be read per table (named, never a value), and the
            discovery the tables came from.
    """
    settings = workspace.config.classify
    options = ClassifyOptions(countries=tuple(settings.countries), phone_regions=tuple(settings.phone_regions),
                              min_values=settings.min_values)

    catalog = workspace.config.catalog
    name_of = discovered_name(workspace)
    graph = build_lineage_graph(workspace)
    seeds = [ColumnRef(dataset=d, column=c) for d, entry in catalog.items() for c in entry.identifiers]
    lineage = inherited(graph, seeds)
    keys = {ColumnRef(dataset=d, column=entry.subject_key) for d, entry in catalog.items() if entry.subject_key}
    # "PII without lineage" only once a person has confirmed identifiers: before, every column would be.
    reviewed = any(entry.identifiers and entry.classified_by.value != "auto" for entry in catalog.values())
    samples: dict[str, tuple[Any, Any]] = {}
    verdicts: list[ColumnVerdict] = []
    problems: dict[str, str] = {}
    discovery = discover_catalog(workspace)
    store = discovery_store(workspace, discovery.bindings)  # a catalog table's rows: through its catalog's pointer
    problems.update({root: f"cannot list it: {why}" for root, why in discovery.unreadable_roots.items()})
    problems.update({f"Iceberg catalog {name}": f"cannot list it: {why}"
                     for name, why in discovery.unreadable_iceberg_catalogs.items()})
    problems.update(discovery.unreadable_iceberg_tables)  # identifier -> why its catalog cannot load it
    for number, table in enumerate(discovery.tables):
        report(progress, "sampling tables", number, len(discovery.tables))
        dataset = name_of(table)
        if table.problems:
            problems[dataset] = "; ".join(table.problems)
            continue
        taken = None
        try:
            taken = sample_table(table, store, sample, options.min_values) if sample else None
        except (FormatError, OSError, ValueError) as error:
            problems[dataset] = f"cannot sample its rows: {type(error).__name__}"
        samples[dataset] = (table, taken)
    # A column holding a catalogued subject key's values is a foreign key to a person.
    key_values = {}
    for ref in sorted(keys, key=str):
        if samples.get(ref.dataset, (None, None))[1] is not None:
            try:
                key_values[f"{ref.dataset}.{ref.column}"] = read_key_values(samples[ref.dataset][0], store, ref.column)
            except (FormatError, OSError, ValueError) as error:
                problems[ref.dataset] = f"cannot read its subject key's values: {type(error).__name__}"
    report(progress, "sampling tables", len(discovery.tables), len(discovery.tables))
    for number, (dataset, (table, taken)) in enumerate(samples.items()):
        report(progress, "classifying columns", number, len(samples))
        entry = catalog.get(dataset)
        own = {k: v for k, v in key_values.items() if not k.startswith(f"{dataset}.")}
        verdicts += classify_columns(dataset, table.columns, taken.values if taken else None,
                                     entry.identifiers if entry else (), lineage, options,
                                     rows_sampled=taken.rows if taken else None, key_values=own,
                                     lineage_checked=reviewed, names_in_table=taken.names if taken else None)
    report(progress, "classifying columns", len(samples), len(samples))
    return Classification(verdicts, problems, discovery, lineage_checked=reviewed)
