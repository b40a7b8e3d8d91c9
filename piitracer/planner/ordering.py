"""Deterministic order: resolve first, then datasets upstream first, cycles condensed into groups,
each dataset's physical steps after its logical delete."""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from piitracer.graph.lineage_graph import LineageGraph


@dataclass(frozen=True)
class DatasetOrder:
    """Datasets in erase order; ``group`` names the lineage cycle a dataset belongs to, if any;
    ``upstream`` lists, per dataset, the planned datasets that feed it (outside its own group)."""

    datasets: tuple[str, ...]
    group: dict[str, str]
    upstream: dict[str, tuple[str, ...]]


def dataset_order(graph: LineageGraph, planned: set[str]) -> DatasetOrder:
    """Topological order of the planned datasets (upstream first), ties broken by dataset id;
    strongly connected components (e.g. a MERGE back into an upstream) are erased together.

    Examples:
        >>> from piitracer.model.lineage import DatasetEdge, DatasetRelation, LineageBatch, Origin, OriginKind
        >>> job = Origin(kind=OriginKind.OPENLINEAGE, file="events.json")
        >>> flows = [("prod.payments", "staging.daily"), ("staging.daily", "analytics.daily"),
        ...          ("analytics.daily", "staging.daily"),  # a MERGE back upstream: a cycle
        ...          ("prod.payments", "archive.payments")]
        >>> graph = LineageGraph.build(LineageBatch(dataset_edges=tuple(
        ...     DatasetEdge(source=s, target=t, relation=DatasetRelation.FLOW, origin=job) for s, t in flows)))
        >>> order = dataset_order(graph, {"prod.payments", "staging.daily", "analytics.daily", "archive.payments"})
        >>> order.datasets
        ('prod.payments', 'analytics.daily', 'staging.daily', 'archive.payments')
        >>> order.group
        {'analytics.daily': 'cycle-1', 'staging.daily': 'cycle-1'}
        >>> order.upstream["analytics.daily"]  # what the whole cycle waits for
        ('prod.payments',)
    """
    flows = nx.DiGraph()
    flows.add_nodes_from(sorted(planned))
    # Only the planned datasets' own edges: the order does not depend on the rest of the graph.
    for source in sorted(planned):
        column_edges, dataset_edges = graph.edges_out_of(source)
        targets = {e.target_dataset for e in column_edges} | {e.target for e in dataset_edges}
        flows.add_edges_from((source, target) for target in sorted(targets) if target in planned and target != source)
    condensed = nx.condensation(flows)
    members = {node: sorted(condensed.nodes[node]["members"]) for node in condensed.nodes}
    ordered_components = list(nx.lexicographical_topological_sort(condensed, key=lambda node: members[node][0]))
    group: dict[str, str] = {}
    order: list[str] = []
    cycle_count = 0
    for component in ordered_components:
        names = members[component]
        if len(names) > 1:
            cycle_count += 1
            for name in names:
                group[name] = f"cycle-{cycle_count}"
        order.extend(names)
    # A cycle is erased as one group: every member waits for every upstream of the group.
    upstream: dict[str, tuple[str, ...]] = {}
    for component in ordered_components:
        names = members[component]
        outside = sorted({p for name in names for p in flows.predecessors(name) if p not in names})
        for name in names:
            upstream[name] = tuple(outside)
    return DatasetOrder(datasets=tuple(order), group=group, upstream=upstream)


def order_steps(nodes: dict[str, tuple[int, int]], depends: dict[str, set[str]]) -> list[str]:
    """Step keys in an order that respects ``depends`` (key -> keys that must run first), ties
    broken by ``nodes[key]`` = (dataset rank, position within the dataset).

    Examples:
        >>> order_steps({"resolve": (0, 0), "delete": (1, 0), "expire": (1, 1), "vacuum": (2, 1)},
        ...             {"delete": {"resolve"}, "expire": {"delete"}, "vacuum": {"resolve"}})
        ['resolve', 'delete', 'expire', 'vacuum']
    """
    dag = nx.DiGraph()
    dag.add_nodes_from(nodes)
    for key, before in depends.items():
        for other in before:
            dag.add_edge(other, key)
    if not nx.is_directed_acyclic_graph(dag):  # a bug in the planner, never an input problem
        raise AssertionError(f"step dependencies form a cycle: {nx.find_cycle(dag)}")
    return list(nx.lexicographical_topological_sort(dag, key=lambda key: (nodes[key], key)))
