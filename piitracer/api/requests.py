"""Erasure requests below the session: queue them (values checked strictly, kept only under
per-request data keys), plan the due ones as one batch window (estimated from table metadata),
filter the board, and delete piitracer's other copies of a closing request's values. The moves of
a request and their audit entries are :mod:`piitracer.requests.lifecycle`'s; the use cases that
open the stores are :class:`piitracer.api.session.Session`'s. Rooms: requests, audit, executor
(journal, estimate), ingest (rejected OpenLineage bodies), crypto, planner."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Sequence

from piitracer.api.wiring import execution_context
from piitracer.api.lineage import lineage_graph_for
from piitracer.api.plan import plan_deletion, source_key_types
from piitracer.audit import AuditLog
from piitracer.crypto.sealed_body import BodySealer
from piitracer.executor.estimate import estimate_plan
from piitracer.executor.journal import Journal
from piitracer.ingest.openlineage.received import forget_values, has_rejected
from piitracer.model.errors import NotFoundError
from piitracer.model.lineage import ColumnRef
from piitracer.model.plan import DeletionPlan, Subject
from piitracer.model.progress import Progress, report
from piitracer.model.requests import ErasureRequest, RequestState
from piitracer.planner.errors import PlanningError
from piitracer.planner.subjects import SubjectValueError, check_subjects, key_type_of
from piitracer.requests.lifecycle import queue
from piitracer.workspace.layout import StateLayout
from piitracer.workspace.model import Workspace


@dataclass
class BatchPlan:
    """What :func:`batch_plan` chose: the plan (None when no request is due), the requests in it,
    the queued requests left out that are due before the next window, and the estimate."""

    plan: DeletionPlan | None
    requests: list[ErasureRequest]
    cannot_wait: list[ErasureRequest]
    estimate: Any = None  # executor.estimate.PlanEstimate


def batch_plan(workspace: Workspace, store, due_within: timedelta | None, sources: Sequence[str] = (),
               now: datetime | None = None, progress: Progress | None = None) -> BatchPlan:
    """Plan the queued requests due in a window as one batch, estimated from table metadata.

    Requests left out but due before the next window (``policy.batch_every``) are returned as
    ``cannot_wait``. Requests of different source columns are not mixed: say which with
    ``sources``. Nothing is recorded: [`Session.batch_window`][piitracer.api.session.Session.batch_window]
    seals, records and moves them.

    Args:
        workspace: the loaded workspace.
        store (RequestStore): the request store, with the master key (it opens the values).
        due_within: the requests whose deadline falls within this from ``now``; None: every
            queued request.
        sources: only the requests of these source columns (a table named with its catalog too).
        now: the time the window starts; default: now.
        progress: told of the planning, then of each step estimated.

    Returns:
        The plan (None when no request is due), the requests in it, those that cannot wait, and
            the estimate.

    Raises:
        PlanningError: the due requests name different sources, or cannot be planned.
    """
    now = now or datetime.now(timezone.utc)
    wanted = {workspace.namer.from_column_name(text) for text in sources}  # prod.fintech.payments.user_id too
    queued = [r for r in store.all() if r.state is RequestState.QUEUED
              and (not wanted or set(r.sources) <= wanted)]
    chosen = [r for r in queued if due_within is None or r.deadline_at <= now + due_within]
    next_window = now + workspace.config.policy.batch_every
    cannot_wait = [r for r in queued if r not in chosen and r.deadline_at < next_window]
    if not chosen:
        return BatchPlan(None, [], cannot_wait)
    kinds = sorted({r.sources for r in chosen})
    if len(kinds) > 1:
        raise PlanningError("the due requests name different sources (" + "; ".join(", ".join(k) for k in kinds)
                            + "): plan one batch per source with --source DATASET.COLUMN")
    subjects = [Subject(value=value, request_id=r.request_id, received_at=r.received_at)
                for r in chosen for value in store.values(r.request_id)]
    report(progress, f"planning {len(chosen)} request(s)", 0, 1)
    plan = plan_deletion(workspace, lineage_graph_for(workspace, list(kinds[0])), list(kinds[0]), subjects)
    report(progress, f"planning {len(chosen)} request(s)", 1, 1)
    return BatchPlan(plan, chosen, cannot_wait, estimate_plan_cost(workspace, plan, progress))


def add_requests(workspace: Workspace, store, log: AuditLog, sources: Sequence[str], subjects: Sequence[Subject],
                 labels: Sequence[str] = (), action: str = "added", lakehouse=None) -> list[ErasureRequest]:
    """Queue requests, their values checked strictly against the source key columns' types
    exactly as ``plan`` checks them, and recorded in the audit log.

    Args:
        workspace: the loaded workspace.
        store (RequestStore): the request store, with the master key (values are kept under each
            request's data key).
        log: the workspace's audit log.
        sources: the source key columns, ``dataset.column`` (a table named with its catalog too).
        subjects: the subjects; those with the same request id are one request.
        labels: each subject's position for error messages, never its value.
        action: what the request history says of the queueing.
        lakehouse (Lakehouse): the session's places (default: the workspace's, resolved afresh).

    Returns:
        The requests queued.

    Raises:
        PlanningError: a source not in the catalog, a value not of its key column's type.
        RequestError: a request id already in the store.
    """
    refs = []
    for text in sources:
        dataset, _, column = workspace.namer.from_column_name(text).rpartition(".")  # with its catalog too
        if dataset not in workspace.config.catalog:
            raise PlanningError(f"--source {text}: dataset {dataset!r} is not in the catalog")
        refs.append(ColumnRef(dataset=dataset, column=column))
    live = source_key_types(workspace, refs, lakehouse)
    try:
        types = {ref: key_type_of(ref, workspace.config.catalog[ref.dataset], live) for ref in refs}
        check_subjects(subjects, refs, types, workspace.config.catalog, labels)
    except SubjectValueError as error:
        raise PlanningError(str(error)) from None
    return queue(store, log, subjects, [str(r) for r in refs], workspace.config.policy.deadline, action)


def forget_copies(workspace: Workspace, store, request, pairs: list[tuple[str, str]]) -> dict[str, int]:
    """Delete piitracer's other copies of a closing request's values, while they can still be
    read: the rejected OpenLineage bodies (``piitracer serve``) holding one of its subject values
    or the values and computed forms the journal resolved for it (a sealed body the master key
    cannot open is deleted too, and counted apart), then the journal's resolved values.

    Args:
        workspace: the loaded workspace.
        store (RequestStore): the request store, with the master key.
        request (ErasureRequest): the request being closed.
        pairs: its (request id, subject value) pairs.

    Returns:
        The counts the close's audit entry records (value sets and rejected bodies deleted).
    """
    journal_path = StateLayout(workspace.root).journal
    found = {}
    if has_rejected(workspace.root):
        values = {value for _, value in pairs}
        if request.plan_id and journal_path.exists() and pairs:
            with Journal(journal_path) as journal:
                others = journal.resolved_requests(request.plan_id) - {request.request_id}
                sets = journal.load_values(request.plan_id, store.cipher([request.request_id]), skip=others) or {}
            values |= {str(v) for kept in sets.values() for v in kept if isinstance(v, (str, int)) and not isinstance(v, bool)}
        done = forget_values(workspace.root, values, BodySealer(store.wrapper) if store.wrapper is not None else None)
        found = {"rejected_events_checked": done.checked, "rejected_events_deleted_holding_values": done.deleted_holding_values,
                 "rejected_events_deleted_unreadable": done.deleted_unreadable}
    forgotten = 0
    if journal_path.exists():
        with Journal(journal_path) as journal:
            forgotten = journal.forget_request(request.request_id)
    return {"journal_value_sets_deleted": forgotten, **found}


def remember_erased(workspace: Workspace, store, suppression, request, pairs: list[tuple[str, str]]) -> dict[str, int]:
    """Keep the suppression records of a closing request (issue 52), while its values can still be
    read: its subject values (of its source columns) and every identifier and computed form the
    journal resolved for it (of the column or form its value set came from). Only keyed hashes
    are kept (:class:`piitracer.requests.suppression.SuppressionStore`).

    Args:
        workspace: the loaded workspace.
        store (RequestStore): the request store, with the master key.
        suppression (SuppressionStore): the suppression list, with the master key.
        request (ErasureRequest): the request being closed.
        pairs: its (request id, subject value) pairs.

    Returns:
        The count the close's audit entry records.
    """
    from piitracer.requests.suppression import Identifier, identifiers_of, value_type

    identifiers = [Identifier(value, subject_kind(request.sources), value_type(value)) for _, value in pairs]
    journal_path = StateLayout(workspace.root).journal
    if request.plan_id and journal_path.exists() and pairs:
        with Journal(journal_path) as journal:
            others = journal.resolved_requests(request.plan_id) - {request.request_id}
            sets = journal.load_values(request.plan_id, store.cipher([request.request_id]), skip=others) or {}
        kinds = value_set_kinds(_kept_plan(store, request.plan_id)) if sets else {}
        identifiers += identifiers_of(sets, kinds)
    return {"suppression_records_kept": suppression.remember(request.request_id, identifiers)}


def _kept_plan(store, plan_id: str) -> str:
    """The kept plan's text, or an empty plan when the store keeps none (a plan run from its file
    alone): its sets are then remembered by their names, as derived forms (never as a column)."""
    try:
        return store.plan_json(plan_id)
    except NotFoundError:
        return "{}"


SUBJECT_KIND = "subject of "  # the kind of a request's own values: "subject of prod.payments.user_id"
DERIVED = " via "  # in the kind of a value derived from a column (computed, surrogate): never the column's value


def subject_kind(sources: Sequence[str]) -> str:
    """The kind a request's own subject values are remembered as."""
    return SUBJECT_KIND + ",".join(sources)


def value_set_kinds(plan_text: str) -> dict[str, str]:
    """Value set name -> what its values are, read from a kept plan's value sources and resolve
    captures: the column itself (``dataset.column``) only for an identifier set of that column's
    own values; a computed
    form or a surrogate key is ``<column> via <expression or set name>`` (its values are not the
    column's: a surrogate key 42 is not user 42)."""
    kinds: dict[str, str] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            source = node.get("source")
            name = node.get("name")
            if isinstance(name, str) and isinstance(source, dict) and "dataset" in source and "column" in source:
                column = f"{source['dataset']}.{source['column']}"
                own = name == column and not node.get("expression") and not node.get("lookup")
                kinds[name] = column if own else f"{column}{DERIVED}{node.get('expression') or name}"
            if isinstance(node.get("dataset"), str) and isinstance(node.get("identifiers"), list):
                # a resolve capture: each identifier and key column's own values, in a set named after it
                for column in (*node["identifiers"], *(node.get("key_columns") or [])):
                    kinds.setdefault(f"{node['dataset']}.{column}", f"{node['dataset']}.{column}")
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(plan_text))
    return kinds


def estimate_plan_cost(workspace: Workspace, plan: DeletionPlan, progress: Progress | None = None):
    """What a plan will rewrite and cost (``executor.estimate``), with the throughput measured on
    this workspace's journal.

    Args:
        workspace: the loaded workspace (its catalog, locations and ``pricing``).
        plan: the plan.
        progress: told of each step estimated.

    Returns:
        estimate (PlanEstimate): files and bytes to rewrite per step, archive objects, the cost,
            and the time at the measured throughput.
    """
    from contextlib import nullcontext

    context = execution_context(workspace)
    with Journal(context.journal_path) if context.journal_path.exists() else nullcontext() as journal:
        return estimate_plan(plan, workspace.config.catalog, context.locations, context.store,
                             workspace.config.pricing, journal, progress)


def filter_board(requests: Sequence[ErasureRequest], state: RequestState | str | None = None, overdue: bool = False,
                 now: datetime | None = None) -> list[ErasureRequest]:
    """The requests of a board that a person asked for.

    Args:
        requests: the requests.
        state: only those in this state (a ``RequestState`` or its name); None: all.
        overdue: only those past their deadline at ``now`` and not yet proven erased.
        now: the time ``overdue`` is judged at; default: now.

    Returns:
        The requests kept, in the order given.

    Raises:
        ValueError: ``state`` is not a request state's name.
    """
    now = now or datetime.now(timezone.utc)
    wanted = RequestState(state) if state is not None else None
    return [r for r in requests if (wanted is None or r.state is wanted) and (not overdue or r.overdue(now))]
