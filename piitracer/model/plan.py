"""The deletion plan: a versioned, deterministic JSON document (pydantic).

A plan holds the subjects' key values (it is sensitive: written with mode 0600). ``plan_id`` is
the SHA-256 of the plan's canonical JSON without the id itself, so the same inputs give the same
id and byte-identical files. Adding fields is non-breaking; removing or renaming one bumps
``SCHEMA_VERSION``.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from pydantic import Field, field_validator

from piitracer.model.lineage import ColumnRef, Frozen

SCHEMA_VERSION = "1.0"


class Subject(Frozen):
    """One erasure request: the subject's key value in the source columns."""

    value: str = Field(description="The subject's key value, as text (bound as data, never pasted into SQL).")
    request_id: str
    received_at: datetime = Field(description="When the request was received (the deadline runs from here).")

    @field_validator("value")
    @classmethod
    def _not_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("a subject value must not be empty")
        return value

    @field_validator("received_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("received_at needs a time zone (e.g. 2026-11-20T10:00:00Z)")
        return value


class DatasetStatus(str, Enum):
    """What the plan does with a dataset the subject's data reaches."""

    ERASE = "erase"  # rows found by a key column and erased, with the physical steps of its format
    MANUAL_REVIEW = "manual_review"  # holds the subject's data but cannot be filtered, or by hand
    RECOMPUTE = "recompute"  # aggregates include the subject's contribution: rebuild after upstream erasure
    NO_ACTION = "no_action"  # holds no value of the subject (views, indirect-only influence)


class Action(str, Enum):
    """Every step kind a plan can contain (README: "Plan actions")."""

    RESOLVE = "resolve"  # read the subjects' rows in a source: capture identifiers and computed keys
    DELETE_ROWS = "delete_rows"  # logical delete by key column, values bound as data
    REWRITE_DATA_FILES = "rewrite_data_files"  # Iceberg: apply position/equality delete files
    REWRITE_MANIFESTS = "rewrite_manifests"  # Iceberg: drop manifests whose bounds hold the values
    RELEASE_REF = "release_ref"  # Iceberg: a tag/branch retains a pre-delete snapshot (blocking)
    EXPIRE_SNAPSHOTS = "expire_snapshots"  # Iceberg: expire every snapshot holding pre-delete files
    REMOVE_ORPHAN_FILES = "remove_orphan_files"  # Iceberg: remove unreferenced files
    PURGE_DELETION_VECTORS = "purge_deletion_vectors"  # Delta: rewrite files carrying deletion vectors
    VACUUM = "vacuum"  # Delta: remove files no longer in the table
    CLEAN_DELTA_LOG = "clean_delta_log"  # Delta: checkpoint + log cleanup so no stats keep the values
    REWRITE_FILES = "rewrite_files"  # plain Parquet: rewrite affected files, then remove the originals
    REWRITE_ARCHIVE = "rewrite_archive"  # archive: rewrite (or delete) the archived objects
    RECOMPUTE = "recompute"  # rebuild an aggregate after its inputs are erased
    MANUAL_REVIEW = "manual_review"  # a person decides how to find and erase the rows
    MANUAL = "manual"  # a system piitracer cannot touch: its owner erases it


class ValueKind(str, Enum):
    IDENTIFIER = "identifier"  # a raw identifier value captured from the source rows
    COMPUTED = "computed"  # an expression evaluated on the source rows


class ValueSource(Frozen):
    """Where the values of a key column come from: a named value set made by the resolve step."""

    name: str = Field(description="Name of the value set, e.g. 'prod.payments.user_id' or 'computed_1'.")
    kind: ValueKind
    source: ColumnRef = Field(description="The source identifier column the values come from.")
    expression: str | None = Field(None, description="For computed values: Spark SQL over the source row.")


class Deadline(Frozen):
    """When physical erasure would complete under the dataset's own retention, against the policy."""

    deadline_at: datetime
    retention_window: timedelta | None = Field(
        None, description="How long bytes survive a logical delete under the dataset's own settings (None: forever/unknown)."
    )
    natural_completion: datetime | None = Field(None, description="received_at + retention_window.")
    violates_deadline: bool
    override: str | None = Field(None, description="What the plan does instead of waiting.")
    basis: str = Field(description="Which settings the window comes from.")


class Step(Frozen):
    """One ordered step of the plan."""

    order: int
    id: str
    dataset: str
    action: Action
    group: str | None = Field(None, description="Datasets of one lineage cycle share a group and are erased together.")
    key_column: str | None = None
    values_from: tuple[ValueSource, ...] = ()
    depends_on: tuple[str, ...] = ()
    params: dict[str, Any] = Field(default_factory=dict)
    blocking: bool = Field(False, description="Erasure cannot complete until a person acts on this step.")
    owner: str | None = None
    reason: str | None = None
    lineage_path: tuple[str, ...] = Field((), description="The edges that put the subject's data here.")


class DatasetDecision(Frozen):
    """The per-dataset summary: status, key column, rule and reason."""

    dataset: str
    format: str | None
    status: DatasetStatus
    key_column: str | None = None
    rule: str = Field(description="The design rule that decided (see README, 'Key column rules').")
    reason: str
    values_from: tuple[ValueSource, ...] = ()
    lineage_path: tuple[str, ...] = ()
    group: str | None = None
    deadline: Deadline | None = None
    warnings: tuple[str, ...] = ()


class ResolveCapture(Frozen):
    """What the resolve step captures in one source before anything is deleted."""

    dataset: str
    key_columns: tuple[str, ...] = Field(description="Source columns holding the subjects' key.")
    identifiers: tuple[str, ...] = Field(description="Identifier columns whose values are captured.")
    computed: tuple[ValueSource, ...] = ()


class DeletionPlan(Frozen):
    """The whole plan. Serialise with :meth:`to_json`; ``plan_id`` is a hash of the rest."""

    schema_version: str = SCHEMA_VERSION
    plan_id: str = ""
    sources: tuple[ColumnRef, ...]
    subjects: tuple[Subject, ...]
    deadline_at: datetime
    resolve: tuple[ResolveCapture, ...]
    steps: tuple[Step, ...]
    datasets: tuple[DatasetDecision, ...]
    warnings: tuple[str, ...] = ()

    def content_hash(self) -> str:
        """SHA-256 of the canonical JSON of everything but ``plan_id``."""
        body = self.model_dump(mode="json", exclude={"plan_id"})
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()

    def with_id(self) -> "DeletionPlan":
        """This plan with ``plan_id`` set from its content."""
        return self.model_copy(update={"plan_id": self.content_hash()})

    def to_json(self) -> str:
        """The plan file's text: stable key order, indented, newline-terminated."""
        return json.dumps(self.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"

    def decision(self, dataset: str) -> DatasetDecision:
        """The summary of one dataset; KeyError if the plan does not reach it."""
        for decision in self.datasets:
            if decision.dataset == dataset:
                return decision
        raise KeyError(f"the plan does not reach dataset {dataset!r}")


class PlanRequest(Frozen):
    """What to plan: the source columns holding the subject key, and the subjects (one or a batch)."""

    sources: tuple[ColumnRef, ...] = Field(min_length=1)
    subjects: tuple[Subject, ...] = Field(min_length=1)
