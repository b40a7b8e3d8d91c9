"""The workspace reference (docs/reference/workspace.md) has a row for every key piitracer.yaml
takes: each field of the workspace's model and of each of its blocks (``iceberg.catalogs``,
``storage.prefixes``, ``catalog.<id>.table`` ...), named in a row's first cell as
``block.key`` (``lineage.sql[]`` for a list), or among the keys of a row that starts with
``block.`` (``verify.spark_min_files`` / ``spark_min_bytes``), or in the text of the row of the block
itself (``classify``: ``countries``, ...). A key added to the model without a row fails here."""

from __future__ import annotations

import typing

from pydantic import BaseModel

from paths import REPO
from piitracer.model.workspace import CatalogDataset, WorkspaceConfig

PAGE = REPO / "docs" / "reference" / "workspace.md"
NOT_WRITTEN = {"catalog.<id>.replica_of"}  # set by the workspace on a replica's dataset, never by a person


def rows() -> list[str]:
    return [line for line in PAGE.read_text().splitlines() if line.startswith("| `")]


def documented(path: str, rows: list[str]) -> bool:
    block, _, key = path.rpartition(".")
    for row in rows:
        cell = row.split("|")[1]
        if f"`{path}`" in cell or f"`{path}[]`" in cell or f"`{path}." in cell:
            return True
        if block and f"`{block}." in cell and (f"`{key}`" in cell or f"`{key}[]`" in cell):
            return True
        if block and cell.strip() == f"`{block}`" and f"`{key}`" in row:
            return True
    return False


def model_of(annotation) -> type[BaseModel] | None:
    for candidate in (annotation, *typing.get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def keys() -> list[str]:
    found = []
    for name, field in WorkspaceConfig.model_fields.items():
        model = CatalogDataset if name == "catalog" else model_of(field.annotation)
        prefix = "catalog.<id>" if name == "catalog" else name
        found += [f"{prefix}.{key}" for key in model.model_fields] if model else [name]
    return found


def test_every_key_of_piitracer_yaml_has_a_row() -> None:
    written = rows()
    assert "iceberg.catalogs" in keys() and "iceberg.engine" in keys()  # the check reaches into the blocks
    missing = [key for key in keys() if key not in NOT_WRITTEN and not documented(key, written)]
    assert missing == [], f"docs/reference/workspace.md has no row for {missing}"
