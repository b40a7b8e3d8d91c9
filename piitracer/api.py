"""The public API's wiring of the layers: workspace -> ingest -> graph (and, later, plan, execute,
verify). Only this module and ``cli`` import across layers."""

from __future__ import annotations

import os

from piitracer.graph.lineage_graph import LineageGraph
from piitracer.ingest.workspace_ingest import ingest_workspace
from piitracer.ingest.workspace_loader import Workspace, load_workspace
from piitracer.model.lineage import ColumnRef


def build_lineage_graph(workspace: Workspace | str | os.PathLike[str]) -> LineageGraph:
    """Ingest a workspace's lineage sources and build the graph with its catalog's relations."""
    if not isinstance(workspace, Workspace):
        workspace = load_workspace(workspace)
    return LineageGraph.build(ingest_workspace(workspace), workspace.config.catalog)


def parse_column(text: str, graph: LineageGraph) -> ColumnRef | str:
    """``db.table.column`` -> a :class:`ColumnRef`; ``db.table`` -> the dataset id.

    Dataset ids contain dots, so a known dataset id is tried first, then the part before the last
    dot. Raises ``KeyError`` naming what is unknown.
    """
    name = text.strip().lower()
    if graph.has_dataset(name):
        return name
    dataset, _, column = name.rpartition(".")
    if dataset and graph.has_dataset(dataset):
        ref = ColumnRef(dataset=dataset, column=column)
        if not graph.has_column(ref):
            known = ", ".join(graph.dataset(dataset).columns) or "none known"
            raise KeyError(f"dataset {dataset!r} has no column {column!r} (columns: {known})")
        return ref
    raise KeyError(f"{text!r} is neither a dataset nor a dataset.column of the lineage graph")
