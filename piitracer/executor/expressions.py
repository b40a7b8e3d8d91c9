"""A computed key's expression is evaluated by Spark on the source rows (``F.expr``). The planner
only ever writes deterministic expressions over one source column, but a plan file can be edited:
before a run, each expression must still be exactly that — one scalar expression over the value
set's own source column, no subquery, no table, and none of Spark's functions that reach outside
the row (``reflect``/``java_method`` call arbitrary Java methods)."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

DIALECT = "spark"
REFUSED_FUNCTIONS = frozenset({
    "REFLECT", "JAVA_METHOD", "TRY_REFLECT", "RAISE_ERROR", "ASSERT_TRUE", "INPUT_FILE_NAME",
    "INPUT_FILE_BLOCK_START", "INPUT_FILE_BLOCK_LENGTH", "CURRENT_USER", "USER", "SESSION_USER",
    "CURRENT_CATALOG", "CURRENT_DATABASE", "CURRENT_SCHEMA", "RAND", "RANDN", "RANDOM", "UUID", "SHUFFLE",
    "CURRENT_TIMESTAMP", "CURRENT_DATE", "NOW", "MONOTONICALLY_INCREASING_ID", "SPARK_PARTITION_ID",
})


class ExpressionRefused(ValueError):
    """The expression is not one the planner writes; the message says why."""


def check_source_expression(expression: str, column: str) -> None:
    """Raise :class:`ExpressionRefused` unless ``expression`` is a plain scalar expression that
    reads exactly ``column`` and nothing outside the row."""
    try:
        tree = sqlglot.parse_one(expression, read=DIALECT)
    except sqlglot.errors.ParseError:
        raise ExpressionRefused("its expression does not parse") from None
    if isinstance(tree, (exp.Query, exp.Command)) or tree.find(exp.Subquery, exp.Select, exp.Table):
        raise ExpressionRefused("its expression is a query, not a scalar expression over the source row")
    if tree.find(exp.Window) or tree.find(exp.AggFunc):
        raise ExpressionRefused("its expression is a window or an aggregate")
    columns = {c.name.lower() for c in tree.find_all(exp.Column)}
    if columns != {column.lower()}:
        raise ExpressionRefused(f"its expression must read exactly the source column {column!r}")
    for node in tree.walk():
        name = str(node.this).upper() if isinstance(node, exp.Anonymous) else (
            node.sql_name().upper() if isinstance(node, exp.Func) else None)
        if name in REFUSED_FUNCTIONS:
            raise ExpressionRefused(f"its expression calls {name}, which reaches outside the row")
