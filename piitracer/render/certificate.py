"""The erasure certificate of one request: what an auditor is given, made from the request's audit
trail alone (the same facts as the audit report) and signed by ``piitracer.crypto.signing``.

It names the request and its subjects only as HMACs, gives each dataset's final state with the
evidence behind it (files scanned, snapshots checked, findings), every attestation of a person's
step, the rows and files the run removed, the request's close (when its values were shredded
and the fingerprint of the destroyed key) and the audit log's Merkle root and chain head, so the
certificate can be tied back to the log. A certificate is only issued for a request whose latest
verification is complete on an intact log; :func:`certificate_body` says why not otherwise.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from piitracer.model.audit import EntryKind, RequestTrail
from piitracer.model.errors import NotCertifiableError
from piitracer.render.report_facts import report_facts

CERTIFICATE_FORMAT = "piitracer-erasure-certificate/1"


class NotCertifiable(NotCertifiableError):
    """The request's trail does not prove a complete erasure (yet): no certificate."""


def certificate_body(trail: RequestTrail, issued_at: datetime, audit_key_id: str,
                     people: dict[str, Any] | None = None) -> dict[str, Any]:
    """The unsigned certificate of ``trail``'s request (deterministic for the same trail and time);
    :class:`NotCertifiable` when the log is not intact or the latest verification is not complete.
    ``people``: who planned, approved, attested and executed the request's plan, with their signed
    statements and the workspace's registrations of their keys (``audit.signatures.people_of``)."""
    if not trail.chain_intact:
        raise NotCertifiable(f"request {trail.request_id}: the audit log is not intact ({trail.chain_problem})")
    facts = report_facts(trail, issued_at)
    verification = facts.verification
    if verification is None:
        raise NotCertifiable(f"request {trail.request_id}: never verified; run `piitracer verify PLAN` first")
    if not verification.get("complete"):
        open_items = sorted({d["state"] for d in verification["datasets"]
                             if d["state"] not in ("erased", "crypto_shredded", "attested", "no_action")})
        raise NotCertifiable(f"request {trail.request_id}: the latest verification ({verification['checked_at']}) is not "
                             f"complete ({', '.join(open_items) or 'open'}): no certificate for an unfinished erasure")
    totals = {key: sum(int(step.get(key) or 0) for step in facts.steps)
              for key in ("rows_deleted", "files_rewritten", "files_removed", "bytes_removed")}
    closes = [e.body for e in trail.entries if e.kind is EntryKind.REQUEST and e.body.get("to_state") == "closed"]
    return {
        "format": CERTIFICATE_FORMAT,
        "issued_at": issued_at.isoformat(),
        "request_id": trail.request_id,
        "subject_hmacs": sorted(facts.subject_hmacs),
        "received_at": facts.received_at,
        "deadline_at": facts.deadline.deadline_at.isoformat() if facts.deadline.deadline_at else None,
        "deadline": facts.deadline.verdict,
        "plan_id": facts.plan_id,
        "batched_with": sorted(facts.batched_with),
        "sources": facts.sources,
        "verification": {"checked_at": verification["checked_at"], "complete": True,
                         "sweep": verification.get("sweep"), "swept_files": verification.get("swept_files", 0)},
        "datasets": [_dataset(d) for d in facts.datasets],
        "attestations": facts.attestations,
        "erased": totals,
        "closed": ({"shredded_at": closes[-1].get("shredded_at") or closes[-1].get("at"),
                    "key_fingerprint": closes[-1].get("key_fingerprint")} if closes else None),
        "audit": {"audit_key_id": audit_key_id, "merkle_root": trail.merkle_root,
                  "request_entries": len(trail.entries), "chain_head": trail.chain_head,
                  "chain_entries": trail.chain_entries},
        **({"people": people} if people is not None else {}),
    }


def _dataset(decision: dict[str, Any]) -> dict[str, Any]:
    checked = decision.get("verification") or {}
    item = {"dataset": decision["dataset"], "decision": decision["status"], "state": decision["state"],
            "files_scanned": checked.get("files_scanned", 0), "snapshots_checked": checked.get("snapshots_checked", 0),
            "findings": checked.get("findings_count", 0)}
    if checked.get("shred"):  # crypto-shredded (issue 42): said in words, with the key vault's evidence
        item.update(erasure="crypto-shredded", vault_evidence=checked["shred"])
    return item


def certificate_text(document: dict[str, Any]) -> str:
    """A short human summary of a signed certificate (the JSON is the certificate)."""
    body = document["certificate"]
    states: dict[str, int] = {}
    for item in body["datasets"]:
        states[item["state"]] = states.get(item["state"], 0) + 1
    lines = [f"erasure certificate for request {body['request_id']} (plan {body['plan_id'][:16]})",
             f"  verified complete at {body['verification']['checked_at']}; deadline {body['deadline']}",
             "  datasets: " + ", ".join(f"{n} {state.replace('crypto_shredded', 'crypto-shredded')}"
                                        for state, n in sorted(states.items())),
             f"  attestations: {len(body['attestations'])}",
             f"  closed: values shredded at {body['closed']['shredded_at']}" if body["closed"] else
             "  not closed yet: the request's values are still held (encrypted) for re-verification",
             f"  Merkle root {body['audit']['merkle_root']}, chain head {body['audit']['chain_head']}",
             f"  signed (Ed25519) by key {document['signature']['public_key_sha256'][:16]}…"]
    return "\n".join(lines)
