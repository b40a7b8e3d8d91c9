"""Column lineage from SQL files (Spark SQL by default): INSERT, CTAS, CREATE VIEW, MERGE.

Each file is split into statements (:mod:`piitracer.ingest.sql_statements`: on semicolon tokens,
with procedure and script blocks opened up) and parsed one statement at a time, so a statement
sqlglot cannot parse is reported (with its line) and the file goes on.
Statements that write a dataset give typed column edges (see :mod:`piitracer.ingest.sql_scope`
for how queries are resolved), one FLOW dataset edge per table read and the target's columns.
``USE db`` and temporary views hold for the rest of their file; the columns learnt from a
statement's target hold for every later statement and file of the same ingest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError

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
from piitracer.ingest.source_files import display_path, files_under
from piitracer.ingest.sql_statements import split_statements
from piitracer.model.lineage import (
    DIRECT_SUBTYPES,
    ColumnEdge,
    DatasetEdge,
    DatasetFacts,
    DatasetRelation,
    EdgeKind,
    EdgeSubtype,
    IngestProblem,
    LineageBatch,
    Origin,
    OriginKind,
    ProblemSeverity,
)
from piitracer.model.naming import DatasetNamer

_MAX_REASON = 200
_WRITING_KEYWORDS = frozenset({"INSERT", "MERGE", "CREATE", "REPLACE", "WITH", "FROM"})


def ingest_sql_text(
    text: str,
    *,
    file: str,
    namer: DatasetNamer,
    schemas: Mapping[str, Sequence[str]] | None = None,
    dialect: str = "spark",
) -> LineageBatch:
    """Lineage of the statements of one SQL text, reported as coming from ``file``.

    ``schemas`` maps canonical dataset ids to ordered column names; it is read, never changed.
    Never raises: unreadable statements become problems of the batch.
    """
    return _sorted(_ingest_text(text, file, namer, _copy(schemas), dialect))


def ingest_sql_paths(
    paths: Sequence[Path],
    *,
    namer: DatasetNamer,
    schemas: Mapping[str, Sequence[str]] | None = None,
    dialect: str = "spark",
    display_root: Path | None = None,
) -> LineageBatch:
    """Lineage of SQL files and of every ``*.sql`` under folders, in path order.

    A file's origin is its path relative to ``display_root`` when given. A file that cannot be
    read is one ERROR problem; the others are still ingested. Columns learnt from one file's
    targets are known to the files after it.
    """
    known = _copy(schemas)
    batch = LineageBatch()
    for path in files_under(paths, [".sql"]):
        shown = display_path(path, display_root)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            origin = Origin(kind=OriginKind.SQL, file=shown)
            problem = IngestProblem(origin=origin, reason=_one_line(f"cannot read file: {error}"))
            batch = batch.merged(LineageBatch(problems=(problem,)))
            continue
        batch = batch.merged(_ingest_text(text, shown, namer, known, dialect))
    return _sorted(batch)


# ---- files and statements -----------------------------------------------------------------------


def _copy(schemas: Mapping[str, Sequence[str]] | None) -> dict[str, list[str]]:
    return {dataset: [c.lower() for c in columns] for dataset, columns in (schemas or {}).items()}


def _one_line(message: str) -> str:
    # sqlglot puts token reprs and the highlighted SQL into its messages: keep the gist.
    message = re.sub(r"<Token token_type: TokenType\.SENTINEL[^>]*>", "end of statement", message)
    message = re.sub(r"<Token token_type: [^,]*, text: (.*?), line: [^>]*>", r"'\1'", message)
    message = " ".join(message.split())
    return message if len(message) <= _MAX_REASON else message[: _MAX_REASON - 3] + "..."


def _parse_error(error: SqlglotError) -> str:
    details = getattr(error, "errors", None)
    if details:
        first = details[0]
        where = f"line {first.get('line')}, col {first.get('col')}"
        return _one_line(f"cannot parse statement: {first.get('description')} ({where})")
    return _one_line(f"cannot parse statement: {error or type(error).__name__}")


# ---- one file -------------------------------------------------------------------------------------


class _FileIngest:
    """State of one file: the default database, temp views, and what was found so far."""

    def __init__(self, file: str, namer: DatasetNamer, schemas: dict[str, list[str]], dialect: Dialect):
        self.file = file
        self.dialect = dialect
        self.ctx = QueryContext(namer=namer, schemas=schemas)
        self.edges: set[ColumnEdge] = set()
        self.dataset_edges: set[DatasetEdge] = set()
        self.facts: set[DatasetFacts] = set()
        self.problems: list[IngestProblem] = []
        self.units = 0

    def run(self, text: str) -> LineageBatch:
        for statement in split_statements(text, self.dialect):
            self.units += 1
            origin = Origin(kind=OriginKind.SQL, file=self.file, line=statement.line)
            if statement.problem:
                severity, reason = statement.problem
                self._problem(origin, _one_line(reason), severity)
                continue
            try:
                nodes = self.dialect.parser().parse(statement.tokens, statement.sql)
            except SqlglotError as error:
                self._problem(origin, _parse_error(error))
                continue
            except RecursionError:  # sqlglot's parser recurses per nesting level
                self._problem(origin, "cannot parse statement: nested deeper than the parser's limit (about 1,000 levels)")
                continue
            for node in nodes:
                if node is not None:
                    self._ingest(node, origin)
        return LineageBatch(
            column_edges=tuple(self.edges),
            dataset_edges=tuple(self.dataset_edges),
            datasets=tuple(self.facts),
            problems=tuple(self.problems),
            units_read=self.units,
        )

    def _problem(self, origin: Origin, reason: str, severity: ProblemSeverity = ProblemSeverity.ERROR) -> None:
        self.problems.append(IngestProblem(severity=severity, origin=origin, reason=reason))

    def _ingest(self, node: exp.Expression, origin: Origin) -> None:
        self.ctx.warnings = []
        try:
            writes = self._writes_of(node)
        except (SqlglotError, ValueError, KeyError, AttributeError, TypeError, IndexError, RecursionError) as error:
            # An AST shape this module does not expect must not stop the rest of the ingest.
            self._problem(origin, _one_line(f"cannot derive lineage: {type(error).__name__}: {error}"))
            return
        for warning in self.ctx.warnings:
            self._problem(origin, warning, ProblemSeverity.WARNING)
        for write in writes:
            if write is not None:
                self._emit(write, origin)

    def _writes_of(self, node: exp.Expression) -> list[_Write | None]:
        if isinstance(node, exp.Use):
            if not (node.args.get("kind") and node.args["kind"].name.upper() == "CATALOG"):
                self.ctx.default_database = _table_name(node.this)
        elif isinstance(node, exp.Insert):
            return [_insert(node, self.ctx)]
        elif isinstance(node, exp.MultitableInserts):
            return [_insert(insert, self.ctx) for insert in _with_source(node)]
        elif isinstance(node, exp.Create):
            return [_create(node, self.ctx)]
        elif isinstance(node, exp.Merge):
            return [_merge(node, self.ctx)]
        elif isinstance(node, exp.Command) and node.name.upper() in _WRITING_KEYWORDS:
            # sqlglot keeps statements it cannot parse fully as opaque commands.
            self.ctx.warn(f"{node.name.upper()} statement not understood by sqlglot: no lineage")
        elif isinstance(node, exp.Cache) and isinstance(node.expression, exp.Query):
            # CACHE TABLE t AS <query> defines a temporary view named t.
            self.ctx.temp_views[node.this.name.lower()] = query_relation(node.expression, self.ctx)
        return []

    def _emit(self, write: _Write, origin: Origin) -> None:
        for column, lineage in write.columns:
            for flow in lineage.flows:
                direct = flow.subtype in DIRECT_SUBTYPES
                self.edges.add(
                    ColumnEdge(
                        source=flow.source,
                        target_dataset=write.dataset,
                        target_column=column,
                        kind=EdgeKind.DIRECT if direct else EdgeKind.INDIRECT,
                        subtype=flow.subtype,
                        masking=flow.masking,
                        expression=flow.expression if flow.subtype is EdgeSubtype.TRANSFORMATION else None,
                        origin=origin,
                    )
                )
        for source, subtype in write.indirect:
            self.edges.add(
                ColumnEdge(
                    source=source,
                    target_dataset=write.dataset,
                    target_column=None,
                    kind=EdgeKind.INDIRECT,
                    subtype=subtype,
                    origin=origin,
                )
            )
        for dataset in write.inputs:
            flow = DatasetEdge(source=dataset, target=write.dataset, relation=DatasetRelation.FLOW, origin=origin)
            self.dataset_edges.add(flow)
        self.facts.add(DatasetFacts(dataset=write.dataset, columns=tuple(write.schema), origin=origin))


def _ingest_text(
    text: str, file: str, namer: DatasetNamer, schemas: dict[str, list[str]], dialect: str
) -> LineageBatch:
    try:
        reader = Dialect.get_or_raise(dialect)
    except ValueError as error:
        problem = IngestProblem(origin=Origin(kind=OriginKind.SQL, file=file), reason=_one_line(str(error)))
        return LineageBatch(problems=(problem,))
    return _FileIngest(file, namer, schemas, reader).run(text)


def _sorted(batch: LineageBatch) -> LineageBatch:
    def origin_key(origin: Origin) -> tuple:
        return (origin.file, origin.line or 0)

    def dataset_edge_key(edge: DatasetEdge) -> tuple:
        return (edge.source, edge.target, edge.relation.value, *origin_key(edge.origin))

    def facts_key(facts: DatasetFacts) -> tuple:
        return (facts.dataset, *origin_key(facts.origin), facts.columns)

    return LineageBatch(
        column_edges=tuple(sorted(batch.column_edges, key=ColumnEdge.sort_key)),
        dataset_edges=tuple(sorted(batch.dataset_edges, key=dataset_edge_key)),
        datasets=tuple(sorted(batch.datasets, key=facts_key)),
        problems=batch.problems,
        units_read=batch.units_read,
    )


# ---- statements that write ------------------------------------------------------------------------


Assignments = list[tuple[str, ColumnLineage]]  # (target column, its lineage)


@dataclass
class _Write:
    """What one statement writes: target columns with their lineage, and what it read."""

    dataset: str
    columns: Assignments
    inputs: frozenset[str]
    indirect: frozenset[Influence]
    schema: list[str]  # the target's columns, as this statement tells them


def _table_name(table: exp.Expression) -> str:
    return ".".join(part for part in (table.catalog, table.db, table.name) if part)


def _insert(node: exp.Insert, ctx: QueryContext) -> _Write | None:
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
    return _Write(dataset, columns, query.inputs, query.indirect, schema)


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


def _create(node: exp.Create, ctx: QueryContext) -> _Write | None:
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
    return _Write(dataset, columns, query.inputs, query.indirect, list(names))


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


def _merge(node: exp.Merge, ctx: QueryContext) -> _Write:
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
    return _Write(dataset, columns, inputs, frozenset(scope.indirect | source_scope.indirect), schema)


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
