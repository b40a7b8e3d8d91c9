"""Four eyes before anything is deleted: with ``policy.approval: required`` a plan runs only once a
person listed under ``approvers:``, other than the person who planned it, has approved it — each of
them proven by their own secret (issue 50).

Everything is read from and written to the audit log, so the rule and its evidence are the same
thing. The plan entry carries the planner's signed statement and the policy in force when it was
made (``policy.approval`` and the approvers); an ``approval`` entry carries the approver's signed
statement, bound to the plan's id and its planner (another plan, even one step different, has
another id and needs its own approval). A signature counts for a person only with the key the log
registered for them at that point (``audit/signatures.py``): a typed name, an operating-system
account, ``$USER``, or an entry written with the audit key alone counts for nobody.

An approval counts when its signer is listed under ``approvers:`` now, is not the planner, and
signed with another key than the planner's. The session calls :func:`require_approval` (and
:func:`check_policy`) before ``execute`` writes anything, and :func:`approve` for the console's
button, ``piitracer approve`` and the API.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from piitracer.audit import AuditLog, record_approval_entry
from piitracer.audit.signatures import Registry, signer, signer_problem
from piitracer.model.audit import AuditEntry, EntryKind
from piitracer.model.errors import NeedsApprovalError, RefusedError
from piitracer.model.plan import DeletionPlan


class ApprovalRefused(RefusedError):
    """An approval that cannot be given: not an approver, the planner themself, not a proven
    person, a plan not recorded here (or recorded without a proven planner)."""


class PolicyChanged(RefusedError):
    """The approval policy in force now is not the one recorded with the plan."""


def this_user() -> str:
    """The operating system's user running piitracer: recorded for information beside an unproven
    plan, never an identity the four-eyes rule counts."""
    import getpass
    import os

    try:
        return getpass.getuser()
    except Exception:  # no login name in this environment (a container without a passwd entry)
        return f"uid-{os.getuid()}" if hasattr(os, "getuid") else "unknown"


def policy_of(approval: str, approvers: Sequence[str]) -> dict[str, Any]:
    """The approval policy as it is recorded with a plan and compared at execute."""
    return {"approval": approval, "approvers": sorted(approvers)}


@dataclass(frozen=True)
class ApprovalState:
    """Where a plan stands: who planned it, proven by their signature (None: nobody proven, with
    ``problem`` saying why), who approved it (None: nobody who may), and the policy recorded with it."""

    plan_id: str
    planned_by: str | None
    approved_by: str | None
    planned_at: str | None = None
    problem: str | None = None
    policy: Mapping[str, Any] | None = None

    @property
    def approved(self) -> bool:
        return self.approved_by is not None


def approval_state(log: AuditLog, plan_id: str, approvers: Sequence[str], registrar: Any = None) -> ApprovalState:
    """The plan's approval as the audit log records it (module docstring). ``registrar``: the
    workspace signing key's public key, which must have signed every person's registration."""
    entries = log.entries(plan_id=plan_id)
    registry = Registry(log.entries(kinds=(EntryKind.PERSON,)), registrar)
    plan = next((e for e in entries if e.kind is EntryKind.PLAN), None)
    if plan is None:
        return ApprovalState(plan_id, None, None, problem=f"plan {plan_id[:16]} is not recorded in this workspace's audit log")
    planner, problem = signer_problem(plan, registry)
    planner_key = registry.key_at(planner, plan.seq).public_key if planner else None
    approved = None
    for entry in entries:
        if entry.kind is not EntryKind.APPROVAL:
            continue
        who = signer(entry, registry)
        key = registry.key_at(who, entry.seq) if who else None
        if who and planner and who in approvers and who != planner and key is not None and key.public_key != planner_key:
            approved = who
            break
    return ApprovalState(plan_id, planner, approved, plan.recorded_at,
                         None if planner else (problem or "its planner proved no identity"), plan.body.get("policy"))


def who_may_approve(approvers: Sequence[str], planner: str | None) -> str:
    """The approvers' names in words (the planner left out)."""
    names = [name for name in approvers if name != planner]
    if not names:
        return ("nobody: piitracer.yaml lists no approver" + (f" other than {planner}" if approvers else "")
                + " (add one under approvers:)")
    return ", ".join(names)


def check_policy(log: AuditLog, plan_id: str, policy: Mapping[str, Any]) -> None:
    """Refuse (:class:`PolicyChanged`) a plan whose recorded approval policy is not ``policy``, the
    one in force now: switching ``policy.approval`` off, or changing the approvers, after planning
    would otherwise run the plan under rules nobody approved it by."""
    plan = next((e for e in log.entries(plan_id=plan_id, kinds=(EntryKind.PLAN,))), None)
    recorded = plan.body.get("policy") if plan is not None else None
    if recorded is None:
        if policy.get("approval") != "required":
            return  # a plan recorded before the policy was: nothing to hold it to, and nothing asks for approval now
        raise PolicyChanged(f"plan {plan_id[:16]} was recorded without the approval policy in force (made before "
                            "piitracer recorded it): plan it again; nothing was changed")
    if dict(recorded) != dict(policy):
        raise PolicyChanged(f"plan {plan_id[:16]} was made under policy.approval {recorded.get('approval')} with approvers "
                            f"{', '.join(recorded.get('approvers') or []) or 'none'}; piitracer.yaml now says "
                            f"{policy['approval']} with {', '.join(policy['approvers']) or 'none'}: plan it again under "
                            "the policy in force; nothing was changed")


def require_approval(log: AuditLog, plan_id: str, approvers: Sequence[str], registrar: Any = None) -> ApprovalState:
    """Refuse (:class:`NeedsApprovalError`) a plan whose planner is not proven, or that no approver
    other than its planner approved with their own signature."""
    state = approval_state(log, plan_id, approvers, registrar)
    if state.planned_by is None:
        raise NeedsApprovalError(
            f"plan {plan_id[:16]} cannot be approved (policy.approval: required): {state.problem}; the planner proves "
            "who they are with their own token when planning (piitracer plan -o --token-file FILE); nothing was changed")
    if not state.approved:
        raise NeedsApprovalError(
            f"plan {plan_id[:16]} needs a second person's approval before it runs (policy.approval: required; planned "
            f"by {state.planned_by}): who may approve: {who_may_approve(approvers, state.planned_by)} (the console's "
            "approvals page, or piitracer approve PLAN with the approver's token); nothing was changed")
    return state


def approve(log: AuditLog, plan: DeletionPlan, by: Any, approvers: Sequence[str], registrar: Any = None) -> AuditEntry:
    """Record the approval of ``plan`` by ``by``, a person proven by their own token
    (``identity.people.ProvenPerson``), signed with their key; the existing entry when they
    approved it already. Refused (:class:`ApprovalRefused`) for anyone not proven, not listed under
    ``approvers``, the planner, and for a plan whose proven planning the log does not record."""
    from piitracer.identity.people import ProvenPerson

    if not isinstance(by, ProvenPerson):
        raise ApprovalRefused(f"an approval is made by a person who proves who they are with their own token, not by a "
                              f"name ({by!r}): open it with session.person(token) or piitracer approve --token-file FILE")
    state = approval_state(log, plan.plan_id, approvers, registrar)
    if state.planned_at is None:
        raise ApprovalRefused(f"plan {plan.plan_id[:16]} is not recorded in this workspace's audit log: plan it here "
                              "(piitracer plan -o) and approve that plan")
    if by.name not in approvers:
        raise ApprovalRefused(f"{by.name} is not listed under approvers: in piitracer.yaml: who may approve plan "
                              f"{plan.plan_id[:16]}: {who_may_approve(approvers, state.planned_by)}")
    if state.planned_by is None:
        raise ApprovalRefused(f"plan {plan.plan_id[:16]} has no proven planner ({state.problem}): plan it again with the "
                              "planner's own token so that a second person can approve it")
    if by.name == state.planned_by:
        raise ApprovalRefused(f"{by.name} planned {plan.plan_id[:16]}: a plan is approved by a second person (who may: "
                              f"{who_may_approve(approvers, state.planned_by)})")
    registry = Registry(log.entries(kinds=(EntryKind.PERSON,)), registrar)
    registered = registry.current(by.name)
    if registered is None or registered.public_key != by.public_key:
        raise ApprovalRefused(f"{by.name}'s key is not the one the audit log registers for them now (replaced or "
                              "revoked): sign in with their current token")
    for entry in log.entries(plan_id=plan.plan_id, kinds=(EntryKind.APPROVAL,)):
        if signer(entry, registry) == by.name:
            return entry
    return record_approval_entry(log, plan, approver=by, planned_by=state.planned_by)
