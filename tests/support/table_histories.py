"""Tables with a history, for the tests of the verifier's derived logical check (issue 43.1:
tests/integration/test_history_derivation_on_spark.py, tests/unit/verify/test_history_derivation.py). Iceberg
tables written by Spark and the Iceberg Java API (the real writers):
appends, merge-on-read deletes (position delete files; deletion vectors in format v3), copy-on-write
deletes, overwrites of partitions, updates, equality-delete files (the table API: Spark SQL cannot
write them), tags, branches and commits on branches.

What each retained snapshot shows is read three ways: derived from the manifests and each data
file's key rows (the verifier today), read back snapshot by snapshot (the verifier before: pyiceberg,
or the files read directly where pyiceberg cannot), and by Spark itself (``VERSION AS OF``)."""

from __future__ import annotations

import os
import random
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from piitracer.formats import support_for
from piitracer.model.workspace import DatasetFormat
from piitracer.storage.locations import Location
from piitracer.storage.store import Store
from piitracer.verify.history_check import read_back, read_history, table_view
from piitracer.verify.decoders import scan_location
from piitracer.verify.values import ValueIndex

SCHEMA = "user_id BIGINT, note STRING, p INT"
SUBJECT_KEYS = [1, 2, 3, 4, 5]  # each its own value set s<key>; 1 and 2 also in the set "pair"
OTHER_KEYS = list(range(100, 112))


def subject_index() -> ValueIndex:
    sets = {f"s{k}": [k] for k in SUBJECT_KEYS}
    sets["pair"] = [1, 2]
    return ValueIndex.build(sets)


def names_of_keys(keys) -> frozenset[str]:
    """The value sets a snapshot whose key column holds ``keys`` shows."""
    index = subject_index()
    return frozenset(name for key in keys for name in index.match(int(key)))


def commit_equality_deletes(spark, table: str, location: Path, keys: list[int], partition: str | None = None) -> None:
    """One equality-delete file of ``user_id`` = ``keys`` (Parquet with Iceberg's field id), in
    ``partition`` (``p=1``) or unpartitioned, registered by a RowDelta commit (the Java table API)."""
    jvm = spark._jvm
    java_table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, table)
    field_id = java_table.schema().findField("user_id").fieldId()
    path = location / "data" / f"eq-delete-{uuid.uuid4().hex}.parquet"
    schema = pa.schema([pa.field("user_id", pa.int64(), nullable=False,
                                 metadata={b"PARQUET:field_id": str(field_id).encode()})])
    pq.write_table(pa.table({"user_id": pa.array(keys, pa.int64())}, schema=schema), path)
    ids = spark.sparkContext._gateway.new_array(jvm.int, 1)
    ids[0] = field_id
    builder = (jvm.org.apache.iceberg.FileMetadata.deleteFileBuilder(java_table.spec()).ofEqualityDeletes(ids)
               .withPath(str(path)).withFormat(jvm.org.apache.iceberg.FileFormat.PARQUET)
               .withFileSizeInBytes(os.path.getsize(path)).withRecordCount(len(keys)))
    if partition is not None:
        builder = builder.withPartitionPath(partition)
    java_table.newRowDelta().addDeletes(builder.build()).commit()
    spark.sql(f"REFRESH TABLE {table}")


def random_history(spark, table: str, location: Path, seed: int, steps: int, partitioned: bool,
                   equality: bool = True) -> list[str]:
    """``steps`` random commits on ``table`` (made beforehand, merge-on-read); returns what was done."""
    rng = random.Random(seed)
    done, branches, tags = [], [], 0

    def some_rows(count: int) -> list[tuple]:
        keys = SUBJECT_KEYS + OTHER_KEYS
        return [(rng.choice(keys), f"n{rng.randrange(1000)}", rng.randrange(2)) for _ in range(count)]

    def append(target: str) -> None:
        spark.createDataFrame(some_rows(rng.randrange(2, 7)), SCHEMA).coalesce(1).writeTo(target).append()

    append(table)
    done.append("append")
    kinds = ["append", "append", "delete", "delete", "cow_delete", "overwrite", "update", "tag", "branch", "on_branch"]
    kinds += ["equality"] * (2 if equality else 0)
    for _ in range(steps):
        kind = rng.choice(kinds)
        keys = ", ".join(str(k) for k in rng.sample(SUBJECT_KEYS + OTHER_KEYS[:3], rng.randrange(1, 3)))
        if kind == "append":
            append(table)
        elif kind == "delete":
            spark.sql(f"DELETE FROM {table} WHERE user_id IN ({keys})")
        elif kind == "cow_delete":
            spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('write.delete.mode'='copy-on-write')")
            spark.sql(f"DELETE FROM {table} WHERE user_id IN ({keys})")
            spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('write.delete.mode'='merge-on-read')")
        elif kind == "overwrite":  # the partitions the new rows fall in (the whole table when unpartitioned)
            spark.createDataFrame(some_rows(3), SCHEMA).coalesce(1).writeTo(table).overwritePartitions()
        elif kind == "update":
            spark.sql(f"UPDATE {table} SET note = 'updated' WHERE user_id IN ({keys})")
        elif kind == "tag":
            tags += 1
            spark.sql(f"ALTER TABLE {table} CREATE TAG tag_{tags}")
        elif kind == "branch":
            name = f"branch_{len(branches) + 1}"
            spark.sql(f"ALTER TABLE {table} CREATE BRANCH {name}")
            branches.append(name)
        elif kind == "on_branch" and branches:
            target = f"{table}.branch_{rng.choice(branches)}"
            if rng.random() < 0.5:
                append(target)
            else:
                spark.sql(f"DELETE FROM {target} WHERE user_id IN ({keys})")
        elif kind == "equality":
            commit_equality_deletes(spark, table, location, [int(k) for k in keys.split(", ")],
                                    f"p={rng.randrange(2)}" if partitioned else None)
        else:
            continue
        done.append(kind)
    return done


def spark_truth(spark, table: str) -> dict[str, frozenset[str]]:
    """Snapshot id -> the value sets Spark's own reader shows in it (``VERSION AS OF``)."""
    found = {}
    for row in spark.sql(f"SELECT snapshot_id FROM {table}.snapshots").collect():
        sid = row[0]
        keys = [r[0] for r in spark.sql(f"SELECT user_id FROM {table} VERSION AS OF {sid} "
                                        f"WHERE user_id IN ({', '.join(map(str, SUBJECT_KEYS))})").collect()]
        found[str(sid)] = names_of_keys(keys)
    return found


def derived_and_read_back(location: Path, fmt: DatasetFormat = DatasetFormat.ICEBERG, key: str = "user_id",
                          index: ValueIndex | None = None):
    """(derived view, read-back view) of a table's logical check, the derived one through the
    verifier's own pass (its data files' key rows read while they are searched)."""
    root, store, index = Location.parse(location), Store(), index or subject_index()
    support = support_for(fmt)
    read = read_history(support, root, store, key)
    assert read.failed is None and read.history is not None and read.history.key is not None
    listed = [entry.relative for entry in store.list_files(root)]
    scan = scan_location(root, index, store, listed, None, read.scan_keys())
    derived = table_view(support, root, store, key, index, read, dict(zip(listed, scan.key_rows)))
    return derived, read_back(support, root, store, key, index)


def by_snapshot(view) -> dict[str, frozenset[str]]:
    return {hit.version: hit.value_sets for hit in view.logical}
