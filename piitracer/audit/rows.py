"""What a stored audit log offers those who read it: the columns of an entry's row, how a row
becomes an :class:`~piitracer.model.audit.AuditEntry`, and the small reader the verifier
(:mod:`piitracer.audit.verify`) checks a log through.

The store (:mod:`piitracer.audit.store`) implements the reader and calls the verifier; the verifier
knows only this reader, never the store: the two do not import each other.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from piitracer.audit.anchor import AnchorFile
from piitracer.audit.keys import AuditKey
from piitracer.model.audit import AuditEntry, SubjectDigest
from piitracer.model.errors import AuditLogError

ENTRY_COLUMNS = ("seq", "schema_version", "kind", "recorded_at", "plan_id", "request_ids", "subjects", "body",
                 "prev_hash", "entry_hash", "seal")


class AuditError(AuditLogError):
    """The audit log cannot be used (wrong key, not an audit log, unreadable)."""


class LogReader(Protocol):
    """The audit log as the verifier reads it: the stored rows as they are (so it sees tampering
    as it is), the meta records, the stored request roots, and what the log was opened with."""

    key: AuditKey
    anchor: AnchorFile | None
    workspace_id: str | None
    damage: list[str]  # what is missing from the log's structure (tables, append-only triggers)

    def raw_rows(self) -> list[dict[str, Any]]:
        """Every stored row in sequence order, as a dict of :data:`ENTRY_COLUMNS`."""

    def meta(self, name: str) -> str | None:
        """A meta record (``head``, ``head_seal``, ``key_id``), or None."""

    def stored_roots(self) -> dict[str, tuple[str, int]]:
        """Request id -> (stored Merkle root, leaf count)."""

    def bound_workspace(self) -> str | None:
        """The workspace id the log's first entry binds it to, or None."""


def entry_from_row(row: dict[str, Any]) -> AuditEntry:
    """An entry from its stored columns (raises ValueError/TypeError on a malformed row)."""
    return AuditEntry(
        schema_version=row["schema_version"], seq=row["seq"], kind=row["kind"], recorded_at=row["recorded_at"],
        plan_id=row["plan_id"], request_ids=tuple(json.loads(row["request_ids"])),
        subjects=tuple(SubjectDigest(**s) for s in json.loads(row["subjects"])), body=json.loads(row["body"]),
        prev_hash=row["prev_hash"], entry_hash=row["entry_hash"],
    )
