"""The command lines piitracer suggests (issue 40 point 5) are built from the click commands and
parse: the console once suggested ``piitracer audit certificate {id} --signing-key KEY``, which
fails (``--request`` missing). Each line the console's pages show, and each the CLI prints, is run
through the CLI's own parser here (files it names made first, as a person would have them)."""

from __future__ import annotations

import html
import os
import re
import shlex
from pathlib import Path
from types import SimpleNamespace

import click
import pytest

from piitracer.cli.main import cli
from piitracer.cli.suggest import SuggestionError, command_line, console_commands
from piitracer.console import templates
from piitracer.console.app import CommandLines

_CODE = re.compile(r"<code[^>]*>(piitracer [^<]*)</code>")


def parse(line: str, folder: Path) -> click.Context:
    """``line`` through the CLI's parser, every argument it names present as a file in ``folder``
    (a PLAN, a KEY); raises click's error when a person running it would get one."""
    words = shlex.split(line)
    assert words[0] == "piitracer", line
    for word in words[1:]:
        if not word.startswith("-") and "/" not in word:
            (folder / word).touch()
    here = os.getcwd()
    os.chdir(folder)
    try:
        command: click.Command = cli
        ctx = command.make_context("piitracer", words[1:])
        while isinstance(command, click.Group):
            name, command, rest = command.resolve_command(ctx, [*ctx._protected_args, *ctx.args])
            ctx = command.make_context(name, rest, parent=ctx)
        return ctx
    finally:
        os.chdir(here)


def console_lines() -> list[str]:
    """Every ``<code>piitracer ...</code>`` the console's pages show a person: the sign-in page, and a
    request page whose erasure is proven on a server without a signing key, with a person step
    whose dataset has no owner in the catalog."""
    commands = CommandLines(console_commands())
    step = SimpleNamespace(step_id="s005", dataset="ml.features", action="manual_review", catalog_owner=None,
                           state="awaiting_attestation", owner=None)
    facts = SimpleNamespace(plan_id="0" * 64, batched_with=[], sources=["prod.payments.user_id"], datasets=[],
                            deadline=SimpleNamespace(verdict="met", text="by its own retention"))
    view = SimpleNamespace(request=None, facts=facts, open_steps=[step], steps=[step], complete=True, verification=[],
                           entries=[])
    pages = [templates.render("sign_in.html", user=None, csrf="x", error=None, commands=commands)]
    for available in (False, True):
        pages.append(templates.render("request.html", user=None, csrf="x", commands=commands, request_id="dsr-2026-0042",
                                      view=view, now=None, diagram=None, diagram_problem="none", legend=[],
                                      certificate_available=available, public_key_name="signing-key.pub",
                                      certificate_file="certificate-dsr-2026-0042.json"))
    return [html.unescape(line) for page in pages for line in _CODE.findall(page)]


def test_every_command_line_the_console_shows_parses(tmp_path: Path) -> None:
    lines = console_lines()
    assert "piitracer audit certificate --request dsr-2026-0042 --signing-key-file KEY --out certificate.json" in lines
    assert "piitracer attest PLAN --step s005 --token-file YOUR-TOKEN-FILE" in lines
    assert any(line.startswith("piitracer audit check-certificate certificate-dsr-2026-0042.json") for line in lines)
    assert len(set(lines)) == 5  # owners add, attest, certificate, check it, check the downloaded one
    for line in lines:
        parse(line, tmp_path)


def test_every_command_line_in_a_console_page_comes_from_the_cli() -> None:
    """No page spells a command line itself: each <code> that starts a piitracer command is one the
    CLI built (commands.line), so the pages cannot suggest what the CLI refuses."""
    source = Path(templates.__file__).read_text()
    spelled = re.findall(r"<code[^>]*>\s*piitracer [^<]*</code>", source)
    assert spelled == []
    built = re.findall(r"commands\.line\('([a-z_]+)'", source)
    assert set(built) <= set(console_commands()) and {"certificate", "attest", "approve"} <= set(built)


def test_every_template_the_cli_gives_the_console_parses_with_any_request_id(tmp_path: Path) -> None:
    commands = CommandLines(console_commands())
    for name in console_commands():
        line = commands.line(name, request_id="it's req 7", step_id="s001", certificate="c 1.json", public_key="k.pub")
        context = parse(line, tmp_path)
        if name == "certificate":  # a request id that needs quoting arrives whole
            assert context.params["request_id"] == "it's req 7"


def test_the_cli_s_own_suggestions_parse(tmp_path: Path) -> None:
    for line in (command_line("attest", "PLAN", step_id="ID", attested_by="NAME", evidence="FILE|TEXT"),
                 command_line("audit check-certificate", "certificate.json", public_key="KEY.pub")):
        parse(line, tmp_path)


def test_a_suggestion_the_command_would_refuse_is_refused_when_it_is_built() -> None:
    with pytest.raises(SuggestionError, match="--request required"):
        command_line("audit certificate", signing_key_file="KEY")
    with pytest.raises(SuggestionError, match="no option for 'request'"):
        command_line("audit certificate", request="dsr-1")
    with pytest.raises(SuggestionError, match="no command 'certify'"):
        command_line("audit certify")
    with pytest.raises(SuggestionError, match="2 arguments given, it takes 1"):
        command_line("attest", "PLAN", "EXTRA", step_id="s1", attested_by="me")


def test_the_parser_check_catches_the_old_suggestion(tmp_path: Path) -> None:
    with pytest.raises(click.UsageError):
        parse("piitracer audit certificate dsr-2026-0042 --signing-key KEY -o certificate.json", tmp_path)
