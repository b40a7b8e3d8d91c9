"""``piitracer approve PLAN --by NAME``: a second person approves a plan before it runs
(``policy.approval: required``). Use case: :meth:`piitracer.api.session.Session.approve`.

The approver proves who they are with their own console token (``--token-file`` or
``$PIITRACER_CONSOLE_TOKEN``), as in the console: anyone holding the workspace's keys could type
any name, and an approval by a name alone would be the planner approving themself by another name.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from piitracer.cli import params
from piitracer.cli.common import echo_json, open_session
from piitracer.model.errors import InputError


@click.command("approve")
@click.argument("plan")
@click.option("--by", "approver", required=True, metavar="NAME", help="The approver (listed under approvers: in "
              "piitracer.yaml; not the person who planned it).")
@click.option("--token-file", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="File holding NAME's console token (from piitracer owners add NAME); default: "
                   "$PIITRACER_CONSOLE_TOKEN.")
@params.output
@params.workspace
@params.keys
@click.pass_context
def approve_command(ctx: click.Context, plan: str, approver: str, token_file: Path | None, output: str) -> None:
    """Approve PLAN (a plan file, or a request id: the plan the request store keeps for it) as NAME,
    so that execute may run it under policy.approval: required. Recorded in the audit log, bound to
    the plan's id and NAME; refused for the person who planned it and for a name not listed under
    approvers:. NAME proves who they are with their console token."""
    from piitracer.console.tokens import check_token

    token = token_file.read_text(encoding="utf-8").strip() if token_file else os.environ.get("PIITRACER_CONSOLE_TOKEN", "")
    if not token:
        raise InputError(f"--by {approver}: give {approver}'s console token (--token-file FILE or "
                         "$PIITRACER_CONSOLE_TOKEN; piitracer owners add NAME makes one): an approval is made by a "
                         "person who proves who they are")
    with open_session(ctx) as session:
        user = check_token(session.workspace, token)
        if user is None or user.name != approver:
            raise InputError(f"--by {approver}: the token given is not {approver}'s (or is revoked)")
        target = Path(plan) if Path(plan).is_file() else session.plan_of_request(plan)
        entry = session.approve(target, approver)
    body = entry.body
    if output == "json":
        echo_json({"plan_id": body["plan_id"], "approved_by": body["approved_by"], "planned_by": body["planned_by"],
                   "approved_at": body["approved_at"], "audit_seq": entry.seq})
        return
    click.echo(f"plan {body['plan_id'][:16]} approved by {body['approved_by']} (planned by {body['planned_by']}; "
               f"audit entry {entry.seq})")
