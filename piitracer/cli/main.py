"""``piitracer`` commands. Exit codes: 0 ok, 1 subject data still found, 2 error."""

from __future__ import annotations

import json
import logging
import sys
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

import piitracer
from piitracer.api import (Evidence, add_requests, attest_step, batch_plan, close_request, move_plan_requests, plan_file_text, plan_requests,
                           rebuild_lineage_store, register_plan_requests, request_store, request_store_path, reverify_requests, settle_after_verify)
from piitracer.model.requests import RequestState
from piitracer.api import (audit_log, audit_log_path, audit_report, check_certificate, check_plan_origin, check_plan_seal, erasure_certificate, execute_plan,
                           journal_steps, load_plan, plan_deletion,
                           prepare_execution, record_plan, run_execution, record_run, record_verification, recorded_attestations, seal_plan,
                           verify_audit, verify_plan, write_private)
from piitracer.api import (DemoResult, write_discovered_catalog, catalog_drift, classify_catalog, discover_catalog, lineage_only_datasets, warehouse_roots,
                           run_demo)
from piitracer.audit import load_audit_key, record_estimate_entry
from piitracer.crypto.envelope import has_master_key, load_master_key
from piitracer.executor.preflight import PlanRefused
from piitracer.executor.runner import ExecuteOptions, ExecutionError, RunSummary, StepResult
from piitracer.ingest.requests import read_labelled_requests
from piitracer.model.errors import PiitracerError
from piitracer.model.lineage import ProblemSeverity
from piitracer.model.plan import DeletionPlan, Subject
from piitracer.model.verification import ErasureState, VerificationReport
from piitracer.model.workspace import TaskEngine, setting_text
from piitracer.planner.build import PlanningError
from piitracer.render.lineage_diagram import lineage_diagram, render_lineage
from piitracer.render import tables
from piitracer.render.plan_text import explain_text, plan_tables

EXIT_OK, EXIT_FOUND, EXIT_ERROR = 0, 1, 2


def configure_logging(level: str, log_file: Path | None) -> None:
    """piitracer's loggers at ``level`` to stderr and, if given, to ``log_file`` (created 0600:
    logs carry no values, but dataset names and paths are nobody else's business either)."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file is not None:
        log_file.touch(mode=0o600, exist_ok=True)
        handlers.append(logging.FileHandler(log_file, encoding="utf-8"))
    formatter = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    root = logging.getLogger("piitracer")
    for handler in handlers:
        handler.setFormatter(formatter)
        root.addHandler(handler)
    root.setLevel(level)
    if level == "DEBUG":  # py4j logs every command sent to the JVM: part of "everything at DEBUG"
        py4j = logging.getLogger("py4j")
        py4j.setLevel(logging.DEBUG)
        for handler in handlers:
            py4j.addHandler(handler)
console = tables.console()
err_console = tables.console(stderr=True)


class PiitracerGroup(click.Group):
    """Turns the project's known errors into a clear message and exit code 2, never a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except PiitracerError as error:
            # Plain text, never wrapped: 'file:line: field: what was expected' must stay one line.
            # Anything that is not a PiitracerError (a KeyError, a TypeError) is a bug: traceback.
            click.echo(f"error: {error}", err=True)
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
@click.option(
    "--log-level",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
    default="WARNING",
    show_default=True,
    envvar="PIITRACER_LOG_LEVEL",
    help="Logging of piitracer (and Spark, at DEBUG/INFO) to stderr. Logs name steps, datasets and counts, never subject values.",
)
@click.option("--log-file", type=click.Path(dir_okay=False, path_type=Path), help="Also write piitracer's log here (mode 0600).")
@click.version_option(piitracer.__version__, prog_name="piitracer")
@click.pass_context
def cli(ctx: click.Context, workspace: Path, log_level: str, log_file: Path | None) -> None:
    """Find, erase and prove the erasure of a person's data across a lakehouse."""
    configure_logging(log_level.upper(), log_file)
    ctx.obj = {"workspace": workspace}


def _workspace(ctx: click.Context) -> piitracer.Workspace:
    """The workspace of ``--workspace``; its warnings (missing locations, locations outside the
    warehouse roots) go to stderr once per command."""
    workspace = piitracer.load_workspace(ctx.obj["workspace"])
    for warning in workspace.warnings:
        click.echo(f"warning: {warning}", err=True)
    return workspace


def _graph(ctx: click.Context) -> piitracer.LineageGraph:
    return piitracer.build_lineage_graph(_workspace(ctx))


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
    for key in ("datasets", "columns", "column_edges", "masked_edges", "units_read", "ingest_problems", "ingest_info"):
        table.add_row(key.replace("_", " "), str(stats[key]))
    for edge_type, count in stats["column_edges_by_type"].items():
        table.add_row(f"  {edge_type}", str(count))
    for relation, count in stats["dataset_edges_by_relation"].items():
        table.add_row(f"  dataset {relation}", str(count))
    console.print(table)
    if stats["datasets_not_in_catalog"]:
        console.print("datasets in lineage but not in the catalog: " + ", ".join(stats["datasets_not_in_catalog"]))
    for problem in graph.problems:
        # Info lines lose nothing (a bare SELECT, an INSERT of constants): not in a warning's colour.
        colour = "dim" if problem.severity is ProblemSeverity.INFO else "yellow"
        console.print(f"[{colour}]{problem}[/]", highlight=False)


@lineage.command("rebuild")
@click.pass_context
def lineage_rebuild(ctx: click.Context) -> None:
    """Forget the workspace's lineage store (.piitracer/lineage/store.sqlite) and read every
    lineage source again. Needed only if the store is suspected wrong: every command already
    re-reads a source whose files changed."""
    update = rebuild_lineage_store(_workspace(ctx))
    err_console.print(f"lineage store rebuilt: {len(update.parsed)} units read", highlight=False)


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


@cli.command("plan")
@click.option("--source", "sources", multiple=True, metavar="DATASET.COLUMN", help="A source column holding the subject key (repeatable).")
@click.option("--subject", "subject_values", multiple=True, metavar="VALUE", help="A subject's key value (repeatable).")
@click.option("--requests", "requests_file", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="A .csv or .jsonl batch of requests (value, request_id, received_at).")
@click.option("--request-id", help="Request id of --subject values (and default of the requests file).")
@click.option("--received-at", type=click.DateTime(["%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d"]),
              help="When the request(s) arrived (default: now, UTC). The deadline runs from here.")
@click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path), help="Write the plan JSON here (mode 0600).")
@click.option("--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--explain", "explain_dataset", metavar="DATASET", help="Print the lineage path and rule that decided DATASET.")
@click.option("--schema", is_flag=True, help="Print the plan's JSON Schema and exit.")
@click.option("--audit-key-file", type=click.Path(dir_okay=False, path_type=Path),
              help="Seal the plan with this audit key (default: $PIITRACER_AUDIT_KEY, then $PIITRACER_AUDIT_KEY_FILE); "
              "execute refuses a sealed plan that was altered, and an unsealed one without --unsealed. Needed with -o.")
@click.option("--master-key-file", type=click.Path(dir_okay=False, path_type=Path),
              help="The master key that wraps each request's data key (default: $PIITRACER_MASTER_KEY_FILE, then "
              "$PIITRACER_MASTER_KEY). Needed with -o and --output json: subject values are only stored encrypted.")
@click.pass_context
def plan_command(ctx, sources, subject_values, requests_file, request_id, received_at, out, output, explain_dataset, schema,
                 audit_key_file, master_key_file) -> None:
    """Plan the erasure of one subject or a batch: ordered, per-format steps and deadlines. Every
    subject value is parsed strictly as its source key column's type (a value that is not exactly
    one is refused, exit 2, naming its position, never the value). With -o the plan's requests are
    queued in the request store (planned) and the file holds their values encrypted."""
    if schema:
        click.echo(json.dumps(DeletionPlan.model_json_schema(), indent=2))
        return
    if not sources:
        raise click.UsageError("give at least one --source DATASET.COLUMN")
    if bool(subject_values) == bool(requests_file):
        raise click.UsageError("give either --subject VALUE (repeatable) or --requests FILE")
    labels, subjects = _labelled_subjects(subject_values, requests_file, request_id, _aware(received_at), "cli")
    workspace = _workspace(ctx)
    stores = out is not None
    # Keys first: a plan that would be written but cannot be recorded or encrypted is refused before work.
    key = load_audit_key(key_file=audit_key_file, option="--audit-key-file") if out is not None else _optional_audit_key(audit_key_file)
    master = load_master_key(master_key_file) if stores else None
    graph = piitracer.lineage_graph_for(workspace, sources)
    plan = plan_deletion(workspace, graph, sources, subjects, labels=labels)
    if key is not None:
        plan = seal_plan(plan, key)
    if plan.deadline_at < datetime.now(timezone.utc):
        err_console.print(f"warning: the deadline {plan.deadline_at:%Y-%m-%d %H:%M} UTC has already passed "
                          "(--received-at or the requests' received_at)", highlight=False)
    text = None
    if stores:
        with request_store(workspace, master) as store:
            if out is not None:
                with audit_log(workspace, key=key) as log:
                    register_plan_requests(workspace, store, log, plan, "planned")
                    # The plan's id and its subjects' keyed digests: execute runs only plans recorded here.
                    record_plan(log, plan)
                text = plan_file_text(plan, store.cipher(plan_requests(plan)))
    if out is not None:
        write_private(out, text)
        sealed = "sealed" if plan.seal else "NOT sealed (no audit key: execute will need --unsealed)"
        err_console.print(f"wrote {out} (mode 0600; subject values encrypted; {sealed}); requests "
                          f"{', '.join(plan_requests(plan))} planned", highlight=False)
    if explain_dataset:
        click.echo(explain_text(plan, explain_dataset.lower()))
    elif output == "json":
        click.echo(text or _redacted_json(plan), nl=False)
    else:
        console.print(plan_tables(plan))


@cli.command("execute")
@click.argument("plan_file", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--dry-run", is_flag=True, help="Print every statement and action, subject values redacted; change nothing.")
@click.option("--resume", is_flag=True, help="Continue a run that stopped; committed steps are not applied again.")
@click.option("--rerun", is_flag=True, help="Run a plan that already ran again, every step (new run; resolve re-reads the "
              "sources): erases the subjects' rows written since, e.g. by a concurrent writer.")
@click.option("--no-concurrent-writers", is_flag=True, help="Promise no other job writes these tables now: allows orphan removal.")
@click.option("--drop-refs", is_flag=True, help="Let release_ref steps drop the Iceberg tags/branches that retain pre-delete snapshots.")
@click.option("--unsealed", is_flag=True, help="Run a plan that carries no seal (it was planned without an audit key); "
              "the audit log records that it was unsealed.")
@click.option("--audit-key-file", type=click.Path(dir_okay=False, path_type=Path),
              help="File holding the audit key (default: $PIITRACER_AUDIT_KEY, then $PIITRACER_AUDIT_KEY_FILE).")
@click.option("--master-key-file", type=click.Path(dir_okay=False, path_type=Path),
              help="The master key (default: $PIITRACER_MASTER_KEY_FILE, then $PIITRACER_MASTER_KEY): opens the plan's "
              "values and seals the journal's.")
@click.pass_context
def execute_command(ctx, plan_file: Path, dry_run: bool, resume: bool, rerun: bool, no_concurrent_writers: bool,
                    drop_refs: bool, unsealed: bool, audit_key_file: Path | None, master_key_file: Path | None) -> None:
    """Run a plan on the lakehouse: one Spark session, every dataset touched once, journaled and
    recorded in the audit trail (an audit key and the master key are required before anything
    runs). The plan is checked first — its seal, its shape, every dataset against this workspace's
    catalog, every path its tables name against their catalogued locations — and a refused plan
    writes nothing. The plan's requests move executing -> executed."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    workspace = _workspace(ctx)
    options = ExecuteOptions(dry_run=dry_run, resume=resume, rerun=rerun, no_concurrent_writers=no_concurrent_writers,
                             drop_refs=drop_refs, unsealed=unsealed)
    # An erasure nobody can prove afterwards is worth little: no audit key, no run; values are only
    # ever stored encrypted: no master key, no run. Everything is checked before the audit log, the
    # request store or the journal is written: a refused run leaves no trace. A dry run passes
    # exactly the same checks (what it prints is what execute would run), then stops.
    key = load_audit_key(key_file=audit_key_file, option="--audit-key-file")
    master = load_master_key(master_key_file)
    with request_store(workspace, master) as store:
        plan = load_plan(plan_file, store.cipher)
        check_plan_seal(plan, key, unsealed_ok=unsealed)
        # The plan against the workspace and the lakehouse first (what it would touch), then its
        # origin: recorded here when piitracer wrote it, and what planning it again gives now.
        executor = prepare_execution(workspace, plan, options, attested=recorded_attestations(workspace, key, plan))
        if not audit_log_path(workspace).exists():  # opening would create it: a refusal leaves no trace
            raise PlanRefused(f"plan {plan.plan_id[:16]} is not recorded in this workspace's audit log (there is none "
                              "yet): plan again with `piitracer plan -o`")
        with audit_log(workspace, key=key, create=False) as log:
            check_plan_origin(workspace, log, plan, replan=not (resume or rerun))
        if dry_run:
            for result in executor.run().results:
                click.echo(f"{result.step.id} {result.step.dataset} {result.step.action.value}: {result.message}")
            return
        with audit_log(workspace, key=key) as log:
            register_plan_requests(workspace, store, log, plan, "planned (execute)")
            executor.context.cipher = store.cipher(plan_requests(plan))
            record_plan(log, plan)
            move_plan_requests(store, log, plan, RequestState.EXECUTING, "execute" + (" --resume" if resume else
                                                                                        " --rerun" if rerun else ""))
            columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn())
            with Progress(*columns, console=err_console, transient=False) as progress:
                task = progress.add_task("erasing", total=len(plan.steps))

                def on_step(result: StepResult) -> None:
                    progress.update(task, advance=1, description=f"{result.step.id} {result.step.action.value} {result.step.dataset}: {result.state}")

                executor.on_step = on_step
                try:
                    summary = run_execution(workspace, executor)
                except ExecutionError as error:
                    record_run(log, plan, journal_steps(workspace, plan.plan_id), workspace)  # the failed step too
                    move_plan_requests(store, log, plan, RequestState.EXECUTING, "execute failed", reason=str(error)[:300])
                    raise
            record_run(log, plan, summary, workspace)
            move_plan_requests(store, log, plan, RequestState.EXECUTED, f"executed: {summary.status}")
    console.print(summary_table(summary))
    awaiting = summary.awaiting()
    if summary.status == "complete":
        console.print("complete: every step committed or attested", highlight=False)
    else:
        heading = f"incomplete: {len(awaiting)} step(s) awaiting attestation" if awaiting else "incomplete"
        console.print(f"[yellow]{heading}[/]", highlight=False)
        for result in summary.results:
            if result.state in ("blocked", "pending", "awaiting_attestation"):
                owner = f" (owner {result.step.owner})" if result.step.owner else ""
                console.print(f"  {result.step.id} {result.step.action.value} {result.step.dataset}{owner}: {result.state}: "
                              f"{result.message}", highlight=False, markup=False)
        if awaiting:
            console.print("  when its owner has done the work: piitracer attest PLAN --step ID --by NAME [--evidence FILE|TEXT]",
                          highlight=False, markup=False)


@cli.command("attest")
@click.argument("plan_file", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--step", "step_id", required=True, metavar="ID", help="The manual, manual_review or recompute step done.")
@click.option("--by", "attested_by", required=True, metavar="NAME", help="Who confirms it (a person or a team).")
@click.option("--evidence", metavar="FILE|TEXT", help="A file (its SHA-256 is recorded) or a text (its SHA-256 is "
              "recorded): a ticket, a run log, a statement. Never stored itself: it may hold subject values.")
@click.option("--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--audit-key-file", type=click.Path(dir_okay=False, path_type=Path),
              help="File holding the audit key (default: $PIITRACER_AUDIT_KEY, then $PIITRACER_AUDIT_KEY_FILE).")
@click.option("--master-key-file", type=click.Path(dir_okay=False, path_type=Path),
              help="The master key (default: $PIITRACER_MASTER_KEY_FILE, then $PIITRACER_MASTER_KEY).")
@click.pass_context
def attest_command(ctx, plan_file: Path, step_id: str, attested_by: str, evidence: str | None, output: str,
                   audit_key_file: Path | None, master_key_file: Path | None) -> None:
    """Record in the audit log that a person did a step piitracer cannot (a Kafka topic erased, a
    masked table rebuilt, an aggregate recomputed): who, when, and the SHA-256 of the evidence.
    verify counts the step's dataset as attested once nothing of the subjects is found in it."""
    workspace = _workspace(ctx)
    key = load_audit_key(key_file=audit_key_file, option="--audit-key-file")
    plan = _load_plan(workspace, plan_file, master_key_file)
    check_plan_seal(plan, key, unsealed_ok=True)  # an altered plan is refused; an unsealed one is attestable
    proof = Evidence.of(evidence) if evidence is not None else None
    with audit_log(workspace, key=key) as log:
        entry = attest_step(log, plan, step_id, attested_by, proof)
    if request_store_path(workspace).exists():
        with request_store(workspace) as store:
            for request_id in plan_requests(plan):
                if store.has(request_id):
                    store.note(request_id, f"attested {step_id} by {attested_by.strip()}")
    body = entry.body
    if output == "json":
        click.echo(json.dumps({"seq": entry.seq, "entry_hash": entry.entry_hash, **body}, indent=2))
        return
    shown = f"; evidence {body['evidence_kind']} sha256 {body['evidence_sha256']}" if body["evidence_sha256"] else "; no evidence"
    click.echo(f"attested {body['step_id']} {body['action']} {body['dataset']} by {body['attested_by']} at "
               f"{body['attested_at']}{shown} (audit entry {entry.seq})")


_MASTER_OPTION = click.option("--master-key-file", type=click.Path(dir_okay=False, path_type=Path),
                              help="The master key (default: $PIITRACER_MASTER_KEY_FILE, then $PIITRACER_MASTER_KEY).")
_AUDIT_OPTION = click.option("--audit-key-file", type=click.Path(dir_okay=False, path_type=Path),
                             help="File holding the audit key (default: $PIITRACER_AUDIT_KEY, then $PIITRACER_AUDIT_KEY_FILE).")


@cli.group("catalog")
def catalog_group() -> None:
    """The catalog as the lakehouse itself describes it, and where the workspace's has drifted."""


@catalog_group.command("discover")
@click.option("--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
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
    partition columns. A table whose metadata cannot be read is listed with the reason."""
    workspace = _workspace(ctx)
    with err_console.status("discovering tables") as status:
        discovery = discover_catalog(workspace, lambda place: status.update(f"reading {place}"), spark_views)
    tables = discovery.tables
    lineage_only = [d for d in lineage_only_datasets(workspace, discovery) if d not in discovery.views]
    for root, why in sorted(discovery.unreadable_roots.items()):
        err_console.print(f"{root}: not discovered: {why}", highlight=False, markup=False)
    for catalog, why in sorted(discovery.unreadable_catalogs.items()):
        err_console.print(f"Spark catalog {catalog}: views not listed: {why}", highlight=False, markup=False, soft_wrap=True)
    if write:
        _write_discovered(workspace, discovery=discovery)
    if output == "json":
        click.echo(json.dumps({"tables": [_discovered_json(t) for t in tables], "unreadable_roots": discovery.unreadable_roots,
                               "views": {d: list(c) for d, c in sorted(discovery.views.items())},
                               "unreadable_catalogs": discovery.unreadable_catalogs,
                               "seen_in_lineage_not_found_in_storage": lineage_only}, indent=2))
        return
    table = Table(title=f"{len(tables)} tables under {', '.join(str(r) for r in warehouse_roots(workspace))}")
    for column in ("dataset", "format", "location", "columns", "write mode", "retention", "notes"):
        table.add_column(column)
    for found in tables:
        notes = [*found.refs, *found.features, *(f"problem: {p}" for p in found.problems)]
        if found.shallow_clone_of is not None:
            notes.insert(0, f"shallow clone of {found.shallow_clone_of}")
        if found.format_version:
            notes.insert(0, f"format v{found.format_version}")
        table.add_row(Text(found.table or found.name), found.format.value, Text(str(found.location)),
                      Text(", ".join(found.columns)), found.write_mode.value if found.write_mode else "",
                      Text(_retention_text(found.retention)), Text("; ".join(notes)))
    for view, columns in sorted(discovery.views.items()):
        table.add_row(Text(view), "view", "", Text(", ".join(columns)), "", "", "kept by the Spark catalog")
    console.print(table)
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


def _discovered_json(found) -> dict:
    return {"dataset": found.name, "format": found.format.value,
            "location": str(found.location), "table": found.table, "columns": list(found.columns),
            "write_mode": found.write_mode.value if found.write_mode else None,
            "retention": {k: setting_text(v) for k, v in found.retention.items()},
            "format_version": found.format_version, "refs": list(found.refs),
            "shallow_clone_of": str(found.shallow_clone_of) if found.shallow_clone_of else None,
            "partition_columns": list(found.partition_columns), "features": list(found.features),
            "problems": list(found.problems)}


def _retention_text(retention: dict) -> str:
    return ", ".join(f"{k}: {setting_text(v)}" for k, v in retention.items())


@catalog_group.command("classify")
@click.option("--sample", type=click.IntRange(min=0), default=50, show_default=True,
              help="Rows read per table for the value validators, spread over its files and row groups when "
              "the table has more (0: names and lineage only; classify.min_values: non-null values a column needs).")
@click.option("--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
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
    workspace = _workspace(ctx)
    result = classify_catalog(workspace, sample)
    if write:
        _write_discovered(workspace, classification=result)
    if output == "json":
        click.echo(json.dumps({"columns": [v.to_json() for v in result.verdicts], "problems": result.problems,
                               "lineage_checked": result.lineage_checked}, indent=2))
        return
    table = Table(title="personal data columns (a proposal: confirm before relying on it)")
    for column in ("dataset", "column", "kind", "confidence", "valid/sampled", "reasons"):
        table.add_column(column)
    for verdict in result.verdicts:
        if verdict.kind:
            counts = f"{verdict.valid}/{verdict.sampled}" if verdict.valid is not None and verdict.sampled else ""
            table.add_row(Text(verdict.dataset), Text(verdict.shown), Text(verdict.words or ""),
                          f"{verdict.confidence:.2f}", counts, Text("; ".join(verdict.reasons)))
    console.print(table)
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
@click.pass_context
def catalog_check(ctx: click.Context) -> None:
    """Compare the workspace's catalog with the lakehouse: a column that no longer exists or is not
    listed, a format, write mode or retention that differs, a table that disappeared, a new table
    not in the catalog. Exit 1 on drift; 0 when they agree (overrides the catalog makes on purpose
    are listed, not counted)."""
    workspace = _workspace(ctx)
    discovery = discover_catalog(workspace)
    for root, why in sorted(discovery.unreadable_roots.items()):
        err_console.print(f"{root}: not checked: {why}", highlight=False, markup=False)
    differences = catalog_drift(workspace, discovery.tables)
    drift = [d for d in differences if d.drift]
    if differences:
        table = Table(title="catalog vs lakehouse")
        for column in ("dataset", "field", "catalog", "lakehouse", ""):
            table.add_column(column)
        for d in differences:
            table.add_row(Text(d.dataset), Text(d.field), Text(d.catalog), Text(d.lakehouse),
                          "drift" if d.drift else "override")
        console.print(table)
    overrides = len(differences) - len(drift)
    console.print(f"{len(drift)} difference(s) of drift, {overrides} override(s)" if differences
                  else "the catalog agrees with the lakehouse", highlight=False)
    sys.exit(EXIT_FOUND if drift else EXIT_OK)


@cli.group("requests", invoke_without_command=True)
@click.option("--state", "state", type=click.Choice([s.value for s in RequestState]), help="Only requests in this state.")
@click.option("--overdue", is_flag=True, help="Only requests past their deadline and not yet proven erased.")
@click.option("--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.pass_context
def requests_group(ctx: click.Context, state: str | None, overdue: bool, output: str) -> None:
    """The request queue: every erasure request, its deadline and state (queued, planned, executing,
    executed, awaiting_attestation, verified, watching, closed). Without a subcommand: the board."""
    if ctx.invoked_subcommand is not None:
        return
    workspace = _workspace(ctx)
    now = datetime.now(timezone.utc)
    with request_store(workspace) as store:
        shown = [r for r in store.all() if (state is None or r.state.value == state) and (not overdue or r.overdue(now))]
    if output == "json":
        click.echo(json.dumps([{**r.model_dump(mode="json"), "overdue": r.overdue(now), "days_left": r.days_left(now)}
                               for r in shown], indent=2))
        return
    table = Table(title=f"requests ({len(shown)})")
    tables.name_column(table, "request", [r.request_id for r in shown])
    for name in ("received", "deadline"):
        tables.name_column(table, name, ["0000-00-00"])
    tables.name_column(table, "days left", [], justify="right")
    tables.name_column(table, "subjects", [], justify="right")
    tables.name_column(table, "state", [r.state.value for r in shown] + ["awaiting_attestation"])
    tables.text_column(table, "last action")
    for r in shown:
        flag = " OVERDUE" if r.overdue(now) else ""
        table.add_row(r.request_id, f"{r.received_at:%Y-%m-%d}", f"{r.deadline_at:%Y-%m-%d}", f"{r.days_left(now)}{flag}",
                      str(r.subjects), r.state.value, f"{r.last_action} ({r.last_action_at:%Y-%m-%d %H:%M})")
    console.print(table)


@requests_group.command("add")
@click.option("--source", "sources", multiple=True, required=True, metavar="DATASET.COLUMN",
              help="A source column holding the subject key (repeatable).")
@click.option("--subject", "subject_values", multiple=True, metavar="VALUE", help="A subject's key value (repeatable).")
@click.option("--requests", "requests_file", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
              help="A .csv or .jsonl file of requests (value, request_id, received_at); - reads JSONL from stdin.")
@click.option("--request-id", help="Request id of --subject values (and default of the file).")
@click.option("--received-at", type=click.DateTime(["%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d"]),
              help="When the request(s) arrived (default: now, UTC). The deadline runs from here.")
@_AUDIT_OPTION
@_MASTER_OPTION
@click.pass_context
def requests_add(ctx, sources, subject_values, requests_file, request_id, received_at, audit_key_file, master_key_file) -> None:
    """Queue one request, or a file of them: values parsed strictly as for plan, stored encrypted
    under each request's own data key, every request recorded in the audit log."""
    if bool(subject_values) == bool(requests_file):
        raise click.UsageError("give either --subject VALUE (repeatable) or --requests FILE")
    labels, subjects = _labelled_subjects(subject_values, requests_file, request_id, _aware(received_at), "req",
                                          stdin=True)
    workspace = _workspace(ctx)
    key = load_audit_key(key_file=audit_key_file, option="--audit-key-file")
    master = load_master_key(master_key_file)
    with request_store(workspace, master) as store, audit_log(workspace, key=key) as log:
        added = add_requests(workspace, store, log, sources, subjects, labels)
    for request in added:
        click.echo(f"queued {request.request_id}: {request.subjects} subject(s), deadline {request.deadline_at:%Y-%m-%d}")


@requests_group.command("close")
@click.argument("request_id")
@click.option("--now", "now_reason", metavar="REASON", help="Close before the watching period is over, saying why.")
@_AUDIT_OPTION
@_MASTER_OPTION
@click.pass_context
def requests_close(ctx, request_id: str, now_reason: str | None, audit_key_file, master_key_file) -> None:
    """Close a request: crypto-shred piitracer's own copies of the person (the data key destroyed,
    the journal's resolved values deleted), recorded in the audit log. Refused unless it is
    verified complete (every person step attested) and watched."""
    workspace = _workspace(ctx)
    key = load_audit_key(key_file=audit_key_file, option="--audit-key-file")
    master = load_master_key(master_key_file)
    with request_store(workspace, master) as store, audit_log(workspace, key=key) as log:
        fingerprint = close_request(workspace, store, log, request_id, now_reason)
    click.echo(f"closed {request_id}: data key {fingerprint} destroyed; piitracer keeps no value of its subjects")


@requests_group.command("reverify")
@click.option("--sweep", type=click.Choice(["catalog", "roots", "none"]), default="catalog", show_default=True)
@_AUDIT_OPTION
@_MASTER_OPTION
@click.pass_context
def requests_reverify(ctx, sweep: str, audit_key_file, master_key_file) -> None:
    """Verify again every watching request (and sweep beyond its plan): rows resurrected by a late
    pipeline run, a compaction that dropped delete files or a restore move it back to executed.
    Exit 1 when any request had subject data again."""
    workspace = _workspace(ctx)
    key = load_audit_key(key_file=audit_key_file, option="--audit-key-file")
    master = load_master_key(master_key_file)
    with request_store(workspace, master) as store, audit_log(workspace, key=key) as log:
        results = reverify_requests(workspace, store, log, None if sweep == "none" else sweep)
    for request_id, complete in results:
        click.echo(f"{request_id}: {'still erased' if complete else 'subject data found again: back to executed'}")
    if not results:
        click.echo("no request is being watched")
    sys.exit(EXIT_OK if all(complete for _, complete in results) else EXIT_FOUND)


@requests_group.command("keygen")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
def requests_keygen(path: Path) -> None:
    """Write a new random master key (mode 0600). Keep it outside the workspace; lose it and every
    open request's values are unreadable."""
    from piitracer.crypto.envelope import write_master_key

    key = write_master_key(path)
    click.echo(f"wrote a master key to {path} (fingerprint {key.fingerprint}); set PIITRACER_MASTER_KEY_FILE={path}")


@cli.group("batch")
def batch_group() -> None:
    """Batch windows: plan the queued requests that are due, within a budget."""


@batch_group.command("plan")
@click.option("--due-within", "due_within", type=click.IntRange(min=0), metavar="DAYS",
              help="Plan the queued requests whose deadline falls within DAYS from now.")
@click.option("--all-open", is_flag=True, help="Plan every queued request, whatever its deadline.")
@click.option("--source", "sources", multiple=True, metavar="DATASET.COLUMN",
              help="Only requests for this source column (needed when the due requests name different ones).")
@click.option("--budget", type=click.FloatRange(min=0), metavar="AMOUNT",
              help="The most this batch may cost (in pricing.currency): over it, exit 1 and nothing is written.")
@click.option("--over-budget", type=click.Choice(["OK"]), help="Write the plan even when the estimate is over --budget.")
@click.option("-o", "--out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Write the batch's plan here (mode 0600, values encrypted).")
@click.option("--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@_AUDIT_OPTION
@_MASTER_OPTION
@click.pass_context
def batch_plan_command(ctx, due_within: int | None, all_open: bool, sources, budget: float | None, over_budget: str | None,
                       out: Path, output: str, audit_key_file, master_key_file) -> None:
    """Plan the due queued requests as one batch (one pass per table) and estimate it from table
    metadata and statistics: files and bytes to rewrite per step, archive objects, cost (the
    workspace's pricing) and run time (throughput measured on this lakehouse). Requests left out but
    due before the next window are flagged 'cannot wait'. Exit 0 planned (or nothing due); 1 over
    --budget (nothing written) unless --over-budget OK; 2 error."""
    if (due_within is None) == (not all_open):
        raise click.UsageError("give either --due-within DAYS or --all-open")
    workspace = _workspace(ctx)
    key = load_audit_key(key_file=audit_key_file, option="--audit-key-file")
    master = load_master_key(master_key_file)
    with request_store(workspace, master) as store:
        chosen = batch_plan(workspace, store, timedelta(days=due_within) if due_within is not None else None, sources)
        estimate = chosen.estimate
        over = budget is not None and estimate is not None and estimate.cost > budget
        written = chosen.plan is not None and not (over and over_budget != "OK")
        if written:
            plan = seal_plan(chosen.plan, key)
            with audit_log(workspace, key=key) as log:
                register_plan_requests(workspace, store, log, plan, "planned (batch)")
                record_plan(log, plan)
                record_estimate_entry(log, plan, estimate.as_dict())
            write_private(out, plan_file_text(plan, store.cipher(plan_requests(plan))))
    if output == "json":
        click.echo(json.dumps({
            "plan_file": str(out) if written else None, "requests": [r.request_id for r in chosen.requests],
            "cannot_wait": [{"request_id": r.request_id, "deadline_at": r.deadline_at.isoformat()} for r in chosen.cannot_wait],
            "estimate": estimate.as_dict() if estimate else None, "budget": budget, "over_budget": over}, indent=2))
    else:
        _print_batch(chosen, budget, over, out if written else None)
    sys.exit(EXIT_FOUND if over and over_budget != "OK" else EXIT_OK)


def _print_batch(chosen, budget: float | None, over: bool, out: Path | None) -> None:
    for request in chosen.cannot_wait:
        console.print(f"[yellow]cannot wait[/]: request {request.request_id} is due {request.deadline_at:%Y-%m-%d}, before "
                      "the next window; plan it now (--due-within a longer window, or plan it alone)", highlight=False)
    if chosen.plan is None:
        console.print("no queued request is due within the window: nothing planned", highlight=False)
        return
    estimate = chosen.estimate
    table = Table(title=f"batch of {len(chosen.requests)} request(s): estimate from table metadata")
    tables.name_column(table, "step", [s.step_id for s in estimate.steps])
    tables.name_column(table, "dataset", [s.dataset for s in estimate.steps])
    tables.name_column(table, "action", [s.action for s in estimate.steps])
    for name in ("files", "bytes", f"cost ({estimate.currency})"):
        tables.name_column(table, name, [], justify="right")
    tables.text_column(table, "basis")
    for step in estimate.steps:
        table.add_row(step.step_id, step.dataset, step.action, f"{step.files:,}", f"{step.bytes:,}", f"{step.cost:,.2f}",
                      step.basis + (f"; restore delay {step.delay}" if step.delay else ""))
    console.print(table)
    seconds = estimate.seconds
    timing = (f"about {seconds:,.0f} s at {estimate.throughput:,.0f} bytes/s measured here" if seconds is not None
              else "run time unknown: no rewrite measured on this lakehouse yet")
    console.print(f"total: {estimate.files:,} files, {estimate.bytes:,} bytes, {estimate.cost:,.2f} {estimate.currency}; "
                  f"{timing}", highlight=False)
    if over:
        console.print(f"[red]over budget[/]: {estimate.cost:,.2f} > {budget:,.2f} {estimate.currency}; top costs: " + ", ".join(
            f"{s.step_id} {s.dataset} {s.cost:,.2f}" for s in estimate.top_costs(3)), highlight=False)
    if out is not None:
        console.print(f"wrote {out}: requests {', '.join(r.request_id for r in chosen.requests)} planned", highlight=False)
    else:
        console.print("nothing written (--over-budget OK writes it anyway)", highlight=False)


@cli.group()
@click.option("--audit-key-file", type=click.Path(dir_okay=False, path_type=Path),
              help="File holding the audit key (default: $PIITRACER_AUDIT_KEY, then $PIITRACER_AUDIT_KEY_FILE).")
@click.pass_context
def audit(ctx: click.Context, audit_key_file: Path | None) -> None:
    """The tamper-evident audit trail: verify it, report on a request."""
    ctx.obj["audit_key_file"] = audit_key_file


def _audit_log(ctx: click.Context):
    workspace = _workspace(ctx)
    return workspace, audit_log(workspace, key_file=ctx.obj.get("audit_key_file"), create=False)


@audit.command("verify")
@click.option("--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--expect-head", metavar="HASH", help="An entry hash noted earlier (e.g. the head an auditor was "
              "given; at least 16 hex digits): the log must still hold that entry.")
@click.pass_context
def audit_verify(ctx: click.Context, output: str, expect_head: str | None) -> None:
    """Recompute the chain, hashes, seals, sequence and Merkle roots; check the log's structure, its
    anchor (audit.anchor), --expect-head and the journal (every executed plan recorded). Exit 0
    intact, 1 tampered (the first problem is named), 2 error (no key, unreadable log)."""
    workspace, log = _audit_log(ctx)
    with log:
        result = verify_audit(log, workspace, expect_head=expect_head)
    if output == "json":
        click.echo(json.dumps({"ok": result.ok, "entries": result.entries, "head_hash": result.head_hash,
                               "bad_entry": result.problem.seq if result.problem else None,
                               "problem": str(result.problem) if result.problem else None,
                               "checks": list(result.checks)}, indent=2))
    elif result.ok:
        click.echo(f"audit log intact: {result.entries} entries, head {result.head_hash}")
        for check in result.checks:
            click.echo(f"  {check}")
        if log.anchor is None:
            click.echo("  no audit.anchor configured: a log emptied together with the journal is only detected with "
                       "--expect-head")
    else:
        click.echo(f"audit log TAMPERED: {result.problem}", err=True)
    sys.exit(EXIT_OK if result.ok else EXIT_FOUND)


@audit.command("report")
@click.option("--request", "request_id", required=True, metavar="ID", help="The request to report on.")
@click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path), help="Write here instead of stdout.")
@click.option("--format", "fmt", type=click.Choice(["html", "md"]), default="html", show_default=True)
@click.pass_context
def audit_report_command(ctx: click.Context, request_id: str, out: Path | None, fmt: str) -> None:
    """The audit report of one request, from the audit log (and the workspace's lineage)."""
    workspace, log = _audit_log(ctx)
    with log:
        text = audit_report(workspace, log, request_id, fmt)
    if out is None:
        click.echo(text, nl=False)
    else:
        out.write_text(text, encoding="utf-8")
        err_console.print(f"wrote {out}", highlight=False)


@audit.command("keygen")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
def audit_keygen(path: Path, output: str) -> None:
    """Make an Ed25519 signing key for certificates: the private key at PATH (mode 0600; keep it
    like the audit key, never overwritten) and the public key at PATH.pub (give it to auditors)."""
    from piitracer.crypto.envelope import missing_folder
    from piitracer.crypto.signing import SigningKeyError, generate_signing_key

    if not path.parent.is_dir():  # not made here: where a secret lives, and who may list it, is the owner's choice
        raise SigningKeyError(missing_folder(path))
    public_path, fingerprint = generate_signing_key(path)
    if output == "json":
        click.echo(json.dumps({"signing_key": str(path), "public_key": str(public_path), "fingerprint": fingerprint}))
    else:
        click.echo(f"wrote the signing key {path} (0600) and its public key {public_path}; fingerprint {fingerprint}")


@audit.command("certificate")
@click.option("--request", "request_id", required=True, metavar="ID", help="The request to certify.")
@click.option("--signing-key", type=click.Path(dir_okay=False, path_type=Path),
              help="Ed25519 private key (PEM; default: $PIITRACER_SIGNING_KEY_FILE; make one with `audit keygen`).")
@click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path), help="Write the certificate here.")
@click.option("--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.pass_context
def audit_certificate(ctx: click.Context, request_id: str, signing_key: Path | None, out: Path | None, output: str) -> None:
    """A signed erasure certificate of one request: its HMAC'd subjects, each dataset's final state
    with its evidence counts, the attestations, the close (shred time), the Merkle root and chain
    head. Exit 0 written; 1 not certifiable (log not intact, latest verification not complete);
    2 error (no key, unknown request)."""
    from piitracer.crypto.signing import load_signing_key
    from piitracer.render.certificate import NotCertifiable, certificate_text

    key = load_signing_key(signing_key)
    workspace, log = _audit_log(ctx)
    try:
        with log:
            document = erasure_certificate(workspace, log, request_id, key)
    except NotCertifiable as error:
        click.echo(f"not certified: {error}", err=True)
        sys.exit(EXIT_FOUND)
    text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if out is not None:
        out.write_text(text, encoding="utf-8")
    if output == "json" and out is None:
        click.echo(text, nl=False)
    elif output == "json":
        click.echo(json.dumps({"certificate": str(out), "request_id": request_id}))
    else:
        click.echo(certificate_text(document))
        if out is not None:
            click.echo(f"wrote {out}; check it with: piitracer audit check-certificate {out} --public-key KEY.pub")


@audit.command("check-certificate")
@click.argument("certificate", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--public-key", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The signer's Ed25519 public key (PEM), e.g. the .pub file `audit keygen` wrote.")
@click.option("--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
def audit_check_certificate(certificate: Path, public_key: Path, output: str) -> None:
    """Check a certificate's signature with the signer's public key (no audit key, no workspace
    needed). Exit 0 valid; 1 changed since signing or signed by another key; 2 unreadable file or key."""
    from piitracer.render.certificate import certificate_text

    document, problem = check_certificate(certificate, public_key)
    if output == "json":
        click.echo(json.dumps({"valid": problem is None, "problem": problem,
                               "request_id": (document or {}).get("certificate", {}).get("request_id")
                               if isinstance(document, dict) and isinstance(document.get("certificate"), dict) else None}))
    elif problem is None:
        click.echo("certificate valid: signed by this key and unchanged\n" + certificate_text(document))
    else:
        click.echo(f"certificate NOT valid: {problem}", err=True)
    sys.exit(EXIT_OK if problem is None else EXIT_FOUND)


@cli.command("verify")
@click.argument("plan_file", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--sweep", type=click.Choice(["catalog", "roots"]), is_flag=False, flag_value="catalog", default=None,
              help="Also decode what the plan does not reach: every other catalogued dataset (catalog, the default of a "
              "bare --sweep) and every file under warehouse_roots (roots); a subject found there is 'unplanned'.")
@click.option("--audit-key-file", type=click.Path(dir_okay=False, path_type=Path),
              help="File holding the audit key (default: $PIITRACER_AUDIT_KEY, then $PIITRACER_AUDIT_KEY_FILE).")
@click.option("--no-record", is_flag=True, help="Do not append the result to the audit trail (a read-only check; "
              "no audit key needed, but then attestations cannot be read and person steps stay awaiting attestation).")
@click.option("--master-key-file", type=click.Path(dir_okay=False, path_type=Path),
              help="The master key (default: $PIITRACER_MASTER_KEY_FILE, then $PIITRACER_MASTER_KEY): opens the "
              "plan's and the journal's values.")
@click.option("--engine", type=click.Choice([e.value for e in TaskEngine]), default=None,
              help="Where files are decoded: in this process (driver), as Spark tasks on spark.master (spark), or by "
              "the plan's file count and size (auto; default: the workspace's verify.engine).")
@click.option("--explain", "explain", metavar="DATASET", default=None,
              help="List the Parquet column chunks of DATASET that had to be decoded, and why (never a value).")
@click.pass_context
def verify_command(ctx, plan_file: Path, output: str, sweep: str | None, audit_key_file: Path | None, no_record: bool,
                   master_key_file: Path | None, engine: str | None, explain: str | None) -> None:
    """Prove the erasure: decode every file under each dataset and read back every retained
    snapshot/version, and record the result in the audit trail. Exit 0 only when every dataset is
    erased, attested or needs no action; 1 when any is found, pending, unplanned or awaiting
    attestation; 2 on error. Never prints a subject value."""
    workspace = _workspace(ctx)
    # No key, no record: stop before the scan. A read-only check may go without one.
    key = _optional_audit_key(audit_key_file) if no_record else load_audit_key(key_file=audit_key_file, option="--audit-key-file")
    # The master key is loaded when a sealed value must be opened (a plan and journal the CLI wrote).
    master = load_master_key(master_key_file) if master_key_file or has_master_key() else None
    with request_store(workspace, master) as store:
        plan = load_plan(plan_file, store.cipher)
        if explain is not None and explain not in {d.dataset for d in plan.datasets}:
            raise PlanningError(f"--explain {explain}: not a dataset of plan {plan.plan_id[:16]} (expected one of: "
                                + ", ".join(d.dataset for d in plan.datasets) + ")")
        closed = [r for r in plan_requests(plan) if store.has(r) and store.get(r).state is RequestState.CLOSED]
        attested = recorded_attestations(workspace, key, plan) if key is not None else {}
        report = verify_plan(workspace, plan, attested=attested, sweep=sweep, cipher=store.cipher(plan_requests(plan)),
                             skip_requests=closed, engine=TaskEngine(engine) if engine else None,
                             explain=(explain,) if explain else ())
        if not no_record:
            with audit_log(workspace, key=key) as log:
                record_verification(log, plan, report)
                if all(store.has(r) for r in plan_requests(plan)):
                    settle_after_verify(store, log, plan, report, workspace.config.policy.watch)
    for request_id in closed:
        err_console.print(f"request {request_id} is closed: its values were shredded at close; the certificate is its "
                          "proof (the other requests of the plan were verified)", highlight=False)
    if output == "json":
        click.echo(report.model_dump_json(indent=2))
    else:
        console.print(verification_table(report))
        for item in report.datasets:
            for finding in item.findings:
                place = finding.file or "(logical)"
                console.print(f"  {item.dataset}: {place}: {finding.where} [{finding.kind}] holds {finding.value_set}",
                              highlight=False, markup=False)
        done = len(report.datasets) - len(report.open_items())
        swept = f"; swept {len(report.swept)} more dataset(s)/folder(s), {report.swept_files} files" if report.sweep else ""
        if any(d.column_chunks_proven or d.column_chunks_decoded for d in report.datasets):
            console.print(chunk_summary(report), highlight=False)
        if explain:
            item = report.result(explain)
            listed = "" if len(item.decoded_chunks) == item.chunk_proofs.decoded else f" (the first {len(item.decoded_chunks):,} listed)"
            console.print(f"{explain}: {item.chunk_proofs.decoded:,} Parquet column chunk(s) decoded{listed}", highlight=False)
            for chunk in item.decoded_chunks:
                console.print(f"  {chunk.file} row group {chunk.row_group} column {chunk.column}: {chunk.why}",
                              highlight=False, markup=False)
        verdict = ("complete: no subject data found, every person's step attested" if report.complete else
                   "not complete: " + ", ".join(f"{n} {state}" for state, n in
                                                sorted(Counter(d.state.value for d in report.open_items()).items())))
        console.print(f"{done} of {len(report.datasets)} datasets done{swept}; {verdict}", highlight=False)
    sys.exit(EXIT_OK if report.complete else EXIT_FOUND)


def chunk_summary(report: VerificationReport) -> str:
    """One line: how the Parquet column chunks of every dataset were proven or decoded, and bytes read."""
    methods = ("dictionary", "statistics", "page_index", "bloom", "type")
    counts = {m: sum(getattr(d.chunk_proofs, m) for d in report.datasets) for m in (*methods, "decoded")}
    read, total = (sum(d.chunk_proofs.bytes_read for d in report.datasets),
                   sum(d.chunk_proofs.bytes_total for d in report.datasets))
    how = ", ".join(f"{m.replace('_', ' ')} {counts[m]:,}" for m in methods if counts[m])
    proven = sum(counts[m] for m in methods)
    return (f"Parquet column chunks: {counts['decoded']:,} decoded, {proven:,} proven without decoding"
            + (f" ({how})" if how else "") + f"; read {read:,} of {total:,} bytes")


STATE_STYLE = {ErasureState.ERASED: "green", ErasureState.ATTESTED: "green", ErasureState.NO_ACTION: "dim",
               ErasureState.PENDING: "yellow", ErasureState.AWAITING_ATTESTATION: "yellow", ErasureState.FOUND: "red",
               ErasureState.UNPLANNED: "red", ErasureState.NOT_CHECKED: "red"}


def verification_table(report: VerificationReport) -> Table:
    """One row per dataset: state, files scanned, snapshots checked, findings, pending-until/reason."""
    table = Table(title=f"verification of plan {report.plan_id[:12]} at {report.checked_at:%Y-%m-%d %H:%M:%S} UTC")
    tables.name_column(table, "dataset", [d.dataset for d in report.datasets])
    tables.name_column(table, "state", [d.state.value for d in report.datasets])
    for name in ("files", "snapshots", "findings"):
        tables.name_column(table, name, [], justify="right")
    tables.text_column(table, "pending until / reason")
    for item in report.datasets:
        detail = item.pending_until or item.reason or ""
        if item.notes:
            detail = (detail + "; " if detail else "") + "; ".join(item.notes)
        table.add_row(Text(item.dataset), Text(item.state.value, style=STATE_STYLE[item.state]), str(item.files_scanned),
                      str(item.snapshots_checked), str(len(item.findings)), Text(detail))
    return table


@cli.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on (0.0.0.0: every interface; "
              "any address but loopback needs a token).")
@click.option("--port", default=5000, show_default=True, type=click.IntRange(1, 65535), help="TCP port.")
@click.option("--token-file", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="File holding the bearer token producers must send (Authorization: Bearer ...); "
                   "default: PIITRACER_LINEAGE_TOKEN; required unless --host is a loopback address.")
@click.option("--master-key-file", type=click.Path(dir_okay=False, path_type=Path),
              help="The master key that seals rejected bodies (default: $PIITRACER_MASTER_KEY_FILE, then "
                   "$PIITRACER_MASTER_KEY); without one only a rejected body's SHA-256 is kept.")
@click.option("--rejected-retention-days", default=30, show_default=True, type=click.IntRange(min=1),
              help="Days a rejected record is kept; older ones are deleted at start and on a later receive.")
@click.pass_context
def serve(ctx: click.Context, host: str, port: int, token_file: Path | None, master_key_file: Path | None,
          rejected_retention_days: int) -> None:
    """Receive OpenLineage events over HTTP (POST /api/v1/lineage, as Marquez does) into the
    workspace's lineage store (.piitracer/lineage/events.jsonl), which every later command reads.
    A malformed event is answered 400 with its defects and kept in .piitracer/lineage/rejected/
    (its body encrypted under the master key, else only its digest); a body over 16 MiB, sent or
    inflated, is answered 413."""
    import os
    from datetime import timedelta

    import uvicorn

    from piitracer.crypto.sealed_body import BodySealer
    from piitracer.serve.app import create_app, is_loopback

    workspace = _workspace(ctx)
    token = token_file.read_text(encoding="utf-8").strip() if token_file else os.environ.get("PIITRACER_LINEAGE_TOKEN")
    if token_file and not token:
        raise PlanningError(f"--token-file {token_file}: the file is empty (expected the bearer token)")
    if not token and not is_loopback(host):
        raise PlanningError(f"--host {host} is reachable from other machines: give producers a token with --token-file "
                            "FILE (or $PIITRACER_LINEAGE_TOKEN), or listen on 127.0.0.1")
    master = load_master_key(master_key_file) if master_key_file or has_master_key() else None
    err_console.print(f"piitracer: receiving OpenLineage events on http://{host}:{port}/api/v1/lineage into "
                      f"{workspace.root / '.piitracer' / 'lineage'}" + (" (bearer token required)" if token else "")
                      + ("; rejected bodies sealed under the master key" if master else
                         "; no master key: only a rejected body's SHA-256 is kept"), highlight=False)
    app = create_app(workspace.root, token, cipher=BodySealer(master) if master else None,
                     retention=timedelta(days=rejected_retention_days))
    uvicorn.run(app, host=host, port=port, log_level="warning")


@cli.command("demo")
@click.option("--dir", "folder", type=click.Path(file_okay=False, path_type=Path), default=Path("demo"), show_default=True,
              help="Demo workspace folder (the fixture workspace is copied there once).")
@click.option("--subjects", type=click.IntRange(min=1), help="Erase N random users that have rows, as one batch (default: user 8841302).")
@click.option("--rows", type=click.IntRange(min=100), help="Payments to generate when building (default 100,000).")
@click.option("--rebuild", is_flag=True, help="Delete the demo lakehouse and build it again.")
@click.option("--no-attest", is_flag=True, help="Stop after the first verification, leaving the person steps open "
              "(attest them yourself with piitracer attest, then piitracer verify).")
@click.option("--no-close", is_flag=True, help="Leave the request open at the end (verified, watching) instead of "
              "closing it: its values stay (encrypted) so you can explore and verify again.")
def demo_command(folder: Path, subjects: int | None, rows: int | None, rebuild: bool, no_attest: bool,
                 no_close: bool) -> None:
    """Build the demo lakehouse (once), plan and execute the erasure of a user, verify, attest the
    person steps as their simulated owners, verify again, close the request (piitracer's own copies
    of the person shredded) and write the signed certificate; print what it took."""
    result = run_demo(folder, subjects=subjects, rows=rows, rebuild=rebuild, attest=not no_attest, close=not no_close,
                      progress=lambda line: err_console.print(line, highlight=False, markup=False))
    console.print(demo_summary(result))
    sys.exit(EXIT_OK if result.verification is not None and result.verification.complete else EXIT_FOUND)


def demo_summary(result: DemoResult) -> Table:
    """Datasets erased, rows removed, files rewritten, bytes removed, time per phase, the files written."""
    totals = result.totals()
    build = result.build
    if result.verification is not None and result.verification.complete:
        status = "complete (verified" + (", closed)" if result.closed else ")")
    else:
        status = result.run.status if result.run else "not executed"
    table = Table(title=f"piitracer demo: {status}", show_header=False)
    table.add_row("lakehouse", f"{'reused' if build.reused else 'built'}: {build.rows:,} payments up to {build.anchor}")
    table.add_row("subjects", f"{result.subjects} ({result.subject_rows} source rows before the erasure)")
    if result.subject_rows == 0:
        table.add_row("", "[yellow]already erased in this lakehouse: use --rebuild or --subjects N[/]")
    table.add_row("datasets erased", str(totals["datasets_erased"]))
    table.add_row("rows removed", f"{totals['rows_deleted']:,}")
    table.add_row("files rewritten / removed", f"{totals['files_rewritten']:,} / {totals['files_removed']:,}")
    table.add_row("bytes removed", f"{totals['bytes_removed']:,}")
    if result.run is not None and result.run.awaiting():
        table.add_row("after execute", f"{result.run.status}: {len(result.run.awaiting())} step(s) awaiting attestation: "
                      + ", ".join(f"{r.step.id} {r.step.action.value} {r.step.dataset}" for r in result.run.awaiting()))
    if result.first_verification is not None and result.first_verification is not result.verification:
        table.add_row("first verification", "not complete: verify exits 1 while person steps are open")
    if result.attestations:
        table.add_row("attested (simulated)", ", ".join(f"{e.body['step_id']} by {e.body['attested_by']}"
                                                        for e in result.attestations))
    if result.verification is not None:
        states = Counter(d.state.value for d in result.verification.datasets)
        verdict = ("[green]complete: no subject data found, every person step attested[/]" if result.verification.complete
                   else "[red]not complete: subject data found, pending or awaiting attestation[/]")
        table.add_row("verification", f"{verdict} ({', '.join(f'{n} {state}' for state, n in sorted(states.items()))})")
    if result.closed:
        table.add_row("closed", f"{', '.join(result.closed)}: data key destroyed, piitracer's own copies shredded")
    elif result.verification is not None and result.verification.complete:
        table.add_row("not closed", "watching (--no-close); PIITRACER_MASTER_KEY_FILE="
                      f"{result.folder / '.piitracer' / 'demo-master.key'} opens the plan for verify")
    if result.audit_intact is not None:
        table.add_row("audit trail", "recorded, chain intact" if result.audit_intact else "[red]chain broken[/]")
    for phase, seconds in result.seconds.items():
        table.add_row(f"time: {phase}", f"{seconds:.1f} s")
    table.add_row("time: total", f"{sum(result.seconds.values()):.1f} s")
    table.add_row("plan", str(result.plan_path))
    table.add_row("lineage diagram", str(result.diagram_path))
    if result.report_path is not None:
        table.add_row("audit report", str(result.report_path))
    if result.certificate_path is not None:
        table.add_row("erasure certificate", f"{result.certificate_path} (check: piitracer audit check-certificate "
                      f"{result.certificate_path} --public-key {result.public_key_path})")
    return table


def summary_table(summary: RunSummary) -> Table:
    """Datasets, rows removed, files rewritten/removed, bytes removed, time."""
    seconds: dict[str, float] = {}
    for result in summary.results:
        seconds[result.step.dataset] = seconds.get(result.step.dataset, 0.0) + result.seconds
    table = Table(title=f"run {summary.run_id[:12]}: {summary.status} in {summary.seconds:.1f} s")
    tables.name_column(table, "dataset", list(summary.by_dataset()))
    for name in ("rows deleted", "files rewritten", "files removed", "bytes removed", "seconds"):
        tables.name_column(table, name, [], justify="right")
    for dataset, totals in summary.by_dataset().items():
        table.add_row(dataset, str(totals["rows_deleted"]), str(totals["files_rewritten"]), str(totals["files_removed"]),
                      f"{totals['bytes_removed']:,}", f"{seconds.get(dataset, 0.0):.1f}")
    return table


def _aware(moment: datetime | None) -> datetime:
    if moment is None:
        return datetime.now(timezone.utc).replace(microsecond=0)
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _labelled_subjects(subject_values, requests_file: Path | None, request_id: str | None, arrived: datetime,
                       id_prefix: str, stdin: bool = False) -> tuple[list[str], list[Subject]]:
    """(labels, subjects) from repeated --subject values or a --requests file (with ``stdin``,
    ``-`` reads JSON lines from standard input). A label names each value's position for errors
    (``--subject #2``, ``batch.csv:7``), never the value; --subject values without --request-id
    share one id made of ``id_prefix`` and the arrival time."""
    if requests_file is not None:
        if stdin and str(requests_file) == "-":
            import tempfile

            with tempfile.TemporaryDirectory() as folder:  # private: the values never sit in a named file
                path = Path(folder) / "stdin.jsonl"
                write_private(path, sys.stdin.read())
                labelled = read_labelled_requests(path, default_request_id=request_id, default_received_at=arrived)
                labelled = [(label.replace(str(path), "<stdin>"), subject) for label, subject in labelled]
        else:
            labelled = read_labelled_requests(requests_file, default_request_id=request_id, default_received_at=arrived)
        return [label for label, _ in labelled], [subject for _, subject in labelled]
    labels = [f"--subject #{number}" for number in range(1, len(subject_values) + 1)]
    default_id = request_id or f"{id_prefix}-{arrived:%Y%m%dT%H%M%S}"
    return labels, [_subject(value, label, default_id, arrived) for value, label in zip(subject_values, labels)]


def _subject(value: str, label: str, request_id: str, received_at: datetime) -> Subject:
    if not value.strip():
        raise PlanningError(f"{label}: a subject value must not be empty")
    return Subject(value=value, request_id=request_id, received_at=received_at)


def _load_plan(workspace, plan_file: Path, master_key_file: Path | None) -> DeletionPlan:
    """A plan file; its sealed values opened with the request store's keys (the master key is
    loaded only when the file holds sealed values)."""
    def cipher_for(request_ids):
        with request_store(workspace, load_master_key(master_key_file)) as store:
            return store.cipher(request_ids)

    return load_plan(plan_file, cipher_for)


def _redacted_json(plan: DeletionPlan) -> str:
    """The plan as JSON for a terminal or a pipe, without -o: subject values replaced (a value must
    not reach a terminal or a CI log); -o writes the executable file, values encrypted."""
    data = json.loads(plan.to_json())
    for number, subject in enumerate(data["subjects"], start=1):
        subject["value"] = f"<redacted subject #{number}>"
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _optional_audit_key(key_file: Path | None):
    """The audit key when one is given or in the environment, else None (planning and dry runs
    work without one); a key that is given but unusable is still an error."""
    import os

    from piitracer.audit.keys import ENV_KEY, ENV_KEY_FILE

    if key_file is None and not os.environ.get(ENV_KEY) and not os.environ.get(ENV_KEY_FILE):
        return None
    return load_audit_key(key_file=key_file, option="--audit-key-file")


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="piitracer")


if __name__ == "__main__":
    main()
