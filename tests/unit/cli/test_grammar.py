"""One CLI grammar (issue 40 point 2): the shared options (--workspace, --output, the key files)
are declared once (piitracer/cli/params.py) and accepted before or after the subcommand; every
command that reports takes --output json; a usage mistake is the same one line `error: ...`, exit
2, as every other error, and with --output json any error is one JSON object on stderr whose kind
is one of model/errors.py's."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from piitracer.cli.main import cli
from piitracer.model.errors import error_kinds
from paths import REPO
from one_table_workspace import one_table_workspace

FIXTURES = str(REPO / "lineage_fixtures")
AUDIT = "grammar-test-audit-key-0123456789abcdef"
NO_KEYS = {"PIITRACER_AUDIT_KEY": None, "PIITRACER_AUDIT_KEY_FILE": None, "PIITRACER_MASTER_KEY": None,
           "PIITRACER_MASTER_KEY_FILE": None, "PIITRACER_SIGNING_KEY_FILE": None}
# Commands that print no report of their own: a server runs until stopped; init's stdout is the
# environment lines `eval "$(piitracer init ...)"` reads.
NOT_REPORTING = {"piitracer serve", "piitracer init"}


def invoke(*args: str, env: dict | None = None):
    """The CLI in-process; an exception escaping it (a traceback for a user) fails the test."""
    result = CliRunner(env={**NO_KEYS, **(env or {})}).invoke(cli, list(args), prog_name="piitracer")
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def commands() -> dict[str, click.Command]:
    """Every leaf command (and group that runs on its own) by its path."""
    found: dict[str, click.Command] = {}

    def walk(command: click.Command, path: str) -> None:
        if isinstance(command, click.Group):
            if command.invoke_without_command:
                found[path] = command
            for name, sub in command.commands.items():
                walk(sub, f"{path} {name}")
        else:
            found[path] = command

    walk(cli, "piitracer")
    return found


def options_of(command: click.Command) -> set[str]:
    return {opt for param in command.params for opt in param.opts}


def test_every_reporting_command_accepts_output_json() -> None:
    missing = sorted(path for path, command in commands().items()
                     if path not in NOT_REPORTING and "--output" not in options_of(command))
    assert missing == []


def test_the_shared_options_are_accepted_on_the_root_and_every_group() -> None:
    shared = {"--workspace", "--output", "--audit-key-file", "--master-key-file", "--signing-key-file"}
    groups = {"piitracer": cli, **{f"piitracer {name}": command for name, command in cli.commands.items()
                                    if isinstance(command, click.Group)}}
    assert {path: sorted(shared - options_of(group)) for path, group in groups.items()} == {path: [] for path in groups}
    # A command that takes one key takes all three (a session loads them together), and --workspace.
    keys = {"--audit-key-file", "--master-key-file", "--signing-key-file"}
    keyed = {path: command for path, command in commands().items() if options_of(command) & keys}
    assert "piitracer audit verify" in keyed and "piitracer execute" in keyed
    assert {path: sorted(shared - {"--output"} - options_of(c)) for path, c in keyed.items()} == \
        {path: [] for path in keyed}


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    return one_table_workspace(tmp_path)


@pytest.fixture()
def keys(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "secrets"
    folder.mkdir(mode=0o700)
    audit, master = folder / "audit.key", folder / "master.key"
    audit.write_text(AUDIT + "\n")
    audit.chmod(0o600)
    assert invoke("requests", "keygen", str(master)).exit_code == 0
    return audit, master


def test_a_key_option_is_accepted_before_or_after_the_subcommand(ws: Path, keys: tuple[Path, Path]) -> None:
    audit, master = (str(k) for k in keys)
    add = ("add", "--source", "a.b.user_id", "--subject", "7000000001")
    placements = [
        ("--workspace", str(ws), "--audit-key-file", audit, "--master-key-file", master, "requests", *add, "--request-id", "r-1"),
        ("requests", "--workspace", str(ws), "--audit-key-file", audit, "--master-key-file", master, *add, "--request-id", "r-2"),
        ("requests", *add, "--request-id", "r-3", "--workspace", str(ws), "--audit-key-file", audit, "--master-key-file", master),
    ]
    for args in placements:
        result = invoke(*args)
        assert result.exit_code == 0, result.output
    # audit verify took the key only before its name; it takes it after too, and --workspace there.
    for args in (("audit", "verify", "--audit-key-file", audit, "-w", str(ws)),
                 ("-w", str(ws), "audit", "--audit-key-file", audit, "verify"),
                 ("--audit-key-file", audit, "audit", "verify", "--workspace", str(ws))):
        result = invoke(*args)
        assert result.exit_code == 0 and result.stdout.startswith("audit log intact: "), (args, result.output)
    # Given twice, the one further right wins (as a repeated option does).
    result = invoke("--output", "text", "-w", str(ws), "requests", "--output", "json")
    assert [r["request_id"] for r in json.loads(result.stdout)] == ["r-1", "r-2", "r-3"]


def test_output_json_on_the_commands_that_lacked_it(ws: Path, keys: tuple[Path, Path]) -> None:
    audit, master = (str(k) for k in keys)
    with_keys = ("-w", str(ws), "--audit-key-file", audit, "--master-key-file", master)
    result = invoke(*with_keys, "requests", "add", "--source", "a.b.user_id", "--subject", "7000000001",
                    "--request-id", "r-1", "--output", "json")
    assert result.exit_code == 0, result.output
    (added,) = json.loads(result.stdout)
    assert (added["request_id"], added["state"], added["subjects"]) == ("r-1", "queued", 1)
    assert "7000000001" not in result.stdout
    result = invoke(*with_keys, "--output", "json", "requests", "reverify")
    assert result.exit_code == 0 and json.loads(result.stdout) == []
    result = invoke("-w", str(ws), "catalog", "check", "--output", "json")
    report = json.loads(result.stdout)
    assert result.exit_code == 1 and report["agrees"] is False and report["drift"] == len(
        [d for d in report["differences"] if d["drift"]]) > 0
    result = invoke("-w", str(ws), "lineage", "rebuild", "--output", "json")
    assert result.exit_code == 0 and json.loads(result.stdout)["rebuilt"] is True
    # lineage show keeps --format for its documents: --output json alone is the graph as JSON.
    result = invoke("-w", FIXTURES, "lineage", "show", "--output", "json")
    assert result.exit_code == 0 and "column_edges" in json.loads(result.stdout)


def test_a_usage_mistake_is_one_error_line_exit_2() -> None:
    for args, words in [(("plna",), "no such command 'plna' (did you mean 'plan'?); see piitracer --help"),
                        (("plan", "--ouput", "json"), "no such option '--ouput'"),
                        (("audit", "certificate"), "missing option '--request'; see piitracer audit certificate --help"),
                        (("audit", "verfy"), "did you mean 'verify'?")]:
        result = invoke("-w", FIXTURES, *args)
        lines = result.stderr.strip().splitlines()
        assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), result.stderr
        assert words in lines[0] and "Usage:" not in result.output


def test_with_output_json_an_error_is_one_json_object_on_stderr(tmp_path: Path) -> None:
    kinds = {kind.kind for kind in error_kinds()}
    for args, kind in [(("--output", "json", "plna"), "bad-input"),
                       (("plan", "--source", "a.b.c", "--subject", "1", "--output", "json", "--bogus"), "bad-input"),
                       (("-w", str(tmp_path), "lineage", "stats", "--output", "json"), "bad-workspace"),
                       (("-w", FIXTURES, "plan", "--source", "nowhere.t.c", "--subject", "1", "--output=json"),
                        "cannot-plan")]:
        result = invoke(*args)
        assert result.exit_code == 2 and result.stdout == "", result.output
        *warnings, last = [json.loads(line) for line in result.stderr.splitlines()]  # JSON lines, all of them
        assert all(set(warning) == {"warning"} for warning in warnings)
        error = last["error"]
        assert error["kind"] == kind and kind in kinds and error["message"], error
