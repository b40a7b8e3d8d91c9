"""``piitracer catalog``: discover the lakehouse's tables, classify their columns, check the
catalog against the lakehouse. Use case: :mod:`piitracer.api.catalog`."""

from __future__ import annotations

import json
import sys

import click
from rich.text import Text

from piitracer.api import catalog_drift, classify_catalog, discover_catalog, lineage_only_datasets, warehouse_roots, \
    write_discovered_catalog
from piitracer.cli import params
from piitracer.cli.common import EXIT_FOUND, EXIT_OK, echo_json, open_workspace
from piitracer.storage.locations import Location
from piitracer.cli.terminal import classification_table, console, discovered_json, discovery_table, drift_table, \
    err_console, progress_bars


@click.group("catalog")
@params.everything
def catalog_group(output: str) -> None:
    """The catalog as the lakehouse itself describes it, and where the workspace's has drifted."""


@catalog_group.command("discover")
@params.output
@params.workspace
@click.option("--write", "write", is_flag=True,
              help="Also write catalog.discovered.yaml: the workspace's catalog then takes every field "
              "piitracer.yaml does not say from it.")
@click.option("--spark", "spark_views", is_flag=True,
              help="Also ask the Spark catalogs (spark_catalog, lineage.spark_catalogs, spark.catalog) for their views "
              "(starts Spark).")
@click.pass_context
def catalog_discover(ctx: click.Context, output: str, write: bool, spark_views: bool) -> None:
    """List every table under the discovery roots (warehouse_roots, else the workspace folder and
    the Iceberg warehouse) with what its own metadata says: format, location, columns, write mode,
    retention properties, format version, tags and branches, shallow clones, Delta features,
    partition columns; and every namespace and table of each configured Iceberg catalog
    (iceberg.catalogs, .pyiceberg.yaml, PYICEBERG_CATALOG__*), named namespace.table and read from
    the metadata its catalog names. A table whose metadata cannot be read is listed with the reason."""
    workspace = open_workspace(ctx)
    with err_console.status("discovering tables") as status:
        discovery = discover_catalog(workspace, lambda place: status.update(Text(f"reading {place}")), spark_views)
    tables = discovery.tables
    lineage_only = [d for d in lineage_only_datasets(workspace, discovery) if d not in discovery.views]
    for root, why in sorted(discovery.unreadable_roots.items()):
        err_console.print(f"{root}: not discovered: {why}", highlight=False, markup=False)
    for catalog, why in sorted(discovery.unreadable_catalogs.items()):
        err_console.print(f"Spark catalog {catalog}: views not listed: {why}", highlight=False, markup=False, soft_wrap=True)
    for catalog, why in sorted(discovery.unreadable_iceberg_catalogs.items()):
        err_console.print(f"Iceberg catalog {catalog}: not discovered: {why}", highlight=False, markup=False, soft_wrap=True)
    for table, why in sorted(discovery.unreadable_iceberg_tables.items()):
        err_console.print(f"Iceberg table {table}: not discovered: {why}", highlight=False, markup=False, soft_wrap=True)
    for found in tables:
        for warning in found.warnings:
            err_console.print(f"{found.table or found.name}: warning: {warning}", highlight=False, markup=False,
                              soft_wrap=True)
    if write:
        _write_discovered(workspace, discovery=discovery)
    if output == "json":
        click.echo(json.dumps({"tables": [{**discovered_json(t), "catalog": t.catalog, "properties": t.properties,
                                           "warnings": list(t.warnings)} for t in tables],
                               "unreadable_roots": discovery.unreadable_roots,
                               "views": {d: list(c) for d, c in sorted(discovery.views.items())},
                               "unreadable_catalogs": discovery.unreadable_catalogs,
                               "unreadable_iceberg_catalogs": discovery.unreadable_iceberg_catalogs,
                               "unreadable_iceberg_tables": discovery.unreadable_iceberg_tables,
                               "seen_in_lineage_not_found_in_storage": lineage_only}, indent=2))
        return
    root = Location.parse(workspace.root)
    console.print(discovery_table(f"{len(tables)} tables under {', '.join(str(r) for r in warehouse_roots(workspace))}",
                                  discovery, lambda location: root.relative(location) or str(location)))
    for dataset in lineage_only:
        console.print(f"seen in lineage, not found in storage: {dataset}", highlight=False, markup=False)


def _write_discovered(workspace, **found) -> None:
    """Write catalog.discovered.yaml and say so on stderr (stdout may be JSON)."""
    path, written = write_discovered_catalog(workspace, **found)
    auto = sum(1 for entry in written.entries.values() if entry.get("classified_by") == "auto")
    err_console.print(f"wrote {len(written.entries)} catalog entries to {path}"
                      + (f" ({auto} with identifiers classified_by: auto, to confirm in piitracer.yaml)" if auto else ""),
                      highlight=False, markup=False, soft_wrap=True)
    for place, why in sorted(written.skipped.items()):
        err_console.print(f"{place}: not written: {why}", highlight=False, markup=False, soft_wrap=True)


@catalog_group.command("classify")
@click.option("--sample", type=click.IntRange(min=0), default=50, show_default=True,
              help="Rows read per table for the value validators, spread over its files and row groups when "
              "the table has more (0: names and lineage only; classify.min_values: non-null values a column needs).")
@params.output
@params.workspace
@click.option("--write", "write", is_flag=True,
              help="Also write catalog.discovered.yaml with the identifier columns found, marked "
              "classified_by: auto until a person confirms them in piitracer.yaml.")
@click.pass_context
def catalog_classify(ctx: click.Context, sample: int, output: str, write: bool) -> None:
    """A verdict per column of every discovered table — the kind of personal data in words
    (person name, postal address, date of birth, e-mail, phone, national ids...), confidence,
    valid/sampled counts and one line of reasons — from its name as people write names, from
    sampled values validated by python-stdnum, phonenumbers, email-validator and probablepeople's
    census name tables (values outrank the name; a sampled value is never shown), and from lineage
    out of the catalog's identifiers. Once a person has confirmed identifiers, lists the columns
    with personal data that no catalogued identifier reaches ("PII without lineage"). A proposal
    for a person to confirm."""
    workspace = open_workspace(ctx)
    with progress_bars() as progress:
        result = classify_catalog(workspace, sample, progress)
    if write:
        _write_discovered(workspace, classification=result)
    if output == "json":
        click.echo(json.dumps({"columns": [v.to_json() for v in result.verdicts], "problems": result.problems,
                               "lineage_checked": result.lineage_checked}, indent=2))
        return
    console.print(classification_table(result.verdicts))
    overruled = [v for v in result.verdicts if not v.kind and v.name_suggests and v.name_suggests != "table_key"]
    if overruled:
        console.print(f"{len(overruled)} column(s) whose names suggest personal data but whose sampled values do not "
                      "(not classified): " + ", ".join(f"{v.dataset}.{v.shown}" for v in overruled),
                      highlight=False, markup=False, soft_wrap=True)
    sparse = [v for v in result.verdicts if v.sparse]
    if sparse:
        console.print(f"{len(sparse)} column(s) too sparse to judge by values: "
                      + ", ".join(f"{v.dataset}.{v.shown}" for v in sparse), highlight=False, markup=False, soft_wrap=True)
    if not result.lineage_checked:
        console.print("No identifier is catalogued yet: the check for personal data no lineage reaches starts once "
                      "these are reviewed and confirmed in piitracer.yaml.", highlight=False, markup=False, soft_wrap=True)
    for verdict in result.without_lineage:
        console.print(f"PII without lineage: {verdict.dataset}.{verdict.shown} holds {verdict.words} values and no "
                      "catalogued identifier flows there: a hidden copy? add its lineage or its identifiers",
                      highlight=False, markup=False, soft_wrap=True)
    for dataset, problem in sorted(result.problems.items()):
        err_console.print(f"{dataset}: not classified: {problem}", highlight=False, markup=False)


@catalog_group.command("check")
@params.output
@params.workspace
@click.pass_context
def catalog_check(ctx: click.Context, output: str) -> None:
    """Compare the workspace's catalog with the lakehouse: a column that no longer exists or is not
    listed, a format, write mode or retention that differs, a table that disappeared, a new table
    not in the catalog. Exit 1 on drift; 0 when they agree (overrides the catalog makes on purpose
    are listed, not counted)."""
    workspace = open_workspace(ctx)
    discovery = discover_catalog(workspace)
    for root, why in sorted(discovery.unreadable_roots.items()):
        err_console.print(f"{root}: not checked: {why}", highlight=False, markup=False)
    differences = catalog_drift(workspace, discovery=discovery)
    drift = [d for d in differences if d.drift]
    if output == "json":
        echo_json({"agrees": not drift, "drift": len(drift), "overrides": len(differences) - len(drift),
                   "differences": [{"dataset": d.dataset, "field": d.field, "catalog": d.catalog, "lakehouse": d.lakehouse,
                                    "drift": d.drift} for d in differences],
                   "unreadable_roots": dict(sorted(discovery.unreadable_roots.items()))})
        sys.exit(EXIT_FOUND if drift else EXIT_OK)
    if differences:
        console.print(drift_table(differences))
    overrides = len(differences) - len(drift)
    console.print(f"{len(drift)} difference(s) of drift, {overrides} override(s)" if differences
                  else "the catalog agrees with the lakehouse", highlight=False)
    sys.exit(EXIT_FOUND if drift else EXIT_OK)
