"""What resolving a SQL query's names needs (:class:`QueryContext`), shared by the scope resolver
(:mod:`~piitracer.ingest.sql.scope`) and the statement readers above it."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from piitracer.ingest.sql.relations import DerivedRelation
from piitracer.model.naming import DatasetNamer


@dataclass
class QueryContext:
    """What resolving names needs: the namer, known schemas, temp views; collects warnings and
    info lines."""

    namer: DatasetNamer
    schemas: dict[str, list[str]]  # learnt target schemas are added to it
    # Columns a table's DDL fills once per row written (``GENERATED ALWAYS AS IDENTITY``): dataset
    # -> column -> how, for the INSERTs that leave them out.
    generated: dict[str, dict[str, str]] = field(default_factory=dict)
    default_database: str | None = None
    temp_views: dict[str, DerivedRelation] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    infos: list[str] = field(default_factory=list)  # nothing lost, but worth a line (a bare SELECT)

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def info(self, message: str) -> None:
        if message not in self.infos:
            self.infos.append(message)

    def dataset_id(self, table: exp.Table) -> str:
        """Canonical id of a table node."""
        name = ".".join(part for part in (table.catalog, table.db, table.name) if part)
        return self.namer.from_table_name(name, self.default_database)
