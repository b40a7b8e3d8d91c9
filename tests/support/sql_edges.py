"""Shared by the SQL lineage tests: edge kind and subtype names, and an ingested batch's column
edges as comparable tuples."""

from __future__ import annotations

from piitracer.model.lineage import LineageBatch

D, I = "DIRECT", "INDIRECT"
ID, TR, AGG = "IDENTITY", "TRANSFORMATION", "AGGREGATION"


def edges(batch: LineageBatch) -> set[tuple]:
    """(source, target dataset, target column, kind, subtype, masking, expression) of every edge."""
    return {
        (str(e.source), e.target_dataset, e.target_column, e.kind.value, e.subtype.value, e.masking, e.expression)
        for e in batch.column_edges
    }
