"""Append plan, step and verification entries for a plan, each carrying the HMACs of the plan's
subjects (a batch plan's entries belong to every request of the batch)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from piitracer.audit.records import plan_body, step_body, verification_body
from piitracer.audit.signatures import proof_of
from piitracer.audit.store import AuditLog, utc_now
from piitracer.identity.statements import APPROVAL, ATTESTATION, EXECUTION, PERSON, PLAN, key_fingerprint, statement
from piitracer.model.audit import AuditEntry, EntryKind
from piitracer.model.plan import DeletionPlan
from piitracer.model.steps import StepRecord
from piitracer.model.verification import VerificationReport


def _subjects(plan: DeletionPlan) -> list[tuple[str, str]]:
    return [(subject.request_id, subject.value) for subject in plan.subjects]


def record_plan_entry(log: AuditLog, plan: DeletionPlan, planner: Any = None, policy: Mapping[str, Any] | None = None,
                      operator: str | None = None) -> AuditEntry:
    """Append the ``plan`` entry (once per plan id: recording it again returns the existing entry).

    ``planner``: the person who made it, proven by their own token (an ``identity.people.ProvenPerson``):
    their signed statement is recorded (``planned_by`` and ``planner``); ``policy``: the approval
    policy in force, checked again at execute; ``operator``: the operating system's account, kept
    for information only when no person is proven (it proves nothing)."""
    for entry in log.entries(plan_id=plan.plan_id, kinds=(EntryKind.PLAN,)):
        return entry
    body = plan_body(plan)
    if policy is not None:
        body["policy"] = dict(policy)
    if planner is not None:
        body["planned_by"] = planner.name
        body["planner"] = proof_of(planner, statement(PLAN, plan_id=plan.plan_id, by=planner.name, at=utc_now(),
                                                      policy=body.get("policy")))
    elif operator:
        body["operator"] = operator
    return log.append(EntryKind.PLAN, plan.plan_id, _subjects(plan), body)


def record_approval_entry(log: AuditLog, plan: DeletionPlan, *, approver: Any, planned_by: str) -> AuditEntry:
    """Append an ``approval`` entry: a second person (``approver``, proven by their own token, not
    ``planned_by``) approved the plan, their signed statement bound to its id and its planner."""
    at = utc_now()
    body = {"plan_id": plan.plan_id, "approved_by": approver.name, "planned_by": planned_by, "approved_at": at,
            "datasets": sorted({step.dataset for step in plan.steps}), "steps": len(plan.steps)}
    body["approver"] = proof_of(approver, statement(APPROVAL, plan_id=plan.plan_id, by=approver.name,
                                                    planned_by=planned_by, at=at))
    return log.append(EntryKind.APPROVAL, plan.plan_id, _subjects(plan), body)


def record_execution_entry(log: AuditLog, plan: DeletionPlan, *, executor: Any = None, policy: Mapping[str, Any],
                           how: str, operator: str | None = None) -> AuditEntry:
    """Append an ``execution`` entry before a run's first step: who runs it (their signed statement
    when proven, else the operating system's account for information) and the policy in force."""
    at = utc_now()
    body: dict[str, Any] = {"plan_id": plan.plan_id, "how": how, "started_at": at, "policy": dict(policy)}
    if executor is not None:
        body["executed_by"] = executor.name
        body["executor"] = proof_of(executor, statement(EXECUTION, plan_id=plan.plan_id, by=executor.name, at=at, how=how))
    elif operator:
        body["operator"] = operator
    return log.append(EntryKind.EXECUTION, plan.plan_id, _subjects(plan), body)


def record_person_entry(log: AuditLog, *, name: str, role: str | None, change: str, public_key: str | None,
                        registrar: Any) -> AuditEntry:
    """Append a ``person`` entry: ``name``'s key made, replaced or revoked, its statement signed by
    the workspace's signing key ``registrar`` (an ``Ed25519PrivateKey``), so that an auditor checks
    with its public key that the workspace registered it."""
    import base64

    from piitracer.crypto.signing import canonical_bytes, fingerprint

    said = statement(PERSON, name=name, role=role, change=change, public_key=public_key, at=utc_now())
    body = {"name": name, "role": role, "change": change, "public_key": public_key, "at": said["at"],
            "key_sha256": key_fingerprint(public_key) if public_key else None,
            "registration": {"statement": said, "registrar": fingerprint(registrar.public_key()),
                             "signature": base64.b64encode(registrar.sign(canonical_bytes(said))).decode("ascii")}}
    return log.append(EntryKind.PERSON, "", (), body)


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
                             attester: Any, evidence_sha256: str | None, evidence_kind: str | None,
                             statement_text: str | None) -> AuditEntry:
    """Append an ``attestation`` entry: who confirmed a person's step of the plan (``attester``,
    proven by their own token; their signed statement bound to the plan, the step and the evidence),
    when, and the SHA-256 of the evidence (never the evidence itself: it may hold subject values)."""
    at = utc_now()
    body = {"plan_id": plan.plan_id, "step_id": step_id, "dataset": dataset, "action": action,
            "attested_by": attester.name, "attested_at": at, "evidence_sha256": evidence_sha256,
            "evidence_kind": evidence_kind, "statement": statement_text}
    body["attester"] = proof_of(attester, statement(ATTESTATION, plan_id=plan.plan_id, by=attester.name, step_id=step_id,
                                                    dataset=dataset, action=action, evidence_sha256=evidence_sha256, at=at))
    return log.append(EntryKind.ATTESTATION, plan.plan_id, _subjects(plan), body)


def record_request_entry(log: AuditLog, request_id: str, subjects: list[tuple[str, str]], *, from_state: str | None,
                         to_state: str, action: str, plan_id: str | None = None, reason: str | None = None,
                         details: dict | None = None) -> AuditEntry:
    """Append a ``request`` entry: one request's state change (``subjects`` are its (request id,
    value) pairs: only their HMACs are stored)."""
    return log.append(*request_entry(request_id, subjects, from_state=from_state, to_state=to_state, action=action,
                                     plan_id=plan_id, reason=reason, details=details))


def request_entry(request_id: str, subjects: list[tuple[str, str]], *, from_state: str | None, to_state: str,
                  action: str, plan_id: str | None = None, reason: str | None = None,
                  details: dict | None = None) -> tuple[EntryKind, str, list[tuple[str, str]], dict[str, Any]]:
    """The (kind, plan id, subjects, body) of a ``request`` entry, as :func:`record_request_entry`
    appends it; :func:`record_request_entries` appends many of them in one transaction."""
    body = {"request_id": request_id, "from_state": from_state, "to_state": to_state, "action": action,
            "plan_id": plan_id, "reason": reason, "at": utc_now(), **(details or {})}
    return EntryKind.REQUEST, plan_id or "", subjects or [(request_id, "")], body


def record_request_entries(log: AuditLog, entries: Iterable[tuple[EntryKind, str, list[tuple[str, str]], dict[str, Any]]]
                           ) -> list[AuditEntry]:
    """Append many ``request`` entries (each made by :func:`request_entry`) in one transaction,
    chained and sealed exactly as appending them one by one (``AuditLog.append_many``)."""
    return log.append_many(list(entries))


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
    body = {"what": what, "downloaded_by": by, "downloaded_at": utc_now(), "request_id": request_id, "sha256": sha256,
            **({"detail": detail} if detail else {})}
    return log.append(EntryKind.DOWNLOAD, "", (), body)
