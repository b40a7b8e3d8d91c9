"""The bodies of audit entries, built from a plan, executed steps and a verification report.

Only facts about the erasure go in: ids, decisions, states, versions, hashes, counts, times, file
names and value-set names. Subject values never do (subjects are HMAC'd by the log itself); the
model types these are built from carry no value outside ``DeletionPlan.subjects``, which is not read
here except for request ids and arrival times.
"""

from __future__ import annotations

from typing import Any

from piitracer.model.plan import DeletionPlan
from piitracer.model.steps import StepRecord
from piitracer.model.verification import VerificationReport


def plan_body(plan: DeletionPlan) -> dict[str, Any]:
    """The ``plan`` entry: id, requests (ids and arrival), deadline, sources, decisions and steps."""
    arrivals: dict[str, str] = {}
    for subject in plan.subjects:
        stamp = subject.received_at.isoformat()
        arrivals[subject.request_id] = min(arrivals.get(subject.request_id, stamp), stamp)
    return {
        "plan_id": plan.plan_id,
        "plan_schema_version": plan.schema_version,
        # An unsealed plan ran only because the operator passed --unsealed: the log says so.
        "sealed": plan.seal is not None,
        "seal_key_id": plan.seal.key_id if plan.seal is not None else None,
        "deadline_at": plan.deadline_at.isoformat(),
        "requests": [{"request_id": rid, "received_at": arrivals[rid]} for rid in sorted(arrivals)],
        "sources": [f"{ref.dataset}.{ref.column}" for ref in plan.sources],
        "datasets": [
            {
                "dataset": d.dataset,
                "format": d.format,
                "status": d.status.value,
                "key_column": d.key_column,
                "rule": d.rule,
                "reason": d.reason,
                "violates_deadline": d.deadline.violates_deadline if d.deadline else None,
            }
            for d in plan.datasets
        ],
        "steps": [
            {"step_id": s.id, "order": s.order, "dataset": s.dataset, "action": s.action.value,
             "blocking": s.blocking, "owner": s.owner}
            for s in plan.steps
        ],
        # Where a pipeline guard belongs (issue 52): the report names them.
        "guard_points": [{"dataset": g.dataset, "columns": list(g.columns), "fed_by": list(g.fed_by), "reason": g.reason}
                         for g in plan.guard_points],
    }


def step_body(plan_id: str, record: StepRecord) -> dict[str, Any]:
    """The ``step`` entry: every field of the step's record, plus the plan id."""
    body = {"plan_id": plan_id, **record.model_dump()}
    body["details"] = _plain(record.details)
    return body


def verification_body(report: VerificationReport) -> dict[str, Any]:
    """The ``verification`` entry: per dataset its state, what was scanned and where findings are."""
    return {
        "plan_id": report.plan_id,
        "checked_at": report.checked_at.isoformat(),
        "all_erased": report.all_erased,
        "complete": report.complete,
        # verify --sweep: what was decoded beyond the plan (its unplanned findings are in datasets)
        "sweep": report.sweep,
        "swept": list(report.swept),
        "swept_files": report.swept_files,
        "datasets": [
            {
                "dataset": d.dataset,
                "state": d.state.value,
                "files_scanned": d.files_scanned,
                "snapshots_checked": d.snapshots_checked,
                "findings_count": len(d.findings),
                # file, where and value-set name only: the Finding type holds no value by design.
                "findings": [{"file": f.file, "where": f.where, "value_set": f.value_set, "kind": f.kind} for f in d.findings],
                "pending_until": d.pending_until,
                "reason": d.reason,
                # how its Parquet column chunks were proven or decoded, and bytes read (counts only)
                "chunk_proofs": d.chunk_proofs.model_dump(),
                # the claim those proofs are of: which search each column got (value-set names only)
                "column_search": [search.model_dump(mode="json") for search in d.column_search],
                # a crypto-shredded dataset's proof: the key vault's files decoded, the decrypt attempt (counts)
                **({"shred": d.shred.model_dump(mode="json")} if d.shred is not None else {}),
            }
            for d in report.datasets
        ],
    }


def _plain(value: Any) -> Any:
    """Numbers, strings, booleans and containers of them; anything else is dropped, because an
    executor's free-form object could carry something we must not persist."""
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return None
