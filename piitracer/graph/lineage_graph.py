"""The column-level lineage graph (networkx), and the questions the planner and the CLI ask of it.

Nodes are ``("dataset", id)`` and ``("column", id, name)``. Edges:

* column -> column: a :class:`ColumnEdge` (DIRECT or INDIRECT, with subtype, masking, expression,
  origin) stored under the edge attribute ``edge``;
* column -> dataset: a dataset-level INDIRECT :class:`ColumnEdge` (``target_column is None``);
* dataset -> dataset: a :class:`DatasetEdge` (job flow, shallow/deep clone, archive) under
  ``dataset_edge``.

Clones and archives from the catalog also become column IDENTITY edges (origin ``catalog``) for
every known column of their source: a clone holds the same values under the same names.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from enum import Enum
from typing import Iterable, Iterator, Mapping

from piitracer.model.lineage import (
    ColumnEdge,
    ColumnRef,
    DatasetEdge,
    DatasetRelation,
    EdgeKind,
    EdgeSubtype,
    IngestProblem,
    LineageBatch,
    Origin,
    OriginKind,
    ProblemSeverity,
)
from piitracer.model.gc_pause import cyclic_gc_paused
from piitracer.model.workspace import CatalogDataset, CloneMode

CATALOG_ORIGIN_FILE = "piitracer.yaml"
_RELATION_OF_CLONE = {CloneMode.SHALLOW: DatasetRelation.SHALLOW_CLONE, CloneMode.DEEP: DatasetRelation.DEEP_CLONE}


def dataset_node(dataset: str) -> tuple[str, str]:
    return ("dataset", dataset)


def column_node(ref: ColumnRef) -> tuple[str, str, str]:
    return ("column", ref.dataset, ref.column)


class Reach(str, Enum):
    """How a dataset is reached from a start column."""

    START = "start"
    DIRECT = "direct"  # values flow into it through DIRECT edges
    INDIRECT = "indirect"  # only influenced (JOIN, FILTER...): holds no value of the start
    FLOW = "flow"  # a job reads a reached dataset and writes it, with no column lineage known


@dataclass
class DatasetInfo:
    """What the graph knows about one dataset."""

    id: str
    columns: list[str] = field(default_factory=list)
    aliases: set[str] = field(default_factory=set)
    catalog: CatalogDataset | None = None
    view: bool = False  # the lineage made it with CREATE VIEW (no files of its own)

    @property
    def in_catalog(self) -> bool:
        return self.catalog is not None

    def add_columns(self, names: Iterable[str]) -> None:
        for name in names:
            if name not in self.columns:
                self.columns.append(name)


@dataclass
class Reached:
    """Result of a traversal: datasets with how they were reached, the columns values reach,
    and every edge that was followed (for rendering and explanations)."""

    datasets: dict[str, Reach]
    columns: set[ColumnRef]
    column_edges: list[ColumnEdge]
    dataset_edges: list[DatasetEdge]


class LineageGraph:
    """Column-level lineage of a lakehouse. Build it with :meth:`build`.

    Examples:
        A user id copied into a daily table, hashed into a feature table, and only grouping a total:

        >>> from piitracer.model.lineage import (ColumnEdge, ColumnRef, EdgeKind, EdgeSubtype, LineageBatch, Origin,
        ...                                      OriginKind)
        >>> user_id = ColumnRef(dataset="prod.payments", column="user_id")
        >>> customer_id = ColumnRef(dataset="analytics.daily", column="customer_id")
        >>> sql = Origin(kind=OriginKind.SQL, file="daily.sql", line=1)
        >>> graph = LineageGraph.build(LineageBatch(column_edges=(
        ...     ColumnEdge(source=user_id, target_dataset="analytics.daily", target_column="customer_id",
        ...                kind=EdgeKind.DIRECT, subtype=EdgeSubtype.IDENTITY, origin=sql),
        ...     ColumnEdge(source=customer_id, target_dataset="ml.features", target_column="cust_hash",
        ...                kind=EdgeKind.DIRECT, subtype=EdgeSubtype.TRANSFORMATION, masking=True,
        ...                expression="SHA2(customer_id, 256)", origin=sql),
        ...     ColumnEdge(source=user_id, target_dataset="analytics.city_totals", target_column="total",
        ...                kind=EdgeKind.INDIRECT, subtype=EdgeSubtype.GROUP_BY, origin=sql),
        ... )))
        >>> [str(ref) for ref in graph.downstream_columns(user_id)]  # where its values go
        ['analytics.daily.customer_id', 'ml.features.cust_hash']
        >>> {dataset: how.value for dataset, how in sorted(graph.reachable_datasets(user_id).items())}
        {'analytics.city_totals': 'indirect', 'analytics.daily': 'direct', 'ml.features': 'direct', 'prod.payments': 'start'}
        >>> [f"{edge.source} -> {edge.target}" for edge in graph.explain(user_id, "ml.features")]
        ['prod.payments.user_id -> analytics.daily.customer_id', 'analytics.daily.customer_id -> ml.features.cust_hash']
    """

    def __init__(self) -> None:
        # networkx (~0.15 s, 285 modules) loads with the first graph, not with this module: the
        # audit trail and a verification import the lineage's wiring without building a graph.
        import networkx as nx

        self._graph = nx.MultiDiGraph()
        self._datasets: dict[str, DatasetInfo] = {}
        # (source dataset, target dataset) pairs that have column lineage: such a pair's job flow
        # edge adds nothing, the column edges say exactly what flows.
        self._column_pairs: set[tuple[str, str]] = set()
        self.problems: list[IngestProblem] = []
        self.units_read = 0
        self.surrogate_edges = 0  # SURROGATE column edges: the planner looks for surrogate keys only when some exist
        self.ranking_edges = 0  # WINDOW edges that name their ranking: only then can a plan say why one is no key

    # ---- building -------------------------------------------------------------------------

    @classmethod
    def build(cls, batch: LineageBatch, catalog: Mapping[str, CatalogDataset] | None = None) -> "LineageGraph":
        """A graph of everything in ``batch`` plus the catalog's datasets, clones and archives."""
        # The collector paused: a cold plan builds this next to a 100k-entry catalog, which a full
        # collection triggered by the graph's allocations walks again (measured at 100k datasets,
        # the reached graph's first build in a process: 0.61-0.70 s -> 0.32 s CPU).
        with cyclic_gc_paused():
            return cls._build(batch, catalog)

    @classmethod
    def _build(cls, batch: LineageBatch, catalog: Mapping[str, CatalogDataset] | None) -> "LineageGraph":
        graph = cls()
        graph.problems = list(batch.problems)
        graph.units_read = batch.units_read
        for dataset_id, entry in sorted((catalog or {}).items()):
            info = graph._dataset(dataset_id)
            info.catalog = entry
            info.add_columns(entry.columns)
            info.add_columns(entry.identifiers)
            info.aliases.update(entry.aliases)
        for facts in batch.datasets:
            info = graph._dataset(facts.dataset)
            info.add_columns(facts.columns)
            info.aliases.update(facts.aliases)
            info.view = info.view or facts.view
        for edge in sorted(batch.column_edges, key=ColumnEdge.sort_key):
            graph.add_column_edge(edge)
        for edge in sorted(batch.dataset_edges, key=DatasetEdge.sort_key):
            graph.add_dataset_edge(edge)
        graph._add_catalog_relations(catalog or {})
        return graph

    def _dataset(self, dataset_id: str) -> DatasetInfo:
        if dataset_id not in self._datasets:
            self._datasets[dataset_id] = DatasetInfo(dataset_id)
            self._graph.add_node(dataset_node(dataset_id))
        return self._datasets[dataset_id]

    def _column(self, ref: ColumnRef) -> tuple[str, str, str]:
        self._dataset(ref.dataset).add_columns([ref.column])
        node = column_node(ref)
        self._graph.add_node(node)
        return node

    def add_column_edge(self, edge: ColumnEdge) -> None:
        """Add one typed column edge (dataset-level when ``edge.target_column`` is None)."""
        source = self._column(edge.source)
        target = self._column(edge.target) if edge.target else dataset_node(self._dataset(edge.target_dataset).id)
        self._graph.add_edge(source, target, edge=edge)
        self._column_pairs.add((edge.source.dataset, edge.target_dataset))
        if edge.subtype is EdgeSubtype.SURROGATE:
            self.surrogate_edges += 1
        elif edge.subtype is EdgeSubtype.WINDOW and edge.expression:
            self.ranking_edges += 1

    def add_dataset_edge(self, edge: DatasetEdge) -> None:
        """Add a dataset-level relation (flow, clone, archive)."""
        self._dataset(edge.source)
        self._dataset(edge.target)
        self._graph.add_edge(dataset_node(edge.source), dataset_node(edge.target), dataset_edge=edge)

    def _add_catalog_relations(self, catalog: Mapping[str, CatalogDataset]) -> None:
        for dataset_id, entry in sorted(catalog.items()):
            if entry.replica_of:
                relation, source = DatasetRelation.REPLICA, entry.replica_of.dataset
            elif entry.clone_of:
                relation, source = _RELATION_OF_CLONE[entry.clone_of.mode], entry.clone_of.dataset
            elif entry.archive_of:
                relation, source = DatasetRelation.ARCHIVE, entry.archive_of.dataset
            else:
                continue
            origin = Origin(kind=OriginKind.CATALOG, file=CATALOG_ORIGIN_FILE, job=f"catalog.{dataset_id}")
            self.add_dataset_edge(DatasetEdge(source=source, target=dataset_id, relation=relation, origin=origin))
            # A copy has the source's columns: make that explicit so column traversal goes through it.
            self._dataset(dataset_id).add_columns(self._datasets[source].columns)
            for column in list(self._datasets[source].columns):
                self.add_column_edge(
                    ColumnEdge(
                        source=ColumnRef(dataset=source, column=column),
                        target_dataset=dataset_id,
                        target_column=column,
                        kind=EdgeKind.DIRECT,
                        subtype=EdgeSubtype.IDENTITY,
                        origin=origin,
                    )
                )

    # ---- reading --------------------------------------------------------------------------

    def datasets(self) -> list[str]:
        """Every dataset id, sorted."""
        return sorted(self._datasets)

    def dataset(self, dataset_id: str) -> DatasetInfo:
        """What is known of one dataset; KeyError if unknown."""
        return self._datasets[dataset_id]

    def has_dataset(self, dataset_id: str) -> bool:
        return dataset_id in self._datasets

    def has_column(self, ref: ColumnRef) -> bool:
        """Whether the column is known (from the catalog, a schema, or an edge)."""
        info = self._datasets.get(ref.dataset)
        return info is not None and ref.column in info.columns

    def column_edges(self) -> list[ColumnEdge]:
        """All column edges, in their deterministic order."""
        edges = [data["edge"] for _, _, data in self._graph.edges(data=True) if "edge" in data]
        return sorted(edges, key=ColumnEdge.sort_key)

    def dataset_edges(self) -> list[DatasetEdge]:
        """All dataset-level edges, in their deterministic order."""
        edges = [data["dataset_edge"] for _, _, data in self._graph.edges(data=True) if "dataset_edge" in data]
        return sorted(edges, key=DatasetEdge.sort_key)

    def edges_from(self, ref: ColumnRef) -> list[ColumnEdge]:
        """Column edges leaving one column, sorted."""
        node = column_node(ref)
        if not self._graph.has_node(node):
            return []
        edges = [data["edge"] for _, _, data in self._graph.out_edges(node, data=True)]
        return sorted(edges, key=ColumnEdge.sort_key)

    def edges_to(self, ref: ColumnRef) -> list[ColumnEdge]:
        """Column edges arriving at one column, sorted (what it is made of)."""
        node = column_node(ref)
        if not self._graph.has_node(node):
            return []
        edges = [data["edge"] for _, _, data in self._graph.in_edges(node, data=True) if "edge" in data]
        return sorted(edges, key=ColumnEdge.sort_key)

    def edges_out_of(self, dataset_id: str) -> tuple[list[ColumnEdge], list[DatasetEdge]]:
        """Column edges from any column of ``dataset_id`` and dataset edges from it (unsorted):
        what one dataset feeds, without walking the whole graph."""
        info = self._datasets[dataset_id]
        nodes = [column_node(ColumnRef(dataset=dataset_id, column=c)) for c in info.columns]
        column_edges = [data["edge"] for _, _, data in self._graph.out_edges(nodes, data=True)]
        dataset_edges = [data["dataset_edge"] for _, _, data in self._graph.out_edges(dataset_node(dataset_id), data=True)]
        return column_edges, dataset_edges

    def edges_into(self, dataset_id: str) -> list[ColumnEdge]:
        """Column edges (column- and dataset-level) whose target is ``dataset_id``, sorted: the
        edges arriving at its columns' nodes and its dataset node (not a sort of every edge of the
        graph: the planner asks this of every planned dataset)."""
        info = self._datasets.get(dataset_id)
        if info is None:
            return []
        nodes = [column_node(ColumnRef(dataset=dataset_id, column=c)) for c in info.columns] + [dataset_node(dataset_id)]
        edges = [data["edge"] for _, _, data in self._graph.in_edges(nodes, data=True) if "edge" in data]
        return sorted(edges, key=ColumnEdge.sort_key)

    # ---- traversal ------------------------------------------------------------------------

    def downstream_columns(self, start: ColumnRef) -> list[ColumnRef]:
        """Every column the values of ``start`` flow into through DIRECT edges, transitively."""
        return sorted(self.reach(start).columns - {start}, key=lambda r: (r.dataset, r.column))

    def reachable_datasets(self, start: str | ColumnRef) -> dict[str, Reach]:
        """Datasets reached from a column (or from every column of a dataset), with how."""
        return self.reach(start).datasets

    def reach(self, start: str | ColumnRef) -> Reached:
        """Traverse from a column or a dataset.

        DIRECT edges are followed transitively (values flow on). INDIRECT edges and job flows
        without column lineage mark their target as reached but are not followed further:
        they carry no value of the start.
        """
        start_columns = self._start_columns(start)
        start_dataset = start if isinstance(start, str) else start.dataset
        datasets: dict[str, Reach] = {start_dataset: Reach.START}
        columns: set[ColumnRef] = set(start_columns)
        followed: list[ColumnEdge] = []
        queue = deque(sorted(start_columns, key=lambda r: (r.dataset, r.column)))
        while queue:
            ref = queue.popleft()
            for edge in self.edges_from(ref):
                followed.append(edge)
                if edge.kind is EdgeKind.DIRECT and edge.target is not None:
                    _promote(datasets, edge.target_dataset, Reach.DIRECT)
                    if edge.target not in columns:
                        columns.add(edge.target)
                        queue.append(edge.target)
                else:
                    _promote(datasets, edge.target_dataset, Reach.INDIRECT)
        dataset_edges = self._followed_dataset_edges(datasets)
        return Reached(datasets=datasets, columns=columns, column_edges=followed, dataset_edges=dataset_edges)

    def _start_columns(self, start: str | ColumnRef) -> set[ColumnRef]:
        if isinstance(start, ColumnRef):
            if not self.has_column(start):
                raise KeyError(f"unknown column {start}")
            return {start}
        if start not in self._datasets:
            raise KeyError(f"unknown dataset {start}")
        return {ColumnRef(dataset=start, column=c) for c in self._datasets[start].columns}

    def _followed_dataset_edges(self, datasets: dict[str, Reach]) -> list[DatasetEdge]:
        """Relations between reached datasets, and flows with no column lineage out of them."""
        result = []
        frontier = deque(sorted(d for d, how in datasets.items() if how in (Reach.START, Reach.DIRECT)))
        while frontier:
            source = frontier.popleft()
            for _, target, data in sorted(self._graph.out_edges(dataset_node(source), data=True), key=_edge_tuple_key):
                edge: DatasetEdge = data["dataset_edge"]
                if edge.relation is DatasetRelation.FLOW and (source, edge.target) in self._column_pairs:
                    continue  # column lineage says exactly what flows
                result.append(edge)
                if edge.target not in datasets:
                    datasets[edge.target] = Reach.FLOW
        return sorted(set(result), key=DatasetEdge.sort_key)

    def explain(self, start: ColumnRef, target: str | ColumnRef) -> list[ColumnEdge]:
        """The shortest chain of edges that takes ``start`` to ``target`` (a column or any column of
        a dataset): DIRECT hops, possibly ending with one INDIRECT hop. Empty if not reached."""
        goal_dataset = target if isinstance(target, str) else target.dataset
        for landing, edge, parents in self._explain_walk(start):
            if _is_goal(edge, target, goal_dataset):
                return _unwind(parents, landing, start)
        return []

    def explanations(self, start: ColumnRef) -> dict[str, list[ColumnEdge]]:
        """``explain(start, dataset)`` for every dataset reached from ``start``, in one walk."""
        firsts: dict[str, object] = {}
        parents: dict[object, ColumnEdge] = {}
        for landing, edge, parents in self._explain_walk(start):
            firsts.setdefault(edge.target_dataset, landing)
        return {dataset: _unwind(parents, landing, start) for dataset, landing in firsts.items()}

    def _explain_walk(self, start: ColumnRef) -> Iterator[tuple[object, ColumnEdge, dict[object, ColumnEdge]]]:
        """Breadth-first from ``start``: every edge that lands somewhere new (a column, or a dataset
        for a dataset-level edge), in a deterministic order, with the parent edges so far. Only
        DIRECT column hops are walked on: every column they land on is one ``reach`` reaches."""
        self._start_columns(start)  # KeyError for an unknown column
        parents: dict[object, ColumnEdge] = {}
        queue = deque([start])
        seen: set[object] = {start}
        while queue:
            ref = queue.popleft()
            for edge in self.edges_from(ref):
                landing: object = edge.target if edge.target is not None else ("dataset", edge.target_dataset)
                if landing in seen:
                    continue
                seen.add(landing)
                parents[landing] = edge
                yield landing, edge, parents
                if edge.kind is EdgeKind.DIRECT and edge.target is not None:
                    queue.append(edge.target)

    # ---- summaries ------------------------------------------------------------------------

    def stats(self) -> dict[str, object]:
        """Counts for ``lineage stats``: datasets, columns, edges by type, ingest problems."""
        by_type: dict[str, int] = {}
        for edge in self.column_edges():
            key = f"{edge.kind.value} {edge.subtype.value if edge.subtype else '(untyped)'}"
            by_type[key] = by_type.get(key, 0) + 1
        by_relation: dict[str, int] = {}
        for edge in self.dataset_edges():
            by_relation[edge.relation.value] = by_relation.get(edge.relation.value, 0) + 1
        uncatalogued = [d for d in self.datasets() if not self._datasets[d].in_catalog]
        return {
            "datasets": len(self._datasets),
            "datasets_not_in_catalog": uncatalogued,
            "columns": sum(len(info.columns) for info in self._datasets.values()),
            "column_edges": sum(by_type.values()),
            "column_edges_by_type": dict(sorted(by_type.items())),
            "masked_edges": sum(1 for e in self.column_edges() if e.masking),
            "dataset_edges_by_relation": dict(sorted(by_relation.items())),
            "units_read": self.units_read,
            # Info lines (a bare SELECT, an INSERT of constants) lose nothing: not counted as problems.
            "ingest_problems": sum(1 for p in self.problems if p.severity is not ProblemSeverity.INFO),
            "ingest_errors": sum(1 for p in self.problems if p.severity is ProblemSeverity.ERROR),
            "ingest_info": sum(1 for p in self.problems if p.severity is ProblemSeverity.INFO),
        }

    def to_json(self, start: str | ColumnRef | None = None) -> dict[str, object]:
        """Nodes and typed edges, the whole graph or what ``start`` reaches."""
        if start is None:
            datasets = {d: None for d in self.datasets()}
            column_edges, dataset_edges = self.column_edges(), self.dataset_edges()
        else:
            reached = self.reach(start)
            datasets = {d: reached.datasets[d].value for d in sorted(reached.datasets)}
            column_edges = sorted(set(reached.column_edges), key=ColumnEdge.sort_key)
            dataset_edges = reached.dataset_edges
        nodes = []
        for dataset_id in datasets:
            info = self._datasets[dataset_id]
            node: dict[str, object] = {
                "id": dataset_id,
                "format": info.catalog.format.value if info.catalog else None,
                "in_catalog": info.in_catalog,
                "columns": list(info.columns),
                "identifiers": list(info.catalog.identifiers) if info.catalog else [],
            }
            if datasets[dataset_id] is not None:
                node["reached"] = datasets[dataset_id]
            nodes.append(node)
        return {
            "start": str(start) if start is not None else None,
            "datasets": nodes,
            "column_edges": [e.model_dump(mode="json") for e in column_edges],
            "dataset_edges": [e.model_dump(mode="json") for e in dataset_edges],
        }


_REACH_RANK = {Reach.FLOW: 0, Reach.INDIRECT: 1, Reach.DIRECT: 2, Reach.START: 3}


def _promote(datasets: dict[str, Reach], dataset_id: str, how: Reach) -> None:
    """Record the strongest way a dataset was reached."""
    current = datasets.get(dataset_id)
    if current is None or _REACH_RANK[how] > _REACH_RANK[current]:
        datasets[dataset_id] = how


def _is_goal(edge: ColumnEdge, target: str | ColumnRef, goal_dataset: str) -> bool:
    if isinstance(target, ColumnRef):
        return edge.target == target
    return edge.target_dataset == goal_dataset


def _unwind(parents: dict[object, ColumnEdge], landing: object, start: ColumnRef) -> list[ColumnEdge]:
    path = []
    while landing != start:
        edge = parents[landing]
        path.append(edge)
        landing = edge.source
    return list(reversed(path))


def _edge_tuple_key(item: tuple) -> tuple:
    return item[2]["dataset_edge"].sort_key()
