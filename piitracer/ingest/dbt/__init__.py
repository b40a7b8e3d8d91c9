"""Lineage from dbt artifacts: manifest.json (and catalog.json), key types from dbt."""
