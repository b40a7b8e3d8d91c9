"""Command lines piitracer suggests to a person — in its own output and on the console — built from
the click commands themselves, so a suggestion cannot name an option a command does not have or
leave out one it requires (the console once suggested ``piitracer audit certificate ID
--signing-key KEY``, which fails: the request is ``--request ID``).

The console sits below the CLI and never imports it: the CLI hands it :func:`console_commands`
when it starts the server (``piitracer serve``, ``piitracer demo --serve``).
"""

from __future__ import annotations

import re

import click

# Written as they are: placeholders (KEY, FILE|TEXT), templates ({request_id}) and plain words.
_PLAIN = re.compile(r"[A-Za-z0-9_@%+=:,./{}|-]+")


class SuggestionError(Exception):
    """A suggested command line that the command it names would refuse (a bug in piitracer)."""


def command(path: str) -> click.Command:
    """The click command at ``path`` (``"audit certificate"``)."""
    from piitracer.cli.main import cli  # the root loads each command's module on first use

    found: click.Command = cli
    for name in path.split():
        if not isinstance(found, click.Group) or name not in found.commands:
            raise SuggestionError(f"piitracer {path}: no command {name!r}")
        found = found.commands[name]
    return found


def command_line(path: str, *arguments: str, **options: str | bool) -> str:
    """``piitracer PATH ARGUMENTS --option VALUE ...`` for the command at ``path``; ``options`` are
    named by the command's parameter names (``request_id=`` is ``--request``) and spelled with the
    command's first long option name; ``True`` gives a flag. Raises :class:`SuggestionError` for an
    option the command does not have, a missing required option or argument, or too many
    arguments."""
    target = command(path)
    by_name = {param.name: param for param in target.params}
    wanted = [param for param in target.params if isinstance(param, click.Argument)]
    if len(arguments) > len(wanted) and not any(param.nargs == -1 for param in wanted):
        raise SuggestionError(f"piitracer {path}: {len(arguments)} arguments given, it takes {len(wanted)}")
    missing = [param.human_readable_name for param in wanted[len(arguments):] if param.required]
    words = ["piitracer", *path.split(), *(_word(argument) for argument in arguments)]
    for name, value in options.items():
        param = by_name.get(name)
        if not isinstance(param, click.Option):
            raise SuggestionError(f"piitracer {path}: no option for {name!r}")
        spelled = next((opt for opt in param.opts if opt.startswith("--")), param.opts[0])
        words += [spelled] if value is True else [spelled, _word(str(value))]
    missing += [param.opts[-1] for param in target.params
                if isinstance(param, click.Option) and param.required and param.name not in options]
    if missing:
        raise SuggestionError(f"piitracer {path}: {', '.join(missing)} required")
    return " ".join(words)


def _word(value: str) -> str:
    import shlex

    return value if _PLAIN.fullmatch(value) else shlex.quote(value)


def console_commands() -> dict[str, str]:
    """The command lines the console shows, as templates with ``{request_id}``, ``{step_id}``,
    ``{certificate}`` and ``{public_key}`` to fill (:class:`piitracer.console.app.CommandLines`)."""
    return {
        "certificate": command_line("audit certificate", request_id="{request_id}", signing_key_file="KEY",
                                    out="certificate.json"),
        "check_certificate": command_line("audit check-certificate", "certificate.json", public_key="KEY.pub"),
        "check_downloaded": command_line("audit check-certificate", "{certificate}", public_key="{public_key}"),
        "attest": command_line("attest", "PLAN", step_id="{step_id}", token_file="YOUR-TOKEN-FILE"),
        "owners_add": command_line("owners add", "NAME"),
        "approve": command_line("approve", "PLAN", token_file="YOUR-TOKEN-FILE"),
    }
