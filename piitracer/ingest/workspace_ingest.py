"""Ingest every lineage source a workspace names into one :class:`LineageBatch`."""

from __future__ import annotations

from dataclasses import replace

from piitracer.ingest.dbt_artifacts import ingest_dbt_artifacts
from piitracer.ingest.openlineage import ingest_openlineage_paths
from piitracer.ingest.received_events import EVENTS_FILE
from piitracer.ingest.sql_lineage import ingest_sql_paths
from piitracer.ingest.workspace_loader import WORKSPACE_FILE, Workspace
from piitracer.model.naming import DatasetNamer
from piitracer.model.lineage import IngestProblem, LineageBatch, Origin, OriginKind


def ingest_workspace(workspace: Workspace) -> LineageBatch:
    """OpenLineage events first (their schema facets expand ``SELECT *``): the workspace's event
    files and folders, then the events ``piitracer serve`` received; then SQL files; then dbt
    artifacts (their models read tables the SQL files may write).

    A source path that does not exist is reported as a problem naming the workspace key; the
    other sources are still ingested.
    """
    sources = workspace.config.lineage
    batch = LineageBatch()
    event_paths = []
    for index, source in enumerate(sources.openlineage):
        path = workspace.resolve(source.path)
        if path.exists():
            event_paths.append(path)
        else:
            batch = batch.merged(_missing(f"lineage.openlineage.{index}.path", source.path))
    received = workspace.root / EVENTS_FILE  # what `piitracer serve` received over HTTP
    if received.exists():
        event_paths.append(received)
    batch = batch.merged(ingest_openlineage_paths(event_paths, namer=workspace.namer, display_root=workspace.root))

    schemas = {dataset_id: list(entry.columns) for dataset_id, entry in workspace.config.catalog.items() if entry.columns}
    for facts in batch.datasets:
        if facts.columns and facts.dataset not in schemas:
            schemas[facts.dataset] = list(facts.columns)
    for index, source in enumerate(sources.sql):
        path = workspace.resolve(source.path)
        if not path.exists():
            batch = batch.merged(_missing(f"lineage.sql.{index}.path", source.path))
            continue
        namer = workspace.namer
        if source.default_database != namer.default_database:
            namer = _with_default_database(namer, source.default_database)
        batch = batch.merged(
            ingest_sql_paths([path], namer=namer, schemas=schemas, dialect=source.dialect, display_root=workspace.root)
        )
    for index, source in enumerate(sources.dbt):
        manifest = workspace.resolve(source.manifest)
        catalog = workspace.resolve(source.catalog) if source.catalog else None
        missing = [(f"lineage.dbt.{index}.{key}", text) for key, text, path in
                   (("manifest", source.manifest, manifest), ("catalog", source.catalog, catalog))
                   if path is not None and not path.exists()]
        for field, text in missing:
            batch = batch.merged(_missing(field, text))
        if not manifest.exists():
            continue
        batch = batch.merged(ingest_dbt_artifacts(
            manifest, catalog if catalog is not None and catalog.exists() else None, namer=workspace.namer,
            schemas=schemas, dialect=source.dialect, display_root=workspace.root))
    return batch


def _with_default_database(namer: DatasetNamer, database: str) -> DatasetNamer:
    return replace(namer, default_database=database)


def _missing(field: str, path: str) -> LineageBatch:
    problem = IngestProblem(
        origin=Origin(kind=OriginKind.CATALOG, file=WORKSPACE_FILE),
        reason=f"{field}: {path!r} does not exist",
    )
    return LineageBatch(problems=(problem,))
