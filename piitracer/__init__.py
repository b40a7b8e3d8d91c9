"""piitracer: find, erase and prove the erasure of a person's data across a lakehouse.

The Python API (notebooks use it; the CLI is a thin layer over the same calls)::

    import piitracer
    workspace = piitracer.load_workspace("lineage_fixtures")
    graph = piitracer.build_lineage_graph(workspace)
    graph.reachable_datasets(piitracer.ColumnRef(dataset="prod.payments", column="user_id"))

Names are imported on first use, so ``import piitracer.model`` stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "ColumnEdge": "piitracer.model.lineage",
    "ColumnRef": "piitracer.model.lineage",
    "EdgeKind": "piitracer.model.lineage",
    "EdgeSubtype": "piitracer.model.lineage",
    "LineageBatch": "piitracer.model.lineage",
    "LineageGraph": "piitracer.graph.lineage_graph",
    "Reach": "piitracer.graph.lineage_graph",
    "Workspace": "piitracer.ingest.workspace_loader",
    "WorkspaceError": "piitracer.ingest.workspace_loader",
    "load_workspace": "piitracer.ingest.workspace_loader",
    "ingest_workspace": "piitracer.ingest.workspace_ingest",
    "build_lineage_graph": "piitracer.api",
    "lineage_graph_for": "piitracer.api",
    "parse_column": "piitracer.api",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from piitracer.api import build_lineage_graph, lineage_graph_for, parse_column
    from piitracer.graph.lineage_graph import LineageGraph, Reach
    from piitracer.ingest.workspace_ingest import ingest_workspace
    from piitracer.ingest.workspace_loader import Workspace, WorkspaceError, load_workspace
    from piitracer.model.lineage import ColumnEdge, ColumnRef, EdgeKind, EdgeSubtype, LineageBatch


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'piitracer' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
