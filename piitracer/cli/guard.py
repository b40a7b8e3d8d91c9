"""``piitracer guard``: erased people stay erased (issue 52). ``scan`` reads the lakehouse against
the suppression list (what changed since the last scan; ``--full``: everything) and opens a request
for anyone who came back; ``export`` writes the list a pipeline's guard reads; ``forget``
destroys records. Use case: :mod:`piitracer.api.guard`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from piitracer.cli import params
from piitracer.cli.common import EXIT_FOUND, EXIT_OK, echo_json, open_session


@click.group("guard")
@params.everything
def guard_group(output: str) -> None:
    """Erased people stay erased: scan the lakehouse against the suppression list, export it for
    pipelines, forget records."""


@guard_group.command("scan")
@click.option("--full", is_flag=True, help="Read every file, not only what changed since the last scan.")
@click.option("--all-columns", is_flag=True, help="Read every column that can hold an identifier, not only the "
              "catalog's identifiers, key columns and the columns their lineage reaches.")
@click.option("--no-new-tables", is_flag=True, help="Do not read tables under the warehouse roots that no catalog "
              "entry names.")
@params.output
@params.workspace
@params.keys
@click.pass_context
def guard_scan(ctx: click.Context, full: bool, all_columns: bool, no_new_tables: bool, output: str) -> None:
    """Check the lakehouse against every erased person on the suppression list. Anyone found again
    gets a new erasure request (linked to the earlier one, recorded in the audit log, on the
    board). Exit 1 when anyone came back or a table could not be read, 0 otherwise."""
    with open_session(ctx) as session:
        scan = session.guard_scan(full=full, all_columns=all_columns, new_tables=not no_new_tables)
    code = EXIT_FOUND if scan.came_back or not scan.complete else EXIT_OK
    if output == "json":
        echo_json(scan.as_dict())
        sys.exit(code)
    if scan.suppressed == 0:
        click.echo("the suppression list is empty: no erased person to look for")
        sys.exit(code)
    read = [t for t in scan.tables if not t.unchanged and not t.problem and not t.absent]
    click.echo(f"{'full' if scan.full else 'incremental'} scan against {scan.people} erased "
               f"request(s) ({scan.suppressed} records): {len(scan.tables)} tables, {len(read)} read "
               f"({sum(len(t.files_read) for t in read)} files, {sum(t.rows_read for t in read)} rows), "
               f"{sum(t.unchanged for t in scan.tables)} unchanged")
    for table in scan.problems:
        click.echo(f"  could not read {table.dataset}: {table.problem}")
    if scan.not_read:
        click.echo(f"  not read ({len(scan.not_read)}): {', '.join(scan.not_read)}: no column the catalog or the lineage "
                   "says can hold an identifier (--all-columns reads them)")
    for back in scan.came_back:
        opened = (f"noted on open request {back.new_request}" if back.new_request and back.why else
                  f"new request {back.new_request}" if back.new_request else f"no new request: {back.why}")
        click.echo(f"CAME BACK: erased under {', '.join(back.earlier_requests)} ({opened})")
        for place in back.places:
            click.echo(f"  {place['dataset']} {place['where']} {place['file']} column {place['column']}")
    if scan.problems:
        click.echo(f"not complete: {len(scan.problems)} table(s) could not be read (exit 1); they are read again next time")
    elif not scan.came_back:
        click.echo("no erased person came back")
    sys.exit(code)


@guard_group.command("export")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@params.output
@params.workspace
@params.keys
@click.pass_context
def guard_export(ctx: click.Context, path: Path, output: str) -> None:
    """Write the suppression list for pipelines (piitracer.guard reads it): the suppression key and
    the keyed hashes, mode 0600. Keep it as secret as a key."""
    with open_session(ctx) as session:
        count = session.guard_export(path)
    if output == "json":
        echo_json({"path": str(path), "hashes": count})
        return
    click.echo(f"wrote {count} keyed hashes and the suppression key to {path} (mode 0600: keep it secret)")


@guard_group.command("forget")
@click.argument("request_id", required=False)
@click.option("--everyone", is_flag=True, help="Destroy every record and the suppression key.")
@params.output
@params.workspace
@params.keys
@click.pass_context
def guard_forget(ctx: click.Context, request_id: str | None, everyone: bool, output: str) -> None:
    """Destroy the suppression records of one request, or (--everyone) every record and the key:
    piitracer then no longer notices that person coming back. Recorded in the audit log."""
    if bool(request_id) == everyone:
        raise click.UsageError("name one REQUEST_ID, or pass --everyone")
    with open_session(ctx) as session:
        destroyed = session.guard_forget(None if everyone else request_id)
    if output == "json":
        echo_json({"request_id": request_id, "everyone": everyone, "records_destroyed": destroyed})
        return
    click.echo(f"destroyed {destroyed} suppression record(s) {'and the suppression key' if everyone else f'of {request_id}'}")
