"""``piitracer`` commands. Exit codes: 0 ok, 1 subject data still found, 2 error.

The root group: global options, logging, and errors turned into one line. Each command group
lives in its own module (one per use case) and prints through :mod:`piitracer.cli.terminal`."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click

import piitracer
from piitracer.cli.audit import audit
from piitracer.cli.catalog import catalog_group
from piitracer.cli.common import EXIT_ERROR
from piitracer.cli.demo import demo_command
from piitracer.cli.erasure import attest_command, execute_command, plan_command, verify_command
from piitracer.cli.init import init_command
from piitracer.cli.lineage import lineage
from piitracer.cli.owners import owners_group
from piitracer.cli.requests import batch_group, requests_group
from piitracer.cli.serve import serve
from piitracer.model.errors import PiitracerError


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
            # Plain text, never wrapped: 'file:line: field: what was expected' must stay one line.
            # Anything that is not a PiitracerError (a KeyError, a TypeError) is a bug: traceback.
            click.echo(f"error: {error}", err=True)
            sys.exit(EXIT_ERROR)


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


# In the order `piitracer --help` has always listed them (click sorts them by name anyway).
for _command in (lineage, plan_command, execute_command, attest_command, catalog_group, requests_group, batch_group, audit,
                 verify_command, serve, demo_command, init_command, owners_group):
    cli.add_command(_command)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="piitracer")


if __name__ == "__main__":
    main()
