"""Discovery through the Iceberg catalogs the workspace configures (``iceberg.catalogs``,
``.pyiceberg.yaml``, ``PYICEBERG_CATALOG__*``): every namespace and table each catalog lists
(pyiceberg's ``list_namespaces`` / ``list_tables``, nested namespaces too), each read from the
metadata file the catalog names — never from a listing of its folder — and named as the catalog
and SQL name it: the dataset ``namespace.table``, its table ``<catalog>.<namespace>.<table>``.

The roots guard holds as for the Spark catalogs' tables (``describe_catalog_tables``): a table the
catalog keeps outside every discovery root is listed with the reason and nothing of it is read;
a catalog whose current metadata file lies outside the table's location is not followed there.
A newer metadata file lying in the folder (another writer's uncommitted commit) is a warning,
never the table's state. A catalog that cannot be reached is reported with the reason, and the
others are still read; so is a table its catalog lists but cannot load (by its identifier: it has
no location piitracer could name). Spark's Hadoop-type catalog keeps no pointer of its own: its tables are
found by the walk of the roots, as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from piitracer.discover.lakehouse import DiscoveredTable
from piitracer.formats import FormatError
from piitracer.formats.iceberg_catalogs import TABLE_FORMAT, CatalogError, IcebergCatalogs, redacted
from piitracer.formats.iceberg_metadata import table_facts_of
from piitracer.formats.iceberg_table import catalog_metadata_file, newer_metadata_files, stray_note
from piitracer.storage.guard import canonical
from piitracer.storage.locations import Location, LocationError
from piitracer.storage.store import StorageError, Store


@dataclass
class CatalogDiscovery:
    """The tables the configured Iceberg catalogs list, the catalogs that could not be listed
    (catalog name -> why, no credential in it), and the tables a catalog lists but cannot load
    (``<catalog>.<namespace>.<table>`` -> why)."""

    tables: list[DiscoveredTable] = field(default_factory=list)
    unreadable: dict[str, str] = field(default_factory=dict)
    unloadable: dict[str, str] = field(default_factory=dict)

    def bindings(self) -> dict[Location, str]:
        """Location -> identifier of every table read through its catalog: what is read of it next
        (classification's samples) is read through the catalog too."""
        return {table.location: table.table for table in self.tables if table.table and not table.problems}


def discover_catalog_tables(catalogs: IcebergCatalogs, roots: Sequence[Location], store: Store,
                            progress: Callable[[str], None] | None = None) -> CatalogDiscovery:
    """Every table of every configured catalog that keeps its tables' pointers, as the catalog
    has it now (see the module's docstring); ``progress`` hears of each table as it is read."""
    found = CatalogDiscovery()
    say = progress or (lambda text: None)
    try:
        names = catalogs.names()
    except (CatalogError, ValueError) as error:  # a malformed .pyiceberg.yaml or PYICEBERG_* variable
        found.unreadable["pyiceberg configuration"] = str(error)
        return found
    for name in names:
        if not catalogs.owns(f"{name}.namespace.table"):
            continue  # Spark's Hadoop folder catalog: its folders are its state (the walk reads them)
        say(f"the Iceberg catalog {name}")
        try:
            listed = catalogs.list_tables(name)
        except CatalogError as error:
            found.unreadable[name] = str(error)
            continue
        for table_name in listed:
            say(f"{name}.{table_name}")
            try:
                found.tables.append(describe_catalog_table(catalogs, f"{name}.{table_name}", roots, store))
            except CatalogError as error:
                found.unloadable[f"{name}.{table_name}"] = str(error)
    found.tables.sort(key=lambda table: (table.location.uri, table.table or ""))
    return found


def describe_catalog_table(catalogs: IcebergCatalogs, identifier: str, roots: Sequence[Location],
                           store: Store) -> DiscoveredTable:
    """One catalog table: its location as the catalog says, checked against the roots before
    anything of it is read; then schema, refs, properties and retention read from the table the
    catalog returns (through the catalog's own file access); a stray newer metadata file is a
    warning. A problem once its location is known is the table's (listed with it), never the
    discovery's end; a table the catalog cannot load, or places nowhere piitracer can name, is a
    ``CatalogError`` with the reason (it has no location to list it at)."""
    name = identifier.split(".", 1)[0]

    def problem(text: str, location: Location) -> DiscoveredTable:
        return DiscoveredTable(location, TABLE_FORMAT, table=identifier, catalog=name, problems=(text,))

    table = catalogs.load_table(identifier)
    try:
        location = Location.parse(table.location())
    except (LocationError, ValueError) as error:
        raise CatalogError(f"the Iceberg catalog {name} gives it location {table.location()!r}: {error}") from None
    if not any(canonical(root).contains(canonical(location)) for root in roots):
        return problem(f"kept by the Iceberg catalog {name} outside the discovery roots: not read "
                       "(piitracer touches nothing there)", location)
    # The table's place is the catalog's answer: what piitracer reads there itself (the metadata
    # folder, for stray files) goes through that catalog's file access (its s3.endpoint and key),
    # also when the catalog names no warehouse that would say so (Glue).
    catalogs.bind({location: identifier})
    try:
        current = catalog_metadata_file(location, table.metadata_location)
        facts = table_facts_of(table)
    except FormatError as error:
        return problem(str(error), location)
    except Exception as error:  # noqa: BLE001 - pyiceberg raises many types for a missing or corrupt manifest
        return problem(f"cannot read its metadata: {type(error).__name__}: "
                       f"{catalogs.reason(name, error)}", location)
    try:
        warnings = tuple(stray_note(stray, current) for stray in newer_metadata_files(location, current, store))
    except StorageError as error:
        warnings = (f"its metadata folder could not be listed to look for stray metadata files: {error}",)
    return DiscoveredTable(
        location=location, format=TABLE_FORMAT, columns=facts.columns, table=identifier,
        write_mode=facts.write_mode, retention=dict(facts.retention), format_version=facts.format_version,
        refs=facts.refs, partition_columns=facts.partition_columns, features=facts.features,
        problems=facts.problems, data_folders=facts.data_folders, catalog=name,
        properties=redacted(dict(table.properties)), warnings=warnings)
