"""``piitracer`` commands. Exit codes: 0 ok, 1 subject data still found, 2 error.

The root group: global options, logging, and errors turned into one line. Each command group
lives in its own module (one per use case) and prints through :mod:`piitracer.cli.terminal`."""

from __future__ import annotations

import importlib
import json
import logging
import re
import sys
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import NoReturn

import click

import piitracer
from piitracer.cli import params
from piitracer.model.errors import EXIT_ERROR, InputError, NotCertifiableError, PiitracerError

# Every command, in the order a person meets them: its name -> ("module:attribute", the one line
# `piitracer --help` lists it with). A command's module, and the use cases it imports, load when
# that command runs or shows its own help: `piitracer --help` imports none of them (issue 40), and a
# cold `piitracer plan` does not import the verifier, the console's web framework or the demo's
# lakehouse builder (issue 29). The line here is the command's short help everywhere (it is set on
# the command when its module loads), so the listing and the command cannot disagree.
COMMANDS = {
    "init": ("piitracer.cli.init:init_command", "Make a workspace and its keys."),
    "catalog": ("piitracer.cli.catalog:catalog_group", "Discover the tables, classify their columns, check for drift."),
    "lineage": ("piitracer.cli.lineage:lineage", "Column-level lineage: counts, diagram, the store."),
    "plan": ("piitracer.cli.erasure:plan_command", "Plan the erasure of a subject or a batch."),
    "execute": ("piitracer.cli.erasure:execute_command", "Run a plan on the lakehouse, journaled and audited."),
    "verify": ("piitracer.cli.erasure:verify_command", "Prove the erasure: decode every file, record the result."),
    "attest": ("piitracer.cli.erasure:attest_command", "Record that a person did a step piitracer cannot."),
    "approve": ("piitracer.cli.approve:approve_command", "Approve a plan as a second person before it runs."),
    "requests": ("piitracer.cli.requests:requests_group", "The request queue: deadlines, states, close, reverify."),
    "batch": ("piitracer.cli.requests:batch_group", "Plan the queued requests that are due, within a budget."),
    "guard": ("piitracer.cli.guard:guard_group", "Erased people stay erased: scan for returns, export the list."),
    "audit": ("piitracer.cli.audit:audit", "The audit trail: verify it, report, sign and check certificates."),
    "serve": ("piitracer.cli.serve:serve", "Receive OpenLineage events over HTTP; serve the console."),
    "owners": ("piitracer.cli.owners:owners_group", "Console sign-in tokens: add, revoke (owners, viewers, approvers)."),
    "notify": ("piitracer.cli.notify:notify_group", "E-mail owners their waiting steps and the office its digest."),
    "demo": ("piitracer.cli.demo:demo_command", "The whole erasure on a demo lakehouse, end to end."),
}


class LazyCommands(MutableMapping):
    """The root group's commands (click reads ``group.commands`` as a mapping): each imported from
    :data:`COMMANDS` the first time it is looked up; iterating lists the names, and
    :meth:`summary` their one line, without importing."""

    def __init__(self, where: dict[str, tuple[str, str]]) -> None:
        self._where = dict(where)
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            place, summary = self._where[name]  # KeyError: no such command
            module, attribute = place.split(":")
            command = getattr(importlib.import_module(module), attribute)
            command.short_help = summary
            self._loaded[name] = command
        return self._loaded[name]

    def summary(self, name: str) -> str:
        """The command's one line, its module not imported."""
        if name in self._loaded:
            return self._loaded[name].get_short_help_str(limit=200)
        return self._where[name][1]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command
        self._where.setdefault(name, ("", command.get_short_help_str(limit=200)))

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
    """The root group: one error format for every command. A known error (a
    :class:`~piitracer.model.errors.PiitracerError`) and a usage mistake click finds (an unknown
    command or option, a missing argument) alike are one line ``error: ...`` on stderr — or, with
    ``--output json``, one JSON object ``{"error": {"kind", "message"}}`` — and the kind's exit code
    (2 for a usage mistake, kind ``bad-input``); never a traceback, never click's four-line usage
    block. Anything else (a ``KeyError``, a ``TypeError``) is a bug: it shows its traceback."""

    json_errors = False

    def main(self, args=None, *rest, **extra):
        args = sys.argv[1:] if args is None else list(args)
        # Read from the raw arguments: an error found while parsing them is reported as asked.
        self.json_errors = params.wants_json(args)
        return super().main(args, *rest, **extra)

    def make_context(self, info_name, args, parent=None, **extra):
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.ClickException as error:
            self.usage_mistake(error)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except PiitracerError as error:
            # The one place errors become exit codes (model/errors.py names each kind and its code).
            # Plain text, never wrapped: 'file:line: field: what was expected' must stay one line.
            report_error(error.kind, str(error), self.json_errors, MESSAGE_PREFIX.get(error.kind, "error"))
            sys.exit(error.exit_code)
        except click.ClickException as error:
            self.usage_mistake(error)

    def usage_mistake(self, error: click.ClickException) -> NoReturn:
        """Click's usage error as the one line every other error is, with where to read more."""
        message = " ".join(error.format_message().split())
        # click's "No such option '--ouput'. (Did you mean one of: '--out', '--output'?)" and "No such
        # command 'plna'. Did you mean 'plan'?" in the project's words: lower case, one clause.
        message = _DID_YOU_MEAN.sub(lambda found: f" (did you mean {found.group(1)}?)", message).rstrip(".")
        if message[:1].isupper() and message[1:2].islower():
            message = message[0].lower() + message[1:]
        context = getattr(error, "ctx", None)
        if context is not None:
            message = f"{message}; see {context.command_path} --help"
        report_error(InputError.kind, message, self.json_errors)
        sys.exit(EXIT_ERROR)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # in the order a person meets them (COMMANDS), not alphabetical

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands and their one line, without importing a command's module."""
        rows = [(name, self.commands.summary(name)) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def report_error(kind: str, message: str, as_json: bool, prefix: str = "error") -> None:
    """An error on stderr: ``prefix: message``, or ``{"error": {"kind": ..., "message": ...}}``."""
    if as_json:
        click.echo(json.dumps({"error": {"kind": kind, "message": message}}, ensure_ascii=False), err=True)
    else:
        click.echo(f"{prefix}: {message}", err=True)


_DID_YOU_MEAN = re.compile(r"\.?\s*\(?Did you mean (?:one of: )?(.*?)\??\)?\s*$")

# How a kind's one line starts (the rest say "error:").
MESSAGE_PREFIX = {NotCertifiableError.kind: "not certified"}


@click.group(cls=PiitracerGroup)
@params.everything
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
def cli(ctx: click.Context, output: str, log_level: str, log_file: Path | None) -> None:
    """Find, erase and prove the erasure of a person's data across a lakehouse.

    The options --workspace, --output and the key files are accepted here and on every command
    that uses them, before or after its name."""
    configure_logging(log_level.upper(), log_file)


cli.commands = LazyCommands(COMMANDS)  # a new command: add it to COMMANDS


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="piitracer")


if __name__ == "__main__":
    main()
