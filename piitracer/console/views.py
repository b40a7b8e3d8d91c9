"""What the console's pages show, read from the request store and the audit log.

Nothing here reads a subject value: the board comes from the request store's rows (ids, dates,
states, counts; never the sealed values), a request page from its audit trail (decisions, step
states, verification counts, attestations: subjects appear there only as HMACs, which the pages do
not show either). The one place a plan's values are opened is :func:`attest`, which needs them to
HMAC the attestation entry's subjects exactly as ``piitracer attest`` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from piitracer.audit import AuditLog
from piitracer.console.tokens import ConsoleUser
from piitracer.workspace.model import Workspace
from piitracer.model.audit import AuditEntry, EntryKind
from piitracer.model.errors import NotFoundError, RefusedError
from piitracer.model.plan import PERSON_ACTIONS
from piitracer.model.requests import ErasureRequest, RequestState
from piitracer.render.report_facts import PROOF_METHODS, ReportFacts, report_facts
from piitracer.requests.board import owner_name

PERSON_ACTION_NAMES = frozenset(action.value for action in PERSON_ACTIONS)


class ConsoleRefused(RefusedError):
    """What a signed-in user asked for cannot be done (not theirs, not open, no evidence);
    ``status`` is the HTTP answer (403: not this user's to do, 409: not in a state for it, 400:
    the form lacks something)."""

    def __init__(self, message: str, status: int = 409) -> None:
        super().__init__(message)
        self.status = status


def dataset_owner(workspace: Workspace, dataset: str) -> str | None:
    entry = workspace.config.catalog.get(dataset)
    return owner_name(entry.owner) if entry is not None else None


@dataclass
class BoardRow:
    request: ErasureRequest
    days_left: int
    overdue: bool


def board(requests: list[ErasureRequest], now: datetime, state: str | None, overdue_only: bool) -> list[BoardRow]:
    """The board's rows (the store's order: by deadline, then id), filtered by state and overdue."""
    rows = [BoardRow(r, r.days_left(now), r.overdue(now)) for r in requests]
    return [row for row in rows if (not state or row.request.state.value == state) and (not overdue_only or row.overdue)]


@dataclass
class StepView:
    step_id: str
    dataset: str
    action: str
    state: str
    owner: str | None  # the console user the catalog names
    catalog_owner: str | None  # the catalog's text as written
    attested_by: str | None = None

    @property
    def is_person_step(self) -> bool:
        return self.action in PERSON_ACTION_NAMES

    @property
    def open(self) -> bool:
        return self.is_person_step and self.state != "attested"


@dataclass
class EntryView:
    seq: int
    recorded_at: str
    kind: str
    action: str


@dataclass
class RequestView:
    request: ErasureRequest | None
    facts: ReportFacts | None
    steps: list[StepView] = field(default_factory=list)
    entries: list[EntryView] = field(default_factory=list)
    verification: list[dict[str, Any]] = field(default_factory=list)  # latest verification per dataset
    complete: bool = False  # the latest verification found nothing and left nothing open

    @property
    def open_steps(self) -> list[StepView]:
        return [s for s in self.steps if s.open]


def request_view(workspace: Workspace, log: AuditLog | None, request: ErasureRequest | None, request_id: str,
                 now: datetime, verified=None) -> RequestView:
    """A request page's content (``log`` None: nothing recorded yet; ``verified``: the log's
    verification when the caller already did it). NotFoundError when neither the store nor the
    log knows the request."""
    entries = log.entries(request_id=request_id) if log is not None else []
    if request is None and not entries:
        raise NotFoundError(f"no request {request_id!r}")
    facts = None
    if any(e.kind is EntryKind.PLAN for e in entries):
        from piitracer.api import request_trail

        facts = report_facts(request_trail(log, request_id, verified), now)
    view = RequestView(request=request, facts=facts, entries=[_entry_view(e) for e in entries])
    if facts is None:
        return view
    attested_by = {str(a.get("step_id")): str(a.get("attested_by")) for a in facts.attestations}
    for step in facts.steps:
        entry = workspace.config.catalog.get(step["dataset"])
        view.steps.append(StepView(step_id=step["step_id"], dataset=step["dataset"], action=step["action"],
                                   state=step["state"], owner=dataset_owner(workspace, step["dataset"]),
                                   catalog_owner=entry.owner if entry is not None else step.get("owner"),
                                   attested_by=attested_by.get(step["step_id"])))
    if facts.verification is not None:
        view.complete = bool(facts.verification.get("complete")) and bool(facts.verification.get("all_erased"))
        for checked in facts.verification["datasets"]:
            view.verification.append({"dataset": checked["dataset"], "state": checked["state"],
                                      "files_scanned": checked.get("files_scanned", 0),
                                      "findings": checked.get("findings_count", 0),
                                      "proven": how_proven(checked), "checked_at": facts.verification["checked_at"]})
    return view


def how_proven(checked: dict[str, Any]) -> str:
    """How the verifier proved one dataset, in words: its Parquet chunks by rule and bytes read,
    else the verdict's reason."""
    proofs = checked.get("chunk_proofs") or {}
    parts = [f"{proofs[m]} chunk(s) by {m.replace('_', ' ')}" for m in PROOF_METHODS if proofs.get(m)]
    if proofs.get("bytes_total"):
        parts.append(f"{proofs.get('bytes_read', 0):,} of {proofs['bytes_total']:,} bytes read")
    if checked.get("reason"):
        parts.append(str(checked["reason"]))
    return "; ".join(parts) or f"{checked.get('files_scanned', 0)} file(s) scanned"


def _entry_view(entry: AuditEntry) -> EntryView:
    body = entry.body
    if entry.kind is EntryKind.REQUEST:
        action = f"{body.get('from_state') or 'new'} → {body.get('to_state')}: {body.get('action')}"
    elif entry.kind is EntryKind.STEP:
        action = f"{body.get('step_id')} {body.get('action', '')} {body.get('dataset', '')}: {body.get('state')}"
    elif entry.kind is EntryKind.ATTESTATION:
        action = f"{body.get('step_id')} {body.get('action')} {body.get('dataset')} attested by {body.get('attested_by')}"
    elif entry.kind is EntryKind.VERIFICATION:
        action = "verified: " + ("complete" if body.get("complete") and body.get("all_erased") else "not complete")
    elif entry.kind is EntryKind.PLAN:
        action = f"planned: {len(body.get('steps', []))} steps over {len(body.get('datasets', []))} datasets"
    else:
        action = entry.kind.value
    return EntryView(seq=entry.seq, recorded_at=entry.recorded_at, kind=entry.kind.value, action=action)


@dataclass
class WaitingStep:
    request_id: str
    deadline_at: datetime
    overdue: bool
    step: StepView


def waiting_for(workspace: Workspace, log: AuditLog | None, requests: list[ErasureRequest], owner: str,
                now: datetime) -> list[WaitingStep]:
    """Every open person step of an open request whose dataset ``owner`` owns, by deadline."""
    if log is None:
        return []
    found: list[WaitingStep] = []
    seen_plans: set[tuple[str, str]] = set()
    verified = log.verify()  # once for the page, not once per request
    for request in requests:
        if request.state is RequestState.CLOSED or request.plan_id is None:
            continue
        view = request_view(workspace, log, request, request.request_id, now, verified)
        for step in view.open_steps:
            if step.owner == owner and (request.plan_id, step.step_id) not in seen_plans:
                # A batch plan's step is one piece of work for all its requests: listed once, under
                # the first request (by deadline) that waits for it.
                seen_plans.add((request.plan_id, step.step_id))
                found.append(WaitingStep(request.request_id, request.deadline_at, request.overdue(now), step))
    return found


def attest(session, user: ConsoleUser, person, request_id: str, step_id: str, evidence_text: str,
           evidence_file: tuple[str, bytes] | None) -> AuditEntry:
    """Record ``user``'s attestation of a person step of the request's plan through the session
    (:meth:`piitracer.api.session.Session.attest`), signed with ``person``'s own key (the one their
    token opened): the same entry ``piitracer attest --evidence ...`` writes with their token. Refused
    (:class:`ConsoleRefused`) for a viewer, a closed or unplanned request, a step that is not a
    person's step, a dataset the user does not own, or no evidence at all."""
    import hashlib

    from piitracer.api import Evidence

    if not user.can_attest:
        raise ConsoleRefused(f"{user.name} is a viewer: only owners attest", 403)
    request = session.request(request_id)
    if request is None:
        raise NotFoundError(f"no request {request_id!r}")
    if request.state is RequestState.CLOSED:
        raise ConsoleRefused(f"request {request_id} is closed: nothing is left to attest")
    if request.plan_id is None:
        raise ConsoleRefused(f"request {request_id} has no plan yet")
    plan = session.plan_of_request(request_id)
    step = next((s for s in plan.steps if s.id == step_id), None)
    if step is None or step.action not in PERSON_ACTIONS:
        raise ConsoleRefused(f"step {step_id}: not a person's step of request {request_id}'s plan")
    owner = dataset_owner(session.workspace, step.dataset)
    if owner != user.name:
        raise ConsoleRefused(f"step {step_id} ({step.dataset}) belongs to {owner or 'no owner in the catalog'}, "
                             f"not {user.name}: an owner attests only the steps of the datasets they own", 403)
    if evidence_file is not None:
        name, data = evidence_file
        evidence = Evidence(hashlib.sha256(data).hexdigest(), "file", name or None)
    elif evidence_text.strip():
        evidence = Evidence(hashlib.sha256(evidence_text.encode("utf-8")).hexdigest(), "text")
    else:
        raise ConsoleRefused("give evidence: a text (a ticket, a statement) or a file; only its SHA-256 is kept", 400)
    return session.attest(plan, step.id, person, evidence)
