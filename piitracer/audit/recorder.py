"""Append plan, step and verification entries for a plan, each carrying the HMACs of the plan's
subjects (a batch plan's entries belong to every request of the batch)."""

from __future__ import annotations

from typing import Iterable

from piitracer.audit.records import plan_body, step_body, verification_body
from piitracer.audit.store import AuditLog
from piitracer.model.audit import AuditEntry, EntryKind
from piitracer.model.plan import DeletionPlan
from piitracer.model.steps import StepRecord
from piitracer.model.verification import VerificationReport


def _subjects(plan: DeletionPlan) -> list[tuple[str, str]]:
    return [(subject.request_id, subject.value) for subject in plan.subjects]


def record_plan_entry(log: AuditLog, plan: DeletionPlan, planned_by: str | None = None) -> AuditEntry:
    """Append the ``plan`` entry (once per plan id: recording it again returns the existing entry);
    ``planned_by``: who made it (a plan under ``policy.approval: required`` is approved by another)."""
    for entry in log.entries(plan_id=plan.plan_id):
        if entry.kind is EntryKind.PLAN:
            return entry
    body = plan_body(plan) | ({"planned_by": planned_by} if planned_by else {})
    return log.append(EntryKind.PLAN, plan.plan_id, _subjects(plan), body)


def record_approval_entry(log: AuditLog, plan: DeletionPlan, *, approved_by: str, planned_by: str) -> AuditEntry:
    """Append an ``approval`` entry: a second person (``approved_by``, not ``planned_by``) approved
    the plan, bound to its id and its requests' subjects (HMACs)."""
    from piitracer.audit.store import utc_now

    body = {"plan_id": plan.plan_id, "approved_by": approved_by, "planned_by": planned_by, "approved_at": utc_now(),
            "datasets": sorted({step.dataset for step in plan.steps}), "steps": len(plan.steps)}
    return log.append(EntryKind.APPROVAL, plan.plan_id, _subjects(plan), body)


def record_step_entries(log: AuditLog, plan: DeletionPlan, steps: Iterable[StepRecord]) -> list[AuditEntry]:
    """Append a ``step`` entry per evidence, skipping one already recorded with the same state, run
    and finish time, so recording a resumed run's journal again adds only what changed."""
    seen = {(e.body.get("step_id"), e.body.get("state"), e.body.get("run_id"), e.body.get("finished_at"))
            for e in log.entries(plan_id=plan.plan_id) if e.kind is EntryKind.STEP}
    added = []
    for evidence in sorted(steps, key=lambda s: (s.order, s.step_id)):
        if (evidence.step_id, evidence.state, evidence.run_id, evidence.finished_at) in seen:
            continue
        added.append(log.append(EntryKind.STEP, plan.plan_id, _subjects(plan), step_body(plan.plan_id, evidence)))
    return added


def record_estimate_entry(log: AuditLog, plan: DeletionPlan, estimate: dict) -> AuditEntry:
    """Append an ``estimate`` entry: per rewriting step, the files and bytes the plan was estimated
    to rewrite and their cost (``executor.estimate.PlanEstimate.as_dict``), for the report to set
    against what the run did."""
    return log.append(EntryKind.ESTIMATE, plan.plan_id, _subjects(plan), {"plan_id": plan.plan_id, **estimate})


def record_attestation_entry(log: AuditLog, plan: DeletionPlan, *, step_id: str, dataset: str, action: str,
                             attested_by: str, evidence_sha256: str | None, evidence_kind: str | None,
                             statement: str | None) -> AuditEntry:
    """Append an ``attestation`` entry: who confirmed a person's step of the plan, when, and the
    SHA-256 of the evidence (never the evidence itself: it may hold subject values)."""
    from piitracer.audit.store import utc_now

    body = {"plan_id": plan.plan_id, "step_id": step_id, "dataset": dataset, "action": action,
            "attested_by": attested_by, "attested_at": utc_now(), "evidence_sha256": evidence_sha256,
            "evidence_kind": evidence_kind, "statement": statement}
    return log.append(EntryKind.ATTESTATION, plan.plan_id, _subjects(plan), body)


def record_request_entry(log: AuditLog, request_id: str, subjects: list[tuple[str, str]], *, from_state: str | None,
                         to_state: str, action: str, plan_id: str | None = None, reason: str | None = None,
                         details: dict | None = None) -> AuditEntry:
    """Append a ``request`` entry: one request's state change (``subjects`` are its (request id,
    value) pairs: only their HMACs are stored)."""
    from piitracer.audit.store import utc_now

    body = {"request_id": request_id, "from_state": from_state, "to_state": to_state, "action": action,
            "plan_id": plan_id, "reason": reason, "at": utc_now(), **(details or {})}
    return log.append(EntryKind.REQUEST, plan_id or "", subjects or [(request_id, "")], body)


def attestations(log: AuditLog, plan_id: str) -> list[AuditEntry]:
    """Every attestation entry of a plan, in sequence order."""
    return [e for e in log.entries(plan_id=plan_id) if e.kind is EntryKind.ATTESTATION]


def record_verification_entry(log: AuditLog, plan: DeletionPlan, report: VerificationReport) -> AuditEntry:
    """Append the ``verification`` entry of one verifier run of the plan."""
    if report.plan_id != plan.plan_id:
        raise ValueError(f"the verification report is for plan {report.plan_id[:16]}, not {plan.plan_id[:16]}")
    return log.append(EntryKind.VERIFICATION, plan.plan_id, _subjects(plan), verification_body(report))


def record_download_entry(log: AuditLog, *, what: str, by: str, sha256: str, request_id: str | None = None,
                          detail: dict | None = None) -> AuditEntry:
    """Append a ``download`` entry: who took which export from the console, when, and the SHA-256
    of what they received (a board export is bound to no request; no subject value is in any)."""
    from piitracer.audit.store import utc_now

    body = {"what": what, "downloaded_by": by, "downloaded_at": utc_now(), "request_id": request_id, "sha256": sha256,
            **({"detail": detail} if detail else {})}
    return log.append(EntryKind.DOWNLOAD, "", (), body)
