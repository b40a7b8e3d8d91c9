"""The workspace's catalog in two layers: what the lakehouse says of itself, written by
``piitracer catalog discover --write`` (and ``catalog classify --write``) to
``catalog.discovered.yaml``, under what a person says in ``piitracer.yaml``.

A person's entry wins field by field (``retention`` key by key): the discovered layer only fills
what the person left unsaid. So ``piitracer.yaml`` can hold only what a person must say — sources
and subject keys, owners, archives, external systems, the deadline, maintenance cadence,
overrides — and the lakehouse's own facts (format, location, columns, write mode, retention
properties, shallow clones) are read, not typed.

Two safety rules:

- A discovered entry is never merged into a person's entry that places the dataset elsewhere: its
  columns and write mode describe another folder. It is ignored with a warning (the person's
  location is what piitracer touches).
- Identifiers the classifier proposed stay ``classified_by: auto`` until a person lists
  identifiers for that dataset or writes ``classified_by: person`` in ``piitracer.yaml``; a plan
  relying on them says so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from piitracer.model.lineage import Frozen
from piitracer.model.workspace import CatalogDataset, ClassifiedBy, parse_duration
from piitracer.workspace.layout import DISCOVERED_FILE

DISCOVERED_HEADER = (
    "# Written by `piitracer catalog discover --write` (identifiers: `catalog classify --write`) from the\n"
    "# lakehouse's own metadata. Do not edit: say it in piitracer.yaml instead, where an entry's fields win\n"
    "# over these one by one. Identifiers marked classified_by: auto are a proposal until confirmed there.\n"
)


class DiscoveredCatalogFile(Frozen):
    """The whole ``catalog.discovered.yaml``."""

    version: int = Field(1, description="Discovered catalog file format version.")
    catalog: dict[str, CatalogDataset] = Field(default_factory=dict)

    @field_validator("version")
    @classmethod
    def _known_version(cls, value: int) -> int:
        if value != 1:
            raise ValueError("only version 1 is known")
        return value

    @field_validator("catalog", mode="before")
    @classmethod
    def _lowercase_ids(cls, value: Any) -> Any:
        return {str(k).lower(): v for k, v in value.items()} if isinstance(value, dict) else value


@dataclass(frozen=True)
class CatalogLayers:
    """Where each catalog entry's fields came from, for ``catalog check`` and messages."""

    discovered_file: Path | None = None
    # dataset -> the fields the discovered layer supplied (the person said nothing of them)
    from_discovery: dict[str, frozenset[str]] = field(default_factory=dict)
    # dataset -> the fields the person set where the discovered layer says otherwise (reported)
    overrides: dict[str, frozenset[str]] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def merge_discovered(person: dict[str, Any], raw_discovered: dict[str, Any], root: Path,
                     discovered_path: Path) -> tuple[dict[str, Any], CatalogLayers]:
    """The workspace data with ``person``'s ``catalog:`` laid over the discovered one.

    ``raw_discovered`` is the discovered file's data as read, already validated by
    :func:`validate_discovered` (only the fields it says are merged)."""
    person_catalog = person.get("catalog") or {}
    if not isinstance(person_catalog, dict):
        return person, CatalogLayers(discovered_path)  # the person's file is invalid: its own validation says so
    mine = {str(k).lower(): v for k, v in person_catalog.items()}
    theirs = {str(k).lower(): v for k, v in (raw_discovered.get("catalog") or {}).items()}
    merged: dict[str, Any] = dict(mine)
    supplied: dict[str, frozenset[str]] = {}
    overridden: dict[str, frozenset[str]] = {}
    warnings: list[str] = []
    for dataset, found in sorted(theirs.items()):
        entry = mine.get(dataset)
        if entry is None:
            merged[dataset] = dict(found)
            supplied[dataset] = frozenset(_field_names(found))
            continue
        if not isinstance(entry, dict):
            continue  # invalid: the person's file's validation names it
        said = entry.get("location")
        if said is not None and not _same_place(root, str(said), str(found.get("location", ""))):
            warnings.append(f"{discovered_path}: catalog.{dataset}: describes {found.get('location')}, but piitracer.yaml "
                            f"places {dataset} at {said}: ignored (run `piitracer catalog discover --write` again)")
            continue
        combined = {**found, **entry}
        if isinstance(found.get("retention"), dict) and isinstance(entry.get("retention"), dict):
            combined["retention"] = {**found["retention"], **entry["retention"]}
        if "identifiers" in entry and "classified_by" not in entry:
            combined["classified_by"] = ClassifiedBy.PERSON.value  # the person listed them: confirmed
        merged[dataset] = combined
        supplied[dataset] = frozenset(_field_names(found)) - frozenset(_field_names(entry))
        overridden[dataset] = frozenset(name for name in _field_names(entry) if name in _field_names(found)
                                        and not _same_value(_value_of(entry, name), _value_of(found, name)))
    data = dict(person)
    data["catalog"] = merged
    return data, CatalogLayers(discovered_path, supplied, {d: f for d, f in overridden.items() if f}, tuple(warnings))


def _field_names(entry: dict[str, Any]) -> list[str]:
    """Top-level fields, and ``retention.<key>`` for each retention key."""
    names = [str(k) for k in entry if k != "retention"]
    retention = entry.get("retention")
    if isinstance(retention, dict):
        names += [f"retention.{k}" for k in retention]
    return names


def _value_of(entry: dict[str, Any], name: str) -> Any:
    if name.startswith("retention."):
        return entry["retention"][name.split(".", 1)[1]]
    return entry[name]


def _same_value(ours: Any, theirs: Any) -> bool:
    """Equal as the catalog would read them: durations by length ('5d' == '120h'), names
    case-insensitively."""
    if isinstance(ours, (str, int, timedelta)) and isinstance(theirs, (str, int, timedelta)):
        try:
            return parse_duration(ours) == parse_duration(theirs)
        except (ValueError, TypeError):
            pass
    if isinstance(ours, (list, tuple)) and isinstance(theirs, (list, tuple)):
        return [str(v).lower() for v in ours] == [str(v).lower() for v in theirs]
    if isinstance(ours, str) and isinstance(theirs, str):
        return ours.lower() == theirs.lower()
    return ours == theirs


def _same_place(root: Path, one: str, other: str) -> bool:
    """Whether two catalog locations name the same folder (relative ones under the workspace)."""
    def place(text: str) -> str:
        if "://" in text and not text.startswith("file:"):
            return text.rstrip("/")
        text = text.removeprefix("file://").removeprefix("file:")
        return os.path.realpath(text if os.path.isabs(text) else os.path.join(root, text))
    return place(one) == place(other)


def validate_discovered(data: Any) -> DiscoveredCatalogFile:
    """The discovered file's data validated (raises pydantic's ``ValidationError``, or
    ``ValueError`` when it is not a mapping)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValueError("expected a mapping with 'version' and 'catalog'")
    return DiscoveredCatalogFile.model_validate(data)


