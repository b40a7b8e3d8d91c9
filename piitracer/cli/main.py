"""``piitracer`` commands. Exit codes: 0 ok, 1 subject data still found, 2 error.

The root group: global options, logging, and errors turned into one line. Each command group
lives in its own module (one per use case) and prints through :mod:`piitracer.cli.terminal`."""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Iterator, MutableMapping
from pathlib import Path

import click

import piitracer
from piitracer.model.errors import NotCertifiableError, PiitracerError

# Every command: its name -> "module:attribute". A command's module, and the use cases it imports,
# load when that command runs (or when --help lists them all): a cold `piitracer plan` does not
# import the verifier, the console's web framework or the demo's lakehouse builder (issue 29).
COMMANDS = {
    "lineage": "piitracer.cli.lineage:lineage",
    "plan": "piitracer.cli.erasure:plan_command",
    "execute": "piitracer.cli.erasure:execute_command",
    "attest": "piitracer.cli.erasure:attest_command",
    "catalog": "piitracer.cli.catalog:catalog_group",
    "requests": "piitracer.cli.requests:requests_group",
    "batch": "piitracer.cli.requests:batch_group",
    "audit": "piitracer.cli.audit:audit",
    "verify": "piitracer.cli.erasure:verify_command",
    "serve": "piitracer.cli.serve:serve",
    "demo": "piitracer.cli.demo:demo_command",
    "init": "piitracer.cli.init:init_command",
    "owners": "piitracer.cli.owners:owners_group",
}


class LazyCommands(MutableMapping):
    """The root group's commands (click reads ``group.commands`` as a mapping): each imported from
    :data:`COMMANDS` the first time it is looked up; iterating lists the names without importing."""

    def __init__(self, where: dict[str, str]) -> None:
        self._where = dict(where)
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            module, attribute = self._where[name].split(":")  # KeyError: no such command
            self._loaded[name] = getattr(importlib.import_module(module), attribute)
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command
        self._where.setdefault(name, "")

    def __delitem__(self, name: str) -> None:
        del self._where[name]
        self._loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._where))

    def __len__(self) -> int:
        return len(self._where)


def configure_logging(level: str, log_file: Path | None) -> None:
    """piitracer's loggers at ``level`` to stderr and, if given, to ``log_file`` (created 0600:
    logs carry no values, but dataset names and paths are nobody else's business either)."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file is not None:
        log_file.touch(mode=0o600, exist_ok=True)
        handlers.append(logging.FileHandler(log_file, encoding="utf-8"))
    formatter = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    root = logging.getLogger("piitracer")
    for handler in handlers:
        handler.setFormatter(formatter)
        root.addHandler(handler)
    root.setLevel(level)
    if level == "DEBUG":  # py4j logs every command sent to the JVM: part of "everything at DEBUG"
        py4j = logging.getLogger("py4j")
        py4j.setLevel(logging.DEBUG)
        for handler in handlers:
            py4j.addHandler(handler)


class PiitracerGroup(click.Group):
    """Turns the project's known errors into a clear message and exit code 2, never a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except PiitracerError as error:
            # The one place errors become exit codes (model/errors.py names each kind and its code).
            # Plain text, never wrapped: 'file:line: field: what was expected' must stay one line.
            # Anything that is not a PiitracerError (a KeyError, a TypeError) is a bug: traceback.
            click.echo(f"{MESSAGE_PREFIX.get(error.kind, 'error')}: {error}", err=True)
            sys.exit(error.exit_code)


# How a kind's one line starts (the rest say "error:").
MESSAGE_PREFIX = {NotCertifiableError.kind: "not certified"}


@click.group(cls=PiitracerGroup)
@click.option(
    "--workspace",
    "-w",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="Folder holding piitracer.yaml.",
)
@click.option(
    "--log-level",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
    default="WARNING",
    show_default=True,
    envvar="PIITRACER_LOG_LEVEL",
    help="Logging of piitracer (and Spark, at DEBUG/INFO) to stderr. Logs name steps, datasets and counts, never subject values.",
)
@click.option("--log-file", type=click.Path(dir_okay=False, path_type=Path), help="Also write piitracer's log here (mode 0600).")
@click.version_option(piitracer.__version__, prog_name="piitracer")
@click.pass_context
def cli(ctx: click.Context, workspace: Path, log_level: str, log_file: Path | None) -> None:
    """Find, erase and prove the erasure of a person's data across a lakehouse."""
    configure_logging(log_level.upper(), log_file)
    ctx.obj = {"workspace": workspace}


cli.commands = LazyCommands(COMMANDS)  # a new command: add it to COMMANDS


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="piitracer")


if __name__ == "__main__":
    main()
