"""Column lineage from SQL files (Spark SQL by default): files in, a :class:`LineageBatch` out.

Each file is split into statements (:mod:`piitracer.ingest.sql.statements`: on semicolon tokens,
with procedure and script blocks opened up) and parsed one statement at a time, so a statement
sqlglot cannot parse is reported (with its line) and the file goes on.
Statements that write a dataset (:mod:`piitracer.ingest.sql.writes`; queries are resolved by
:mod:`piitracer.ingest.sql.scope`) give typed column edges, one FLOW dataset edge per table read
and the target's columns.
``USE db`` and temporary views hold for the rest of their file; the columns learnt from a
statement's target hold for every later statement and file of the same ingest.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Mapping, Sequence

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError

from piitracer.ingest.source_files import display_path, files_under
from piitracer.ingest.sql.context import QueryContext
from piitracer.ingest.sql.statements import split_statements
from piitracer.ingest.sql.writes import NotAStatement, Write, writes_of
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
from piitracer.ingest.sql.batches import copy_schemas, sorted_batch  # noqa: F401 (used here and by callers)

_MAX_REASON = 200
# Edges that keep their expression: a transform's (evaluated by the resolve step), a surrogate
# key's and a ranking's (shown, never evaluated).
_WITH_EXPRESSION = frozenset({EdgeSubtype.TRANSFORMATION, EdgeSubtype.SURROGATE, EdgeSubtype.WINDOW})


class _CommandFallbackFilter(logging.Filter):
    """Drops sqlglot's "falling back to parsing as a 'Command'" log lines: the ingest reports such
    a statement itself, with its file and line, so the log line would only repeat it without them."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Falling back to parsing as a 'Command'" not in record.getMessage()


logging.getLogger("sqlglot").addFilter(_CommandFallbackFilter())


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
    return sorted_batch(_ingest_text(text, file, namer, copy_schemas(schemas), dialect))


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
    known = copy_schemas(schemas)
    batch = LineageBatch()
    for path in files_under(paths, [".sql"]):
        batch = batch.merged(ingest_sql_file(path, namer=namer, known=known, dialect=dialect, display_root=display_root))
    return sorted_batch(batch)


def ingest_sql_file(
    path: Path,
    *,
    namer: DatasetNamer,
    known: dict[str, list[str]],
    dialect: str = "spark",
    display_root: Path | None = None,
) -> LineageBatch:
    """Lineage of one SQL file. ``known`` (dataset id -> lower-case columns) is read and updated
    with the columns of the tables the file creates, for the files after it. A file that cannot be
    read is one ERROR problem."""
    shown = display_path(path, display_root)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        origin = Origin(kind=OriginKind.SQL, file=shown)
        return LineageBatch(problems=(IngestProblem(origin=origin, reason=_one_line(f"cannot read file: {error}")),))
    return _ingest_text(text, shown, namer, known, dialect)


# ---- files and statements -----------------------------------------------------------------------


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
        self.ctx.warnings, self.ctx.infos = [], []
        try:
            writes = writes_of(node, self.ctx)
        except NotAStatement as error:
            self._problem(origin, _one_line(str(error)))
            return
        except (SqlglotError, ValueError, KeyError, AttributeError, TypeError, IndexError, RecursionError) as error:
            # An AST shape this module does not expect must not stop the rest of the ingest.
            self._problem(origin, _one_line(f"cannot derive lineage: {type(error).__name__}: {error}"))
            return
        for warning in self.ctx.warnings:
            self._problem(origin, _one_line(warning), ProblemSeverity.WARNING)
        for info in self.ctx.infos:
            self._problem(origin, _one_line(info), ProblemSeverity.INFO)
        for write in writes:
            if not self._emit(write, origin) and not self.ctx.warnings:
                # A write without column lineage is always said; when no warning explains it, the
                # statement carries no column value (constants, VALUES, a DELETE on its own columns).
                self._problem(origin, _one_line(f"{write.describe()}: no column lineage ({_why(write)})"),
                              ProblemSeverity.INFO)

    def _emit(self, write: Write, origin: Origin) -> bool:
        """Add the edges of one write; whether it had any column lineage."""
        before = len(self.edges)
        column_edges = {
            ColumnEdge(
                source=flow.source,
                target_dataset=write.dataset,
                target_column=column,
                kind=EdgeKind.DIRECT if flow.subtype in DIRECT_SUBTYPES else EdgeKind.INDIRECT,
                subtype=flow.subtype,
                masking=flow.masking,
                expression=flow.expression if flow.subtype in _WITH_EXPRESSION else None,
                join_equality=flow.join_equality,
                origin=origin,
            )
            for column, lineage in write.columns
            for flow in lineage.flows
        }
        # A join-equality edge is only worth having where the plain lineage lacks it (two UNION
        # branches, or two assignments of one MERGE column, may give the same edge both ways).
        plain = {_plain_key(edge) for edge in column_edges if edge.join_equality is None}
        self.edges |= {edge for edge in column_edges if edge.join_equality is None or _plain_key(edge) not in plain}
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
        self.facts.add(DatasetFacts(dataset=write.dataset, columns=tuple(write.schema), origin=origin, view=write.view))
        return bool(write.indirect) or any(lineage.flows for _, lineage in write.columns) or len(self.edges) > before


def _plain_key(edge: ColumnEdge) -> tuple:
    return edge.source, edge.target_column, edge.subtype, edge.masking, edge.expression


def _why(write: Write) -> str:
    others = sorted(write.inputs - {write.dataset})
    if not others:
        return "it reads no other table"
    return f"no column of {', '.join(others)} reaches it"


def _ingest_text(
    text: str, file: str, namer: DatasetNamer, schemas: dict[str, list[str]], dialect: str
) -> LineageBatch:
    try:
        reader = Dialect.get_or_raise(dialect)
    except ValueError as error:
        problem = IngestProblem(origin=Origin(kind=OriginKind.SQL, file=file), reason=_one_line(str(error)))
        return LineageBatch(problems=(problem,))
    return _FileIngest(file, namer, schemas, reader).run(text)
