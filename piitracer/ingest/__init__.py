"""Reading lineage sources (OpenLineage events, SQL) and the workspace file."""
