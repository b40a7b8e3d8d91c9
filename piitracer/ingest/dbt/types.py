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

from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from piitracer.ingest.dbt.artifacts import dbt_namer
from piitracer.model.key_values import KeyValueError, parse_key_type
from piitracer.model.naming import DatasetNamer, split_table_name
from piitracer.model.workspace import CatalogDataset, WorkspaceConfig


def dbt_stated_types(manifest_path: Path, catalog_path: Path | None, namer: DatasetNamer,
                     shown: tuple[str, str | None] | None = None) -> dict[str, dict[str, tuple[str, str]]]:
    """Dataset id -> column -> (key type, where dbt states it) for one dbt project. ``shown``: how
    the manifest and the catalog are named in messages (default: their file names)."""
    return _named(_statements(manifest_path, catalog_path, shown), namer)


def _named(statements: tuple[tuple[str, ...], list[tuple[str, str, str, str]]] | None,
           namer: DatasetNamer) -> dict[str, dict[str, tuple[str, str]]]:
    """What dbt states, by dataset id under the workspace's naming rule (the project's databases
    dropped like Spark catalog names, as its lineage is named)."""
    if statements is None:
        return {}
    databases, stated = statements
    namer = replace(namer, spark_catalogs=tuple(dict.fromkeys(namer.spark_catalogs + databases)))
    found: dict[str, dict[str, tuple[str, str]]] = {}
    ids: dict[str, str] = {}
    for relation, column, key_type, where in stated:
        dataset = ids.get(relation)
        if dataset is None:
            dataset = ids[relation] = namer.from_table_name(relation)
        found.setdefault(dataset, {}).setdefault(column, (key_type, where))
    return found


def _statements(manifest_path: Path, catalog_path: Path | None, shown: tuple[str, str | None] | None
                ) -> tuple[tuple[str, ...], list[tuple[str, str, str, str]]] | None:
    """(the project's databases, every (relation, column, key type, where) dbt states, first
    wins), independent of the naming rule; None when the manifest cannot be read."""
    manifest_shown, catalog_shown = shown or (manifest_path.name, catalog_path.name if catalog_path else None)
    manifest = _read(manifest_path)
    if manifest is None:
        return None
    stated: list[tuple[str, str, str, str]] = []

    def state(name: Any, column: Any, text: Any, where: str) -> None:
        key_type = _key_type(text)
        if isinstance(name, str) and name.strip() and isinstance(column, str) and key_type is not None:
            stated.append((".".join(split_table_name(name)), column.strip().lower(), key_type, where))

    catalog = _read(catalog_path) if catalog_path is not None else None
    for section in ("sources", "nodes"):
        for entry in ((catalog or {}).get(section) or {}).values():
            metadata = (entry or {}).get("metadata") or {}
            if not metadata.get("name"):
                continue
            name = ".".join(str(metadata[key]) for key in ("database", "schema", "name") if metadata.get(key))
            for column in ((entry or {}).get("columns") or {}).values():
                state(name, (column or {}).get("name"), (column or {}).get("type"), str(catalog_shown))
    sections = [manifest.get("nodes") or {}, manifest.get("sources") or {}]
    for nodes in sections:
        for unique_id in sorted(nodes):
            node = nodes[unique_id]
            if isinstance(node, dict) and node.get("resource_type") == "seed":
                for column, text in sorted(((node.get("config") or {}).get("column_types") or {}).items()):
                    state(node.get("relation_name"), column, text, f"{manifest_shown} ({unique_id} column_types)")
    for nodes in sections:
        for unique_id in sorted(nodes):
            node = nodes[unique_id]
            if not isinstance(node, dict):
                continue
            for column in (node.get("columns") or {}).values():
                state(node.get("relation_name"), (column or {}).get("name"), (column or {}).get("data_type"),
                      f"{manifest_shown} ({unique_id} data_type)")
    databases = dbt_namer(manifest, DatasetNamer(spark_catalogs=())).spark_catalogs
    return databases, stated


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
        for dataset, columns in _stated_once(manifest, catalog, namer, (source.manifest, source.catalog)).items():
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


# Every load reads the artifacts (they are not among the kept workspace's files); within one
# process, files unchanged since (same size and modification time) are not parsed again. Only
# what dbt states is kept (a few tuples per relation), never the parsed artifacts.
_STATED: dict[tuple, Any] = {}


def _stated_once(manifest: Path, catalog: Path | None, namer: DatasetNamer,
                 shown: tuple[str, str | None]) -> dict[str, dict[str, tuple[str, str]]]:
    key = (_file_key(manifest), _file_key(catalog) if catalog else None, shown)
    if key not in _STATED:
        if len(_STATED) >= 8:
            _STATED.clear()  # bounded: a process serves few workspaces
        _STATED[key] = _statements(manifest, catalog, shown)
    return _named(_STATED[key], namer)


def _file_key(path: Path) -> tuple:
    try:
        status = path.stat()
    except OSError:
        return (str(path), None)
    return (str(path.absolute()), status.st_size, status.st_mtime_ns)


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
