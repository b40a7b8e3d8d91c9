"""The request state machine, in one place: every move of a request through its states (queued ->
planned -> executing -> executed -> awaiting_attestation -> verified -> watching -> closed, as
:data:`~piitracer.model.requests.TRANSITIONS` allows) together with its audit entry, so a move is
never made without the entry that proves it.

Callers (the session's use cases) validate their inputs first (subject values against the key
types, a plan's seal and origin); what happens to a request happens here.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Callable, Iterable, Sequence

from piitracer.audit import AnchorError, AuditLog, record_request_entry
from piitracer.audit.recorder import record_request_entries, request_entry
from piitracer.crypto.envelope import ShreddedError
from piitracer.model.errors import NotNowError
from piitracer.model.plan import DeletionPlan, Subject
from piitracer.model.requests import TRANSITIONS, ErasureRequest, RequestState
from piitracer.model.verification import VerificationReport
from piitracer.requests.store import RequestStore


class RequestRefused(NotNowError):
    """A request that cannot make the move asked of it (closed, in another state, other values);
    the message says why and what to do."""


class CloseRefused(RequestRefused):
    """A request that may not be closed yet; the message says why."""


def plan_request_ids(plan: DeletionPlan) -> list[str]:
    """The request ids of a plan's subjects, sorted."""
    return sorted({subject.request_id for subject in plan.subjects})


def subject_pairs(store: RequestStore, request_id: str) -> list[tuple[str, str]]:
    """(request id, value) pairs for an audit entry's HMACs (none once shredded)."""
    try:
        return [(request_id, value) for value in store.values(request_id)]
    except ShreddedError:
        return []


def move_request(store: RequestStore, log: AuditLog, request_id: str, to: RequestState, action: str, *,
                 plan_id: str | None = None, reason: str | None = None, watch_until: datetime | None = None):
    """Change one request's state and record the change in the audit log."""
    before, now = store.move(request_id, to, action, plan_id=plan_id, reason=reason, watch_until=watch_until)
    record_request_entry(log, request_id, subject_pairs(store, request_id), from_state=before.value, to_state=to.value,
                         action=action, plan_id=plan_id, reason=reason)
    return now


def queue(store: RequestStore, log: AuditLog, subjects: Sequence[Subject], sources: Sequence[str], deadline: timedelta,
          action: str = "added") -> list[ErasureRequest]:
    """Queue requests (``subjects`` grouped by request id, values already checked against their key
    types), each recorded in the audit log with its deadline (``deadline`` after its arrival).

    A file of 10,000 requests is one transaction in each store, not 10,000: the requests are
    written to the request store (each under its own data key), their entries appended to the
    audit log in one transaction (in request id order, as one append each would write them), and
    only then is the store's transaction committed, so a failed append keeps no request unrecorded.
    An id already in the store refuses the whole batch before anything is written."""
    grouped: dict[str, list[Subject]] = {}
    for subject in subjects:
        grouped.setdefault(subject.request_id, []).append(subject)
    members_of = sorted(grouped.items())
    batch = []
    for request_id, members in members_of:
        received = min(s.received_at for s in members)
        batch.append((request_id, received, received + deadline, list(sources), [s.value for s in members]))
    unanchored: list[AnchorError] = []

    def record(added: list[ErasureRequest]) -> None:
        try:
            record_request_entries(log, [
                request_entry(request_id, [(request_id, s.value) for s in members], from_state=None,
                              to_state=request.state.value, action=action,
                              details={"deadline_at": request.deadline_at.isoformat(), "subjects": len(members)})
                for request, (request_id, members) in zip(added, members_of)])
        except AnchorError as error:
            # The entries are committed (only their copy outside the workspace failed): the
            # requests they record are kept too, and the error is raised once they are.
            unanchored.append(error)

    added = store.add_batch(batch, action=action, before_commit=record)
    if unanchored:
        raise unanchored[0]
    return added


def mark_planned(store: RequestStore, log: AuditLog, plan: DeletionPlan, plan_text: Callable[[], str],
                 action: str) -> None:
    """Keep a plan (``plan_text()``: its file's text, values sealed) and mark its requests planned.
    Refused for a closed request (its values were shredded) and for a request the store holds with
    other values."""
    for request_id in plan_request_ids(plan):
        stored = store.get(request_id)
        if stored.state is RequestState.CLOSED:
            raise RequestRefused(f"request {request_id} is closed (its values were shredded at {stored.closed_at}): "
                                 "a new erasure needs a new request id")
        if sorted(store.values(request_id)) != sorted(s.value for s in plan.subjects if s.request_id == request_id):
            raise RequestRefused(f"request {request_id} is in the request store with other subject values: "
                                 "use another request id")
    store.keep_plan(plan.plan_id, plan_text())
    for request_id in plan_request_ids(plan):
        stored = store.get(request_id)
        if stored.state is RequestState.QUEUED or stored.plan_id != plan.plan_id:
            move_request(store, log, request_id, RequestState.PLANNED, action, plan_id=plan.plan_id)


def move_plan_requests(store: RequestStore, log: AuditLog, plan: DeletionPlan, to: RequestState, action: str, *,
                       reason: str | None = None, watch_until: datetime | None = None) -> None:
    """Move every open request of a plan that may make the move (closed ones stay closed)."""
    for request_id in plan_request_ids(plan):
        if not store.has(request_id):
            continue
        if to in TRANSITIONS[store.get(request_id).state]:
            move_request(store, log, request_id, to, action, plan_id=plan.plan_id, reason=reason, watch_until=watch_until)


def settle_after_verify(store: RequestStore, log: AuditLog, plan: DeletionPlan, report: VerificationReport,
                        watch: timedelta) -> None:
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


def note_on_requests(store: RequestStore, request_ids: Iterable[str], note: str) -> None:
    """Note something done (an attestation) in the history of each of these requests the store holds."""
    for request_id in request_ids:
        if store.has(request_id):
            store.note(request_id, note)


def close(store: RequestStore, log: AuditLog, request_id: str, now_reason: str | None,
          forget_copies: Callable[[ErasureRequest, list[tuple[str, str]]], dict[str, int]],
          remember: Callable[[ErasureRequest, list[tuple[str, str]]], dict[str, int]] | None = None) -> str:
    """Close a request: refused unless it is watching (verified complete, every person step
    attested) and its watching period is over, or ``now_reason`` says why not to wait. First
    ``remember`` keeps the suppression records of its identifiers (issue 52: keyed hashes, so a
    return is noticed), then ``forget_copies`` deletes piitracer's other copies of its values (the
    journal's, rejected events'), while they can still be read; both return counts for the audit
    entry. Then its data key and sealed values are destroyed, a kept plan that held only closed
    requests is forgotten, and the close (the key's fingerprint, never the key) is recorded.
    Returns the fingerprint."""
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
    pairs = subject_pairs(store, request_id)
    remembered = remember(request, pairs) if remember is not None else {}
    forgotten = forget_copies(request, pairs)
    fingerprint = store.shred(request_id, "closed: values shredded", now_reason)
    if request.plan_id and all(r.state is RequestState.CLOSED for r in store.all() if r.plan_id == request.plan_id):
        store.forget_plan(request.plan_id)
    record_request_entry(log, request_id, pairs, from_state=request.state.value, to_state=RequestState.CLOSED.value,
                         action="closed: data key destroyed, values shredded", plan_id=request.plan_id, reason=now_reason,
                         details={"key_fingerprint": fingerprint, "shredded_at": now.isoformat(), **remembered, **forgotten})
    return fingerprint
