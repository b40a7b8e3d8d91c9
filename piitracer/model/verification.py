"""What the verifier found, per dataset: the evidence the audit log records and the report shows.

A finding names the file, the column or field and which value set (identifier) matched — never the
raw value, so reports and audit entries stay free of personal data.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum

from pydantic import Field

from piitracer.model.lineage import Frozen


class ErasureState(str, Enum):
    """The verifier's verdict on one dataset."""

    ERASED = "erased"  # no retained snapshot/version and no file under the location holds a subject value
    PENDING = "pending"  # bytes remain only where a planned step or a retention window will remove them
    FOUND = "found"  # subject data is still there and nothing planned will remove it
    NOT_CHECKED = "not_checked"  # nothing to check (no location, view, external system, manual review)


class Finding(Frozen):
    """One place that still holds a subject value."""

    file: str = Field(description="Path relative to the dataset's location ('' for a logical finding).")
    where: str = Field(description="Column, footer statistics, manifest bound, log field, snapshot id...")
    value_set: str = Field(description="Which resolved value set matched (e.g. 'prod.payments.pan'), never the value.")
    kind: str = Field(description="data | statistics | manifest_bound | manifest | log_stats | log | metadata | raw | path | snapshot")


class DatasetVerification(Frozen):
    """The result for one dataset of a plan."""

    dataset: str
    state: ErasureState
    files_scanned: int = 0
    snapshots_checked: int = 0
    findings: tuple[Finding, ...] = ()
    pending_until: str | None = Field(None, description="For pending: the step or retention window that removes the bytes, and when.")
    reason: str | None = None
    value_sets: tuple[str, ...] = Field((), description="Names of the value sets searched in this dataset (never the values).")
    notes: tuple[str, ...] = Field((), description="Files decoded only as raw bytes, versions that could not be read back.")


class VerificationReport(Frozen):
    """Every dataset of one plan, checked at one moment."""

    plan_id: str
    checked_at: datetime
    datasets: tuple[DatasetVerification, ...]

    @property
    def all_erased(self) -> bool:
        """True when no dataset is ``found`` or ``pending``."""
        return all(d.state in (ErasureState.ERASED, ErasureState.NOT_CHECKED) for d in self.datasets)

    def result(self, dataset: str) -> DatasetVerification:
        """The verification of one dataset; KeyError if it was not checked."""
        for item in self.datasets:
            if item.dataset == dataset:
                return item
        raise KeyError(f"dataset {dataset!r} was not verified")
