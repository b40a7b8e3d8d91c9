"""The discovered catalog as ``catalog.discovered.yaml`` entries: what ``catalog discover
--write`` (and ``catalog classify --write``) put under the person's ``piitracer.yaml``.

One entry per discovered table, keyed by the dataset id the person's catalog gives its location,
else by the table's own name. Only the lakehouse's facts are written: format, location, Spark
table, write mode, columns, retention properties, a shallow clone's source; plus views the
lineage creates (``CREATE VIEW``: no files to find) and, from the classifier, identifiers marked
``classified_by: auto``.

Nothing is written that could merge one table's facts into another's entry: a table whose name
is taken by another location, two tables with one name, a replica (its facts are its primary's),
a table the person declares as another format (an archive is a Parquet folder to the lakehouse)
are skipped with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import yaml

from piitracer.discover.classify import ColumnVerdict
from piitracer.discover.lakehouse import DiscoveredTable
from piitracer.model.workspace import REPLICA_SEPARATOR, ClassifiedBy, DatasetFormat, setting_text
from piitracer.storage.guard import canonical
from piitracer.storage.locations import Location

FILE_VERSION = 1


@dataclass
class DiscoveredCatalog:
    """The entries to write, by dataset id, and what was left out with why (by location or id)."""

    entries: dict[str, dict[str, Any]]
    skipped: dict[str, str] = field(default_factory=dict)

    def to_yaml(self, header: str) -> str:
        """The file's text: sorted by dataset id, fields in a fixed order (same lakehouse, same bytes)."""
        body = {"version": FILE_VERSION, "catalog": {d: self.entries[d] for d in sorted(self.entries)}}
        return header + yaml.safe_dump(body, sort_keys=False, default_flow_style=None, width=120)


def catalog_entries(tables: Sequence[DiscoveredTable], declared: Mapping[str, Location],
                    declared_formats: Mapping[str, DatasetFormat], place_text: Callable[[Location], str],
                    views: Mapping[str, Sequence[str]] | None = None,
                    declared_tables: Mapping[str, str] | None = None) -> DiscoveredCatalog:
    """Entries for ``tables``.

    ``declared``: the locations the person's catalog gives (dataset -> location);
    ``declared_formats``: the formats it states; ``place_text`` writes a location as the catalog
    should (relative to the workspace when inside it); ``views``: datasets the lineage creates
    with ``CREATE VIEW`` and their columns; ``declared_tables``: the table identifiers the person's
    catalog gives (``prod.fintech.payments`` -> dataset), which name a table found at another place
    or with no location said (a catalog keeps it where it says)."""
    by_place = {canonical(location).uri: dataset for dataset, location in declared.items()}
    named: dict[str, list[DiscoveredTable]] = {}
    skipped: dict[str, str] = {}
    for table in tables:
        if table.problems:
            if table.catalog:  # a catalog's table: named by its identifier, its problem as it is
                skipped[table.table or str(table.location)] = "; ".join(table.problems)
            else:
                skipped[str(table.location)] = "its metadata cannot be read: " + "; ".join(table.problems)
            continue
        dataset = by_place.get(canonical(table.location).uri)
        if dataset is None and table.catalog and table.table:  # listed by its Iceberg catalog
            dataset = (declared_tables or {}).get(table.table.lower())
        if dataset is None:
            dataset = table.name
            if dataset in declared:
                skipped[str(table.location)] = (f"its name {dataset} is the catalog's name for {declared[dataset]}: "
                                                "give it a name in piitracer.yaml with its location")
                continue
        named.setdefault(dataset, []).append(table)
    names_of_places = {canonical(t.location).uri: d for d, found in named.items() for t in found}
    entries: dict[str, dict[str, Any]] = {}
    for dataset, found in sorted(named.items()):
        if len(found) > 1:
            if all(t.catalog for t in found):  # the same namespace.table in two catalogs: one line naming both
                skipped[dataset] = (f"{' and '.join(f'{t.table} (at {t.location})' for t in found)} are both "
                                    f"{dataset}: not guessing which; give each a name in piitracer.yaml with its "
                                    "table: and location:")
                continue
            places = ", ".join(str(t.location) for t in found)
            for table in found:
                skipped[str(table.location)] = (f"{len(found)} tables would be named {dataset} ({places}): "
                                                "give each a name in piitracer.yaml with its location")
            continue
        table = found[0]
        if REPLICA_SEPARATOR in dataset:
            skipped[dataset] = "a replica: its catalog entry is its primary's"
            continue
        stated = declared_formats.get(dataset)
        if stated is not None and stated is not table.format:
            skipped[dataset] = f"piitracer.yaml declares it {stated.value}; the lakehouse stores it as {table.format.value}"
            continue
        entries[dataset] = _entry(table, place_text, names_of_places)
    for dataset, columns in sorted((views or {}).items()):
        if dataset not in entries and dataset not in declared and dataset not in declared_formats:
            entries[dataset] = {"format": DatasetFormat.VIEW.value, "columns": list(columns)}
    return DiscoveredCatalog(entries, skipped)


def _entry(table: DiscoveredTable, place_text: Callable[[Location], str], names_of_places: Mapping[str, str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"format": table.format.value, "location": place_text(table.location)}
    if table.table:
        entry["table"] = table.table
    if table.write_mode is not None:
        entry["write_mode"] = table.write_mode.value
    if table.columns:
        entry["columns"] = list(table.columns)
    if table.retention:
        entry["retention"] = {k: setting_text(v) for k, v in table.retention.items()}
    if table.shallow_clone_of is not None:
        source = names_of_places.get(canonical(table.shallow_clone_of).uri)
        if source is not None:
            entry["clone_of"] = {"dataset": source, "mode": "shallow"}
    return entry


def with_identifiers(catalog: DiscoveredCatalog, verdicts: Iterable[ColumnVerdict]) -> DiscoveredCatalog:
    """The entries with the classifier's identifier columns added, marked ``classified_by: auto``
    (a proposal a person confirms in piitracer.yaml)."""
    proposed: dict[str, list[str]] = {}
    for verdict in verdicts:
        if verdict.kind and verdict.dataset in catalog.entries:
            proposed.setdefault(verdict.dataset, []).append(verdict.column)
    for dataset, columns in proposed.items():
        entry = catalog.entries[dataset]
        order = entry.get("columns") or columns
        entry["identifiers"] = [c for c in order if c in columns]
        entry["classified_by"] = ClassifiedBy.AUTO.value
    return catalog


def kept_identifiers(catalog: DiscoveredCatalog, previous: Mapping[str, Mapping[str, Any]]) -> DiscoveredCatalog:
    """The entries with the identifiers an earlier ``classify --write`` proposed, where their
    columns still exist (a new discovery must not drop a proposal a person has yet to review)."""
    for dataset, old in previous.items():
        entry = catalog.entries.get(dataset)
        if entry is None or not old.get("identifiers"):
            continue
        columns = entry.get("columns") or []
        kept = [c for c in old["identifiers"] if c in columns]
        if kept:
            entry["identifiers"] = kept
            entry["classified_by"] = old.get("classified_by", ClassifiedBy.AUTO.value)
    return catalog
