"""``piitracer notify``: e-mail owners the steps that await their attestation, and the privacy office
its daily digest of requests due soon (a scheduler runs ``piitracer notify digest`` once a day).
Use case: :mod:`piitracer.api.notify`. No message holds a subject value."""

from __future__ import annotations

import click

from piitracer.cli import params
from piitracer.cli.common import echo_json, open_session


@click.group("notify")
@params.everything
def notify_group(output: str) -> None:
    """E-mail through the SMTP server of notify: in piitracer.yaml (password from
    PIITRACER_SMTP_PASSWORD): owners their waiting steps, the privacy office its digest."""


@notify_group.command("digest")
@params.output
@params.workspace
@params.keys
@click.pass_context
def notify_digest(ctx: click.Context, output: str) -> None:
    """Send the privacy office (notify.privacy_office) the open requests due within
    notify.digest_days (7) and those overdue: ids, deadlines, states; no subject value."""
    from piitracer.api.notify import send_digest

    with open_session(ctx) as session:
        sent = send_digest(session)
    if output == "json":
        echo_json(sent)
        return
    click.echo(f"digest sent to {', '.join(sent['to'])}: {sent['due']} due, {sent['overdue']} overdue")


@notify_group.command("owners")
@params.output
@params.workspace
@params.keys
@click.pass_context
def notify_owners(ctx: click.Context, output: str) -> None:
    """E-mail each owner (notify.owners) the person steps of open requests that await their
    attestation and that they were not told of yet (verify tells them too)."""
    from piitracer.api.notify import notify_waiting_owners

    with open_session(ctx) as session:
        sent = notify_waiting_owners(session)
    if output == "json":
        echo_json(sent)
        return
    click.echo(f"{len(sent)} message(s) sent" + "".join(f"\n  {m['to']}: {m['steps']} step(s)" for m in sent))
