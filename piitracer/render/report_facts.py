"""What an audit report says, derived from a request's audit trail alone: the plan entry, the
latest entry of every step, the latest verification, each dataset's state and the deadline."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from piitracer.model.audit import AuditEntry, EntryKind, RequestTrail
from piitracer.model.errors import NotFoundError

# Report states, in legend order (the diagram colours nodes by these).
STATES = ("erased", "crypto_shredded", "attested", "pending", "awaiting_attestation", "found", "manual_review", "recompute", "no_action")
STATE_LABELS = {
    "erased": "erased", "crypto_shredded": "crypto-shredded", "attested": "attested by its owner", "pending": "pending",
    "awaiting_attestation": "awaiting attestation", "found": "found (still there)", "manual_review": "manual review",
    "recompute": "recompute", "no_action": "no action",
}
# A request's states in words: the one table the console and the CLI show (the JSON output and the
# audit log keep the identifiers).
REQUEST_STATE_LABELS = {
    "queued": "queued", "planned": "planned", "executing": "executing", "executed": "executed",
    "awaiting_attestation": "awaiting attestation", "verified": "verified", "watching": "watching", "closed": "closed",
}


def request_state_label(state: str) -> str:
    """A request's state in words (:data:`REQUEST_STATE_LABELS`); another state's identifier with
    spaces for underscores."""
    return REQUEST_STATE_LABELS.get(state) or state.replace("_", " ")


def state_label(state: str) -> str:
    """Any state a page shows in words: a request's, a dataset's erasure state, a step's."""
    return REQUEST_STATE_LABELS.get(state) or STATE_LABELS.get(state) or state.replace("_", " ")


# A person's step is done once its owner attested it (an attestation entry in the log).
DONE_STEP_STATES = {"committed", "attested"}


@dataclass
class DeadlineStatus:
    deadline_at: datetime | None
    verdict: str  # met | missed | open | unknown
    text: str


@dataclass
class ReportFacts:
    request_id: str
    plan_id: str
    batched_with: list[str]
    subject_hmacs: list[str]
    received_at: str | None
    sources: list[str]
    datasets: list[dict[str, Any]]  # plan decision + "state" + verification facts
    steps: list[dict[str, Any]]  # plan steps with the latest recorded entry's facts (state "not run" if none)
    verification: dict[str, Any] | None
    deadline: DeadlineStatus
    entries: list[AuditEntry] = field(default_factory=list)
    # who confirmed each person's step, when, and the SHA-256 of the evidence (attestation entries)
    attestations: list[dict[str, Any]] = field(default_factory=list)
    # per dataset the batch estimate (files, bytes, cost) beside the bytes its run removed
    estimate: list[dict[str, Any]] = field(default_factory=list)
    # where a pipeline guard belongs (issue 52): dataset, columns, fed_by, reason (plans recorded before: none)
    guard_points: list[dict[str, Any]] = field(default_factory=list)


def report_facts(trail: RequestTrail, now: datetime) -> ReportFacts:
    """The report's content for the latest plan of the request in ``trail``."""
    plans = [e for e in trail.entries if e.kind is EntryKind.PLAN]
    if not plans:
        raise NotFoundError(f"the audit log has no plan entry for request {trail.request_id!r}")
    plan = plans[-1].body
    plan_id = plans[-1].plan_id
    mine = [e for e in trail.entries if e.plan_id == plan_id]
    latest_step: dict[str, dict[str, Any]] = {}
    attested = {str(e.body.get("step_id")) for e in mine if e.kind is EntryKind.ATTESTATION}
    for entry in mine:
        if entry.kind is EntryKind.STEP:
            latest_step[entry.body["step_id"]] = {**entry.body, "seq": entry.seq}
    verifications = [e.body for e in mine if e.kind is EntryKind.VERIFICATION]
    verification = verifications[-1] if verifications else None
    checked = {d["dataset"]: d for d in verification["datasets"]} if verification else {}

    datasets = []
    for decision in plan["datasets"]:
        result = checked.get(decision["dataset"])
        datasets.append({**decision, "state": dataset_state(decision["status"], result["state"] if result else None),
                         "verification": result})
    steps = []
    for planned in plan["steps"]:
        recorded = latest_step.get(planned["step_id"])
        state = "attested" if planned["step_id"] in attested else recorded["state"] if recorded else "not run"
        steps.append({**planned, **(recorded or {}), "state": state})
    request = next((r for r in plan["requests"] if r["request_id"] == trail.request_id), None)
    return ReportFacts(
        request_id=trail.request_id, plan_id=plan_id,
        batched_with=[r["request_id"] for r in plan["requests"] if r["request_id"] != trail.request_id],
        subject_hmacs=[s.hmac for s in plans[-1].subjects if s.request_id == trail.request_id],
        received_at=request["received_at"] if request else None, sources=list(plan["sources"]),
        datasets=datasets, steps=steps, verification=verification,
        deadline=deadline_status(plan, steps, datasets, verification, now), entries=list(trail.entries),
        attestations=[{key: e.body.get(key) for key in ATTESTATION_FIELDS} for e in mine if e.kind is EntryKind.ATTESTATION],
        estimate=estimate_rows([e.body for e in mine if e.kind is EntryKind.ESTIMATE], steps),
        guard_points=list(plan.get("guard_points") or []))


# The steps whose removed bytes are the data a batch estimate is about: rewrites of Parquet files
# and archives, and the removal of the files a Delta or Iceberg delete replaced.
REMOVING_DATA = {"rewrite_files", "rewrite_archive", "vacuum", "expire_snapshots", "remove_orphan_files"}


def estimate_rows(estimates: list[dict[str, Any]], steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per dataset of the latest estimate: estimated files, bytes, cost, whether an upper bound,
    and the bytes the run's steps removed (None before the run)."""
    if not estimates:
        return []
    latest = estimates[-1]
    removed: dict[str, int] = {}
    ran: set[str] = set()
    for step in steps:
        if step.get("action") in REMOVING_DATA and step.get("state") == "committed":
            removed[step["dataset"]] = removed.get(step["dataset"], 0) + int(step.get("bytes_removed") or 0)
            ran.add(step["dataset"])
    rows: dict[str, dict[str, Any]] = {}
    for item in latest.get("steps", []):
        row = rows.setdefault(item["dataset"], {"dataset": item["dataset"], "files": 0, "bytes": 0, "cost": 0.0,
                                                "upper_bound": False, "currency": latest.get("currency")})
        row["files"] += int(item["files"])
        row["bytes"] += int(item["bytes"])
        row["cost"] = round(row["cost"] + float(item["cost"]), 2)
        row["upper_bound"] = row["upper_bound"] or bool(item.get("upper_bound"))
    for row in rows.values():
        row["removed_bytes"] = removed.get(row["dataset"]) if row["dataset"] in ran else None
    return [rows[name] for name in sorted(rows)]


ATTESTATION_FIELDS = ("step_id", "dataset", "action", "attested_by", "attested_at", "evidence_sha256", "statement")


def dataset_state(status: str, verified: str | None) -> str:
    """One of :data:`STATES`. Evidence of data still there wins; otherwise a dataset piitracer does
    not erase keeps its plan status; an erased dataset is ``erased`` only when the verifier says so."""
    if verified in ("found", "unplanned", "not_checked"):
        return "found"
    if verified == "awaiting_attestation" and status in ("manual_review", "recompute"):
        return status  # the kind of work a person still has to do (and attest)
    if verified in ("attested", "awaiting_attestation", "no_action", "erased", "crypto_shredded"):
        return verified
    if status in ("manual_review", "recompute", "no_action"):
        return status
    return "pending"  # planned or executed, but not (yet) verified erased


def deadline_status(plan: dict[str, Any], steps: list[dict[str, Any]], datasets: list[dict[str, Any]],
                    verification: dict[str, Any] | None, now: datetime) -> DeadlineStatus:
    """Met only when the verifier found nothing left and no step is open, on or before the deadline."""
    deadline = datetime.fromisoformat(plan["deadline_at"]) if plan.get("deadline_at") else None
    open_steps = [s for s in steps if s["state"] not in DONE_STEP_STATES]
    left = [d["dataset"] for d in datasets if d["state"] in ("pending", "found", "awaiting_attestation")
            or (d["state"] in ("manual_review", "recompute") and (d.get("verification") or {}).get("state") != "attested")]
    if deadline is None:
        return DeadlineStatus(None, "unknown", "the plan entry has no deadline")
    remaining = []
    if verification is None:
        remaining.append("no verification recorded")
    if left:
        remaining.append(f"{len(left)} dataset(s) not verified erased: {', '.join(left)}")
    if open_steps:
        remaining.append(f"{len(open_steps)} step(s) open: " + ", ".join(f"{s['step_id']} {s['action']} {s['dataset']} ({s['state']})"
                                                                          for s in open_steps))
    if not remaining and verification is not None:
        finished = [datetime.fromisoformat(s["finished_at"]) for s in steps if s.get("finished_at")]
        completed = max([datetime.fromisoformat(verification["checked_at"]), *finished])
        if completed <= deadline:
            return DeadlineStatus(deadline, "met", f"erasure verified complete at {completed.isoformat()}")
        return DeadlineStatus(deadline, "missed", f"verified complete at {completed.isoformat()}, after the deadline")
    if now > deadline:
        return DeadlineStatus(deadline, "missed", "the deadline has passed and " + "; ".join(remaining))
    days = (deadline - now).days
    return DeadlineStatus(deadline, "open", f"{days} day(s) left: " + "; ".join(remaining))


# How the verifier proved a dataset's Parquet column chunks (design.md "Proof at scale"), in the
# report's column order; verification entries recorded before these counts existed show none.
PROOF_METHODS = ("dictionary", "statistics", "page_index", "bloom", "pages", "type", "decoded")
PROOF_HEADERS = ["dataset", "dictionary", "statistics", "page index", "Bloom filter", "pages", "type", "decoded",
                 "bytes read", "of bytes"]


def proof_rows(verification: dict[str, Any] | None) -> list[list[Any]]:
    """Per dataset with Parquet chunks: the chunks each rule proved, those decoded, and bytes read
    of the files' total bytes (ints; the renderer formats them)."""
    rows = []
    for checked in (verification or {}).get("datasets", []):
        proofs = checked.get("chunk_proofs") or {}
        if not any(proofs.get(method) for method in PROOF_METHODS):
            continue
        rows.append([checked["dataset"], *(int(proofs.get(method, 0)) for method in PROOF_METHODS),
                     int(proofs.get("bytes_read", 0)), int(proofs.get("bytes_total", 0))])
    return rows


SHRED_HEADERS = ["dataset", "key vault (and copies)", "keys destroyed", "checked before: files", "rows",
                 "ciphertext values opened", "subjects", "after: decrypted values searched", "files searched",
                 "versions searched", "other people's values opened"]


def shred_rows(verification: dict[str, Any] | None) -> list[list[Any]]:
    """Per crypto-shredded dataset (issue 49): what was read and opened before the keys were
    destroyed, and what the plaintext search after it covered (counts and names, never a value)."""
    rows = []
    for checked in (verification or {}).get("datasets", []):
        shred = checked.get("shred")
        if not shred:
            continue
        vault = shred.get("vault", "")
        copies = shred.get("vault_copies") or []
        rows.append([checked["dataset"], vault + (f" + {', '.join(copies)}" if copies else ""),
                     int(shred.get("keys_destroyed", 0)), int(shred.get("ciphertext_files_read", 0)),
                     int(shred.get("ciphertext_rows_tried", 0)), int(shred.get("ciphertext_values_opened", 0)),
                     int(shred.get("subjects_with_rows", 0)), int(shred.get("plaintext_values_searched", 0)),
                     int(shred.get("files_searched", 0)), int(shred.get("versions_searched", 0)),
                     int(shred.get("other_rows_opened", 0))])
    return rows
