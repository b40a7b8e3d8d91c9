"""Dropping the DELETED entries of an Iceberg branch's manifests through pyiceberg: they keep the
removed files' column bounds (an erased person's values) until a snapshot without them is
committed. The role of Spark's ``rewrite_manifests`` action, which pyiceberg 0.12 lacks."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyiceberg.table import Table


def drop_tombstones(table: "Table", branch: str = "main", properties: dict[str, str] | None = None) -> tuple[int, int]:
    """Commit, in a transaction of its own, what :func:`stage_tombstone_drop` stages for ``branch``
    (nothing when no manifest of its head keeps DELETED entries); returns what it returns."""
    transaction = table.transaction()
    rewritten, kept = stage_tombstone_drop(transaction, table.io, branch, properties or {})
    if rewritten:
        transaction.commit_transaction()
    return rewritten, kept


def stage_tombstone_drop(transaction, io, branch: str, properties: dict[str, str]) -> tuple[int, int]:
    """Stage in ``transaction``, after what it holds already (a delete: then the delete and the
    drop of its tombstones are one commit), a snapshot of ``branch`` (summary ``properties``) whose data
    manifests hold only the live entries of the branch's head as the transaction has it, when one
    of them keeps DELETED entries. pyiceberg writes no delete manifests, so one holding DELETED
    entries is kept (position deletes' bounds are file paths and positions). On a commit retry
    pyiceberg runs the producer again on the new head (its other writers' files are live entries:
    kept). Returns (manifests rewritten or dropped, delete manifests that keep DELETED entries);
    (0, n) stages nothing."""
    from pyiceberg.manifest import ManifestContent, ManifestEntry, ManifestEntryStatus
    from pyiceberg.table.snapshots import Operation, Summary
    from pyiceberg.table.update.snapshot import _FastAppendFiles

    head = transaction.table_metadata.snapshot_by_name(branch)
    if head is None:
        return 0, 0
    manifests = head.manifests(io)

    def tombstoned(manifest) -> bool:
        if manifest.deleted_files_count is not None:
            return manifest.deleted_files_count > 0
        return any(e.status == ManifestEntryStatus.DELETED for e in manifest.fetch_manifest_entry(io, discard_deleted=False))

    kept = sum(1 for m in manifests if m.content == ManifestContent.DELETES and tombstoned(m))
    if not any(m.content == ManifestContent.DATA and tombstoned(m) for m in manifests):
        return 0, kept
    rewritten = [0]

    class LiveEntriesOnly(_FastAppendFiles):
        def _existing_manifests(self):  # the parent's manifests, each without its DELETED entries
            found, rewritten[0] = [], 0
            parent = self._transaction.table_metadata.snapshot_by_id(self._parent_snapshot_id)
            for manifest in parent.manifests(self._io) if parent is not None else []:
                if manifest.content != ManifestContent.DATA or not tombstoned(manifest):
                    found.append(manifest)
                    continue
                rewritten[0] += 1
                live = manifest.fetch_manifest_entry(self._io, discard_deleted=True)
                if not live:
                    continue  # tombstones only: the manifest goes
                with self.new_manifest_writer(self.spec(manifest.partition_spec_id)) as writer:
                    for entry in live:
                        writer.add_entry(ManifestEntry.from_args(
                            status=ManifestEntryStatus.EXISTING, snapshot_id=entry.snapshot_id,
                            sequence_number=entry.sequence_number, file_sequence_number=entry.file_sequence_number,
                            data_file=entry.data_file))
                found.append(writer.to_manifest_file())
            return found

        def _summary(self, snapshot_properties=None) -> Summary:  # nothing added or removed: the parent's totals
            parent = self._transaction.table_metadata.snapshot_by_id(self._parent_snapshot_id)
            totals = {k: v for k, v in (parent.summary.model_dump() if parent and parent.summary else {}).items()
                      if k.startswith("total-")}
            return Summary(operation=Operation.REPLACE, **totals, **(snapshot_properties or {}))

    LiveEntriesOnly(operation=Operation.REPLACE, transaction=transaction, io=io, branch=branch,
                    snapshot_properties=properties).commit()  # staged: the transaction commits it
    return rewritten[0], kept
