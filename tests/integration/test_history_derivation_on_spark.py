"""The logical check derived from the manifests (issue 43.1) shows exactly what reading every
retained snapshot back shows, and what Spark's own reader shows: on random histories written by
Spark and the Iceberg Java API (appends, merge-on-read deletes as position-delete files and as v3
deletion vectors, copy-on-write deletes, overwrites, updates, equality-delete files, tags, branches
and commits on them), and in the three places a subject hides from the current snapshot: an old
snapshot only a tag keeps, behind an equality-delete file, and in a data file an equality delete
does not reach (written after it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from table_histories import (SCHEMA, commit_equality_deletes, by_snapshot, derived_and_read_back, names_of_keys,
                               random_history, spark_truth)
from spark_lakehouse import new_namespace, spark_for

from piitracer.verify.history_check import LogicalHit

V2 = "'format-version'='2', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read'"
V3 = "'format-version'='3', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read'"


def make_table(spark, warehouse: Path, properties: str, partitioned: bool) -> tuple[str, Path]:
    ns = new_namespace("hist")
    table = f"lake.{ns}.t"
    spark.sql(f"CREATE TABLE {table} ({SCHEMA}) USING iceberg {'PARTITIONED BY (p) ' if partitioned else ''}"
              f"TBLPROPERTIES ({properties})")
    return table, warehouse / ns / "t"


@pytest.mark.parametrize("version, partitioned, seed", [(2, False, 11), (3, True, 12)], ids=["v2-unpartitioned", "v3-partitioned"])
def test_random_histories_derived_as_read_back_and_as_spark_reads_them(warehouse: Path, version: int,
                                                                       partitioned: bool, seed: int) -> None:
    spark = spark_for(warehouse)
    table, location = make_table(spark, warehouse, V2 if version == 2 else V3, partitioned)
    done = random_history(spark, table, location, seed, steps=14, partitioned=partitioned)
    assert {"delete", "equality", "tag"} <= set(done), done  # the history has what the test is about
    truth = spark_truth(spark, table)
    derived, read_back = derived_and_read_back(location)

    assert derived.problems == [] and derived.versions_checked == len(truth)
    shown = {sid: names for sid, names in truth.items() if names}
    assert by_snapshot(derived) == shown  # Spark's own reader
    assert len(set(truth.values())) >= 3  # snapshots differ in which subjects they show
    refs = {r[0]: r[1] for r in spark.sql(f"SELECT name, snapshot_id FROM {table}.refs WHERE name != 'main'").collect()}
    for hit in derived.logical:
        assert hit.ref is None or refs[hit.ref] == int(hit.version)
    # The read-back (pyiceberg, or the files read directly where it cannot: equality deletes) agrees
    # on every snapshot it can read; v3 deletion vectors next to equality deletes it cannot.
    unread = {p.split()[1] for p in read_back.problems}
    assert [h for h in read_back.logical if h.version not in unread] == [h for h in derived.logical if h.version not in unread]
    if version == 2:
        assert read_back.problems == [] and read_back.logical == derived.logical


def test_a_subject_only_in_an_old_snapshot_a_tag_keeps(warehouse: Path) -> None:
    spark = spark_for(warehouse)
    table, location = make_table(spark, warehouse, V2, partitioned=False)
    spark.createDataFrame([(1, "a", 0), (100, "b", 0), (101, "c", 1)], SCHEMA).coalesce(1).writeTo(table).append()
    spark.sql(f"ALTER TABLE {table} CREATE TAG month_end RETAIN 90 DAYS")
    tagged = spark.sql(f"SELECT snapshot_id FROM {table}.refs WHERE name = 'month_end'").collect()[0][0]
    spark.sql(f"DELETE FROM {table} WHERE user_id = 1")
    spark.sql(f"CALL lake.system.rewrite_data_files(table => '{table.split('.', 1)[1]}', "
              "options => map('delete-file-threshold','1','rewrite-all','true'))")
    spark.sql(f"CALL lake.system.expire_snapshots(table => '{table.split('.', 1)[1]}', "
              "older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)")
    assert spark.sql(f"SELECT count(*) FROM {table}.snapshots").collect()[0][0] == 2  # the tag's and main's
    derived, read_back = derived_and_read_back(location)
    assert derived.logical == [LogicalHit(str(tagged), False, names_of_keys([1]), "month_end")]
    assert derived.logical == read_back.logical and derived.versions_checked == read_back.versions_checked == 2
    assert by_snapshot(derived) == {sid: names for sid, names in spark_truth(spark, table).items() if names}


def test_a_subject_behind_an_equality_delete_and_one_written_after_it(warehouse: Path) -> None:
    """An equality delete hides the rows of data files of a lower sequence number only: the
    subject's row written after it stays visible, and is hidden again by a position delete."""
    spark = spark_for(warehouse)
    table, location = make_table(spark, warehouse, V2, partitioned=False)
    snapshots = []

    def last() -> str:
        return str(spark.sql(f"SELECT snapshot_id FROM {table}.snapshots ORDER BY committed_at DESC LIMIT 1").collect()[0][0])

    spark.createDataFrame([(1, "a", 0), (2, "b", 0), (100, "c", 0)], SCHEMA).coalesce(1).writeTo(table).append()
    snapshots.append(last())
    commit_equality_deletes(spark, table, location, [1, 2])
    snapshots.append(last())
    spark.createDataFrame([(2, "again", 0), (101, "d", 0)], SCHEMA).coalesce(1).writeTo(table).append()
    snapshots.append(last())
    spark.sql(f"DELETE FROM {table} WHERE user_id = 2")
    snapshots.append(last())

    derived, read_back = derived_and_read_back(location)
    assert by_snapshot(derived) == {snapshots[0]: names_of_keys([1, 2]), snapshots[2]: names_of_keys([2])}
    assert [h.current for h in derived.logical] == [False, False] and derived.versions_checked == 4
    assert derived.logical == read_back.logical and read_back.problems == []
    assert by_snapshot(derived) == {sid: names for sid, names in spark_truth(spark, table).items() if names}
