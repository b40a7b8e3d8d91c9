"""The smallest workspace the CLI's key and grammar tests need: one Parquet dataset ``a.b`` keyed by
``user_id`` (an empty folder) and one SQL statement deriving ``a.c`` from it."""

from __future__ import annotations

from pathlib import Path

CATALOG = ("catalog:\n  a.b: {format: parquet, location: data, columns: [user_id], identifiers: [user_id], "
           "subject_key: user_id, column_types: {user_id: bigint}}\nlineage:\n  sql: [{path: sql}]\n")


def one_table_workspace(tmp_path: Path) -> Path:
    """The workspace, written at ``tmp_path / "ws"``."""
    root = tmp_path / "ws"
    (root / "sql").mkdir(parents=True)
    (root / "sql" / "p.sql").write_text("INSERT INTO a.c SELECT user_id FROM a.b;\n")
    (root / "data").mkdir()
    (root / "piitracer.yaml").write_text(CATALOG)
    return root
