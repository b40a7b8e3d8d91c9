"""The request page's lineage diagram: the report's diagram (``render.lineage_diagram``), each
node coloured by the request's erasure state, inlined as SVG."""

from __future__ import annotations

from piitracer.graph.lineage_graph import LineageGraph
from piitracer.model.lineage import ColumnRef
from piitracer.render.lineage_diagram import lineage_diagram, render_lineage
from piitracer.render.report_facts import ReportFacts


def lineage_svg(graph: LineageGraph, facts: ReportFacts) -> str:
    """The plan's datasets reached from every identifier of its sources (as the audit report draws
    them), coloured by state; the SVG element only (no XML prolog or comments)."""
    starts: list[ColumnRef] = []
    for source in facts.sources:
        dataset, _, column = source.rpartition(".")
        if not graph.has_dataset(dataset):
            continue
        catalog = graph.dataset(dataset).catalog
        for name in [column, *(catalog.identifiers if catalog else ())]:
            ref = ColumnRef(dataset=dataset, column=name)
            if graph.has_column(ref) and ref not in starts:
                starts.append(ref)
    states = {d["dataset"]: d["state"] for d in facts.datasets}
    svg = render_lineage(lineage_diagram(graph, starts or None, states, datasets=list(states)), "svg").decode("utf-8")
    return svg[svg.index("<svg"):]
