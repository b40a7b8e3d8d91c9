"""``piitracer demo``: the whole erasure on the demo lakehouse, end to end. Use case:
:mod:`piitracer.api.demo`."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import click

from piitracer.api import run_demo
from piitracer.cli import params, suggest
from piitracer.cli.common import EXIT_FOUND, EXIT_OK, echo_json
from piitracer.cli.terminal import console, demo_json, demo_summary, err_console


@click.command("demo")
@click.option("--dir", "folder", type=click.Path(file_okay=False, path_type=Path),
              help="Demo workspace folder (the workspace is written there once) [default: demo; demo-shred with --shred].")
@click.option("--shred", is_flag=True, help="The crypto-shredding demo instead: tables whose PII is ciphertext under each "
              "person's key (Delta and Iceberg, with history), a table a job decrypted, a Delta key vault; erase one "
              "person by destroying their key, then check every file, version and snapshot. Takes --dir, --rows, "
              "--rebuild, --no-close and --output.")
@click.option("--subjects", type=click.IntRange(min=1), help="Erase N random users that have rows, as one batch (default: user 8841302).")
@click.option("--rows", type=click.IntRange(min=100), help="Payments to generate when building (default 100,000).")
@click.option("--rebuild", is_flag=True, help="Delete the demo lakehouse and build it again.")
@click.option("--no-attest", is_flag=True, help="Stop after the first verification, leaving the person steps open "
              "(attest them yourself with piitracer attest, then piitracer verify).")
@click.option("--no-close", is_flag=True, help="Leave the request open at the end (verified, watching) instead of "
              "closing it: its values stay (encrypted) so you can explore and verify again.")
@click.option("--serve", "serve_console", is_flag=True, help="Then keep the console running on the demo's workspace "
              "(127.0.0.1 only), printing its address and a viewer token, until Ctrl-C.")
@click.option("--port", default=5000, show_default=True, type=click.IntRange(1, 65535), help="The console's port (--serve).")
@params.output
def demo_command(folder: Path | None, shred: bool, subjects: int | None, rows: int | None, rebuild: bool, no_attest: bool,
                 no_close: bool, serve_console: bool, port: int, output: str) -> None:
    """Build the demo lakehouse (once), plan and execute the erasure of a user, verify, attest the
    person steps as their simulated owners, verify again, close the request (piitracer's own copies
    of the person shredded) and write the signed certificate; print what it took. With --serve,
    the console then shows the request, its evidence and its certificate in a browser. With
    --shred, the crypto-shredding demo: the person is erased by destroying their key."""
    if shred:
        _shred_demo(folder, subjects=subjects, rows=rows, rebuild=rebuild, no_attest=no_attest, no_close=no_close,
                    serve_console=serve_console, output=output)
        return
    result = run_demo(folder or Path("demo"), subjects=subjects, rows=rows, rebuild=rebuild, attest=not no_attest, close=not no_close,
                      progress=lambda line: err_console.print(line, highlight=False, markup=False))
    if output == "json":
        echo_json(demo_json(result))
    else:
        console.print(demo_summary(result))
    complete = result.verification is not None and result.verification.complete
    if serve_console:
        _serve_demo(result.folder, port)
    sys.exit(EXIT_OK if complete else EXIT_FOUND)


def _shred_demo(folder: Path | None, subjects: int | None, rows: int | None, rebuild: bool, no_attest: bool, no_close: bool,
                serve_console: bool, output: str) -> None:
    """``demo --shred``: the crypto-shredding demo, its summary, exit 0 when verified and every check held."""
    from piitracer.api.demo_shred import SHRED_DEMO_FOLDER, run_shred_demo
    from piitracer.cli.terminal import shred_demo_json, shred_demo_summary

    unsupported = [name for name, given in (("--subjects", subjects), ("--no-attest", no_attest),
                                            ("--serve", serve_console)) if given]
    if unsupported:  # one person, no person steps to attest, no console for this workspace
        raise click.UsageError(f"demo --shred does not take {', '.join(unsupported)} (it takes --dir, --rows, --rebuild, "
                               "--no-close and --output)")
    result = run_shred_demo(folder or Path(SHRED_DEMO_FOLDER), rows=rows, rebuild=rebuild, close=not no_close,
                            progress=lambda line: err_console.print(line, highlight=False, markup=False))
    if output == "json":
        echo_json(shred_demo_json(result))
    else:
        console.print(shred_demo_summary(result))
    sys.exit(EXIT_OK if result.complete else EXIT_FOUND)


def _serve_demo(folder: Path, port: int) -> None:
    import uvicorn  # only when serving

    from piitracer.console.app import create_server
    from piitracer.console.demo import DEMO_VIEWER, demo_console
    from piitracer.serve.app import create_app

    from piitracer.api.session import open as open_session

    config, token = demo_console(folder)
    config = replace(config, commands=suggest.console_commands())
    # Loopback only: the demo's console is for the person at this machine (no TLS, no lineage token).
    click.echo(f"console: http://127.0.0.1:{port}/console/ (Ctrl-C stops it)\n"
               f"sign in as {DEMO_VIEWER} (read-only) with this token, shown once:\n{token}")
    with open_session(config.workspace, config.keys) as session:
        app = create_app(session.received_events())
    uvicorn.run(create_server(config, app), host="127.0.0.1", port=port, log_level="warning")
