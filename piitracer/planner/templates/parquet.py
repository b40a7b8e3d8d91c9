"""Plain Parquet folders: no table format keeps history, so rewriting each affected file without
the subjects' rows is the whole erasure, and nothing else ever removes them."""

from __future__ import annotations

from piitracer.model.plan import Action, RewriteFilesParams
from piitracer.model.table_state import TableState
from piitracer.model.workspace import CatalogDataset, DatasetFormat, Policy
from piitracer.planner.templates import FormatTemplate, StepTemplate


def steps(entry: CatalogDataset, state: TableState | None, policy: Policy | None = None) -> list[StepTemplate]:
    return [StepTemplate(Action.REWRITE_FILES, physical=False, params=RewriteFilesParams(
        strategy="write each affected file without the subjects' rows, commit the replacement, then remove the original",
        skip_files_by_statistics=True,
    ))]


TEMPLATE = FormatTemplate(
    format=DatasetFormat.PARQUET, steps=steps,
    override="rewrite_files replaces the affected files and removes the originals at once",
)
