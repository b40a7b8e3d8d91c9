"""MkDocs hook: the exit-code table of the CLI reference, generated at every build from the named
errors (``piitracer.model.errors.exit_code_table``), so the page cannot fall behind the code. It
replaces the ``<!-- exit-codes -->`` marker on reference/cli.md, and the ``<!-- error-kinds -->``
marker on troubleshooting.md with every kind and every message raised of it (``error_messages``)."""

from __future__ import annotations

import sys
from pathlib import Path

PAGE = "reference/cli.md"
MARKER = "<!-- exit-codes -->"
TROUBLESHOOTING, KINDS_MARKER = "troubleshooting.md", "<!-- error-kinds -->"


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 - MkDocs hook signature
    if page.file.src_uri == TROUBLESHOOTING:
        sys.path.insert(0, str(Path(__file__).parent))
        from error_messages import troubleshooting_reference

        return markdown.replace(KINDS_MARKER, troubleshooting_reference())
    if page.file.src_uri != PAGE:
        return markdown
    from piitracer.model.errors import exit_code_table

    return markdown.replace(MARKER, exit_code_table())
