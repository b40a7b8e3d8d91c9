"""Composing transform expressions along a lineage path with sqlglot.

A DIRECT TRANSFORMATION edge learnt from SQL keeps its expression over the input column, e.g.
``SHA2(phone_norm, 256)``; the upstream edge says ``phone_norm = LOWER(TRIM(phone))``. The resolve
step must evaluate ``SHA2(LOWER(TRIM(phone)), 256)`` on the source rows so the value matches what
the pipeline wrote. Only deterministic, single-input expressions can be composed.
"""

from __future__ import annotations

from functools import lru_cache

import sqlglot
from sqlglot import exp

DIALECT = "spark"
# Functions whose result is not a function of the row: a key built with them cannot be recomputed.
NON_DETERMINISTIC = frozenset(
    {"RAND", "RANDN", "RANDOM", "UUID", "CURRENT_TIMESTAMP", "CURRENT_DATE", "NOW", "SHUFFLE",
     "MONOTONICALLY_INCREASING_ID", "SPARK_PARTITION_ID", "INPUT_FILE_NAME", "UNIX_TIMESTAMP"}
)


class NotComposable(ValueError):
    """The expression cannot be evaluated on the source rows; the message says why."""


@lru_cache(maxsize=4096)
def _parse(expression: str) -> exp.Expression:
    try:
        return sqlglot.parse_one(expression, read=DIALECT)
    except sqlglot.errors.ParseError as error:
        raise NotComposable(f"expression {expression!r} does not parse: {error}") from None


def _function_names(tree: exp.Expression) -> set[str]:
    names = set()
    for node in tree.walk():
        if isinstance(node, exp.Anonymous):
            names.add(str(node.this).upper())
        elif isinstance(node, exp.Func):
            names.add(node.sql_name().upper())
    return names


def compose(expression: str, input_column: str, upstream: str) -> str:
    """``expression`` (over ``input_column``) with ``upstream`` substituted for that column.

    Raises :class:`NotComposable` when the expression reads another column too, contains a window
    or aggregate, or uses a non-deterministic function.

    Examples:
        >>> compose("SHA2(phone_norm, 256)", "phone_norm", "LOWER(TRIM(phone))")
        'SHA2(LOWER(TRIM(phone)), 256)'
        >>> compose("amount * fx_rate", "amount", "amount")
        Traceback (most recent call last):
        piitracer.planner.expressions.NotComposable: expression 'amount * fx_rate' also reads ['fx_rate']
        >>> compose("rand() * user_id", "user_id", "user_id")
        Traceback (most recent call last):
        piitracer.planner.expressions.NotComposable: expression 'rand() * user_id' is not deterministic (RAND)
    """
    tree = _parse(expression)
    columns = {c.name.lower() for c in tree.find_all(exp.Column)}
    if columns != {input_column.lower()}:
        others = sorted(columns - {input_column.lower()})
        raise NotComposable(f"expression {expression!r} also reads {others}" if others else
                            f"expression {expression!r} does not read {input_column!r}")
    if tree.find(exp.Window) or tree.find(exp.AggFunc):
        raise NotComposable(f"expression {expression!r} is a window or an aggregate")
    bad = _function_names(tree) & NON_DETERMINISTIC
    if bad:
        raise NotComposable(f"expression {expression!r} is not deterministic ({', '.join(sorted(bad))})")
    replacement = _parse(upstream)

    def substitute(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and node.name.lower() == input_column.lower():
            return replacement.copy()
        return node

    return tree.copy().transform(substitute).sql(dialect=DIALECT)


def column_expression(column: str) -> str:
    """The expression that reads a source column as it is.

    Examples:
        >>> column_expression("user_id"), column_expression("user id")
        ('user_id', '`user id`')
    """
    return exp.column(column, quoted=not column.isidentifier()).sql(dialect=DIALECT)


# Functions that build a surrogate key from the key and other columns; a top-level cast or
# coalesce around them changes nothing.
_SURROGATE_ROOTS = frozenset({"MD5", "SHA", "SHA1", "SHA2", "HASH", "XXHASH64", "CRC32", "CONCAT", "CONCAT_WS",
                              "DPIPE", "MD5DIGEST", "SHA1DIGEST", "SHA2DIGEST"})
_WRAPPERS = (exp.Cast, exp.Coalesce, exp.Paren, exp.Upper, exp.Lower)


def surrogate_function(expression: str, input_column: str) -> bool:
    """Whether ``expression`` is a deterministic hash or concatenation that reads ``input_column``
    with other columns (``md5(concat(customer_id, '-', source_system))``): a key assigned per
    value of the column, which only a dataset holding both can map (a surrogate key). One that
    reads the column alone is a computed key instead (:func:`compose`)."""
    try:
        tree = _parse(expression)
    except NotComposable:
        return False
    root = tree
    while isinstance(root, _WRAPPERS) and isinstance(root.this, exp.Expression):
        root = root.this
    name = str(root.this).upper() if isinstance(root, exp.Anonymous) else (
        root.sql_name().upper() if isinstance(root, exp.Func) else root.key.upper())
    if name not in _SURROGATE_ROOTS:
        return False
    if tree.find(exp.Window) or tree.find(exp.AggFunc) or tree.find(exp.Subquery, exp.Select):
        return False
    if _function_names(tree) & NON_DETERMINISTIC:
        return False
    columns = {c.name.lower() for c in tree.find_all(exp.Column)}
    return input_column.lower() in columns
