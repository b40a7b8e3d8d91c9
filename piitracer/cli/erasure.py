"""``piitracer plan``, ``execute``, ``attest`` and ``verify``: an erasure from its plan to its proof.
Each command parses its options, calls one use case (:mod:`piitracer.api.plan`,
:mod:`~piitracer.api.requests`, :mod:`~piitracer.api.execute`, :mod:`~piitracer.api.verify`) and
prints what it returned."""

from __future__ import annotations

import json
import sys
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

from typing import TYPE_CHECKING

import click

# The use cases by attribute: piitracer.api loads each one's module on first use, so `plan` does not
# import the verifier or the executor's run wiring.
import piitracer.api as api
from piitracer.cli import params, suggest
from piitracer.cli.common import EXIT_FOUND, EXIT_OK, aware, echo_json, labelled_subjects, open_session, proven_person

# What the commands print with (rich, the models, the executor's options) is imported in their
# bodies: `piitracer plan --help` and a usage mistake load click and this module only.
if TYPE_CHECKING:
    from piitracer.executor.runner import StepResult
    from piitracer.model.plan import DeletionPlan

# verify --engine's choices: piitracer.model.settings.TaskEngine's values (a test checks they agree),
# spelled here so that the option is declared without importing the settings model.
ENGINES = ("auto", "driver", "spark")


@click.command("plan")
@click.option("--source", "sources", multiple=True, metavar="DATASET.COLUMN", help="A source column holding the subject key (repeatable).")
@click.option("--subject", "subject_values", multiple=True, metavar="VALUE", help="A subject's key value (repeatable).")
@click.option("--requests", "requests_file", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="A .csv or .jsonl batch of requests (value, request_id, received_at).")
@click.option("--request-id", help="Request id of --subject values (and default of the requests file).")
@click.option("--received-at", type=click.DateTime(["%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d"]),
              help="When the request(s) arrived (default: now, UTC). The deadline runs from here.")
@click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path), help="Write the plan JSON here (mode 0600).")
@click.option("--explain", "explain_dataset", metavar="DATASET", help="Print the lineage path and rule that decided DATASET.")
@click.option("--schema", is_flag=True, help="Print the plan's JSON Schema and exit.")
@click.option("--by", "planned_by", metavar="NAME", help="Who plans: must be the person --token-file proves (recorded, "
              "signed, with -o; under policy.approval: required another person approves).")
@params.token_file
@params.wide
@params.output
@params.workspace
@params.keys
@click.pass_context
def plan_command(ctx, sources, subject_values, requests_file, request_id, received_at, out, explain_dataset, schema,
                 planned_by, token_file, wide, output) -> None:
    """Plan the erasure of one subject or a batch: ordered, per-format steps and deadlines. Every
    subject value is parsed strictly as its source key column's type (a value that is not exactly
    one is refused, exit 2, naming its position, never the value). With -o the plan's requests are
    queued in the request store (planned) and the file holds their values encrypted.

    Keys: with -o (and with --output json), the audit key seals the plan (execute refuses a sealed
    plan that was altered, and an unsealed one without --unsealed) and the master key encrypts its
    subject values. The default output is one line per dataset; --wide adds every step.

    Who plans proves it with their own token (--token-file or $PIITRACER_TOKEN): under
    policy.approval: required a kept plan needs it, and a second person approves it."""
    from piitracer.cli.terminal import err_console, print_plan, redacted_json

    if schema:
        from piitracer.model.plan import DeletionPlan

        click.echo(json.dumps(DeletionPlan.model_json_schema(), indent=2))
        return
    if not sources:
        raise click.UsageError("give at least one --source DATASET.COLUMN")
    if bool(subject_values) == bool(requests_file):
        raise click.UsageError("give either --subject VALUE (repeatable) or --requests FILE")
    labels, subjects = labelled_subjects(subject_values, requests_file, request_id, aware(received_at), "cli")
    with open_session(ctx) as session:
        # With -o, keys first: a plan that would be kept but cannot be recorded or encrypted is refused before work.
        person = proven_person(session, token_file, planned_by, "plans") if out is not None or planned_by else None
        planned = session.plan(sources, subjects, labels, keep=out is not None, by=person)
        explained = api.named_dataset(session.workspace, explain_dataset) if explain_dataset else None
    plan, text = planned.plan, planned.text
    if plan.deadline_at < datetime.now(timezone.utc):
        err_console.print(f"warning: the deadline {plan.deadline_at:%Y-%m-%d %H:%M} UTC has already passed "
                          "(--received-at or the requests' received_at)", highlight=False)
    if out is not None:
        api.write_private(out, text)
        sealed = "sealed" if plan.seal else "NOT sealed (no audit key: execute will need --unsealed)"
        err_console.print(f"wrote {out} (mode 0600; subject values encrypted; {sealed}); requests "
                          f"{', '.join(api.plan_requests(plan))} planned", highlight=False)
    if explained:
        from piitracer.render.plan_text import explain_text

        click.echo(explain_text(plan, explained))
    elif output == "json":
        click.echo(text or redacted_json(plan), nl=False)
    else:
        print_plan(plan, wide)


@click.command("execute")
@click.argument("plan_file", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--dry-run", is_flag=True, help="Print every statement and action, subject values redacted; change nothing.")
@click.option("--resume", is_flag=True, help="Continue a run that stopped; committed steps are not applied again.")
@click.option("--rerun", is_flag=True, help="Run a plan that already ran again, every step (new run; resolve re-reads the "
              "sources): erases the subjects' rows written since, e.g. by a concurrent writer.")
@click.option("--no-concurrent-writers", is_flag=True, help="Promise no other job writes these tables now: allows orphan removal.")
@click.option("--drop-refs", is_flag=True, help="Let release_ref steps drop the Iceberg tags/branches that retain pre-delete snapshots.")
@click.option("--unsealed", is_flag=True, help="Run a plan that carries no seal (it was planned without an audit key); "
              "the audit log records that it was unsealed.")
@params.token_file
@params.output
@params.workspace
@params.keys
@click.pass_context
def execute_command(ctx, plan_file: Path, dry_run: bool, resume: bool, rerun: bool, no_concurrent_writers: bool,
                    drop_refs: bool, unsealed: bool, token_file: Path | None, output: str) -> None:
    """Run a plan on the lakehouse: one Spark session, every dataset touched once, journaled and
    recorded in the audit trail (an audit key and the master key are required before anything
    runs). The plan is checked first — its seal, its shape, every dataset against this workspace's
    catalog, every path its tables name against their catalogued locations — and a refused plan
    writes nothing. The plan's requests move executing -> executed. Who runs it is recorded, signed
    with their own token (--token-file or $PIITRACER_TOKEN): required under policy.approval: required."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from piitracer.cli.terminal import console, err_console, run_json, summary_table
    from piitracer.executor.runner import ExecuteOptions

    options = ExecuteOptions(dry_run=dry_run, resume=resume, rerun=rerun, no_concurrent_writers=no_concurrent_writers,
                             drop_refs=drop_refs, unsealed=unsealed)
    # An erasure nobody can prove afterwards is worth little: no audit key, no run; values are only
    # ever stored encrypted: no master key, no run. A dry run passes exactly the same checks (what
    # it prints is what execute would run), then stops.
    session = open_session(ctx)
    # markup=False: a step's description holds dataset names, printed as they are
    columns = (TextColumn("{task.description}", markup=False), BarColumn(), TextColumn("{task.completed}/{task.total}"),
               TimeElapsedColumn())
    progress = Progress(*columns, console=err_console, transient=False)
    task = None

    def on_start(plan: DeletionPlan) -> None:
        nonlocal task
        progress.start()
        task = progress.add_task("erasing", total=len(plan.steps))

    def on_step(result: StepResult) -> None:
        progress.update(task, advance=1, description=f"{result.step.id} {result.step.action.value} {result.step.dataset}: {result.state}")

    try:
        with session:
            person = proven_person(session, token_file, what="executes")
            summary = session.execute(plan_file, options, on_start=on_start, on_step=on_step, by=person)
    finally:
        if task is not None:  # stopping a progress display that never started still prints a line
            progress.stop()
    if output == "json":
        echo_json(run_json(summary))
        return
    if dry_run:
        for result in summary.results:
            click.echo(f"{result.step.id} {result.step.dataset} {result.step.action.value}: {result.message}")
        return
    console.print(summary_table(summary))
    awaiting = summary.awaiting()
    if summary.status == "complete":
        console.print("complete: every step committed or attested", highlight=False)
    else:
        heading = f"incomplete: {len(awaiting)} step(s) awaiting attestation" if awaiting else "incomplete"
        console.print(heading, style="yellow", highlight=False)
        for result in summary.results:
            if result.state in ("blocked", "pending", "awaiting_attestation"):
                owner = f" (owner {result.step.owner})" if result.step.owner else ""
                console.print(f"  {result.step.id} {result.step.action.value} {result.step.dataset}{owner}: {result.state}: "
                              f"{result.message}", highlight=False, markup=False)
        if awaiting:
            console.print("  when its owner has done the work: "
                          + suggest.command_line("attest", "PLAN", step_id="ID", token_file="OWNER-TOKEN-FILE", evidence="FILE|TEXT"),
                          highlight=False, markup=False)


@click.command("attest")
@click.argument("plan_file", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--step", "step_id", required=True, metavar="ID", help="The manual, manual_review or recompute step done.")
@click.option("--by", "attested_by", metavar="NAME", help="Who confirms it: must be the owner --token-file proves.")
@params.token_file
@click.option("--evidence", metavar="FILE|TEXT", help="A file (its SHA-256 is recorded) or a text (its SHA-256 is "
              "recorded): a ticket, a run log, a statement. Never stored itself: it may hold subject values.")
@params.output
@params.workspace
@params.keys
@click.pass_context
def attest_command(ctx, plan_file: Path, step_id: str, attested_by: str | None, token_file: Path | None,
                   evidence: str | None, output: str) -> None:
    """Record in the audit log that a person did a step piitracer cannot (a Kafka topic erased, a
    masked table rebuilt, an aggregate recomputed): who, when, and the SHA-256 of the evidence.
    The owner proves who they are with their own token (--token-file or $PIITRACER_TOKEN), which
    signs the attestation. verify counts the step's dataset as attested once nothing of the
    subjects is found in it."""
    with open_session(ctx) as session:
        person = proven_person(session, token_file, attested_by, "attests")
        entry = session.attest(plan_file, step_id, person, evidence)
    body = entry.body
    if output == "json":
        click.echo(json.dumps({"seq": entry.seq, "entry_hash": entry.entry_hash, **body}, indent=2))
        return
    shown = f"; evidence {body['evidence_kind']} sha256 {body['evidence_sha256']}" if body["evidence_sha256"] else "; no evidence"
    click.echo(f"attested {body['step_id']} {body['action']} {body['dataset']} by {body['attested_by']} at "
               f"{body['attested_at']}{shown} (audit entry {entry.seq})")


@click.command("verify")
@click.argument("plan_file", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--sweep", type=click.Choice(["catalog", "roots"]), is_flag=False, flag_value="catalog", default=None,
              help="Also decode what the plan does not reach: every other catalogued dataset (catalog, the default of a "
              "bare --sweep) and every file under warehouse_roots (roots); a subject found there is 'unplanned'.")
@click.option("--no-record", is_flag=True, help="Do not append the result to the audit trail (a read-only check; "
              "no audit key needed, but then attestations cannot be read and person steps stay awaiting attestation).")
@click.option("--engine", type=click.Choice(ENGINES), default=None,
              help="Where files are decoded: in this process (driver), as Spark tasks on spark.master (spark), or by "
              "the plan's file count and size (auto; default: the workspace's verify.engine).")
@click.option("--explain", "explain", metavar="DATASET", default=None,
              help="List the Parquet column chunks of DATASET that had to be decoded, and why (never a value).")
@params.wide
@params.output
@params.workspace
@params.keys
@click.pass_context
def verify_command(ctx, plan_file: Path, sweep: str | None, no_record: bool, engine: str | None, explain: str | None,
                   wide: bool, output: str) -> None:
    """Prove the erasure: decode every file under each dataset and read back every retained
    snapshot/version, and record the result in the audit trail. Exit 0 only when every dataset is
    erased, attested or needs no action; 1 when any is found, pending, unplanned or awaiting
    attestation; 2 on error. Never prints a subject value."""
    from piitracer.cli.terminal import chunk_summary, console, err_console, print_verification, progress_bars
    from piitracer.model.settings import TaskEngine

    # No key, no record: the session refuses before the scan. A read-only check may go without one.
    with open_session(ctx) as session, progress_bars() as progress:
        explain = api.named_dataset(session.workspace, explain) if explain else None  # prod.fintech.payments too
        verified = session.verify(plan_file, record=not no_record, sweep=sweep,
                                  engine=TaskEngine(engine) if engine else None, explain=explain, progress=progress)
    report = verified.report
    for request_id in verified.closed:
        err_console.print(f"request {request_id} is closed: its values were shredded at close; the certificate is its "
                          "proof (the other requests of the plan were verified)", highlight=False)
    if output == "json":
        click.echo(report.model_dump_json(indent=2))
    else:
        print_verification(report, wide)
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
            # Which search each column got (verify.scope): value-set names, never a value.
            for column in item.column_search:
                name = "every other column" if column.column == "*" else f"column {column.column}"
                sets = f" of {', '.join(column.value_sets)}" if column.value_sets else ""
                console.print(f"  {name}: searched for {column.search}{sets}", highlight=False, markup=False)
        verdict = ("complete: no subject data found, every person's step attested" if report.complete else
                   "not complete: " + ", ".join(f"{n} {state}" for state, n in
                                                sorted(Counter(d.state.value for d in report.open_items()).items())))
        console.print(f"{done} of {len(report.datasets)} datasets done{swept}; {verdict}", highlight=False)
    sys.exit(EXIT_OK if report.complete else EXIT_FOUND)
