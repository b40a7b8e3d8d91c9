"""The steps that make bytes disappear, per format (facts in shared/lakehouse-notes.md).

A logical delete only tombstones rows: the old data files, delete files, manifest bounds and log
statistics keep the values until snapshots expire and unreferenced files are removed. A stored
format's steps are its template (``planner/templates/<format>.py``); the steps every format
shares (recompute, manual review, a replication-managed replica's wait) are here.
"""

from __future__ import annotations

from piitracer.model.plan import Action, AwaitReplicationParams, DatasetStatus
from piitracer.model.table_state import TableState
from piitracer.model.workspace import CatalogDataset, DatasetFormat, Policy, ReplicaManagement, duration_text
from piitracer.planner.templates import StepTemplate, template_for


def steps_for(status: DatasetStatus, entry: CatalogDataset | None, state: TableState | None,
              policy: Policy | None = None) -> list[StepTemplate]:
    """Every step of one dataset, in the order they must run (``policy`` says what to do with
    Iceberg tags and branches)."""
    if status in (DatasetStatus.NO_ACTION, DatasetStatus.SHRED):
        return []  # a shredded dataset's one step, the key's destruction, is planned per key (planner/shredding.py)
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
    template = template_for(entry.format)
    if template is None:
        raise ValueError(f"no physical erasure for format {entry.format.value}")
    return template.steps(entry, state, policy)
