"""What the executor or a metadata reader found in a live table, handed to the (pure) planner."""

from __future__ import annotations

from datetime import datetime
from enum import Enum

from piitracer.model.lineage import Frozen


class RefType(str, Enum):
    TAG = "tag"
    BRANCH = "branch"


class TableRef(Frozen):
    """An Iceberg tag or branch (other than ``main``): it keeps its snapshot alive past expiry."""

    name: str
    type: RefType
    snapshot_id: int
    snapshot_timestamp: datetime | None = None


class TableState(Frozen):
    """A table's state at planning time. Every existing snapshot predates the plan's delete."""

    dataset: str
    current_snapshot_id: int | None = None
    refs: tuple[TableRef, ...] = ()
    has_deletion_vectors: bool | None = None
