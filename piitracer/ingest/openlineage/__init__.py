"""Lineage from OpenLineage events: files of events, the endpoint's received events, their facets."""
