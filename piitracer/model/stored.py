"""What a table stores, as the planner may read it without touching a file: each column's name as
the table spells it and its type, read from the table's own metadata by the API before planning."""

from __future__ import annotations

from typing import Mapping

from pydantic import Field

from piitracer.model.lineage import Frozen


class StoredColumn(Frozen):
    """One column as a table stores it."""

    name: str = Field(description="The column's name as the table spells it (lineage names are lower case).")
    type: str = Field(description="Its stored type, as Arrow names it (string, binary, int64...).")
    binary: bool = Field(description="Whether the type can hold piitracer's ciphertext (a binary type).")


class StoredSchema(Frozen):
    """A table's columns as it stores them; looked up the way the engines match names (case-insensitively)."""

    columns: tuple[StoredColumn, ...]

    def find(self, name: str) -> list[StoredColumn]:
        """Every stored column whose name is ``name`` ignoring case (more than one: ambiguous)."""
        wanted = name.lower()
        return [column for column in self.columns if column.name.lower() == wanted]


StoredSchemas = Mapping[str, StoredSchema]  # dataset -> its stored schema (absent: no table there yet)
