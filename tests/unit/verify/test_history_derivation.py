"""The logical check derived from a table's metadata (issue 43.1) shows exactly what reading every
retained version back shows, on histories the real writers make without Spark: Delta tables by
delta-rs (appends, overwrites, deletes, compaction, VACUUM, checkpoints and log cleanup), a Delta
table with a deletion vector (its log written here, read by delta-rs's own reader), Iceberg tables
by pyiceberg (appends, overwrites, copy-on-write deletes, tags, branches and commits on them), and
plain Parquet folders. The Spark-written Iceberg histories (position and equality deletes,
deletion vectors) are tests/integration/test_history_derivation_on_spark.py."""

from __future__ import annotations

import json
import os
import random
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake
from table_histories import by_snapshot, derived_and_read_back, names_of_keys, subject_index

from piitracer.model.workspace import DatasetFormat
from piitracer.verify.history_check import LogicalHit

KEYS = [1, 2, 3, 4, 5, 100, 101, 102, 103]


def rows(rng: random.Random, count: int) -> pa.Table:
    return pa.table({"user_id": pa.array([rng.choice(KEYS) for _ in range(count)], pa.int64()),
                     "note": [f"n{rng.randrange(100)}" for _ in range(count)]})


def same(derived, read_back) -> None:
    assert (derived.logical, derived.versions_checked, derived.problems) == \
        (read_back.logical, read_back.versions_checked, read_back.problems)


# ---- Delta ----------------------------------------------------------------------------------------

def random_delta(location: Path, rng: random.Random, steps: int) -> list[str]:
    write_deltalake(str(location), rows(rng, 4))
    done = []
    for _ in range(steps):
        kind = rng.choice(["append", "append", "overwrite", "delete", "delete", "compact", "vacuum", "clean_log"])
        table = DeltaTable(str(location))
        if kind == "append":
            write_deltalake(str(location), rows(rng, rng.randrange(1, 5)), mode="append")
        elif kind == "overwrite":
            write_deltalake(str(location), rows(rng, 3), mode="overwrite")
        elif kind == "delete":
            table.delete(f"user_id = {rng.choice(KEYS)}")
        elif kind == "compact":
            table.optimize.compact()
        elif kind == "vacuum":
            table.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
        else:  # the log before a fresh checkpoint dropped: those versions cannot be loaded any more
            table.alter.set_table_properties({"delta.logRetentionDuration": "interval 0 hours"})
            DeltaTable(str(location)).create_checkpoint()
            DeltaTable(str(location)).cleanup_metadata()
        done.append(kind)
    return done


@pytest.mark.parametrize("seed", range(8))
def test_random_delta_histories_derived_as_read_back(tmp_path: Path, seed: int) -> None:
    location = tmp_path / "t"
    random_delta(location, random.Random(seed), 12)
    derived, read_back = derived_and_read_back(location, DatasetFormat.DELTA)
    same(derived, read_back)
    assert derived.versions_checked >= 1


def test_a_subject_only_in_delta_versions_before_a_vacuum(tmp_path: Path) -> None:
    location = tmp_path / "t"
    write_deltalake(str(location), pa.table({"user_id": pa.array([1, 100], pa.int64()), "note": ["a", "b"]}))  # 0
    write_deltalake(str(location), pa.table({"user_id": pa.array([101], pa.int64()), "note": ["c"]}), mode="append")  # 1
    DeltaTable(str(location)).delete("user_id = 1")  # 2
    write_deltalake(str(location), pa.table({"user_id": pa.array([102], pa.int64()), "note": ["d"]}), mode="append")  # 3
    derived, read_back = derived_and_read_back(location, DatasetFormat.DELTA)
    assert derived.logical == [LogicalHit("0", False, names_of_keys([1])), LogicalHit("1", False, names_of_keys([1]))]
    assert derived.versions_checked == 4
    same(derived, read_back)

    DeltaTable(str(location)).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    derived, read_back = derived_and_read_back(location, DatasetFormat.DELTA)
    # Versions 0 and 1 lost their files; 2, 3 and the vacuum's own two commits are checked.
    assert derived.logical == [] and derived.versions_checked == 4
    assert derived.problems == ["2 older version(s) have removed files and cannot be read (not retained)"]
    same(derived, read_back)


Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def inline_vector(positions: list[int]) -> dict:
    """A Delta deletion vector descriptor stored inline (protocol: magic, a portable 64-bit roaring
    bitmap of the deleted row positions, Z85-encoded)."""
    from pyroaring import BitMap

    payload = struct.pack("<I", 1681511377) + struct.pack("<Q", 1) + struct.pack("<I", 0) + BitMap(positions).serialize()
    padded = payload + b"\0" * (-len(payload) % 4)
    text = ""
    for start in range(0, len(padded), 4):
        value, chars = int.from_bytes(padded[start:start + 4], "big"), ""
        for _ in range(5):
            value, digit = divmod(value, 85)
            chars = Z85[digit] + chars
        text += chars
    return {"storageType": "i", "pathOrInlineDv": text, "sizeInBytes": len(payload), "cardinality": len(positions)}


def test_a_delta_deletion_vector_hides_a_subject_as_delta_rs_reads_it(tmp_path: Path) -> None:
    """A table whose second version marks the subject's row deleted with a deletion vector (the log
    as Spark writes it; delta-rs writes none): derived, version 0 shows the subject and version 1
    does not, as delta-rs's own reader (DataFusion, which applies the vector) reads them. Reading
    the versions back with to_pyarrow_dataset could not: delta-rs refuses such tables there."""
    from deltalake import QueryBuilder

    location = tmp_path / "t"
    (location / "_delta_log").mkdir(parents=True)
    pq.write_table(pa.table({"user_id": pa.array([100, 2, 101, 3], pa.int64())}), location / "part-0.parquet")
    add = {"path": "part-0.parquet", "partitionValues": {}, "size": os.path.getsize(location / "part-0.parquet"),
           "modificationTime": 1, "dataChange": True, "stats": json.dumps({"numRecords": 4})}
    schema = {"type": "struct", "fields": [{"name": "user_id", "type": "long", "nullable": True, "metadata": {}}]}
    commits = [
        [{"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                       "writerFeatures": ["deletionVectors"]}},
         {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}}, "schemaString": json.dumps(schema),
                       "partitionColumns": [], "configuration": {"delta.enableDeletionVectors": "true"}, "createdTime": 1}},
         {"add": add}],
        [{"remove": {"path": "part-0.parquet", "deletionTimestamp": 2, "dataChange": True}},
         {"add": {**add, "deletionVector": inline_vector([1])}}],
        [{"remove": {"path": "part-0.parquet", "deletionTimestamp": 3, "dataChange": True,
                     "deletionVector": inline_vector([1])}},  # a file action is keyed by its path and vector
         {"add": {**add, "deletionVector": inline_vector([1, 3])}}],
    ]
    for number, actions in enumerate(commits):
        (location / "_delta_log" / f"{number:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))
    truth = {}
    for version in range(3):
        table = DeltaTable(str(location), version=version)
        keys = pa.table(QueryBuilder().register("t", table).execute("SELECT user_id FROM t")).column(0).to_pylist()
        truth[str(version)] = names_of_keys(keys)
    assert truth == {"0": names_of_keys([2, 3]), "1": names_of_keys([3]), "2": frozenset()}  # the vectors apply

    derived, read_back = derived_and_read_back(location, DatasetFormat.DELTA)
    assert by_snapshot(derived) == {v: names for v, names in truth.items() if names}
    assert derived.problems == [] and derived.versions_checked == 3
    assert read_back.versions_checked == 0 and len(read_back.problems) == 3  # what reading back could say


# ---- Iceberg, written by pyiceberg ------------------------------------------------------------------

def random_iceberg(folder: Path, rng: random.Random, steps: int) -> Path:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.expressions import EqualTo

    catalog = SqlCatalog("c", uri=f"sqlite:///{folder}/catalog.db", warehouse=f"file://{folder}/wh")
    catalog.create_namespace("ns")
    schema = pa.schema([pa.field("user_id", pa.int64()), pa.field("note", pa.string())])
    table = catalog.create_table("ns.t", schema=schema)
    table.append(rows(rng, 4))
    branches: list[str] = []
    for number in range(steps):
        table = catalog.load_table("ns.t")
        kind = rng.choice(["append", "append", "overwrite", "delete", "delete", "tag", "branch", "on_branch"])
        if kind == "append":
            table.append(rows(rng, rng.randrange(1, 5)))
        elif kind == "overwrite":
            table.overwrite(rows(rng, 3))
        elif kind == "delete":
            table.delete(EqualTo("user_id", rng.choice(KEYS)))
        elif kind == "tag":
            table.manage_snapshots().create_tag(table.current_snapshot().snapshot_id, f"tag_{number}").commit()
        elif kind == "branch":
            table.manage_snapshots().create_branch(table.current_snapshot().snapshot_id, f"branch_{number}").commit()
            branches.append(f"branch_{number}")
        elif branches:
            branch = rng.choice(branches)
            if rng.random() < 0.5:
                table.append(rows(rng, 2), branch=branch)
            else:
                table.delete(EqualTo("user_id", rng.choice(KEYS)), branch=branch)
    return Path(catalog.load_table("ns.t").location().removeprefix("file://"))


@pytest.mark.parametrize("seed", range(6))
def test_random_pyiceberg_histories_derived_as_read_back(tmp_path: Path, seed: int) -> None:
    location = random_iceberg(tmp_path, random.Random(seed), 10)
    derived, read_back = derived_and_read_back(location)
    same(derived, read_back)
    assert derived.versions_checked >= 2 and derived.logical


# ---- plain Parquet ----------------------------------------------------------------------------------

def test_a_parquet_folder_derived_as_read_back_and_a_hive_key_read_back(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    pq.write_table(pa.table({"user_id": pa.array([100, 2], pa.int64())}), folder / "a.parquet")
    pq.write_table(pa.table({"note": ["no key here"]}), folder / "b.parquet")
    derived, read_back = derived_and_read_back(folder, DatasetFormat.PARQUET)
    assert derived.logical == [LogicalHit("current", True, names_of_keys([2]))]
    same(derived, read_back)

    hive = tmp_path / "h"
    (hive / "user_id=3").mkdir(parents=True)
    pq.write_table(pa.table({"note": ["x"]}), hive / "user_id=3" / "part.parquet")
    from piitracer.formats import support_for
    from piitracer.storage.locations import Location
    from piitracer.storage.store import Store
    from piitracer.verify.history_check import read_history, table_view

    support, root = support_for(DatasetFormat.PARQUET), Location.parse(hive)
    read = read_history(support, root, Store(), "user_id")
    assert read.history is None and read.failed is None  # the key is the partition value: read back
    view = table_view(support, root, Store(), "user_id", subject_index(), read, {})
    assert view.logical == [LogicalHit("current", True, names_of_keys([3]))]


def test_deriving_a_delta_history_does_not_import_pandas(tmp_path: Path) -> None:
    """delta-rs answers with arro3 tables; ``pa.table(...)`` of one asks whether it is a pandas
    DataFrame and imports pandas: half a second of every verify process of a Delta table (issue 43.2)."""
    import subprocess
    import sys

    table = tmp_path / "t"
    write_deltalake(table, pa.table({"user_id": pa.array([1, 2], pa.int64())}))
    write_deltalake(table, pa.table({"user_id": pa.array([3], pa.int64())}), mode="append")
    DeltaTable(table).delete("user_id = 1")
    code = f"""
import sys
from piitracer.formats.delta_history import history
from piitracer.storage.locations import Location
from piitracer.storage.store import Store
derived = history(Location.parse({str(table)!r}), Store(), "user_id")
print(len(derived.files.live), "pandas" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["2", "False"]
