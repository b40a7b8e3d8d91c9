"""What one executed step did: the facts the journal and the audit trail record."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any
from piitracer.model.errors import RefusedError


class SafetyError(RefusedError, RuntimeError):
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


class Attempt:
    """The facts a step records when it starts work, kept across a kill.

    A step killed after its table commit but before the journal's ``committed`` is run again on
    resume; the second attempt finds nothing left to delete. Without the first attempt's facts it
    would report 0 rows deleted (the audit trail would under-report the erasure) and, for steps
    that override a table setting and restore it, it would "restore" the override. So a step calls
    :meth:`start` before it changes anything; the executor journals those facts with the step still
    ``running``, and an attempt after a kill receives the first attempt's facts in ``earlier``."""

    def __init__(self, earlier: dict[str, Any] | None = None, save=None) -> None:
        self.earlier = dict(earlier) if earlier else None
        self._save = save or (lambda facts: None)

    def start(self, facts: dict[str, Any]) -> dict[str, Any]:
        """Journal ``facts`` unless an earlier attempt already did; returns the first attempt's
        facts (those describe the table before anything of this step changed it)."""
        if self.earlier is not None:
            return self.earlier
        self.earlier = dict(facts)
        self._save(self.earlier)
        return self.earlier
