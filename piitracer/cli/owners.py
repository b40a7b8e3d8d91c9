"""``piitracer owners add NAME``: a console sign-in token for a person the workspace names under
``owners:`` or ``viewers:``. Room: console (tokens kept only as scrypt hashes, 0600)."""

from __future__ import annotations

import click

from piitracer.cli import params
from piitracer.cli.common import echo_json, open_workspace
from piitracer.console.tokens import add_token, tokens_path


@click.group("owners")
@params.everything
def owners_group(output: str) -> None:
    """Console users: dataset owners (``owners:`` in piitracer.yaml), who attest the person steps
    of the datasets whose catalog owner: names them, and read-only viewers (``viewers:``)."""


@owners_group.command("add")
@click.argument("name")
@params.output
@params.workspace
@click.pass_context
def owners_add(ctx: click.Context, name: str, output: str) -> None:
    """Make a sign-in token for NAME (listed under owners: or viewers:) and print it once: only its
    scrypt hash is kept (.piitracer/console-tokens.json, 0600). Adding NAME again replaces its token;
    removing NAME from piitracer.yaml revokes it."""
    workspace = open_workspace(ctx)
    token = add_token(workspace, name)
    role = "owner" if name in workspace.config.owners else "viewer"
    if output == "json":  # the token once, as in text; only its hash is kept
        echo_json({"name": name, "role": role, "token": token, "tokens_file": str(tokens_path(workspace.root))})
        return
    click.echo(f"console token for {name} ({role}), shown once: only its hash is kept in "
               f"{tokens_path(workspace.root)}", err=True)
    click.echo(token)


@owners_group.command("revoke")
@click.argument("name")
@params.output
@params.workspace
@click.pass_context
def owners_revoke(ctx: click.Context, name: str, output: str) -> None:
    """End NAME's console access now: its token stops signing in and every session it has is ended
    (a running console refuses its next page). Removing NAME from piitracer.yaml as well keeps a new
    token from being made for it."""
    from piitracer.console.sessions import Sessions, sessions_path
    from piitracer.console.tokens import revoke_token

    workspace = open_workspace(ctx)
    had_token = revoke_token(workspace, name)
    sessions = Sessions(sessions_path(workspace.root))
    try:
        ended = sessions.end_user(name)
    finally:
        sessions.close()
    if output == "json":
        echo_json({"name": name, "token_revoked": had_token, "sessions_ended": ended})
        return
    click.echo(f"{name}: " + ("token revoked" if had_token else "no token") + f", {ended} session(s) ended")
