"""Key column types a dbt project states, laid under the catalog's ``column_types``.

A subject value is parsed strictly against its key column's type (``model.key_values``), so a
plan needs that type: the catalog's ``column_types``, else the live table's schema. For a dbt
relation the project already says it, and it should not have to be typed again by hand. What dbt
states, first found wins per column:

1. ``target/catalog.json`` (``dbt docs generate``): the type the warehouse reports for each column
   of each source, seed and model — the table's truth;
2. a seed's ``column_types`` config (what dbt casts the CSV's columns to);
3. a ``data_type`` a YAML file declares for a column of a source, a seed or a model.

Only key types piitracer compares (integers, string, decimal(p,s), double, float, date) are taken;
others (timestamps, structs) are no key's type and are left out. A type a person wrote in the
catalog always wins; where dbt states another, the workspace warns (one of them is wrong, and the
planner also checks the live table). Entries that list ``columns`` take types only for those
columns, and a ``normalised`` (string) column only a string type. Artifacts that cannot be read
give no types here: the lineage ingest of the same files reports them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from piitracer.ingest.dbt_artifacts import dbt_namer, relation_id
from piitracer.model.key_values import KeyValueError, parse_key_type
from piitracer.model.naming import DatasetNamer, split_table_name
from piitracer.model.workspace import CatalogDataset, WorkspaceConfig


def dbt_stated_types(manifest_path: Path, catalog_path: Path | None,
                     namer: DatasetNamer) -> dict[str, dict[str, tuple[str, str]]]:
    """Dataset id -> column -> (key type, where dbt states it) for one dbt project."""
    manifest = _read(manifest_path)
    if manifest is None:
        return {}
    namer = dbt_namer(manifest, namer)
    found: dict[str, dict[str, tuple[str, str]]] = {}

    def state(dataset: str | None, column: Any, text: Any, where: str) -> None:
        key_type = _key_type(text)
        if dataset is not None and isinstance(column, str) and key_type is not None:
            found.setdefault(dataset, {}).setdefault(column.strip().lower(), (key_type, where))

    catalog = _read(catalog_path) if catalog_path is not None else None
    for section in ("sources", "nodes"):
        for entry in ((catalog or {}).get(section) or {}).values():
            metadata = (entry or {}).get("metadata") or {}
            if not metadata.get("name"):
                continue
            name = ".".join(str(metadata[key]) for key in ("database", "schema", "name") if metadata.get(key))
            dataset = namer.from_table_name(".".join(split_table_name(name)))
            for column in ((entry or {}).get("columns") or {}).values():
                state(dataset, (column or {}).get("name"), (column or {}).get("type"), catalog_path.name)
    sections = [manifest.get("nodes") or {}, manifest.get("sources") or {}]
    for nodes in sections:
        for unique_id in sorted(nodes):
            node = nodes[unique_id]
            if isinstance(node, dict) and node.get("resource_type") == "seed":
                for column, text in sorted(((node.get("config") or {}).get("column_types") or {}).items()):
                    state(relation_id(node, namer), column, text, f"{manifest_path.name} ({unique_id} column_types)")
    for nodes in sections:
        for unique_id in sorted(nodes):
            node = nodes[unique_id]
            if not isinstance(node, dict):
                continue
            for column in (node.get("columns") or {}).values():
                state(relation_id(node, namer), (column or {}).get("name"), (column or {}).get("data_type"),
                      f"{manifest_path.name} ({unique_id} data_type)")
    return found


def with_dbt_types(config: WorkspaceConfig, root: Path, namer: DatasetNamer) -> tuple[WorkspaceConfig, tuple[str, ...]]:
    """``config`` with each catalog entry of a dbt relation given the key types dbt states for
    the columns its ``column_types`` leaves unsaid, and a warning for each type a person wrote
    that dbt states otherwise."""
    if not config.lineage.dbt:
        return config, ()
    stated: dict[str, dict[str, tuple[str, str]]] = {}
    for source in config.lineage.dbt:
        manifest = _resolve(root, source.manifest)
        catalog = _resolve(root, source.catalog) if source.catalog else None
        for dataset, columns in dbt_stated_types(manifest, catalog, namer).items():
            for column, said in columns.items():
                stated.setdefault(dataset, {}).setdefault(column, said)
    catalog, warnings = dict(config.catalog), []
    for dataset_id, entry in sorted(config.catalog.items()):
        primary = entry.replica_of.dataset if entry.replica_of else dataset_id
        columns = stated.get(primary)
        if not columns:
            continue
        added = {}
        for column, (key_type, where) in sorted(columns.items()):
            written = entry.column_types.get(column)
            if written is not None:
                if written != key_type and entry.replica_of is None:
                    warnings.append(f"catalog.{dataset_id}.column_types.{column}: says {written}, but dbt ({where}) "
                                    f"says {key_type}: the catalog's is used")
                continue
            if entry.columns and column not in entry.columns:
                continue
            if column in entry.normalised and key_type != "string":
                continue
            added[column] = key_type
        if added:
            catalog[dataset_id] = _with_types(entry, added)
    if catalog == config.catalog:
        return config, tuple(warnings)
    return config.model_copy(update={"catalog": catalog}), tuple(warnings)


def _with_types(entry: CatalogDataset, added: dict[str, str]) -> CatalogDataset:
    # model_copy does not validate: every type added is already parsed and normalised.
    return entry.model_copy(update={"column_types": {**added, **entry.column_types}})


def _key_type(text: Any) -> str | None:
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        return str(parse_key_type(text))
    except KeyValueError:
        return None  # not a type a key is compared as (timestamp, struct...): no key's type


def _resolve(root: Path, path: str) -> Path:
    candidate = Path(path)
    return candidate if candidate.is_absolute() else root / candidate


def _read(path: Path | None) -> dict[str, Any] | None:
    try:
        document = orjson.loads(path.read_bytes()) if path is not None else None
    except (OSError, orjson.JSONDecodeError):
        return None  # the lineage ingest of the same file names what is wrong with it
    return document if isinstance(document, dict) else None


__all__ = ["dbt_stated_types", "with_dbt_types"]
