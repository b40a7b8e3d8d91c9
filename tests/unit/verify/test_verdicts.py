"""Verdicts that mean what they say, on real files (pyiceberg, delta-rs, Parquet): a number is
found only as a whole token in a place that can hold a subject value.

- user 4242 is not "found" inside another user's hex digest (``…c4242a…``);
- user 1000 is not "found" in a manifest's ``record_count``/``value_counts``, a snapshot summary's
  ``added-records``, a Delta ``numRecords`` or an Iceberg position delete's row position, because
  a file had 1000 rows;
- and a real leftover in each value-bearing place (data, free text, a partition folder, a
  manifest's partition value and bounds, Delta partition values, min/max stats, a DELETE
  predicate) is still found.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from piitracer.storage.locations import Location
from piitracer.storage.store import Store
from piitracer.verify.decoders import scan_location
from piitracer.verify.values import Place, ValueIndex

STORE = Store()
ROWS = 1000  # the file's row count equals a subject's id: the trap for counts read as values
SUBJECTS = {"ids": [1000, 4242]}


def hashes_with_embedded(number: str, count: int) -> list[str]:
    """SHA-256 hex digests in which ``number`` sits between two hex letters (``…c4242a…``)."""
    found: list[str] = []
    seed = 0
    while len(found) < count:
        digest = hashlib.sha256(str(seed).encode()).hexdigest()
        if re.search(rf"[a-f]{number}[a-f]", digest):
            found.append(digest)
        seed += 1
    return found


def others(rows: int = ROWS) -> pa.Table:
    """``rows`` people, none of them a subject; some hashes hold the subjects' digits inside."""
    tricky = hashes_with_embedded("4242", 3) + hashes_with_embedded("1000", 3)
    digests = (tricky + [hashlib.sha256(f"x{i}".encode()).hexdigest() for i in range(rows)])[:rows]
    return pa.table({"user_id": pa.array(range(5000, 5000 + rows), pa.int64()), "user_hash": digests,
                     "country": ["IN"] * rows})


def where(result) -> list[tuple[str, str, str]]:
    return sorted((hit.file, hit.where, hit.kind) for hit in result.hits)


def scan(folder: Path):
    return scan_location(Location.parse(str(folder)), ValueIndex.build(SUBJECTS), STORE)


def iceberg_table(tmp_path: Path, data: pa.Table, partition_by: str | None = None, properties: dict | None = None):
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.transforms import IdentityTransform

    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace("crm")
    table = catalog.create_table("crm.people", schema=data.schema, properties=properties or {})
    if partition_by:
        with table.update_spec() as spec:
            spec.add_field(partition_by, IdentityTransform(), partition_by)
    table.append(data)
    return tmp_path / "wh" / "crm" / "people"


# ---- no false "found" -----------------------------------------------------------------------------

def test_a_number_inside_a_hex_digest_is_not_the_subject(tmp_path: Path) -> None:
    folder = tmp_path / "hashes"
    folder.mkdir()
    pq.write_table(others(), folder / "part-0.parquet")
    assert where(scan(folder)) == []
    # The same digits as a whole token of free text are the subject.
    pq.write_table(pa.table({"note": ["erase request for user 4242, see ticket"]}), folder / "part-1.parquet")
    assert where(scan(folder)) == [("part-1.parquet", "column note (inside text)", "data"),
                                   ("part-1.parquet", "footer statistics max of note", "statistics"),
                                   ("part-1.parquet", "footer statistics min of note", "statistics")]


def test_counts_in_iceberg_manifests_and_metadata_are_not_subject_values(tmp_path: Path) -> None:
    location = iceberg_table(tmp_path, others())
    result = scan(location)
    assert any(name.endswith(".metadata.json") for name in result.files)
    assert any(name.endswith(".avro") for name in result.files)
    assert where(result) == []


def test_counts_in_a_delta_log_are_not_subject_values(tmp_path: Path) -> None:
    location = tmp_path / "delta"
    write_deltalake(str(location), others())
    write_deltalake(str(location), others(), mode="append")
    DeltaTable(str(location)).create_checkpoint()
    result = scan(location)
    assert any("_delta_log" in name and name.endswith(".checkpoint.parquet") for name in result.files)
    assert where(result) == []


def test_a_position_delete_files_row_positions_are_offsets(tmp_path: Path) -> None:
    """An Iceberg position delete file (spec field ids 2147483546 file_path, 2147483545 pos)
    deleting row 1000 of a data file does not hold user 1000; a data column named pos does."""
    folder = tmp_path / "deletes"
    folder.mkdir()
    schema = pa.schema([pa.field("file_path", pa.string(), metadata={"PARQUET:field_id": "2147483546"}),
                        pa.field("pos", pa.int64(), metadata={"PARQUET:field_id": "2147483545"})])
    pq.write_table(pa.table({"file_path": ["s3://lake/crm/people/data/00000-0-a.parquet"] * 2, "pos": [999, 1000]},
                            schema=schema), folder / "00000-1-deletes.parquet")
    assert where(scan(folder)) == []
    pq.write_table(pa.table({"pos": pa.array([1000], pa.int64())}), folder / "data.parquet")
    assert ("data.parquet", "column pos", "data") in where(scan(folder))


# ---- a real leftover in each value-bearing place is still found -------------------------------

def test_leftovers_in_iceberg_partition_values_bounds_and_data_are_found(tmp_path: Path) -> None:
    data = pa.concat_tables([others(10), pa.table({"user_id": pa.array([4242], pa.int64()), "user_hash": ["h"],
                                                   "country": ["IN"]})])
    location = iceberg_table(tmp_path, data, partition_by="user_id",
                             properties={"write.summary.partition-limit": "100"})
    places = {(kind, re.sub(r"record \d+", "record N", place)) for _, place, kind in where(scan(location))}
    assert ("data", "column user_id") in places  # the data file
    assert ("path", "file path") in places  # the user_id=4242 partition folder
    assert ("manifest", "record N.data_file.partition.user_id") in places
    assert {p for p in places if p[0] == "manifest_bound"} >= {
        ("manifest_bound", "record N.data_file lower_bounds of field 1"),
        ("manifest_bound", "record N.data_file upper_bounds of field 1")}
    assert ("manifest", "record N.data_file.file_path") in places  # the partition folder in the path
    assert any(kind == "manifest_bound" and "partition summary" in place for kind, place in places)  # manifest list
    assert any(kind == "metadata" and "partitions.user_id=<ids> (key)" in place for kind, place in places)


def test_leftovers_in_delta_partition_values_stats_and_predicates_are_found(tmp_path: Path) -> None:
    data = pa.concat_tables([others(10), pa.table({"user_id": pa.array([4242], pa.int64()), "user_hash": ["h"],
                                                   "country": ["IN"]})])
    partitioned = tmp_path / "by_user"
    write_deltalake(str(partitioned), data, partition_by=["user_id"])
    places = {(kind, re.sub(r"line \d+", "line N", place)) for _, place, kind in where(scan(partitioned))}
    assert ("log", "line N .add.partitionValues.user_id") in places
    assert ("path", "file path") in places

    flat = tmp_path / "flat"
    write_deltalake(str(flat), data.sort_by("user_id").slice(0, 1))  # the subject is the minimum
    write_deltalake(str(flat), others(5), mode="append")
    DeltaTable(str(flat)).delete("user_id = 4242")
    places = {(kind, re.sub(r"line \d+", "line N", place)) for _, place, kind in where(scan(flat))}
    assert ("log_stats", "line N .add.stats (JSON string).minValues.user_id") in places
    assert ("log_stats", "line N .add.stats (JSON string).maxValues.user_id") in places
    assert any(kind == "log" and "operationParameters.predicate" in place for kind, place in places)
    assert ("data", "column user_id") in places  # the old file, until vacuum


def test_where_a_value_sits_decides_what_matches() -> None:
    index = ValueIndex.build(SUBJECTS | {"emails": ["ana@example.com"]})
    assert index.find(1000, Place.COUNT) == set() and index.find("1000", Place.COUNT) == set()
    assert index.find("owner ana@example.com", Place.COUNT) == {"emails"}  # strings are leaks anywhere
    assert index.find("s3://lake/t/data/00000-1000-9f1c.parquet", Place.PATH) == set()  # a task number
    assert index.find("s3://lake/t/data/user_id=1000/00000-0-9f1c.parquet", Place.PATH) == {"ids"}
    for text, found in [("b474734c4242a866", False), ("user_4242", True), ("id-4242", True), ("-4242", False),
                        ("4242.5", False), ("3.4242", False), ("(4242)", True), ("ü4242", False), ("42424", False)]:
        assert bool(index.find(text, Place.VALUE)) is found, text
    assert index.find(1000, Place.VALUE) == {"ids"}


@pytest.mark.parametrize("digest", hashes_with_embedded("4242", 5))
def test_the_arrow_prefilter_and_the_exact_rule_agree_on_digests(tmp_path: Path, digest: str) -> None:
    folder = tmp_path / "one"
    folder.mkdir()
    pq.write_table(pa.table({"h": [digest, f"user {digest} 4242"]}), folder / "x.parquet")
    assert [place for place in where(scan(folder)) if place[2] == "data"] == [("x.parquet", "column h (inside text)", "data")]
