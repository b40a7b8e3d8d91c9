"""Column lineage of one SQL query (a sqlglot AST), resolved down to base-table columns.

A query is turned into a :class:`DerivedRelation` (:mod:`piitracer.ingest.sql.relations`): its
ordered output columns, each with the set of :class:`Flow` s that reach it from base-table
columns, plus the dataset-level influences (JOIN, FILTER, GROUP_BY, SORT) that decide which rows
exist. CTEs, subqueries and temporary views
are relations of the same kind, so reading one composes its flows into the reader's.

Typing follows OpenLineage: a bare column is IDENTITY, a column inside an aggregate is
AGGREGATION, any other expression is TRANSFORMATION; a CASE/IF condition is a column-level
CONDITIONAL influence and a window's PARTITION BY/ORDER BY a column-level WINDOW influence.

Inner equi-joins add flows of their own (:mod:`~piitracer.ingest.sql.join_equalities`): such a
flow carries the equality text and lives only while it stays an IDENTITY or TRANSFORMATION. The
expression rules are :mod:`~piitracer.ingest.sql.expressions`.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from sqlglot import exp

from piitracer.ingest.sql.context import QueryContext
from piitracer.ingest.sql.expressions import (DIALECT, FLATTEN_COLUMNS, RANKINGS, compose_flow, field_access,
                                              expression_leaves, is_masked, merge_branches, merged_using, output_name, ranking_flows,
                                              reads_column, leaf_role, substitute_leaves, unrepeatable, unwrap,
                                              without_repeats, is_sequence, per_row_key)
from piitracer.ingest.sql.join_equalities import JoinEqualities, Place, source_column
from piitracer.ingest.sql.relations import (
    ColumnLineage,
    DerivedRelation,
    Flow,
    GeneratedRelation,
    Influence,
    OpaqueRelation,
    PivotRelation,
    Relation,
    TableRelation,
)
from piitracer.model.lineage import EdgeSubtype


class Scope:
    """The sources visible to one SELECT (plus its parent, for correlated subqueries)."""

    def __init__(self, ctx: QueryContext, ctes: Mapping[str, Relation], parent: Scope | None = None):
        self.ctx = ctx
        self.ctes = dict(ctes)
        self.parent = parent
        self.sources: dict[str, Relation] = {}  # by alias (or a made-up key, see add_source)
        self.paths: dict[str, str] = {}  # a table's name as written ("db.t", "cat.db.t") -> its key
        self.using: dict[str, list[str]] = {}  # JOIN ... USING (c): c -> keys of the sources it merges
        self.lateral: dict[str, ColumnLineage] = {}  # aliases of earlier select items (lateral aliases)
        # Inner equi-join equalities between two sources' columns (an ON, the WHERE, USING).
        self.equalities = JoinEqualities()
        # UPDATE/DELETE: (dataset, its names, an opaque stand-in): the target read under one of
        # its names is the row being changed, whose columns bring nothing new.
        self.target: tuple[str, set[str], Relation] | None = None
        self.inputs: set[str] = set()
        self.indirect: set[Influence] = set()

    # ---- sources ------------------------------------------------------------------------------

    def add_source(self, alias: str, relation: Relation, paths: Iterable[str] = ()) -> str:
        """Make a relation visible under an alias; what it read becomes what this scope read.

        Returns the key it is stored under: the alias, or, when the alias is taken (``prod.users
        JOIN dev.users``) or there is none (a derived table without alias), a made-up key no
        query can write; its written names (``paths``) still find it."""
        key = alias.lower()
        if not key or key in self.sources:
            key = f"({key or 'derived table'} {len(self.sources) + 1})"
        self.sources[key] = relation
        for path in paths:
            self.paths.setdefault(path, key)
        self.inputs |= relation.inputs
        self.indirect |= relation.indirect
        return key

    def table_relation(self, table: exp.Table) -> Relation:
        """A CTE, then a temp view, then a base table (the order Spark resolves names in)."""
        name = table.name.lower()
        if not table.db and name in self.ctes:
            return self.ctes[name]
        if (not table.db or table.db.lower() == "global_temp") and name in self.ctx.temp_views:
            return self.ctx.temp_views[name]
        dataset = self.ctx.dataset_id(table)
        return TableRelation(dataset, self.ctx.schemas.get(dataset))

    def add_from_clause(self, from_: exp.From | None, joins: Iterable[exp.Join] | None) -> None:
        """A FROM item and the JOINs after it."""
        if from_ is not None:
            self.add_joined(from_.this)
        for join in joins or []:
            self.add_join(join)

    def add_joined(self, item: exp.Expression) -> str:
        """A FROM item that may carry joins of its own: ``(a JOIN b ON ...)`` in parentheses, or a
        table with ``joins`` (sqlglot's shape for those and for T-SQL's ``UPDATE ... FROM a JOIN b``).
        The aliases inside parentheses stay visible outside. Returns the first item's key."""
        while isinstance(item, exp.Subquery) and not item.alias and isinstance(item.this, (exp.Subquery, exp.Table)):
            item = item.this
        key = self.add_from_item(item)
        if isinstance(item, exp.Table):
            for join in item.args.get("joins") or []:
                self.add_join(join)
        return key

    def add_join(self, join: exp.Join) -> None:
        """A JOIN: its item, its ON condition (a JOIN influence) and its USING columns; an inner
        join's equalities are remembered (see ``JoinEqualities.equate``)."""
        key = self.add_joined(join.this)
        inner = not join.side and (join.kind or "").upper() in ("", "INNER", "CROSS")
        if join.args.get("on"):
            self.influence(join.args["on"], EdgeSubtype.JOIN)
            if inner:
                self.equalities.equate(join.args["on"], self.locate)
        for identifier in join.args.get("using") or []:
            self.join_using(identifier.name.lower(), key, inner)

    def add_from_item(self, item: exp.Expression) -> str:
        """A FROM or JOIN item: a table, a subquery, VALUES, UNNEST / LATERAL FLATTEN / LATERAL
        (subquery), any of them PIVOTed or UNPIVOTed, or something opaque. Returns its key."""
        alias = item.alias_or_name
        paths: list[str] = []
        if isinstance(item, exp.Table) and isinstance(item.this, exp.Identifier):
            relation: Relation = self.table_relation(item)
            if (self.target and isinstance(relation, TableRelation) and relation.dataset == self.target[0]
                    and alias.lower() in self.target[1]):
                relation = self.target[2]
            parts = [p.lower() for p in (item.catalog, item.db, item.name) if p]
            paths = [".".join(parts[i:]) for i in range(len(parts))]
        elif isinstance(item, exp.Subquery):
            relation = query_relation(item.this, self.ctx, self.ctes, self.parent)
        elif isinstance(item, exp.Lateral) and isinstance(item.this, exp.Subquery):
            # LATERAL (subquery): it sees the sources before it, as a correlated subquery does.
            relation = query_relation(item.this.this, self.ctx, self.ctes, self)
        elif isinstance(item, (exp.Unnest, exp.Lateral)) or (
                hasattr(exp, "TableFromRows") and isinstance(item, exp.TableFromRows)):
            relation = self._generated(item)
        else:
            relation = OpaqueRelation(alias or "values", None)
            if not isinstance(item, exp.Values):
                self.ctx.warn(f"unsupported FROM item {item.sql(dialect=DIALECT)!r}: no lineage through it")
        names = [c.name.lower() for c in item.args["alias"].columns] if item.args.get("alias") else []
        if isinstance(item, exp.Unnest):
            names = []  # named by _generated already (an offset column follows the alias's)
        if isinstance(relation, DerivedRelation):
            relation = relation.renamed(names, alias or relation.label)
        elif isinstance(relation, OpaqueRelation) and names:
            relation.names = names
        for pivot in item.args.get("pivots") or []:
            relation = self._pivoted(relation, pivot)
            alias = pivot.alias or alias
            renamed = [c.name.lower() for c in pivot.args["alias"].columns] if pivot.args.get("alias") else []
            if renamed and relation.column_names() is not None:
                # ``UNPIVOT (...) AS u (a, b, c)``: the output columns renamed in order.
                columns = [(new, relation.column(old) or ColumnLineage())
                           for new, old in zip(renamed, relation.column_names())]
                relation = DerivedRelation(columns, relation.inputs, relation.indirect, alias or relation.label)
        return self.add_source(alias, relation, paths)

    def _generated(self, item: exp.Unnest | exp.Lateral) -> Relation:
        """``UNNEST(arr) AS u(e)``, BigQuery's ``UNNEST(arr) AS e``, Snowflake's ``LATERAL
        FLATTEN(INPUT => x) f``: each generated column is a TRANSFORMATION of the input (no
        per-row expression: one input row gives many). Positions (WITH OFFSET, FLATTEN's SEQ,
        INDEX, PATH) carry no value."""
        alias = item.args.get("alias")
        names = [c.name.lower() for c in alias.columns] if alias and alias.columns else []
        lineage = self.lineage_of(item if isinstance(item, exp.Unnest) else item.this)
        positions = set()
        if isinstance(item.this, exp.Explode) and any(isinstance(a, exp.Kwarg) for a in item.this.iter_expressions()):
            # Snowflake's FLATTEN(INPUT => x): its columns, whether or not the query names them.
            names = names or list(FLATTEN_COLUMNS)
            positions = {"seq", "index", "path"}
        label = alias.name if alias and alias.name else "unnest"
        if isinstance(item, exp.Unnest) and item.args.get("offset") and isinstance(item.args["offset"], exp.Expression):
            positions.add(item.args["offset"].name.lower())
            names.append(item.args["offset"].name.lower())
        if not names:
            # BigQuery's UNNEST(arr) of structs: its fields, whatever they are called.
            return GeneratedRelation(label, lineage)
        return DerivedRelation([(n, ColumnLineage() if n in positions else lineage) for n in names], label=label)

    def _pivoted(self, base: Relation, pivot: exp.Pivot) -> Relation:
        """``PIVOT (agg(v) [AS a], ... FOR c IN (x [AS y], ...))``: a column per value and
        aggregate (its AGGREGATION, CONDITIONAL on ``c``); the other columns are the implicit
        GROUP BY keys. ``UNPIVOT (v FOR n IN (c1, c2))``: ``v`` is each of ``c1``, ``c2`` as they
        are; ``n`` holds column names, no value."""
        scope = Scope(self.ctx, self.ctes, self.parent)
        scope.add_source("", base)
        field_ = next(iter(pivot.args.get("fields") or []), None)
        if field_ is None:
            return base
        if pivot.args.get("unpivot"):
            return self._unpivoted(base, pivot, field_, scope)
        aggregates = [unwrap(e) for e in pivot.expressions]
        if not aggregates:
            return base
        names = [c.name.lower() for c in pivot.args.get("columns") or []]
        if not names:
            names = [v.alias_or_name.lower() or v.sql(dialect=DIALECT).strip("'").lower() for v in field_.expressions]
        on = scope.lineage_of(field_.this)
        conditional = frozenset(Flow(f.source, EdgeSubtype.CONDITIONAL) for f in on.flows if f.join_equality is None)
        columns = []
        for index, name in enumerate(names):
            value = scope.lineage_of(aggregates[index % len(aggregates)])
            columns.append((name, ColumnLineage(value.flows | conditional, None)))
        used = {c.name.lower() for e in aggregates + [field_.this] for c in e.find_all(exp.Column)}
        kept = [n for n in base.column_names() or [] if n not in used]
        for name in kept:  # implicit GROUP BY keys
            lineage = base.column(name)
            scope._influenced_by(lineage.flows if lineage else frozenset(), EdgeSubtype.GROUP_BY)
        return PivotRelation(columns, base, used, frozenset(scope.inputs), frozenset(scope.indirect))

    def _unpivoted(self, base: Relation, pivot: exp.Pivot, field_: exp.Expression, scope: Scope) -> Relation:
        values = [unwrap(e) for e in pivot.expressions]
        value_names = [i.name.lower() for v in values for i in (v.expressions if isinstance(v, exp.Tuple) else [v])]
        name_column = field_.this.name.lower()
        merged: list[ColumnLineage] = [ColumnLineage() for _ in value_names]
        used: set[str] = set()
        for entry in field_.expressions:
            entry = entry.this if isinstance(entry, (exp.PivotAlias, exp.Alias)) else entry
            entry = unwrap(entry)
            sources = entry.expressions if isinstance(entry, exp.Tuple) else [entry]
            for index, source in enumerate(sources[: len(value_names)]):
                lineage = scope.lineage_of(source)
                merged[index] = ColumnLineage(merged[index].flows | lineage.flows, None)
                used |= {c.name.lower() for c in source.find_all(exp.Column)} | (
                    {source.name.lower()} if isinstance(source, exp.Identifier) else set())
        own = [(name_column, ColumnLineage())] + list(zip(value_names, merged))
        if pivot.args.get("value_columns_first"):
            own = own[1:] + own[:1]
        return PivotRelation(own, base, used, frozenset(scope.inputs), frozenset(scope.indirect))

    def add_lateral(self, lateral: exp.Lateral) -> None:
        """``LATERAL VIEW explode(x) t AS c``: each generated column is a transform of ``x``."""
        alias = lateral.args.get("alias")
        names = [c.name.lower() for c in alias.columns] if alias else []
        lineage = self.lineage_of(lateral.this)
        label = alias.name if alias and alias.name else "lateral"
        # posexplode's first column is the position, which carries no value.
        positions = names[:1] if isinstance(lateral.this, exp.Posexplode) else []
        columns = [(n, ColumnLineage() if n in positions else lineage) for n in names]
        self.add_source(label, DerivedRelation(columns, label=label))

    def subquery(self, query: exp.Expression) -> DerivedRelation:
        """A nested query (in an expression or a condition): it may see this scope's columns."""
        if isinstance(query, exp.Subquery):
            query = query.this
        relation = query_relation(query, self.ctx, self.ctes, self)
        self.inputs |= relation.inputs
        self.indirect |= relation.indirect
        return relation

    # ---- columns ------------------------------------------------------------------------------

    def resolve(self, column: exp.Column) -> ColumnLineage | None:
        """The lineage of a column reference, looking outwards for correlated references.

        ``a.b.c`` is, in Spark's order: column ``c`` of table ``a.b``; field ``c`` of column ``b``
        of source ``a``; field ``b.c`` of column ``a`` (a struct). A field of a column is a
        TRANSFORMATION of it (the field's value, not the column's)."""
        parts = [p.lower() for p in (column.catalog, column.db, column.table, column.name) if p]
        scope: Scope | None = self
        while scope is not None:
            for split in range(len(parts) - 1, 0, -1):
                relation = scope._qualifier(parts[:split], parts[split], bool(parts[split + 1:]))
                if relation is not None:
                    found = relation.column(parts[split])
                    if found is None:
                        self.ctx.warn(f"column {'.'.join(parts[:split + 1])} not found in {relation.label}")
                        return None
                    return field_access(found, parts[split + 1:])
            scope = scope.parent
        if len(parts) > 1 and not self._known_qualifier(parts[0]):
            found = self._unqualified(parts[0], column, quiet=True)
            if found is not None:
                if not self.has_known_column(parts[0]):
                    self.ctx.warn(f"column {column.sql(dialect=DIALECT)!r} read as field {'.'.join(parts[1:])} of "
                                  f"column {parts[0]!r}: no source is named {parts[0]!r} and no schema says so")
                return field_access(found, parts[1:])
        if len(parts) > 1:
            self.ctx.warn(f"cannot resolve column {column.sql(dialect=DIALECT)!r}")
            return None
        return self._unqualified(parts[0], column)

    def _qualifier(self, qualifier: list[str], name: str, has_fields: bool) -> Relation | None:
        """The source of this scope that ``qualifier`` names (an alias, ``db.t``, ``cat.db.t``),
        or None. With fields after the name, the source must have (or may have) that column: else
        ``a.b.c`` is more likely table ``a.b``'s column than column ``b``'s field."""
        key = self.paths.get(".".join(qualifier)) or (qualifier[0] if len(qualifier) == 1 else None)
        if (key is None or key not in self.sources) and len(qualifier) > 1:
            # ``spark_catalog.db.t.c`` over ``FROM db.t``: the same table by its canonical id.
            dataset = self.ctx.namer.from_table_name(".".join(qualifier), self.ctx.default_database)
            keys = [k for k, r in self.sources.items() if isinstance(r, TableRelation) and r.dataset == dataset]
            key = keys[0] if len(keys) == 1 else None
        if key is None or key not in self.sources:
            return None
        relation = self.sources[key]
        if has_fields and relation.column_names() is not None and not relation.has_column(name):
            return None
        return relation

    def _known_qualifier(self, name: str) -> bool:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.sources or name in scope.paths:
                return True
            scope = scope.parent
        return False

    def _unqualified(self, name: str, column: exp.Column, quiet: bool = False) -> ColumnLineage | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.using:
                return merged_using(*(scope.sources[key].column(name) or ColumnLineage() for key in scope.using[name]))
            if name in scope.lateral and not scope.has_known_column(name):
                # Spark 3.4+/Databricks/Snowflake: an earlier select item's alias, unless a source has it.
                return scope.lateral[name]
            candidates = scope._candidates(name)
            if len(candidates) == 1:
                return candidates[0].column(name)
            if len(candidates) > 1:
                labels = ", ".join(sorted(r.label for r in candidates))
                self.ctx.warn(f"ambiguous column {name!r}: could come from {labels}")
                return None
            scope = scope.parent
        tables = [r for r in self.sources.values() if isinstance(r, TableRelation)]
        if len(tables) == 1 and not quiet:
            # One base table in scope (the other sources' columns are exact): the SQL is trusted
            # over a possibly stale schema, but it is worth saying.
            self.ctx.warn(f"column {name!r} is not in the known schema of {tables[0].label}")
            return tables[0].column(name)
        if not quiet:  # the caller warns about the whole name
            self.ctx.warn(f"cannot resolve column {column.sql(dialect=DIALECT)!r}")
        return None

    def _candidates(self, name: str) -> list[Relation]:
        """Sources that have the column by their schema; else those whose schema is unknown."""
        known = [r for r in self.sources.values() if r.has_column(name)]
        if known:
            return known
        return [r for r in self.sources.values() if r.column_names() is None]

    def join_using(self, name: str, right: str, inner: bool = False) -> None:
        """``JOIN r USING (c)``: ``r.c`` and the earlier sources' ``c`` are JOIN influences, and
        the output column ``c`` carries both sides' values; an inner join equates them."""
        earlier = [key for key in self.sources if key != right]
        left = [key for key in earlier if self.sources[key].has_column(name)]
        unknown = [key for key in earlier if self.sources[key].column_names() is None]
        if not left and len(unknown) == 1:
            left = unknown
        keys = list(dict.fromkeys(self.using.get(name, []) + left + [right]))
        self.using[name] = keys
        for key in left + [right]:
            lineage = self.sources[key].column(name)
            self._influenced_by(lineage.flows if lineage else frozenset(), EdgeSubtype.JOIN)
            if inner and key != right:
                self.equalities.equate_using(name, key, right, self.paths)

    def has_known_column(self, name: str) -> bool:
        return any(r.has_column(name) for r in self.sources.values())

    def locate(self, column: exp.Column) -> Place | None:
        """The (source key, column) a reference names here, when it is a plain column of one source."""
        return source_column(column, self.sources, self.paths, self.using, self.lateral)

    def expand_star(self, qualifier: str, excluded: set[str]) -> list[tuple[str, ColumnLineage]]:
        """``*`` or ``q.*``: every column of the named source(s), from their known schemas.

        As in Spark, ``*`` over ``JOIN ... USING (c)`` gives ``c`` once, first, from both sides."""
        key = self.paths.get(qualifier, qualifier)
        if qualifier and key not in self.sources:
            self.ctx.warn(f"cannot expand {qualifier}.*: no such table in scope")
            return []
        relations = [self.sources[key]] if qualifier else list(self.sources.values())
        expanded = []
        if not qualifier:
            merged = [name for name in self.using if name not in excluded]
            expanded += [(name, self._unqualified(name, exp.column(name)) or ColumnLineage()) for name in merged]
            excluded = excluded | set(self.using)
        for relation in relations:
            names = relation.column_names()
            if names is None:
                star = f"{qualifier}.*" if qualifier else "*"
                self.ctx.warn(f"cannot expand {star} of {relation.label}: no known schema")
                continue
            expanded += [(n, relation.column(n) or ColumnLineage()) for n in names if n not in excluded]
        return expanded

    # ---- expressions --------------------------------------------------------------------------

    def lineage_of(self, expression: exp.Expression) -> ColumnLineage:
        """Compose an expression over this scope into flows from base columns."""
        root = unwrap(expression)
        leaves = expression_leaves(root)
        resolved = [self._leaf_lineage(leaf) for leaf in leaves]
        repeatable = not unrepeatable(root)
        value = substitute_leaves(root, leaves, [r.tree for r in resolved]) if repeatable else None
        flows: set[Flow] = set()
        for leaf, lineage in zip(leaves, resolved):
            role, masked = leaf_role(leaf, root), is_masked(leaf, root)
            for flow in lineage.flows:

                def path_tree(flow: Flow = flow, lineage: ColumnLineage = lineage) -> exp.Expression | None:
                    # Along this flow's path every reference to the same column takes its tree.
                    if not repeatable or flow.tree is None:
                        return None
                    if flow.tree is lineage.tree:
                        return value
                    trees = [flow.tree if r is lineage else r.tree for r in resolved]
                    return substitute_leaves(root, leaves, trees)

                composed = compose_flow(flow, role, masked, path_tree)
                if composed is not None:
                    flows.add(composed)
        flows |= self.equalities.flows(root, leaves, resolved, repeatable, self.locate, self.sources)
        if isinstance(root, exp.Window) and isinstance(root.this, RANKINGS):
            flows = ranking_flows(root, leaves, resolved, flows)
        return ColumnLineage(without_repeats(flows), value)

    def _leaf_lineage(self, leaf: exp.Expression) -> ColumnLineage:
        if isinstance(leaf, exp.Column):
            found = self.resolve(leaf)
            return found if found is not None else ColumnLineage(frozenset(), exp.column(leaf.name.lower()))
        relation = self.subquery(leaf)
        # A scalar subquery gives its first column; its value is not a per-row expression.
        return ColumnLineage(relation.columns[0][1].flows if relation.columns else frozenset(), None)

    def influence(
        self, expression: exp.Expression, subtype: EdgeSubtype, outputs: list[tuple[str, ColumnLineage]] | None = None
    ) -> None:
        """Record a dataset-level influence from every base column the expression reads.

        ``outputs`` (the select list) lets GROUP BY / ORDER BY / HAVING name an output column by
        alias or position.
        """
        outputs = outputs or []
        if isinstance(expression, exp.Literal) and expression.is_int and outputs:
            position = int(expression.this) - 1  # GROUP BY 1 / ORDER BY 1
            if 0 <= position < len(outputs):
                self._influenced_by(outputs[position][1].flows, subtype)
            return
        aliases: dict[str, ColumnLineage] = {}
        for name, lineage in outputs:
            aliases.setdefault(name, lineage)
        for leaf in expression_leaves(expression):
            if isinstance(leaf, exp.Column):
                lineage = self._clause_column(leaf, aliases)
                self._influenced_by(lineage.flows if lineage else frozenset(), subtype)
            else:
                for _, lineage in self.subquery(leaf).columns:
                    self._influenced_by(lineage.flows, subtype)

    def _influenced_by(self, flows: Iterable[Flow], subtype: EdgeSubtype) -> None:
        # Whatever a column depends on (its values and its own CONDITIONAL/WINDOW influences,
        # e.g. a row_number() filtered on) influences the rows through it. A join-equality flow
        # only restates a value: the column it was equated with already influences.
        self.indirect |= {(f.source, subtype) for f in flows if f.join_equality is None}

    def _clause_column(self, column: exp.Column, aliases: Mapping[str, ColumnLineage]) -> ColumnLineage | None:
        name = column.name.lower()
        # An output alias wins when no source column of that name is known (Spark resolves
        # ORDER BY against the select list, GROUP BY aliases as a fallback).
        if not column.table and name in aliases and not self.has_known_column(name):
            return aliases[name]
        return self.resolve(column)


# ---- queries ------------------------------------------------------------------------------------


def query_relation(
    query: exp.Expression, ctx: QueryContext, ctes: Mapping[str, Relation] | None = None, parent: Scope | None = None
) -> DerivedRelation:
    """The lineage of a query (SELECT, set operation, parenthesised query, VALUES)."""
    ctes = with_ctes(query, ctx, ctes or {}, parent)
    if isinstance(query, exp.Subquery):
        return query_relation(query.this, ctx, ctes, parent)
    if isinstance(query, exp.Select):
        return _select_relation(query, ctx, ctes, parent)
    if isinstance(query, exp.SetOperation):
        return _set_operation_relation(query, ctx, ctes, parent)
    if isinstance(query, exp.Values):
        # Constants: Spark names the columns col1, col2... (an alias list renames them).
        first = query.expressions[0] if query.expressions else None
        width = len(first.expressions) if isinstance(first, exp.Tuple) else (1 if first is not None else 0)
        return DerivedRelation([(f"col{i + 1}", ColumnLineage()) for i in range(width)], label="values")
    ctx.warn(f"unsupported query {type(query).__name__}: no lineage through it")
    return DerivedRelation([])


def with_ctes(
    node: exp.Expression, ctx: QueryContext, ctes: Mapping[str, Relation], parent: Scope | None = None
) -> dict[str, Relation]:
    """The CTEs visible inside ``node``: the outer ones plus its WITH, each seeing the earlier."""
    visible = dict(ctes)
    with_ = node.args.get("with_")
    for cte in with_.expressions if with_ else []:
        name, names = cte.alias.lower(), [c.name.lower() for c in cte.args["alias"].columns]
        if with_.args.get("recursive") and isinstance(cte.this, exp.SetOperation) and _reads(cte.this, name):
            # WITH RECURSIVE c AS (<anchor> UNION ALL <step reading c>): the step reads what the
            # anchor gives, then what the whole gives; one more round adds nothing new.
            anchor = cte.this
            while isinstance(anchor, exp.SetOperation):
                anchor = anchor.left
            visible[name] = query_relation(anchor, ctx, visible, parent).renamed(names, name)
            visible[name] = query_relation(cte.this, ctx, visible, parent).renamed(names, name)
        relation = query_relation(cte.this, ctx, visible, parent)
        visible[name] = relation.renamed(names, name)
    return visible


def _reads(query: exp.Expression, name: str) -> bool:
    return any(not t.db and t.name.lower() == name for t in query.find_all(exp.Table))


def _select_relation(
    select: exp.Select, ctx: QueryContext, ctes: Mapping[str, Relation], parent: Scope | None
) -> DerivedRelation:
    scope = Scope(ctx, ctes, parent)
    scope.add_from_clause(select.args.get("from_"), select.args.get("joins"))
    if select.args.get("where"):
        scope.equalities.equate(select.args["where"].this, scope.locate)  # a WHERE equality rejects NULLs
    for lateral in select.args.get("laterals") or []:
        scope.add_lateral(lateral)

    columns = _projections(select, scope)
    for key in ("where", "having", "qualify"):
        if select.args.get(key):
            scope.influence(select.args[key].this, EdgeSubtype.FILTER, columns)
    if select.args.get("group"):
        for part in select.args["group"].iter_expressions():
            scope.influence(part, EdgeSubtype.GROUP_BY, columns)
    for key in ("order", "sort", "cluster", "distribute"):
        if select.args.get(key):
            for part in select.args[key].expressions:
                scope.influence(part.this if isinstance(part, exp.Ordered) else part, EdgeSubtype.SORT, columns)
    return DerivedRelation(columns, frozenset(scope.inputs), frozenset(scope.indirect))


def _projections(select: exp.Select, scope: Scope) -> list[tuple[str, ColumnLineage]]:
    columns: list[tuple[str, ColumnLineage]] = []
    sequences: list[tuple[int, str]] = []
    for projection in select.expressions:
        if is_sequence(unwrap(projection)):
            sequences.append((len(columns), unwrap(projection).sql(dialect=DIALECT)))
            columns.append((output_name(projection), ColumnLineage()))
            continue
        star = projection if isinstance(projection, exp.Star) else None
        if isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star):
            star = projection.this
        if star is not None:
            excluded = {c.name.lower() for c in star.args.get("except_") or []}
            qualifier = ".".join(p.lower() for p in (projection.db, projection.table) if p) \
                if isinstance(projection, exp.Column) else ""
            columns += scope.expand_star(qualifier, excluded)
            continue
        name, lineage = output_name(projection), scope.lineage_of(projection)
        columns.append((name, lineage))
        if isinstance(projection, exp.Alias) and not reads_column(projection.this, name):
            # Later items may name it (lateral column alias); ``lower(email) AS email`` proves the
            # source has ``email``, so there the name stays the source's column.
            scope.lateral.setdefault(name, lineage)
    scope.lateral = {}  # WHERE, GROUP BY... see the select list through ``outputs`` instead
    for index, how in sequences:
        columns[index] = (columns[index][0], per_row_key(columns, f"{how}, one per row"))
    return columns


def _set_operation_relation(
    node: exp.SetOperation, ctx: QueryContext, ctes: Mapping[str, Relation], parent: Scope | None
) -> DerivedRelation:
    """UNION/INTERSECT/EXCEPT: columns by position, names from the first branch.

    The right side of EXCEPT only removes rows, so its columns are FILTER influences.
    """
    left = query_relation(node.left, ctx, ctes, parent)
    right = query_relation(node.right, ctx, ctes, parent)
    if len(left.columns) != len(right.columns):
        ctx.warn(f"{node.key.upper()} branches have {len(left.columns)} and {len(right.columns)} columns")
    indirect = set(left.indirect | right.indirect)
    columns = []
    for index, (name, lineage) in enumerate(left.columns):
        other = right.columns[index][1] if index < len(right.columns) else ColumnLineage()
        if isinstance(node, exp.Except):
            indirect |= {(f.source, EdgeSubtype.FILTER) for f in other.flows if f.join_equality is None}
            columns.append((name, lineage))
        else:
            columns.append((name, merge_branches(lineage, other)))
    relation = DerivedRelation(columns, left.inputs | right.inputs, frozenset(indirect))
    if node.args.get("order"):
        scope = Scope(ctx, ctes, parent)
        scope.add_source(relation.label, relation)
        for part in node.args["order"].expressions:
            scope.influence(part.this, EdgeSubtype.SORT, columns)
        relation = DerivedRelation(columns, relation.inputs, frozenset(indirect | scope.indirect))
    return relation
