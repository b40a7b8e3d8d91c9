"""What an approver reads before a plan may run: every plan waiting for approval, and for one plan
what it will delete (datasets, steps, the estimate from table metadata) and why (the requests it
erases, each dataset's decision and its reason). Read from the request store (which plans are
planned and not yet run) and the audit log (the plan entry, who planned, approvals); no subject
value is read, except by the estimate, which prunes files by the plan's key values inside the
server and shows only counts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from piitracer.model.audit import EntryKind
from piitracer.model.errors import NotFoundError
from piitracer.model.requests import RequestState
from piitracer.requests.approval import ApprovalState, approval_state, who_may_approve


@dataclass
class PlanSummary:
    """One plan as the approvals page lists it."""

    plan_id: str
    state: ApprovalState
    requests: list[str]
    deadline_at: str
    datasets: list[dict[str, Any]]
    steps: list[dict[str, Any]]
    who_may_approve: str
    estimate: list[dict[str, Any]] = field(default_factory=list)  # per rewriting step: files, bytes
    estimate_note: str | None = None

    @property
    def erased(self) -> list[dict[str, Any]]:
        """The datasets the plan erases from (a delete or rewrite), not those left as they are."""
        return [d for d in self.datasets if d["status"] != "no_action"]


def plan_summary(log, plan_id: str, approvers, request_ids: list[str] | None = None) -> PlanSummary:
    """A plan as the audit log records it (NotFoundError when it does not)."""
    entry = next((e for e in log.entries(plan_id=plan_id) if e.kind is EntryKind.PLAN), None)
    if entry is None:
        raise NotFoundError(f"no plan {plan_id[:16]} in the audit log")
    body = entry.body
    state = approval_state(log, plan_id, approvers)
    requests = request_ids if request_ids is not None else [r["request_id"] for r in body.get("requests", [])]
    return PlanSummary(plan_id=plan_id, state=state, requests=requests, deadline_at=body.get("deadline_at", ""),
                       datasets=body.get("datasets", []), steps=body.get("steps", []),
                       who_may_approve=who_may_approve(approvers, state.planned_by))


def waiting_plans(session, approvers) -> list[PlanSummary]:
    """Every plan whose requests are planned (not run yet) and that no approver approved, oldest
    planning first."""
    if not session.has_requests() or session.keys.audit is None or not session.has_audit_log():
        return []
    store, log = session.requests(), session.audit(create=False)
    found = []
    for plan_id in store.plan_ids(RequestState.PLANNED):
        try:
            summary = plan_summary(log, plan_id, approvers, store.request_ids_of_plan(plan_id))
        except NotFoundError:
            continue
        if not summary.state.approved:
            found.append(summary)
    return sorted(found, key=lambda s: (s.state.planned_at or "", s.plan_id))


def with_estimate(session, summary: PlanSummary) -> PlanSummary:
    """The summary with the plan's estimate (files and bytes each rewriting step may touch, from
    metadata and statistics); a plan that cannot be estimated says why."""
    from piitracer.api.requests import estimate_plan_cost

    try:
        plan = session.plan_of_request(summary.requests[0])
        estimate = estimate_plan_cost(session.workspace, plan)
    except Exception as error:  # the estimate informs; it must not hide the plan
        summary.estimate_note = f"no estimate: {type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}"
        return summary
    summary.estimate = [{"step_id": s.step_id, "dataset": s.dataset, "action": s.action, "files": s.files,
                         "bytes": s.bytes, "upper_bound": s.upper_bound, "basis": s.basis} for s in estimate.steps]
    if not summary.estimate:
        summary.estimate_note = "no step of this plan rewrites table files"
    return summary
