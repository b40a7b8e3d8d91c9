"""``piitracer requests`` and ``batch``: the request queue (board, add, close, reverify, keygen) and
batch windows. Use case: :mod:`piitracer.api.requests` (and :mod:`piitracer.api.verify` for
reverify)."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import click

from piitracer.api import write_private
from piitracer.cli import params
from piitracer.cli.common import EXIT_FOUND, EXIT_OK, aware, echo_json, labelled_subjects, open_session, proven_person
from piitracer.cli.terminal import print_batch, print_board, progress_bars
from piitracer.crypto.envelope import write_master_key
from piitracer.model.requests import RequestState


@click.group("requests", invoke_without_command=True)
@click.option("--state", "state", type=click.Choice([s.value for s in RequestState]), help="Only requests in this state.")
@click.option("--overdue", is_flag=True, help="Only requests past their deadline and not yet proven erased.")
@params.wide
@params.everything
@click.pass_context
def requests_group(ctx: click.Context, state: str | None, overdue: bool, wide: bool, output: str) -> None:
    """The request queue: every erasure request, its deadline and state (queued, planned, executing,
    executed, awaiting_attestation, verified, watching, closed). Without a subcommand: the board."""
    if ctx.invoked_subcommand is not None:
        return
    now = datetime.now(timezone.utc)
    with open_session(ctx) as session:
        shown = session.board(state, overdue, now)
    if output == "json":
        click.echo(json.dumps([{**r.model_dump(mode="json"), "overdue": r.overdue(now), "days_left": r.days_left(now)}
                               for r in shown], indent=2))
        return
    print_board(shown, now, wide)


@requests_group.command("add")
@click.option("--source", "sources", multiple=True, required=True, metavar="DATASET.COLUMN",
              help="A source column holding the subject key (repeatable).")
@click.option("--subject", "subject_values", multiple=True, metavar="VALUE", help="A subject's key value (repeatable).")
@click.option("--requests", "requests_file", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
              help="A .csv or .jsonl file of requests (value, request_id, received_at); - reads JSONL from stdin.")
@click.option("--request-id", help="Request id of --subject values (and default of the file).")
@click.option("--received-at", type=click.DateTime(["%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d"]),
              help="When the request(s) arrived (default: now, UTC). The deadline runs from here.")
@params.output
@params.workspace
@params.keys
@click.pass_context
def requests_add(ctx, sources, subject_values, requests_file, request_id, received_at, output: str) -> None:
    """Queue one request, or a file of them: values parsed strictly as for plan, stored encrypted
    under each request's own data key, every request recorded in the audit log."""
    if bool(subject_values) == bool(requests_file):
        raise click.UsageError("give either --subject VALUE (repeatable) or --requests FILE")
    labels, subjects = labelled_subjects(subject_values, requests_file, request_id, aware(received_at), "req",
                                         stdin=True)
    with open_session(ctx) as session:
        added = session.queue(sources, subjects, labels)
    if output == "json":
        echo_json([r.model_dump(mode="json") for r in added])
        return
    for request in added:
        click.echo(f"queued {request.request_id}: {request.subjects} subject(s), deadline {request.deadline_at:%Y-%m-%d}")


@requests_group.command("close")
@click.argument("request_id")
@click.option("--now", "now_reason", metavar="REASON", help="Close before the watching period is over, saying why.")
@params.output
@params.workspace
@params.keys
@click.pass_context
def requests_close(ctx, request_id: str, now_reason: str | None, output: str) -> None:
    """Close a request: crypto-shred piitracer's own copies of the person (the data key destroyed,
    the journal's resolved values deleted), recorded in the audit log. Refused unless it is
    verified complete (every person step attested) and watched."""
    with open_session(ctx) as session:
        fingerprint = session.close(request_id, now_reason)
    if output == "json":
        echo_json({"request_id": request_id, "state": "closed", "data_key_destroyed": fingerprint})
        return
    click.echo(f"closed {request_id}: data key {fingerprint} destroyed; piitracer keeps no value of its subjects")


@requests_group.command("reverify")
@click.option("--sweep", type=click.Choice(["catalog", "roots", "none"]), default="catalog", show_default=True)
@params.output
@params.workspace
@params.keys
@click.pass_context
def requests_reverify(ctx, sweep: str, output: str) -> None:
    """Verify again every watching request (and sweep beyond its plan): rows resurrected by a late
    pipeline run, a compaction that dropped delete files or a restore move it back to executed.
    Exit 1 when any request had subject data again."""
    with open_session(ctx) as session, progress_bars() as progress:
        results = session.reverify(None if sweep == "none" else sweep, progress=progress)
    if output == "json":
        echo_json([{"request_id": request_id, "still_erased": complete,
                    "state": "watching" if complete else "executed"} for request_id, complete in results])
        sys.exit(EXIT_OK if all(complete for _, complete in results) else EXIT_FOUND)
    for request_id, complete in results:
        click.echo(f"{request_id}: {'still erased' if complete else 'subject data found again: back to executed'}")
    if not results:
        click.echo("no request is being watched")
    sys.exit(EXIT_OK if all(complete for _, complete in results) else EXIT_FOUND)


@requests_group.command("keygen")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@params.output
def requests_keygen(path: Path, output: str) -> None:
    """Write a new random master key (mode 0600). Keep it outside the workspace; lose it and every
    open request's values are unreadable."""
    key = write_master_key(path)
    if output == "json":
        echo_json({"master_key": str(path), "fingerprint": key.fingerprint})
        return
    click.echo(f"wrote a master key to {path} (fingerprint {key.fingerprint}); set PIITRACER_MASTER_KEY_FILE={path}")


@click.group("batch")
@params.everything
def batch_group(output: str) -> None:
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
@click.option("--by", "planned_by", metavar="NAME", help="Who plans: must be the person --token-file proves (recorded, "
              "signed; under policy.approval: required another person approves).")
@params.token_file
@params.output
@params.workspace
@params.keys
@click.pass_context
def batch_plan_command(ctx, due_within: int | None, all_open: bool, sources, budget: float | None, over_budget: str | None,
                       out: Path, planned_by: str | None, token_file: Path | None, output: str) -> None:
    """Plan the due queued requests as one batch (one pass per table) and estimate it from table
    metadata and statistics: files and bytes to rewrite per step, archive objects, cost (the
    workspace's pricing) and run time (throughput measured on this lakehouse). Requests left out but
    due before the next window are flagged 'cannot wait'. Exit 0 planned (or nothing due); 1 over
    --budget (nothing written) unless --over-budget OK; 2 error."""
    if (due_within is None) == (not all_open):
        raise click.UsageError("give either --due-within DAYS or --all-open")
    with open_session(ctx) as session, progress_bars() as progress:
        person = proven_person(session, token_file, planned_by, "plans")
        window = session.batch_window(timedelta(days=due_within) if due_within is not None else None, sources,
                                      progress=progress, budget=budget, over_budget_ok=over_budget == "OK", by=person)
    chosen, over, written = window.chosen, window.over_budget, window.text is not None
    estimate = chosen.estimate
    if written:
        write_private(out, window.text)
    if output == "json":
        click.echo(json.dumps({
            "plan_file": str(out) if written else None, "requests": [r.request_id for r in chosen.requests],
            "cannot_wait": [{"request_id": r.request_id, "deadline_at": r.deadline_at.isoformat()} for r in chosen.cannot_wait],
            "estimate": estimate.as_dict() if estimate else None, "budget": budget, "over_budget": over}, indent=2))
    else:
        print_batch(chosen, budget, over, out if written else None)
    sys.exit(EXIT_FOUND if over and over_budget != "OK" else EXIT_OK)
