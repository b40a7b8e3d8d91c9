"""One executed step as piitracer keeps it: what the journal holds and the audit log records.

The executor's erasers count into a ``StepOutcome`` while a step runs; the journal stores that
outcome with the step's state and times, and reads it back as a :class:`StepRecord`; the audit
recorder records :class:`StepRecord` values (plus the table's metadata fingerprint at recording
time). One shape from the journal to the audit entry, so a field cannot be dropped on the way.
"""

from __future__ import annotations

from typing import Any, Mapping

from pydantic import Field

from piitracer.model.lineage import Frozen

OUTCOME_FIELDS = ("rows_deleted", "files_rewritten", "files_removed", "bytes_removed", "version_before",
                  "version_after", "details")


class StepRecord(Frozen):
    """One step of one plan: where it ran, its state, its times and what it did."""

    step_id: str
    order: int
    dataset: str
    action: str
    state: str = Field(description="committed | pending | blocked | failed | running | awaiting_attestation | attested")
    run_id: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    version_before: str | None = None
    version_after: str | None = None
    metadata_file: str | None = Field(None, description="The table's newest metadata file (relative), when recorded.")
    metadata_hash: str | None = Field(None, description="SHA-256 of that file when the step was recorded.")
    rows_deleted: int = 0
    files_rewritten: int = 0
    files_removed: int = 0
    bytes_removed: int = 0
    message: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, *, step_id: str, order: int, dataset: str, action: str, state: str,
           outcome: Mapping[str, Any] | None = None, **fields: Any) -> "StepRecord":
        """A record from a step's identity, state and its outcome's counts (a ``StepOutcome`` as a
        dict, as the journal stores it; missing counts are 0)."""
        outcome = outcome or {}
        counts = {name: outcome.get(name) for name in OUTCOME_FIELDS if outcome.get(name) is not None}
        for name in ("version_before", "version_after"):
            if name in counts:
                counts[name] = str(counts[name])
        return cls(step_id=step_id, order=int(order), dataset=dataset, action=action, state=state, **counts, **fields)
