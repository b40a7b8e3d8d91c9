"""`piitracer --help` answers without importing a command's module (issue 40: it took 0.84 s on a
quiet machine, importing the console's web framework, the verifier and the planner to list the
commands), and a command's own --help imports neither pydantic nor rich nor the executor. What the
imports cost in seconds is measured in benchmarks/bench_cli_startup.py (RESULTS.md), never here."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from piitracer.cli.main import COMMANDS, cli
from piitracer.model.settings import TaskEngine
from paths import REPO

HEAVY = ("pydantic", "rich", "pyarrow", "sqlglot", "networkx", "fastapi", "pyspark", "piitracer.executor",
         "piitracer.verify", "piitracer.planner", "piitracer.console", "piitracer.api.session")


def imported_by(*args: str) -> tuple[str, list[str]]:
    """(stdout, the modules loaded) of ``piitracer ARGS`` in a new process."""
    code = ("import json, sys\nfrom piitracer.cli.main import main\nsys.argv = ['piitracer', *sys.argv[1:]]\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\nprint(json.dumps(sorted(sys.modules)), file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO, timeout=120)
    return done.stdout, json.loads(done.stderr.strip().splitlines()[-1])


def test_the_command_list_imports_no_command_module() -> None:
    text, modules = imported_by("--help")
    modules_of_commands = {place.split(":")[0] for place, _ in COMMANDS.values()}
    assert sorted(modules_of_commands & set(modules)) == []
    assert [m for m in modules if m.startswith(HEAVY)] == []
    for name, (_, summary) in COMMANDS.items():  # every command listed with its line
        assert f"  {name}" in text and summary in " ".join(text.split())


@pytest.mark.parametrize("args", [("plan", "--help"), ("verify", "--help"), ("audit", "certificate", "--help"),
                                  ("plan", "--no-such-option")])
def test_a_command_s_help_and_a_usage_mistake_import_nothing_heavy(args: tuple[str, ...]) -> None:
    _, modules = imported_by(*args)
    assert [m for m in modules if m.startswith(HEAVY)] == []


def test_the_summary_the_list_shows_is_the_command_s_short_help() -> None:
    for name, (_, summary) in COMMANDS.items():
        assert cli.commands[name].get_short_help_str(limit=200) == summary


def test_verify_engine_choices_are_the_settings_engines() -> None:
    from piitracer.cli.erasure import ENGINES

    assert ENGINES == tuple(engine.value for engine in TaskEngine)
