"""piitracer: find, erase and prove the erasure of a person's data across a lakehouse.

The Python API (notebooks use it; the CLI is a thin layer over the same calls). The erasure's
use cases are one session's methods::

    import piitracer
    with piitracer.open("my-workspace", piitracer.Keys.load()) as session:
        planned = session.plan(["crm.people.user_id"], subjects, keep=True)
        session.execute(planned.plan)
        session.verify(planned.plan)

and the lineage is read without one::

    import piitracer
    workspace = piitracer.load_workspace("lineage_fixtures")
    graph = piitracer.build_lineage_graph(workspace)
    graph.reachable_datasets(piitracer.ColumnRef(dataset="prod.payments", column="user_id"))

Every public name of :mod:`piitracer.api` (``plan_deletion``, ``execute_plan``, ``verify_plan``,
``audit_log``...) is also a name of this package. Names are imported on first use, so ``import
piitracer.model`` stays light and ``piitracer.plan_deletion`` loads planning only.
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
    "Workspace": "piitracer.workspace.model",
    "WorkspaceError": "piitracer.workspace.model",
    "load_workspace": "piitracer.ingest.workspace.loader",
    "ingest_workspace": "piitracer.ingest.workspace_ingest",
    "build_lineage_graph": "piitracer.api.lineage",
    "lineage_graph_for": "piitracer.api.lineage",
    "parse_column": "piitracer.api.lineage",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from piitracer.api import *  # noqa: F403 - the use cases' public names
    from piitracer.api.lineage import build_lineage_graph, lineage_graph_for, parse_column
    from piitracer.graph.lineage_graph import LineageGraph, Reach
    from piitracer.ingest.workspace_ingest import ingest_workspace
    from piitracer.workspace.model import Workspace, WorkspaceError
    from piitracer.ingest.workspace.loader import load_workspace
    from piitracer.model.lineage import ColumnEdge, ColumnRef, EdgeKind, EdgeSubtype, LineageBatch


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is not None:
        return getattr(importlib.import_module(module), name)
    api = importlib.import_module("piitracer.api")  # its name table only: the use cases load on first use
    if name in api.__all__:  # its public names
        return getattr(api, name)
    raise AttributeError(f"module 'piitracer' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS) | set(importlib.import_module("piitracer.api").__all__))
