"""Erasure requests below the session: queue them (values checked strictly, kept only under
per-request data keys), plan the due ones as one batch window (estimated from table metadata),
filter the board, and delete piitracer's other copies of a closing request's values. The moves of
a request and their audit entries are :mod:`piitracer.requests.lifecycle`'s; the use cases that
open the stores are :class:`piitracer.api.session.Session`'s. Rooms: requests, audit, executor
(journal, estimate), ingest (rejected OpenLineage bodies), crypto, planner."""

from __future__ import annotations

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
from piitracer.model.lineage import ColumnRef
from piitracer.model.plan import DeletionPlan, Subject
from piitracer.model.requests import ErasureRequest, RequestState
from piitracer.planner.build import PlanningError
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
               now: datetime | None = None) -> BatchPlan:
    """Plan every queued request (of ``sources`` when given) whose deadline falls within
    ``due_within`` from ``now`` (None: every queued request) as one batch, and estimate it from
    table metadata. Requests left out but due before the next window (``policy.batch_every``) are
    returned as ``cannot_wait``. Requests of different source columns are not mixed: say which
    with ``sources``."""
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
    plan = plan_deletion(workspace, lineage_graph_for(workspace, list(kinds[0])), list(kinds[0]), subjects)
    return BatchPlan(plan, chosen, cannot_wait, estimate_plan_cost(workspace, plan))


def add_requests(workspace: Workspace, store, log: AuditLog, sources: Sequence[str], subjects: Sequence[Subject],
                 labels: Sequence[str] = (), action: str = "added") -> list[ErasureRequest]:
    """Queue requests (grouped by request id), their values checked strictly against the source key
    columns' types exactly as ``plan`` checks them, and recorded in the audit log."""
    refs = []
    for text in sources:
        dataset, _, column = workspace.namer.from_column_name(text).rpartition(".")  # with its catalog too
        if dataset not in workspace.config.catalog:
            raise PlanningError(f"--source {text}: dataset {dataset!r} is not in the catalog")
        refs.append(ColumnRef(dataset=dataset, column=column))
    live = source_key_types(workspace, refs)
    try:
        types = {ref: key_type_of(ref, workspace.config.catalog[ref.dataset], live) for ref in refs}
        check_subjects(subjects, refs, types, workspace.config.catalog, labels)
    except SubjectValueError as error:
        raise PlanningError(str(error)) from None
    return queue(store, log, subjects, [str(r) for r in refs], workspace.config.policy.deadline, action)


def forget_copies(workspace: Workspace, store, request, pairs: list[tuple[str, str]]) -> dict[str, int]:
    """Delete piitracer's other copies of a closing request's values, while they can still be read:
    the rejected OpenLineage bodies (``piitracer serve``) holding one of its subject values or the
    values and computed forms the journal resolved for it (a sealed body the master key cannot open
    is deleted too, and counted apart), then the journal's resolved values. Returns the counts the
    close's audit entry records."""
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


def estimate_plan_cost(workspace: Workspace, plan: DeletionPlan):
    """What ``plan`` will rewrite and cost (``executor.estimate``), with the throughput measured on
    this workspace's journal."""
    from contextlib import nullcontext

    context = execution_context(workspace)
    with Journal(context.journal_path) if context.journal_path.exists() else nullcontext() as journal:
        return estimate_plan(plan, workspace.config.catalog, context.locations, context.store,
                             workspace.config.pricing, journal)


def filter_board(requests: Sequence[ErasureRequest], state: RequestState | str | None = None, overdue: bool = False,
                 now: datetime | None = None) -> list[ErasureRequest]:
    """The requests in ``state`` (all when None); with ``overdue``, only those past their deadline
    at ``now`` and not yet proven erased."""
    now = now or datetime.now(timezone.utc)
    wanted = RequestState(state) if state is not None else None
    return [r for r in requests if (wanted is None or r.state is wanted) and (not overdue or r.overdue(now))]
