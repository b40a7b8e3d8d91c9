"""What one executed step did: the facts the journal and the audit trail record."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


class SafetyError(RuntimeError):
    """A step would lose or keep rows it must not: the run stops with this message."""


@dataclass
class StepOutcome:
    """Counts and versions of one step; ``details`` holds format-specific facts (JSON-able)."""

    rows_deleted: int = 0
    files_rewritten: int = 0
    files_removed: int = 0
    bytes_removed: int = 0
    version_before: str | None = None
    version_after: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
