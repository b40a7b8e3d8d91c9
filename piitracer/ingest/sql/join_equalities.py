"""Inner equi-join equalities of one SQL scope (:class:`~piitracer.ingest.sql.scope.Scope` is a
:class:`JoinEqualities`): in ``FROM t JOIN a ON t.x = a.y`` every row has ``t.x = a.y``, so a column
that is (a deterministic transform of) ``t.x`` is also one of ``a.y``. Such a flow carries the
equality text (``Flow.join_equality``); it is what the planner uses to find a subject's key on the
other side of a join."""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from piitracer.ingest.sql.expressions import (DIALECT, VALUE_ROLES, compose_flow, conjuncts, is_masked, leaf_role,
                                              substitute_leaves, unwrap)
from piitracer.ingest.sql.relations import ColumnLineage, Flow


class JoinEqualities:
    """The equalities part of a :class:`~piitracer.ingest.sql.scope.Scope`: it reads the scope's
    ``sources``, ``paths``, ``using``, ``lateral`` and ``has_known_column`` and keeps the
    equalities in its ``equal``."""


    def equate(self, condition: exp.Expression) -> None:
        """Remember the equalities of a condition that holds for every row the scope gives: an
        inner join's ON or the WHERE. Only top-level AND-conjuncts count, and only ``x = y`` with
        ``x`` and ``y`` bare columns of two different sources of this scope: OR, other
        comparisons and functions (``lower(a.x) = b.y``) equate no values."""
        for conjunct in conjuncts(condition):
            if not isinstance(conjunct, exp.EQ):
                continue
            left, right = unwrap(conjunct.this), unwrap(conjunct.expression)
            if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
                continue
            a, b = self._locate(left), self._locate(right)
            if a is not None and b is not None and a[0] != b[0]:
                self._equal(a, b, conjunct.sql(dialect=DIALECT))

    def _written(self, key: str) -> str:
        """A source key as the query writes it: the alias, else the table's name."""
        if not key.startswith("("):
            return key
        return next((path for path, k in sorted(self.paths.items(), key=lambda p: -len(p[0])) if k == key), "?")

    def _equal(self, a: tuple[str, str], b: tuple[str, str], text: str) -> None:
        self.equal.setdefault(a, {}).setdefault(b, text)
        self.equal.setdefault(b, {}).setdefault(a, text)

    def _locate(self, column: exp.Column) -> tuple[str, str] | None:
        """(source key, column) a reference names in this scope, when it is a plain column of one
        source (not a field, not a lateral alias, not a correlated reference, not ambiguous)."""
        parts = [p.lower() for p in (column.catalog, column.db, column.table, column.name) if p]
        name = parts[-1]
        if len(parts) == 1:
            if name in self.using or (name in self.lateral and not self.has_known_column(name)):
                return None
            keys = [k for k, r in self.sources.items() if r.has_column(name)]
            if not keys:
                keys = [k for k, r in self.sources.items() if r.column_names() is None]
            return (keys[0], name) if len(keys) == 1 else None
        key = self.paths.get(".".join(parts[:-1])) or (parts[0] if len(parts) == 2 else None)
        if key in self.sources and (self.sources[key].column_names() is None or self.sources[key].has_column(name)):
            return key, name
        return None

    def _equivalents(self, start: tuple[str, str]) -> list[tuple[tuple[str, str], str]]:
        """Every column equal to ``start`` through a chain of equalities (a.x = b.y AND b.y = c.z),
        with the chain's text, nearest first; deterministic."""
        found: list[tuple[tuple[str, str], str]] = []
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

    def _equality_flows(
        self, root: exp.Expression, leaves: list[exp.Expression], resolved: list[ColumnLineage], repeatable: bool
    ) -> set[Flow]:
        """The flows an expression gets from the columns its columns are equated with: the same
        IDENTITY or TRANSFORMATION, over the other side's column, marked with the equalities."""
        if not self.equal:
            return set()
        places = [self._locate(leaf) if isinstance(leaf, exp.Column) else None for leaf in leaves]
        flows: set[Flow] = set()
        for leaf, place in zip(leaves, places):
            if place is None or place not in self.equal:
                continue
            role, masked = leaf_role(leaf, root), is_masked(leaf, root)
            if role not in VALUE_ROLES:
                continue
            for (key, name), text in self._equivalents(place):
                other = self.sources[key].column(name)
                for flow in other.flows if other is not None else ():
                    if flow.subtype not in VALUE_ROLES:
                        continue

                    def path_tree(flow: Flow = flow, place: tuple[str, str] = place) -> exp.Expression | None:
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
