"""``piitracer approve PLAN``: a second person approves a plan before it runs
(``policy.approval: required``). Use case: :meth:`piitracer.api.session.Session.approve`.

The approver proves who they are with their own token (``--token-file`` or ``$PIITRACER_TOKEN``),
which opens their own signing key: the approval is their signed statement, bound to the plan's id
and its planner. A name alone (``--by``) proves nothing: anyone holding the workspace's keys could
type any name.
"""

from __future__ import annotations

from pathlib import Path

import click

from piitracer.cli import params
from piitracer.cli.common import echo_json, open_session, proven_person


@click.command("approve")
@click.argument("plan")
@click.option("--by", "approver", metavar="NAME", help="The approver: must be the person --token-file proves (listed "
              "under approvers: in piitracer.yaml; not the person who planned it).")
@params.token_file
@params.output
@params.workspace
@params.keys
@click.pass_context
def approve_command(ctx: click.Context, plan: str, approver: str | None, token_file: Path | None, output: str) -> None:
    """Approve PLAN (a plan file, or a request id: the plan the request store keeps for it), so
    that execute may run it under policy.approval: required. Signed with your own key (your token
    opens it) and recorded in the audit log, bound to the plan's id and its planner; refused for
    the person who planned it and for anyone not listed under approvers:."""
    from piitracer.model.errors import IdentityRefusedError

    with open_session(ctx) as session:
        person = proven_person(session, token_file, approver, "approves")
        if person is None:
            raise IdentityRefusedError("an approval is made by a person who proves who they are: give your own token "
                                       "(--token-file FILE or $PIITRACER_TOKEN; piitracer owners add NAME makes one)")
        target = Path(plan) if Path(plan).is_file() else session.plan_of_request(plan)
        entry = session.approve(target, person)
    body = entry.body
    if output == "json":
        echo_json({"plan_id": body["plan_id"], "approved_by": body["approved_by"], "planned_by": body["planned_by"],
                   "approved_at": body["approved_at"], "audit_seq": entry.seq})
        return
    click.echo(f"plan {body['plan_id'][:16]} approved by {body['approved_by']} (planned by {body['planned_by']}; "
               f"audit entry {entry.seq})")
