"""Audit log entries as the audit store hands them out and the report reads them.

An entry never holds a raw subject value: a subject appears only as the HMAC-SHA256 of its value
under the audit key (``SubjectDigest``). ``body`` is the kind-specific record (README, "Audit
trail"); adding fields to a body is non-breaking (``schema_version`` stays "1").
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any

from pydantic import Field

from piitracer.model.lineage import Frozen

AUDIT_SCHEMA_VERSION = "1"
GENESIS_HASH = "0" * 64  # the "previous hash" of the first entry


class EntryKind(str, Enum):
    PLAN = "plan"  # the plan's id, requests, deadline and per-dataset decisions
    STEP = "step"  # one executed (or refused) step: state, versions, metadata hash, counts, times
    VERIFICATION = "verification"  # the verifier's per-dataset verdicts and findings (no values)
    ATTESTATION = "attestation"  # a person confirmed a manual/manual_review/recompute step (who, when, evidence hash)
    REQUEST = "request"  # a request changed state (queued, planned ... closed: the data key's fingerprint, never the key)
    ESTIMATE = "estimate"  # what a batch plan was estimated to rewrite and cost, from table metadata
    WORKSPACE = "workspace"  # the log's first entry: the id of the one workspace whose history it is
    APPROVAL = "approval"  # a second person approved a plan before it ran (who, when; bound to the plan id)
    DOWNLOAD = "download"  # someone downloaded an export from the console (what, who, when, its SHA-256)
    PERSON = "person"  # a person's credential made, replaced or revoked (their public key, vouched for by the signing key)
    EXECUTION = "execution"  # a run of a plan started: who ran it (signed), the policy in force


class SubjectDigest(Frozen):
    """One subject of a request, as HMAC-SHA256(audit key, value) in hex: never the value."""

    request_id: str
    hmac: str


class AuditEntry(Frozen):
    """One sealed entry of the append-only log."""

    schema_version: str = AUDIT_SCHEMA_VERSION
    seq: int = Field(description="1, 2, 3... without gaps.")
    kind: EntryKind
    recorded_at: str = Field(description="UTC, ISO 8601 with milliseconds.")
    plan_id: str
    request_ids: tuple[str, ...]
    subjects: tuple[SubjectDigest, ...]
    body: dict[str, Any]
    prev_hash: str
    entry_hash: str

    def hashed_fields(self) -> dict[str, Any]:
        """Every field the entry hash covers (all but the hash itself), as JSON-able data."""
        return self.model_dump(mode="json", exclude={"entry_hash"})


class RequestTrail(Frozen):
    """Everything the log holds about one request: what a report is made from."""

    request_id: str
    entries: tuple[AuditEntry, ...] = Field(description="The request's entries in sequence order (the Merkle leaves).")
    merkle_root: str
    chain_head: str = Field(description="Hash of the log's last entry when the trail was read.")
    chain_entries: int
    chain_intact: bool
    chain_problem: str | None = None
    checked_at: datetime | None = None
