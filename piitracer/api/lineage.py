"""Lineage: the workspace's column lineage graph, read through its lineage store (only sources
changed since the last call are parsed), the part a plan's sources reach, and column names.
Rooms: ingest (workspace sources, lineage store), graph."""

from __future__ import annotations

import os
import sqlite3
from contextlib import contextmanager
from typing import Iterator, Mapping, Sequence

from piitracer.graph.lineage_graph import LineageGraph
from piitracer.ingest.lineage_store import STORE_FILE, LineageStore, open_store
from piitracer.ingest.workspace_ingest import StoreUpdate, batch_from_store, ingest_workspace, update_store
from piitracer.workspace.model import Workspace
from piitracer.ingest.workspace.loader import load_workspace
from piitracer.model.errors import NotFoundError, UnavailableError
from piitracer.model.lineage import ColumnRef
from piitracer.model.workspace import CatalogDataset


def build_lineage_graph(workspace: Workspace | str | os.PathLike[str]) -> LineageGraph:
    """The workspace's whole lineage graph with its catalog's relations.

    Read through the workspace's lineage store: only sources changed since the last call are
    parsed (a read-only workspace reads them all, fresh).

    Args:
        workspace: the loaded workspace, or its folder.

    Returns:
        The graph: every dataset and column edge of the lineage sources, and the catalog's
            replicas, clones and archives.

    Raises:
        WorkspaceError: the folder's ``piitracer.yaml`` cannot be loaded.
    """
    if not isinstance(workspace, Workspace):
        workspace = load_workspace(workspace)
    with _lineage_store(workspace) as store:
        if store is not None:
            update_store(workspace, store)
            return LineageGraph.build(batch_from_store(store), workspace.config.catalog)
    return LineageGraph.build(ingest_workspace(workspace), workspace.config.catalog)


def lineage_graph_for(workspace: Workspace, sources: Sequence[str], refresh: bool = True) -> LineageGraph:
    """The part of the lineage graph a plan from ``sources`` can follow.

    Every dataset downstream of a source over any edge or catalog copy, with every edge into
    them: it plans exactly as the whole graph would, and costs what the sources reach, not what
    the lakehouse holds. Falls back to the whole graph when a source names no catalogued dataset
    (so the planner reports it) or the store cannot be used.

    Args:
        workspace: the loaded workspace.
        sources: the source key columns, ``dataset.column`` (a table named with its catalog too).
        refresh: bring the lineage store up to date first (parse what changed).

    Returns:
        The graph of what the sources reach.
    """
    catalog = workspace.config.catalog
    named = [workspace.namer.from_column_name(text) for text in sources]  # a table named with its catalog too
    starts = {text.rsplit(".", 1)[0].lower() for text in named if "." in text}
    with _lineage_store(workspace) as store:
        if store is not None and starts and starts <= set(catalog):
            if refresh:
                update_store(workspace, store)
            return stored_graph_for(store, catalog, starts)
    return build_lineage_graph(workspace)


def stored_graph_for(store: LineageStore, catalog: Mapping[str, CatalogDataset], starts: set[str]) -> LineageGraph:
    """The graph of what a lineage store holds downstream of some datasets.

    Args:
        store: the lineage store.
        catalog: the workspace's catalog (dataset id -> entry).
        starts: the datasets to start from.

    Returns:
        What is downstream of ``starts`` (over any edge and the catalog's replicas, clones and
            archives) and every edge into it, with those datasets' catalog entries (all of them when a
            reached copy's source was not reached).
    """
    copies: dict[str, list[str]] = {}
    copied_from: dict[str, str] = {}
    for dataset_id, entry in catalog.items():  # unsorted: only sets are made of it (100k entries)
        for ref in (entry.replica_of, entry.clone_of, entry.archive_of):
            if ref is not None:
                copies.setdefault(ref.dataset, []).append(dataset_id)
                copied_from[dataset_id] = ref.dataset
    reached = store.downstream(starts, copies)
    batch = batch_from_store(store, reached)
    # Only the reached datasets' catalog entries go into the graph: an unreached dataset cannot
    # change a reached one's columns or edges. Unless a reached copy's source was not reached (a
    # job writes into a clone): its columns come from that source, so take the whole catalog.
    if all(copied_from.get(d, d) in reached for d in reached):
        return LineageGraph.build(batch, {d: catalog[d] for d in sorted(reached) if d in catalog})
    return LineageGraph.build(batch, catalog)


def rebuild_lineage_store(workspace: Workspace) -> StoreUpdate:
    """Forget the stored lineage and read every source again (``piitracer lineage rebuild``).

    Args:
        workspace: the loaded workspace.

    Returns:
        What the store read: sources parsed, kept and removed, and their problems.

    Raises:
        UnavailableError: the lineage store cannot be opened.
    """
    with _lineage_store(workspace, required=True) as store:
        store.clear()
        return update_store(workspace, store)


@contextmanager
def _lineage_store(workspace: Workspace, required: bool = False) -> Iterator[LineageStore | None]:
    """The workspace's lineage store, or None when it cannot be opened (a read-only workspace):
    the lineage is then read fresh, as if there were no store."""
    try:
        store = open_store(workspace.root)
    except (OSError, sqlite3.Error) as error:
        if required:
            raise UnavailableError(f"{workspace.root / STORE_FILE}: cannot open the lineage store: {error}") from None
        yield None
        return
    try:
        yield store
    finally:
        store.close()


def named_dataset(workspace: Workspace, text: str) -> str:
    """A dataset or ``dataset.column`` as a person names it on the command line, in the workspace's names.

    A table named with its Iceberg catalog in front (``prod.fintech.payments.user_id``) or by its
    ``table:`` identifier is the catalog dataset's (``fintech.payments.user_id``).

    Args:
        workspace: The workspace whose catalog (and configured Iceberg catalogs) name the datasets.
        text: What was given (``--from``, ``--source``, ``--explain``).

    Returns:
        The dataset id (with ``.column`` when one was named); anything the catalog does not know
        as given, in lower case (the caller says what is unknown).
    """
    return workspace.namer.from_column_name(text)


def parse_column(text: str, graph: LineageGraph) -> ColumnRef | str:
    """A column or a dataset of the graph, from its written name.

    Dataset ids contain dots, so a known dataset id is tried first, then the part before the last
    dot. A dataset may also be named by another of its names: a dbt relation as dbt prints it
    (``database.schema.model``), or an alias of the catalog or the lineage.

    Args:
        text: ``db.table.column`` or ``db.table``.
        graph: the lineage graph the name is looked up in.

    Returns:
        A ``piitracer.model.lineage.ColumnRef`` for a column, the dataset id for a dataset.

    Raises:
        NotFoundError: neither a dataset nor a column of the graph, a dataset without that column,
            or an alias of two datasets.
    """
    name = text.strip().lower()
    if graph.has_dataset(name):
        return name
    dataset, _, column = name.rpartition(".")
    if not (dataset and graph.has_dataset(dataset)):
        aliases = _aliases(graph, {name, dataset})
        if name in aliases:
            return aliases[name]
        dataset = aliases.get(dataset, dataset)
    if dataset and graph.has_dataset(dataset):
        ref = ColumnRef(dataset=dataset, column=column)
        if not graph.has_column(ref):
            known = ", ".join(graph.dataset(dataset).columns) or "none known"
            raise NotFoundError(f"dataset {dataset!r} has no column {column!r} (columns: {known})")
        return ref
    raise NotFoundError(f"{text!r} is neither a dataset nor a dataset.column of the lineage graph")


def _aliases(graph: LineageGraph, names: set[str]) -> dict[str, str]:
    """Which dataset each of ``names`` is another name of; a name two datasets go by names none."""
    found: dict[str, set[str]] = {}
    for dataset in graph.datasets():
        for alias in graph.dataset(dataset).aliases:
            if alias.lower() in names:
                found.setdefault(alias.lower(), set()).add(dataset)
    ambiguous = {alias: sorted(ids) for alias, ids in found.items() if len(ids) > 1}
    if ambiguous:
        alias, ids = sorted(ambiguous.items())[0]
        raise NotFoundError(f"{alias!r} is another name of {len(ids)} datasets ({', '.join(ids)}): name one by its id")
    return {alias: ids.pop() for alias, ids in found.items()}
