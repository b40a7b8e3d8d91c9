"""MkDocs hook: the exit-code table of the CLI reference, generated at every build from the named
errors (``piitracer.model.errors.exit_code_table``), so the page cannot fall behind the code. It
replaces the ``<!-- exit-codes -->`` marker on reference/cli.md."""

from __future__ import annotations

PAGE = "reference/cli.md"
MARKER = "<!-- exit-codes -->"


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 - MkDocs hook signature
    if page.file.src_uri != PAGE:
        return markdown
    from piitracer.model.errors import exit_code_table

    return markdown.replace(MARKER, exit_code_table())
