"""Lineage from a dbt project's artifacts: ``target/manifest.json`` (every model's compiled SQL,
its relation name, what it depends on) and ``target/catalog.json`` (the columns each relation
really has, from ``dbt docs generate``).

Each model and snapshot is read as the statement dbt runs for it — ``CREATE TABLE <relation> AS
<compiled SQL>`` (``CREATE VIEW`` for a view) — through the same SQL lineage as ``.sql`` files, in
the sqlglot dialect of the project's adapter, in dependency order so a model's columns are known
to the models that read it. Ephemeral models are inlined by dbt as CTEs into the models that
use them, so they are not statements of their own; seeds are loaded from CSV (no upstream). Hooks
and operations are ingested as the SQL they are (an ``INSERT ... SELECT`` in a hook is a flow like
any other).

The columns that expand a ``SELECT *`` of a seed or a source, first found wins: the workspace's
(catalog, events), ``catalog.json`` (what the warehouse has), then what the manifest alone says —
a seed's CSV header (``root_path`` + ``original_file_path``, else the same path under the project
folder that holds ``target/``; a file whose sha256 is not the one dbt recorded is still read, with
a warning) or the ``columns:`` a YAML file declares for a source or a seed (dbt does not check
those against the table: a column left undeclared is missed, so ``catalog.json`` is better).
Without any of them, each model selecting ``*`` from it is a warning naming the relation.

A relation ``"db"."schema"."table"`` is named by the workspace's naming rule with the project's
databases treated like Spark catalog names: ``schema.table`` unless the catalog names the
relation itself (an alias or a ``table:`` identifier). A model without compiled SQL (the project
was parsed, never compiled) is an error problem naming it: its lineage is missing, not empty.
"""

from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import replace
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import Any

from piitracer.ingest.source_files import display_path
from piitracer.ingest.sql.lineage import ingest_sql_text
from piitracer.model.lineage import DatasetFacts, IngestProblem, LineageBatch, Origin, OriginKind, ProblemSeverity
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
    looked_at: list[Path] | None = None,
) -> LineageBatch:
    """Lineage of every model, snapshot and hook of one dbt manifest (see the module docstring).

    ``schemas`` (dataset id -> ordered columns) are what the workspace already knows; they win
    over ``catalog.json``. ``dialect`` overrides the adapter's. ``looked_at``, when given, is
    extended with every seed file path looked for (found or not): the result depends on them.
    Never raises for bad artifacts: each defect is a problem naming the file (and the node)."""
    shown = display_path(manifest_path, display_root)
    manifest, problem = _read_json(manifest_path, shown, ("metadata", "nodes"))
    if manifest is None:
        return LineageBatch(problems=(problem,))
    adapter = str((manifest.get("metadata") or {}).get("adapter_type") or "")
    dialect = dialect or ADAPTER_DIALECTS.get(adapter, adapter)
    if not dialect:
        return LineageBatch(problems=(_problem(shown, "metadata.adapter_type is missing: set lineage.dbt[].dialect"),))
    nodes: dict[str, dict[str, Any]] = manifest.get("nodes") or {}
    namer = dbt_namer(manifest, namer)

    known = {dataset: list(columns) for dataset, columns in (schemas or {}).items()}
    batch = LineageBatch(datasets=_relation_facts(manifest, namer, shown))
    if catalog_path is not None:
        catalog_shown = display_path(catalog_path, display_root)
        catalog, problem = _read_json(catalog_path, catalog_shown, ("nodes",))
        if catalog is None:
            batch = batch.merged(LineageBatch(problems=(problem,)))
        else:
            for dataset, columns in _catalog_columns(catalog, namer).items():
                known.setdefault(dataset, columns)
    stated, problems = manifest_columns(manifest, manifest_path, namer, shown, looked_at)
    for dataset, columns in stated.items():
        known.setdefault(dataset, columns)
    batch = batch.merged(LineageBatch(problems=tuple(problems)))

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


def dbt_namer(manifest: dict[str, Any], namer: DatasetNamer) -> DatasetNamer:
    """The workspace's naming rule with the project's databases treated like Spark catalog names
    (``"db"."schema"."t"`` -> ``schema.t``), as every relation of this manifest is named."""
    databases = {str(n.get("database")).lower() for n in _relations(manifest) if n.get("database")}
    return replace(namer, spark_catalogs=tuple(dict.fromkeys(namer.spark_catalogs + tuple(sorted(databases)))))


def relation_id(node: dict[str, Any], namer: DatasetNamer) -> str | None:
    """The dataset id of a node's or source's relation (``relation_name``), or None without one."""
    name = node.get("relation_name")
    if not isinstance(name, str) or not name.strip():
        return None
    return namer.from_table_name(".".join(split_table_name(name)))


def _relations(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """Every node and source of the manifest (dicts only), nodes first, each in id order."""
    found = []
    for section in ("nodes", "sources"):
        entries = manifest.get(section) or {}
        found += [entries[key] for key in sorted(entries) if isinstance(entries[key], dict)]
    return found


def _relation_facts(manifest: dict[str, Any], namer: DatasetNamer, shown: str) -> tuple[DatasetFacts, ...]:
    """The database-qualified name (``database.schema.name``) of every relation as an alias of its
    dataset id, so a person may name a dbt relation as dbt prints it."""
    facts: dict[str, set[str]] = {}
    for node in _relations(manifest):
        dataset = relation_id(node, namer)
        # Only relations of the project's data (a data test's stored failures are not one).
        if dataset is None or node.get("resource_type") not in (*STATEMENT_NODES, "seed", "source"):
            continue
        qualified = ".".join(split_table_name(node["relation_name"]))
        if qualified != dataset:
            facts.setdefault(dataset, set()).add(qualified)
    origin = Origin(kind=OriginKind.SQL, file=shown)
    return tuple(DatasetFacts(dataset=d, aliases=tuple(sorted(a)), origin=origin) for d, a in sorted(facts.items()))


def manifest_columns(manifest: dict[str, Any], manifest_path: Path, namer: DatasetNamer, shown: str,
                     looked_at: list[Path] | None = None) -> tuple[dict[str, list[str]], list[IngestProblem]]:
    """Dataset id -> columns the manifest alone says a seed or a source has (see the module
    docstring), and a warning for each seed file that cannot be read or is not the one dbt read.
    ``looked_at`` is extended with every seed file path looked for."""
    found: dict[str, list[str]] = {}
    problems: list[IngestProblem] = []
    for node in _relations(manifest):
        kind = node.get("resource_type")
        dataset = relation_id(node, namer)
        if kind not in ("seed", "source") or dataset is None:
            continue
        columns = None
        if kind == "seed":
            if looked_at is not None:
                looked_at.extend(seed_candidates(node, manifest_path))
            columns, problem = _seed_header(node, manifest_path, f"{shown}[{node.get('unique_id')}]")
            if problem is not None:
                problems.append(problem)
        if not columns:
            declared = node.get("columns") or {}
            columns = [str((c or {}).get("name") or k).lower() for k, c in declared.items()] if isinstance(declared, dict) else []
        if columns:
            found.setdefault(dataset, columns)
    return found, problems


def seed_file(node: dict[str, Any], manifest_path: Path) -> Path | None:
    """The CSV a seed was loaded from: ``root_path``/``original_file_path`` when it exists, else
    that path under the project folder holding the manifest's ``target/`` (artifacts copied from
    another machine keep that machine's ``root_path``); the first whose content dbt recorded
    (sha256) wins. None when neither exists."""
    existing = [path for path in seed_candidates(node, manifest_path) if path.is_file()]
    return next((path for path in existing if _as_dbt_read(node, path)), existing[0] if existing else None)


def seed_candidates(node: dict[str, Any], manifest_path: Path) -> list[Path]:
    """Where a seed's CSV may be, in the order :func:`seed_file` tries them."""
    relative = node.get("original_file_path")
    if not isinstance(relative, str) or not relative:
        return []
    candidates = [Path(str(node["root_path"])) / relative] if node.get("root_path") else []
    candidates.append(manifest_path.absolute().parent.parent / relative)
    return list(dict.fromkeys(candidates))


def _as_dbt_read(node: dict[str, Any], path: Path) -> bool:
    """Whether ``path`` holds what dbt read for the seed: dbt records the sha256 of the file's
    text, stripped (seeds too large to hash carry their path instead, and always match)."""
    checksum = node.get("checksum") or {}
    if checksum.get("name") != "sha256":
        return True
    try:
        text = path.read_bytes().decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return False
    return hashlib.sha256(text.encode("utf-8")).hexdigest() == checksum.get("checksum")


def _seed_header(node: dict[str, Any], manifest_path: Path, where: str) -> tuple[list[str], IngestProblem | None]:
    """A seed's columns from its CSV header (dbt's ``delimiter`` config honoured)."""
    path = seed_file(node, manifest_path)
    relative = node.get("original_file_path") or "(no original_file_path)"
    if path is None:
        return [], None  # the models reading it with SELECT * say so, one warning each
    delimiter = str((node.get("config") or {}).get("delimiter") or ",")
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            header = next(csv.reader(handle, delimiter=delimiter[:1] or ","), [])
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        return [], _problem(where, f"seed file {path}: cannot read its header ({getattr(error, 'strerror', None) or error})",
                            ProblemSeverity.WARNING)
    columns = [name.strip().lower() for name in header]
    if not columns or any(not name for name in columns):
        return [], _problem(where, f"seed file {path}: the first line is not a header of column names",
                            ProblemSeverity.WARNING)
    problem = None
    if not _as_dbt_read(node, path):
        problem = _problem(where, f"seed {relative}: {path} is not the file dbt loaded (its sha256 differs from the "
                           "manifest's): its header is used, but re-run dbt if the columns changed", ProblemSeverity.WARNING)
    return columns, problem


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


def _problem(file: str, reason: str, severity: ProblemSeverity = ProblemSeverity.ERROR) -> IngestProblem:
    return IngestProblem(severity=severity, origin=Origin(kind=OriginKind.SQL, file=file), reason=reason)
