"""Surrogate keys: where their values are read, and why a ranking is not one.

A dimension that gives each customer a surrogate key (``row_number() over (order by
customer_id)``, ``md5(customer_id || '-' || source_system)``) holds both keys: it is the mapping
the resolve step reads, before anything is deleted, to learn the subjects' surrogate values (the
rows of the dimension whose natural key column holds the subjects' values). Every dataset that
carries the surrogate key on (a fact that takes it through a join on the natural key, a foreign
key) is then erased by it.

A ranking whose order does not follow the person (``row_number() over (order by amount)``, or one
restarted per partition) numbers rows, not persons: a dataset that holds only such a number holds
no identifier of the subject, and its decision says why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from piitracer.graph.lineage_graph import LineageGraph
from piitracer.model.lineage import ColumnRef, EdgeKind, EdgeSubtype
from piitracer.model.plan import SurrogateLookup
from piitracer.model.workspace import CatalogDataset
from piitracer.planner.decisions import best_key, value_source
from piitracer.planner.derivations import USABLE, Derivation, DerivationKind

if TYPE_CHECKING:
    from sqlglot import exp

_MAX_HOPS = 8  # how far back a column is followed through IDENTITY edges to the ranking it copies


def surrogate_lookups(
    graph: LineageGraph, catalog: Mapping[str, CatalogDataset], by_dataset: dict[str, dict[ColumnRef, list[Derivation]]]
) -> dict[ColumnRef, SurrogateLookup]:
    """The mapping of every surrogate key the derivations reach: its dataset, natural key column
    and the value sets that column is matched against. A surrogate whose dataset cannot be read
    (not in the catalog, a view, an external system) or keeps no column holding the subjects'
    key has no mapping: its derivations become OPAQUE in ``by_dataset``, with the reason."""
    wanted = sorted({d.lookup for found in by_dataset.values() for ds in found.values() for d in ds
                     if d.kind is DerivationKind.SURROGATE and d.lookup is not None}, key=lambda r: (r.dataset, r.column))
    lookups: dict[ColumnRef, SurrogateLookup] = {}
    refused: dict[ColumnRef, str] = {}

    def resolve(column: ColumnRef, seen: frozenset[ColumnRef]) -> None:
        if column in lookups or column in refused:
            return
        why = _unreadable(column.dataset, catalog.get(column.dataset))
        own = {ref: found for ref, found in by_dataset.get(column.dataset, {}).items() if ref != column}
        # A natural key that is itself a surrogate (a snowflake) needs its own mapping first.
        for found in own.values():
            for d in found:
                if d.kind is DerivationKind.SURROGATE and d.lookup not in seen | {column}:
                    resolve(d.lookup, seen | {column})
        own = {ref: [d for d in found if d.kind is not DerivationKind.SURROGATE or d.lookup in lookups]
               for ref, found in own.items()}
        key, found = best_key(graph.dataset(column.dataset).columns, own)
        if why is None and key is None:
            why = f"{column.dataset} keeps no column holding the subjects' key to map it from"
        if why is not None:
            refused[column] = why
            return
        usable = [d for d in found if d.kind <= USABLE]
        names = tuple(sorted({value_source(d, lookups).name for d in usable}))
        how = next((d.how for ds in by_dataset.get(column.dataset, {}).values() for d in ds
                    if d.lookup == column and d.column == column and d.how), "a key assigned per value")
        lookups[column] = SurrogateLookup(dataset=column.dataset, key_column=key, key_from=names,
                                          value_column=column.column, how=how)

    for column in wanted:
        resolve(column, frozenset())
    for found in by_dataset.values():
        for ref, derivations in found.items():
            found[ref] = [_opaque(d, refused[d.lookup]) if d.kind is DerivationKind.SURROGATE and d.lookup in refused
                          else d for d in derivations]
    return lookups


def _unreadable(dataset: str, entry: CatalogDataset | None) -> str | None:
    if entry is None:
        return f"{dataset}, which assigns it, is not in the catalog"
    if not entry.format.stores_rows:
        return f"{dataset}, which assigns it, is a {entry.format.value} dataset piitracer cannot read rows of"
    return None


def _opaque(derivation: Derivation, why: str) -> Derivation:
    text = (f"{derivation.column} holds the surrogate key {derivation.lookup} ({derivation.how}) of {derivation.source}, "
            f"but its values cannot be read: {why}")
    return Derivation(derivation.column, derivation.source, DerivationKind.OPAQUE, None, derivation.path, text,
                      derivation.via_join)


def ranking_notes(graph: LineageGraph, dataset: str, reached: set[ColumnRef]) -> list[str]:
    """Why each column of ``dataset`` that holds (or copies, through IDENTITY edges) a ranking is
    not an identifier of the subjects: the ranking is restarted per partition, or its order does
    not read a column that holds the subjects' key (``reached``)."""
    notes = []
    for name in graph.dataset(dataset).columns:
        found = _ranking_of(graph, ColumnRef(dataset=dataset, column=name), reached)
        if found is None:
            continue
        ranking, text = found
        held = "" if ranking.dataset == dataset and ranking.column == name else f" (a copy of {ranking})"
        notes.append(f"{name}{held} is {text}, not an identifier of the person: {_why_not(text)}")
    return notes


def _ranking_of(graph: LineageGraph, column: ColumnRef, reached: set[ColumnRef]) -> tuple[ColumnRef, str] | None:
    here, hops = column, 0
    while hops <= _MAX_HOPS:
        edges = graph.edges_to(here)
        rankings = [e for e in edges if e.subtype is EdgeSubtype.WINDOW and e.kind is EdgeKind.INDIRECT and e.expression
                    and _is_ranking(e.expression)]
        if rankings:
            if any(e.subtype is EdgeSubtype.SURROGATE and e.source in reached for e in edges):
                return None  # it is a surrogate key of the subject: the derivations deal with it
            return here, rankings[0].expression
        copies = [e for e in edges if e.subtype is EdgeSubtype.IDENTITY and e.kind is EdgeKind.DIRECT]
        if len(copies) != 1:
            return None
        here, hops = copies[0].source, hops + 1
    return None


def _parsed(text: str) -> "exp.Expression | None":
    import sqlglot  # here, not at the top: most plans have no window expression (0.1 s to import)

    try:
        return sqlglot.parse_one(text, read="spark")
    except sqlglot.errors.ParseError:
        return None


def _is_ranking(text: str) -> bool:
    from sqlglot import exp

    tree = _parsed(text)
    return isinstance(tree, exp.Window) and isinstance(tree.this, (exp.RowNumber, exp.Rank, exp.DenseRank))


def _why_not(text: str) -> str:
    from sqlglot import exp

    tree = _parsed(text)
    assert isinstance(tree, exp.Window)
    if tree.args.get("partition_by"):
        parts = ", ".join(p.sql(dialect="spark") for p in tree.args["partition_by"])
        return f"its numbers restart for every {parts}, so one number belongs to many persons"
    order = tree.args.get("order")
    keys = ", ".join(o.sql(dialect="spark") for o in order.expressions) if order else "nothing"
    return f"it numbers rows in the order of {keys}, which does not follow the subject's key"
