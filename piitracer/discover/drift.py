"""Where the workspace's catalog and the lakehouse disagree (``piitracer catalog check``).

Entries are paired by location (canonical: symlinks resolved), not by name — except an entry whose
``table:`` names a configured Iceberg catalog that keeps its tables' pointers: it is paired with the
table its catalog lists under that identifier, and compared with the catalog's facts (the schema,
write mode and properties of the metadata file the catalog names), never with whatever a walk finds
in the entry's folder. Its catalog keeping it elsewhere is drift of ``location`` (both named); its
catalog no longer listing it (dropped, renamed) or unable to load it is drift of ``table``. For each
pair:

- **drift** (exit 1): the format differs (an ``archive`` is a plain Parquet folder to the
  lakehouse: ``FormatSupport.stored_as``); a catalogued column no longer exists; the table has a column the catalog does not
  list; the Iceberg write mode differs; a retention the table's own properties set differs from
  the catalog's. A catalogued location with no table is a table that disappeared; a table under the
  roots that no entry names is a new table not in the catalog.
- **override** (reported, exit 0): the catalog sets a retention the table's properties do not —
  the catalog's value is what planning uses, and it is said so; and ``piitracer.yaml`` sets a
  write mode or retention on purpose over what ``catalog.discovered.yaml`` recorded of the table
  (``overrides``). A listed column that no longer exists is drift whoever listed it.

``maintenance_every``, owners, identifiers and everything else only a person knows are not compared.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from piitracer.discover.lakehouse import DiscoveredTable
from piitracer.formats import support_for
from piitracer.model.workspace import CatalogDataset, setting_text
from piitracer.storage.guard import canonical
from piitracer.storage.locations import Location

RETENTION_FIELDS = ("snapshot_max_age", "min_snapshots_to_keep", "deleted_file_retention", "log_retention")


@dataclass(frozen=True)
class Difference:
    """One disagreement: the dataset (or the new table's location), the field, both sides' words."""

    dataset: str
    field: str
    catalog: str
    lakehouse: str
    drift: bool = True  # False: an override the catalog makes on purpose (reported only)


def compare(catalog: Mapping[str, CatalogDataset], locations: Mapping[str, Location],
            tables: Sequence[DiscoveredTable], overrides: Mapping[str, frozenset[str]] | None = None,
            catalog_tables: Mapping[str, str] | None = None, unlisted: Mapping[str, str] | None = None) -> list[Difference]:
    """Every difference between the catalog's entries (those with a location, or kept by an
    Iceberg catalog) and ``tables``; ``overrides``: per dataset, the fields the person set over the
    discovered layer; ``catalog_tables``: dataset -> ``<catalog>.<namespace>.<table>`` of each entry
    a configured Iceberg catalog keeps (paired by that identifier); ``unlisted``: why a catalog
    (by name) or a table (by identifier) could not be read through its catalog."""
    by_place = {canonical(table.location).uri: table for table in tables}
    by_identifier = {table.table.lower(): table for table in tables if table.catalog and table.table}
    claimed: set[str] = set()
    found: list[Difference] = []
    for dataset, entry in sorted(catalog.items()):
        location = locations.get(dataset)
        identifier = (catalog_tables or {}).get(dataset)
        if not entry.format.stores_rows or (location is None and identifier is None):
            continue
        if location is not None:
            claimed.add(canonical(location).uri)  # a folder there is this entry's, whatever else it says
        if identifier is not None:
            table = by_identifier.get(identifier.lower())
            if table is None:
                found.append(_not_listed(dataset, identifier, location, by_place, unlisted or {}))
                continue
            claimed.add(canonical(table.location).uri)
            if location is not None and canonical(location) != canonical(table.location):
                name = identifier.split(".", 1)[0]
                found.append(Difference(dataset, "location", str(location),
                                        f"{table.location} (where the Iceberg catalog {name} keeps {identifier})"))
        else:
            place = canonical(location).uri
            table = by_place.get(place)
            if table is None:
                found.append(Difference(dataset, "location", str(location), "no table there (disappeared?)"))
                continue
        chosen = (overrides or {}).get(dataset, frozenset())
        found += [replace(d, drift=False) if d.field in chosen and _overridable(d.field) else d
                  for d in _entry_differences(dataset, entry, table)]
    for place, table in sorted(by_place.items()):
        if place not in claimed:
            found.append(Difference(table.name, "catalog", "not in the catalog",
                                    f"new {table.format.value} table at {table.location}"))
    return found


def _not_listed(dataset: str, identifier: str, location: Location | None, by_place: Mapping[str, DiscoveredTable],
                unlisted: Mapping[str, str]) -> Difference:
    """The drift of an entry whose Iceberg catalog lists no table by its identifier: why the
    catalog could not say, else that it no longer has it (and what its folder still holds)."""
    name = identifier.split(".", 1)[0].lower()
    why = unlisted.get(identifier.lower()) or unlisted.get(identifier) or unlisted.get(name)
    if why:
        return Difference(dataset, "table", identifier, f"cannot be read through its Iceberg catalog: {why}")
    left = by_place.get(canonical(location).uri) if location is not None else None
    files = f"; {left.format.value} files are still at {location}" if left is not None else ""
    return Difference(dataset, "table", identifier, f"not in the Iceberg catalog {name} (dropped or renamed?){files}")


def _entry_differences(dataset: str, entry: CatalogDataset, table: DiscoveredTable) -> list[Difference]:
    found = []
    stored_as = support_for(entry.format).stored_as or entry.format
    if stored_as is not table.format:
        return [Difference(dataset, "format", entry.format.value, table.format.value)]
    if table.problems:
        found += [Difference(dataset, "metadata", "readable", problem) for problem in table.problems]
    if entry.columns and table.columns:
        gone = [c for c in entry.columns if c not in table.columns]
        new = [c for c in table.columns if c not in entry.columns]
        found += [Difference(dataset, f"columns.{c}", "listed", "no longer exists") for c in gone]
        found += [Difference(dataset, f"columns.{c}", "not listed", "exists") for c in new]
    if entry.write_mode and table.write_mode and entry.write_mode is not table.write_mode:
        found.append(Difference(dataset, "write_mode", entry.write_mode.value, table.write_mode.value))
    for name in RETENTION_FIELDS:
        ours, theirs = getattr(entry.retention, name), table.retention.get(name)
        if ours is None and theirs is None:
            continue
        if theirs is None:
            found.append(Difference(dataset, f"retention.{name}", _text(ours), "not set on the table", drift=False))
        elif ours is None:
            found.append(Difference(dataset, f"retention.{name}", "not set", _text(theirs)))
        elif ours != theirs:
            found.append(Difference(dataset, f"retention.{name}", _text(ours), _text(theirs)))
    return found


def _overridable(field: str) -> bool:
    return field == "write_mode" or field.startswith("retention.")


def _text(value) -> str:
    return str(setting_text(value))
