"""Errors a program can act on (issue 39.3): every error piitracer raises to a person is of one of
the named kinds of ``model/errors.py``, each with its exit code; nothing raises the root itself or
a catch-all; the CLI maps them in one place; the documentation's exit-code table is generated
from the same list."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys

from click.testing import CliRunner

from paths import PACKAGE, REPO
from piitracer.model.errors import (PiitracerError, error_kinds, exit_code_table, kind_of)


def every_error_class() -> list[type]:
    """Every PiitracerError subclass defined in the package (each module imported)."""
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        importlib.import_module(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    found, todo = [], [PiitracerError]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.startswith("piitracer") and sub not in found:
                found.append(sub)
                todo.append(sub)
    return found


def test_every_error_class_is_of_a_named_kind() -> None:
    orphans = [f"{c.__module__}.{c.__name__}" for c in every_error_class() if kind_of(c) is PiitracerError]
    assert orphans == []


def test_nothing_raises_the_root_or_a_kind_in_place_of_a_cause() -> None:
    """``raise PiitracerError(...)`` says nothing a program can act on."""
    raised = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and isinstance(node.exc.func, ast.Name) \
                    and node.exc.func.id == "PiitracerError":
                raised.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert raised == []


def test_the_cli_exits_with_the_kinds_code_and_one_line() -> None:
    from piitracer.cli.main import cli

    result = CliRunner().invoke(cli, ["--workspace", str(REPO / "lineage_fixtures"), "verify", str(REPO / "README.md")])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1].startswith("error: ") and "Traceback" not in result.output


def test_the_exit_code_table_lists_every_kind_once() -> None:
    table = exit_code_table()
    for kind in error_kinds():
        assert table.count(f"| `{kind.kind}` |") == 1, kind
    assert "| 1 | `not-certifiable` |" in table


def test_the_documentation_page_shows_the_generated_table() -> None:
    """The marker is on the page the hook fills (tests/unit/architecture/test_docs_site.py builds the site)."""
    assert "<!-- exit-codes -->" in (REPO / "docs" / "reference" / "cli.md").read_text()
    hooks = (REPO / "mkdocs.yml").read_text()
    assert "docs/_hooks/exit_codes.py" in hooks
    code = ("import sys; sys.path.insert(0, 'docs/_hooks'); import exit_codes\n"
            "class F: src_uri = 'reference/cli.md'\nclass P: file = F()\n"
            "print(exit_codes.on_page_markdown('x <!-- exit-codes --> y', P(), None, None))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert exit_code_table() in out
