"""Shared wiring of the use cases: a workspace's file store, its datasets' locations, the
warehouse roots and protected places, the executor's context and what its journal holds of a plan,
the request store, and private files. Rooms: model, storage, ingest (the workspace), executor (its
context and journal), requests."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Collection, Mapping, Sequence

from piitracer.crypto.envelope import KeyWrapper, ValueCipher
from piitracer.executor.journal import Journal
from piitracer.formats.iceberg_catalogs import CatalogError, IcebergCatalogs, catalog_table
from piitracer.executor.runner import ExecutionContext
from piitracer.workspace.model import Workspace, WorkspaceError
from piitracer.model.steps import StepRecord
from piitracer.requests.store import RequestStore
from piitracer.model.workspace import CatalogDataset
from piitracer.shred.place import DELTA, SQLITE, VaultCopy, VaultPlace
from piitracer.storage.locations import Location, LocationError
from piitracer.storage.store import Store
from piitracer.workspace.layout import StateLayout


def workspace_store(workspace: Workspace) -> Store:
    """The files of a workspace's datasets, through its ``storage:`` settings, with the Iceberg
    catalogs that keep the current metadata of its catalog tables (``iceberg.catalogs`` and
    pyiceberg's own configuration; a table of Spark's Hadoop catalog is read from its folder)."""
    return Store(workspace.config.storage, pointers=iceberg_catalogs(workspace))


def iceberg_catalogs(workspace: Workspace, ask_catalogs: bool = True) -> IcebergCatalogs:
    """The workspace's Iceberg catalogs, each Iceberg dataset whose ``table:`` names a catalog other
    than Spark's Hadoop warehouse catalog (``spark.catalog``) bound to its catalogued location (one
    with no ``location:`` to the one its catalog gives, unless not ``ask_catalogs``)."""
    return IcebergCatalogs.of_catalog(workspace.config.iceberg, workspace.config.catalog,
                                      dataset_locations(workspace, ask_catalogs=ask_catalogs),
                                      hadoop_catalog=workspace.config.spark.catalog)


def dataset_locations(workspace: Workspace, datasets: Collection[str] | None = None,
                      ask_catalogs: bool = True) -> dict[str, Location]:
    """Every catalogued dataset's location (or only those of ``datasets``) as a :class:`Location`
    (relative paths under the workspace; ``s3://...`` and other URIs as they are). A location that
    is not a usable place is a workspace error naming the dataset. An Iceberg dataset with no
    ``location:`` whose ``table:`` is in a configured catalog is where that catalog keeps it
    (asked now, unless not ``ask_catalogs``; a catalog that cannot say is a workspace error)."""
    found = {}
    unplaced = {}
    catalog = workspace.config.catalog
    entries = catalog.items() if datasets is None else ((d, catalog[d]) for d in sorted(datasets) if d in catalog)
    for dataset, entry in entries:
        if entry.location is None:
            if ask_catalogs and catalog_table(entry, workspace.config.spark.catalog):
                unplaced[dataset] = entry.table
            continue
        try:
            found[dataset] = Location.parse(entry.location, workspace.root)
        except LocationError as error:
            raise WorkspaceError(f"{workspace.root / 'piitracer.yaml'}: catalog.{dataset}.location: {error}") from None
    if unplaced:
        found.update(catalog_table_locations(workspace, unplaced))
    return found


def catalog_table_locations(workspace: Workspace, tables: Mapping[str, str]) -> dict[str, Location]:
    """Dataset -> the location its Iceberg catalog keeps its table at (``tables``: dataset ->
    ``<catalog>.<namespace>.<table>``), for datasets the workspace gives no location; a table
    whose catalog is not configured is left out (the plan says it has no location)."""
    catalogs = IcebergCatalogs(workspace.config.iceberg)
    found = {}
    for dataset, identifier in sorted(tables.items()):
        if not catalogs.owns(identifier):
            continue
        try:
            found[dataset] = Location.parse(catalogs.table_location(identifier))
        except (CatalogError, LocationError) as error:
            raise WorkspaceError(f"{workspace.root / 'piitracer.yaml'}: catalog.{dataset}: no location: here, and its "
                                 f"table {identifier} cannot be placed by its catalog: {error}") from None
    return found


def warehouse_roots(workspace: Workspace) -> tuple[Location, ...]:
    """Every place piitracer may change lies inside one of these roots; never empty.

    The workspace's ``warehouse_roots`` when it sets them; otherwise the workspace folder and the
    Spark warehouse folder (the places ``catalog discover`` looks), derived from the workspace file
    alone, so they never widen without an edit to it. A catalog location anywhere else (``..``
    out of the workspace, a symlink to another folder, an object store) is refused before the
    first step until ``warehouse_roots`` names its root."""
    configured = tuple(Location.parse(root, workspace.root) for root in workspace.config.warehouse_roots)
    if configured:
        return configured
    return tuple(dict.fromkeys((Location.parse(workspace.root), Location.parse(workspace.resolve(workspace.config.spark.warehouse)))))


def protected_places(workspace: Workspace) -> tuple[Location, ...]:
    """piitracer's own files in a workspace (its state folder and workspace files): no dataset's
    location may hold them, or an orphan removal or a rewrite there would destroy the audit log,
    the journal or the request store."""
    return tuple(Location.parse(path) for path in StateLayout(workspace.root).protected())


def write_private(path: str | os.PathLike[str], text: str) -> None:
    """Write a file only its owner can read (mode 0600): plans and journals hold subject values."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # also when the file existed with a wider mode
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def vault_place(workspace: Workspace, locations: Mapping[str, Location] | None = None) -> VaultPlace | None:
    """The workspace's key vault (``shred.vault``): a Delta dataset of the catalog at its location,
    or a SQLite file (relative to the workspace); None when the workspace has none."""
    shred = workspace.config.shred
    if shred is None:
        return None
    catalog = workspace.config.catalog
    dataset = shred.dataset(catalog)
    if dataset is None:
        return VaultPlace(SQLITE, Location.parse(workspace.resolve(shred.vault)))
    copies = {d: how for d, entry in catalog.items() if (how := copy_relation(entry, dataset))}
    found = locations if locations is not None else dataset_locations(workspace, [dataset, *copies])
    if dataset not in found:
        return None
    return VaultPlace(DELTA, found[dataset], dataset, tuple(
        VaultCopy(d, catalog[d].format.value, found.get(d), how) for d, how in sorted(copies.items())))


def copy_relation(entry: CatalogDataset, dataset: str) -> str | None:
    """How a catalog entry copies ``dataset``: ``replica``, ``clone`` or ``archive``; None when it does not."""
    for how, relation in (("replica", entry.replica_of), ("clone", entry.clone_of), ("archive", entry.archive_of)):
        if relation is not None and relation.dataset == dataset:
            return how
    return None


def execution_context(workspace: Workspace, attested: Sequence[str] = (), cipher: ValueCipher | None = None,
                      master: KeyWrapper | None = None) -> ExecutionContext:
    """Where the executor finds tables, Spark settings and its journal, for one workspace
    (``attested``: ids of person steps their owners attested; ``cipher``: seals the values the
    journal keeps under each request's data key; ``master``: the master key, for crypto-shredding's
    key destruction in the workspace's vault)."""
    locations = dataset_locations(workspace)
    return ExecutionContext(
        catalog=workspace.config.catalog,
        locations=locations,
        spark=workspace.config.spark,
        warehouse=workspace.resolve(workspace.config.spark.warehouse),
        journal_path=StateLayout(workspace.root).journal,
        warehouse_roots=warehouse_roots(workspace),
        roots_configured=bool(workspace.config.warehouse_roots),
        protected=protected_places(workspace),
        attested=frozenset(attested),
        store=workspace_store(workspace),
        rewrite=workspace.config.rewrite,
        cipher=cipher,
        vault=vault_place(workspace, locations),
        master=master,
    )


def audit_log_path(workspace: Workspace) -> Path:
    """``<workspace>/.piitracer/audit.sqlite``."""
    return StateLayout(workspace.root).audit_log


def request_store_path(workspace: Workspace) -> Path:
    """``<workspace>/.piitracer/requests.sqlite``."""
    return StateLayout(workspace.root).request_store


def request_store(workspace: Workspace, master: KeyWrapper | None = None):
    """The workspace's request store (created on first use). ``master`` (the master key, or a KMS
    wrapper) is needed to add requests and to read or seal their values."""
    return RequestStore(request_store_path(workspace), master)


def journal_steps(workspace: Workspace, plan_id: str) -> list[StepRecord]:
    """Every journaled step of a plan (empty when it never ran): what :func:`record_run` records
    when a run stopped with an error instead of returning its summary."""
    path = execution_context(workspace).journal_path
    if not path.exists():
        return []
    with Journal(path) as journal:
        return journal.records(plan_id)
