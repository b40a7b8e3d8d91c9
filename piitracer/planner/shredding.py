"""Crypto-shredding in the plan (issue 42): which reached datasets hold the subjects' data only as
ciphertext under the subjects' own keys — erased by destroying those keys in the key vault, with
nothing of theirs rewritten — and which hold it in plaintext, erased physically as before.

The catalog declares the ciphertext (``shredded: {key: user_id, columns: [card]}``); lineage
carries it, edge by edge. A value stays the same ciphertext, under the same subject's key, only
through DIRECT IDENTITY edges: copied, renamed, filtered, unioned, joined on (an equi-join's
IDENTITY edge: deterministic encryption gives equal ciphertext for equal values), or copied by a
clone, an archive or a replica. Any other DIRECT edge — a TRANSFORMATION (a decrypt UDF, any
function over the value, a cast, a concatenation, a hash), an aggregation, a surrogate key — makes
a value that is not that ciphertext: piitracer cannot tell a decrypt from another function, so
every transform counts as decrypting. INDIRECT edges (a join or filter *on* the ciphertext) carry
no value. A value reaching a column the catalog declares shredded is that column's own ciphertext
from there on (the pipeline encrypted it under that dataset's key), unless an IDENTITY edge copies
plaintext into it: then the declaration is contradicted, and the plan says so.

A dataset is planned ``shred`` when it holds the subjects' ciphertext and every other column that
carries their data is the key column's subject id (the value the vault finds the key by): once the
key is gone, nothing readable of the subject is left there.

The lineage and the catalog only say where ciphertext should be; the table says what it stores. A
dataset that would be planned ``shred`` is checked against its stored schema (``stored``, read by
the API from the table's own metadata; names matched case-insensitively, as the engines match
them): a column that should hold ciphertext but is stored as a type that cannot hold the shred
library's ciphertext (not binary), or is not there, is not ciphertext, and the dataset is erased
physically with the column and the type in the reason. What a binary column holds is checked from
the bytes later: the resolve step decrypts every value of the subjects before their keys go
(``CiphertextHeld``, in the destroy step's parameters). Any plaintext — a decrypted or
transformed shredded value, an identifier that is not the key's subject id, ciphertext under a key
the subjects' values do not name — keeps the dataset's erasure physical, and the reason says which
column and which expression.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Mapping

from piitracer.graph.lineage_graph import LineageGraph, Reach
from piitracer.model.lineage import ColumnEdge, ColumnRef, EdgeKind, EdgeSubtype
from piitracer.model.plan import (Action, CiphertextColumn, CiphertextHeld, DatasetStatus, DestroySubjectKeyParams,
                                  SurrogateLookup, ValueSource, plaintext_set)
from piitracer.model.stored import StoredSchema, StoredSchemas
from piitracer.model.workspace import CatalogDataset, DatasetFormat
from piitracer.planner.decisions import RULE_OPAQUE, Decision, decide, value_source
from piitracer.planner.derivations import USABLE, Derivation, DerivationKind, column_expression, describe_path
from piitracer.planner.templates import StepTemplate

RULE_SHRED = "shred: ciphertext under the subject's key"


@dataclass(frozen=True)
class Carry:
    """A shredded column's value where lineage takes it: still its ciphertext, or decrypted."""

    column: ColumnRef  # where the value is
    origin: ColumnRef  # the column the catalog declares shredded that it comes from
    key: ColumnRef  # the origin dataset's key column: whose subject's key encrypts it
    decrypted: ColumnEdge | None  # the first edge that transformed it (None: still the ciphertext)
    path: tuple[ColumnEdge, ...]

    def step(self, edge: ColumnEdge) -> "Carry":
        """The value one DIRECT edge further: an IDENTITY edge keeps it as it is, any other edge
        transforms it (a transformed ciphertext is taken to be decrypted)."""
        assert edge.target is not None
        decrypted = self.decrypted or (None if edge.subtype is EdgeSubtype.IDENTITY else edge)
        return Carry(edge.target, self.origin, self.key, decrypted, self.path + (edge,))

    def problem(self) -> str:
        """Why this value keeps its column's dataset out of the shred (plaintext)."""
        edge = self.decrypted
        assert edge is not None
        here = edge.target == self.column
        if edge.subtype is not EdgeSubtype.TRANSFORMATION:  # an aggregate or a surrogate key of the ciphertext
            what = f"{(edge.subtype or EdgeSubtype.TRANSFORMATION).value.lower()} of shredded column {self.origin}"
            return (f"column {self.column.column} holds an {what} ({edge.origin.location()})" if here else
                    f"column {self.column.column} holds an {what} made in {edge.target} ({edge.origin.location()})")
        how = edge.expression or f"a transform with no known expression ({edge.origin.location()})"
        if here:
            return f"column {self.column.column} decrypts shredded column {self.origin} in {how}"
        return f"column {self.column.column} holds shredded column {self.origin} decrypted in {edge.target} by {how}"


@dataclass
class Shredding:
    """What the shred analysis decided: the datasets planned ``shred``, and per key the value sets
    naming the subjects' keys and the datasets its destruction erases."""

    keys: dict[ColumnRef, tuple[ValueSource, ...]] = field(default_factory=dict)
    erased_by: dict[ColumnRef, list[str]] = field(default_factory=dict)  # key column -> datasets planned shred
    held: dict[str, CiphertextHeld] = field(default_factory=dict)  # dataset planned shred -> its ciphertext columns

    def destroy_steps(self, order: tuple[str, ...]) -> dict[str, list[StepTemplate]]:
        """One ``destroy_subject_key`` step per set of key values (the vault keeps one key per
        subject, whatever column names it), placed first among the steps of the most upstream
        shredded dataset that declares the key, so it is ordered like that dataset's erasure."""
        rank = {dataset: index for index, dataset in enumerate(order)}
        groups: dict[tuple[str, ...], list[ColumnRef]] = {}
        for key in sorted(self.erased_by, key=lambda k: (rank.get(k.dataset, len(rank)), k.dataset, k.column)):
            groups.setdefault(tuple(v.name for v in self.keys[key]), []).append(key)
        steps: dict[str, list[StepTemplate]] = {}
        for keys in groups.values():
            leader = keys[0]
            datasets = sorted({d for k in keys for d in self.erased_by[k]}, key=lambda d: (rank.get(d, len(rank)), d))
            steps.setdefault(leader.dataset, []).append(StepTemplate(
                Action.DESTROY_SUBJECT_KEY, physical=False,
                params=DestroySubjectKeyParams(keys=tuple(str(k) for k in keys), datasets=tuple(datasets),
                                               ciphertext=tuple(self.held[d] for d in datasets)),
                reason=f"destroy the subjects' keys in the key vault (found by {leader}): the ciphertext under them in "
                       f"{', '.join(datasets)} becomes unreadable, and nothing there is rewritten",
                key_column=leader.column, values_from=self.keys[leader]))
        return steps


def plan_shredding(
    graph: LineageGraph,
    catalog: Mapping[str, CatalogDataset],
    decisions: dict[str, Decision],
    reach: Mapping[str, Reach],
    by_dataset: Mapping[str, dict[ColumnRef, list[Derivation]]],
    lookups: dict[ColumnRef, SurrogateLookup] | None = None,
    stored: StoredSchemas | None = None,
) -> Shredding | None:
    """Decide shred or erase for every dataset the subjects' shredded values reach, in
    ``decisions`` (changed in place; datasets reached only by the ciphertext are added). None, and
    nothing changed, when no dataset the subjects' data reaches declares ``shredded:``.
    ``stored``: dataset -> the schema its table stores (absent: no table there, nothing to check)."""
    origins = {}
    for dataset in sorted(reach):
        entry = catalog.get(dataset)
        if entry is not None and entry.shredded is not None and reach[dataset] in (Reach.START, Reach.DIRECT):
            key = ColumnRef(dataset=dataset, column=entry.shredded.key)
            origins.update({ColumnRef(dataset=dataset, column=c): key for c in entry.shredded.columns})
    if not origins:
        return None
    carries = _walk(graph, catalog, origins)
    held: dict[str, dict[str, list[Carry]]] = {}
    for column, found in carries.items():
        held.setdefault(column.dataset, {})[column.column] = found
    result = Shredding()
    for dataset in sorted(held):
        if dataset not in decisions:  # reached only by the ciphertext: no column names the subjects' rows
            decisions[dataset] = decide(graph, dataset, catalog.get(dataset), {}, Reach.DIRECT, (), lookups)
        _decide(dataset, catalog, decisions, held[dataset], by_dataset.get(dataset, {}), lookups, result,
                (stored or {}).get(dataset))
    return result


def _declared_key(catalog: Mapping[str, CatalogDataset], column: ColumnRef) -> ColumnRef | None:
    entry = catalog.get(column.dataset)
    if entry is None or entry.shredded is None or column.column not in entry.shredded.columns:
        return None
    return ColumnRef(dataset=column.dataset, column=entry.shredded.key)


def _walk(graph: LineageGraph, catalog: Mapping[str, CatalogDataset],
          origins: dict[ColumnRef, ColumnRef]) -> dict[ColumnRef, list[Carry]]:
    """Every column a shredded value reaches through DIRECT edges, with how (shortest first,
    deterministic). A declared shredded column reached on the way starts its own ciphertext; a
    plaintext copied into it by IDENTITY goes on too (the declaration is contradicted)."""
    found: dict[ColumnRef, list[Carry]] = {}
    seen: set[tuple] = set()
    queue = deque(Carry(c, c, k, None, ()) for c, k in sorted(origins.items(), key=lambda item: str(item[0])))
    while queue:
        carry = queue.popleft()
        state = (carry.column, carry.origin, carry.decrypted is None)
        if state in seen:
            continue
        seen.add(state)
        found.setdefault(carry.column, []).append(carry)
        for edge in graph.edges_from(carry.column):
            if edge.kind is not EdgeKind.DIRECT or edge.target is None:
                continue
            key = _declared_key(catalog, edge.target)
            if key is None:
                queue.append(carry.step(edge))
                continue
            queue.append(Carry(edge.target, edge.target, key, None, carry.path + (edge,)))
            if carry.decrypted is not None and edge.subtype is EdgeSubtype.IDENTITY:
                queue.append(carry.step(edge))
    return found


def _decide(dataset: str, catalog: Mapping[str, CatalogDataset], decisions: dict[str, Decision],
            held: dict[str, list[Carry]], own: dict[ColumnRef, list[Derivation]], lookups, result: Shredding,
            stored: StoredSchema | None = None) -> None:
    """Shred or erase for one dataset the shredded values reach, with the reason."""
    entry = catalog.get(dataset)
    decision = decisions[dataset]
    problems: list[tuple[str, str, tuple[ColumnEdge, ...]]] = []  # (column, why it is not shredded, path)
    ciphertext: dict[str, Carry] = {}
    keys: dict[ColumnRef, tuple[ValueSource, ...]] = {}
    for column, carries in sorted(held.items()):
        plain = [c for c in carries if c.decrypted is not None]
        if plain:
            first = min(plain, key=lambda c: (len(c.path), str(c.origin)))
            problems.append((column, first.problem(), first.path))
            if entry is not None and entry.shredded is not None and column in entry.shredded.columns:
                decision.warnings.append(f"catalog.{dataset}.shredded lists {column} as ciphertext, but lineage copies "
                                         f"plaintext into it ({first.problem()}): planned for physical erasure")
            continue
        for carry in sorted(carries, key=lambda c: (len(c.path), str(c.origin))):
            names = _key_values(decisions, carry.key)
            if not names:
                problems.append((column, f"column {column} holds ciphertext of {carry.origin} under {carry.key}'s key, "
                                 "which holds no value of the subjects: the plan cannot name the key to destroy", carry.path))
                break
            keys[carry.key] = names
            ciphertext.setdefault(column, carry)
    # The subject ids the vault finds the keys by (of every key whose values reach here, decrypted
    # or not): a column holding one is the key's handle, not plaintext of the subject's data.
    handles = {v for carries in held.values() for c in carries for v in _key_values(decisions, c.key)}
    subject_ids: list[str] = []
    said = {column for column, _, _ in problems}  # one reason per column is enough
    for ref, found in sorted(own.items(), key=lambda item: item[0].column):
        relevant = [d for d in found if not _through_ciphertext(d, catalog)]
        if ref.column in said:
            continue
        if relevant and all(d.kind <= USABLE and value_source(d, lookups) in handles for d in relevant):
            subject_ids.append(ref.column)
        elif relevant:
            problems.append((ref.column, _plaintext(ref.column, relevant), relevant[0].path))
    if entry is not None and entry.format is DatasetFormat.VIEW:
        return  # stores no rows: no action either way
    columns: tuple[CiphertextColumn, ...] = ()
    if ciphertext and not problems:
        columns = tuple(_ciphertext_column(column, carry, dataset, decision, keys, catalog)
                        for column, carry in sorted(ciphertext.items()))
        for column, why in _stored_problems(columns, stored):
            problems.append((column, why, ciphertext[column].path))
            if entry is not None and entry.shredded is not None and column in entry.shredded.columns:
                decision.warnings.append(f"catalog.{dataset}.shredded lists {column} as ciphertext, but {why}: planned "
                                         "for physical erasure")
    if ciphertext and not problems:
        decisions[dataset] = Decision(dataset, DatasetStatus.SHRED, RULE_SHRED, _shred_reason(keys, ciphertext, subject_ids),
                                      key_column=decision.key_column, values_from=decision.values_from,
                                      path=decision.path or describe_path(next(iter(ciphertext.values())).path),
                                      warnings=decision.warnings, forms=decision.forms)
        for key, names in keys.items():
            result.keys[key] = names
            result.erased_by.setdefault(key, []).append(dataset)
        result.held[dataset] = CiphertextHeld(dataset=dataset, columns=columns)
        return
    if not problems:
        return
    why = "; ".join(text for _, text, _ in problems)
    if decision.status is DatasetStatus.ERASE:
        decision.reason += f"; erase, not shred: {why}"
    elif decision.status is DatasetStatus.NO_ACTION:
        decisions[dataset] = Decision(dataset, DatasetStatus.MANUAL_REVIEW, RULE_OPAQUE,
                                      f"{why}; no column identifies the subjects' rows (not shred)",
                                      path=describe_path(problems[0][2]), warnings=decision.warnings)
    else:
        decision.reason += f"; not shred: {why}"


def _ciphertext_column(column: str, carry: Carry, dataset: str, decision: Decision,
                       keys: Mapping[ColumnRef, tuple[ValueSource, ...]],
                       catalog: Mapping[str, CatalogDataset]) -> CiphertextColumn:
    """What the resolve step reads of one ciphertext column: the column of this dataset holding the
    id whose key encrypts it (the declared key in the declaring dataset; elsewhere a column the
    lineage says holds that key's values, the dataset's key column first), its origin, and where
    its plaintext is kept."""
    if carry.key.dataset == dataset:
        subject: str | None = carry.key.column
    else:
        names = {v.name for v in keys.get(carry.key, ())}
        candidates = [c for c, forms in sorted(decision.forms.items()) if names & {v.name for v in forms}]
        subject = decision.key_column if decision.key_column in candidates else (candidates[0] if candidates else None)
    origin = catalog.get(carry.origin.dataset)
    context = origin.shredded.context if origin is not None and origin.shredded is not None else ""
    return CiphertextColumn(column=column, origin=str(carry.origin), subject_column=subject,
                            plaintext=plaintext_set(str(carry.origin)), context=context)


def _stored_problems(columns: tuple[CiphertextColumn, ...], stored: StoredSchema | None) -> list[tuple[str, str]]:
    """Why the stored schema says a column that should hold ciphertext does not: absent, stored as a
    type that cannot hold the shred library's ciphertext, or spelt twice (names differing in case
    only); and a subject column that is not there. None when no table is stored yet."""
    if stored is None:
        return []
    problems = []
    for column in columns:
        found = stored.find(column.column)
        if not found:
            problems.append((column.column, f"column {column.column} is not in the table's stored schema (columns: "
                             f"{', '.join(c.name for c in stored.columns)}), so it holds no ciphertext there"))
        elif len(found) > 1:
            problems.append((column.column, f"the table stores {' and '.join(c.name for c in found)}, which differ "
                             "only in case: which one holds the ciphertext is ambiguous"))
        elif not found[0].binary:
            problems.append((column.column, f"column {found[0].name} is stored as {found[0].type}, which cannot hold "
                             "piitracer's ciphertext (binary): it is not ciphertext"))
        if column.subject_column is not None and len(stored.find(column.subject_column)) != 1:
            problems.append((column.column, f"the subject id column {column.subject_column} of ciphertext column "
                             f"{column.column} is not (exactly once) in the table's stored schema"))
    return problems


def _key_values(decisions: Mapping[str, Decision], key: ColumnRef) -> tuple[ValueSource, ...]:
    """The value sets the lineage says a shredded dataset's key column holds: the subjects' ids
    whose keys the vault holds (none: the subjects' values do not name the key)."""
    decision = decisions.get(key.dataset)
    return decision.forms.get(key.column, ()) if decision is not None else ()


def _through_ciphertext(derivation: Derivation, catalog: Mapping[str, CatalogDataset]) -> bool:
    """Whether a subject value's derivation starts at or goes through a shredded column: from there
    on the value is that column's ciphertext, which the ciphertext walk judges."""
    refs = [derivation.source] + [edge.target for edge in derivation.path if edge.target is not None]
    return any(_declared_key(catalog, ref) is not None for ref in refs)


def _plaintext(column: str, found: list[Derivation]) -> str:
    """Why a column that holds a subject value other than the key's subject id keeps the dataset
    from being shredded."""
    best = min(found, key=lambda d: (d.kind, len(d.path), str(d.source)))
    if best.kind is DerivationKind.AGGREGATED:
        return f"column {column} aggregates {best.source}"
    if best.kind is DerivationKind.OPAQUE:
        return f"column {column} holds {best.source} through a transform"
    if best.expression and best.expression != column_expression(best.source.column):
        return f"column {column} holds {best.source} as {best.expression}"
    return f"column {column} holds {best.source}, not ciphertext"


def _shred_reason(keys: dict[ColumnRef, tuple[ValueSource, ...]], ciphertext: dict[str, Carry],
                  subject_ids: list[str]) -> str:
    named = sorted(str(k) for k in keys)
    under = f"{named[0]}'s key: destroyed with the key" if len(named) == 1 else \
        f"the keys of {', '.join(named)}: destroyed with the keys"
    parts = [f"{column} {_how_held(carry)}" for column, carry in sorted(ciphertext.items())]
    parts += [f"{column} holds the key's subject id" for column in subject_ids]
    return f"ciphertext under {under} ({'; '.join(parts)})"


def _how_held(carry: Carry) -> str:
    if not carry.path:
        return "stored as ciphertext"
    joins = [edge.join_equality for edge in carry.path if edge.join_equality]
    if joins:
        return f"equals {carry.origin} through the join {joins[0]}"
    return f"copies {carry.origin}"
