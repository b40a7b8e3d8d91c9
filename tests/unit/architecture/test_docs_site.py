"""The documentation site (docs/, mkdocs.yml) and the README's front door: the strict MkDocs build
passes (a broken link, anchor, snippet or API reference is a warning, and a warning fails it), every
relative link of the README resolves, the plan schema shown is the model's, and the keys table
has a row for every CLI command (the generated CLI reference takes each command's keys from it)."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from markdown.extensions.toc import slugify

from piitracer.model.plan import DeletionPlan

from paths import REPO  # noqa: E402

ROOT = REPO
README = ROOT / "README.md"
sys.path.insert(0, str(ROOT / "docs" / "_hooks"))
from cli_keys import key_rows  # noqa: E402  (the MkDocs hook that puts each command's keys in its reference)

# The two commands and what they do: they must stay true on a fresh machine, and stay first.
FRONT_DOOR = """# piitracer

```bash
scripts/setup.sh && .venv/bin/piitracer demo                 # set up, run the main job: the demo erasure on a local lakehouse
scripts/setup.sh && .venv/bin/python -m pytest -q -n 2       # set up, run the tests
```
"""
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def test_mkdocs_build_strict_passes(tmp_path: Path) -> None:
    """What CI runs: `mkdocs build --strict` into a temporary folder, from the repository root
    (snippets are included relative to it). Any warning (a link to a missing page or anchor, an
    API object that does not exist, a snippet that is gone) fails the build."""
    site = tmp_path / "site"
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stderr[-4000:]
    assert "WARNING" not in result.stderr, result.stderr[-4000:]
    # The generated parts are really there: every command, its keys, the API, the schema, the README snippet.
    commands = (site / "reference" / "cli-commands" / "index.html").read_text()
    assert 'id="piitracer-execute"' in commands and "Sentinel.UNSET" not in commands
    execute = commands.split('id="piitracer-execute"', 1)[1][:2000]
    assert "<strong>Keys:</strong> audit key: required" in execute
    api = (site / "reference" / "python-api" / "index.html").read_text()
    assert 'id="piitracer.api.plan.plan_deletion"' in api
    # The session is the way in: the page documents it first, its use cases with what they take and refuse.
    documented = re.findall(r'<h[23] id="(piitracer\.api\.[\w.]+)"', api)
    assert documented[:3] == ["piitracer.api.session", "piitracer.api.session.open", "piitracer.api.session.Session"]
    execute = api.split('id="piitracer.api.session.Session.execute"', 1)[1][:6000]
    assert "Parameters:" in execute and "Returns:" in execute and "PlanRefused" in execute
    # The plan schema is the model's at build time: the published file and the page both.
    schema = DeletionPlan.model_json_schema()
    assert json.loads((site / "reference" / "plan.schema.json").read_text()) == schema
    page = html.unescape(re.sub(r"<[^>]+>", "", (site / "reference" / "plan-schema" / "index.html").read_text()))
    assert json.dumps(schema, indent=2) in page
    assert "valid certificate for request" in (site / "use" / "audit" / "index.html").read_text()


def readme_links() -> list[str]:
    return [target for target in _LINK.findall(README.read_text()) if not re.match(r"[a-z]+:", target)]


def headings_of(page: Path) -> set[str]:
    """The anchors MkDocs gives a page's headings (the toc extension's slugs)."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {slugify(re.sub(r"`", "", match), "-") for match in re.findall(r"^#+ (.+?)\s*$", text, flags=re.M)}


def test_every_relative_link_in_the_readme_resolves() -> None:
    links = readme_links()
    assert len(links) >= 20  # the front door links into the docs
    broken = []
    for target in links:
        path, _, anchor = target.partition("#")
        file = (ROOT / path).resolve()
        if not file.is_file():
            broken.append(f"{target}: no file {path}")
        elif anchor and file.suffix == ".md" and anchor not in headings_of(file):
            broken.append(f"{target}: no heading #{anchor} in {path}")
    assert broken == []


def test_the_readme_link_check_catches_a_missing_file_and_a_missing_anchor(tmp_path: Path, monkeypatch) -> None:
    page = tmp_path / "README.md"
    page.write_text("[a](docs/nowhere.md) [b](docs/getting-started.md#no-such-heading) [c](https://example.com)")
    monkeypatch.setattr(sys.modules[__name__], "README", page)
    assert readme_links() == ["docs/nowhere.md", "docs/getting-started.md#no-such-heading"]
    with pytest.raises(AssertionError):
        test_every_relative_link_in_the_readme_resolves()


def test_the_readme_is_a_front_door() -> None:
    text = README.read_text()
    assert text.startswith(FRONT_DOOR)
    assert len(text.splitlines()) <= 200


def cli_commands() -> set[str]:
    """Every command a person runs: leaf commands, and groups that do something on their own."""
    from piitracer.cli.main import cli

    found: set[str] = set()

    def walk(command: click.Command, path: str) -> None:
        if isinstance(command, click.Group):
            if command.invoke_without_command and path != "piitracer":
                found.add(path)
            for name, sub in command.commands.items():
                walk(sub, f"{path} {name}")
        else:
            found.add(path)

    walk(cli, "piitracer")
    return found


def test_every_cli_command_says_which_keys_it_needs() -> None:
    commands, rows = cli_commands(), key_rows()
    assert {"piitracer plan", "piitracer execute", "piitracer verify", "piitracer init"} <= commands
    assert sorted(commands - set(rows)) == []  # a command without a row in reference/cli.md's keys table
    assert sorted(set(rows) - commands) == []  # a row for a command that no longer exists
    assert rows["piitracer execute"][:2] == ("required (also `--dry-run`)", "required")
