"""A small local lakehouse of the non-Spark formats for executor tests: a Delta source with several
versions, a Delta copy with the key renamed, a Hive-partitioned Parquet folder keyed by PAN, and an
archive of weekly Parquet exports. The subjects' values are every column's minimum (the worst case:
statistics keep them)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import write_deltalake
from spark_lakehouse import SUBJECT_PANS, SUBJECTS, rows, write_workspace

SCHEMA = pa.schema([("user_id", pa.int64()), ("pan", pa.string()), ("amount", pa.float64()), ("dt", pa.string())])
WEEKS = ["2026-10-25", "2026-11-01", "2026-11-08"]


def people() -> pa.Table:
    data = rows(1500)
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in data], SCHEMA)


def build(root: Path) -> dict[str, Path]:
    """Write every table under ``root``; returns dataset id -> location."""
    table = people()
    locations = {name: root / name.replace(".", "/") for name in ("crm.people", "crm.people_copy", "crm.cards", "archive.people_weekly")}
    for part in (table.slice(0, 500), table.slice(500, 500), table.slice(1000)):  # three versions
        write_deltalake(str(locations["crm.people"]), part, mode="append")
    copy = table.select(["user_id", "pan", "amount"]).rename_columns(["cust", "pan", "amount"])
    for part in (copy.slice(0, 800), copy.slice(800)):
        write_deltalake(str(locations["crm.people_copy"]), part, mode="append")
    cards = table.group_by(["pan", "dt"]).aggregate([("amount", "count")]).rename_columns(["pan", "dt", "n"])
    for half, part in enumerate((cards.slice(0, cards.num_rows // 2), cards.slice(cards.num_rows // 2))):
        pq.write_to_dataset(part, str(locations["crm.cards"]), partition_cols=["dt"],
                            basename_template=f"part-{half}-{{i}}.parquet")
    for week in WEEKS:
        folder = locations["archive.people_weekly"] / f"snapshot={week}"
        folder.mkdir(parents=True)
        pq.write_table(table.slice(0, 900), folder / "part-0.parquet")
        pq.write_table(table.slice(900), folder / "part-1.parquet")
    return locations


def workspace(tmp_path: Path, warehouse: Path, locations: dict[str, Path]) -> Path:
    catalog = {
        "crm.people": {"format": "delta", "location": str(locations["crm.people"]), "columns": SCHEMA.names,
                       "identifiers": ["user_id", "pan"], "subject_key": "user_id"},
        "crm.people_copy": {"format": "delta", "location": str(locations["crm.people_copy"]), "columns": ["cust", "pan", "amount"]},
        "crm.cards": {"format": "parquet", "location": str(locations["crm.cards"]), "columns": ["pan", "n", "dt"]},
        "archive.people_weekly": {"format": "archive", "location": str(locations["archive.people_weekly"]),
                                  "columns": SCHEMA.names,
                                  "archive_of": {"dataset": "crm.people", "schedule": "7d", "retention": "90d"}},
    }
    sql = ("INSERT INTO crm.people_copy SELECT user_id AS cust, pan, amount FROM crm.people;\n"
           "INSERT INTO crm.cards SELECT pan, count(*) AS n, dt FROM crm.people GROUP BY pan, dt;\n")
    return write_workspace(tmp_path / "ws", warehouse, catalog, sql)


__all__ = ["SUBJECTS", "SUBJECT_PANS", "build", "workspace", "people"]
