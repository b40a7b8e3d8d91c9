"""The row sources a SQL query reads, and the lineage of their columns.

A :class:`Relation` is a base table, a CTE, a subquery, a temporary view, a generator (UNNEST,
FLATTEN) or a PIVOT; each column it offers is a :class:`ColumnLineage`: the :class:`Flow` s from
base-table columns that reach it, and its value over those columns when it is row-deterministic.
:mod:`piitracer.ingest.sql.scope` builds them while resolving a query.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from sqlglot import exp

from piitracer.model.lineage import DIRECT_SUBTYPES, ColumnRef, EdgeSubtype

Influence = tuple[ColumnRef, EdgeSubtype]  # a dataset-level INDIRECT edge: (source column, subtype)


@dataclass(frozen=True)
class Flow:
    """How one base column reaches one output column."""

    source: ColumnRef
    subtype: EdgeSubtype
    masking: bool = False
    expression: str | None = None  # set on TRANSFORMATION flows with a row-deterministic value
    # The value along this path over unqualified base columns, kept to compose further hops;
    # None when not row-deterministic. Equal expressions give equal trees, so it is not compared.
    tree: exp.Expression | None = field(default=None, compare=False, hash=False)
    # Set when the flow exists only because an inner equi-join equates the column the query reads
    # with this source's column: the equalities as written (``t.account_ref = a.account_id``).
    join_equality: str | None = None

    @property
    def direct(self) -> bool:
        return self.subtype in DIRECT_SUBTYPES


@dataclass(frozen=True, eq=False)
class ColumnLineage:
    """Everything known about one column of a relation."""

    flows: frozenset[Flow] = frozenset()
    tree: exp.Expression | None = None  # its value over base columns, None if unknown


class Relation:
    """A row source a query reads: a base table, a CTE, a subquery, a temp view."""

    label: str = ""
    inputs: frozenset[str] = frozenset()
    indirect: frozenset[Influence] = frozenset()

    def column_names(self) -> list[str] | None:
        """Ordered column names, or ``None`` when unknown."""
        raise NotImplementedError

    def column(self, name: str) -> ColumnLineage | None:
        """Lineage of a column, ``None`` when the relation has no such column."""
        raise NotImplementedError

    def has_column(self, name: str) -> bool:
        names = self.column_names()
        return names is not None and name in names


class TableRelation(Relation):
    """A base table: each column is its own IDENTITY source."""

    def __init__(self, dataset: str, schema: Iterable[str] | None):
        self.dataset = dataset
        self.label = dataset
        self.schema = [c.lower() for c in schema] if schema is not None else None
        self.inputs = frozenset({dataset})

    def column_names(self) -> list[str] | None:
        return self.schema

    def column(self, name: str) -> ColumnLineage:
        # The SQL is trusted over a possibly stale schema: a qualified unknown column still flows.
        tree = exp.column(name)
        identity = Flow(ColumnRef(dataset=self.dataset, column=name), EdgeSubtype.IDENTITY, tree=tree)
        return ColumnLineage(frozenset({identity}), tree)


class OpaqueRelation(Relation):
    """A row source whose columns carry no base-table lineage (MERGE target, VALUES, functions)."""

    def __init__(self, label: str, names: list[str] | None):
        self.label = label
        self.names = names

    def column_names(self) -> list[str] | None:
        return self.names

    def column(self, name: str) -> ColumnLineage:
        return ColumnLineage(frozenset(), exp.column(name))


class GeneratedRelation(Relation):
    """A generator whose output columns are not named (BigQuery's ``UNNEST(arr)`` of structs):
    every column it is asked for is the generated value."""

    def __init__(self, label: str, lineage: ColumnLineage):
        self.label = label
        self.lineage = lineage

    def column_names(self) -> list[str] | None:
        return None

    def column(self, name: str) -> ColumnLineage:
        return self.lineage


class PivotRelation(Relation):
    """The output of PIVOT / UNPIVOT: its own columns, then the source's columns it keeps."""

    def __init__(
        self, own: list[tuple[str, ColumnLineage]], base: Relation, used: set[str],
        inputs: frozenset[str], indirect: frozenset[Influence],
    ):
        self.own, self.base, self.used = own, base, used
        self.label = f"pivot of {base.label}"
        self.inputs, self.indirect = inputs, indirect

    def column_names(self) -> list[str] | None:
        names = self.base.column_names()
        if names is None:
            return None
        own = [n for n, _ in self.own]
        return [n for n in names if n not in self.used and n not in own] + own

    def column(self, name: str) -> ColumnLineage | None:
        for own, lineage in self.own:
            if own == name:
                return lineage
        return None if name in self.used else self.base.column(name)


@dataclass
class DerivedRelation(Relation):
    """The output of a query: ordered (name, lineage) pairs plus what it read."""

    columns: list[tuple[str, ColumnLineage]]
    inputs: frozenset[str] = frozenset()
    indirect: frozenset[Influence] = frozenset()
    label: str = "subquery"

    def column_names(self) -> list[str]:
        return [name for name, _ in self.columns]

    def column(self, name: str) -> ColumnLineage | None:
        return next((lineage for column, lineage in self.columns if column == name), None)

    def renamed(self, names: list[str], label: str) -> "DerivedRelation":
        """The same relation under an alias, with its columns renamed when names are given."""
        columns = self.columns
        if names:
            columns = [(new, lineage) for new, (_, lineage) in zip(names, self.columns)]
        return DerivedRelation(columns, self.inputs, self.indirect, label)
