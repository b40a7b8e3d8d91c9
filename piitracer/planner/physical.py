"""The steps that make bytes disappear, per format (facts in shared/lakehouse-notes.md).

A logical delete only tombstones rows: the old data files, delete files, manifest bounds and log
statistics keep the values until snapshots expire and unreferenced files are removed. Each
function returns the step templates of one dataset, logical step first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from piitracer.model.plan import (
    Action,
    AwaitReplicationParams,
    CleanDeltaLogParams,
    DatasetStatus,
    ExpireSnapshotsParams,
    NoParams,
    PurgeDeletionVectorsParams,
    ReleaseRefParams,
    RemoveOrphanFilesParams,
    RewriteArchiveParams,
    RewriteDataFilesParams,
    RewriteFilesParams,
    StepParams,
    VacuumParams,
)
from piitracer.model.table_state import RefType, TableState
from piitracer.model.workspace import CatalogDataset, CloneMode, DatasetFormat, IcebergWriteMode, ReplicaManagement, duration_text

# rewrite_data_files options that applied every delete file in the measured runs. The size bounds
# turn off bin-packing's own reasons to rewrite a file (smaller than 75% or larger than 180% of the
# target size), so exactly the files with delete files are rewritten: without them a table of
# small files was compacted whole for one subject (benchmarks/bench_erasure.py: 160 of 160 files
# rewritten, 1 holding the subject).
REWRITE_OPTIONS = {
    "delete-file-threshold": "1",
    "min-file-size-bytes": "0",
    "max-file-size-bytes": str(2**63 - 1),
    "remove-dangling-deletes": "true",
    "use-starting-sequence-number": "false",
}
ORPHAN_CONDITION = "only with no concurrent writer: run with --no-concurrent-writers"


@dataclass
class StepTemplate:
    """A step before ordering gives it its number and id."""

    action: Action
    params: StepParams = field(default_factory=NoParams)
    blocking: bool = False
    reason: str | None = None
    warning: str | None = None
    physical: bool = True  # False for the logical step (delete, rewrite, manual...)


def steps_for(status: DatasetStatus, entry: CatalogDataset | None, state: TableState | None) -> list[StepTemplate]:
    """Every step of one dataset, in the order they must run."""
    if status is DatasetStatus.NO_ACTION:
        return []
    if status is DatasetStatus.RECOMPUTE:
        return [StepTemplate(Action.RECOMPUTE, physical=False,
                             reason="re-run the job that builds it once its inputs are erased")]
    if status is DatasetStatus.MANUAL_REVIEW:
        external = entry is not None and entry.format is DatasetFormat.EXTERNAL
        action = Action.MANUAL if external else Action.MANUAL_REVIEW
        return [StepTemplate(action, blocking=True, physical=False)]
    assert entry is not None, "an erase decision needs a catalog entry"
    replica = entry.replica_of
    if replica is not None and replica.managed_by is ReplicaManagement.REPLICATION:
        # The replication copies the primary, erasure included: erasing the replica here would
        # hide a broken replication (which would bring the rows back). Wait, then verify.
        return [StepTemplate(Action.AWAIT_REPLICATION, physical=False, params=AwaitReplicationParams(
            primary=replica.dataset, propagation_wait=duration_text(replica.propagation_wait),
            propagation_seconds=int(replica.propagation_wait.total_seconds())),
            reason=f"replication-managed replica of {replica.dataset}: verified only, once the replication "
                   f"has had {duration_text(replica.propagation_wait)} to carry the primary's erasure")]
    template = TEMPLATES.get(entry.format)
    if template is None:
        raise ValueError(f"no physical erasure for format {entry.format.value}")
    return template(entry, state)


def _parquet(entry: CatalogDataset, state: TableState | None) -> list[StepTemplate]:
    return [StepTemplate(Action.REWRITE_FILES, physical=False, params=RewriteFilesParams(
        strategy="write each affected file without the subjects' rows, commit the replacement, then remove the original",
        skip_files_by_statistics=True,
    ))]


def _archive(entry: CatalogDataset, state: TableState | None) -> list[StepTemplate]:
    archive = entry.archive_of
    params = RewriteArchiveParams(
        alternative="delete the affected archived objects",
        restore_delay=_duration(archive.restore_delay) if archive is not None and archive.restore_delay is not None else None,
        cost_per_gb_restore=archive.cost_per_gb_restore if archive is not None else None,
    )
    return [StepTemplate(Action.REWRITE_ARCHIVE, physical=False, params=params)]


def _iceberg(entry: CatalogDataset, state: TableState | None) -> list[StepTemplate]:
    merge_on_read = entry.write_mode is not IcebergWriteMode.COPY_ON_WRITE
    shallow = entry.clone_of is not None and entry.clone_of.mode is CloneMode.SHALLOW
    steps = [StepTemplate(Action.DELETE_ROWS, physical=False)]
    if merge_on_read:
        # Merge-on-read deletes write position-delete files; the data files keep the rows.
        steps.append(StepTemplate(Action.REWRITE_DATA_FILES, params=RewriteDataFilesParams(options=dict(REWRITE_OPTIONS))))
    # Without this, the current manifest's DELETED entries keep the subject in column bounds.
    steps.append(StepTemplate(Action.REWRITE_MANIFESTS))
    for ref in state.refs if state else ():
        fix = (f"ALTER TABLE ... DROP TAG `{ref.name}` (or re-create it on a snapshot after the delete)"
               if ref.type is RefType.TAG else
               f"apply the delete on branch `{ref.name}` too, or drop the branch")
        steps.append(StepTemplate(
            Action.RELEASE_REF, blocking=True,
            params=ReleaseRefParams(ref=ref.name, ref_type=ref.type.value, snapshot_id=ref.snapshot_id, fix=fix),
            warning=f"{ref.type.value} '{ref.name}' retains snapshot {ref.snapshot_id}, written before the delete: "
                    f"its files cannot be expired until it is released ({fix})",
        ))
    # A shallow clone's expired snapshots reference the source's data files: letting expiry delete
    # them would break the source's own retained snapshots (time travel) before the source's
    # expiry runs. Expire metadata only; the clone's own unreferenced files go with its orphan
    # removal, the source's with the source's expiry.
    steps.append(StepTemplate(Action.EXPIRE_SNAPSHOTS, params=ExpireSnapshotsParams(retain_last=1, clean_expired_files=not shallow)))
    steps.append(StepTemplate(Action.REMOVE_ORPHAN_FILES, params=RemoveOrphanFilesParams(
        condition=ORPHAN_CONDITION, api="SparkActions.deleteOrphanFiles",
        scope="the clone's own location only: the source's files belong to the source" if shallow else None)))
    return steps


def _delta(entry: CatalogDataset, state: TableState | None) -> list[StepTemplate]:
    return [
        StepTemplate(Action.DELETE_ROWS, physical=False),
        StepTemplate(Action.PURGE_DELETION_VECTORS, params=PurgeDeletionVectorsParams(when="the table has deletion vectors")),
        StepTemplate(Action.VACUUM, params=VacuumParams(retention_hours=0, enforce_retention_duration=False,
                                                        includes="removed data files and _change_data files")),
        StepTemplate(Action.CLEAN_DELTA_LOG, params=CleanDeltaLogParams(
            log_retention="0 hours", create_checkpoint=True, cleanup_metadata=True,
            why="add-action stats (minValues/maxValues) in _delta_log JSON and checkpoints hold the values",
        )),
    ]


# Each stored format's steps, logical step first: a new format (Hudi) is one more entry here and
# one module in piitracer/formats/ plus its executor entries (README, "Adding a format").
TEMPLATES = {
    DatasetFormat.ICEBERG: _iceberg,
    DatasetFormat.DELTA: _delta,
    DatasetFormat.PARQUET: _parquet,
    DatasetFormat.ARCHIVE: _archive,
}


def _duration(value) -> str:
    return f"{int(value.total_seconds() // 3600)}h"

