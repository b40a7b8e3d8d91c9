"""MkDocs hook: the plan's JSON Schema, generated from its pydantic model at every build
(``piitracer.model.plan.DeletionPlan``, what ``piitracer plan --schema`` prints), so the page can
never fall behind the model. It is shown on reference/plan-schema.md (in place of the
``<!-- plan-schema -->`` marker) and published as ``reference/plan.schema.json``."""

from __future__ import annotations

import json

from mkdocs.structure.files import File

PAGE = "reference/plan-schema.md"
MARKER = "<!-- plan-schema -->"


def schema_text() -> str:
    """The schema exactly as ``piitracer plan --schema`` prints it."""
    from piitracer.model.plan import DeletionPlan

    return json.dumps(DeletionPlan.model_json_schema(), indent=2)


def on_files(files, config):
    files.append(File.generated(config, "reference/plan.schema.json", content=schema_text() + "\n"))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 - MkDocs hook signature
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"{PAGE}: the {MARKER} marker is gone: the schema has nowhere to go")
    return markdown.replace(MARKER, f"```json\n{schema_text()}\n```")
