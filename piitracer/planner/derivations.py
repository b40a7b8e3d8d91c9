"""How the subjects' values reach each column: a breadth-first walk of DIRECT edges from every
identifier column of every source, carrying what a downstream row holds in terms of the source row.

Each reached column gets :class:`Derivation` records. Their ``kind`` decides the key column rule:

* ``SUBJECT_KEY`` — the subject key itself, through IDENTITY edges only (renamed is fine);
* ``IDENTIFIER`` — another identifier of the source (PAN, phone), through IDENTITY edges only;
* ``COMPUTED`` — a deterministic transform known from SQL, composed along the path, evaluated by
  the resolve step on the source rows;
* ``SURROGATE`` — a key assigned per value of the subject's key in some dataset (a ranking ordered
  by it, a hash or concatenation of it with other columns), carried on by IDENTITY edges (a fact
  that takes it through a join on the natural key, a foreign key): its values cannot be computed
  from the source row, the resolve step reads them from the dataset that assigned it (``lookup``),
  which holds both keys;
* ``OPAQUE`` — the values are there but cannot be recomputed (masked with an unknown transform,
  no expression, several inputs, non-deterministic);
* ``AGGREGATED`` — only inside an aggregate (a sum or count is not the subject's row).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, replace
from enum import IntEnum

from piitracer.graph.lineage_graph import LineageGraph
from piitracer.model.lineage import ColumnEdge, ColumnRef, EdgeKind, EdgeSubtype


class DerivationKind(IntEnum):
    """Ordered by preference: a lower value is a better key (design.md, key column rules 1-4)."""

    SUBJECT_KEY = 1
    IDENTIFIER = 2
    COMPUTED = 3
    SURROGATE = 4
    OPAQUE = 5
    AGGREGATED = 6


USABLE = DerivationKind.SURROGATE  # a kind at or below it identifies the subject's rows


@dataclass(frozen=True)
class Derivation:
    """What a column holds, in terms of one source identifier column."""

    column: ColumnRef
    source: ColumnRef  # the source identifier column the value comes from
    kind: DerivationKind
    expression: str | None  # over the source row; None unless the value can be recomputed
    path: tuple[ColumnEdge, ...]
    why_opaque: str | None = None
    # The first inner equi-join along the path that made this column equal to the source's value
    # ("t.account_ref = a.account_id (sql/x.sql:3)"): the column holds the subject's value for the
    # joined rows although no projection copies it (design.md, "equi-joins carry the key").
    via_join: str | None = None
    # SURROGATE: the column where the key is assigned (its dataset maps natural to surrogate key),
    # and how it is assigned (SQL text, for people).
    lookup: ColumnRef | None = None
    how: str | None = None

    def step(self, edge: ColumnEdge) -> "Derivation":
        """The derivation of ``edge``'s target, one hop further."""
        target = edge.target
        assert target is not None and edge.kind is EdgeKind.DIRECT
        path = self.path + (edge,)
        via_join = self.via_join or (f"{edge.join_equality} ({edge.origin.location()})" if edge.join_equality else None)
        if self.kind >= DerivationKind.OPAQUE:
            return Derivation(target, self.source, self.kind, None, path, self.why_opaque, via_join)
        if edge.subtype is EdgeSubtype.AGGREGATION:
            return Derivation(target, self.source, DerivationKind.AGGREGATED, None, path, None, via_join)
        if edge.subtype is EdgeSubtype.IDENTITY:
            return Derivation(target, self.source, self.kind, self.expression, path, None, via_join, self.lookup, self.how)
        if edge.subtype is EdgeSubtype.SURROGATE:
            # Assigned per value of this column: target's dataset maps this key to the new one.
            return Derivation(target, self.source, DerivationKind.SURROGATE, None, path, None, via_join, target,
                              edge.expression or "a key assigned per value")
        if self.kind is DerivationKind.SURROGATE:
            why = (f"{target} holds a transform of the surrogate key {self.lookup} ({self.how}): only the key itself "
                   "can be read from the dataset that assigns it")
            return Derivation(target, self.source, DerivationKind.OPAQUE, None, path, why, via_join)
        derived = self._transformed(edge, target, path)
        return replace(derived, path=path, via_join=via_join)

    def _transformed(self, edge: ColumnEdge, target: ColumnRef, path: tuple[ColumnEdge, ...]) -> "Derivation":
        if edge.expression is None:
            described = f" ({edge.description})" if edge.description else ""
            masked = "a masked transform" if edge.masking else "a transform"
            why = f"{target} holds {self.source} through {masked} with no known expression{described}"
            return Derivation(target, self.source, DerivationKind.OPAQUE, None, path, why)
        from piitracer.planner.expressions import NotComposable, compose, surrogate_function  # sqlglot: only for a transform

        try:
            composed = compose(edge.expression, edge.source.column, self.expression or column_expression(self.source.column))
        except NotComposable as error:
            if surrogate_function(edge.expression, edge.source.column):
                # md5(customer_id || '-' || source_system): not computable from the source row, but
                # a key per value of this column, which the target's dataset maps (it holds both).
                return Derivation(target, self.source, DerivationKind.SURROGATE, None, path, None, None, target,
                                  edge.expression)
            why = f"{target} holds {self.source} through a transform that cannot be recomputed: {error}"
            return Derivation(target, self.source, DerivationKind.OPAQUE, None, path, why)
        return Derivation(target, self.source, DerivationKind.COMPUTED, composed, path)

    def sibling(self, edge: ColumnEdge) -> "Derivation":
        """The surrogate key ``edge`` assigns in this column's dataset from the value this column
        copies: a key of the same person, read from this dataset (see :func:`sibling_surrogates`)."""
        assert edge.target is not None
        return Derivation(edge.target, self.source, DerivationKind.SURROGATE, None, self.path + (edge,), None,
                          self.via_join, edge.target, edge.expression or "a key assigned per value")

    def revisits(self) -> bool:
        """Whether the path comes back to a column it already went through (a lineage cycle:
        composing transforms around it would never end, and it adds no new place)."""
        return any(edge.source == self.column for edge in self.path)

    def state(self) -> tuple:
        """Two derivations with the same state reach the same places the same way."""
        return (self.column, self.source, self.kind, self.expression, self.via_join is not None, self.lookup)


_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def column_expression(column: str) -> str:
    """:func:`piitracer.planner.expressions.column_expression`, which sqlglot writes; a plain name
    is written as it is, without importing sqlglot (0.1 s: every plan and every execute's replan
    starts here, most with no transform to compose)."""
    if _PLAIN_NAME.match(column):
        return column
    from piitracer.planner.expressions import column_expression as written_by_sqlglot

    return written_by_sqlglot(column)


def seeds(graph: LineageGraph, source_keys: list[ColumnRef], identifiers: dict[str, tuple[str, ...]]) -> list[Derivation]:
    """One starting derivation per identifier column of each source dataset (the key columns
    included). ``identifiers`` maps a source dataset to its identifier columns."""
    result = []
    for dataset in sorted({ref.dataset for ref in source_keys}):
        keys = {ref.column for ref in source_keys if ref.dataset == dataset}
        for column in sorted(set(identifiers.get(dataset, ())) | keys):
            ref = ColumnRef(dataset=dataset, column=column)
            if not graph.has_column(ref):
                continue
            kind = DerivationKind.SUBJECT_KEY if column in keys else DerivationKind.IDENTIFIER
            result.append(Derivation(ref, ref, kind, column_expression(column), ()))
    return result


def derive(graph: LineageGraph, starts: list[Derivation]) -> dict[ColumnRef, list[Derivation]]:
    """Every reached column with its derivations, shortest paths first, deterministic."""
    reached: dict[ColumnRef, list[Derivation]] = {}
    seen: set[tuple] = set()
    queue = deque(starts)
    while queue:
        current = queue.popleft()
        if current.state() in seen or current.revisits():
            continue
        seen.add(current.state())
        reached.setdefault(current.column, []).append(current)
        for edge in graph.edges_from(current.column):
            if edge.kind is EdgeKind.DIRECT and edge.target is not None:
                queue.append(current.step(edge))
        if graph.surrogate_edges and current.kind < DerivationKind.SURROGATE:
            queue.extend(current.sibling(edge) for edge in sibling_surrogates(graph, current.column))
    return reached


def sibling_surrogates(graph: LineageGraph, column: ColumnRef) -> list[ColumnEdge]:
    """The SURROGATE edges into other columns of ``column``'s dataset from a column that ``column``
    copies as it is: the dataset holds both keys of one person (a dimension's natural key and the
    surrogate key it assigns), so a request that names the dimension's own natural key reaches its
    surrogate key, and the facts that carry it, too."""
    found = []
    for arriving in graph.edges_to(column):
        if arriving.subtype is not EdgeSubtype.IDENTITY or arriving.kind is not EdgeKind.DIRECT or arriving.join_equality:
            continue
        found += [edge for edge in graph.edges_from(arriving.source)
                  if edge.subtype is EdgeSubtype.SURROGATE and edge.target_dataset == column.dataset
                  and edge.target is not None and edge.target != column]
    return found


def describe_path(path: tuple[ColumnEdge, ...]) -> tuple[str, ...]:
    """Human-readable edges, e.g. ``prod.payments.user_id -[DIRECT IDENTITY]-> a.b.customer_id (sql/x.sql:3)``."""
    lines = []
    for edge in path:
        label = f"{edge.kind.value} {edge.subtype.value if edge.subtype else 'UNTYPED'}"
        if edge.masking:
            label += " masked"
        if edge.subtype is EdgeSubtype.SURROGATE and edge.expression:
            label += f" {edge.expression}"
        if edge.join_equality:
            label += f" equal through the join {edge.join_equality}"
        target = str(edge.target) if edge.target else f"{edge.target_dataset} (all rows)"
        lines.append(f"{edge.source} -[{label}]-> {target} ({edge.origin.location()})")
    return tuple(lines)
