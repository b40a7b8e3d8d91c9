"""``piitracer lineage``: the workspace's column-level lineage (counts, diagram, store rebuild).
Use case: :mod:`piitracer.api.lineage`."""

from __future__ import annotations

import json
from pathlib import Path

import click

import piitracer
from piitracer.api import named_dataset, rebuild_lineage_store
from piitracer.cli import params
from piitracer.cli.common import echo_json, open_workspace
from piitracer.cli.terminal import console, err_console, lineage_stats_table
from piitracer.model.lineage import ProblemSeverity
from piitracer.render.lineage_diagram import lineage_diagram, render_lineage


def _graph(ctx: click.Context) -> piitracer.LineageGraph:
    return piitracer.build_lineage_graph(open_workspace(ctx))


@click.group()
@params.everything
def lineage(output: str) -> None:
    """Column-level lineage of the workspace."""


@lineage.command("stats")
@params.output
@params.workspace
@click.pass_context
def lineage_stats(ctx: click.Context, output: str) -> None:
    """Counts of datasets, columns and edges by type, and every ingest problem."""
    graph = _graph(ctx)
    stats = graph.stats()
    problems = [str(p) for p in graph.problems]
    if output == "json":
        click.echo(json.dumps({**stats, "problems": problems}, indent=2))
        return
    console.print(lineage_stats_table(stats))
    if stats["datasets_not_in_catalog"]:
        console.print("datasets in lineage but not in the catalog: " + ", ".join(stats["datasets_not_in_catalog"]))
    for problem in graph.problems:
        # Info lines lose nothing (a bare SELECT, an INSERT of constants): not in a warning's colour.
        colour = "dim" if problem.severity is ProblemSeverity.INFO else "yellow"
        console.print(str(problem), style=colour, highlight=False)


@lineage.command("rebuild")
@params.output
@params.workspace
@click.pass_context
def lineage_rebuild(ctx: click.Context, output: str) -> None:
    """Forget the workspace's lineage store (.piitracer/lineage/store.sqlite) and read every
    lineage source again. Needed only if the store is suspected wrong: every command already
    re-reads a source whose files changed."""
    update = rebuild_lineage_store(open_workspace(ctx))
    if output == "json":
        echo_json({"rebuilt": True, "units_read": len(update.parsed)})
        return
    err_console.print(f"lineage store rebuilt: {len(update.parsed)} units read", highlight=False)


@lineage.command("show")
@click.option("--from", "start", metavar="DATASET[.COLUMN]", help="Show only what this reaches.")
@click.option("--format", "fmt", type=click.Choice(["dot", "svg", "png", "json"]), default=None,
              help="The document: a graphviz diagram (dot, svg, png) or the graph as JSON.  [default: dot; json with "
                   "--output json]")
@click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path), help="Write here instead of stdout.")
@params.output
@params.workspace
@click.pass_context
def lineage_show(ctx: click.Context, start: str | None, fmt: str | None, out: Path | None, output: str) -> None:
    """The lineage diagram (graphviz) or the graph as JSON. --format chooses the document; --output
    json alone prints the graph as JSON (--format json), and with -o reports the file written as
    JSON."""
    if fmt is None:
        fmt = "json" if output == "json" and out is None else "dot"
    elif output == "json" and out is None and fmt != "json":
        raise click.UsageError(f"--output json prints the graph as JSON, not --format {fmt}: give -o FILE for the "
                               "diagram (the report of what was written is then JSON), or leave out one of the two")
    workspace = open_workspace(ctx)
    graph = piitracer.build_lineage_graph(workspace)
    origin = piitracer.parse_column(named_dataset(workspace, start), graph) if start else None
    if fmt == "json":
        data = (json.dumps(graph.to_json(origin), indent=2) + "\n").encode()
    else:
        data = render_lineage(lineage_diagram(graph, origin), fmt)
    if out is None:
        if fmt == "png":
            raise click.UsageError("--format png needs -o FILE")
        click.echo(data.decode(), nl=False)
    else:
        out.write_bytes(data)
        if output == "json":
            echo_json({"wrote": str(out), "format": fmt, "bytes": len(data)})
        else:
            err_console.print(f"wrote {out}", highlight=False)
