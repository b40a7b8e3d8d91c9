"""Which column identifies the subjects' rows in each reached dataset, by the rules of design.md:

1. identity of the subject key (renamed is fine), 2. identity of another identifier,
3. a deterministic transform known from SQL, then a surrogate key assigned per subject key (read
at run time from the dataset that maps them), 4. otherwise ``manual_review`` with the reason.
Aggregates without an identifying group key -> ``recompute``; views and datasets only influenced
through INDIRECT edges -> ``no_action``. Nothing reached is dropped silently.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from piitracer.graph.lineage_graph import LineageGraph, Reach
from piitracer.model.lineage import ColumnRef
from piitracer.model.plan import DatasetStatus, SurrogateLookup, ValueKind, ValueSource
from piitracer.model.workspace import CatalogDataset, DatasetFormat, ReplicaManagement
from piitracer.planner.derivations import USABLE, Derivation, DerivationKind, describe_path

RULES = {
    DerivationKind.SUBJECT_KEY: "1: identity of the subject key",
    DerivationKind.IDENTIFIER: "2: identity of another identifier",
    DerivationKind.COMPUTED: "3: deterministic transform known from SQL",
    DerivationKind.SURROGATE: "3s: surrogate key assigned per subject key, read from the dataset that maps them",
}
# The same rules when the key column equals the source's value through an inner equi-join.
RULES_THROUGH_JOIN = {
    DerivationKind.SUBJECT_KEY: "1: equal to the subject key through an equi-join",
    DerivationKind.IDENTIFIER: "2: equal to another identifier through an equi-join",
    DerivationKind.COMPUTED: "3: deterministic transform of a value equal through an equi-join",
    DerivationKind.SURROGATE: "3s: surrogate key equal through an equi-join, read from the dataset that maps it",
}
RULE_OPAQUE = "4: holds the subject's data but cannot be filtered"
RULE_AGGREGATE = "aggregation without an identifying group key"
RULE_VIEW = "view: stores no rows"
RULE_INDIRECT = "influenced only through INDIRECT edges"
RULE_FLOW = "written from a reached dataset with no column lineage"
RULE_EXTERNAL = "external system"
RULE_UNCATALOGUED = "not in the catalog"


@dataclass
class Decision:
    """The planner's working record for one dataset (becomes a DatasetDecision)."""

    dataset: str
    status: DatasetStatus
    rule: str
    reason: str
    key_column: str | None = None
    values_from: tuple[ValueSource, ...] = ()
    path: tuple[str, ...] = ()
    warnings: list[str] = field(default_factory=list)
    # Column -> the value sets the lineage says it holds (what the verifier searches it for).
    forms: dict[str, tuple[ValueSource, ...]] = field(default_factory=dict)


def value_source(derivation: Derivation, lookups: dict[ColumnRef, SurrogateLookup] | None = None) -> ValueSource:
    """The named value set the resolve step makes for one derivation (a surrogate key's with its
    ``lookup``, from ``lookups``)."""
    if derivation.kind is DerivationKind.SURROGATE:
        assert derivation.lookup is not None
        return ValueSource(name=f"{derivation.lookup}~surrogate", kind=ValueKind.SURROGATE, source=derivation.source,
                           lookup=(lookups or {})[derivation.lookup])
    if derivation.kind is DerivationKind.COMPUTED:
        digest = hashlib.sha256(f"{derivation.source}|{derivation.expression}".encode()).hexdigest()[:10]
        return ValueSource(name=f"{derivation.source}~{digest}", kind=ValueKind.COMPUTED,
                           source=derivation.source, expression=derivation.expression)
    return ValueSource(name=str(derivation.source), kind=ValueKind.IDENTIFIER, source=derivation.source)


def decide(
    graph: LineageGraph,
    dataset: str,
    entry: CatalogDataset | None,
    derivations: dict[ColumnRef, list[Derivation]],
    reach: Reach,
    indirect_path: tuple[str, ...] = (),
    lookups: dict[ColumnRef, SurrogateLookup] | None = None,
) -> Decision:
    """The decision for one reached dataset (``lookups``: every surrogate key's mapping)."""
    info = graph.dataset(dataset)
    fmt = entry.format if entry else None
    own = {ref: found for ref, found in derivations.items() if ref.dataset == dataset}
    decision = _by_key_rules(dataset, info.columns, own, reach, indirect_path, lookups or {})
    decision.forms = value_forms(own, lookups)
    if fmt is DatasetFormat.VIEW:
        return Decision(dataset, DatasetStatus.NO_ACTION, RULE_VIEW,
                        "a view stores no rows: it reads its inputs, which the plan erases",
                        key_column=decision.key_column, path=decision.path, forms=decision.forms)
    if fmt is DatasetFormat.EXTERNAL:
        key = f" by {decision.key_column}" if decision.key_column else ""
        return Decision(dataset, DatasetStatus.MANUAL_REVIEW, RULE_EXTERNAL,
                        f"piitracer cannot touch this system: its owner erases the subjects{key}",
                        key_column=decision.key_column, values_from=decision.values_from, path=decision.path,
                        forms=decision.forms)
    if entry is not None and entry.replica_of is not None and decision.status is DatasetStatus.ERASE:
        kept = ("its replication carries the primary's erasure: verified only, after the propagation wait"
                if entry.replica_of.managed_by is ReplicaManagement.REPLICATION else
                "a pipeline writes it: erased by its own steps after the primary")
        decision.reason += f"; replica of {entry.replica_of.dataset}: {kept}"
    if entry is None and decision.status is not DatasetStatus.NO_ACTION:
        decision.warnings.append(f"{dataset} is not in the catalog: add it with its format and location")
        return Decision(dataset, DatasetStatus.MANUAL_REVIEW, RULE_UNCATALOGUED,
                        f"holds the subject's data ({decision.reason}) but its format and location are unknown",
                        key_column=decision.key_column, values_from=decision.values_from,
                        path=decision.path, warnings=decision.warnings, forms=decision.forms)
    return decision


def value_forms(own: dict[ColumnRef, list[Derivation]],
                lookups: dict[ColumnRef, SurrogateLookup] | None = None) -> dict[str, tuple[ValueSource, ...]]:
    """Every column of one dataset that holds a subject's value in a form piitracer can compute
    or read (an identifier, a computed key, a value equal through a join, a surrogate key), with
    those forms."""
    forms = {}
    for ref, found in sorted(own.items(), key=lambda item: item[0].column):
        sources = {value_source(d, lookups) for d in found if d.kind <= USABLE}
        if sources:
            forms[ref.column] = tuple(sorted(sources, key=lambda v: v.name))
    return forms


def _by_key_rules(
    dataset: str,
    columns: list[str],
    own: dict[ColumnRef, list[Derivation]],
    reach: Reach,
    indirect_path: tuple[str, ...],
    lookups: dict[ColumnRef, SurrogateLookup],
) -> Decision:
    column, found = best_key(columns, own)
    if column is not None:
        usable = [d for d in found if d.kind <= USABLE]
        values = tuple(sorted({value_source(d, lookups) for d in usable}, key=lambda v: v.name))
        best = min(usable, key=lambda d: (d.kind, d.via_join is not None, len(d.path)))
        sources = ", ".join(v.expression or _described(v) for v in values)
        reason = f"{column} holds {sources}"
        rule = RULES[best.kind]
        if best.via_join:
            rule = RULES_THROUGH_JOIN[best.kind]
            reason += f": equal to {best.source} through the join {best.via_join}"
        decision = Decision(dataset, DatasetStatus.ERASE, rule, reason, key_column=column, values_from=values,
                            path=describe_path(best.path))
        unusable = [d for d in found if d.kind > USABLE and d.why_opaque]
        for d in unusable:
            decision.warnings.append(f"key column {column} also receives values that cannot be recomputed: {d.why_opaque}")
        return decision
    opaque = sorted((d for found in own.values() for d in found if d.kind is DerivationKind.OPAQUE),
                    key=lambda d: (str(d.column), str(d.source)))
    if opaque:
        return Decision(dataset, DatasetStatus.MANUAL_REVIEW, RULE_OPAQUE, opaque[0].why_opaque or "",
                        path=describe_path(opaque[0].path))
    aggregated = sorted((d for found in own.values() for d in found if d.kind is DerivationKind.AGGREGATED),
                        key=lambda d: (str(d.column), str(d.source)))
    if aggregated:
        columns_hit = ", ".join(sorted({str(d.column.column) for d in aggregated}))
        return Decision(dataset, DatasetStatus.RECOMPUTE, RULE_AGGREGATE,
                        f"{columns_hit} aggregate the subjects' values with no identifying group key: "
                        "no row is the subject's; rebuild it after its inputs are erased",
                        path=describe_path(aggregated[0].path))
    if reach is Reach.FLOW:
        return Decision(dataset, DatasetStatus.MANUAL_REVIEW, RULE_FLOW,
                        "a job writes it from a dataset holding the subjects' data, but no column lineage says what it holds",
                        path=indirect_path)
    return Decision(dataset, DatasetStatus.NO_ACTION, RULE_INDIRECT,
                    "the subjects' values only filter, join, group or order its rows: it holds none of them",
                    path=indirect_path)


def best_key(columns: list[str], own: dict[ColumnRef, list[Derivation]]) -> tuple[str | None, list[Derivation]]:
    """The column that identifies the subjects' rows best among ``own`` (one dataset's reached
    columns), with its derivations; (None, []) when none does. A better derivation kind wins, then a
    column that holds the value by a projection over one equal only through a join, then the
    dataset's column order."""
    order = {name: index for index, name in enumerate(columns)}
    # A surrogate key assigned in this very dataset is known only through another of its columns.
    keyed = [(min((d.kind, d.lookup is not None and d.lookup.dataset == ref.dataset, d.via_join is not None)
                  for d in found if d.kind <= USABLE),
              order.get(ref.column, len(order)), ref.column, found)
             for ref, found in own.items() if any(d.kind <= USABLE for d in found)]
    if not keyed:
        return None, []
    _, _, column, found = min(keyed, key=lambda item: item[:3])
    return column, found


def _described(value: ValueSource) -> str:
    if value.lookup is None:
        return value.name
    lookup = value.lookup
    return (f"the surrogate key {lookup.dataset}.{lookup.value_column} ({lookup.how}), read at run time from "
            f"{lookup.dataset} by its {lookup.key_column}")
