"""The deletion plan: a versioned, deterministic JSON document (pydantic).

A plan holds the subjects' key values (it is sensitive: written with mode 0600). ``plan_id`` is
the SHA-256 of the plan's canonical JSON without the id itself, so the same inputs give the same
id and byte-identical files. Adding fields is non-breaking; removing or renaming one bumps
``SCHEMA_VERSION``.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, Literal, Union

from pydantic import Field, field_validator, model_validator

from piitracer.model.lineage import ColumnRef, Frozen

SCHEMA_VERSION = "2.0"
# What changed from 1.0: step ``params`` typed per action; the resolve capture names its key
# columns' types and normalisation; each dataset decision carries its catalog format, table,
# location and the value forms of its columns; an optional ``seal`` (HMAC under the audit key).
KNOWN_SCHEMA_VERSIONS = ("2.0",)


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
    SHRED = "shred"  # holds the subject's data only as ciphertext under the subject's key: destroyed with the key


class Action(str, Enum):
    """Every step kind a plan can contain (README: "Plan actions")."""

    RESOLVE = "resolve"  # read the subjects' rows in a source: capture identifiers and computed keys
    DELETE_ROWS = "delete_rows"  # logical delete by key column, values bound as data
    EQUALITY_DELETE = "equality_delete"  # Iceberg MoR (delete_mode: equality): the keys as one equality-delete file
    REWRITE_DATA_FILES = "rewrite_data_files"  # Iceberg: apply position/equality delete files
    REWRITE_MANIFESTS = "rewrite_manifests"  # Iceberg: drop manifests whose bounds hold the values
    REWRITE_REF = "rewrite_ref"  # Iceberg: a tag/branch keeps its name, moved to its snapshot minus the subjects
    RELEASE_REF = "release_ref"  # Iceberg: a tag/branch retains a pre-delete snapshot (blocking; drops it)
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
    AWAIT_REPLICATION = "await_replication"  # a replication-managed replica: wait for the primary's erasure to propagate
    DESTROY_SUBJECT_KEY = "destroy_subject_key"  # crypto-shredding: delete the subjects' keys from the key vault


# Steps a person (or the dataset's own job) does and attests: piitracer records them, never runs them.
PERSON_ACTIONS = frozenset({Action.MANUAL, Action.MANUAL_REVIEW, Action.RECOMPUTE})
# Steps that read and write no file of their dataset: a person's, a replica's wait, and the
# destruction of the subjects' keys (it writes the key vault, never the shredded dataset's files).
NO_FILE_WORK = PERSON_ACTIONS | {Action.AWAIT_REPLICATION, Action.DESTROY_SUBJECT_KEY}


class StepEngine(str, Enum):
    """What runs a step's table work, chosen at plan time (``planner/templates/iceberg_engines.py``).
    Only Iceberg steps name one: Spark, or pyiceberg where Spark cannot reach the table (or the
    workspace says so)."""

    SPARK = "spark"  # Spark SQL and Iceberg's Java actions
    PYICEBERG = "pyiceberg"  # pyiceberg, no JVM; piitracer removes unreferenced files itself


class ValueKind(str, Enum):
    IDENTIFIER = "identifier"  # a raw identifier value captured from the source rows
    COMPUTED = "computed"  # an expression evaluated on the source rows
    SURROGATE = "surrogate"  # read from the dataset that maps a natural key to a surrogate key (``lookup``)


class SurrogateLookup(Frozen):
    """Where a surrogate key's values are read at run time: ``value_column`` of the rows of
    ``dataset`` whose ``key_column`` holds one of the ``key_from`` value sets' values."""

    dataset: str
    key_column: str = Field(description="The natural key column of the mapping dataset.")
    key_from: tuple[str, ...] = Field(description="Value sets the natural key column is matched against.")
    value_column: str = Field(description="The surrogate key column whose values the lookup reads.")
    how: str = Field(description="How the key is assigned (for people; never evaluated).")


class ValueSource(Frozen):
    """Where the values of a key column come from: a named value set made by the resolve step."""

    name: str = Field(description="Name of the value set, e.g. 'prod.payments.user_id' or 'computed_1'.")
    kind: ValueKind
    source: ColumnRef = Field(description="The source identifier column the values come from.")
    expression: str | None = Field(None, description="For computed values: Spark SQL over the source row.")
    # Absent from the JSON when None, so plans without surrogate keys are byte-identical to before.
    lookup: SurrogateLookup | None = Field(None, exclude_if=lambda value: value is None,
                                           description="For surrogate values: the mapping dataset they are read from.")


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


REF_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,254}$")
# rewrite_data_files options piitracer may pass (their values are pasted into the procedure call,
# so both names and values are checked: an edited plan must not smuggle SQL in through them).
REWRITE_OPTION_NAMES = frozenset({
    "delete-file-threshold", "min-file-size-bytes", "max-file-size-bytes", "remove-dangling-deletes",
    "use-starting-sequence-number", "target-file-size-bytes", "partial-progress.enabled", "rewrite-all",
    "min-input-files", "delete-ratio-threshold", "max-concurrent-file-group-rewrites",
})
_OPTION_VALUE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class NoParams(Frozen):
    """Steps whose behaviour is fully given by the action, dataset, key column and value sets."""


class RewriteDataFilesParams(Frozen):
    """Iceberg ``rewrite_data_files``: the procedure's options (names and values checked)."""

    options: dict[str, str]

    @field_validator("options")
    @classmethod
    def _safe_options(cls, value: dict[str, str]) -> dict[str, str]:
        for name, option in value.items():
            if name not in REWRITE_OPTION_NAMES:
                raise ValueError(f"rewrite_data_files option {name!r} is not one piitracer uses")
            if not _OPTION_VALUE.match(option):
                raise ValueError(f"rewrite_data_files option {name}: value must be letters, digits, '.', '_' or '-'")
        return value


class _RefParams(Frozen):
    """An Iceberg tag or branch, and the snapshot it pointed at when planned."""

    ref: str
    ref_type: str = Field(pattern="^(tag|branch)$")
    snapshot_id: int  # when planned; a rewrite reads the ref's snapshot again when it runs

    @field_validator("ref")
    @classmethod
    def _ref_name(cls, value: str) -> str:
        if not REF_NAME.match(value):
            raise ValueError("a tag/branch name of letters, digits, '_', '.' or '-'")
        return value


class RewriteRefParams(_RefParams):
    """Iceberg tag or branch whose snapshot holds the subjects: rewritten without them, kept."""


class ReleaseRefParams(_RefParams):
    """Iceberg tag or branch that retains a pre-delete snapshot: dropped (``policy.refs: release``)."""

    fix: str


class ExpireSnapshotsParams(Frozen):
    """Iceberg ``expire_snapshots``; ``clean_expired_files`` is false for shallow clones."""

    older_than: Literal["delete_commit_time"] = "delete_commit_time"
    retain_last: int = Field(1, ge=1, le=100)
    clean_expired_files: bool = True


class RemoveOrphanFilesParams(Frozen):
    """Iceberg orphan removal (only with no concurrent writer)."""

    older_than: Literal["run_start"] = "run_start"
    condition: str = "only with no concurrent writer: run with --no-concurrent-writers"
    api: str = "SparkActions.deleteOrphanFiles"
    scope: str | None = None


class PurgeDeletionVectorsParams(Frozen):
    when: str = "the table has deletion vectors"


class VacuumParams(Frozen):
    """Delta ``vacuum``: retention 0 hours is the plan's override of the table's own retention."""

    retention_hours: int = Field(0, ge=0)
    enforce_retention_duration: bool = False
    includes: str = "removed data files and _change_data files"


class CleanDeltaLogParams(Frozen):
    log_retention: str = "0 hours"
    create_checkpoint: bool = True
    cleanup_metadata: bool = True
    why: str = "add-action stats (minValues/maxValues) in _delta_log JSON and checkpoints hold the values"


class RewriteFilesParams(Frozen):
    strategy: str = "write each affected file without the subjects' rows, commit the replacement, then remove the original"
    skip_files_by_statistics: bool = True


class RewriteArchiveParams(Frozen):
    alternative: str = "delete the affected archived objects"
    restore_delay: str | None = None
    cost_per_gb_restore: float | None = Field(None, ge=0)


class AwaitReplicationParams(Frozen):
    """A replication-managed replica: nothing is erased in it; the replication carries the
    primary's erasure, which the verifier checks once ``propagation_wait`` has passed since the
    primary's last step committed."""

    primary: str
    propagation_wait: str  # e.g. '6h' (whole hours, minutes or seconds)
    propagation_seconds: int = Field(ge=0)


PLAINTEXT_PREFIX = "decrypted:"


def plaintext_set(origin: str) -> str:
    """The name of the value set holding the subjects' plaintext of one shredded column
    (``decrypted:prod.payments.email``), decrypted by the resolve step before their keys are destroyed."""
    return f"{PLAINTEXT_PREFIX}{origin}"


class CiphertextColumn(Frozen):
    """One column of a dataset planned ``shred`` that holds ciphertext of a shredded column: what the
    resolve step reads, decrypts and keeps (sealed) before the key is destroyed, and the verifier
    then searches for. Names are matched case-insensitively against what the files store."""

    column: str = Field(description="The column holding the ciphertext.")
    origin: str = Field(description="The catalog's shredded column ('dataset.column') the ciphertext is of.")
    subject_column: str | None = Field(description="The column of this dataset holding the subject id whose key "
                                       "encrypts it; None: the subjects' rows are found by their ciphertext, equal "
                                       "to the origin's.")
    plaintext: str = Field(description="The value set the subjects' decrypted values are kept in.")
    context: str = Field("", description="The context the pipeline bound into the ciphertext.")


class CiphertextHeld(Frozen):
    """Where one dataset planned ``shred`` holds ciphertext under the subjects' keys."""

    dataset: str
    columns: tuple[CiphertextColumn, ...] = Field(min_length=1)


class DestroySubjectKeyParams(Frozen):
    """Crypto-shredding: the subjects' keys (found by the step's key column values) are deleted
    from the key vault; the ciphertext under them in ``datasets`` becomes unreadable, and nothing
    of those datasets is rewritten. ``ciphertext`` says, per dataset, which columns the resolve
    step must read and decrypt before the keys go (a value that is not such ciphertext stops the
    run), and where the plaintext it finds is kept for the proof."""

    keys: tuple[str, ...] = Field(description="The catalog's shredded key columns ('dataset.column') the keys belong to.")
    datasets: tuple[str, ...] = Field(description="The datasets planned 'shred' that this key destruction erases.")
    ciphertext: tuple[CiphertextHeld, ...] = Field((), description="Per dataset of ``datasets``, the columns holding "
                                                   "ciphertext under the keys (checked before they are destroyed).")

    def held(self, dataset: str) -> CiphertextHeld | None:
        """Where ``dataset`` holds ciphertext under this step's keys, or None when the plan does not say."""
        return next((held for held in self.ciphertext if held.dataset == dataset), None)


StepParams = Union[
    DestroySubjectKeyParams, AwaitReplicationParams, RewriteDataFilesParams, RewriteRefParams, ReleaseRefParams, ExpireSnapshotsParams, RemoveOrphanFilesParams,
    PurgeDeletionVectorsParams, VacuumParams, CleanDeltaLogParams, RewriteFilesParams, RewriteArchiveParams, NoParams,
]


def _params_model(action: "Action") -> type[Frozen]:
    return {
        Action.REWRITE_DATA_FILES: RewriteDataFilesParams, Action.RELEASE_REF: ReleaseRefParams,
        Action.REWRITE_REF: RewriteRefParams,
        Action.EXPIRE_SNAPSHOTS: ExpireSnapshotsParams, Action.REMOVE_ORPHAN_FILES: RemoveOrphanFilesParams,
        Action.PURGE_DELETION_VECTORS: PurgeDeletionVectorsParams, Action.VACUUM: VacuumParams,
        Action.CLEAN_DELTA_LOG: CleanDeltaLogParams, Action.REWRITE_FILES: RewriteFilesParams,
        Action.REWRITE_ARCHIVE: RewriteArchiveParams, Action.AWAIT_REPLICATION: AwaitReplicationParams,
        Action.DESTROY_SUBJECT_KEY: DestroySubjectKeyParams,
    }.get(action, NoParams)


class Step(Frozen):
    """One ordered step of the plan. ``params`` is typed by ``action`` (one model per action)."""

    order: int
    id: str = Field(pattern=r"^s[0-9]{3,6}$")
    dataset: str
    action: Action
    group: str | None = Field(None, description="Datasets of one lineage cycle share a group and are erased together.")
    key_column: str | None = None
    values_from: tuple[ValueSource, ...] = ()
    depends_on: tuple[str, ...] = ()
    params: StepParams = Field(default_factory=NoParams)
    blocking: bool = Field(False, description="Erasure cannot complete until a person acts on this step.")
    owner: str | None = None
    reason: str | None = None
    lineage_path: tuple[str, ...] = Field((), description="The edges that put the subject's data here.")
    # Absent from the JSON when None (steps of formats with one way to run), so their plans are unchanged.
    engine: StepEngine | None = Field(None, exclude_if=lambda value: value is None,
                                      description="What runs the step's table work (Iceberg: spark or pyiceberg).")

    @model_validator(mode="before")
    @classmethod
    def _typed_params(cls, data: Any) -> Any:
        # The params model is chosen by the action, so a plan cannot pair an action with another
        # action's parameters (or with parameters nobody reads).
        if isinstance(data, dict) and "action" in data:
            try:
                action = Action(data["action"])
            except ValueError:
                return data  # the field validator reports the unknown action
            params = data.get("params") or {}
            model = _params_model(action)
            if not isinstance(params, model):
                data = {**data, "params": model.model_validate(params)}
        return data


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
    table: str | None = Field(None, description="The catalog's table identifier at planning (execute refuses a change).")
    location: str | None = Field(None, description="The catalog's location as written at planning (execute refuses a change).")
    column_forms: dict[str, tuple[str, ...]] = Field(
        default_factory=dict,
        description="Column -> names of the value sets the lineage says it holds (identifiers, computed and "
        "join-equivalent keys): the verifier searches each for every one of them.",
    )


class ResolveCapture(Frozen):
    """What the resolve step captures in one source before anything is deleted."""

    dataset: str
    key_columns: tuple[str, ...] = Field(description="Source columns holding the subjects' key.")
    key_types: dict[str, str] = Field(description="Each key column's type: subject values are parsed strictly against it.")
    normalised: dict[str, tuple[str, ...]] = Field(
        default_factory=dict, description="Normalisation the catalog declares for a string key column.")
    identifiers: tuple[str, ...] = Field(description="Identifier columns whose values are captured.")
    computed: tuple[ValueSource, ...] = ()


class GuardPoint(Frozen):
    """Where a pipeline guard (``piitracer.guard``) belongs so an erased person is not written back:
    a dataset the person's identifiers enter the erasure's lineage through (issue 52)."""

    dataset: str = Field(description="Guard the jobs that write this dataset.")
    columns: tuple[str, ...] = Field(description="The columns the guard checks.")
    fed_by: tuple[str, ...] = Field((), description="Datasets outside the erasure the lineage says feed these columns.")
    reason: str


class PlanSeal(Frozen):
    """HMAC-SHA256 of the ``plan_id`` under a key derived from the audit key: a plan edited after
    planning cannot be given a valid seal again without that key."""

    key_id: str = Field(description="Public fingerprint of the audit key that sealed it.")
    hmac: str


class DeletionPlan(Frozen):
    """The whole plan. Serialise with :meth:`to_json`; ``plan_id`` is a hash of the rest.

    Examples:
        The plan id is the hash of the plan's content: an edited plan has another id.

        >>> from datetime import datetime, timezone
        >>> from piitracer.model.lineage import ColumnRef
        >>> received = datetime(2026, 3, 1, tzinfo=timezone.utc)
        >>> plan = DeletionPlan(sources=(ColumnRef(dataset="prod.payments", column="user_id"),),
        ...                     subjects=(Subject(value="8841302", request_id="dsr-1", received_at=received),),
        ...                     deadline_at=received, resolve=(), steps=(), datasets=()).with_id()
        >>> plan.plan_id == plan.content_hash(), len(plan.plan_id)
        (True, 64)
        >>> plan.model_copy(update={"deadline_at": datetime(2026, 6, 1, tzinfo=timezone.utc)}).content_hash() == plan.plan_id
        False
        >>> DeletionPlan.model_validate_json(plan.to_json()) == plan
        True
    """

    schema_version: str = SCHEMA_VERSION
    plan_id: str = ""
    sources: tuple[ColumnRef, ...]
    subjects: tuple[Subject, ...]
    deadline_at: datetime
    resolve: tuple[ResolveCapture, ...]
    steps: tuple[Step, ...]
    datasets: tuple[DatasetDecision, ...]
    warnings: tuple[str, ...] = ()
    # Absent from the JSON when empty, so plans made before issue 52 keep their ids.
    guard_points: tuple[GuardPoint, ...] = Field((), exclude_if=lambda value: not value,
                                                 description="Where a pipeline guard belongs (the lineage's entry points).")
    seal: PlanSeal | None = None

    @field_validator("schema_version")
    @classmethod
    def _known_version(cls, value: str) -> str:
        if value not in KNOWN_SCHEMA_VERSIONS:
            raise ValueError(f"plan schema_version {value!r} is not one this piitracer reads "
                             f"({', '.join(KNOWN_SCHEMA_VERSIONS)}): re-plan with this version")
        return value

    @model_validator(mode="after")
    def _well_formed_steps(self) -> "DeletionPlan":
        """Step ids unique, orders 1..n in sequence, dependencies existing, earlier and acyclic."""
        seen: dict[str, int] = {}
        for position, step in enumerate(self.steps, start=1):
            if step.id in seen:
                raise ValueError(f"step id {step.id} appears twice (orders {seen[step.id]} and {step.order})")
            if step.order != position:
                raise ValueError(f"step {step.id}: order {step.order} where {position} was expected (steps are listed in order)")
            for before in step.depends_on:
                if before == step.id:
                    raise ValueError(f"step {step.id} depends on itself")
                if before not in seen:
                    later = any(s.id == before for s in self.steps)
                    raise ValueError(f"step {step.id} depends on {before}, which "
                                     + ("comes later (a cycle or a reordered plan)" if later else "is not a step of this plan"))
            seen[step.id] = step.order
        return self

    def content_hash(self) -> str:
        """SHA-256 of the canonical JSON of everything but ``plan_id`` and ``seal``."""
        body = self.model_dump(mode="json", exclude={"plan_id", "seal"})
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()

    def with_id(self) -> "DeletionPlan":
        """This plan with ``plan_id`` set from its content (and no seal: sealing comes after)."""
        return self.model_copy(update={"plan_id": self.content_hash(), "seal": None})

    def source_key_type(self, dataset: str, column: str) -> str:
        """The type a source key column had at planning; KeyError when it is not a source key."""
        for capture in self.resolve:
            if capture.dataset == dataset and column in capture.key_types:
                return capture.key_types[column]
        raise KeyError(f"{dataset}.{column} is not a source key column of this plan")

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
