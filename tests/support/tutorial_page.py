"""The runnable parts of docs/tutorial.md, read from the page itself so the page and its test
cannot drift apart. A block to run is marked by an HTML comment on the line before its fence
(invisible on the site):

- ``<!-- tutorial -->`` before a ```bash block: run it; it must exit 0;
- ``<!-- tutorial: exit N -->``: run it; it must exit N;
- ``<!-- tutorial: file NAME -->`` before a fenced block or a snippet line
  (``--8<-- "FILE:SECTION"``, pymdownx.snippets): write its code to NAME in the current folder;
- ``<!-- tutorial: output -->`` before a ```text block: each of its lines is printed by the block
  run just before it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from paths import REPO

PAGE = REPO / "docs" / "tutorial.md"
_MARK = re.compile(r"^<!-- tutorial(?::\s*(?P<what>exit|file|output)\s*(?P<arg>\S+)?)?\s*-->$")
_SNIPPET = re.compile(r'^--8<-- "(?P<file>[^":]+):(?P<section>[^"]+)"$')


@dataclass(frozen=True)
class Block:
    """One marked block: ``kind`` run, file or output; its text; the exit code expected (run) or
    the file name (file); the line of the page it starts on."""

    kind: str
    text: str
    line: int
    exit_code: int = 0
    name: str = ""


def snippet(file: str, section: str) -> str:
    """The code of a pymdownx.snippets section (``--8<-- [start:NAME]`` .. ``[end:NAME]``) of a
    repository file, without its fence lines."""
    text = (REPO / file).read_text(encoding="utf-8")
    start, end = f"--8<-- [start:{section}]", f"--8<-- [end:{section}]"
    body = text.split(start, 1)[1].split(end, 1)[0].splitlines()[1:-1]  # the marker comments' own lines
    code = [line for line in body if not line.startswith("```")]
    return "\n".join(code).strip("\n") + "\n"


def blocks(page: Path = PAGE) -> list[Block]:
    """Every marked block of ``page``, in order."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        mark = _MARK.match(lines[index].strip())
        index += 1
        if not mark:
            continue
        what, arg = mark.group("what"), mark.group("arg")
        while index < len(lines) and not lines[index].strip():
            index += 1
        start = index + 1
        included = _SNIPPET.match(lines[index].strip()) if index < len(lines) else None
        if included and what == "file":
            found.append(Block("file", snippet(included["file"], included["section"]), start, name=arg or ""))
            index += 1
            continue
        if index >= len(lines) or not lines[index].startswith("```"):
            raise ValueError(f"{page}:{start - 1}: a tutorial mark must be followed by a fenced block")
        body = []
        index += 1
        while index < len(lines) and not lines[index].startswith("```"):
            body.append(lines[index])
            index += 1
        index += 1
        text = "\n".join(body) + "\n"
        if what == "file":
            found.append(Block("file", text, start, name=arg or ""))
        elif what == "output":
            found.append(Block("output", text, start))
        else:
            found.append(Block("run", text, start, exit_code=int(arg) if what == "exit" else 0))
    return found
