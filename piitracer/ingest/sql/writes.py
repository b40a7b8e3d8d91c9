"""What each SQL statement writes: target columns with their lineage, and what it read.

One function per statement kind (INSERT, Hive multi-insert, CTAS / CREATE VIEW, MERGE), on top of
:mod:`piitracer.ingest.sql.scope`, which resolves the queries. Statements that only change the
context (``USE db``, temporary views, ``CACHE TABLE t AS``) update the :class:`QueryContext`.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from piitracer.ingest.sql.context import QueryContext
from piitracer.ingest.sql.expressions import per_row_key
from piitracer.ingest.sql.relations import ColumnLineage, Influence, OpaqueRelation, Relation
from piitracer.ingest.sql.scope import Scope, query_relation, with_ctes
from piitracer.model.lineage import EdgeSubtype

# Statements sqlglot keeps as opaque commands that write nothing (or nothing with lineage): they
# pass silently. Any other command is reported, since it may write a table we cannot see.
_HARMLESS_COMMANDS = frozenset({
    "SET", "RESET", "USE", "ADD", "LIST", "REFRESH", "CACHE", "UNCACHE", "CLEAR", "ANALYZE", "MSCK", "REPAIR",
    "OPTIMIZE", "VACUUM", "FSCK", "SHOW", "DESCRIBE", "DESC", "EXPLAIN", "GRANT", "REVOKE", "DENY", "COMMENT",
    "CALL", "EXEC", "EXECUTE", "BEGIN", "START", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "DECLARE", "PRINT",
    "RAISERROR", "THROW", "RETURN", "RAISE", "LET", "KILL", "LOCK", "UNLOCK", "PUT", "GET", "REMOVE", "RM",
    "CHECKPOINT", "DBCC", "PRAGMA", "ATTACH", "DETACH", "INSTALL", "SYNC", "DROP", "ALTER", "RENAME", "TRUNCATE",
    "UNDROP", "WAITFOR", "GO", "REINDEX", "CLUSTER", "DISCARD", "LISTEN", "UNLISTEN", "NOTIFY",
})


def writes_of(node: exp.Expression, ctx: QueryContext) -> list[Write]:
    """The datasets one parsed statement writes (none for most statements); warnings and info
    lines go to ``ctx``."""
    writes = _writes(node, ctx)
    return [write for write in writes if write is not None]


def _writes(node: exp.Expression, ctx: QueryContext) -> list[Write | None]:
    if isinstance(node, exp.Use):
        if not (node.args.get("kind") and node.args["kind"].name.upper() == "CATALOG"):
            ctx.default_database = _table_name(node.this)
    elif isinstance(node, exp.Insert):
        return [_insert(node, ctx)]
    elif isinstance(node, exp.MultitableInserts):
        ctes = with_ctes(node, ctx, {})  # a WITH in front is seen by every INSERT
        if any(isinstance(e, exp.ConditionalInsert) for e in node.expressions):
            return _conditional_inserts(node, ctx, ctes)
        return [_insert(insert, ctx, ctes) for insert in _with_source(node)]
    elif isinstance(node, exp.Create) and node.args.get("clone") and isinstance(node.this, exp.Table):
        ctx.warn(f"CREATE TABLE {ctx.dataset_id(node.this)} ... CLONE: clones are read from the catalog "
                 "(clone_of), not from SQL: no lineage")
    elif isinstance(node, exp.Create):
        return [_create(node, ctx)]
    elif isinstance(node, exp.Merge):
        return [_merge(node, ctx)]
    elif isinstance(node, exp.Update):
        return [_update(node, ctx)]
    elif isinstance(node, exp.Delete):
        return [_delete(node, ctx)]
    elif isinstance(node, (exp.Copy, exp.LoadData)):
        table = node.this
        if isinstance(table, exp.Table):
            verb = "COPY" if isinstance(node, exp.Copy) else "LOAD DATA"
            ctx.info(f"{verb} into {ctx.dataset_id(table)} loads files: no lineage from tables")
    elif isinstance(node, exp.Export):
        ctx.warn("EXPORT DATA writes files that are no catalogued table: no lineage")
    elif isinstance(node, exp.Cache) and isinstance(node.expression, exp.Query):
        # CACHE TABLE t AS <query> defines a temporary view named t.
        ctx.temp_views[node.this.name.lower()] = query_relation(node.expression, ctx)
    elif isinstance(node, exp.Select) and node.args.get("into"):
        # T-SQL/Postgres create a table this way, PL/SQL and procedures set variables: not analysed.
        into = node.args["into"].this
        ctx.info(f"SELECT ... INTO {into.sql(dialect='spark') if into else '?'}: variables or a new table, "
                 "not analysed: no lineage")
    elif isinstance(node, exp.Query):
        ctx.info("SELECT without a target table: no lineage")
    elif isinstance(node, exp.Command):
        # sqlglot keeps statements it cannot parse fully as opaque commands ("ADD JAR", "MSCK REPAIR").
        name = " ".join(node.name.upper().split())
        if name.split(" ")[0] not in _HARMLESS_COMMANDS:
            ctx.warn(f"{name} statement kept by sqlglot as an opaque command: not analysed, no lineage")
    elif isinstance(node, (exp.Condition, exp.Alias, exp.Identifier)) and _first_word(node) not in _HARMLESS_COMMANDS:
        # sqlglot reads a lone expression as a statement: ``INSRT t`` is the column INSRT aliased t.
        raise NotAStatement(f"not a SQL statement: {node.sql(dialect='spark')[:80]!r} (a misspelt keyword?)")
    return []


class NotAStatement(ValueError):
    """The text parsed, but as an expression, not as a statement."""


def _first_word(node: exp.Expression) -> str:
    words = node.sql(dialect="spark").split(maxsplit=1)
    return words[0].upper() if words else ""


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
    verb: str = "write"  # "INSERT into", "UPDATE of"... for messages
    view: bool = False  # CREATE VIEW: the target stores no rows

    def describe(self) -> str:
        return f"{self.verb} {self.dataset}"


def _table_name(table: exp.Expression) -> str:
    return ".".join(part for part in (table.catalog, table.db, table.name) if part)


def _insert(node: exp.Insert, ctx: QueryContext, ctes: dict[str, Relation] | None = None) -> Write | None:
    """``INSERT INTO|OVERWRITE [TABLE] t [PARTITION (...)] [(cols)] <query>``."""
    table, explicit = node.this, None
    if isinstance(table, exp.Schema):
        table, explicit = table.this, [i.name.lower() for i in table.expressions]
    if isinstance(table, exp.Directory):
        ctx.warn("INSERT OVERWRITE DIRECTORY writes files that are no catalogued table: no lineage")
        return None
    if not isinstance(table, exp.Table):
        return None
    dataset = ctx.dataset_id(table)
    if not isinstance(node.expression, exp.Query):
        schema = explicit or ctx.schemas.get(dataset) or []
        return Write(dataset, [], frozenset(), frozenset(), list(schema), "INSERT of constant VALUES into")
    query = query_relation(node.expression, ctx, with_ctes(node, ctx, ctes or {}))
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
    for column, how in ctx.generated.get(dataset, {}).items():
        if column not in names:  # filled by the table, one value per row inserted
            columns.append((column, per_row_key(columns, f"{how}, one per row")))
    return Write(dataset, columns, query.inputs, query.indirect, schema, "INSERT into")


def _with_source(node: exp.MultitableInserts) -> list[exp.Insert]:
    """Hive's ``FROM s INSERT ... SELECT ... INSERT ... SELECT ...``: each SELECT reads ``s``."""
    inserts = []
    for insert in node.expressions:
        insert = insert.copy()
        if isinstance(insert.expression, exp.Select) and not insert.expression.args.get("from_"):
            insert.expression.set("from_", exp.From(this=node.args["source"].copy()))
        inserts.append(insert)
    return inserts


def _conditional_inserts(node: exp.MultitableInserts, ctx: QueryContext, ctes: dict[str, Relation]) -> list[Write]:
    """Oracle's and Snowflake's ``INSERT ALL|FIRST [WHEN c THEN] INTO t [(cols)] [VALUES (...)] ...
    <query>``: each INTO reads the query's columns; its WHEN condition (and, for FIRST, the
    conditions before it, which it must fail) decides which rows it gets: FILTER influences."""
    source = query_relation(node.args["source"], ctx, ctes)
    first = (node.args.get("kind") or "").upper() == "FIRST"
    writes, earlier = [], []
    for branch in node.expressions:
        insert = branch.this if isinstance(branch, exp.ConditionalInsert) else branch
        condition = branch.args.get("expression") if isinstance(branch, exp.ConditionalInsert) else None
        table, explicit = insert.this, None
        if isinstance(table, exp.Schema):
            table, explicit = table.this, [i.name.lower() for i in table.expressions]
        if not isinstance(table, exp.Table):
            continue
        scope = Scope(ctx, ctes)
        scope.add_source("", source)
        for decider in (earlier if first else []) + ([condition] if condition is not None else []):
            scope.influence(decider, EdgeSubtype.FILTER)
        if condition is not None:
            earlier.append(condition)
        values = insert.expression
        if isinstance(values, exp.Values) and values.expressions:
            row = values.expressions[0]
            lineages = [scope.lineage_of(v) for v in (row.expressions if isinstance(row, exp.Tuple) else [row])]
            outputs = [(_value_name(v), lineage) for v, lineage in zip(getattr(row, "expressions", [row]), lineages)]
        else:
            outputs = list(source.columns)
        dataset = ctx.dataset_id(table)
        known = ctx.schemas.get(dataset)
        names = explicit or (known if known and len(known) == len(outputs) else [name for name, _ in outputs])
        ctx.schemas.setdefault(dataset, list(names))
        columns = [(name, lineage) for name, (_, lineage) in zip(names, outputs)]
        writes.append(Write(dataset, columns, frozenset(scope.inputs), frozenset(scope.indirect), list(names),
                            "INSERT into"))
    return writes


def _value_name(value: exp.Expression) -> str:
    return (value.alias_or_name or value.sql(dialect="spark")).lower()


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
    return Write(dataset, columns, query.inputs, query.indirect, list(names), f"CREATE {kind}", view=kind == "VIEW")


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
    schema = node.this if isinstance(node.this, exp.Schema) else None
    generated = {c.name.lower(): "GENERATED AS IDENTITY" for c in (schema.expressions if schema else [])
                 if isinstance(c, exp.ColumnDef) and c.find(exp.GeneratedAsIdentityColumnConstraint)}
    if generated and (not node.args.get("exists") or dataset not in ctx.generated):
        ctx.generated[dataset] = generated


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
    return Write(dataset, columns, inputs, frozenset(scope.indirect | source_scope.indirect), schema, "MERGE into")


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


# ---- UPDATE and DELETE ----------------------------------------------------------------------------


def _update(node: exp.Update, ctx: QueryContext) -> Write | None:
    """``UPDATE t [AS x] SET c = <expr>, (a, b) = (<query>) [FROM s [JOIN ...]] [WHERE ...]``
    (Postgres, Snowflake, T-SQL's ``UPDATE x SET ... FROM t AS x JOIN s``, MySQL's
    ``UPDATE t JOIN s ON ... SET``, Spark/Delta's plain UPDATE).

    As for MERGE, the target's own columns carry nothing new: values come from the other tables
    and from subqueries; the WHERE (FILTER) and join conditions (JOIN) decide which rows change."""
    if not isinstance(node.this, exp.Table):
        return None
    from_ = node.args.get("from_")
    scope, dataset = _dml_scope(node, node.this, [from_.this] if from_ else [], ctx)
    known = ctx.schemas.get(dataset)
    columns: Assignments = []
    for assignment in node.expressions:
        if not isinstance(assignment, exp.EQ):
            continue
        targets, value = assignment.this, assignment.expression
        if isinstance(targets, (exp.Tuple, exp.Paren)):
            names = [c.name.lower() for c in (targets.expressions if isinstance(targets, exp.Tuple) else [targets.this])]
            columns += zip(names, _row_values(value, len(names), scope))
        else:
            columns.append((targets.name.lower(), scope.lineage_of(value)))
    if node.args.get("where"):
        scope.influence(node.args["where"].this, EdgeSubtype.FILTER)
    schema = list(known) if known else list(dict.fromkeys(name for name, _ in columns))
    return Write(dataset, columns, frozenset(scope.inputs), frozenset(scope.indirect), schema, "UPDATE of")


def _row_values(value: exp.Expression, count: int, scope: Scope) -> list[ColumnLineage]:
    """``(a, b) = (SELECT x, y ...)`` or ``(a, b) = (x, y)``: one lineage per target column."""
    if isinstance(value, (exp.Subquery, exp.Query)):
        relation = scope.subquery(value)
        # A row subquery gives one row per target row: its columns are values, not per-row expressions.
        lineages = [ColumnLineage(lineage.flows, None) for _, lineage in relation.columns]
    elif isinstance(value, exp.Tuple):
        lineages = [scope.lineage_of(item) for item in value.expressions]
    else:
        lineages = [scope.lineage_of(value)]
    return (lineages + [ColumnLineage()] * count)[:count]


def _delete(node: exp.Delete, ctx: QueryContext) -> Write | None:
    """``DELETE FROM t [USING s, ...] [WHERE ...]`` and T-SQL/MySQL's ``DELETE x FROM t x JOIN s``.

    No value is written: every column of another table that decides which rows go (the WHERE,
    the join conditions) is a dataset-level FILTER/JOIN influence on ``t``."""
    if not isinstance(node.this, exp.Table):
        return None
    scope, dataset = _dml_scope(node, node.this, list(node.args.get("using") or []), ctx)
    if node.args.get("where"):
        scope.influence(node.args["where"].this, EdgeSubtype.FILTER)
    schema = list(ctx.schemas.get(dataset) or [])
    return Write(dataset, [], frozenset(scope.inputs), frozenset(scope.indirect), schema, "DELETE from")


def _dml_scope(
    node: exp.Expression, this: exp.Table, items: list[exp.Expression], ctx: QueryContext
) -> tuple[Scope, str]:
    """The scope of an UPDATE or DELETE and the dataset it changes.

    The target is ``this``, unless its name is the alias of a table in the FROM/USING items
    (T-SQL's ``UPDATE x ... FROM t AS x``; ``DELETE x FROM t x JOIN s``, whose ``tables`` name
    it). The target, under each of its names, is opaque: only the other tables carry lineage."""
    named = node.args.get("tables") or []
    wanted = named[0].name.lower() if named else (this.name.lower() if not this.db else None)
    target = this
    if wanted:
        for table in [this, *items]:
            for candidate in [table, *(j.this for j in table.args.get("joins") or [])]:
                if isinstance(candidate, exp.Table) and candidate.alias and candidate.alias.lower() == wanted:
                    target = candidate
    dataset = ctx.dataset_id(target)
    known = ctx.schemas.get(dataset)
    scope = Scope(ctx, with_ctes(node, ctx, {}))
    aliases = {target.alias_or_name.lower(), target.name.lower()}
    scope.target = (dataset, aliases, OpaqueRelation(dataset, list(known) if known else None))
    if target is this or this.args.get("joins"):
        scope.add_joined(this)
    for item in items:
        scope.add_joined(item)
    return scope, dataset
