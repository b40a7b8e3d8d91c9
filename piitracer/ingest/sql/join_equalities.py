"""Inner equi-join equalities of one SQL scope: in ``FROM t JOIN a ON t.x = a.y`` every row has
``t.x = a.y``, so a column that is (a deterministic transform of) ``t.x`` is also one of ``a.y``.
Such a flow carries the equality text (``Flow.join_equality``); it is what the planner uses to find
a subject's key on the other side of a join.

A :class:`~piitracer.ingest.sql.scope.Scope` owns one :class:`JoinEqualities` and hands it what it
knows as arguments: where a column reference points (a ``locate`` function, see
:func:`source_column`) and its sources (to read the other side's column)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import replace

from sqlglot import exp

from piitracer.ingest.sql.expressions import (
    DIALECT,
    VALUE_ROLES,
    compose_flow,
    conjuncts,
    is_masked,
    leaf_role,
    substitute_leaves,
    unwrap,
)
from piitracer.ingest.sql.relations import ColumnLineage, Flow, Relation

Place = tuple[str, str]  # (source key, column name): one plain column of one source of a scope
Locate = Callable[[exp.Column], Place | None]  # a scope's Scope.locate


def source_column(column: exp.Column, sources: Mapping[str, Relation], paths: Mapping[str, str],
                  merged: Collection[str], lateral: Collection[str]) -> Place | None:
    """(source key, column) a reference names among ``sources`` (by key; ``paths``: a table's name
    as written -> its key), when it is a plain column of one source: not a column ``JOIN ...
    USING`` merged (``merged``), not a lateral alias of the select list (``lateral``) unless a
    source has that column, not a field, not a correlated reference, not ambiguous."""
    parts = [p.lower() for p in (column.catalog, column.db, column.table, column.name) if p]
    name = parts[-1]
    if len(parts) == 1:
        if name in merged or (name in lateral and not any(r.has_column(name) for r in sources.values())):
            return None
        keys = [k for k, r in sources.items() if r.has_column(name)]
        if not keys:
            keys = [k for k, r in sources.items() if r.column_names() is None]
        return (keys[0], name) if len(keys) == 1 else None
    key = paths.get(".".join(parts[:-1])) or (parts[0] if len(parts) == 2 else None)
    if key in sources and (sources[key].column_names() is None or sources[key].has_column(name)):
        return key, name
    return None


def written_name(key: str, paths: Mapping[str, str]) -> str:
    """A source key as the query writes it: the alias, else the table's name (``paths``: a table's
    name as written -> its key)."""
    if not key.startswith("("):
        return key
    return next((path for path, k in sorted(paths.items(), key=lambda p: -len(p[0])) if k == key), "?")


class JoinEqualities:
    """The equalities that hold for every row one scope gives: (source key, column) pairs, each
    with the text of the equality (or chain) that makes them equal."""

    def __init__(self) -> None:
        self.equal: dict[Place, dict[Place, str]] = {}

    def equate(self, condition: exp.Expression, locate: Locate) -> None:
        """Remember the equalities of a condition that holds for every row the scope gives: an
        inner join's ON or the WHERE. Only top-level AND-conjuncts count, and only ``x = y`` with
        ``x`` and ``y`` bare columns of two different sources (``locate`` names each column's
        place in the scope): OR, other comparisons and functions (``lower(a.x) = b.y``) equate
        no values."""
        for conjunct in conjuncts(condition):
            if not isinstance(conjunct, exp.EQ):
                continue
            left, right = unwrap(conjunct.this), unwrap(conjunct.expression)
            if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
                continue
            a, b = locate(left), locate(right)
            if a is not None and b is not None and a[0] != b[0]:
                self.add(a, b, conjunct.sql(dialect=DIALECT))

    def add(self, a: Place, b: Place, text: str) -> None:
        """``a`` and ``b`` are equal on every row, because of ``text`` (the first reason kept)."""
        self.equal.setdefault(a, {}).setdefault(b, text)
        self.equal.setdefault(b, {}).setdefault(a, text)

    def equate_using(self, name: str, left: str, right: str, paths: Mapping[str, str]) -> None:
        """``left JOIN right USING (name)``, an inner join: the two sources' ``name`` are equal
        (``paths``, a table's name as written -> its key, spells a source without an alias)."""
        self.add((left, name), (right, name), f"{written_name(left, paths)}.{name} = {written_name(right, paths)}.{name}")

    def equivalents(self, start: Place) -> list[tuple[Place, str]]:
        """Every column equal to ``start`` through a chain of equalities (a.x = b.y AND b.y = c.z),
        with the chain's text, nearest first; deterministic."""
        found: list[tuple[Place, str]] = []
        seen = {start}
        frontier = [(start, "")]
        while frontier:
            following = []
            for here, path in frontier:
                for there, text in sorted(self.equal.get(here, {}).items()):
                    if there in seen:
                        continue
                    seen.add(there)
                    chain = f"{path} AND {text}" if path else text
                    found.append((there, chain))
                    following.append((there, chain))
            frontier = following
        return found

    def flows(self, root: exp.Expression, leaves: list[exp.Expression], resolved: list[ColumnLineage],
              repeatable: bool, locate: Locate, sources: Mapping[str, Relation]) -> set[Flow]:
        """The flows an expression (``root``, its ``leaves`` and their ``resolved`` lineage; its
        value a per-row function when ``repeatable``) gets from the columns its columns are equated
        with: the same IDENTITY or TRANSFORMATION, over the other side's column (read from
        ``sources``), marked with the equalities."""
        if not self.equal:
            return set()
        places = [locate(leaf) if isinstance(leaf, exp.Column) else None for leaf in leaves]
        flows: set[Flow] = set()
        for leaf, place in zip(leaves, places):
            if place is None or place not in self.equal:
                continue
            role, masked = leaf_role(leaf, root), is_masked(leaf, root)
            if role not in VALUE_ROLES:
                continue
            for (key, name), text in self.equivalents(place):
                other = sources[key].column(name)
                for flow in other.flows if other is not None else ():
                    if flow.subtype not in VALUE_ROLES:
                        continue

                    def path_tree(flow: Flow = flow, place: Place = place) -> exp.Expression | None:
                        # Every reference to the equated column takes the other side's value.
                        if not repeatable or flow.tree is None or any(r.tree is None for r in resolved):
                            return None
                        trees = [flow.tree if p == place else r.tree for p, r in zip(places, resolved)]
                        return substitute_leaves(root, leaves, trees)

                    composed = compose_flow(flow, role, masked, path_tree)
                    if composed is not None and composed.subtype in VALUE_ROLES:
                        chain = f"{flow.join_equality} AND {text}" if flow.join_equality else text
                        flows.add(replace(composed, join_equality=chain))
        return flows
