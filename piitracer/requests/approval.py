"""Four eyes before anything is deleted: with ``policy.approval: required`` a plan runs only once a
person listed under ``approvers:`` who did not plan it has approved it.

Everything is read from and written to the audit log, so the rule and its evidence are the same
thing: the plan entry says who planned (``planned_by``), an ``approval`` entry says who approved,
bound to the plan's id (another plan, even one step different, has another id and needs its own
approval). The session calls :func:`require_approval` before ``execute`` writes anything, and
:func:`approve` for the console's button and ``piitracer approve``.

Who planned: the name given (``piitracer plan --by NAME``, the API's ``by``), else the operating
system's user running piitracer (``getpass.getuser()``). A default that is always there means a
plan made without thinking of approval still names a person, and the name the planner would have
to lie with is their own account's: a CLI user with the keys can claim any name, which is why an
approval by CLI needs the approver's own console token, not only their name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from piitracer.audit import AuditLog, record_approval_entry
from piitracer.model.audit import AuditEntry, EntryKind
from piitracer.model.errors import NeedsApprovalError, RefusedError
from piitracer.model.plan import DeletionPlan


class ApprovalRefused(RefusedError):
    """An approval that cannot be given: not an approver, the planner themself, a plan not
    recorded here (or recorded without its planner)."""


def this_user() -> str:
    """The operating system's user running piitracer (who planned, when no name is given)."""
    import getpass
    import os

    try:
        return getpass.getuser()
    except Exception:  # no login name in this environment (a container without a passwd entry)
        return f"uid-{os.getuid()}" if hasattr(os, "getuid") else "unknown"


@dataclass(frozen=True)
class ApprovalState:
    """Where a plan stands: who planned it (None: not recorded), who approved it (None: nobody
    who may), and every approval entry."""

    plan_id: str
    planned_by: str | None
    approved_by: str | None
    planned_at: str | None = None

    @property
    def approved(self) -> bool:
        return self.approved_by is not None


def approval_state(log: AuditLog, plan_id: str, approvers: Sequence[str]) -> ApprovalState:
    """The plan's approval as the audit log records it: an approval counts when its approver is
    listed under ``approvers`` now and is not the planner."""
    entries = log.entries(plan_id=plan_id)
    plan = next((e for e in entries if e.kind is EntryKind.PLAN), None)
    planner = plan.body.get("planned_by") if plan is not None else None
    valid = [e for e in entries if e.kind is EntryKind.APPROVAL and e.body.get("approved_by") in approvers
             and e.body.get("approved_by") != planner]
    return ApprovalState(plan_id, planner, valid[0].body["approved_by"] if valid else None,
                         plan.recorded_at if plan is not None else None)


def who_may_approve(approvers: Sequence[str], planner: str | None) -> str:
    """The approvers' names in words (the planner left out)."""
    names = [name for name in approvers if name != planner]
    if not names:
        return ("nobody: piitracer.yaml lists no approver" + (f" other than {planner}" if approvers else "")
                + " (add one under approvers:)")
    return ", ".join(names)


def require_approval(log: AuditLog, plan_id: str, approvers: Sequence[str]) -> ApprovalState:
    """Refuse (:class:`NeedsApprovalError`) a plan no approver other than its planner approved."""
    state = approval_state(log, plan_id, approvers)
    if not state.approved:
        raise NeedsApprovalError(
            f"plan {plan_id[:16]} needs a second person's approval before it runs (policy.approval: required"
            + (f"; planned by {state.planned_by}" if state.planned_by else "") + "): who may approve: "
            + who_may_approve(approvers, state.planned_by)
            + f" (the console's approvals page, or piitracer approve PLAN --by NAME); nothing was changed")
    return state


def approve(log: AuditLog, plan: DeletionPlan, by: str, approvers: Sequence[str]) -> AuditEntry:
    """Record ``by``'s approval of ``plan`` (returns the existing entry when they approved it
    already). Refused (:class:`ApprovalRefused`) for a name not listed under ``approvers``, for the
    planner, and for a plan whose planning the log does not record."""
    state = approval_state(log, plan.plan_id, approvers)
    if by not in approvers:
        raise ApprovalRefused(f"{by} is not listed under approvers: in piitracer.yaml: who may approve plan "
                              f"{plan.plan_id[:16]}: {who_may_approve(approvers, state.planned_by)}")
    if state.planned_at is None:
        raise ApprovalRefused(f"plan {plan.plan_id[:16]} is not recorded in this workspace's audit log: plan it here "
                              "(piitracer plan -o) and approve that plan")
    if state.planned_by is None:
        raise ApprovalRefused(f"plan {plan.plan_id[:16]} was recorded without who planned it (before approvals): plan "
                              "it again (piitracer plan -o --by NAME) so that a second person can approve it")
    if by == state.planned_by:
        raise ApprovalRefused(f"{by} planned {plan.plan_id[:16]}: a plan is approved by a second person (who may: "
                              f"{who_may_approve(approvers, state.planned_by)})")
    for entry in log.entries(plan_id=plan.plan_id):
        if entry.kind is EntryKind.APPROVAL and entry.body.get("approved_by") == by:
            return entry
    return record_approval_entry(log, plan, approved_by=by, planned_by=state.planned_by)
