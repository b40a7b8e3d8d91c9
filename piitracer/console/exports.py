"""What the console lets a person download for a regulator, each download recorded in the audit
log (who, when, what, the SHA-256 of what they received):

- the board as CSV (the filters of the page; ids, dates, states in words, counts: no subject value),
- a request's HTML audit report (the same page ``piitracer audit report`` writes),
- a request's evidence manifest (JSON): piitracer keeps only the SHA-256 of an owner's evidence (a
  text or a file may hold personal data), so what can be downloaded is each attestation's who,
  when, statement, evidence kind and hash, and each dataset's latest verification — what the
  original evidence, kept by its owner, is checked against;
- the signed certificate (and its public key, which is not personal and is not recorded).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from datetime import datetime
from typing import Any

from piitracer.audit import record_download_entry
from piitracer.render.report_facts import request_state_label
from piitracer.requests.board import MAX_PER_PAGE, BoardQuery

CSV_COLUMNS = ("request_id", "state", "received_at", "deadline_at", "days_left", "overdue", "subjects", "plan_id",
               "last_action", "last_action_at")


def _cell(text: str) -> str:
    # A spreadsheet runs a cell that starts with = + - @ as a formula: a request id is text.
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def board_csv(session, query: BoardQuery, now: datetime) -> str:
    """Every request the board's filters keep (all pages), as CSV."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    page = 1
    while True:
        answer = session.board_page(BoardQuery(**{**query.__dict__, "page": page, "per_page": MAX_PER_PAGE}))
        for r in answer.requests:
            writer.writerow([_cell(r.request_id), request_state_label(r.state.value), r.received_at.isoformat(),
                             r.deadline_at.isoformat(), r.days_left(now), "yes" if r.overdue(now) else "no", r.subjects,
                             r.plan_id or "", _cell(r.last_action), r.last_action_at.isoformat(timespec="seconds")])
        if page >= answer.pages:
            return out.getvalue()
        page += 1


def evidence_manifest(facts, request_id: str) -> dict[str, Any]:
    """The evidence piitracer holds for a request (see the module docstring)."""
    verification = facts.verification or {}
    return {
        "request_id": request_id, "plan_id": facts.plan_id,
        "note": "piitracer keeps only the SHA-256 of evidence: hash the original (kept by its owner) and compare",
        "attestations": [{k: a.get(k) for k in ("step_id", "dataset", "action", "attested_by", "attested_at",
                                                 "evidence_kind", "evidence_sha256", "statement")}
                         for a in facts.attestations],
        "verification": {"checked_at": verification.get("checked_at"), "complete": verification.get("complete"),
                         "datasets": [{"dataset": d.get("dataset"), "state": d.get("state"),
                                       "files_scanned": d.get("files_scanned", 0), "findings": d.get("findings_count", 0)}
                                      for d in verification.get("datasets", [])]} if verification else None,
    }


def recorded(session, what: str, by: str, content: bytes, request_id: str | None = None,
             detail: dict | None = None) -> str:
    """Record a download in the session's audit log; returns the content's SHA-256."""
    digest = hashlib.sha256(content).hexdigest()
    record_download_entry(session.audit(create=False), what=what, by=by, sha256=digest, request_id=request_id,
                          detail=detail)
    return digest


def as_json(document: Any) -> str:
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
