"""The Iceberg steps through pyiceberg (no JVM), on a real table in pyiceberg's SQL catalog (SQLite,
a local warehouse folder), run as the executor runs them: the format's performers with steps whose
engine is pyiceberg. Each test looks at the bytes (tests/support/byte_scan.py decodes every file)
and at every other row (count and checksum):

- the whole sequence leaves no value of the subject in any file, every other row, and the tag (moved
  to a snapshot without the subject, its max-ref-age kept);
- a writer committing between the delete's staging and its commit keeps its rows, and the subject's
  row it wrote is erased too (the delete is redone from the new state);
- a run killed between listing the files to remove and removing them resumes without removing a
  file a snapshot references again, and counts what the first attempt removed;
- orphans go, metadata files stay; a path outside the catalogued location stops the removal before
  any file is deleted; a catalog table living elsewhere is refused.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from byte_scan import find_values
from pyiceberg_lakehouse import SUBJECT, TAG, TAG_AGE_MS, LocalLake as Lake, arrow, checksum, other_rows, others, subject_rows

from piitracer.model.outcome import Attempt, SafetyError
from piitracer.model.plan import Action, ExpireSnapshotsParams, RemoveOrphanFilesParams, Step, StepEngine
from piitracer.storage import failpoints
from piitracer.storage.locations import Location


@pytest.fixture(autouse=True)
def own_pyiceberg_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the workspace's catalog: no PYICEBERG_* or .pyiceberg.yaml of the machine (or of an
    earlier test) overrides it."""
    import os

    for key in list(os.environ):
        if key.upper().startswith("PYICEBERG_"):
            monkeypatch.delenv(key)
    home = tmp_path / "pyiceberg-home"
    home.mkdir()
    monkeypatch.setenv("PYICEBERG_HOME", str(home))


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    return Lake(tmp_path)


def test_the_steps_leave_no_byte_of_the_subject_and_every_other_row(lake: Lake) -> None:
    current, tagged = checksum(others(lake.rows())), checksum(others(lake.rows(TAG)))
    assert lake.leftovers()  # the subject is in data files, manifest bounds and the tag's snapshot
    done = lake.erase()
    assert done["delete"].rows_deleted == 3 and done["delete"].details["engine"] == "pyiceberg"
    assert done["tag"].rows_deleted == 2 and done["tag"].details["ref_type"] == "tag"
    assert done["expire"].files_removed > 0 and done["expire"].details["snapshots_expired"] >= 4
    assert lake.leftovers() == []
    assert checksum(lake.rows()) == current and checksum(lake.rows(TAG)) == tagged
    tag = lake.connect().load_table("fintech.payments").metadata.refs[TAG]
    assert tag.snapshot_ref_type.value == "tag" and tag.max_ref_age_ms == TAG_AGE_MS
    assert str(tag.snapshot_id) == done["tag"].version_after
    assert not any(name.startswith("piitracer_rewrite_") for name in lake.connect().load_table("fintech.payments").metadata.refs)


def _head_manifest_entries(table) -> list:
    head = table.current_snapshot()
    return [e for m in head.manifests(table.io) for e in m.fetch_manifest_entry(table.io, discard_deleted=False)]


def _head_manifests_hold(table, values) -> list[str]:
    """Which of the head's manifest files hold one of ``values`` (decoded, as the byte scan does)."""
    from byte_scan import values_in_file

    found = []
    for manifest in table.current_snapshot().manifests(table.io):
        path = Path(manifest.manifest_path.removeprefix("file://"))
        found += [f"{path.name}: {where}" for where in values_in_file(path, values)]
    return found


def test_the_delete_drops_its_tombstones_in_its_own_commit(lake: Lake) -> None:
    """The delete's DELETED manifest entries would keep the removed files' bounds (the subject's
    values): the delete step commits their drop with it, in one commit (one new metadata file),
    the data as the delete left it; the plan's rewrite_manifests step then finds nothing."""
    from pyiceberg_lakehouse import SUBJECT_VALUES

    before = lake.connect().load_table("fintech.payments")
    metadata_files = len(before.metadata.metadata_log)
    assert any(e.data_file.lower_bounds for e in _head_manifest_entries(before))
    outcome = lake.run(Action.DELETE_ROWS, keyed=True)
    table = lake.connect().load_table("fintech.payments")
    head = table.current_snapshot()
    assert head.summary.operation.value == "replace" and outcome.details["manifests_rewritten"] > 0
    assert len(table.metadata.metadata_log) == metadata_files + 1  # one commit: delete and drop together
    assert [e.status.name for e in _head_manifest_entries(table) if e.status.name == "DELETED"] == []
    assert _head_manifests_hold(table, SUBJECT_VALUES) == []
    assert checksum(table.scan().to_arrow()) == checksum(table.scan(snapshot_id=head.parent_snapshot_id).to_arrow())
    assert outcome.rows_deleted == 3 and checksum(table.scan().to_arrow()) == checksum(others(before.scan().to_arrow()))
    assert lake.run(Action.REWRITE_MANIFESTS).files_rewritten == 0
    assert lake.connect().load_table("fintech.payments").current_snapshot().snapshot_id == head.snapshot_id


def test_the_manifest_step_drops_the_tombstones_another_delete_left(lake: Lake) -> None:
    """A delete piitracer did not make (pyiceberg's own) leaves DELETED entries whose bounds hold
    the subject's values; the rewrite_manifests step commits a snapshot without them, the data
    unchanged."""
    from pyiceberg.expressions import EqualTo
    from pyiceberg_lakehouse import SUBJECT_VALUES

    lake.connect().load_table("fintech.payments").delete(EqualTo("user_id", SUBJECT["user_id"]))
    table = lake.connect().load_table("fintech.payments")
    assert "DELETED" in [e.status.name for e in _head_manifest_entries(table)]
    assert _head_manifests_hold(table, SUBJECT_VALUES)
    assert lake.run(Action.REWRITE_MANIFESTS).files_rewritten > 0
    table = lake.connect().load_table("fintech.payments")
    head = table.current_snapshot()
    assert head.summary.operation.value == "replace"
    assert all(e.status.name != "DELETED" for e in _head_manifest_entries(table))
    assert _head_manifests_hold(table, SUBJECT_VALUES) == []
    assert checksum(table.scan().to_arrow()) == checksum(table.scan(snapshot_id=head.parent_snapshot_id).to_arrow())


@pytest.mark.parametrize("isolation", ["serializable", "snapshot"])
def test_another_writers_commit_between_staging_and_commit_survives(tmp_path: Path, monkeypatch, isolation) -> None:
    """The delete pauses after staging (``iceberg.pyiceberg.before_commit``); another connection
    appends rows of others and a late row of the subject; the delete's commit loses the race. Under
    serializable isolation pyiceberg refuses the rebase (the new file may hold a subject) and the
    delete is redone from the new state; under snapshot isolation pyiceberg rebases the delete
    planned before, and one more round deletes the late row. Either way both the other writer's rows
    and the erasure survive."""
    lake = Lake(tmp_path / "lake", properties={"write.delete.isolation-level": isolation})
    control = tmp_path / "control"
    control.mkdir()
    monkeypatch.setenv(failpoints.PAUSE_ENV, "iceberg.pyiceberg.before_commit")
    monkeypatch.setenv(failpoints.PAUSE_DIR_ENV, str(control))
    before = others(lake.rows())
    late = arrow(other_rows(500, 25) + subject_rows("2026-04-20", 1))
    found: dict = {}
    worker = threading.Thread(target=lambda: found.update(outcome=_catching(lambda: lake.run(Action.DELETE_ROWS, keyed=True))))
    worker.start()
    _wait_for(control / "iceberg.pyiceberg.before_commit.paused")
    lake.connect().load_table("fintech.payments").append(late)  # the other writer's commit lands first
    (control / "iceberg.pyiceberg.before_commit.go").touch()
    worker.join(120)
    outcome = found["outcome"]
    assert not isinstance(outcome, BaseException), outcome
    after = lake.rows()
    assert checksum(after) == checksum(pa.concat_tables([before, others(late)]))  # theirs kept, the subject's gone
    assert outcome.rows_deleted == 4  # the three planned, and the late one written meanwhile


def test_a_kill_between_listing_and_removing_resumes_without_removing_a_referenced_file(lake: Lake, monkeypatch) -> None:
    lake.run(Action.DELETE_ROWS, keyed=True)
    lake.run(Action.REWRITE_MANIFESTS)
    facts: dict = {}
    attempt = Attempt(None, facts.update)
    real = failpoints.failpoint

    def killed(name, tag=None):
        if name == "iceberg.pyiceberg.before_removal":
            raise KeyboardInterrupt("killed")  # the process dies: no Python error handling runs
        real(name, tag)
    monkeypatch.setattr("piitracer.formats.iceberg_pyiceberg.failpoint", killed)
    with pytest.raises(KeyboardInterrupt):
        lake.run(Action.EXPIRE_SNAPSHOTS, ExpireSnapshotsParams(), attempt)
    monkeypatch.setattr("piitracer.formats.iceberg_pyiceberg.failpoint", real)
    assert facts["candidates"] and all((Path(lake.location.uri) / path).exists() for path in facts["candidates"])
    doomed = sorted(set(facts["candidates"]) - _referenced(lake))  # only expired snapshots referenced these
    assert any(path.startswith("data/") for path in doomed) and any(path.endswith(".avro") for path in doomed)
    # Meanwhile a writer registers one of the listed data files again (add_files): it is referenced now.
    again = next(path for path in doomed if path.startswith("data/"))
    lake.connect().load_table("fintech.payments").add_files([lake.location.child(again).uri])
    resumed = lake.run(Action.EXPIRE_SNAPSHOTS, ExpireSnapshotsParams(), Attempt(facts))
    assert (Path(lake.location.uri) / again).exists()
    assert [path for path in doomed if path != again and (Path(lake.location.uri) / path).exists()] == []
    assert all((Path(lake.location.uri) / path).exists() for path in _referenced(lake))
    assert resumed.files_removed == len(doomed) - 1 == resumed.details["unreferenced_files_removed"]
    assert len(lake.rows()) == 180 + len(pq.read_table(Path(lake.location.uri) / again))  # 183 rows, 3 the subject's


def test_orphans_go_metadata_files_stay(tmp_path: Path) -> None:
    """An uncommitted data file goes; metadata files stay even once the metadata log no longer
    names them (they hold no row values), and hidden files (as on Spark)."""
    lake = Lake(tmp_path, properties={"write.metadata.previous-versions-max": "1"})
    stray = Path(lake.location.uri) / "data" / "dt=2026-04-19" / "uncommitted-writer.parquet"
    pq.write_table(arrow(subject_rows("2026-04-19")), stray)
    hidden = Path(lake.location.uri) / "data" / ".part.parquet.crc"
    hidden.write_bytes(b"crc")
    metadata = sorted(p.name for p in (Path(lake.location.uri) / "metadata").glob("*.metadata.json"))
    assert len(metadata) > 2  # more than the log keeps
    outcome = lake.run(Action.REMOVE_ORPHAN_FILES, RemoveOrphanFilesParams())
    assert not stray.exists() and outcome.files_removed == 1 and outcome.details["orphan_files"] == 1
    assert sorted(p.name for p in (Path(lake.location.uri) / "metadata").glob("*.metadata.json")) == metadata
    assert hidden.exists()
    lake.rows()


def test_a_path_outside_the_location_stops_the_removal_before_any_file_goes(lake: Lake, tmp_path: Path) -> None:
    elsewhere = tmp_path / "other-team" / "part-0.parquet"
    elsewhere.parent.mkdir()
    pq.write_table(arrow([dict(r, dt="2026-04-18") for r in other_rows(900, 3)]), elsewhere)
    lake.connect().load_table("fintech.payments").add_files([str(elsewhere)])
    files = sorted(p for p in Path(lake.location.uri).rglob("*") if p.is_file())
    with pytest.raises(SafetyError, match="outside its catalogued location"):
        lake.run(Action.EXPIRE_SNAPSHOTS, ExpireSnapshotsParams())
    assert elsewhere.exists() and sorted(p for p in Path(lake.location.uri).rglob("*") if p.is_file()) == files


def test_a_catalog_table_living_elsewhere_is_refused(tmp_path: Path) -> None:
    lake = Lake(tmp_path, location=str(tmp_path / "warehouse" / "fintech" / "payments_copy"))
    (tmp_path / "warehouse" / "fintech" / "payments_copy").mkdir()
    with pytest.raises(SafetyError, match="its catalog keeps the table at .* not at its catalogued location"):
        lake.run(Action.DELETE_ROWS, keyed=True)
    assert checksum(lake.rows()) == checksum(lake.rows())  # nothing changed: still readable
    assert SUBJECT["user_id"] in lake.rows()["user_id"].to_pylist()


def test_the_dry_run_says_pyiceberg_and_no_value(lake: Lake) -> None:
    from piitracer.executor.runner import describe
    from piitracer.model.plan import ValueKind, ValueSource
    from piitracer.model.lineage import ColumnRef

    values = (ValueSource(name="fintech.payments.user_id", kind=ValueKind.IDENTIFIER,
                          source=ColumnRef(dataset="fintech.payments", column="user_id")),)
    step = Step(order=2, id="s002", dataset="fintech.payments", action=Action.DELETE_ROWS, key_column="user_id",
                values_from=values, engine=StepEngine.PYICEBERG)
    text = describe(step, {"fintech.payments": lake.entry})
    assert text.startswith("[pyiceberg] prod.fintech.payments.transaction().delete(In(`user_id`, <fintech.payments.user_id>")
    assert str(SUBJECT["user_id"]) not in text
    spark = describe(step.model_copy(update={"engine": StepEngine.SPARK}), {"fintech.payments": lake.entry})
    assert spark.startswith("[spark] DELETE FROM prod.fintech.payments")


def _referenced(lake: Lake) -> set[str]:
    """Every file a snapshot of the table references now (manifest lists, manifests, live files)."""
    table = lake.connect().load_table("fintech.payments")
    found = set()
    for snapshot in table.metadata.snapshots:
        found.add(snapshot.manifest_list)
        for manifest in snapshot.manifests(table.io):
            found.add(manifest.manifest_path)
            found |= {e.data_file.file_path for e in manifest.fetch_manifest_entry(table.io)}
    return {lake.location.relative(Location.parse(path)) for path in found}


def _catching(call):
    try:
        return call()
    except BaseException as error:  # handed to the test's thread
        return error


def _wait_for(path: Path, limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.05)


def test_a_branch_is_rewritten_in_place_and_a_released_ref_is_gone(lake: Lake) -> None:
    from piitracer.model.plan import ReleaseRefParams, RewriteRefParams

    table = lake.connect().load_table("fintech.payments")
    tagged = table.metadata.refs[TAG].snapshot_id
    table.manage_snapshots().create_branch(tagged, "audit").commit()
    others_in_branch = checksum(others(lake.rows("audit")))
    done = lake.run(Action.REWRITE_REF, RewriteRefParams(ref="audit", ref_type="branch", snapshot_id=tagged), keyed=True)
    assert done.rows_deleted == 2 and done.details["ref_type"] == "branch"
    refs = lake.connect().load_table("fintech.payments").metadata.refs
    assert refs["audit"].snapshot_ref_type.value == "branch" and str(refs["audit"].snapshot_id) == done.version_after
    assert checksum(lake.rows("audit")) == others_in_branch and refs[TAG].snapshot_id == tagged  # the tag untouched
    again = lake.run(Action.REWRITE_REF, RewriteRefParams(ref="audit", ref_type="branch", snapshot_id=tagged), keyed=True)
    assert again.rows_deleted == 0 and again.version_after == done.version_after  # a rerun changes nothing
    lake.run(Action.RELEASE_REF, ReleaseRefParams(ref=TAG, ref_type="tag", snapshot_id=tagged, fix="drop it"))
    assert TAG not in lake.connect().load_table("fintech.payments").metadata.refs


def test_a_shallow_clones_files_of_its_source_are_neither_removed_nor_refused(lake: Lake, tmp_path: Path) -> None:
    source = tmp_path / "warehouse" / "fintech" / "source" / "data" / "part-0.parquet"
    source.parent.mkdir(parents=True)
    pq.write_table(arrow([dict(r, dt="2026-04-18") for r in other_rows(900, 3)]), source)
    lake.connect().load_table("fintech.payments").add_files([str(source)])
    lake.entry = type(lake.entry).model_validate({**lake.entry.model_dump(exclude_defaults=True),
                                                  "clone_of": {"dataset": "fintech.source", "mode": "shallow"}})
    stray = Path(lake.location.uri) / "data" / "stray.parquet"
    pq.write_table(arrow(subject_rows("2026-04-19")), stray)
    expired = lake.run(Action.EXPIRE_SNAPSHOTS, ExpireSnapshotsParams(clean_expired_files=False))
    assert expired.details["clean_expired_files"] == "false" and expired.files_removed == 0
    before = {p for p in Path(lake.location.uri).rglob("*") if p.is_file()}
    orphans = lake.run(Action.REMOVE_ORPHAN_FILES, RemoveOrphanFilesParams())
    # The stray file and the clone's own files only expired snapshots used go; its source's stay.
    gone = before - {p for p in Path(lake.location.uri).rglob("*") if p.is_file()}
    assert stray in gone and source.exists() and orphans.files_removed == len(gone) > 1
    assert {p.suffix for p in gone} == {".parquet", ".avro"}
    assert len(lake.rows()) == 186


def test_a_pyiceberg_failure_is_reported_without_the_subjects_value(lake: Lake, monkeypatch) -> None:
    """pyiceberg's messages can print the row filter (its values): the step's error names the
    failure, never the value."""
    from piitracer.formats.iceberg_pyiceberg import PyicebergEraser

    def failing(self, key_column, values, attempt=None, branch="main"):
        raise ValueError(f"Found new conflicting delete files that can apply to records matching "
                         f"In(ref(name='{key_column}'), {{literal({values[0]})}})")
    monkeypatch.setattr(PyicebergEraser, "delete_rows", failing)
    with pytest.raises(SafetyError) as caught:
        lake.run(Action.DELETE_ROWS, keyed=True)
    assert "delete_rows through pyiceberg failed: ValueError: Found new conflicting" in str(caught.value)
    assert str(SUBJECT["user_id"]) not in str(caught.value) and "<subject value>" in str(caught.value)


@pytest.mark.parametrize("seed", range(4))
def test_live_rows_from_the_manifest_list_are_what_reading_every_snapshot_counts(tmp_path: Path, seed: int) -> None:
    """The delete's before/after totals come from the manifest list's row counts (no manifest
    read): on random histories (appends, copy-on-write deletes and overwrites, a tombstone drop),
    for every snapshot they equal pyiceberg's count and the rows a full read returns."""
    import random

    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.expressions import EqualTo, In

    from piitracer.formats.iceberg_pyiceberg import drop_tombstones
    from piitracer.formats.iceberg_rows import count, live_rows

    rng = random.Random(seed)
    (tmp_path / "wh").mkdir()
    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace("ns")
    schema = pa.schema([("user_id", pa.int64()), ("note", pa.string())])

    def batch(n: int) -> pa.Table:
        ids = [rng.randrange(20) for _ in range(n)]
        return pa.table({"user_id": pa.array(ids, pa.int64()), "note": [f"n{rng.random()}" for _ in ids]}, schema=schema)

    table = catalog.create_table("ns.t", schema=schema)
    for _ in range(8):
        move = rng.choice(["append", "append", "delete", "overwrite", "tombstones"])
        if move == "append":
            table.append(batch(rng.randrange(1, 40)))
        elif move == "delete":
            table.delete(In("user_id", [rng.randrange(20) for _ in range(3)]))
        elif move == "overwrite":
            table.overwrite(batch(rng.randrange(1, 10)), overwrite_filter=EqualTo("user_id", rng.randrange(20)))
        else:
            drop_tombstones(table)
    assert len(table.metadata.snapshots) >= 4
    for snapshot in table.metadata.snapshots:
        read = len(table.scan(snapshot_id=snapshot.snapshot_id).to_arrow())
        assert live_rows(table, snapshot) == count(table, snapshot) == table.scan(snapshot_id=snapshot.snapshot_id).count() == read
        for subject in range(0, 20, 3):  # with a predicate: the rows a full read keeps
            matched = EqualTo("user_id", subject)
            assert count(table, snapshot, matched) == table.scan(row_filter=matched, snapshot_id=snapshot.snapshot_id).count() \
                == len(table.scan(row_filter=matched, snapshot_id=snapshot.snapshot_id).to_arrow())


def test_a_metadata_file_is_read_once_per_store_and_a_commit_is_read_as_the_new_file(lake: Lake, monkeypatch) -> None:
    """``static_table`` keeps what it read of a metadata file (written once, never changed) for the
    store; a commit writes a new file, which is read (the table's new state), and a session's next
    use case (``forget_written``) reads again."""
    from pyiceberg.table import StaticTable

    from piitracer.formats.iceberg_table import static_table

    reads = []
    original = StaticTable.from_metadata.__func__
    monkeypatch.setattr(StaticTable, "from_metadata",
                        classmethod(lambda cls, uri, properties=None: reads.append(uri) or original(cls, uri, properties)))
    first = static_table(lake.location, lake.store)
    assert static_table(lake.location, lake.store) is first and len(reads) == 1
    lake.connect().load_table("fintech.payments").append(arrow(other_rows(9000, 3)))
    lake.store.committed(lake.location)  # as a step that committed says
    after = static_table(lake.location, lake.store)
    catalog = lake.connect().load_table("fintech.payments")
    name = catalog.metadata_location.rsplit("/", 1)[-1]
    assert len(reads) == 2 and reads[1] != reads[0] and after.metadata_location.endswith(name)
    assert after.current_snapshot().snapshot_id == catalog.current_snapshot().snapshot_id != first.current_snapshot().snapshot_id
    lake.store.forget_written("iceberg metadata")
    assert static_table(lake.location, lake.store).metadata_location.endswith(name) and len(reads) == 3
