"""``piitracer serve``: receive OpenLineage events over HTTP into the workspace's lineage store,
and serve the console on the same port. Rooms: serve (the ASGI app), crypto (rejected bodies
sealed under the master key), console (the privacy office's board, owners' attestations)."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import click

from piitracer.api.session import open as open_api_session
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
@click.option("--master-key-file", type=click.Path(dir_okay=False, path_type=Path),
              help="The master key that seals rejected bodies (default: $PIITRACER_MASTER_KEY_FILE, then "
                   "$PIITRACER_MASTER_KEY); without one only a rejected body's SHA-256 is kept.")
@click.option("--rejected-retention-days", default=30, show_default=True, type=click.IntRange(min=1),
              help="Days a rejected record is kept; older ones are deleted at start and on a later receive.")
@click.option("--audit-key-file", type=click.Path(dir_okay=False, path_type=Path),
              help="The audit key the console reads the log and records owners' attestations with (default: "
                   "$PIITRACER_AUDIT_KEY, then $PIITRACER_AUDIT_KEY_FILE); without one the console shows the board only.")
@click.option("--signing-key", type=click.Path(dir_okay=False, path_type=Path),
              help="Ed25519 key that signs the certificates the console hands out (default: "
                   "$PIITRACER_SIGNING_KEY_FILE); without one the console says how to issue them.")
@click.pass_context
def serve(ctx: click.Context, host: str, port: int, token_file: Path | None, master_key_file: Path | None,
          rejected_retention_days: int, audit_key_file: Path | None, signing_key: Path | None) -> None:
    """Receive OpenLineage events over HTTP (POST /api/v1/lineage, as Marquez does) into the
    workspace's lineage store (.piitracer/lineage/events.jsonl), which every later command reads.
    A malformed event is answered 400 with its defects and kept in .piitracer/lineage/rejected/
    (its body encrypted under the master key, else only its digest); a body over 16 MiB, sent or
    inflated, is answered 413. The console is at /console/ on the same port: people sign in with
    a token from `piitracer owners add NAME`; the server holds the audit, master and signing keys.
    Put TLS in front of it (a reverse proxy on this machine) when it is reachable from others."""
    import uvicorn  # here, not at the top: the web server and its event loop load only when serving

    token = token_file.read_text(encoding="utf-8").strip() if token_file else os.environ.get("PIITRACER_LINEAGE_TOKEN")
    if token_file and not token:
        raise InputError(f"--token-file {token_file}: the file is empty (expected the bearer token)")
    if not token and not is_loopback(host):
        raise InputError(f"--host {host} is reachable from other machines: give producers a token with --token-file "
                            "FILE (or $PIITRACER_LINEAGE_TOKEN), or listen on 127.0.0.1")
    workspace = open_workspace(ctx)
    config, notes = server_config(workspace, master_key_file, audit_key_file, signing_key)
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
