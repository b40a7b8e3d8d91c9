"""Iceberg: a DELETE (merge-on-read writes position-delete files; the data files keep the rows),
then the steps measured to remove the bytes (shared/lakehouse-notes.md): rewrite_data_files
applies the delete files, rewrite_manifests drops the DELETED entries that keep column bounds,
each tag or branch retaining a pre-delete snapshot is rewritten without the subjects' rows (or, by
``policy.refs: release``, dropped), expire_snapshots, orphan removal."""

from __future__ import annotations

from datetime import timedelta

from piitracer.model.plan import (
    Action,
    ExpireSnapshotsParams,
    ReleaseRefParams,
    RemoveOrphanFilesParams,
    RewriteRefParams,
    RewriteDataFilesParams,
)
from piitracer.model.table_state import RefType, TableState
from piitracer.model.workspace import CatalogDataset, CloneMode, DatasetFormat, DeleteMode, IcebergWriteMode, Policy, RefHandling
from piitracer.planner.templates import FormatTemplate, StepTemplate, days
from piitracer.planner.templates.iceberg_engines import engine_for

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


def steps(entry: CatalogDataset, state: TableState | None, policy: Policy | None = None) -> list[StepTemplate]:
    merge_on_read = entry.write_mode is not IcebergWriteMode.COPY_ON_WRITE
    shallow = entry.clone_of is not None and entry.clone_of.mode is CloneMode.SHALLOW
    equality = merge_on_read and entry.delete_mode is DeleteMode.EQUALITY
    found = [StepTemplate(Action.EQUALITY_DELETE if equality else Action.DELETE_ROWS, physical=False)]
    if merge_on_read:
        # Merge-on-read deletes write position-delete files; the data files keep the rows.
        found.append(StepTemplate(Action.REWRITE_DATA_FILES, params=RewriteDataFilesParams(options=dict(REWRITE_OPTIONS))))
    # Without this, the current manifest's DELETED entries keep the subject in column bounds.
    found.append(StepTemplate(Action.REWRITE_MANIFESTS))
    release = policy is not None and policy.refs is RefHandling.RELEASE
    for ref in state.refs if state else ():
        found.append(_release(ref) if release else StepTemplate(
            Action.REWRITE_REF, params=RewriteRefParams(ref=ref.name, ref_type=ref.type.value, snapshot_id=ref.snapshot_id),
            reason=(f"{ref.type.value} '{ref.name}' keeps its name and retention: moved to a new snapshot equal to "
                    f"its snapshot minus the subjects' rows (only the data files holding a subject rewritten), so "
                    f"expiry can remove the old one")))
    # A shallow clone's expired snapshots reference the source's data files: letting expiry delete
    # them would break the source's own retained snapshots (time travel) before the source's
    # expiry runs. Expire metadata only; the clone's own unreferenced files go with its orphan
    # removal, the source's with the source's expiry.
    found.append(StepTemplate(Action.EXPIRE_SNAPSHOTS, params=ExpireSnapshotsParams(retain_last=1, clean_expired_files=not shallow)))
    found.append(StepTemplate(Action.REMOVE_ORPHAN_FILES, params=RemoveOrphanFilesParams(
        condition=ORPHAN_CONDITION, api="SparkActions.deleteOrphanFiles",
        scope="the clone's own location only: the source's files belong to the source" if shallow else None)))
    return found


def _release(ref) -> StepTemplate:
    """The destructive alternative (``policy.refs: release``): drop the ref."""
    fix = (f"ALTER TABLE ... DROP TAG `{ref.name}` (or re-create it on a snapshot after the delete)"
           if ref.type is RefType.TAG else
           f"apply the delete on branch `{ref.name}` too, or drop the branch")
    return StepTemplate(
        Action.RELEASE_REF, blocking=True,
        params=ReleaseRefParams(ref=ref.name, ref_type=ref.type.value, snapshot_id=ref.snapshot_id, fix=fix),
        warning=f"{ref.type.value} '{ref.name}' retains snapshot {ref.snapshot_id}, written before the delete: "
                f"its files cannot be expired until it is released ({fix})",
    )


def retention_window(entry: CatalogDataset) -> tuple[timedelta | None, str]:
    """Expiry removes a pre-delete snapshot once it is older than the maximum age, at the next
    maintenance run; orphan-free files go with it."""
    retention = entry.retention
    every = retention.maintenance_every
    if retention.snapshot_max_age is None:
        return None, "no retention.snapshot_max_age: snapshots are never expired"
    if every is None:
        return None, "no retention.maintenance_every: expiry never runs"
    if (retention.min_snapshots_to_keep or 0) > 1:
        return None, f"retention.min_snapshots_to_keep={retention.min_snapshots_to_keep} keeps pre-delete snapshots until later commits"
    return retention.snapshot_max_age + every, (
        f"retention.snapshot_max_age {days(retention.snapshot_max_age)} + maintenance_every {days(every)}")


TEMPLATE = FormatTemplate(
    format=DatasetFormat.ICEBERG, steps=steps, retention_window=retention_window,
    override="expire_snapshots older than the delete's commit time (retain_last 1), then remove_orphan_files",
    engine=engine_for,
)
