"""Lineage from SQL files (sqlglot): statements, scopes, expressions, writes."""
