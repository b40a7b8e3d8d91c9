"""Iceberg format v3: a merge-on-read DELETE writes a deletion vector (a Puffin file) instead of a
position-delete file. The plan's sequence (DELETE, rewrite_data_files applying the vectors,
rewrite_manifests, expire, orphans) erases a v3 table to the bytes; the verifier decodes the
Puffin files (their blobs hold positions, not values, and it says so)."""

from __future__ import annotations

from pathlib import Path

from byte_scan import find_values
from spark_lakehouse import SUBJECT_PANS, SUBJECTS, checksum, new_namespace, rows, single_source_plan, spark_for

from executor_runs import run_plan
from piitracer.api import verify_plan
from piitracer.executor.runner import ExecuteOptions
from piitracer.model.plan import Action
from piitracer.model.verification import ErasureState
from piitracer.storage.locations import Location
from piitracer.storage.store import Store
from piitracer.verify.decoders import PUFFIN_NOTE, scan_one_file
from piitracer.verify.values import ValueIndex

V3_MOR = ("'format-version'='3', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
          "'write.merge.mode'='merge-on-read'")


def test_a_v3_table_with_deletion_vectors_is_erased_to_the_bytes(tmp_path: Path, warehouse: Path) -> None:
    spark = spark_for(warehouse)
    ns = new_namespace("vthree")
    table = f"lake.{ns}.src"
    spark.sql(f"CREATE TABLE {table} (user_id BIGINT, pan STRING, amount DOUBLE, dt STRING) USING iceberg "
              f"TBLPROPERTIES ({V3_MOR})")
    data = rows(400)
    # One file per commit: the subjects share files with others' rows, so a DELETE writes vectors.
    spark.createDataFrame(data, "user_id BIGINT, pan STRING, amount DOUBLE, dt STRING").coalesce(1).writeTo(table).append()
    keep = checksum(tuple(r) for r in spark.table(table).collect() if r[0] not in SUBJECTS)
    location = warehouse / ns / "src"

    # A deletion vector as the table's own DELETE writes it: decoded, no value in it, said so.
    spark.sql(f"DELETE FROM {table} WHERE user_id = {SUBJECTS[0]}")
    (puffin,) = [p for p in location.rglob("*.puffin")]
    index = ValueIndex.build({"user_id": [str(u) for u in SUBJECTS], "pan": SUBJECT_PANS})
    scanned = scan_one_file(Location.parse(location), str(puffin.relative_to(location)), index, Store())
    assert scanned.unreadable is None and scanned.hits == ()

    ws, plan = single_source_plan(tmp_path, warehouse, table, SUBJECTS)
    assert [s.action for s in plan.steps if s.dataset == f"{ns}.src"][1:] == [
        Action.DELETE_ROWS, Action.REWRITE_DATA_FILES, Action.REWRITE_MANIFESTS, Action.EXPIRE_SNAPSHOTS,
        Action.REMOVE_ORPHAN_FILES]

    summary = run_plan(ws, plan, ExecuteOptions(no_concurrent_writers=True))

    assert summary.status == "complete", [(r.step.id, r.state, r.message) for r in summary.results]
    rewrite = next(r for r in summary.results if r.step.action is Action.REWRITE_DATA_FILES)
    assert rewrite.outcome.details.get("removed_delete_files_count", 0) >= 1  # the vectors were applied
    remaining = [tuple(r) for r in spark.table(table).collect()]
    assert not [r for r in remaining if r[0] in SUBJECTS] and checksum(remaining) == keep
    assert find_values(location, SUBJECTS + SUBJECT_PANS) == [] and not list(location.rglob("*.puffin"))
    report = verify_plan(ws, plan)
    assert [(d.dataset, d.state) for d in report.datasets] == [(f"{ns}.src", ErasureState.ERASED)]


def puffin_bytes(blob: bytes, properties: dict) -> bytes:
    """A Puffin file as the spec lays it out: magic, blobs, footer (magic, JSON, size, flags, magic)."""
    import json

    footer = json.dumps({"blobs": [{"type": "deletion-vector-v1", "fields": [], "snapshot-id": 1, "sequence-number": 1,
                                    "offset": 4, "length": len(blob), "properties": properties}]}).encode()
    return b"PFA1" + blob + b"PFA1" + footer + len(footer).to_bytes(4, "little") + (0).to_bytes(4, "little") + b"PFA1"


def test_the_puffin_decoder_searches_the_footer_and_every_blob(tmp_path: Path) -> None:
    index = ValueIndex.build({"pan": SUBJECT_PANS})
    clean = tmp_path / "clean.puffin"
    clean.write_bytes(puffin_bytes(b"\x01\x00\x00\x00positions", {"referenced-data-file": "data/part-0.parquet"}))
    leaky = tmp_path / "leaky.puffin"
    leaky.write_bytes(puffin_bytes(SUBJECT_PANS[0].encode(), {"referenced-data-file": f"data/pan={SUBJECT_PANS[1]}/p.parquet"}))
    root = Location.parse(tmp_path)
    assert scan_one_file(root, "clean.puffin", index, Store()).hits == ()
    found = scan_one_file(root, "leaky.puffin", index, Store())
    assert found.unreadable is None
    assert sorted((h.where, h.kind) for h in found.hits) == [
        ("Puffin footer blobs[0].properties.referenced-data-file (inside text)", "metadata"),
        ("blob 0 (deletion-vector-v1)", "raw")]
    assert "positions, not values" in PUFFIN_NOTE
