"""Lineage from a dbt project's artifacts: ``target/manifest.json`` (every model's compiled SQL,
its relation name, what it depends on) and ``target/catalog.json`` (the columns each relation
really has, from ``dbt docs generate``).

Each model and snapshot is read as the statement dbt runs for it — ``CREATE TABLE <relation> AS
<compiled SQL>`` (``CREATE VIEW`` for a view) — through the same SQL lineage as ``.sql`` files, in
the sqlglot dialect of the project's adapter, in dependency order so a model's columns are known
to the models that read it. ``catalog.json`` columns expand ``SELECT *``. Ephemeral models are
inlined by dbt as CTEs into the models that use them, so they are not statements of their own;
seeds are loaded from CSV (no upstream). Hooks and operations are ingested as the SQL they are
(an ``INSERT ... SELECT`` in a hook is a flow like any other).

A relation ``"db"."schema"."table"`` is named by the workspace's naming rule with the project's
databases treated like Spark catalog names: ``schema.table`` unless the catalog names the
relation itself (an alias or a ``table:`` identifier). A model without compiled SQL (the project
was parsed, never compiled) is an error problem naming it: its lineage is missing, not empty.
"""

from __future__ import annotations

import json
from dataclasses import replace
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import Any

from piitracer.ingest.source_files import display_path
from piitracer.ingest.sql_lineage import ingest_sql_text
from piitracer.model.lineage import IngestProblem, LineageBatch, Origin, OriginKind, ProblemSeverity
from piitracer.model.naming import DatasetNamer, split_table_name

# dbt adapter type -> sqlglot dialect (an adapter not listed here is tried under its own name).
ADAPTER_DIALECTS = {
    "sqlserver": "tsql", "fabric": "tsql", "synapse": "tsql", "glue": "spark", "spark": "spark",
    "databricks": "databricks", "postgres": "postgres", "redshift": "redshift", "snowflake": "snowflake",
    "bigquery": "bigquery", "duckdb": "duckdb", "trino": "trino", "athena": "athena", "starburst": "trino",
    "clickhouse": "clickhouse", "oracle": "oracle", "mysql": "mysql", "sqlite": "sqlite", "teradata": "teradata",
    "materialize": "postgres", "hive": "hive", "impala": "hive", "doris": "doris", "starrocks": "starrocks",
}
STATEMENT_NODES = ("model", "snapshot")  # wrapped as the CREATE dbt runs for them
RAW_SQL_NODES = ("operation",)  # hooks: their SQL as it is


def ingest_dbt_artifacts(
    manifest_path: Path,
    catalog_path: Path | None,
    *,
    namer: DatasetNamer,
    schemas: dict[str, list[str]] | None = None,
    dialect: str | None = None,
    display_root: Path | None = None,
) -> LineageBatch:
    """Lineage of every model, snapshot and hook of one dbt manifest (see the module docstring).

    ``schemas`` (dataset id -> ordered columns) are what the workspace already knows; they win
    over ``catalog.json``. ``dialect`` overrides the adapter's. Never raises for bad artifacts:
    each defect is a problem naming the file (and the node)."""
    shown = display_path(manifest_path, display_root)
    manifest, problem = _read_json(manifest_path, shown, ("metadata", "nodes"))
    if manifest is None:
        return LineageBatch(problems=(problem,))
    adapter = str((manifest.get("metadata") or {}).get("adapter_type") or "")
    dialect = dialect or ADAPTER_DIALECTS.get(adapter, adapter)
    if not dialect:
        return LineageBatch(problems=(_problem(shown, "metadata.adapter_type is missing: set lineage.dbt[].dialect"),))
    nodes: dict[str, dict[str, Any]] = manifest.get("nodes") or {}
    databases = {str(n.get("database")).lower() for n in [*nodes.values(), *(manifest.get("sources") or {}).values()]
                 if isinstance(n, dict) and n.get("database")}
    namer = replace(namer, spark_catalogs=tuple(dict.fromkeys(namer.spark_catalogs + tuple(sorted(databases)))))

    known = {dataset: list(columns) for dataset, columns in (schemas or {}).items()}
    batch = LineageBatch()
    if catalog_path is not None:
        catalog_shown = display_path(catalog_path, display_root)
        catalog, problem = _read_json(catalog_path, catalog_shown, ("nodes",))
        if catalog is None:
            batch = batch.merged(LineageBatch(problems=(problem,)))
        else:
            for dataset, columns in _catalog_columns(catalog, namer).items():
                known.setdefault(dataset, columns)

    order, problem = _dependency_order(nodes, shown)
    if problem is not None:
        batch = batch.merged(LineageBatch(problems=(problem,)))
    for unique_id in order:
        node = nodes[unique_id]
        kind = node.get("resource_type")
        if kind not in STATEMENT_NODES + RAW_SQL_NODES or _materialized(node) == "ephemeral":
            continue
        where = f"{shown}[{unique_id}]"
        compiled = node.get("compiled_code") or node.get("compiled_sql")
        if not compiled:
            batch = batch.merged(LineageBatch(problems=(_problem(
                where, f"{kind} {node.get('original_file_path') or unique_id} has no compiled SQL in the manifest "
                "(run dbt compile, or dbt docs generate): its lineage is missing"),)))
            continue
        if kind in RAW_SQL_NODES:
            text = compiled
        elif not node.get("relation_name"):
            batch = batch.merged(LineageBatch(problems=(_problem(where, f"{kind} has no relation_name: "
                                                                 "cannot tell which table it writes"),)))
            continue
        else:
            create = "CREATE VIEW" if _materialized(node) in ("view", "materialized_view") else "CREATE TABLE"
            text = f"{create} {node['relation_name']} AS {compiled.strip().rstrip(';')}"
        found = ingest_sql_text(text, file=where, namer=namer, schemas=known, dialect=dialect)
        batch = batch.merged(found)
        for facts in found.datasets:  # a model's columns are known to the models that read it
            if facts.columns:
                known.setdefault(facts.dataset, list(facts.columns))
    return batch


def _materialized(node: dict[str, Any]) -> str:
    return str((node.get("config") or {}).get("materialized") or "").lower()


def _read_json(path: Path, shown: str, required: tuple[str, ...]) -> tuple[dict[str, Any] | None, IngestProblem | None]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        return None, _problem(shown, f"cannot read file: {getattr(error, 'strerror', None) or error}")
    except json.JSONDecodeError as error:
        return None, _problem(shown, f"not JSON (line {error.lineno}): expected a dbt artifact")
    missing = [key for key in required if not isinstance(document, dict) or key not in document]
    if missing:
        return None, _problem(shown, f"not a dbt artifact: no {', '.join(repr(k) for k in missing)}")
    return document, None


def _catalog_columns(catalog: dict[str, Any], namer: DatasetNamer) -> dict[str, list[str]]:
    """Dataset id -> columns in their table order, for every relation ``catalog.json`` describes."""
    found: dict[str, list[str]] = {}
    for section in ("sources", "nodes"):
        for entry in (catalog.get(section) or {}).values():
            metadata, columns = entry.get("metadata") or {}, entry.get("columns") or {}
            if not metadata.get("name") or not columns:
                continue
            name = ".".join(str(metadata[key]) for key in ("database", "schema", "name") if metadata.get(key))
            ordered = sorted(columns.values(), key=lambda c: (c.get("index") or 0, str(c.get("name"))))
            found[namer.from_table_name(".".join(split_table_name(name)))] = [str(c["name"]).lower() for c in ordered]
    return found


def _dependency_order(nodes: dict[str, dict[str, Any]], shown: str) -> tuple[list[str], IngestProblem | None]:
    """Node ids with every node after the nodes it depends on (ties by id: deterministic)."""
    sorter: TopologicalSorter = TopologicalSorter()
    for unique_id in sorted(nodes):
        depends = (nodes[unique_id].get("depends_on") or {}).get("nodes") or []
        sorter.add(unique_id, *sorted(d for d in depends if d in nodes))
    try:
        return list(sorter.static_order()), None
    except CycleError as error:
        return sorted(nodes), _problem(shown, f"the models depend on each other in a cycle ({' -> '.join(error.args[1])}): "
                                              "read in id order")


def _problem(file: str, reason: str) -> IngestProblem:
    return IngestProblem(severity=ProblemSeverity.ERROR, origin=Origin(kind=OriginKind.SQL, file=file), reason=reason)
