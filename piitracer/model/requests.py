"""Erasure requests as piitracer operates them: a queue with deadlines, a state per request, and
the rule of which state may follow which.

    queued -> planned -> executing -> executed -> awaiting_attestation -> verified -> watching -> closed

``overdue`` is a flag, not a state: the deadline passed and the request is not closed yet. A
finding while watching (a late pipeline run, a compaction that dropped delete files, a restore)
moves a request back to ``executed``; a re-plan moves it back to ``planned``.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum

from pydantic import Field

from piitracer.model.lineage import Frozen


class RequestState(str, Enum):
    QUEUED = "queued"
    PLANNED = "planned"
    EXECUTING = "executing"
    EXECUTED = "executed"
    AWAITING_ATTESTATION = "awaiting_attestation"
    VERIFIED = "verified"
    WATCHING = "watching"
    CLOSED = "closed"


S = RequestState
# Which state may follow which (anything else is a bug in the caller, or an operator asking for a
# step the request is not ready for: refused with the request's state).
TRANSITIONS: dict[RequestState, frozenset[RequestState]] = {
    S.QUEUED: frozenset({S.PLANNED}),
    S.PLANNED: frozenset({S.PLANNED, S.EXECUTING}),
    S.EXECUTING: frozenset({S.EXECUTING, S.EXECUTED, S.PLANNED}),
    S.EXECUTED: frozenset({S.EXECUTING, S.EXECUTED, S.AWAITING_ATTESTATION, S.VERIFIED, S.PLANNED}),
    S.AWAITING_ATTESTATION: frozenset({S.EXECUTING, S.EXECUTED, S.AWAITING_ATTESTATION, S.VERIFIED, S.PLANNED}),
    S.VERIFIED: frozenset({S.WATCHING, S.EXECUTED, S.EXECUTING, S.PLANNED}),
    S.WATCHING: frozenset({S.WATCHING, S.EXECUTED, S.EXECUTING, S.PLANNED, S.CLOSED}),
    S.CLOSED: frozenset(),
}
OPEN_STATES = frozenset(s for s in RequestState if s is not S.CLOSED)


class ErasureRequest(Frozen):
    """One request as the board shows it. Its subjects' values are not here: they are in the
    request store, encrypted under the request's own data key (gone once the request is closed)."""

    request_id: str
    received_at: datetime
    deadline_at: datetime
    sources: tuple[str, ...] = Field(description="Source key columns (dataset.column) the subjects' values are for.")
    subjects: int = Field(description="How many subject values the request names.")
    state: RequestState
    plan_id: str | None = None
    last_action: str
    last_action_at: datetime
    watch_until: datetime | None = None
    closed_at: datetime | None = None
    key_fingerprint: str | None = Field(None, description="SHA-256 prefix of the data key (kept after the key is destroyed).")

    def overdue(self, now: datetime) -> bool:
        """The deadline passed and the erasure is not proven yet (closed, watching or verified)."""
        return now > self.deadline_at and self.state not in (S.VERIFIED, S.WATCHING, S.CLOSED)

    def days_left(self, now: datetime) -> int:
        return (self.deadline_at - now).days
