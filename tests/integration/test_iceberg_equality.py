"""A merge-on-read Iceberg table that already carries equality-delete files (a daily batch job's
erasure requests, or CDC upserts: written here through the table API, as Spark SQL cannot) is
erased to the bytes: rewrite_data_files applies the equality deletes as well as the plan's own
position deletes, and the equality-delete files it applied (which hold the keys they deleted, a
subject's among them) are removed with one RewriteFiles commit."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from byte_scan import find_values
from spark_lakehouse import SUBJECT_PANS, SUBJECTS, checksum, mor_properties, new_namespace, rows, single_source_plan, spark_for

from piitracer.api import verify_plan
from executor_runs import run_plan
from piitracer.executor.preflight import PlanRefused
from piitracer.executor.runner import ExecuteOptions
from piitracer.model.plan import Action
from piitracer.model.verification import ErasureState

EARLIER_BATCH = [SUBJECTS[0], 8_000_000_007]  # erased logically by yesterday's equality deletes


def read_back(location: Path, visible: list[tuple]) -> None:
    """The verifier's logical read-back of a snapshot with equality deletes, which pyiceberg 0.12
    cannot scan: the keys Spark sees, read from the files directly."""
    from piitracer.formats.iceberg_metadata import versions
    from piitracer.formats.iceberg_table import static_table
    from piitracer.storage.locations import Location
    from piitracer.storage.store import Store

    root = Location.parse(location)
    with pytest.raises(Exception):  # the fallback is what reads it
        static_table(root, Store()).scan(selected_fields=("user_id",)).to_arrow()
    (current,) = [v for v in versions(root, Store(), "user_id") if v.current]
    assert current.problem is None and sorted(current.keys.to_pylist()) == sorted(r[0] for r in visible)


def commit_equality_deletes(spark, table: str, location: Path, column: str, keys: list[int]) -> None:
    """One equality-delete file for ``keys`` of ``column``: Parquet with Iceberg's field id,
    registered by a RowDelta commit (the table API; Spark SQL writes position deletes only)."""
    jvm = spark._jvm
    java_table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, table)
    field_id = java_table.schema().findField(column).fieldId()
    path = location / "data" / f"eq-delete-{uuid.uuid4().hex}.parquet"
    schema = pa.schema([pa.field(column, pa.int64(), nullable=False, metadata={b"PARQUET:field_id": str(field_id).encode()})])
    pq.write_table(pa.table({column: pa.array(keys, pa.int64())}, schema=schema), path)
    ids = spark.sparkContext._gateway.new_array(jvm.int, 1)
    ids[0] = field_id
    delete = (jvm.org.apache.iceberg.FileMetadata.deleteFileBuilder(java_table.spec()).ofEqualityDeletes(ids)
              .withPath(str(path)).withFormat(jvm.org.apache.iceberg.FileFormat.PARQUET)
              .withFileSizeInBytes(os.path.getsize(path)).withRecordCount(len(keys)).build())
    java_table.newRowDelta().addDeletes(delete).commit()
    spark.sql(f"REFRESH TABLE {table}")


@pytest.mark.parametrize("erased", [SUBJECTS, SUBJECTS[:1]], ids=["with-new-deletes", "only-already-deleted"])
def test_a_table_with_equality_delete_files_is_erased_to_the_bytes(tmp_path: Path, warehouse: Path, erased) -> None:
    """With new rows to delete, the rewrite's own commit drops the applied equality deletes. With
    only the person the equality deletes already hid, nothing else does: piitracer's RewriteFiles
    commit removes the file (it holds the person's key)."""
    spark = spark_for(warehouse)
    ns = new_namespace("equality")
    table, location = f"lake.{ns}.src", warehouse / ns / "src"
    spark.sql(f"CREATE TABLE {table} (user_id BIGINT, pan STRING, amount DOUBLE, dt STRING) USING iceberg "
              f"TBLPROPERTIES ({mor_properties()})")
    data = rows(500) + [(8_000_000_007, "4111-0000-0007-9999", 1.0, "2026-11-01")]
    spark.createDataFrame(data, "user_id BIGINT, pan STRING, amount DOUBLE, dt STRING").coalesce(1).writeTo(table).append()
    commit_equality_deletes(spark, table, location, "user_id", EARLIER_BATCH)
    visible = [tuple(r) for r in spark.table(table).collect()]
    assert not [r for r in visible if r[0] in EARLIER_BATCH]  # the equality deletes apply
    assert find_values(location, [SUBJECTS[0]])  # the test can fail: the id is in data and delete files
    read_back(location, visible)
    keep = checksum(r for r in visible if r[0] not in erased)

    ws, plan = single_source_plan(tmp_path, warehouse, table, erased)
    summary = run_plan(ws, plan, ExecuteOptions(no_concurrent_writers=True))

    assert summary.status == "complete", [(r.step.id, r.state, r.message) for r in summary.results]
    rewrite = next(r for r in summary.results if r.step.action is Action.REWRITE_DATA_FILES)
    assert rewrite.outcome.details["applied_equality_delete_files_removed"] == (1 if len(erased) == 1 else 0)
    remaining = [tuple(r) for r in spark.table(table).collect()]
    assert checksum(remaining) == keep and not [r for r in remaining if r[0] in erased + EARLIER_BATCH]
    values = erased + [SUBJECT_PANS[SUBJECTS.index(u)] for u in erased]
    assert find_values(location, values) == []
    assert spark.sql(f"SELECT * FROM {table}.delete_files WHERE content = 2").count() == 0
    report = verify_plan(ws, plan)
    assert [(d.dataset, d.state) for d in report.datasets] == [(f"{ns}.src", ErasureState.ERASED)]


def equality_mode_lake(spark, warehouse: Path, tmp_path: Path, partitioned: bool):
    ns = new_namespace("eqmode")
    table, location = f"lake.{ns}.src", warehouse / ns / "src"
    spark.sql(f"CREATE TABLE {table} (user_id BIGINT, pan STRING, amount DOUBLE, dt STRING) USING iceberg "
              f"{'PARTITIONED BY (dt) ' if partitioned else ''}TBLPROPERTIES ({mor_properties()})")
    spark.createDataFrame(rows(500), "user_id BIGINT, pan STRING, amount DOUBLE, dt STRING").coalesce(2).writeTo(table).append()
    ws, plan = single_source_plan(tmp_path, warehouse, table, SUBJECTS, delete_mode="equality")
    return ns, table, location, ws, plan


def test_delete_mode_equality_writes_one_equality_delete_file_and_erases_to_the_bytes(tmp_path: Path, warehouse: Path) -> None:
    spark = spark_for(warehouse)
    ns, table, location, ws, plan = equality_mode_lake(spark, warehouse, tmp_path, partitioned=False)
    keep = checksum(tuple(r) for r in spark.table(table).collect() if r[0] not in SUBJECTS)
    assert [s.action for s in plan.steps if s.dataset == f"{ns}.src"][1:3] == [Action.EQUALITY_DELETE, Action.REWRITE_DATA_FILES]

    summary = run_plan(ws, plan, ExecuteOptions(no_concurrent_writers=True))

    assert summary.status == "complete", [(r.step.id, r.state, r.message) for r in summary.results]
    logical = next(r for r in summary.results if r.step.action is Action.EQUALITY_DELETE)
    assert (logical.outcome.rows_deleted, logical.outcome.details["equality_delete_keys"]) == (6, 3)
    remaining = [tuple(r) for r in spark.table(table).collect()]
    assert checksum(remaining) == keep
    assert find_values(location, SUBJECTS + SUBJECT_PANS) == []
    assert not list(location.rglob("piitracer-equality-delete-*"))
    report = verify_plan(ws, plan)
    assert [(d.dataset, d.state) for d in report.datasets] == [(f"{ns}.src", ErasureState.ERASED)]


def test_delete_mode_equality_on_a_partitioned_table_is_refused_before_anything_is_written(tmp_path: Path,
                                                                                          warehouse: Path) -> None:
    spark = spark_for(warehouse)
    ns, table, location, ws, plan = equality_mode_lake(spark, warehouse, tmp_path, partitioned=True)
    before = checksum(tuple(r) for r in spark.table(table).collect())
    with pytest.raises(PlanRefused, match=r"delete_mode 'equality' needs an unpartitioned table; .* is partitioned by dt"):
        run_plan(ws, plan, ExecuteOptions(no_concurrent_writers=True))
    assert checksum(tuple(r) for r in spark.table(table).collect()) == before
    assert not list(location.rglob("piitracer-equality-delete-*"))
    assert not (ws.root / ".piitracer" / "journal.sqlite").exists()  # refused before the first step
