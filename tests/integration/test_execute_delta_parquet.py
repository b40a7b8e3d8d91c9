"""Executing plans on the formats Spark does not write here: Delta (delta-rs), a Hive-partitioned
Parquet folder and an archive of weekly Parquet exports. After execute a read finds no subject
row, an independent decode of every file under each location finds none of their values (data,
footer statistics, _delta_log stats, checkpoints), and every other row is intact."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from byte_scan import find_values
from delta_parquet_lakehouse import SUBJECT_PANS, SUBJECTS, build, workspace
from deltalake import DeltaTable, write_deltalake
from spark_lakehouse import checksum, write_workspace

import piitracer
from piitracer.api import plan_deletion
from executor_runs import run_plan
from piitracer.formats import parquet as parquet_eraser
from piitracer.executor.runner import ExecuteOptions
from piitracer.model.plan import Action, Subject
from piitracer.storage.locations import Location
from piitracer.storage.store import Store

STORE = Store()

RECEIVED = "2026-11-20T09:00:00Z"


def delta_rows(location: Path) -> list[tuple]:
    return [tuple(r.values()) for r in DeltaTable(str(location)).to_pyarrow_table().to_pylist()]


def folder_rows(location: Path) -> list[tuple]:
    return [tuple(r.values()) for r in pq.read_table(str(location)).to_pylist()]


def file_digests(location: Path) -> dict[str, str]:
    return {str(p.relative_to(location)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(location.rglob("*.parquet")) if p.is_file()}


def subjects_of(values) -> list[Subject]:
    return [Subject(value=str(v), request_id=f"r{i}", received_at=RECEIVED) for i, v in enumerate(values)]


def test_delta_parquet_and_archive_are_erased_to_the_bytes(tmp_path: Path, warehouse: Path) -> None:
    locations = build(tmp_path / "lake")
    ws = piitracer.load_workspace(workspace(tmp_path, warehouse, locations))
    readers = {"crm.people": delta_rows, "crm.people_copy": delta_rows, "crm.cards": folder_rows, "archive.people_weekly": folder_rows}
    is_subject = lambda row: any(v in SUBJECTS or v in SUBJECT_PANS for v in row)  # noqa: E731
    keep = {name: checksum(r for r in read(locations[name]) if not is_subject(r)) for name, read in readers.items()}
    for name, location in locations.items():  # the test can fail: before the plan runs, the values are on disk
        assert find_values(location, SUBJECTS + SUBJECT_PANS), name
    cards_before = file_digests(locations["crm.cards"])
    holders = {f for f in cards_before if set(pq.read_table(locations["crm.cards"] / f, columns=["pan"]).column("pan").to_pylist()) & set(SUBJECT_PANS)}
    assert 0 < len(holders) < len(cards_before)

    plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), ["crm.people.user_id"], subjects_of(SUBJECTS))
    summary = run_plan(ws, plan, ExecuteOptions(no_concurrent_writers=True))

    assert summary.status == "complete", [(r.step.id, r.state, r.message) for r in summary.results]
    deleted = {r.step.dataset: r.outcome.rows_deleted for r in summary.results if r.step.action in
               (Action.DELETE_ROWS, Action.REWRITE_FILES, Action.REWRITE_ARCHIVE)}
    assert deleted == {"crm.people": 6, "crm.people_copy": 6, "crm.cards": 3, "archive.people_weekly": 18}
    for name, read in readers.items():
        remaining = read(locations[name])
        assert not [r for r in remaining if is_subject(r)], name
        assert checksum(remaining) == keep[name], f"{name}: other rows changed"
        assert find_values(locations[name], SUBJECTS + SUBJECT_PANS) == [], f"{name}: subject bytes remain"
    cards_after = file_digests(locations["crm.cards"])
    assert set(cards_after) == set(cards_before)
    assert {f for f in cards_before if cards_before[f] != cards_after[f]} == holders, "only the files that held subjects were rewritten"
    # The Delta tables stay usable: history after the cleanup, and a further write works.
    people = DeltaTable(str(locations["crm.people"]))
    write_deltalake(str(locations["crm.people"]), pq.read_table(locations["archive.people_weekly"] / "snapshot=2026-11-01" / "part-1.parquet")
                    .select(["user_id", "pan", "amount", "dt"]), mode="append")
    assert DeltaTable(str(locations["crm.people"])).version() == people.version() + 1


HOSTILE = ["1 OR 1=1", "x'; DROP TABLE t; --", 'say "hi"', "Zoë 😀", "back\\slash", "%", "_", "t.`handle`"]
LOOKALIKES = ["1", "x", "say hi", "Zoe", "backslash", "%%", "a_b", "1 OR 1=2"]


def test_hostile_values_delete_exactly_the_intended_delta_rows(tmp_path: Path, warehouse: Path) -> None:
    location = tmp_path / "lake" / "users"
    data = [{"handle": v, "note": "subject"} for v in HOSTILE] + [{"handle": v, "note": "other"} for v in LOOKALIKES]
    data += [{"handle": f"user{i}", "note": "other"} for i in range(300)]
    write_deltalake(str(location), pa.Table.from_pylist(data))
    catalog = {"app.users": {"format": "delta", "location": str(location), "columns": ["handle", "note"],
                             "identifiers": ["handle"], "subject_key": "handle"}}
    ws = piitracer.load_workspace(write_workspace(tmp_path / "ws", warehouse, catalog, "-- no pipelines\n"))
    keep = checksum((r["handle"], r["note"]) for r in data if r["note"] == "other")

    plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), ["app.users.handle"], subjects_of(HOSTILE))
    summary = run_plan(ws, plan, ExecuteOptions(no_concurrent_writers=True))

    assert summary.status == "complete"
    assert checksum(delta_rows(location)) == keep
    assert find_values(location, [v for v in HOSTILE if len(v) >= 4]) == []


def test_a_parquet_rewrite_killed_between_write_and_rename_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "cards"
    folder.mkdir()
    table = pa.table({"pan": [f"{i:04d}" for i in range(1000)], "n": list(range(1000))})
    pq.write_table(table, folder / "part-0.parquet")
    subjects = ["0003", "0500"]
    # A killed run left its complete replacement behind, not yet renamed over the original.
    stale = folder / (".part-0.parquet" + parquet_eraser.TEMP_SUFFIX)
    pq.write_table(table.filter(pa.compute.invert(pa.compute.is_in(table.column("pan"), pa.array(subjects)))), stale)

    first = parquet_eraser.rewrite_files(Location.parse(folder), STORE, "pan", subjects)
    again = parquet_eraser.rewrite_files(Location.parse(folder), STORE, "pan", subjects)  # a resumed run after the rename

    assert first.rows_deleted == 2 and first.details["stale_temporaries_removed"] == 1
    assert again.rows_deleted == 0 and again.files_rewritten == 0
    assert sorted(p.name for p in folder.iterdir()) == ["part-0.parquet"]
    remaining = pq.read_table(folder)
    assert remaining.num_rows == 998 and not set(remaining.column("pan").to_pylist()) & set(subjects)


@pytest.mark.parametrize("values", [["not-a-number"], []])
def test_values_that_cannot_match_the_key_type_touch_nothing(tmp_path: Path, values: list) -> None:
    folder = tmp_path / "t"
    folder.mkdir()
    pq.write_table(pa.table({"user_id": pa.array([1, 2, 3], pa.int64())}), folder / "a.parquet")
    before = file_digests(folder)
    outcome = parquet_eraser.rewrite_files(Location.parse(folder), STORE, "user_id", values)
    assert outcome.rows_deleted == 0 and file_digests(folder) == before


def test_delta_string_key_written_from_string_view_data(tmp_path: Path, warehouse: Path) -> None:
    """Arrow data from Spark can carry string_view columns; delta-rs then exposes file statistics
    that pyarrow cannot compare with a string filter. The delete must still count and remove
    exactly the subjects' rows."""
    location = tmp_path / "lake" / "phones"
    phones = [f"{9_000_000_000 + i}" for i in range(200)]
    for half in (phones[:100], phones[100:]):
        write_deltalake(str(location), pa.table({"phone": pa.array(half, pa.string_view()), "n": list(range(len(half)))}), mode="append")
    catalog = {"support.phones": {"format": "delta", "location": str(location), "columns": ["phone", "n"],
                                  "identifiers": ["phone"], "subject_key": "phone"}}
    ws = piitracer.load_workspace(write_workspace(tmp_path / "ws", warehouse, catalog, "-- no pipelines\n"))
    subjects = [phones[0], phones[150]]

    plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), ["support.phones.phone"], subjects_of(subjects))
    summary = run_plan(ws, plan, ExecuteOptions(no_concurrent_writers=True))

    assert summary.status == "complete"
    (delete,) = [r for r in summary.results if r.step.action is Action.DELETE_ROWS]
    assert delete.outcome.rows_deleted == 2
    assert sorted(r[0] for r in delta_rows(location)) == sorted(set(phones) - set(subjects))
    assert find_values(location, subjects) == []


def test_a_rewrite_task_killed_in_spark_then_resumed_finishes_exactly_the_rest(tmp_path: Path, warehouse: Path) -> None:
    """Rewrites as Spark tasks (local mode: a killed task fails the job, as a lost executor
    without retries would): the task's Python process is SIGKILLed right after its file's
    replacement is in place; the step fails; the resumed attempt finds only the files not yet
    rewritten and reports both attempts' rows and files, and no row but the subjects' is lost."""
    from spark_lakehouse import spark_for

    from piitracer.model.outcome import Attempt
    from piitracer.storage.file_tasks import SparkFileTasks

    folder = tmp_path / "cards"
    folder.mkdir()
    subjects = [f"S{n}" for n in range(6)]
    for number in range(6):  # every file holds one subject's row among 500 others
        pans = [f"{number}-{i:04d}" for i in range(500)] + [subjects[number]]
        pq.write_table(pa.table({"pan": pans, "n": list(range(501))}), folder / f"part-{number}.parquet")
    keep = checksum((r["pan"], r["n"]) for r in pq.read_table(folder).to_pylist() if r["pan"] not in subjects)
    context = spark_for(warehouse).sparkContext
    tasks = SparkFileTasks(lambda: context, tasks_per_core=3)  # 6 tasks of one file each on local[2]
    journaled = Attempt()  # what the journal keeps across the kill
    context.environment["PIITRACER_FAILPOINT"] = "parquet.after_rename@cards"  # the tasks' environment
    try:
        with pytest.raises(Exception):
            parquet_eraser.rewrite_files(Location.parse(folder), STORE, "pan", subjects, journaled, lambda f, s: tasks)
    finally:
        del context.environment["PIITRACER_FAILPOINT"]
    rewritten = [p.name for p in sorted(folder.iterdir()) if subjects[int(p.stem[-1])] not in
                 pq.read_table(p).column("pan").to_pylist()]
    assert 1 <= len(rewritten) < 6  # killed part-way

    resumed = parquet_eraser.rewrite_files(Location.parse(folder), STORE, "pan", subjects, Attempt(journaled.earlier),
                                           lambda f, s: tasks)
    assert (resumed.rows_deleted, resumed.files_rewritten, resumed.details["ran_in"]) == (6, 6, "spark")
    assert checksum((r["pan"], r["n"]) for r in pq.read_table(folder).to_pylist()) == keep
    assert sorted(p.name for p in folder.iterdir()) == [f"part-{n}.parquet" for n in range(6)]
    assert find_values(folder, subjects) == []
