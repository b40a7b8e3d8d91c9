"""One lakehouse per session (issue 51): a workspace's places, resolved once and handed to every use
case — each dataset's location (a table its Iceberg catalog places is asked for once), the Iceberg
catalogs (each table loaded once, :class:`~piitracer.formats.iceberg_catalogs.IcebergCatalogs`), the
store that reaches the files through them, the warehouse roots, piitracer's protected places and
the key vault. A use case that is given none makes its own (a notebook's call); the session makes
one and gives it to all of its use cases, so one command asks each catalog once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Collection

from piitracer.formats.iceberg_catalogs import CatalogError, IcebergCatalogs, catalog_table
from piitracer.model.workspace import CatalogDataset
from piitracer.shred.place import DELTA, SQLITE, VaultCopy, VaultPlace
from piitracer.storage.locations import Location, LocationError
from piitracer.storage.store import Store
from piitracer.workspace.layout import StateLayout
from piitracer.workspace.model import WORKSPACE_FILE, Workspace, WorkspaceError

_UNSET: Any = object()


class Lakehouse:
    """The places of one workspace's lakehouse, each resolved when first asked for and kept (module
    docstring). Not shared between threads (a server opens a session per request)."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self._locations: dict[str, Location | None] = {}
        self._all = False
        self._catalogs: IcebergCatalogs | None = None
        self._store: Store | None = None
        self._roots: tuple[Location, ...] | None = None
        self._protected: tuple[Location, ...] | None = None
        self._vault: Any = _UNSET

    def fresh(self) -> "Lakehouse":
        """This lakehouse with its tables to be loaded again (the catalogs stay open, the places
        stay resolved): each use case reads every table as its catalog gives it when the use case
        starts, then keeps it (a table committed to meanwhile by another engine is forgotten by
        the step that committed, :meth:`~piitracer.storage.store.Store.committed`)."""
        if self._catalogs is not None:
            self._catalogs.forget_tables()
        if self._store is not None:  # a long-lived session would keep every table's every metadata file read
            self._store.forget_written("iceberg metadata")
        return self

    # ---- datasets' places ---------------------------------------------------------------------

    @property
    def catalogs(self) -> IcebergCatalogs:
        """The workspace's Iceberg catalogs, each catalogued location of one of their tables bound
        to it (a table with no ``location:`` is bound once its catalog has placed it)."""
        if self._catalogs is None:
            config = self.workspace.config
            catalogs = IcebergCatalogs(config.iceberg)
            bindings = {}
            for dataset, entry in config.catalog.items():
                if entry.location is not None and catalog_table(entry, config.spark.catalog):
                    bindings[self._parsed(dataset, entry)] = entry.table
            catalogs.bind(bindings)
            self._catalogs = catalogs
        return self._catalogs

    def location(self, dataset: str) -> Location | None:
        """One catalogued dataset's location (None: none, or a catalog that keeps no such table)."""
        return self.locations_of([dataset]).get(dataset)

    def locations_of(self, datasets: Collection[str]) -> dict[str, Location]:
        """The locations of ``datasets`` (those that have one), each resolved once: a relative path
        under the workspace, a URI as it is, an Iceberg table with no ``location:`` where its catalog
        keeps it (asked once: the table loaded then is the one every later read uses).

        Raises:
            WorkspaceError: a location that is not a usable place, or a table its catalog cannot place.
        """
        config = self.workspace.config
        for dataset in sorted(set(datasets)):
            if dataset in self._locations or dataset not in config.catalog:
                continue
            entry = config.catalog[dataset]
            if entry.location is not None:
                self._locations[dataset] = self._parsed(dataset, entry)
                continue
            self._locations[dataset] = None
            identifier = catalog_table(entry, config.spark.catalog)
            if identifier and self.catalogs.owns(identifier):
                try:
                    place = Location.parse(self.catalogs.table_location(identifier))
                except (CatalogError, LocationError) as error:
                    raise WorkspaceError(f"{self.workspace.root / WORKSPACE_FILE}: catalog.{dataset}: no location: here, "
                                         f"and its table {identifier} cannot be placed by its catalog: {error}") from None
                self._locations[dataset] = place
                self.catalogs.bind({place: identifier})
        return {d: self._locations[d] for d in sorted(set(datasets)) if self._locations.get(d) is not None}

    @property
    def locations(self) -> dict[str, Location]:
        """Every catalogued dataset's location."""
        if not self._all:
            self.locations_of(self.workspace.config.catalog)
            self._all = True
        return {d: place for d, place in sorted(self._locations.items()) if place is not None}

    def placed(self) -> dict[str, Location]:
        """Every dataset's location the workspace gives itself, no catalog asked (discovery's view:
        it lists the catalogs itself)."""
        return {d: self._parsed(d, e) for d, e in sorted(self.workspace.config.catalog.items()) if e.location is not None}

    def _parsed(self, dataset: str, entry: CatalogDataset) -> Location:
        try:
            return Location.parse(entry.location, self.workspace.root)
        except LocationError as error:
            raise WorkspaceError(f"{self.workspace.root / WORKSPACE_FILE}: catalog.{dataset}.location: {error}") from None

    # ---- the files ----------------------------------------------------------------------------

    @property
    def store(self) -> Store:
        """The files of the workspace's datasets, through its ``storage:`` settings, with the
        Iceberg catalogs that keep the current metadata of its catalog tables."""
        if self._store is None:
            self.locations  # every catalog table bound before the store reads through the catalogs  # noqa: B018
            self._store = Store(self.workspace.config.storage, pointers=self.catalogs)
        return self._store

    @property
    def roots(self) -> tuple[Location, ...]:
        """Every place piitracer may change lies inside one of these; never empty (the workspace's
        ``warehouse_roots``, else the workspace folder and the Spark warehouse folder)."""
        if self._roots is None:
            workspace = self.workspace
            configured = tuple(Location.parse(root, workspace.root) for root in workspace.config.warehouse_roots)
            self._roots = configured or tuple(dict.fromkeys((
                Location.parse(workspace.root), Location.parse(workspace.resolve(workspace.config.spark.warehouse)))))
        return self._roots

    @property
    def roots_configured(self) -> bool:
        """Whether ``warehouse_roots`` names the roots (False: the defaults)."""
        return bool(self.workspace.config.warehouse_roots)

    @property
    def protected(self) -> tuple[Location, ...]:
        """piitracer's own files in the workspace, which no dataset's location may hold."""
        if self._protected is None:
            self._protected = tuple(Location.parse(path) for path in StateLayout(self.workspace.root).protected())
        return self._protected

    @property
    def vault(self) -> VaultPlace | None:
        """The key vault (``shred.vault``), with its catalogued copies; None when there is none."""
        if self._vault is _UNSET:
            self._vault = self._vault_place()
        return self._vault

    def _vault_place(self) -> VaultPlace | None:
        shred = self.workspace.config.shred
        if shred is None:
            return None
        catalog = self.workspace.config.catalog
        dataset = shred.dataset(catalog)
        if dataset is None:
            return VaultPlace(SQLITE, Location.parse(self.workspace.resolve(shred.vault)))
        copies = {d: how for d, entry in catalog.items() if (how := copy_relation(entry, dataset))}
        found = self.locations_of([dataset, *copies])
        if dataset not in found:
            return None
        return VaultPlace(DELTA, found[dataset], dataset, tuple(
            VaultCopy(d, catalog[d].format.value, found.get(d), how) for d, how in sorted(copies.items())))

    @property
    def journal_path(self) -> Path:
        """``<workspace>/.piitracer/journal.sqlite``."""
        return StateLayout(self.workspace.root).journal

    def context(self, attested: Collection[str] = (), cipher: Any = None, master: Any = None):
        """The executor's context on this lakehouse (``attested``: person steps attested;
        ``cipher``: seals the journal's values; ``master``: for a key destruction)."""
        from piitracer.executor.runner import ExecutionContext

        workspace = self.workspace
        return ExecutionContext(
            catalog=workspace.config.catalog, locations=self.locations, spark=workspace.config.spark,
            warehouse=workspace.resolve(workspace.config.spark.warehouse), journal_path=self.journal_path,
            warehouse_roots=self.roots, roots_configured=self.roots_configured, protected=self.protected,
            attested=frozenset(attested), store=self.store, rewrite=workspace.config.rewrite, cipher=cipher,
            vault=self.vault, master=master)


def copy_relation(entry: CatalogDataset, dataset: str) -> str | None:
    """How a catalog entry copies ``dataset``: ``replica``, ``clone`` or ``archive``; None when it does not."""
    for how, relation in (("replica", entry.replica_of), ("clone", entry.clone_of), ("archive", entry.archive_of)):
        if relation is not None and relation.dataset == dataset:
            return how
    return None


def lakehouse_of(workspace: Workspace, lakehouse: Lakehouse | None = None) -> Lakehouse:
    """``lakehouse`` when a session gives one (it is the workspace's), else a new one."""
    if lakehouse is not None and lakehouse.workspace is workspace:
        return lakehouse
    return Lakehouse(workspace)

