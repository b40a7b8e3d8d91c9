"""``piitracer serve``: receive OpenLineage events over HTTP into the workspace's lineage store,
and serve the console on the same port. Rooms: serve (the ASGI app), crypto (rejected bodies
sealed under the master key), console (the privacy office's board, owners' attestations)."""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import click

from piitracer.api.session import open as open_api_session
from piitracer.cli import params, suggest
from piitracer.cli.common import open_workspace
from piitracer.cli.terminal import err_console
from piitracer.console.app import create_server, server_config
from piitracer.serve.app import create_app, is_loopback
from piitracer.workspace.layout import StateLayout
from piitracer.model.errors import InputError


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on (0.0.0.0: every interface; "
              "any address but loopback needs a token).")
@click.option("--port", default=5000, show_default=True, type=click.IntRange(1, 65535), help="TCP port.")
@click.option("--token-file", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="File holding the bearer token producers must send (Authorization: Bearer ...); "
                   "default: PIITRACER_LINEAGE_TOKEN; required unless --host is a loopback address.")
@click.option("--rejected-retention-days", default=30, show_default=True, type=click.IntRange(min=1),
              help="Days a rejected record is kept; older ones are deleted at start and on a later receive.")
@params.workspace
@params.keys
@click.pass_context
def serve(ctx: click.Context, host: str, port: int, token_file: Path | None, rejected_retention_days: int) -> None:
    """Receive OpenLineage events over HTTP (POST /api/v1/lineage, as Marquez does) into the
    workspace's lineage store (.piitracer/lineage/events.jsonl), which every later command reads.
    A malformed event is answered 400 with its defects and kept in .piitracer/lineage/rejected/
    (its body encrypted under the master key, else only its digest); a body over 16 MiB, sent or
    inflated, is answered 413. The console is at /console/ on the same port: people sign in with
    a token from `piitracer owners add NAME`; the server holds the audit, master and signing keys.
    Put TLS in front of it (a reverse proxy on this machine) when it is reachable from others.

    Keys: the audit key lets the console read the log and record owners' attestations (without it,
    the board only); the master key seals rejected bodies (without it only their SHA-256 is kept)
    and lets owners attest; the signing key signs the certificates the console hands out."""
    import uvicorn  # here, not at the top: the web server and its event loop load only when serving

    token = token_file.read_text(encoding="utf-8").strip() if token_file else os.environ.get("PIITRACER_LINEAGE_TOKEN")
    if token_file and not token:
        raise InputError(f"--token-file {token_file}: the file is empty (expected the bearer token)")
    if not token and not is_loopback(host):
        raise InputError(f"--host {host} is reachable from other machines: give producers a token with --token-file "
                            "FILE (or $PIITRACER_LINEAGE_TOKEN), or listen on 127.0.0.1")
    workspace = open_workspace(ctx)
    given = params.shared(ctx)
    config, notes = server_config(workspace, given.get("master_key_file"), given.get("audit_key_file"),
                                  given.get("signing_key_file"))
    config = replace(config, commands=suggest.console_commands())
    master = config.master
    err_console.print(f"piitracer: receiving OpenLineage events on http://{host}:{port}/api/v1/lineage into "
                      f"{StateLayout(workspace.root).lineage}" + (" (bearer token required)" if token else "")
                      + ("; rejected bodies sealed under the master key" if master else
                         "; no master key: only a rejected body's SHA-256 is kept"), highlight=False)
    with open_api_session(workspace, config.keys) as session:
        app = create_app(session.received_events(timedelta(days=rejected_retention_days)), token)
    err_console.print(f"piitracer: console on http://{host}:{port}/console/ (sign in with a token from piitracer owners "
                      "add NAME" + ("".join(f"; {note}" for note in notes)) + ")", highlight=False)
    uvicorn.run(create_server(config, app), host=host, port=port, log_level="warning")
