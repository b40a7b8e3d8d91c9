"""`piitracer init [DIR]`: make a workspace and its keys (piitracer.api.workspace_init)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from piitracer.api.workspace_init import InitRefused, init_workspace


def _asked_roots() -> tuple[str, ...]:
    """The warehouse roots, asked on the terminal (the question goes to stderr, so that
    ``eval "$(piitracer init ...)"`` still gets only the lines of environment)."""
    answer = click.prompt("Warehouse roots: the folders or bucket prefixes (s3://lake/) holding your tables, "
                          "comma-separated", err=True)
    return tuple(part.strip() for part in answer.split(",") if part.strip())


@click.command("init")
@click.argument("folder", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--warehouse-root", "roots", multiple=True, metavar="PATH",
              help="A folder or bucket prefix holding tables (repeatable): every place piitracer may change lies "
                   "under one. Asked for when none is given and the command runs in a terminal.")
@click.option("--keys-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where to write the audit, master and signing keys (0600): outside the workspace. Default: "
                   "~/.config/piitracer/keys/<folder name>-<hash of its path> (or under $XDG_CONFIG_HOME).")
@click.pass_context
def init_command(ctx: click.Context, folder: Path | None, roots: tuple[str, ...], keys_dir: Path | None) -> None:
    """Make a workspace in DIR (default: --workspace, else the current folder): piitracer.yaml with
    its warehouse_roots, and a new audit key, master key and certificate signing key (its public
    key beside it, for auditors) written 0600 into a keys folder outside it. Prints the three lines
    of environment to set (stdout; what was written goes to stderr). Refuses, exit 2 and nothing
    written, when piitracer.yaml exists, the keys folder is inside the workspace or a key file
    exists. Keys needed: none (it makes them)."""
    target = folder if folder is not None else Path((ctx.obj or {}).get("workspace", "."))
    if not roots:
        if not sys.stdin.isatty():
            raise InitRefused("no warehouse root: give --warehouse-root PATH (a folder or a bucket prefix such as "
                              "s3://lake/; repeatable); there is no terminal to ask")
        roots = _asked_roots()
    made = init_workspace(target, roots, keys_dir=keys_dir)
    click.echo(f"wrote {made.config_file} (warehouse_roots: {', '.join(made.warehouse_roots)})", err=True)
    click.echo(f"wrote the audit key {made.audit_key} (mode 0600)", err=True)
    click.echo(f"wrote the master key {made.master_key} (mode 0600, fingerprint {made.master_key_fingerprint})",
               err=True)
    click.echo(f"wrote the signing key {made.signing_key} (mode 0600) and its public key {made.public_key} (give it "
               f"to auditors; fingerprint {made.signing_key_fingerprint})", err=True)
    for root in made.missing_roots:
        click.echo(f"warning: warehouse root {root} does not exist yet: create it (or fix warehouse_roots in "
                   f"{made.config_file}) before `catalog discover`", err=True)
    click.echo("keep the three keys secret and backed up; set these lines in your environment:", err=True)
    for line in made.environment():
        click.echo(line)
    click.echo(f"next: piitracer -w {made.workspace} catalog discover --write  (docs/getting-started.md)", err=True)
