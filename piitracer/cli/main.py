"""``piitracer`` commands. Exit codes: 0 ok, 1 subject data still found, 2 error."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

import piitracer
from piitracer.render.lineage_diagram import RenderError, lineage_diagram, render_lineage

EXIT_OK, EXIT_FOUND, EXIT_ERROR = 0, 1, 2
console = Console()
err_console = Console(stderr=True)


class PiitracerGroup(click.Group):
    """Turns the project's known errors into a clear message and exit code 2, never a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (piitracer.WorkspaceError, RenderError, KeyError) as error:
            message = error.args[0] if isinstance(error, KeyError) and error.args else str(error)
            err_console.print(f"[bold red]error:[/] {message}", highlight=False, markup=True)
            sys.exit(EXIT_ERROR)


@click.group(cls=PiitracerGroup)
@click.option(
    "--workspace",
    "-w",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="Folder holding piitracer.yaml.",
)
@click.version_option(piitracer.__version__, prog_name="piitracer")
@click.pass_context
def cli(ctx: click.Context, workspace: Path) -> None:
    """Find, erase and prove the erasure of a person's data across a lakehouse."""
    ctx.obj = {"workspace": workspace}


def _graph(ctx: click.Context) -> piitracer.LineageGraph:
    return piitracer.build_lineage_graph(piitracer.load_workspace(ctx.obj["workspace"]))


@cli.group()
def lineage() -> None:
    """Column-level lineage of the workspace."""


@lineage.command("stats")
@click.option("--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.pass_context
def lineage_stats(ctx: click.Context, output: str) -> None:
    """Counts of datasets, columns and edges by type, and every ingest problem."""
    graph = _graph(ctx)
    stats = graph.stats()
    problems = [str(p) for p in graph.problems]
    if output == "json":
        click.echo(json.dumps({**stats, "problems": problems}, indent=2))
        return
    table = Table(title="lineage", show_header=False)
    for key in ("datasets", "columns", "column_edges", "masked_edges", "units_read", "ingest_problems"):
        table.add_row(key.replace("_", " "), str(stats[key]))
    for edge_type, count in stats["column_edges_by_type"].items():
        table.add_row(f"  {edge_type}", str(count))
    for relation, count in stats["dataset_edges_by_relation"].items():
        table.add_row(f"  dataset {relation}", str(count))
    console.print(table)
    if stats["datasets_not_in_catalog"]:
        console.print("datasets in lineage but not in the catalog: " + ", ".join(stats["datasets_not_in_catalog"]))
    for problem in problems:
        console.print(f"[yellow]{problem}[/]", highlight=False)


@lineage.command("show")
@click.option("--from", "start", metavar="DATASET[.COLUMN]", help="Show only what this reaches.")
@click.option("--format", "fmt", type=click.Choice(["dot", "svg", "png", "json"]), default="dot", show_default=True)
@click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path), help="Write here instead of stdout.")
@click.pass_context
def lineage_show(ctx: click.Context, start: str | None, fmt: str, out: Path | None) -> None:
    """The lineage diagram (graphviz) or the graph as JSON."""
    graph = _graph(ctx)
    origin = piitracer.parse_column(start, graph) if start else None
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
        err_console.print(f"wrote {out}", highlight=False)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="piitracer")


if __name__ == "__main__":
    main()
