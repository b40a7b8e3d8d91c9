"""MkDocs hook for the generated CLI reference (reference/cli-commands.md).

- Under each command's heading it adds which keys the command needs, taken from the one table that
  says so (reference/cli.md, "Which keys each command needs"), so the generated reference and the
  overview cannot disagree; tests/unit/architecture/test_docs_site.py checks that the table has a row per command.
- mkdocs-click prints click 8.3's "no default" marker as ``Sentinel.UNSET``: shown as a dash.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

KEYS_PAGE = Path(__file__).resolve().parents[1] / "reference" / "cli.md"
_ROW = re.compile(r"^\| `(piitracer(?: [a-z-]+)*)` \|(.*)\|\s*$")


def key_rows(text: str | None = None) -> dict[str, tuple[str, str, str]]:
    """The keys table of reference/cli.md: command path -> (audit key, master key, other secrets)."""
    text = KEYS_PAGE.read_text(encoding="utf-8") if text is None else text
    section = text.split("<!-- keys-table", 1)[1].split("\n\n", 1)[0]  # the table ends at a blank line
    rows = {}
    for line in section.splitlines():
        if match := _ROW.match(line):
            cells = [cell.strip() for cell in match.group(2).split(" | ")]
            rows[match.group(1)] = (cells[0], cells[1], cells[2])
    return rows


def _inline(markdown: str) -> str:
    """The table cells' only markup is `code`."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(markdown, quote=False))


def on_page_content(content: str, page, config, files) -> str:  # noqa: ARG001 - MkDocs hook signature
    if page.file.src_uri != "reference/cli-commands.md":
        return content
    rows = key_rows()

    def add_keys(match: re.Match) -> str:
        command = re.sub(r"<[^>]+>|&para;", "", match.group(2)).strip()
        if command not in rows:
            return match.group(0)
        audit, master, other = rows[command]
        if audit == master == other == "—":
            return match.group(0) + "\n<p><strong>Keys:</strong> none.</p>"
        return (match.group(0) + f'\n<p><strong>Keys:</strong> audit key: {_inline(audit)}; master key: '
                f'{_inline(master)}; other secrets: {_inline(other)}.</p>')

    content = re.sub(r'(<h[2-6] id="piitracer[a-z-]*">)(.*?)</h[2-6]>', add_keys, content)
    return content.replace("<code>Sentinel.UNSET</code>", "—")
