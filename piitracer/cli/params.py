"""The options every command shares, declared once (as dbt's ``params`` module does).

Shared options — ``--workspace``, ``--output text|json`` and the three key files — are accepted
on the root (``piitracer --output json plan ...``), on each command group (``piitracer audit
--audit-key-file F verify``) and on every command that uses them (``piitracer audit verify
--audit-key-file F``). All of them land in one place, the root context's ``obj``; a command reads
the value wherever it was given (``--output`` arrives as the command's ``output`` parameter; the
workspace and the keys are opened by :mod:`piitracer.cli.common`). Given twice, the one further right wins, as a repeated option
does. Keys given nowhere are read from the environment by :meth:`piitracer.api.keys.Keys.load`.

This module imports click only: ``piitracer --help`` and every command's ``--help`` load it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import click
from click.core import ParameterSource

OUTPUTS = ("text", "json")
SHARED = ("workspace", "output", "audit_key_file", "master_key_file", "signing_key_file")


def shared(ctx: click.Context) -> dict[str, Any]:
    """The shared options' values of this command line (the root context's ``obj``)."""
    return ctx.find_root().ensure_object(dict)


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A shared option's callback: a value given on the command line is kept for every command
    of it; one not given takes what an earlier place (the root, the group) was given."""
    store = shared(ctx)
    if ctx.get_parameter_source(param.name) in (None, ParameterSource.DEFAULT):
        return store.setdefault(param.name, value)
    store[param.name] = value
    return value


def _option(*names: str, **attributes: Any) -> Callable:
    return click.option(*names, callback=_remember, **attributes)


def _kept(*names: str, **attributes: Any) -> Callable:
    """A shared option commands read through :func:`shared` (the workspace and the keys are opened
    by ``cli.common``), not as a parameter of their function."""
    return _option(*names, expose_value=False, **attributes)


workspace = _kept("--workspace", "-w", type=click.Path(file_okay=False, path_type=Path), default=".",
                    show_default=True, help="Folder holding piitracer.yaml.")
output = _option("--output", type=click.Choice(OUTPUTS), default="text", show_default=True,
                 help="text for a person; json for a program (an error is then one JSON object on stderr: "
                      '{"error": {"kind", "message"}}).')
audit_key_file = _kept("--audit-key-file", type=click.Path(dir_okay=False, path_type=Path),
                         help="File holding the audit key (default: $PIITRACER_AUDIT_KEY, then $PIITRACER_AUDIT_KEY_FILE).")
master_key_file = _kept("--master-key-file", type=click.Path(dir_okay=False, path_type=Path),
                          help="File holding the master key that wraps each request's data key (default: "
                               "$PIITRACER_MASTER_KEY_FILE, then $PIITRACER_MASTER_KEY).")
signing_key_file = _kept("--signing-key-file", "--signing-key", "signing_key_file",
                           type=click.Path(dir_okay=False, path_type=Path),
                           help="Ed25519 private key (PEM) that signs certificates (default: $PIITRACER_SIGNING_KEY_FILE; "
                                "make one with `piitracer audit keygen`).")
token_file = click.option("--token-file", type=click.Path(dir_okay=False, exists=True, path_type=Path),
                          help="File holding your own token (`piitracer owners add NAME` printed it once); default: "
                               "$PIITRACER_TOKEN. It proves who you are and signs what you do.")
wide = click.option("--wide", is_flag=True, help="Every column, each row on one line however long (pipe into "
                                                 "`less -S`); the default fits the terminal, one line per row.")


def keys(function: Callable) -> Callable:
    """The three key files (audit, master, signing): every command that opens a session takes all
    of them, so a key option is accepted wherever a key is read."""
    return audit_key_file(master_key_file(signing_key_file(function)))


def everything(function: Callable) -> Callable:
    """Every shared option: the root group and the command groups accept them all."""
    return workspace(output(keys(function)))


def wants_json(args: list[str]) -> bool:
    """Whether a command line asks for JSON output (the last ``--output`` wins), read from the raw
    arguments so that an error found while parsing them is reported in the form asked for."""
    chosen = "text"
    for number, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--output" and number + 1 < len(args):
            chosen = args[number + 1]
        elif arg.startswith("--output="):
            chosen = arg.split("=", 1)[1]
    return chosen == "json"

