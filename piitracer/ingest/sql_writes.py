"""What each SQL statement writes: target columns with their lineage, and what it read.

One function per statement kind (INSERT, Hive multi-insert, CTAS / CREATE VIEW, MERGE), on top of
:mod:`piitracer.ingest.sql_scope`, which resolves the queries. Statements that only change the
context (``USE db``, temporary views, ``CACHE TABLE t AS``) update the :class:`QueryContext`.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from piitracer.ingest.sql_scope import (
    ColumnLineage,
    Influence,
    OpaqueRelation,
    QueryContext,
    Relation,
    Scope,
    query_relation,
    with_ctes,
)
from piitracer.model.lineage import EdgeSubtype

_WRITING_KEYWORDS = frozenset({"INSERT", "MERGE", "CREATE", "REPLACE", "WITH", "FROM"})


def writes_of(node: exp.Expression, ctx: QueryContext) -> list[Write]:
    """The datasets one parsed statement writes (none for most statements), problems in ``ctx``."""
    writes = _writes(node, ctx)
    return [write for write in writes if write is not None]


def _writes(node: exp.Expression, ctx: QueryContext) -> list[Write | None]:
    if isinstance(node, exp.Use):
        if not (node.args.get("kind") and node.args["kind"].name.upper() == "CATALOG"):
            ctx.default_database = _table_name(node.this)
    elif isinstance(node, exp.Insert):
        return [_insert(node, ctx)]
    elif isinstance(node, exp.MultitableInserts):
        return [_insert(insert, ctx) for insert in _with_source(node)]
    elif isinstance(node, exp.Create):
        return [_create(node, ctx)]
    elif isinstance(node, exp.Merge):
        return [_merge(node, ctx)]
    elif isinstance(node, exp.Command) and node.name.upper() in _WRITING_KEYWORDS:
        # sqlglot keeps statements it cannot parse fully as opaque commands.
        ctx.warn(f"{node.name.upper()} statement not understood by sqlglot: no lineage")
    elif isinstance(node, exp.Cache) and isinstance(node.expression, exp.Query):
        # CACHE TABLE t AS <query> defines a temporary view named t.
        ctx.temp_views[node.this.name.lower()] = query_relation(node.expression, ctx)
    return []


# ---- statements that write ------------------------------------------------------------------------


Assignments = list[tuple[str, ColumnLineage]]  # (target column, its lineage)


@dataclass
class Write:
    """What one statement writes: target columns with their lineage, and what it read."""

    dataset: str
    columns: Assignments
    inputs: frozenset[str]
    indirect: frozenset[Influence]
    schema: list[str]  # the target's columns, as this statement tells them


def _table_name(table: exp.Expression) -> str:
    return ".".join(part for part in (table.catalog, table.db, table.name) if part)


def _insert(node: exp.Insert, ctx: QueryContext) -> Write | None:
    """``INSERT INTO|OVERWRITE [TABLE] t [PARTITION (...)] [(cols)] <query>``."""
    table, explicit = node.this, None
    if isinstance(table, exp.Schema):
        table, explicit = table.this, [i.name.lower() for i in table.expressions]
    if not isinstance(table, exp.Table) or not isinstance(node.expression, exp.Query):
        return None  # INSERT ... VALUES, INSERT OVERWRITE DIRECTORY: no lineage
    query = query_relation(node.expression, ctx, with_ctes(node, ctx, {}))
    dataset = ctx.dataset_id(table)
    static, dynamic = _partition_columns(table)
    outputs = query.column_names()
    known = ctx.schemas.get(dataset)
    if node.args.get("by_name"):
        names, schema = outputs, outputs
    elif explicit is not None:
        names = explicit + [c for c in dynamic if c not in explicit]
        schema = names
    elif known and len(_insert_layout(known, static, dynamic)) == len(outputs):
        names, schema = _insert_layout(known, static, dynamic), known
    else:
        if known:
            expected = len(_insert_layout(known, static, dynamic))
            ctx.warn(
                f"INSERT into {dataset}: the query has {len(outputs)} columns, the table {expected}; "
                "mapping by the query's names"
            )
        # Dynamic partition values are the query's last columns, whatever they are called.
        names = outputs[: len(outputs) - len(dynamic)] + dynamic if len(dynamic) <= len(outputs) else outputs
        schema = names
    schema = schema + [c for c in static if c not in schema]
    ctx.schemas.setdefault(dataset, list(schema))
    columns = [(name, lineage) for name, (_, lineage) in zip(names, query.columns)]
    return Write(dataset, columns, query.inputs, query.indirect, schema)


def _with_source(node: exp.MultitableInserts) -> list[exp.Insert]:
    """Hive's ``FROM s INSERT ... SELECT ... INSERT ... SELECT ...``: each SELECT reads ``s``."""
    inserts = []
    for insert in node.expressions:
        insert = insert.copy()
        if isinstance(insert.expression, exp.Select) and not insert.expression.args.get("from_"):
            insert.expression.set("from_", exp.From(this=node.args["source"].copy()))
        inserts.append(insert)
    return inserts


def _insert_layout(schema: list[str], static: list[str], dynamic: list[str]) -> list[str]:
    """Spark's positional layout: the non-partition columns, then the dynamic partitions."""
    return [c for c in schema if c not in static and c not in dynamic] + dynamic


def _partition_columns(table: exp.Table) -> tuple[list[str], list[str]]:
    """(static, dynamic) partition columns of ``PARTITION (dt='2024-01-01', hr)``."""
    partition = table.args.get("partition")
    static, dynamic = [], []
    for part in partition.expressions if partition else []:
        if isinstance(part, exp.Column):
            dynamic.append(part.name.lower())
        elif isinstance(part, (exp.EQ, exp.PropertyEQ)):
            static.append(part.this.name.lower())
    return static, dynamic


def _create(node: exp.Create, ctx: QueryContext) -> Write | None:
    """CTAS, CREATE VIEW (datasets) and CREATE TEMPORARY VIEW (remembered, not a dataset)."""
    kind = (node.args.get("kind") or "").upper()
    table, explicit = node.this, []
    if isinstance(table, exp.Schema):
        table, explicit = table.this, [c.name.lower() for c in table.expressions]
    if kind == "TABLE" and node.expression is None and explicit and isinstance(table, exp.Table):
        _learn_ddl_schema(node, ctx.dataset_id(table), explicit, ctx)
    if kind not in ("TABLE", "VIEW") or not isinstance(node.expression, exp.Query):
        return None
    query = query_relation(node.expression, ctx, with_ctes(node, ctx, {}))
    properties = node.args.get("properties")
    if kind == "VIEW" and properties and properties.find(exp.TemporaryProperty):
        ctx.temp_views[table.name.lower()] = query.renamed(explicit, table.name.lower())
        return None
    dataset = ctx.dataset_id(table)
    names = explicit or query.column_names()
    ctx.schemas[dataset] = list(names)
    columns = [(name, lineage) for name, (_, lineage) in zip(names, query.columns)]
    return Write(dataset, columns, query.inputs, query.indirect, list(names))


def _learn_ddl_schema(node: exp.Create, dataset: str, columns: list[str], ctx: QueryContext) -> None:
    """``CREATE TABLE t (cols) [PARTITIONED BY (p TYPE)]`` gives no lineage, but later INSERTs
    into ``t`` map by position onto these columns (Hive-style typed partitions come last)."""
    properties = node.args.get("properties")
    partitioned = properties.find(exp.PartitionedByProperty) if properties else None
    if partitioned is not None:
        typed = [c.name.lower() for c in partitioned.find_all(exp.ColumnDef)]
        columns = columns + [c for c in typed if c not in columns]
    if node.args.get("exists"):
        ctx.schemas.setdefault(dataset, columns)
    else:
        ctx.schemas[dataset] = columns


def _merge(node: exp.Merge, ctx: QueryContext) -> Write:
    """``MERGE INTO t USING s ON ... WHEN [NOT] MATCHED [AND c] THEN UPDATE|INSERT|DELETE``.

    Target-side columns carry nothing: only the source's columns flow into the target.
    """
    ctes = with_ctes(node, ctx, {})
    table = node.this
    dataset = ctx.dataset_id(table)
    known = ctx.schemas.get(dataset)
    target = OpaqueRelation(dataset, list(known) if known else None)
    using = node.args["using"]
    scope = Scope(ctx, ctes)
    scope.add_source(table.alias_or_name, target)
    scope.add_from_item(using)
    source = scope.sources[using.alias_or_name.lower()]
    # INSERT values can only read the source: the target row does not exist.
    source_scope = Scope(ctx, ctes)
    source_scope.add_source(using.alias_or_name, source)

    scope.influence(node.args["on"], EdgeSubtype.JOIN)
    columns: Assignments = []
    whens = node.args.get("whens")
    for when in whens.expressions if whens else []:
        if when.args.get("condition"):
            scope.influence(when.args["condition"], EdgeSubtype.CONDITIONAL)
        action = when.args.get("then")
        if isinstance(action, exp.Update):
            columns += _merge_update(action, scope, source, known)
        elif isinstance(action, exp.Insert):
            columns += _merge_insert(action, source_scope, source, known)
    schema = list(known) if known else list(dict.fromkeys(name for name, _ in columns))
    inputs = frozenset(scope.inputs | source_scope.inputs)
    return Write(dataset, columns, inputs, frozenset(scope.indirect | source_scope.indirect), schema)


def _merge_update(action: exp.Update, scope: Scope, source: Relation, known: list[str] | None) -> Assignments:
    if any(isinstance(e, exp.Star) for e in action.expressions):
        return _by_name(source, known, scope.ctx)
    assignments = [eq for eq in action.expressions if isinstance(eq, exp.EQ)]
    return [(eq.this.name.lower(), scope.lineage_of(eq.expression)) for eq in assignments]


def _merge_insert(action: exp.Insert, scope: Scope, source: Relation, known: list[str] | None) -> Assignments:
    if isinstance(action.this, exp.Star):
        return _by_name(source, known, scope.ctx)
    names = [c.name.lower() for c in action.this.expressions]
    values = action.expression.expressions if action.expression else []
    return [(name, scope.lineage_of(value)) for name, value in zip(names, values)]


def _by_name(source: Relation, known: list[str] | None, ctx: QueryContext) -> Assignments:
    """``UPDATE SET *`` / ``INSERT *``: every target column from the source column of that name."""
    names = known if known is not None else source.column_names()
    if names is None:
        ctx.warn(f"cannot expand MERGE * from {source.label}: no known schema for the target or the source")
        return []
    if source.column_names() is not None:
        missing = [n for n in names if not source.has_column(n)]
        if missing:
            ctx.warn(f"MERGE *: {source.label} has no column {', '.join(missing)}")
        names = [n for n in names if n not in missing]
    return [(name, source.column(name) or ColumnLineage()) for name in names]
