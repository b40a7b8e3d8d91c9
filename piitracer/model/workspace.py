"""The workspace: what ``piitracer.yaml`` declares, as validated, frozen pydantic types.

Every key is documented in the README ("Workspace reference"). Durations are written as
``30d``, ``12h``, ``90m``, ``45s`` (or a number of seconds) and held as ``timedelta``.
"""

from __future__ import annotations

import re
from datetime import timedelta
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, ValidationInfo, field_validator, model_validator

from piitracer.model.console_settings import ConsoleSettings, NotifySettings
from piitracer.model.key_values import NORMALISATIONS, KeyValueError, parse_key_type
from piitracer.model.lineage import Frozen
from piitracer.model.settings import (SQLITE_VAULT_SUFFIXES, ClassifySettings, FileWorkSettings, IcebergSettings,
                                     LineageEmitSettings, ShredSettings, SparkSettings, StorageSettings, VerifySettings)

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(d|h|m|s|w)\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}


def parse_duration(value: Any) -> timedelta:
    """``'30d'`` -> 30 days; also ``'12h'``, ``'90m'``, ``'45s'``, ``'2w'``, seconds as a number.

    Examples:
        >>> parse_duration("30d")
        datetime.timedelta(days=30)
        >>> parse_duration("90m"), parse_duration(45)
        (datetime.timedelta(seconds=5400), datetime.timedelta(seconds=45))
        >>> parse_duration("a month")
        Traceback (most recent call last):
        ValueError: expected a duration such as '30d', '12h' or '90m'
    """
    if isinstance(value, timedelta):
        return value
    if isinstance(value, bool):
        raise ValueError("expected a duration such as '30d', '12h' or '90m'")
    if isinstance(value, (int, float)):
        return timedelta(seconds=value)
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match:
            return timedelta(seconds=float(match.group(1)) * _UNIT_SECONDS[match.group(2).lower()])
    raise ValueError("expected a duration such as '30d', '12h' or '90m'")


Duration = Annotated[timedelta, BeforeValidator(parse_duration)]


def duration_text(value: timedelta) -> str:
    """A duration as the workspace writes it: '6h', '90m', '45s' (the largest whole unit).

    Examples:
        >>> duration_text(parse_duration("2w")), duration_text(parse_duration("1.5h")), duration_text(parse_duration("45s"))
        ('14d', '90m', '45s')
    """
    seconds = int(value.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def setting_text(value: Any) -> Any:
    """A catalog setting as the workspace writes it: a duration as ``duration_text`` says, any
    other value (a count) as it is."""
    return duration_text(value) if isinstance(value, timedelta) else value


class DatasetFormat(str, Enum):
    """A catalog entry's format; what piitracer does with each is ``piitracer/formats/<format>.py``."""

    ICEBERG = "iceberg"
    DELTA = "delta"
    PARQUET = "parquet"
    VIEW = "view"
    ARCHIVE = "archive"
    EXTERNAL = "external"

    @property
    def stores_rows(self) -> bool:
        """Whether the dataset's rows are files at its location, which piitracer erases, scans and
        verifies (a view stores none; an external system's are out of piitracer's reach)."""
        return self not in (DatasetFormat.VIEW, DatasetFormat.EXTERNAL)


class IcebergWriteMode(str, Enum):
    """How an Iceberg table applies row-level deletes (``write.delete.mode``)."""

    MERGE_ON_READ = "merge-on-read"
    COPY_ON_WRITE = "copy-on-write"


class CloneMode(str, Enum):
    SHALLOW = "shallow"  # shares the source's data files
    DEEP = "deep"  # its own copy of the files


class DeleteMode(str, Enum):
    """How an Iceberg merge-on-read table's logical delete is written."""

    POSITIONAL = "positional"  # DELETE: scan for the rows, write their positions
    EQUALITY = "equality"  # the keys as one equality-delete file, no scan for positions (unpartitioned tables)


class ClassifiedBy(str, Enum):
    """Who said which columns are identifiers."""

    PERSON = "person"  # written or confirmed in piitracer.yaml
    AUTO = "auto"  # proposed by ``catalog classify --write``: a person has yet to confirm it


class Retention(Frozen):
    """How long a dataset keeps bytes after a logical delete, under its own maintenance."""

    snapshot_max_age: Duration | None = Field(
        None, description="Iceberg: expire snapshots older than this (history.expire.max-snapshot-age-ms)."
    )
    min_snapshots_to_keep: int | None = Field(None, ge=0, description="Iceberg: snapshots always kept.")
    deleted_file_retention: Duration | None = Field(
        None, description="Delta: VACUUM retention (delta.deletedFileRetentionDuration)."
    )
    log_retention: Duration | None = Field(
        None, description="Delta: how long _delta_log entries are kept (delta.logRetentionDuration)."
    )
    maintenance_every: Duration | None = Field(
        None, description="How often expiry/VACUUM/orphan removal actually runs for this dataset."
    )


def _lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


DatasetId = Annotated[str, BeforeValidator(_lower)]


class CloneOf(Frozen):
    dataset: DatasetId = Field(description="Catalog id of the cloned dataset.")
    mode: CloneMode


class ArchiveOf(Frozen):
    dataset: DatasetId = Field(description="Catalog id of the dataset whose snapshots are exported.")
    schedule: Duration = Field(description="Export period, e.g. '7d' for weekly.")
    retention: Duration = Field(description="How long an exported snapshot is kept.")
    restore_delay: Duration | None = Field(None, description="Cold-storage restore delay, if any.")
    cost_per_gb_restore: float | None = Field(None, ge=0, description="Restore cost, for the plan.")


class ReplicaManagement(str, Enum):
    """Who keeps a replica in step with its primary."""

    REPLICATION = "replication"  # storage/table replication copies the primary: it carries the erasure
    PIPELINE = "pipeline"  # a job writes it like any table: piitracer erases it with its own steps


REPLICA_SEPARATOR = "@"  # a replica's dataset id: '<primary id>@<replica name>'


class Replica(Frozen):
    """One replica of a catalogued dataset (a DR copy in another region or bucket), listed under
    the primary's ``replicas:``. The workspace turns it into its own dataset,
    ``<primary>@<name>``, with the primary's format and columns."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$", description="Short name, unique per primary: the "
                      "replica's dataset id is '<primary>@<name>'.")
    location: str = Field(description="Where the replica lives (a path relative to the workspace, or a URI).")
    table: str | None = Field(None, description="Spark table identifier (Iceberg replicas that piitracer erases).")
    managed_by: ReplicaManagement = Field(description="'pipeline': erased by its own steps after the primary; "
                                          "'replication': verified only, after propagation_wait.")
    propagation_wait: Duration = Field(timedelta(hours=1), description="Replication-managed: how long after the "
                                       "primary's erasure the replica must show it (its replication lag).")

    @field_validator("name", mode="before")
    @classmethod
    def _lower_name(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value


class ReplicaOf(Frozen):
    """Set on a replica's own dataset: which dataset it copies and who keeps it in step."""

    dataset: DatasetId
    managed_by: ReplicaManagement
    propagation_wait: Duration = timedelta(hours=1)


class Shredded(Frozen):
    """Columns a pipeline stores as ciphertext under each subject's own data key (crypto-shredding):
    destroying the subject's key in the key vault makes them unreadable, so the plan erases such
    a dataset by destroying the key instead of rewriting its files (``planner/shredding.py``)."""

    key: str = Field(description="The column holding the subject id whose key encrypts the columns.")
    columns: tuple[str, ...] = Field(description="Columns stored as ciphertext under that subject's key.")
    context: str = Field("", description="The context the pipeline bound into the ciphertext (``ShredColumns.context``; "
                         "default none): decryption needs the same.")

    @field_validator("key", mode="before")
    @classmethod
    def _lower_key(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @field_validator("columns", mode="before")
    @classmethod
    def _lower_columns(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            return tuple(v.lower() if isinstance(v, str) else v for v in value)
        return value

    @field_validator("columns")
    @classmethod
    def _some_columns(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("expected at least one column stored as ciphertext under the key")
        return value


class CatalogDataset(Frozen):
    """One dataset of the lakehouse, keyed by its canonical id (``db.table``) in ``catalog:``."""

    format: DatasetFormat
    table: str | None = Field(None, description="Spark table identifier, e.g. 'lake.prod.payments'.")
    location: str | None = Field(None, description="Storage location; relative paths are relative to the workspace.")
    write_mode: IcebergWriteMode | None = Field(None, description="Iceberg only.")
    delete_mode: DeleteMode = Field(DeleteMode.POSITIONAL, description="Iceberg merge-on-read only: 'equality' "
                                    "writes the batch's keys as one equality-delete file instead of a DELETE.")
    columns: tuple[str, ...] = Field((), description="Schema, in order (used to expand SELECT *).")
    identifiers: tuple[str, ...] = Field((), description="Columns holding PII identifiers.")
    classified_by: ClassifiedBy = Field(
        ClassifiedBy.PERSON,
        description="'auto': the identifiers are catalog classify's proposal (catalog.discovered.yaml), not yet "
        "confirmed; a plan relying on them warns. Listing identifiers in piitracer.yaml, or saying "
        "'classified_by: person' there, confirms them.",
    )
    column_types: dict[str, str] = Field(
        default_factory=dict,
        description="Types of key columns ({user_id: bigint}); subject values are parsed strictly against "
        "them. Where a type is not declared, the live table's schema says it.",
    )
    normalised: dict[str, tuple[str, ...]] = Field(
        default_factory=dict,
        description="String columns the pipelines store normalised ({email: [trim, lower]}): a subject "
        "value for that key is normalised the same way before it is compared. Others are taken exactly.",
    )
    subject_key: Annotated[str | None, BeforeValidator(_lower)] = Field(
        None, description="The identifier that is the subject key."
    )
    aliases: tuple[str, ...] = Field((), description="Other names of this dataset in lineage events.")
    retention: Retention = Retention()
    clone_of: CloneOf | None = None
    archive_of: ArchiveOf | None = None
    replicas: tuple[Replica, ...] = Field((), description="Copies of this dataset elsewhere (DR regions, "
                                          "other buckets): each becomes the dataset '<id>@<name>'.")
    replica_of: ReplicaOf | None = Field(None, description="Set by the workspace on a replica's dataset.")
    shredded: Shredded | None = Field(
        None, description="Columns stored as ciphertext under each subject's own key ({key: user_id, columns: "
        "[card, email]}): the plan destroys the subject's key instead of rewriting this dataset where only "
        "such ciphertext holds the subject's data.")
    prepare_for_proof: bool | None = Field(
        None, description="Write the files piitracer rewrites here cheaper to prove (Bloom filters on the identifier "
        "and key columns, dictionary encoding kept, page index); unset: the workspace's verify.prepare.")
    owner: str | None = Field(None, description="Team or person responsible (required for external).")
    description: str | None = None

    @field_validator("columns", "identifiers", "aliases", mode="before")
    @classmethod
    def _lowercase_names(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            return tuple(v.lower() if isinstance(v, str) and not _looks_like_uri(v) else v for v in value)
        return value

    @field_validator("column_types", "normalised", mode="before")
    @classmethod
    def _lowercase_keys(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {str(k).lower(): v for k, v in value.items()}
        return value

    @field_validator("column_types")
    @classmethod
    def _known_types(cls, value: dict[str, str]) -> dict[str, str]:
        checked = {}
        for column, text in value.items():
            try:
                checked[column] = str(parse_key_type(text))
            except KeyValueError as error:
                raise ValueError(f"column_types.{column}: {error}") from None
        return checked

    @field_validator("normalised")
    @classmethod
    def _known_normalisations(cls, value: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        for column, steps in value.items():
            unknown = [s for s in steps if s not in NORMALISATIONS]
            if unknown:
                raise ValueError(f"normalised.{column}: unknown step(s) {unknown} (expected {list(NORMALISATIONS)})")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> "CatalogDataset":
        if self.subject_key and self.subject_key not in self.identifiers:
            raise ValueError(
                f"subject_key {self.subject_key!r} must be one of identifiers {list(self.identifiers)}"
            )
        if self.columns:
            unknown = [c for c in self.identifiers if c not in self.columns]
            if unknown:
                raise ValueError(f"identifiers {unknown} are not in columns {list(self.columns)}")
        if self.columns:
            for key in ("column_types", "normalised"):
                unknown = [c for c in getattr(self, key) if c not in self.columns]
                if unknown:
                    raise ValueError(f"{key}: {unknown} are not in columns {list(self.columns)}")
        if self.shredded:
            self._check_shredded(self.shredded)
        for column in self.normalised:
            if self.column_types.get(column, "string") != "string":
                raise ValueError(f"normalised.{column}: only string columns can be normalised "
                                 f"(column_types says {self.column_types[column]})")
        if self.write_mode and self.format is not DatasetFormat.ICEBERG:
            raise ValueError("write_mode applies to format 'iceberg' only")
        if self.delete_mode is DeleteMode.EQUALITY and (self.format is not DatasetFormat.ICEBERG
                                                       or self.write_mode is IcebergWriteMode.COPY_ON_WRITE):
            raise ValueError("delete_mode 'equality' applies to Iceberg merge-on-read tables only")
        if self.format is DatasetFormat.EXTERNAL and not self.owner:
            raise ValueError("an external dataset needs an 'owner' (who erases it by hand)")
        if self.format is DatasetFormat.ARCHIVE and not self.archive_of:
            raise ValueError("an archive dataset needs 'archive_of'")
        if self.archive_of and self.format is not DatasetFormat.ARCHIVE:
            raise ValueError("'archive_of' applies to format 'archive' only")
        names = [replica.name for replica in self.replicas]
        if len(set(names)) != len(names):
            raise ValueError(f"replicas: names must be unique, got {names}")
        if self.replicas and self.format in (DatasetFormat.VIEW, DatasetFormat.EXTERNAL):
            raise ValueError(f"a {self.format.value} dataset stores no files here: it cannot list replicas")
        if self.replicas and self.replica_of:
            raise ValueError("a replica cannot list replicas of its own: list them on the primary")
        needs_place = self.format.stores_rows
        if needs_place and not (self.location or self.table):
            raise ValueError(f"a {self.format.value} dataset needs a 'location' or a 'table'")
        return self


    def _check_shredded(self, shredded: Shredded) -> None:
        """The key column stays readable (the vault's key is found by it), and both it and the
        ciphertext columns are columns of the dataset when its columns are declared."""
        if shredded.key in shredded.columns:
            raise ValueError(f"shredded.key {shredded.key!r} cannot be one of shredded.columns: the key column "
                             "holds the subject id the key is found by, so it stays readable")
        if self.columns:
            if shredded.key not in self.columns:
                raise ValueError(f"shredded.key {shredded.key!r} is not in columns {list(self.columns)}")
            unknown = [c for c in shredded.columns if c not in self.columns]
            if unknown:
                raise ValueError(f"shredded.columns {unknown} are not in columns {list(self.columns)}")


def _looks_like_uri(value: str) -> bool:
    return "/" in value or ":" in value


class OpenLineageSource(Frozen):
    path: str = Field(description="A file (.json, .jsonl, .ndjson) or a folder of them.")


class SqlSource(Frozen):
    path: str = Field(description="A .sql file or a folder of them.")
    dialect: str = Field("spark", description="sqlglot dialect name.")
    default_database: str = Field("default", description="Database of unqualified table names.")


class DbtSource(Frozen):
    manifest: str = Field(description="A dbt project's target/manifest.json (after dbt compile, run or docs generate).")
    catalog: str | None = Field(None, description="Its target/catalog.json (dbt docs generate): the columns of "
                                "each relation, for SELECT *.")
    dialect: str | None = Field(None, description="sqlglot dialect of the compiled SQL; default: the adapter's.")


class LineageSources(Frozen):
    openlineage: tuple[OpenLineageSource, ...] = ()
    sql: tuple[SqlSource, ...] = ()
    dbt: tuple[DbtSource, ...] = ()
    spark_catalogs: tuple[str, ...] = Field(
        ("spark_catalog",), description="Catalog names stripped from 'catalog.db.table' names."
    )
    location_roots: dict[str, str] = Field(
        default_factory=dict,
        description="Where events' paths live here: {'/data/lakehouse': '.'} maps a cluster mount "
        "point onto a folder relative to the workspace.",
    )

    @field_validator("openlineage", "sql", mode="before")
    @classmethod
    def _paths_as_strings(cls, value: Any) -> Any:
        # Allow the short form `sql: [sql/]` as well as `sql: [{path: sql/}]`.
        if isinstance(value, (list, tuple)):
            return [{"path": v} if isinstance(v, str) else v for v in value]
        return value


class RefHandling(str, Enum):
    """What the plan does with an Iceberg tag or branch whose snapshot holds a subject."""

    REWRITE = "rewrite"  # rewrite_ref: keep the ref, moved to its snapshot minus the subjects' rows
    RELEASE = "release"  # release_ref: drop it (destroys everyone's time travel on it; needs --drop-refs)


class Policy(Frozen):
    deadline: Duration = Field(timedelta(days=30), description="Legal deadline for erasure.")
    refs: RefHandling = Field(RefHandling.REWRITE, description="Iceberg tags and branches holding a subject: "
                              "'rewrite' keeps them without the subjects' rows, 'release' drops them.")
    batch_every: Duration = Field(timedelta(days=7), description="How often a batch window runs (`batch plan`): a "
                                  "queued request due before the next window is flagged 'cannot wait'.")
    watch: Duration = Field(timedelta(days=30), description="How long a verified request is watched (re-verified "
                            "against rows resurrected by late pipeline runs) before it may be closed.")
    approval: Literal["none", "required"] = Field(
        "none", description="'required': execute refuses a plan until a person listed under approvers: (not the one "
        "who planned it) approves it, in the console or with `piitracer approve`.")
    suppression: Literal["keep", "off"] = Field(
        "keep", description="'keep': closing a request keeps a keyed hash of each identifier it erased (never the "
        "value), so `piitracer guard scan` notices the person coming back; 'off': nothing of the person is kept.")


class Pricing(Frozen):
    """What an erasure costs, for `batch plan`'s estimate and budget (the workspace's own prices)."""

    currency: str = Field("INR", description="Shown with every amount.")
    per_gb_rewritten: float = Field(0.0, ge=0, description="Rewriting a gigabyte of table data (compute, requests, egress).")
    per_object_deleted: float = Field(0.0, ge=0, description="Deleting or replacing one object of a table.")
    archive_per_object_deleted: float = Field(0.0, ge=0, description="Deleting or replacing one archived object "
                                              "(e.g. a Glacier early-delete charge); a dataset's archive_of restore "
                                              "cost per GB is added.")


class AuditSettings(Frozen):
    """The ``audit:`` block."""

    anchor: str | None = Field(
        None, description="Where to write the audit log's anchor (its sealed head) at every append: a path or "
        "URI outside the workspace, ideally write-once storage (a separate mount, a bucket with object lock). "
        "`audit verify` checks the log still holds the anchored entry, so emptying the log is detected.")


# A console user's name (owners:, viewers:): what the audit log records as who attested.
ConsoleName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")]


class WorkspaceConfig(Frozen):
    """The whole ``piitracer.yaml``."""

    version: int = Field(1, description="Workspace file format version.")
    lineage: LineageSources = LineageSources()
    catalog: dict[str, CatalogDataset] = Field(default_factory=dict)
    policy: Policy = Policy()
    spark: SparkSettings = SparkSettings()
    iceberg: IcebergSettings = IcebergSettings()
    verify: VerifySettings = VerifySettings()
    rewrite: FileWorkSettings = FileWorkSettings()
    storage: StorageSettings = StorageSettings()
    audit: AuditSettings = AuditSettings()
    pricing: Pricing = Pricing()
    classify: ClassifySettings = ClassifySettings()
    openlineage: LineageEmitSettings | None = None
    owners: tuple[ConsoleName, ...] = Field(
        (), description="People who attest person steps: each attests only the steps of datasets whose catalog "
        "'owner:' names it (its first word), with their own token. Their credentials are not here: `piitracer owners "
        "add NAME` keeps only the token's hash and their signing key sealed under it, in .piitracer/people.json (0600).")
    viewers: tuple[ConsoleName, ...] = Field(
        (), description="Console users who only read (the privacy office); tokens as for owners.")
    approvers: tuple[ConsoleName, ...] = Field(
        (), description="Console users who approve plans before they run (policy.approval: required): never their own "
        "plan; tokens as for owners.")
    console: ConsoleSettings = ConsoleSettings()
    notify: NotifySettings | None = None
    shred: ShredSettings | None = Field(None, description="Crypto-shredding: where the key vault is.")
    warehouse_roots: tuple[str, ...] = Field(
        (),
        description="Folders (relative to the workspace unless absolute) every catalog location must be "
        "under. When set, a location outside them is a warning at load and the executor refuses to "
        "touch it: a mistyped location must not make piitracer rewrite files elsewhere.",
    )

    @model_validator(mode="after")
    def _one_role_each(self) -> "WorkspaceConfig":
        for first, second in (("owners", "viewers"), ("owners", "approvers"), ("viewers", "approvers")):
            both = sorted(set(getattr(self, first)) & set(getattr(self, second)))
            if both:
                raise ValueError(f"{', '.join(both)}: listed under both {first} and {second} (one role per console user)")
        return self

    @field_validator("version")
    @classmethod
    def _known_version(cls, value: int) -> int:
        if value != 1:
            raise ValueError("only workspace version 1 is known")
        return value

    @field_validator("catalog", mode="before")
    @classmethod
    def _lowercase_ids(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {str(k).lower(): v for k, v in value.items()}
        return value

    @field_validator("catalog")
    @classmethod
    def _replicas_as_datasets(cls, catalog: dict[str, CatalogDataset]) -> dict[str, CatalogDataset]:
        """Each listed replica becomes a dataset of its own (``<primary>@<name>``): the graph,
        the planner, the executor and the verifier then treat it like any table, with
        ``replica_of`` saying who keeps it in step."""
        expanded = dict(catalog)
        for dataset_id, entry in sorted(catalog.items()):
            if REPLICA_SEPARATOR in dataset_id and entry.replica_of is None:
                raise ValueError(f"{dataset_id}: '{REPLICA_SEPARATOR}' is kept for replicas ('<primary>@<name>'); "
                                 "list the replica under the primary's 'replicas:'")
            for replica in entry.replicas:
                replica_id = f"{dataset_id}{REPLICA_SEPARATOR}{replica.name}"
                if replica_id in catalog:
                    raise ValueError(f"{dataset_id}.replicas: {replica_id} is also declared on its own")
                expanded[replica_id] = entry.model_copy(update={
                    "location": replica.location, "table": replica.table, "replicas": (), "aliases": (),
                    "clone_of": None, "description": f"replica {replica.name!r} of {dataset_id}",
                    "replica_of": ReplicaOf(dataset=dataset_id, managed_by=replica.managed_by,
                                            propagation_wait=replica.propagation_wait),
                })
        return expanded

    @model_validator(mode="after")
    def _prepare_for_proof(self) -> "WorkspaceConfig":
        """Each entry that does not say ``prepare_for_proof`` takes ``verify.prepare``: the
        executor sees the catalog entry of a step, not the workspace."""
        if any(entry.prepare_for_proof is None for entry in self.catalog.values()):
            catalog = {dataset_id: entry if entry.prepare_for_proof is not None
                       else entry.model_copy(update={"prepare_for_proof": self.verify.prepare})
                       for dataset_id, entry in self.catalog.items()}
            self.__dict__["catalog"] = catalog  # frozen: set once, while validating
        return self

    @field_validator("shred")
    @classmethod
    def _vault_placed(cls, shred: ShredSettings | None, info: ValidationInfo) -> ShredSettings | None:
        """``shred.vault`` names a Delta dataset of the catalog with a location, or a SQLite file."""
        if shred is None:
            return shred
        catalog = info.data.get("catalog") or {}
        dataset = shred.dataset(catalog)
        if dataset is None and not shred.vault.lower().endswith(SQLITE_VAULT_SUFFIXES):
            raise ValueError(f"vault {shred.vault!r} is neither a dataset of the catalog (a Delta vault table) nor a SQLite "
                             f"vault file (a path ending {' or '.join(SQLITE_VAULT_SUFFIXES)})")
        entry = catalog.get(dataset) if dataset else None
        if entry is not None and (entry.format is not DatasetFormat.DELTA or not entry.location or entry.shredded):
            raise ValueError(f"vault {dataset}: catalog.{dataset} is a {entry.format.value} dataset"
                             f"{'' if entry.location else ' without a location'}{' declaring shredded:' if entry.shredded else ''}"
                             ": the key vault is a Delta table with a location, holding keys only")
        return shred

    @model_validator(mode="after")
    def _references_exist(self) -> "WorkspaceConfig":
        for dataset_id, entry in self.catalog.items():
            for ref in (entry.clone_of, entry.archive_of, entry.replica_of):
                if ref and ref.dataset not in self.catalog:
                    raise ValueError(f"catalog.{dataset_id}: refers to {ref.dataset!r}, which is not in the catalog")
        return self
