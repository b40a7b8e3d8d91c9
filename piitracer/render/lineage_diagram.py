"""Lineage diagrams with graphviz: datasets as boxes listing their columns, typed edges.

Edge styles (also in the legend): IDENTITY solid black, TRANSFORMATION solid blue, AGGREGATION
solid orange, masked edges red and labelled ``masked``, INDIRECT dashed grey labelled with the
subtype, clones and archives bold purple dotted between dataset headers, job flows without
column lineage thin grey dotted. The chosen start is filled yellow. Reports pass ``states``
(dataset -> erasure state) to fill each dataset's header with its state's colour (``STATE_FILLS``).
"""

from __future__ import annotations

import html
import subprocess
from typing import Collection, Mapping, Sequence

import graphviz

from piitracer.graph.lineage_graph import LineageGraph
from piitracer.model.lineage import ColumnEdge, ColumnRef, DatasetEdge, DatasetRelation, EdgeKind, EdgeSubtype
from piitracer.model.errors import UnavailableError

START_FILL = "#fff3a0"
HEADER_FILL = "#e8eef7"
# Fill colours by dataset state, used by reports (erased, pending, manual_review, ...).
# Each pair at least 18 apart in CIELAB (distinct at a glance), each light enough that black text on
# it passes WCAG AA by far (>= 8.8:1); every legend names the state in words beside its colour.
STATE_FILLS = {
    "erased": "#b9e4b0",  # green
    "crypto_shredded": "#7fdcd0",  # teal: erased by destroying the subjects' keys, the ciphertext left
    "attested": "#9cd0f5",  # blue: a person confirmed it, not the verifier's green
    "pending": "#ffe08a",  # yellow
    "awaiting_attestation": "#ffc38a",  # orange: waiting for a person
    "found": "#f4a3a3",  # red: still there
    "manual_review": "#e2b3f2",  # purple: a person must act, nothing is known to be left
    "recompute": "#d6cca0",  # khaki
    "no_action": "#e4e4e4",  # grey
}
_DIRECT_COLOURS = {
    EdgeSubtype.IDENTITY: "black",
    EdgeSubtype.TRANSFORMATION: "#1f5fbf",
    EdgeSubtype.AGGREGATION: "#d9822b",
}
_RELATION_LABELS = {
    DatasetRelation.SHALLOW_CLONE: "shallow clone",
    DatasetRelation.DEEP_CLONE: "deep clone",
    DatasetRelation.ARCHIVE: "archive",
    DatasetRelation.REPLICA: "replica",
    DatasetRelation.FLOW: "job flow",
}


class RenderError(UnavailableError):
    """The diagram could not be rendered (e.g. graphviz's ``dot`` is missing)."""


def lineage_diagram(
    graph: LineageGraph,
    start: str | ColumnRef | Sequence[ColumnRef] | None = None,
    states: Mapping[str, str] | None = None,
    datasets: Collection[str] | None = None,
) -> graphviz.Digraph:
    """The diagram of the whole graph, or of what ``start`` reaches (several start columns: the
    union of their reaches; the first is highlighted). ``datasets`` keeps exactly those datasets
    and the drawn edges between them. ``states`` maps dataset -> state and fills each dataset's
    header with ``STATE_FILLS[state]``."""
    starts = list(start) if isinstance(start, (list, tuple)) else ([] if start is None else [start])
    if not starts:
        drawn = set(graph.datasets())
        column_edges, dataset_edges = graph.column_edges(), graph.dataset_edges()
    else:
        reaches = [graph.reach(s) for s in starts]
        drawn = {d for reached in reaches for d in reached.datasets}
        column_edges = sorted({e for reached in reaches for e in reached.column_edges}, key=ColumnEdge.sort_key)
        dataset_edges = sorted({e for reached in reaches for e in reached.dataset_edges}, key=DatasetEdge.sort_key)
    if datasets is not None:
        drawn = {d for d in datasets if graph.has_dataset(d)}
        column_edges = [e for e in column_edges if e.source.dataset in drawn and e.target_dataset in drawn]
        dataset_edges = [e for e in dataset_edges if e.source in drawn and e.target in drawn]
    start = starts[0] if starts else None
    dot = graphviz.Digraph("lineage", graph_attr={"rankdir": "LR", "fontname": "Helvetica", "nodesep": "0.3"})
    dot.attr("node", shape="plaintext", fontname="Helvetica", fontsize="10")
    dot.attr("edge", fontname="Helvetica", fontsize="8")
    for dataset_id in sorted(drawn):
        dot.node(_node_id(dataset_id), label=_dataset_label(graph, dataset_id, start, states or {}))
    for edge in _collapse(column_edges):
        _add_column_edge(dot, edge)
    for edge in dataset_edges:
        _add_dataset_edge(dot, edge)
    return dot


def render_lineage(diagram: graphviz.Digraph, fmt: str) -> bytes:
    """``dot`` source, or an ``svg``/``png`` rendered by graphviz's ``dot`` program."""
    if fmt == "dot":
        return diagram.source.encode()
    try:
        return diagram.pipe(format=fmt)
    except graphviz.ExecutableNotFound as error:
        raise RenderError(
            "graphviz's 'dot' program is not installed (Debian: apt-get install -y graphviz)"
        ) from error
    except (graphviz.CalledProcessError, subprocess.SubprocessError) as error:
        raise RenderError(f"graphviz failed to render {fmt}: {error}") from error


def _node_id(dataset_id: str) -> str:
    return "ds_" + "".join(ch if ch.isalnum() else "_" for ch in dataset_id) + f"_{abs(hash_id(dataset_id))}"


def hash_id(text: str) -> int:
    """A stable small number for a name (Python's hash() is salted per process)."""
    value = 0
    for ch in text.encode():
        value = (value * 131 + ch) % 1_000_003
    return value


def _port(column: str) -> str:
    return "c_" + "".join(ch if ch.isalnum() else "_" for ch in column) + f"_{hash_id(column)}"


def _dataset_label(graph: LineageGraph, dataset_id: str, start, states: Mapping[str, str]) -> str:
    info = graph.dataset(dataset_id)
    start_dataset = start if isinstance(start, str) else (start.dataset if start is not None else None)
    start_column = start.column if isinstance(start, ColumnRef) else None
    fill = STATE_FILLS.get(states.get(dataset_id, ""), START_FILL if dataset_id == start_dataset else HEADER_FILL)
    fmt = info.catalog.format.value if info.catalog else "not in catalog"
    state = f" · {states[dataset_id]}" if dataset_id in states else ""
    identifiers = set(info.catalog.identifiers) if info.catalog else set()
    rows = [
        f'<TR><TD BGCOLOR="{fill}" PORT="header"><B>{html.escape(dataset_id)}</B>'
        f'<BR/><FONT POINT-SIZE="8">{html.escape(fmt + state)}</FONT></TD></TR>'
    ]
    for column in info.columns:
        cell_fill = START_FILL if dataset_id == start_dataset and column == start_column else "white"
        name = html.escape(column)
        if column in identifiers:
            key = info.catalog is not None and column == info.catalog.subject_key
            name = f'<B>{name}</B> <FONT POINT-SIZE="7">(subject key)</FONT>' if key else f"<B>{name}</B>"
        rows.append(f'<TR><TD BGCOLOR="{cell_fill}" PORT="{_port(column)}" ALIGN="LEFT">{name}</TD></TR>')
    return f'<<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="3">{"".join(rows)}</TABLE>>'


def _collapse(edges: list[ColumnEdge]) -> list[ColumnEdge]:
    """One drawn edge per (source column, target, kind, subtype, masking): several origins of the
    same edge are drawn once."""
    seen: dict[tuple, ColumnEdge] = {}
    for edge in edges:
        key = (edge.source, edge.target_dataset, edge.target_column, edge.kind, edge.subtype, edge.masking)
        seen.setdefault(key, edge)
    return list(seen.values())


def _add_column_edge(dot: graphviz.Digraph, edge: ColumnEdge) -> None:
    tail = f"{_node_id(edge.source.dataset)}:{_port(edge.source.column)}"
    head_port = _port(edge.target_column) if edge.target_column else "header"
    head = f"{_node_id(edge.target_dataset)}:{head_port}"
    attrs: dict[str, str] = {}
    if edge.kind is EdgeKind.INDIRECT:
        attrs = {"style": "dashed", "color": "grey55", "fontcolor": "grey40"}
        attrs["label"] = (edge.subtype.value if edge.subtype else "indirect").lower()
    else:
        attrs["color"] = _DIRECT_COLOURS.get(edge.subtype, "#1f5fbf")
        if edge.subtype is EdgeSubtype.AGGREGATION:
            attrs["label"] = "agg"
    if edge.masking:
        attrs.update({"color": "red", "fontcolor": "red", "label": "masked", "penwidth": "1.6"})
    dot.edge(tail, head, **attrs)


def _add_dataset_edge(dot: graphviz.Digraph, edge: DatasetEdge) -> None:
    attrs = {"label": _RELATION_LABELS[edge.relation], "style": "dotted"}
    if edge.relation is DatasetRelation.FLOW:
        attrs.update({"color": "grey60", "fontcolor": "grey40"})
    else:
        attrs.update({"color": "#7a3fb0", "fontcolor": "#7a3fb0", "penwidth": "2"})
    dot.edge(f"{_node_id(edge.source)}:header", f"{_node_id(edge.target)}:header", **attrs)
