"""Expression helpers of the SQL scope resolver (:mod:`~piitracer.ingest.sql.scope`): how a
column reference feeds the expression around it (IDENTITY, TRANSFORMATION, AGGREGATION, a
CONDITIONAL or WINDOW influence, masked by a hash), composing a flow one more hop, rankings and
sequences as surrogate keys, and merging the lineage of one column fed from several places.
Pure functions of sqlglot expressions and :mod:`~piitracer.ingest.sql.relations` values."""

from __future__ import annotations

from typing import Callable, Iterable

from sqlglot import exp

from piitracer.ingest.sql.relations import ColumnLineage, Flow
from piitracer.model.lineage import EdgeSubtype


DIALECT = "spark"  # expressions are always printed in Spark SQL, whatever dialect was read

_HASH_CLASSES = tuple(
    getattr(exp, name) for name in ("SHA", "SHA2", "MD5", "MD5Digest", "SHA1Digest", "SHA2Digest") if hasattr(exp, name)
)
_HASH_NAMES = frozenset({"SHA", "SHA1", "SHA2", "MD5", "HASH", "XXHASH64", "CRC32"})
_NONDETERMINISTIC_CLASSES = tuple(
    getattr(exp, name)
    for name in ("Rand", "Randn", "Uuid", "CurrentTimestamp", "CurrentDate")
    if hasattr(exp, name)
)
_NONDETERMINISTIC_NAMES = frozenset(
    {"RAND", "RANDN", "RANDOM", "UUID", "CURRENT_TIMESTAMP", "CURRENT_DATE", "NOW", "MONOTONICALLY_INCREASING_ID"}
)
# Window functions that pick a value of another row: sqlglot files them under AggFunc, but the
# value is carried, not aggregated.
_WINDOW_VALUE_FUNCTIONS = (exp.Lag, exp.Lead, exp.FirstValue, exp.LastValue, exp.NthValue)
# Generators: one input row gives several output rows, so no per-row expression exists.
_GENERATORS = (exp.Explode, exp.Inline, exp.Unnest)
_COLUMN_INFLUENCES = frozenset({EdgeSubtype.CONDITIONAL, EdgeSubtype.WINDOW})
FLATTEN_COLUMNS = ("seq", "key", "path", "index", "value", "this")
VALUE_ROLES = frozenset({EdgeSubtype.IDENTITY, EdgeSubtype.TRANSFORMATION})  # what a join equality carries
# Rankings number rows by their window's order: ordered by a person's key (and not restarted per
# partition), the number is assigned per key value, a surrogate key of the person.
RANKINGS = (exp.RowNumber, exp.Rank, exp.DenseRank)
# What a surrogate key can be assigned from: the key's value itself, or another surrogate of it.
_KEY_ROLES = frozenset({EdgeSubtype.IDENTITY, EdgeSubtype.TRANSFORMATION, EdgeSubtype.SURROGATE})
# A number (or id) drawn once per row written: a sequence, Spark's row id, a random UUID.
_SEQUENCE_NAMES = frozenset({"NEXTVAL", "MONOTONICALLY_INCREASING_ID", "UUID", "SEQ8", "SEQ4"})


def is_sequence(node: exp.Expression) -> bool:
    """Whether ``node`` draws a new value per row: ``nextval('s')``, Snowflake's ``s.nextval``,
    ``monotonically_increasing_id()``, ``uuid()``."""
    if isinstance(node, exp.Column) and node.name.upper() == "NEXTVAL" and node.table:
        return True
    if hasattr(exp, "Uuid") and isinstance(node, exp.Uuid):
        return True
    return _function_name(node) in _SEQUENCE_NAMES


def per_row_key(columns: list[tuple[str, ColumnLineage]], how: str) -> ColumnLineage:
    """A key drawn once per row written: a surrogate key of every column the row copies as it is
    (its natural key among them), which only the written table maps back."""
    keys = {f.source for _, lineage in columns for f in lineage.flows
            if f.subtype is EdgeSubtype.IDENTITY and f.join_equality is None}
    return ColumnLineage(frozenset(Flow(source, EdgeSubtype.SURROGATE, expression=how) for source in keys))


def reads_column(expression: exp.Expression, name: str) -> bool:
    return any(isinstance(c, exp.Column) and c.name.lower() == name for c in expression.walk())


def output_name(projection: exp.Expression) -> str:
    """The alias, the column name, or (as Spark does) the expression's text."""
    return (projection.alias_or_name or projection.sql(dialect=DIALECT)).lower()


def merge_branches(a: ColumnLineage, b: ColumnLineage) -> ColumnLineage:
    """One column fed by two branches: all flows; a value tree only if both agree."""
    same = a.tree is not None and b.tree is not None and a.tree == b.tree
    return ColumnLineage(a.flows | b.flows, a.tree if same else None)


def merged_using(*lineages: ColumnLineage) -> ColumnLineage:
    """The column of ``JOIN ... USING (c)``: equal on both sides, so every side's flows and the
    first side's value."""
    flows: frozenset[Flow] = frozenset().union(*(lineage.flows for lineage in lineages))
    return ColumnLineage(flows, lineages[0].tree if lineages else None)


def field_access(lineage: ColumnLineage, fields: list[str]) -> ColumnLineage:
    """``column.field[.field]``: a TRANSFORMATION of the column (its value is part of it)."""
    if not fields:
        return lineage

    def access(tree: exp.Expression | None) -> exp.Expression | None:
        if tree is None:
            return None
        for field_name in fields:
            tree = exp.Dot(this=tree.copy(), expression=exp.to_identifier(field_name))
        return tree

    flows = set()
    for flow in lineage.flows:
        if not flow.direct or flow.subtype is EdgeSubtype.AGGREGATION:
            flows.add(flow)
            continue
        tree = access(flow.tree)
        expression = tree.sql(dialect=DIALECT) if tree is not None else None
        flows.add(Flow(flow.source, EdgeSubtype.TRANSFORMATION, flow.masking, expression, tree, flow.join_equality))
    return ColumnLineage(frozenset(flows), access(lineage.tree))


# ---- expression helpers -------------------------------------------------------------------------


def unwrap(node: exp.Expression) -> exp.Expression:
    while isinstance(node, (exp.Alias, exp.Paren)):
        node = node.this
    return node


def expression_leaves(root: exp.Expression) -> list[exp.Expression]:
    """Column references and nested queries of an expression, in a stable order.

    Nested queries are leaves: their own columns belong to their own scope.
    """

    def nested(node: exp.Expression) -> bool:
        return isinstance(node, (exp.Subquery, exp.Query))

    return [
        node
        for node in root.walk(bfs=False, prune=nested)
        if (isinstance(node, exp.Column) and not isinstance(node.this, exp.Star)) or nested(node)
    ]


def substitute_leaves(
    root: exp.Expression, leaves: list[exp.Expression], trees: list[exp.Expression | None]
) -> exp.Expression | None:
    """``root`` with every leaf replaced by its tree (unqualified base columns)."""
    if any(tree is None for tree in trees):
        return None
    if len(leaves) == 1 and leaves[0] is root:
        return trees[0].copy()
    copy = root.copy()
    for leaf, tree in zip(expression_leaves(copy), trees):
        leaf.replace(tree.copy())
    return copy


def _ancestors(leaf: exp.Expression, root: exp.Expression) -> Iterable[tuple[exp.Expression, str]]:
    """(ancestor, arg key it was reached through), from the leaf up to ``root``."""
    child = leaf
    while child is not root and child.parent is not None:
        yield child.parent, child.arg_key
        child = child.parent


def leaf_role(leaf: exp.Expression, root: exp.Expression) -> EdgeSubtype:
    """How a leaf feeds the expression's value; the innermost condition or window wins."""
    aggregated = False
    for node, key in _ancestors(leaf, root):
        if isinstance(node, exp.Window) and key != "this":
            return EdgeSubtype.WINDOW
        if isinstance(node, (exp.If, exp.Case)) and key == "this":
            return EdgeSubtype.CONDITIONAL
        if isinstance(node, exp.Filter) and key == "expression":  # agg(x) FILTER (WHERE c)
            return EdgeSubtype.CONDITIONAL
        if _is_aggregate(node):
            aggregated = True
    if aggregated:
        return EdgeSubtype.AGGREGATION
    return EdgeSubtype.IDENTITY if leaf is root else EdgeSubtype.TRANSFORMATION


def _is_aggregate(node: exp.Expression) -> bool:
    return isinstance(node, exp.AggFunc) and not isinstance(node, _WINDOW_VALUE_FUNCTIONS)


def is_masked(leaf: exp.Expression, root: exp.Expression) -> bool:
    return any(_is_hash(node) for node, _ in _ancestors(leaf, root))


def _function_name(node: exp.Expression) -> str:
    return node.name.upper() if isinstance(node, exp.Anonymous) else ""


def _is_hash(node: exp.Expression) -> bool:
    return isinstance(node, _HASH_CLASSES) or _function_name(node) in _HASH_NAMES


def unrepeatable(root: exp.Expression) -> bool:
    """Whether the value cannot be recomputed from one row: aggregates, windows, generators,
    nested queries, non-deterministic functions."""
    return any(
        isinstance(node, (exp.AggFunc, exp.Window, exp.Subquery, exp.Query) + _GENERATORS + _NONDETERMINISTIC_CLASSES)
        or _function_name(node) in _NONDETERMINISTIC_NAMES
        for node in root.walk()
    )


def compose_flow(
    flow: Flow, role: EdgeSubtype, masked: bool, path_tree: Callable[[], exp.Expression | None]
) -> Flow | None:
    """One more hop: ``flow`` reaches a leaf that feeds the new column as ``role``. A join-equality
    flow that would stop being an IDENTITY or TRANSFORMATION is dropped (None): the column it was
    equated with gives the aggregate or the influence already."""
    if flow.join_equality and (role in _COLUMN_INFLUENCES or EdgeSubtype.AGGREGATION in (role, flow.subtype)):
        return None
    if role in _COLUMN_INFLUENCES:
        # Everything the leaf depends on influences the new column the way the leaf does.
        return Flow(flow.source, role)
    if not flow.direct or role is EdgeSubtype.IDENTITY:
        return flow
    if EdgeSubtype.AGGREGATION in (role, flow.subtype):
        return Flow(flow.source, EdgeSubtype.AGGREGATION, masked or flow.masking)
    tree = path_tree()
    expression = tree.sql(dialect=DIALECT) if tree is not None else None
    return Flow(flow.source, EdgeSubtype.TRANSFORMATION, masked or flow.masking, expression, tree, flow.join_equality)


def without_repeats(flows: set[Flow]) -> frozenset[Flow]:
    """Drop a join-equality flow that a plain flow already gives (``a JOIN a2 ON a.id = a2.id``)."""
    plain = {(f.source, f.subtype, f.masking, f.expression) for f in flows if f.join_equality is None}
    return frozenset(f for f in flows
                     if f.join_equality is None or (f.source, f.subtype, f.masking, f.expression) not in plain)


def ranking_flows(
    root: exp.Window, leaves: list[exp.Expression], resolved: list[ColumnLineage], flows: set[Flow]
) -> set[Flow]:
    """A ranking's flows: its WINDOW influences carry the ranking as text (so a plan can say why
    a ranking is not an identifier), and when it has no PARTITION BY, every column its ORDER BY
    reads by value gets a SURROGATE flow: equal keys get equal numbers and different keys
    different ones (``row_number`` numbers every row apart), so the number follows the person.
    With a PARTITION BY the numbers restart in every partition: one number belongs to many."""
    trees = [r.tree for r in resolved]
    shown = substitute_leaves(root, leaves, trees) if all(t is not None for t in trees) else None
    text = (shown if shown is not None else root).sql(dialect=DIALECT)
    result = {Flow(f.source, f.subtype, expression=text) if f.subtype is EdgeSubtype.WINDOW else f for f in flows}
    if root.args.get("partition_by"):
        return result
    order = root.args.get("order")
    for leaf, lineage in zip(leaves, resolved):
        if order is None or not any(node is order for node, _ in _ancestors(leaf, root)):
            continue
        for flow in lineage.flows:
            if flow.subtype in _KEY_ROLES and flow.join_equality is None:
                result.add(Flow(flow.source, EdgeSubtype.SURROGATE, expression=text))
    return result


def conjuncts(condition: exp.Expression) -> Iterable[exp.Expression]:
    condition = unwrap(condition)
    if isinstance(condition, exp.And):
        yield from conjuncts(condition.this)
        yield from conjuncts(condition.expression)
    else:
        yield condition
