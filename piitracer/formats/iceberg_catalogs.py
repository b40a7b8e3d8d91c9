"""The Iceberg catalogs a workspace's tables live in, configured the way pyiceberg users configure
them: the workspace's ``iceberg.catalogs`` (no credentials), then pyiceberg's own configuration over
it (``.pyiceberg.yaml`` in ``$PYICEBERG_HOME``, the home folder or the current folder, then the
``PYICEBERG_CATALOG__<NAME>__<PROP>`` environment), read when a catalog is first used.

A catalog keeps each table's *pointer*: the metadata file that is the table's current state. For a
table in a configured catalog, that pointer — never a listing of the table's folder — is what plan,
execute and verify read (:meth:`IcebergCatalogs.current_metadata`, the store's
:class:`~piitracer.storage.store.MetadataPointers`). Spark's Hadoop catalog (``spark.catalog``, a
warehouse folder) keeps its pointer in the folder itself (``version-hint.text``), so its tables are
still read from the folder.

A catalog also says how its tables' files are reached: its FileIO properties (``s3.endpoint``,
``s3.access-key-id``, ...), which pyiceberg uses for the catalog's own reads and piitracer's store
uses for its own file access to every place the catalog keeps
(:meth:`IcebergCatalogs.storage_properties`, the store's
:meth:`~piitracer.storage.store.MetadataPointers.storage_properties`).

Credentials never pass through here into anything piitracer writes: properties are handed to
pyiceberg and to the store's filesystems only; :func:`redacted` is what may be shown.
"""

from __future__ import annotations

import re
import threading
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping

from piitracer.formats import FormatError
from piitracer.model.settings import CATALOG_SECRET_WORDS, IcebergSettings
from piitracer.model.workspace import CatalogDataset, DatasetFormat
from piitracer.storage.fileio import fileio_properties
from piitracer.storage.guard import canonical
from piitracer.storage.locations import Location, LocationError

if TYPE_CHECKING:  # pyiceberg is imported only when a catalog is used
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table


TABLE_FORMAT = DatasetFormat.ICEBERG  # what these catalogs keep


class CatalogError(FormatError):
    """A catalog that cannot be loaded or asked (unknown name, unreachable server, no such table);
    the message names the catalog and the table, never a credential."""


# The password of a URI (``postgresql://user:password@host/db``): shown as ``***``.
_URI_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/:@\s]*:)(?P<password>[^@/\s]+)(?=@)")


def _is_secret(key: str) -> bool:
    return any(word in key.upper().replace("-", "_").replace(".", "_") for word in CATALOG_SECRET_WORDS)


def redacted(properties: Mapping[str, str]) -> dict[str, str]:
    """Catalog properties as they may be shown or logged: credentials, and the password of a URI
    (``uri: postgresql://user:***@host/db``), replaced by ``***``."""
    return {key: "***" if _is_secret(key) else _URI_PASSWORD.sub(r"\g<head>***", str(value))
            for key, value in sorted(properties.items())}


def scrubbed(text: str, properties: Mapping[str, str]) -> str:
    """``text`` (a library's error message) with every credential of ``properties`` and every
    URI password in it replaced by ``***``: pyiceberg, SQLAlchemy and the HTTP clients put the
    properties or the connection URI they were given into their messages."""
    secrets = {str(value) for key, value in properties.items() if _is_secret(key) and value}
    secrets |= {match.group("password") for value in properties.values() for match in _URI_PASSWORD.finditer(str(value))}
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= 3:  # a one- or two-letter "secret" would blot out the message, not hide anything
            text = text.replace(secret, "***")
    return _URI_PASSWORD.sub(r"\g<head>***", text)


def pyiceberg_configuration() -> dict[str, dict[str, Any]]:
    """Catalog name -> properties from pyiceberg's own configuration (``.pyiceberg.yaml``, then
    ``PYICEBERG_CATALOG__*``), read now (pyiceberg's module-level copy is read once at import)."""
    from pyiceberg.utils.config import Config

    try:
        config = Config()
        return {name: dict(config.get_catalog_config(name) or {}) for name in config.get_known_catalogs()}
    except Exception as error:  # strictyaml's and pyiceberg's own; their text quotes the file, keys included
        mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise CatalogError(f"pyiceberg's configuration (.pyiceberg.yaml, PYICEBERG_CATALOG__*) cannot be read{where}: "
                           f"{type(error).__name__} (its text is not shown: it may quote a credential)") from None


class IcebergCatalogs:
    """The configured catalogs (workspace definitions under pyiceberg's configuration), each loaded
    once on first use, and which catalogued table location each table of theirs is bound to.

    ``bindings`` maps a table's catalogued location to its identifier ``<catalog>.<namespace>.<table>``:
    asked what the current metadata of a location is, the catalog of its binding answers.

    Each table is loaded from its catalog once per instance (a session's command: on a Glue or REST
    catalog every load is a round trip) and the same pyiceberg table object is handed out after:
    piitracer's own pyiceberg commits go through it, so it follows them (pyiceberg updates it in
    place, and an eraser refreshes it after its commit and before it removes files). A commit made
    elsewhere — by Spark for a step on the Spark engine — is followed by :meth:`forget`."""

    def __init__(self, settings: IcebergSettings | None = None, bindings: Mapping[Location, str] | None = None) -> None:
        self.settings = settings or IcebergSettings()
        self._bindings = {canonical(location): identifier for location, identifier in (bindings or {}).items()}
        self._loaded: dict[str, Catalog] = {}
        self._definitions: dict[str, dict[str, str]] | None = None
        self._places: _Places | None = None
        self._resolved: dict[str, Mapping[str, str]] = {}  # a place (or "<folder>/*") -> its storage properties
        self._tables: dict[str, Table] = {}  # identifier (lower case) -> the table as loaded, kept (class docstring)
        self.loads = 0  # tables loaded from a catalog by this instance (a benchmark and a test read it)
        self._lock = threading.Lock()

    @classmethod
    def of_catalog(cls, settings: IcebergSettings, entries: Mapping[str, CatalogDataset],
                   locations: Mapping[str, Location], hadoop_catalog: str) -> "IcebergCatalogs":
        """The catalogs of ``settings``, each Iceberg dataset of ``entries`` whose ``table:`` names a
        catalog other than Spark's Hadoop warehouse catalog (``hadoop_catalog``: read from its
        folder) bound to its location of ``locations``."""
        bindings = {}
        for dataset, location in locations.items():
            entry = entries.get(dataset)
            if entry is not None and catalog_table(entry, hadoop_catalog):
                bindings[location] = entry.table
        return cls(settings, bindings)

    def __getstate__(self) -> dict:
        # Sent to a Spark task inside a Store: loaded catalogs (connections, credentials) stay here.
        # pyiceberg's own configuration (credentials among it) is read again where the task runs.
        return {"settings": self.settings, "_bindings": self._bindings, "_loaded": {}, "_definitions": None,
                "_places": None, "_resolved": {}, "_tables": {}, "loads": 0, "_lock": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # ---- configuration --------------------------------------------------------------------------

    def definitions(self) -> dict[str, dict[str, str]]:
        """Catalog name -> its merged properties (workspace, then pyiceberg's configuration), read
        once per instance."""
        if self._definitions is None:
            merged = {name: dict(properties) for name, properties in self.settings.catalogs.items()}
            for name, properties in pyiceberg_configuration().items():
                merged.setdefault(name, {}).update({key: str(value) for key, value in properties.items()})
            self._definitions = merged
        return self._definitions

    def names(self) -> list[str]:
        """Every configured catalog's name, sorted."""
        return sorted(self.definitions())

    def properties(self, name: str) -> dict[str, str]:
        """One catalog's merged properties (credentials included: never show them; see :func:`redacted`)."""
        definitions = self.definitions()
        if name.lower() not in definitions:
            raise CatalogError(f"Iceberg catalog {name!r} is not configured (configured: {', '.join(sorted(definitions)) or 'none'}; "
                               "add it under iceberg.catalogs in piitracer.yaml or as PYICEBERG_CATALOG__<NAME>__*)")
        return definitions[name.lower()]

    def owns(self, identifier: str | None) -> bool:
        """Whether a table identifier ``<catalog>.<namespace>.<table>`` names a configured catalog
        that keeps its own pointer (every type but Spark's Hadoop folder catalog)."""
        if not identifier or identifier.count(".") < 2:
            return False
        name = identifier.split(".", 1)[0].lower()
        definitions = self.definitions()
        return name in definitions and definitions[name].get("type", "rest").lower() != "hadoop"

    # ---- the catalogs themselves ------------------------------------------------------------------

    def catalog(self, name: str) -> "Catalog":
        """The pyiceberg catalog ``name``, loaded on first use."""
        key = name.lower()
        with self._lock:
            if key not in self._loaded:
                properties = self.properties(key)
                from pyiceberg.catalog import load_catalog

                try:
                    self._loaded[key] = load_catalog(key, **properties)
                except Exception as error:  # pyiceberg raises many types for a bad or unreachable catalog
                    raise CatalogError(f"Iceberg catalog {key!r} ({redacted(properties)}): cannot load it: "
                                       f"{type(error).__name__}: {self.reason(key, error)}") from None
            return self._loaded[key]

    def load_table(self, identifier: str) -> "Table":
        """The table ``<catalog>.<namespace>.<table>``: loaded from its catalog the first time it is
        asked for (or after :meth:`forget`), the same object after (class docstring)."""
        key = identifier.lower()
        kept = self._tables.get(key)
        if kept is not None:
            return kept
        name, table = split_identifier(identifier)
        try:
            loaded = self.catalog(name).load_table(table)
        except CatalogError:
            raise
        except Exception as error:
            raise CatalogError(f"Iceberg catalog {name!r}: cannot load table {table}: "
                               f"{type(error).__name__}: {self.reason(name, error)}") from None
        self.loads += 1
        self._tables[key] = loaded
        return loaded

    def forget(self, location: Location) -> None:
        """Forget the loaded table bound to ``location`` (something other than this instance's
        table object committed to it: Spark): the next ask loads it again from its catalog."""
        identifier = self.identifier_at(location)
        if identifier is not None:
            self._tables.pop(identifier.lower(), None)

    def forget_tables(self) -> None:
        """Forget every loaded table (the catalogs stay open): a new use case reads each table's
        state as its catalog gives it now, not as an earlier one saw it."""
        self._tables.clear()

    def list_tables(self, name: str) -> list[str]:
        """Every table of catalog ``name`` as ``<namespace>.<table>`` (nested namespaces
        ``a.b.table`` too), sorted: ``list_namespaces`` from the top, each namespace's own
        namespaces and tables (pyiceberg's ``list_namespaces`` / ``list_tables``)."""
        catalog = self.catalog(name)
        found: set[str] = set()
        pending: list[tuple[str, ...]] = [()]
        seen: set[tuple[str, ...]] = set()
        from pyiceberg.exceptions import NoSuchNamespaceError

        while pending:
            namespace = pending.pop()
            try:
                try:
                    children = [tuple(child) for child in catalog.list_namespaces(namespace)]
                except NoSuchNamespaceError:  # a catalog of one level (BigQuery) refuses to look inside one
                    if not namespace:
                        raise
                    children = []
                if namespace:
                    found.update(".".join(table) for table in catalog.list_tables(namespace))
            except Exception as error:  # an unreachable server, a namespace gone meanwhile: the catalog's reason
                where = f" namespace {'.'.join(namespace)}" if namespace else ""
                raise CatalogError(f"Iceberg catalog {name!r}: cannot list{where}: {type(error).__name__}: "
                                   f"{self.reason(name, error)}") from None
            for child in children:
                if child not in seen and len(child) > len(namespace):  # a catalog listing itself again ends here
                    seen.add(child)
                    pending.append(child)
        return sorted(found)

    def table_location(self, identifier: str) -> str:
        """The location the catalog keeps the table ``<catalog>.<namespace>.<table>`` at."""
        return self.load_table(identifier).location()

    def reason(self, name: str, error: Exception) -> str:
        """An error's first line, with no credential of catalog ``name`` in it."""
        return scrubbed(_first_line(error), self.definitions().get(name.lower(), {}))

    def bind(self, bindings: Mapping[Location, str]) -> None:
        """Bind more catalogued locations to their tables' identifiers (discovery binds the
        tables it listed, so what it reads next of them is read through their catalog)."""
        self._bindings.update({canonical(location): identifier for location, identifier in bindings.items()})
        self._places = None

    def identifier_at(self, location: Location) -> str | None:
        """The identifier of the catalog table bound to ``location``, if any."""
        return self._bindings.get(canonical(location))

    def current_metadata(self, location: Location) -> str | None:
        """The metadata file the catalog names as the current state of the table bound to
        ``location`` (None when no configured catalog keeps this table)."""
        identifier = self.identifier_at(location)
        if identifier is None or not self.owns(identifier):
            return None
        table = self.load_table(identifier)
        kept = Location.parse(table.location())
        if canonical(kept) != canonical(location):
            raise CatalogError(f"Iceberg table {identifier}: its catalog keeps it at {kept}, the workspace catalogues it at "
                               f"{location}: refusing to read or change either (make the dataset's location the catalog's)")
        return table.metadata_location

    # ---- how a place's files are reached ----------------------------------------------------------

    def storage_properties(self, location: Location) -> Mapping[str, str]:
        """The FileIO properties (``s3.*``, ``client.*``; credentials included: never show them) of
        the catalog that keeps ``location``: the catalog of the bound table whose location holds it
        (the deepest), else the catalog whose ``warehouse`` holds it (the deepest), else the catalog
        whose tables and warehouse are all that lies below it (a bucket root above its warehouse).
        Empty when no catalog keeps it, or when several do and their properties differ (the
        workspace's ``storage:`` block and ``AWS_*`` then say). Read from the configuration only:
        no catalog is loaded or asked."""
        if location.is_local:
            return MappingProxyType({})
        definitions = self.definitions()
        if self._places is None:
            self._places, self._resolved = _Places.of(self._bindings, definitions), {}
        place = canonical(location).uri
        # Asked once per file (the byte scan of 100k files): a file that is no table or warehouse
        # itself is kept by whoever keeps its folder's other such files, so that answer is kept.
        key = place if place in self._places.above else place.rsplit("/", 1)[0] + "/*"
        found = self._resolved.get(key)
        if found is None:
            names = self._places.keepers(place)
            kinds = {tuple(sorted(fileio_properties(definitions[name]).items())) for name in names if name in definitions}
            found = MappingProxyType(dict(kinds.pop()) if len(kinds) == 1 else {})  # shared: read-only
            if len(self._resolved) > 100_000:
                self._resolved.clear()
            self._resolved[key] = found
        return found


class _Places:
    """Where each catalog keeps things, for finding the catalog of a place by its path: each bound
    table's location and each catalog's warehouse (a URI), and every place above one of them."""

    def __init__(self, tables: dict[str, str], warehouses: dict[str, set[str]], above: dict[str, set[str]]) -> None:
        self.tables, self.warehouses, self.above = tables, warehouses, above

    @classmethod
    def of(cls, bindings: Mapping[Location, str], definitions: Mapping[str, Mapping[str, str]]) -> "_Places":
        tables = {location.uri: identifier.split(".", 1)[0].lower() for location, identifier in bindings.items()
                  if not location.is_local}
        warehouses: dict[str, set[str]] = {}
        for name, properties in definitions.items():
            warehouse = str(properties.get("warehouse", ""))
            if "://" not in warehouse or warehouse.startswith("file:"):  # a REST catalog's warehouse is a name
                continue
            try:
                warehouses.setdefault(canonical(Location.parse(warehouse)).uri, set()).add(name)
            except LocationError:
                continue
        above: dict[str, set[str]] = {}
        for uri, names in [*((uri, {name}) for uri, name in tables.items()), *warehouses.items()]:
            for ancestor in _ancestors(uri):
                above.setdefault(ancestor, set()).update(names)
        return cls(tables, warehouses, above)

    def keepers(self, uri: str) -> set[str]:
        """The names of the catalogs that keep the place ``uri`` (canonical, not local)."""
        ancestors = _ancestors(uri)
        for ancestor in ancestors:
            if ancestor in self.tables:
                return {self.tables[ancestor]}
        for ancestor in ancestors:
            if ancestor in self.warehouses:
                return set(self.warehouses[ancestor])
        return set(self.above.get(uri, ()))


def _ancestors(uri: str) -> list[str]:
    """``s3://b/a/t`` -> [``s3://b/a/t``, ``s3://b/a``, ``s3://b``] (the place itself first)."""
    found = [uri]
    top = uri.find("://") + 3
    cut = uri.rfind("/")
    while cut > top:
        found.append(uri[:cut])
        cut = uri.rfind("/", 0, cut)
    return found


def catalog_table(entry: CatalogDataset, hadoop_catalog: str) -> str | None:
    """The identifier of an Iceberg dataset whose ``table:`` names a catalog other than Spark's
    Hadoop warehouse catalog (``hadoop_catalog``, read from its folder), else None."""
    table = entry.table
    if entry.format is not TABLE_FORMAT or not table or table.count(".") < 2 \
            or table.split(".", 1)[0].lower() == hadoop_catalog.lower():
        return None
    return table


def split_identifier(identifier: str) -> tuple[str, str]:
    """``prod.fintech.payments`` -> (``prod``, ``fintech.payments``)."""
    name, _, table = identifier.partition(".")
    if not table or "." not in table:
        raise CatalogError(f"Iceberg table {identifier!r}: expected <catalog>.<namespace>.<table>")
    return name.lower(), table


def _first_line(error: Exception) -> str:
    return (str(error).strip().splitlines() or [""])[0][:300]
