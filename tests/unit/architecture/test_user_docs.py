"""Docs for a person (issue 40.6), without building the site (test_docs_site.py builds it): the
user pages (everything under docs/ but docs/development/, and the README) cite no test file — those
citations live on docs/development/how-it-is-tested.md; the tutorial marks for its test
(tests/integration/test_tutorial.py) the whole way from `init` to the third party's check, and the
file it has you save is the README's snippet; the troubleshooting page's generated reference names
every kind of error and the first hour's messages; the new pages are in the site's navigation."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml

from paths import REPO
from piitracer.model.errors import error_kinds
from tutorial_page import blocks, snippet

DOCS = REPO / "docs"
_CITATION = re.compile(r"\btests/[\w./*-]+")
_COMMENT = re.compile(r"<!--.*?-->", re.S)


def user_pages() -> list[Path]:
    pages = [page for page in sorted(DOCS.rglob("*.md")) if page.relative_to(DOCS).parts[0] not in ("development", "_hooks")]
    return [REPO / "README.md", *pages]


def citations(page: Path) -> list[str]:
    """``page:line: tests/...`` for each test path a reader sees (HTML comments are not shown)."""
    text = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), page.read_text(encoding="utf-8"))
    return [f"{page.relative_to(REPO)}:{number}: {found}" for number, line in enumerate(text.splitlines(), 1)
            for found in _CITATION.findall(line)]


def test_user_pages_cite_no_test_file() -> None:
    found = [citation for page in user_pages() for citation in citations(page)]
    assert found == [], "move these to docs/development/how-it-is-tested.md:\n" + "\n".join(found)


def test_the_citation_check_sees_a_citation_and_not_a_comment(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    page = tmp_path / "page.md"
    page.write_text("Held by (`tests/integration/test_x.py`).\n<!-- tests/unit/y.py keeps this -->\n")
    found = citations(page)
    assert len(found) == 1 and found[0].endswith(":1: tests/integration/test_x.py")


def test_the_tutorial_marks_the_whole_way_to_a_checked_certificate() -> None:
    found = blocks()
    runs = [block for block in found if block.kind == "run"]
    script = "\n".join(block.text for block in runs)
    # The lifecycle, in the order a person walks it.
    steps = [r"piitracer init ", r"write_deltalake\(", r"piitracer catalog discover --write",
             r"piitracer catalog classify --write", r"cat >> piitracer.yaml", r"piitracer plan .*-o plan.json",
             r"piitracer execute plan.json --dry-run", r"piitracer execute plan.json(?! --dry-run)",
             r"piitracer verify plan.json", r"piitracer attest plan.json", r"piitracer requests close",
             r"piitracer audit certificate", r"python check_certificate.py"]
    positions = []
    for step in steps:
        match = re.search(step, script)
        assert match, f"the tutorial runs no {step!r}"
        positions.append(match.start())
    assert positions == sorted(positions)
    assert [block.exit_code for block in runs if "piitracer verify" in block.text] == [1, 0]  # before and after attest
    files = [block for block in found if block.kind == "file"]
    assert [(block.name, block.text) for block in files] == [("check_certificate.py", snippet("README.md",
                                                                                                "certificate-check"))]
    assert "public_key.verify(" in files[0].text
    assert found[-1].kind == "output" and found[-1].text == "valid certificate for request dsr-1\n"


def test_a_mark_without_a_block_is_refused(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- tutorial -->\nnot a fence\n")
    with pytest.raises(ValueError, match="must be followed by a fenced block"):
        blocks(page)


def test_the_troubleshooting_reference_names_every_kind_and_the_first_hours_messages() -> None:
    sys.path.insert(0, str(DOCS / "_hooks"))
    from error_messages import troubleshooting_reference

    reference = troubleshooting_reference()
    for kind in error_kinds():
        assert f"### `{kind.kind}` (exit {kind.exit_code})" in reference
        assert kind.what_to_do in reference
    for message in ("the workspace file is empty", "warehouse root ‹text› does not exist", "the lineage is empty",
                    "no audit key", "is not recorded in this workspace's audit log"):
        assert message in reference, message
    assert "<!-- error-kinds -->" in (DOCS / "troubleshooting.md").read_text()


def test_the_new_pages_are_in_the_navigation() -> None:
    nav = yaml.safe_load("nav:" + (REPO / "mkdocs.yml").read_text().split("\nnav:", 1)[1])["nav"]

    def pages(entries) -> list[str]:
        found = []
        for entry in entries:
            for value in (entry.values() if isinstance(entry, dict) else [entry]):
                found += pages(value) if isinstance(value, list) else [value]
        return found

    listed = pages(nav)
    for page in ("install.md", "tutorial.md", "troubleshooting.md", "development/how-it-is-tested.md"):
        assert page in listed, page
