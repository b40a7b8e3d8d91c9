"""The SQL ingest's batches without the parser: its deterministic order and its schema copies.
The lineage store assembles stored units with these on every plan and execute; sqlglot (0.1 s to
import) loads only when a SQL file is parsed."""

from __future__ import annotations

from typing import Mapping, Sequence

from piitracer.model.lineage import ColumnEdge, DatasetEdge, DatasetFacts, LineageBatch, Origin


def copy_schemas(schemas: Mapping[str, Sequence[str]] | None) -> dict[str, list[str]]:
    """A private copy of ``schemas`` with lower-case column names (what the SQL ingest keys on)."""
    return {dataset: [c.lower() for c in columns] for dataset, columns in (schemas or {}).items()}


def sorted_batch(batch: LineageBatch) -> LineageBatch:
    """A batch in the SQL ingest's deterministic order (edges and facts sorted, problems as found)."""

    def origin_key(origin: Origin) -> tuple:
        return (origin.file, origin.line or 0)

    def dataset_edge_key(edge: DatasetEdge) -> tuple:
        return (edge.source, edge.target, edge.relation.value, *origin_key(edge.origin))

    def facts_key(facts: DatasetFacts) -> tuple:
        return (facts.dataset, *origin_key(facts.origin), facts.columns)

    return LineageBatch(
        column_edges=tuple(sorted(batch.column_edges, key=ColumnEdge.sort_key)),
        dataset_edges=tuple(sorted(batch.dataset_edges, key=dataset_edge_key)),
        datasets=tuple(sorted(batch.datasets, key=facts_key)),
        problems=batch.problems,
        units_read=batch.units_read,
    )
