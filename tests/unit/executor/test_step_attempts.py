"""A step killed after its table commit but before the journal's is run again on resume. These
fast checks (delta-rs and files, no Spark) pin what that second attempt must report and restore;
tests/integration/test_fault_injection.py kills the real CLI at these points."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake

from piitracer.formats import delta as delta_eraser, parquet as parquet_eraser
from piitracer.model.outcome import Attempt
from piitracer.storage.locations import Location
from piitracer.storage.store import Store

STORE = Store()

RETENTION = "delta.logRetentionDuration"


def recording() -> tuple[Attempt, list[dict]]:
    saved: list[dict] = []
    return Attempt(None, saved.append), saved


def test_a_delta_delete_resumed_after_its_commit_reports_the_rows_the_killed_attempt_deleted(tmp_path: Path) -> None:
    location = tmp_path / "t"
    write_deltalake(str(location), pa.table({"k": list(range(100)), "v": ["x"] * 100}))
    first, saved = recording()
    killed = delta_eraser.delete_rows(Location.parse(location), STORE, "k", [3, 4, 5], first)  # as if killed right after this commit
    resumed = delta_eraser.delete_rows(Location.parse(location), STORE, "k", [3, 4, 5], Attempt(saved[0]))

    assert saved == [{"expected": 3, "version_before": "0"}]
    assert killed.rows_deleted == 3
    assert resumed.rows_deleted == 3 and resumed.version_before == "0", "the resumed attempt under-reports"
    assert DeltaTable(str(location)).version() == 1, "the resumed attempt committed nothing"
    assert DeltaTable(str(location)).to_pyarrow_dataset().count_rows() == 97


def test_clean_delta_log_resumed_after_its_override_restores_the_tables_own_retention(tmp_path: Path) -> None:
    """Regression: an attempt killed after setting the log retention to 0 hours left the override
    on the table; the resumed attempt read it as "the table's own" and restored 0 hours for good
    (a later writer's time travel gone)."""
    location = tmp_path / "t"
    write_deltalake(str(location), pa.table({"k": [1, 2]}), configuration={RETENTION: "interval 7 days"})
    write_deltalake(str(location), pa.table({"k": [3]}), mode="append")
    first, saved = recording()
    first.start({"log_retention": "interval 7 days", "version_before": "1"})
    DeltaTable(str(location)).alter.set_table_properties({RETENTION: "interval 0 hours"})  # then the kill

    outcome = delta_eraser.clean_delta_log(Location.parse(location), STORE, Attempt(saved[0]))

    assert DeltaTable(str(location)).metadata().configuration[RETENTION] == "interval 7 days"
    assert outcome.version_before == "1"
    assert sorted(r["k"] for r in DeltaTable(str(location)).to_pyarrow_table().to_pylist()) == [1, 2, 3]


def test_a_parquet_rewrite_resumed_part_way_reports_both_attempts(tmp_path: Path) -> None:
    for name in ("a", "b"):
        pq.write_table(pa.table({"k": [1, 2, 3, 4]}), tmp_path / f"{name}.parquet")
    first, saved = recording()
    first.start({"rows": 4, "files": 2, "bytes": 2 * (tmp_path / "a.parquet").stat().st_size})
    pq.write_table(pa.table({"k": [3, 4]}), tmp_path / "a.parquet")  # the killed attempt rewrote a.parquet

    outcome = parquet_eraser.rewrite_files(Location.parse(tmp_path), STORE, "k", [1, 2], Attempt(saved[0]))

    assert (outcome.rows_deleted, outcome.files_rewritten) == (4, 2)
    assert pq.read_table(tmp_path).column("k").to_pylist() == [3, 4, 3, 4]


def test_a_vacuum_resumed_after_it_removed_files_reports_what_the_killed_attempt_removed(tmp_path: Path) -> None:
    """Regression (the Iceberg expiry and orphan removal share the helper): a file-removing step
    killed after it removed the files reported 0 files on resume (106,702 bytes uninterrupted)."""
    location = tmp_path / "t"
    write_deltalake(str(location), pa.table({"k": list(range(100))}))
    write_deltalake(str(location), pa.table({"k": list(range(100, 200))}), mode="append")
    delta_eraser.delete_rows(Location.parse(location), STORE, "k", [5, 150])
    first, saved = recording()
    uninterrupted_files = delta_eraser.vacuum(Location.parse(location), STORE, first)  # the killed attempt: removed, journal not committed
    resumed = delta_eraser.vacuum(Location.parse(location), STORE, Attempt(saved[0]))

    assert uninterrupted_files.files_removed == 2 and uninterrupted_files.bytes_removed > 0
    assert (resumed.files_removed, resumed.bytes_removed) == (uninterrupted_files.files_removed, uninterrupted_files.bytes_removed)
    assert set(saved[0]) == {"files_before"}
