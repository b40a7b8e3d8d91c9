"""Erasure requests: queue them (values only under per-request data keys), list them (the board),
move them through their states with an audit entry per move, keep a plan's requests as planned,
plan the due ones as one batch window (estimated, within a budget), settle them by what
verification found, and close them (crypto-shred). Rooms: requests (the store), audit, executor
(journal, estimate), ingest (rejected OpenLineage bodies), crypto, planner."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Sequence

from piitracer.api._wiring import execution_context, request_store, request_store_path
from piitracer.api.audit import audit_log, record_plan
from piitracer.api.lineage import lineage_graph_for
from piitracer.api.plan import plan_deletion, plan_file_text, plan_requests, seal_plan, source_key_types
from piitracer.audit import AuditKey, AuditLog, record_estimate_entry, record_request_entry
from piitracer.crypto.envelope import KeyWrapper, ShreddedError
from piitracer.crypto.sealed_body import BodySealer
from piitracer.executor.estimate import estimate_plan
from piitracer.executor.journal import Journal
from piitracer.ingest.openlineage.received import forget_values, has_rejected
from piitracer.workspace.model import Workspace
from piitracer.model.lineage import ColumnRef
from piitracer.model.plan import DeletionPlan, Subject
from piitracer.model.requests import TRANSITIONS, ErasureRequest, RequestState
from piitracer.model.verification import VerificationReport
from piitracer.planner.build import PlanningError
from piitracer.planner.subjects import SubjectValueError, check_subjects, key_type_of


def _subject_pairs(store, request_id: str) -> list[tuple[str, str]]:
    """(request id, value) pairs for the audit entry's HMACs (none once shredded)."""
    try:
        return [(request_id, value) for value in store.values(request_id)]
    except ShreddedError:
        return []


def move_request(store, log: AuditLog, request_id: str, to: RequestState, action: str, *, plan_id: str | None = None,
                 reason: str | None = None, watch_until: datetime | None = None):
    """Change one request's state and record the change in the audit log."""
    before, now = store.move(request_id, to, action, plan_id=plan_id, reason=reason, watch_until=watch_until)
    record_request_entry(log, request_id, _subject_pairs(store, request_id), from_state=before.value, to_state=to.value,
                         action=action, plan_id=plan_id, reason=reason)
    return now


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
    wanted = {text.strip().lower() for text in sources}
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
        dataset, _, column = text.strip().lower().rpartition(".")
        if dataset not in workspace.config.catalog:
            raise PlanningError(f"--source {text}: dataset {dataset!r} is not in the catalog")
        refs.append(ColumnRef(dataset=dataset, column=column))
    live = source_key_types(workspace, refs)
    try:
        types = {ref: key_type_of(ref, workspace.config.catalog[ref.dataset], live) for ref in refs}
        check_subjects(subjects, refs, types, workspace.config.catalog, labels)
    except SubjectValueError as error:
        raise PlanningError(str(error)) from None
    grouped: dict[str, list[Subject]] = {}
    for subject in subjects:
        grouped.setdefault(subject.request_id, []).append(subject)
    added = []
    for request_id, members in sorted(grouped.items()):
        received = min(s.received_at for s in members)
        request = store.add(request_id, received, received + workspace.config.policy.deadline, [str(r) for r in refs],
                            [s.value for s in members], action=action)
        record_request_entry(log, request_id, [(request_id, s.value) for s in members], from_state=None,
                             to_state=request.state.value, action=action, details={"deadline_at": request.deadline_at.isoformat(),
                                                                                   "subjects": len(members)})
        added.append(request)
    return added


def register_plan_requests(workspace: Workspace, store, log: AuditLog, plan: DeletionPlan, action: str) -> None:
    """Make sure every request of a plan is in the store (a plan made through the API, or before
    the store existed, adds its requests from its own values), then mark them planned."""
    missing = [s for s in plan.subjects if not store.has(s.request_id)]
    if missing:
        add_requests(workspace, store, log, [str(ref) for ref in plan.sources], missing, action=f"{action} (from the plan)")
    for request_id in plan_requests(plan):
        stored = store.get(request_id)
        if stored.state is RequestState.CLOSED:
            raise PlanningError(f"request {request_id} is closed (its values were shredded at {stored.closed_at}): "
                                "a new erasure needs a new request id")
        if sorted(store.values(request_id)) != sorted(s.value for s in plan.subjects if s.request_id == request_id):
            raise PlanningError(f"request {request_id} is in the request store with other subject values: "
                                "use another request id")
    store.keep_plan(plan.plan_id, plan_file_text(plan, store.cipher(plan_requests(plan))))
    for request_id in plan_requests(plan):
        stored = store.get(request_id)
        if stored.state is RequestState.QUEUED or stored.plan_id != plan.plan_id:
            move_request(store, log, request_id, RequestState.PLANNED, action, plan_id=plan.plan_id)


def move_plan_requests(store, log: AuditLog, plan: DeletionPlan, to: RequestState, action: str, *,
                       reason: str | None = None, watch_until: datetime | None = None) -> None:
    """Move every open request of a plan (closed ones stay closed)."""
    for request_id in plan_requests(plan):
        if not store.has(request_id):
            continue
        current = store.get(request_id).state
        if to in TRANSITIONS[current]:
            move_request(store, log, request_id, to, action, plan_id=plan.plan_id, reason=reason, watch_until=watch_until)


def settle_after_verify(store, log: AuditLog, plan: DeletionPlan, report: VerificationReport, watch: timedelta) -> None:
    """Move a plan's requests by what verification found: complete -> verified -> watching (until
    ``watch`` from now); only person steps open -> awaiting_attestation; anything found -> executed."""
    if report.complete:
        move_plan_requests(store, log, plan, RequestState.VERIFIED, "verified complete")
        move_plan_requests(store, log, plan, RequestState.WATCHING, "watching for resurrected rows",
                           watch_until=datetime.now(timezone.utc) + watch)
        return
    states = {d.state.value for d in report.open_items()}
    if states == {"awaiting_attestation"}:
        move_plan_requests(store, log, plan, RequestState.AWAITING_ATTESTATION, "verified: person steps open")
    else:
        move_plan_requests(store, log, plan, RequestState.EXECUTED, "verified: not complete",
                           reason=", ".join(sorted(states)))


class CloseRefused(PlanningError):
    """A request that may not be closed yet; the message says why."""


def close_request(workspace: Workspace, store, log: AuditLog, request_id: str, now_reason: str | None = None) -> str:
    """Close a request: refused unless it is watching (verified complete, every person step
    attested) and its watching period is over, or ``now_reason`` says why not to wait. Destroys its
    data key and its sealed values, deletes its resolved values and computed forms from the journal,
    forgets kept plans that held only closed requests, and records the close (the key's
    fingerprint, never the key) in the audit log. Returns the fingerprint."""
    request = store.get(request_id)
    if request.state is RequestState.CLOSED:
        raise CloseRefused(f"request {request_id} is already closed (at {request.closed_at})")
    if request.state is not RequestState.WATCHING:
        raise CloseRefused(f"request {request_id} is {request.state.value}: only a request verified complete (every "
                           "person step attested) and watched can be closed")
    now = datetime.now(timezone.utc)
    if request.watch_until and now < request.watch_until and not now_reason:
        raise CloseRefused(f"request {request_id} is watched until {request.watch_until:%Y-%m-%d %H:%M} UTC (rows "
                           "resurrected by a late pipeline run are caught meanwhile): wait, or pass --now REASON")
    pairs = _subject_pairs(store, request_id)
    rejected = _forget_rejected_events(workspace, store, request, pairs)  # while the values can still be read
    fingerprint = store.shred(request_id, "closed: values shredded", now_reason)
    journal_path = execution_context(workspace).journal_path
    forgotten = 0
    if journal_path.exists():
        with Journal(journal_path) as journal:
            forgotten = journal.forget_request(request_id)
    if request.plan_id and all(r.state is RequestState.CLOSED for r in store.all() if r.plan_id == request.plan_id):
        store.forget_plan(request.plan_id)
    record_request_entry(log, request_id, pairs, from_state=request.state.value, to_state=RequestState.CLOSED.value,
                         action="closed: data key destroyed, values shredded", plan_id=request.plan_id, reason=now_reason,
                         details={"key_fingerprint": fingerprint, "journal_value_sets_deleted": forgotten,
                                  "shredded_at": now.isoformat(), **rejected})
    return fingerprint


def _forget_rejected_events(workspace: Workspace, store, request, pairs: list[tuple[str, str]]) -> dict[str, int]:
    """Delete the rejected OpenLineage bodies (``piitracer serve``) that hold one of the request's
    values: its subject values and the values and computed forms the journal resolved for it. A
    sealed body the master key cannot open is deleted too, and counted apart in the audit entry."""
    if not has_rejected(workspace.root):
        return {}
    values = {value for _, value in pairs}
    journal_path = execution_context(workspace).journal_path
    if request.plan_id and journal_path.exists() and pairs:
        with Journal(journal_path) as journal:
            others = journal.resolved_requests(request.plan_id) - {request.request_id}
            sets = journal.load_values(request.plan_id, store.cipher([request.request_id]), skip=others) or {}
        values |= {str(v) for found in sets.values() for v in found if isinstance(v, (str, int)) and not isinstance(v, bool)}
    done = forget_values(workspace.root, values, BodySealer(store.wrapper) if store.wrapper is not None else None)
    return {"rejected_events_checked": done.checked, "rejected_events_deleted_holding_values": done.deleted_holding_values,
            "rejected_events_deleted_unreadable": done.deleted_unreadable}


def estimate_plan_cost(workspace: Workspace, plan: DeletionPlan):
    """What ``plan`` will rewrite and cost (``executor.estimate``), with the throughput measured on
    this workspace's journal."""
    from contextlib import nullcontext

    context = execution_context(workspace)
    with Journal(context.journal_path) if context.journal_path.exists() else nullcontext() as journal:
        return estimate_plan(plan, workspace.config.catalog, context.locations, context.store,
                             workspace.config.pricing, journal)


# ---- the commands' use cases: each opens the workspace's request store and audit log itself ------


def keep_plan(workspace: Workspace, plan: DeletionPlan, *, audit_key: AuditKey, master: KeyWrapper,
              action: str = "planned") -> str:
    """``plan -o``: queue the plan's requests in the request store (planned), record the plan's id
    and its subjects' keyed digests in the audit log (execute runs only plans recorded here), and
    return the plan file's text, every subject value sealed under its request's data key."""
    with request_store(workspace, master) as store:
        with audit_log(workspace, key=audit_key) as log:
            register_plan_requests(workspace, store, log, plan, action)
            record_plan(log, plan)
        return plan_file_text(plan, store.cipher(plan_requests(plan)))


def request_board(workspace: Workspace, state: RequestState | str | None = None, overdue: bool = False,
                  now: datetime | None = None) -> list[ErasureRequest]:
    """The request queue (``piitracer requests``): every request, or those in ``state``; with
    ``overdue``, only those past their deadline (at ``now``) and not yet proven erased."""
    now = now or datetime.now(timezone.utc)
    wanted = RequestState(state) if state is not None else None
    with request_store(workspace) as store:
        return [r for r in store.all() if (wanted is None or r.state is wanted) and (not overdue or r.overdue(now))]


def queue_requests(workspace: Workspace, sources: Sequence[str], subjects: Sequence[Subject], labels: Sequence[str] = (),
                   *, audit_key: AuditKey, master: KeyWrapper) -> list[ErasureRequest]:
    """``requests add``: :func:`add_requests` in the workspace's request store and audit log."""
    with request_store(workspace, master) as store, audit_log(workspace, key=audit_key) as log:
        return add_requests(workspace, store, log, sources, subjects, labels)


def shred_request(workspace: Workspace, request_id: str, now_reason: str | None = None, *, audit_key: AuditKey,
                  master: KeyWrapper) -> str:
    """``requests close``: :func:`close_request` in the workspace's request store and audit log;
    the destroyed data key's fingerprint."""
    with request_store(workspace, master) as store, audit_log(workspace, key=audit_key) as log:
        return close_request(workspace, store, log, request_id, now_reason)


def note_attestation(workspace: Workspace, plan: DeletionPlan, step_id: str, attested_by: str) -> None:
    """Note an attestation on each of the plan's requests the request store holds (no store: nothing)."""
    if not request_store_path(workspace).exists():
        return
    with request_store(workspace) as store:
        for request_id in plan_requests(plan):
            if store.has(request_id):
                store.note(request_id, f"attested {step_id} by {attested_by.strip()}")


@dataclass
class BatchWindow:
    """What ``batch plan`` did: the requests chosen (:class:`BatchPlan`), whether its estimate is over
    the budget, and the plan file's text (values sealed) when the plan was kept, else None."""

    chosen: BatchPlan
    over_budget: bool
    text: str | None = None


def plan_batch_window(workspace: Workspace, due_within: timedelta | None, sources: Sequence[str] = (), *,
                      audit_key: AuditKey, master: KeyWrapper, budget: float | None = None,
                      over_budget_ok: bool = False) -> BatchWindow:
    """``batch plan``: :func:`batch_plan`, then, unless nothing is due or the estimate is over
    ``budget`` (and ``over_budget_ok`` is not given), the plan sealed, its requests planned, the
    plan and its estimate recorded in the audit log."""
    with request_store(workspace, master) as store:
        chosen = batch_plan(workspace, store, due_within, sources)
        estimate = chosen.estimate
        over = budget is not None and estimate is not None and estimate.cost > budget
        if chosen.plan is None or (over and not over_budget_ok):
            return BatchWindow(chosen, over)
        plan = seal_plan(chosen.plan, audit_key)
        with audit_log(workspace, key=audit_key) as log:
            register_plan_requests(workspace, store, log, plan, "planned (batch)")
            record_plan(log, plan)
            record_estimate_entry(log, plan, estimate.as_dict())
        return BatchWindow(chosen, over, plan_file_text(plan, store.cipher(plan_requests(plan))))
