"""Build a :class:`DeletionPlan` from the lineage graph, the catalog, the policy and a request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from piitracer.graph.lineage_graph import LineageGraph, Reach
from piitracer.model.lineage import ColumnRef
from piitracer.model.plan import (
    NO_FILE_WORK,
    Action,
    DatasetDecision,
    DatasetStatus,
    DeletionPlan,
    PlanRequest,
    ResolveCapture,
    Step,
    StepEngine,
    ValueKind,
    ValueSource,
)
from piitracer.model.table_state import TableState
from piitracer.model.settings import IcebergSettings, SparkSettings
from piitracer.model.stored import StoredSchemas
from piitracer.model.workspace import CatalogDataset, ClassifiedBy, CloneMode, Policy
from piitracer.planner.deadlines import deadline_for
from piitracer.planner.decisions import Decision, decide
from piitracer.planner.derivations import derive, describe_path, seeds
from piitracer.planner.ordering import dataset_order, order_steps
from piitracer.planner.physical import StepTemplate, steps_for
from piitracer.planner.templates import EngineRefused, template_for
from piitracer.planner.subjects import SubjectValueError, check_subjects, key_type_of
from piitracer.planner.shredding import plan_shredding
from piitracer.planner.surrogates import ranking_notes, surrogate_lookups
from piitracer.planner.guard_points import guard_points
from piitracer.planner.errors import PlanningError

LOGICAL_ERASE_ACTIONS = {Action.DELETE_ROWS, Action.EQUALITY_DELETE, Action.REWRITE_FILES, Action.REWRITE_ARCHIVE}


@dataclass(frozen=True)
class _Pending:
    dataset: str
    template: StepTemplate


def build_plan(
    graph: LineageGraph,
    catalog: Mapping[str, CatalogDataset],
    policy: Policy,
    request: PlanRequest,
    table_states: Mapping[str, TableState] | None = None,
    live_types: Mapping[str, str] | None = None,
    labels: tuple[str, ...] = (),
    iceberg: IcebergSettings | None = None,
    spark: SparkSettings | None = None,
    stored: StoredSchemas | None = None,
) -> DeletionPlan:
    """The ordered, per-format erasure plan for every subject of ``request``. Pure and
    deterministic: the same inputs give a byte-identical plan.

    ``live_types`` maps ``dataset.column`` to the type the live table's schema gives a source key
    column (where the catalog declares none); every subject value is parsed strictly against it
    (``labels`` name each subject's position in messages). ``iceberg`` and ``spark`` (the workspace's
    ``iceberg:`` and ``spark:`` settings) choose the engine of each Iceberg step (``planner/engines.py``).
    ``stored`` maps a dataset to the schema its table stores: a dataset that would be crypto-shredded
    is erased physically where a column that should hold ciphertext is not stored as such
    (``planner/shredding.py``).

    Examples:
        A user id copied into a daily table: resolve first, then each dataset upstream first, each by
        the column that holds the subject's key.

        >>> from datetime import datetime, timezone
        >>> from piitracer.model.lineage import ColumnEdge, ColumnRef, EdgeKind, EdgeSubtype, LineageBatch, Origin, OriginKind
        >>> from piitracer.model.plan import PlanRequest, Subject
        >>> from piitracer.model.workspace import CatalogDataset, Policy
        >>> user_id = ColumnRef(dataset="prod.payments", column="user_id")
        >>> graph = LineageGraph.build(LineageBatch(column_edges=(ColumnEdge(
        ...     source=user_id, target_dataset="analytics.daily", target_column="customer_id", kind=EdgeKind.DIRECT,
        ...     subtype=EdgeSubtype.IDENTITY, origin=Origin(kind=OriginKind.SQL, file="daily.sql", line=1)),)))
        >>> catalog = {"prod.payments": CatalogDataset(format="parquet", location="wh/payments", identifiers=("user_id",),
        ...                                            column_types={"user_id": "bigint"}),
        ...            "analytics.daily": CatalogDataset(format="parquet", location="wh/daily")}
        >>> received = datetime(2026, 3, 1, tzinfo=timezone.utc)
        >>> request = PlanRequest(sources=(user_id,),
        ...                       subjects=(Subject(value="8841302", request_id="dsr-1", received_at=received),))
        >>> plan = build_plan(graph, catalog, Policy(), request)
        >>> [(step.id, step.action.value, step.dataset, step.key_column) for step in plan.steps]
        [('s001', 'resolve', 'prod.payments', None), ('s002', 'rewrite_files', 'prod.payments', 'user_id'), ('s003', 'rewrite_files', 'analytics.daily', 'customer_id')]
        >>> plan.decision("analytics.daily").rule
        '1: identity of the subject key'
        >>> plan.deadline_at  # received + policy.deadline (30 days)
        datetime.datetime(2026, 3, 31, 0, 0, tzinfo=datetime.timezone.utc)
        >>> build_plan(graph, catalog, Policy(), request).plan_id == plan.plan_id  # deterministic
        True
        >>> typo = PlanRequest(sources=(user_id,),
        ...                    subjects=(Subject(value="8841302.0", request_id="dsr-2", received_at=received),))
        >>> build_plan(graph, catalog, Policy(), typo, labels=("--subject #1",))
        Traceback (most recent call last):
        piitracer.planner.errors.PlanningError: --subject #1: the value is not an exact bigint: it has a decimal point (a fraction is never rounded to an id) (source prod.payments.user_id is bigint); nothing was planned
    """
    _validate(graph, catalog, request)
    try:
        key_types = {ref: key_type_of(ref, catalog[ref.dataset], live_types or {}) for ref in request.sources}
        check_subjects(request.subjects, request.sources, key_types, catalog, labels)
    except SubjectValueError as error:
        raise PlanningError(str(error)) from None
    identifiers = {ref.dataset: catalog[ref.dataset].identifiers for ref in request.sources}
    starts = seeds(graph, list(request.sources), identifiers)
    derivations = derive(graph, starts)
    reach, indirect_paths = _reach(graph, [s.column for s in starts])
    by_dataset: dict[str, dict[ColumnRef, list]] = {}
    for ref, found in derivations.items():
        by_dataset.setdefault(ref.dataset, {})[ref] = found
    lookups = surrogate_lookups(graph, catalog, by_dataset)
    decisions = {d: decide(graph, d, catalog.get(d), by_dataset.get(d, {}), how, indirect_paths.get(d, ()), lookups)
                 for d, how in sorted(reach.items())}
    for dataset, decision in decisions.items():
        if decision.status is not DatasetStatus.ERASE and graph.ranking_edges:
            # A number that is not the person's (a ranking by amount) is said, not silently ignored.
            notes = ranking_notes(graph, dataset, set(derivations))
            if notes:
                decision.reason += "; " + "; ".join(notes)
    shredding = plan_shredding(graph, catalog, decisions, reach, by_dataset, lookups, stored)
    order = dataset_order(graph, set(decisions))
    received = min(subject.received_at for subject in request.subjects)
    templates = {d: steps_for(decisions[d].status, catalog.get(d), (table_states or {}).get(d), policy) for d in order.datasets}
    if shredding is not None:
        for dataset, destroy in shredding.destroy_steps(order.datasets).items():
            templates[dataset] = [*destroy, *templates[dataset]]
    engines = _engines(request, order, decisions, templates, catalog, iceberg, spark)
    steps = _ordered_steps(request, order, decisions, templates, catalog, engines)
    summaries = tuple(_summary(decisions[d], catalog.get(d), order.group.get(d), received, policy) for d in order.datasets)
    warnings = [w for d in order.datasets for w in decisions[d].warnings]
    warnings += [t.warning for d in order.datasets for t in templates[d] if t.warning]
    warnings = _unconfirmed_identifiers(identifiers, catalog) + warnings
    plan = DeletionPlan(
        sources=request.sources,
        subjects=tuple(sorted(request.subjects, key=lambda s: (s.request_id, s.value))),
        deadline_at=received + policy.deadline,
        resolve=_captures(request, identifiers, decisions, key_types, catalog),
        steps=steps,
        datasets=summaries,
        warnings=tuple(warnings),
        guard_points=guard_points(graph, catalog, request.sources, decisions),
    )
    return plan.with_id()


def _engines(request: PlanRequest, order, decisions: dict[str, Decision], templates: dict[str, list[StepTemplate]],
             catalog: Mapping[str, CatalogDataset], iceberg: IcebergSettings | None,
             spark: SparkSettings | None) -> dict[str, StepEngine]:
    """The engine of each dataset the plan reads (its sources) or runs table work on."""
    worked = {d for d in order.datasets if any(t.action not in NO_FILE_WORK for t in templates[d])}
    worked |= {ref.dataset for ref in request.sources}
    iceberg, spark = iceberg or IcebergSettings(), spark or SparkSettings()
    engines = {}
    for dataset in sorted(d for d in worked if d in catalog):
        template = template_for(catalog[dataset].format)
        try:
            engine = template.engine(dataset, catalog[dataset], iceberg, spark) if template else None
        except EngineRefused as error:
            raise PlanningError(str(error)) from None
        if engine is not None:
            engines[dataset] = engine
    return engines


def _unconfirmed_identifiers(identifiers: Mapping[str, Sequence[str]], catalog: Mapping[str, CatalogDataset]) -> list[str]:
    """A warning per source whose identifiers (the values resolved and erased everywhere) are
    only the classifier's proposal: a wrong one erases or misses rows by a guess."""
    return [f"{dataset}: the plan relies on identifiers {list(columns)} that are classified_by: auto "
            "(catalog classify's proposal in catalog.discovered.yaml): confirm them in piitracer.yaml"
            for dataset, columns in sorted(identifiers.items())
            if catalog[dataset].classified_by is ClassifiedBy.AUTO]


def _validate(graph: LineageGraph, catalog: Mapping[str, CatalogDataset], request: PlanRequest) -> None:
    for ref in request.sources:
        if ref.dataset not in catalog:
            raise PlanningError(f"source {ref}: dataset {ref.dataset!r} is not in the catalog (catalog.{ref.dataset} expected)")
        if not graph.has_column(ref):
            known = ", ".join(graph.dataset(ref.dataset).columns) if graph.has_dataset(ref.dataset) else "none"
            raise PlanningError(f"source {ref}: unknown column {ref.column!r} (known columns: {known})")


def _reach(graph: LineageGraph, columns: list[ColumnRef]) -> tuple[dict[str, Reach], dict[str, tuple[str, ...]]]:
    """Datasets reached from any seed column, with the strongest way, and for datasets reached only
    indirectly the path that explains it."""
    rank = {Reach.FLOW: 0, Reach.INDIRECT: 1, Reach.DIRECT: 2, Reach.START: 3}
    reach: dict[str, Reach] = {}
    paths: dict[str, tuple[str, ...]] = {}
    for column in columns:
        explanations: dict[str, list] | None = None  # one walk per column, only when needed
        for dataset, how in graph.reach(column).datasets.items():
            if how is Reach.START:
                how = Reach.DIRECT if dataset != column.dataset else Reach.START
            if dataset not in reach or rank[how] > rank[reach[dataset]]:
                reach[dataset] = how
            if how in (Reach.INDIRECT, Reach.FLOW) and dataset not in paths:
                if explanations is None:
                    explanations = graph.explanations(column)
                path = explanations.get(dataset, [])
                paths[dataset] = describe_path(tuple(path)) if path else (f"a job reads a reached dataset and writes {dataset}",)
    return reach, paths


def _ordered_steps(
    request: PlanRequest,
    order,
    decisions: dict[str, Decision],
    templates: dict[str, list[StepTemplate]],
    catalog: Mapping[str, CatalogDataset],
    engines: Mapping[str, StepEngine],
) -> tuple[Step, ...]:
    rank = {d: i for i, d in enumerate(order.datasets)}
    nodes: dict[str, tuple[int, int]] = {}
    depends: dict[str, set[str]] = {}
    pending: dict[str, _Pending | str] = {}
    resolve_keys = []
    for source in sorted({ref.dataset for ref in request.sources}):
        key = f"resolve:{source}"
        nodes[key], depends[key], pending[key] = (-1, 0), set(), source
        resolve_keys.append(key)
    keys_of: dict[str, list[str]] = {}
    for dataset in order.datasets:
        keys_of[dataset] = []
        for index, template in enumerate(templates[dataset]):
            key = f"{dataset}#{index}"
            nodes[key] = (rank[dataset], index)
            depends[key] = {keys_of[dataset][-1]} if keys_of[dataset] else set(resolve_keys)
            pending[key] = _Pending(dataset, template)
            keys_of[dataset].append(key)
    _upstream_first(order, templates, keys_of, depends)
    _shallow_clones_before_source_expiry(order, templates, keys_of, depends, catalog)
    _replicas_after_primary(order, keys_of, depends, catalog)
    sequence = order_steps(nodes, depends)
    ids = {key: f"s{number:03d}" for number, key in enumerate(sequence, start=1)}
    steps = []
    for number, key in enumerate(sequence, start=1):
        item = pending[key]
        after = tuple(sorted(ids[k] for k in depends[key]))
        if isinstance(item, str):
            steps.append(_resolve_step(number, ids[key], item, decisions, engines.get(item)))
        else:
            steps.append(_dataset_step(number, ids[key], item, after, decisions[item.dataset], order, catalog, engines))
    return tuple(steps)


def _upstream_first(order, templates, keys_of, depends) -> None:
    """A dataset's logical step waits for its upstreams' logical steps, so a pipeline re-run cannot
    re-populate an erased dataset; in a cycle, every member's logical step precedes the group's
    physical steps."""
    for dataset in order.datasets:
        if not keys_of[dataset]:
            continue
        first = keys_of[dataset][0]
        for upstream in order.upstream[dataset]:
            if keys_of[upstream]:
                depends[first].add(keys_of[upstream][0])
        group = order.group.get(dataset)
        if group is None:
            continue
        physical = [k for k, t in zip(keys_of[dataset], templates[dataset]) if t.physical]
        for member in (d for d in order.datasets if order.group.get(d) == group and d != dataset):
            if keys_of[member] and physical:
                depends[physical[0]].add(keys_of[member][0])


def _shallow_clones_before_source_expiry(order, templates, keys_of, depends, catalog) -> None:
    """A shallow clone shares the source's data files: the source may only expire and remove them
    after the clone has erased the subjects and stopped referencing the old files."""
    for clone in order.datasets:
        entry = catalog.get(clone)
        if entry is None or entry.clone_of is None or entry.clone_of.mode is not CloneMode.SHALLOW:
            continue
        source = entry.clone_of.dataset
        if source not in keys_of or not keys_of[clone]:
            continue
        clone_done = keys_of[clone][-1]
        for key, template in zip(keys_of[source], templates[source]):
            if template.action in (Action.EXPIRE_SNAPSHOTS, Action.REMOVE_ORPHAN_FILES):
                depends[key].add(clone_done)


def _replicas_after_primary(order, keys_of, depends, catalog) -> None:
    """A replica's first step waits for the primary's last: a pipeline-managed replica is erased
    once the primary is clean (a pipeline copy made meanwhile carries no subject row), and a
    replication-managed one's propagation wait starts when the primary's erasure is complete."""
    for replica in order.datasets:
        entry = catalog.get(replica)
        if entry is None or entry.replica_of is None or not keys_of[replica]:
            continue
        primary = keys_of.get(entry.replica_of.dataset)
        if primary:
            depends[keys_of[replica][0]].add(primary[-1])


def _resolve_step(number: int, step_id: str, source: str, decisions: dict[str, Decision],
                  engine: StepEngine | None = None) -> Step:
    values = sorted({v for d in decisions.values() for v in d.values_from if v.source.dataset == source},
                    key=lambda v: v.name)
    return Step(
        order=number, id=step_id, dataset=source, action=Action.RESOLVE, values_from=tuple(values),
        reason="capture every identifier and computed key of the subjects' rows before anything is deleted",
        engine=engine,
    )


def _dataset_step(number, step_id, item: _Pending, after, decision: Decision, order, catalog, engines) -> Step:
    template = item.template
    entry = catalog.get(item.dataset)
    logical = template.action in LOGICAL_ERASE_ACTIONS
    manual = template.action in (Action.MANUAL, Action.MANUAL_REVIEW)
    engine = engines.get(item.dataset) if template.action not in NO_FILE_WORK else None
    # A tag's or branch's rewrite deletes the same rows as the dataset's logical step, in that ref;
    # pyiceberg's rewrite of data files carrying delete files takes only those that may hold a subject.
    matches_rows = logical or manual or template.action is Action.REWRITE_REF or (
        template.action is Action.REWRITE_DATA_FILES and engine is StepEngine.PYICEBERG)
    destroys_keys = template.action is Action.DESTROY_SUBJECT_KEY  # names the key column and values of the key
    return Step(
        order=number,
        id=step_id,
        dataset=item.dataset,
        action=template.action,
        group=order.group.get(item.dataset),
        key_column=template.key_column if destroys_keys else decision.key_column if matches_rows else None,
        values_from=template.values_from if destroys_keys else decision.values_from if matches_rows else (),
        depends_on=after,
        params=template.params,
        blocking=template.blocking,
        owner=entry.owner if entry is not None and manual else None,
        reason=template.warning or template.reason or (decision.reason if manual or logical else None),
        lineage_path=decision.path if logical or manual or template.action is Action.RECOMPUTE else (),
        engine=engine,
    )


def _summary(decision: Decision, entry: CatalogDataset | None, group, received, policy) -> DatasetDecision:
    deadline = None
    if decision.status is DatasetStatus.ERASE and entry is not None:
        deadline = deadline_for(entry, received, policy.deadline)
    return DatasetDecision(
        dataset=decision.dataset,
        format=entry.format.value if entry is not None else None,
        status=decision.status,
        key_column=decision.key_column,
        rule=decision.rule,
        reason=decision.reason,
        values_from=decision.values_from,
        lineage_path=decision.path,
        group=group,
        deadline=deadline,
        warnings=tuple(decision.warnings),
        table=entry.table if entry is not None else None,
        location=entry.location if entry is not None else None,
        column_forms={column: tuple(v.name for v in sources) for column, sources in decision.forms.items()},
    )


def _captures(request: PlanRequest, identifiers, decisions: dict[str, Decision], key_types,
              catalog: Mapping[str, CatalogDataset]) -> tuple[ResolveCapture, ...]:
    """Per source: its key columns with their types, the identifiers to capture, and every computed
    value any planned dataset keys on or holds in a column (the verifier searches those too)."""
    captures = []
    for source in sorted({ref.dataset for ref in request.sources}):
        refs = sorted((ref for ref in request.sources if ref.dataset == source), key=lambda r: r.column)
        keys = tuple(ref.column for ref in refs)
        held = {v for d in decisions.values() for forms in d.forms.values() for v in forms}
        computed = sorted({v for d in decisions.values() for v in d.values_from} | held, key=lambda v: v.name)
        computed = [v for v in computed if v.kind in (ValueKind.COMPUTED, ValueKind.SURROGATE) and v.source.dataset == source]
        normalised = {ref.column: catalog[source].normalised[ref.column] for ref in refs if ref.column in catalog[source].normalised}
        captures.append(ResolveCapture(
            dataset=source, key_columns=keys, key_types={ref.column: str(key_types[ref]) for ref in refs},
            normalised=normalised,
            identifiers=tuple(sorted(set(identifiers.get(source, ())) | set(keys))),
            computed=tuple(computed),
        ))
    return tuple(captures)


__all__ = ["PlanningError", "build_plan", "ValueSource"]
