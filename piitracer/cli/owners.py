"""``piitracer owners add|revoke NAME``: a person's credential — their token and their own signing
key — for someone the workspace names under ``owners:``, ``viewers:`` or ``approvers:``. Making,
replacing or revoking one needs the workspace's audit key and signing key and is recorded in the
audit log. Use cases: :meth:`piitracer.api.session.Session.add_person` and ``revoke_person``."""

from __future__ import annotations

import click

from piitracer.cli import params
from piitracer.cli.common import echo_json, open_session


@click.group("owners")
@params.everything
def owners_group(output: str) -> None:
    """People: dataset owners (``owners:`` in piitracer.yaml), who attest the person steps of the
    datasets whose catalog owner: names them, approvers (``approvers:``) and read-only viewers
    (``viewers:``). Each proves who they are with their own token."""


@owners_group.command("add")
@click.argument("name")
@params.output
@params.workspace
@params.keys
@click.pass_context
def owners_add(ctx: click.Context, name: str, output: str) -> None:
    """Make NAME's token and signing key (NAME listed under owners:, viewers: or approvers:) and
    print the token once. Kept: the token's scrypt hash and the key sealed under the token
    (.piitracer/people.json, 0600); recorded: NAME's public key, in the audit log, signed by the
    workspace's signing key (both keys are needed). Adding NAME again replaces the credential and
    ends its console sessions; removing NAME from piitracer.yaml revokes it."""
    from piitracer.identity.people import people_path

    with open_session(ctx) as session:
        made = session.add_person(name)
        where = people_path(session.workspace.root)
    record = made.record
    if output == "json":  # the token once, as in text; only its hash is kept
        echo_json({"name": name, "role": record.role, "token": made.token, "public_key_sha256": record.fingerprint,
                   "replaced": made.replaced, "audit_seq": made.audit_seq, "people_file": str(where)})
        return
    what = "replaced (its old token and console sessions ended)" if made.replaced else "made"
    click.echo(f"credential for {name} ({record.role}) {what}: key {record.fingerprint[:16]}, recorded in audit entry "
               f"{made.audit_seq}; the token, shown once (only its hash is kept in {where}):", err=True)
    click.echo(made.token)


@owners_group.command("revoke")
@click.argument("name")
@params.output
@params.workspace
@params.keys
@click.pass_context
def owners_revoke(ctx: click.Context, name: str, output: str) -> None:
    """End NAME's credential now: their token opens nothing, every console session of theirs ends at
    its next page, and the audit log records (signed by the workspace's signing key) that their key
    no longer counts. Removing NAME from piitracer.yaml as well keeps a new one from being made."""
    with open_session(ctx) as session:
        gone = session.revoke_person(name)
    if output == "json":
        echo_json({"name": name, "revoked": gone is not None})
        return
    click.echo(f"{name}: " + ("credential revoked (token, key and console sessions)" if gone else "no credential"))
