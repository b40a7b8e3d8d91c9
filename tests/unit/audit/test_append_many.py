"""``AuditLog.append_many``: a batch of entries appended in one transaction is the log that
appending them one by one gives: the same rows (sequence numbers, kinds, bodies, subject HMACs,
previous hashes, entry hashes, seals), the same per-request Merkle roots and the same sealed head,
with the clock held the same for both; ``verify`` passes; the anchor names the last head; and a
batch that cannot be appended leaves the log as it was."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import piitracer.audit.recorder as recorder
import piitracer.audit.store as store
from piitracer.audit import AnchorFile, AuditLog, load_audit_key, record_request_entry
from piitracer.audit.recorder import record_request_entries, request_entry
from piitracer.model.audit import EntryKind
from piitracer.storage.store import Location, store_for

KEY = load_audit_key("append-many-test-key-0123456789")
WORKSPACE_ID = "ws-append-many"


class Clock:
    """A clock that ticks one millisecond at every reading: the same readings for both logs."""

    def __init__(self) -> None:
        self.now = datetime(2026, 12, 2, 9, 0, tzinfo=timezone.utc)

    def __call__(self) -> str:
        self.now += timedelta(milliseconds=1)
        return self.now.isoformat(timespec="milliseconds")


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(store, "utc_now", clock)
    monkeypatch.setattr(recorder, "utc_now", clock)
    return clock


class Anchored(AnchorFile):
    """The anchor file (a real one, outside the log's folder), remembering every head written to it."""

    def __init__(self, path: Path) -> None:
        super().__init__(Location.parse(str(path)), store_for(None))
        object.__setattr__(self, "heads", [])

    def write(self, key, seq: int, entry_hash: str, workspace_id: str | None = None) -> None:
        self.heads.append((seq, entry_hash, workspace_id))
        super().write(key, seq, entry_hash, workspace_id)


def earlier_entries() -> list[tuple]:
    """What the log holds before the batch: entries of r-002 and r-003 (so their roots grow), a plan
    entry of two requests, and one of no request."""
    return [
        (EntryKind.REQUEST, "", [("r-002", "7000000002")], {"request_id": "r-002", "to_state": "queued"}),
        (EntryKind.PLAN, "plan-1", [("r-002", "7000000002"), ("r-003", "7000000003")], {"plan_id": "plan-1", "n": 2}),
        (EntryKind.DOWNLOAD, "", [], {"what": "board", "sha256": "0" * 64}),
    ]


def batch_entries() -> list[tuple]:
    """The batch: new requests, a request with two values, requests already in the log, one
    request twice in the batch, an entry of no request and a body with integer keys."""
    entries = [(EntryKind.REQUEST, "", [(f"r-{n:03d}", str(7_000_000_000 + n))],
                {"request_id": f"r-{n:03d}", "to_state": "queued", "subjects": 1}) for n in range(1, 40)]
    entries += [
        (EntryKind.REQUEST, "", [("r-100", "a@example.com"), ("r-100", "b@example.com")], {"request_id": "r-100"}),
        (EntryKind.STEP, "plan-1", [("r-002", "7000000002"), ("r-003", "7000000003")], {"step_id": "s1", "rows": 3}),
        (EntryKind.REQUEST, "", [("r-001", "7000000001")], {"request_id": "r-001", "to_state": "planned"}),
        (EntryKind.DOWNLOAD, "", [], {"what": "certificate", "counts": {2: "two", 10: "ten"}}),
    ]
    return entries


def one_by_one(path: Path, anchor: Anchored | None = None, earlier: bool = True) -> AuditLog:
    log = AuditLog(path, KEY, anchor=anchor, workspace_id=WORKSPACE_ID)
    for entry in (earlier_entries() if earlier else []) + batch_entries():
        log.append(*entry)
    return log


def batched(path: Path, anchor: Anchored | None = None, earlier: bool = True) -> AuditLog:
    log = AuditLog(path, KEY, anchor=anchor, workspace_id=WORKSPACE_ID)
    for entry in earlier_entries() if earlier else []:
        log.append(*entry)
    log.append_many(batch_entries())
    return log


def stored(path: Path) -> dict[str, list[tuple]]:
    """Every row of the log's tables, as stored (request_roots by request id)."""
    with sqlite3.connect(path) as db:
        return {"entries": db.execute("SELECT * FROM entries ORDER BY seq").fetchall(),
                "request_roots": db.execute("SELECT * FROM request_roots ORDER BY request_id").fetchall(),
                "meta": db.execute("SELECT * FROM meta ORDER BY name").fetchall()}


@pytest.mark.parametrize("earlier", [True, False], ids=["log-with-entries", "new-log"])
def test_a_batch_is_the_log_that_one_append_per_entry_gives(tmp_path: Path, monkeypatch, earlier: bool) -> None:
    clocks = []
    for name, build in (("one-by-one", one_by_one), ("batched", batched)):
        clock = Clock()  # the same readings for both logs: their hashes can be compared byte for byte
        monkeypatch.setattr(store, "utc_now", clock)
        anchor = Anchored(tmp_path / "anchors" / f"{name}.json")
        log = build(tmp_path / f"{name}.sqlite", anchor, earlier)
        result = log.verify()
        assert result.ok and result.anchored_seq == log.head()[0], result
        clocks.append((log, anchor))
    (single, single_anchor), (batch, batch_anchor) = clocks
    assert stored(tmp_path / "batched.sqlite") == stored(tmp_path / "one-by-one.sqlite")
    # The first entry binds a new log to its workspace in both; every request's root as recomputed.
    assert batch.entries()[0].kind is EntryKind.WORKSPACE
    assert batch.stored_roots() == single.stored_roots()
    assert {rid: root for rid, (root, _) in batch.stored_roots().items()} == {
        rid: batch.request_root(rid) for rid in batch.request_ids()}
    assert batch.stored_roots()["r-002"][1] == (4 if earlier else 2)  # the earlier entries count in its root
    # The anchor is written once for the batch, with the head one append per entry ends at.
    assert batch_anchor.heads[-1] == single_anchor.heads[-1] == (*batch.head(), WORKSPACE_ID)
    assert len(batch_anchor.heads) == (4 if earlier else 1)
    single.close()
    batch.close()


def test_the_entries_returned_are_those_stored(tmp_path: Path, clock: Clock) -> None:
    log = AuditLog(tmp_path / "a.sqlite", KEY, workspace_id=WORKSPACE_ID)
    appended = log.append_many(batch_entries())
    assert [e.seq for e in appended] == list(range(2, 2 + len(batch_entries())))  # 1 is the workspace's entry
    assert appended == log.entries()[1:]
    assert appended[0].subjects[0].hmac == KEY.subject_hmac("7000000001")
    assert log.append_many([]) == [] and log.head()[0] == appended[-1].seq
    log.close()


def test_request_entries_batched_are_request_entries_one_by_one(tmp_path: Path) -> None:
    """``record_request_entries`` (the bulk ``requests add``) writes what ``record_request_entry``
    writes for each request, times (and so hashes and seals) aside."""
    requests = [(f"dsr-{n:04d}", [(f"dsr-{n:04d}", str(8_000_000_000 + n))]) for n in range(300)]
    details = {"deadline_at": "2026-12-31T00:00:00+00:00", "subjects": 1}
    with AuditLog(tmp_path / "one.sqlite", KEY, workspace_id=WORKSPACE_ID) as log:
        for request_id, pairs in requests:
            record_request_entry(log, request_id, pairs, from_state=None, to_state="queued", action="added",
                                 details=details)
    with AuditLog(tmp_path / "many.sqlite", KEY, workspace_id=WORKSPACE_ID) as log:
        record_request_entries(log, [request_entry(request_id, pairs, from_state=None, to_state="queued",
                                                   action="added", details=details) for request_id, pairs in requests])
        assert log.verify().ok
        assert all(root == log.request_root(rid) and leaves == 1 for rid, (root, leaves) in log.stored_roots().items())
    one, many = stored(tmp_path / "one.sqlite"), stored(tmp_path / "many.sqlite")
    assert len(one["entries"]) == len(many["entries"]) == 301
    # seq, schema_version, kind, plan_id, request_ids, subjects (the HMACs), and the body but its time
    same = lambda rows: [(*r[:3], *r[4:7], {k: v for k, v in json.loads(r[7]).items() if k != "at"})  # noqa: E731
                         for r in rows]
    assert same(one["entries"]) == same(many["entries"])
    assert [r[0] for r in one["request_roots"]] == [r[0] for r in many["request_roots"]]
    assert [r[2:] for r in one["request_roots"]] == [r[2:] for r in many["request_roots"]]  # leaves, last seq


def test_a_batch_that_cannot_be_appended_leaves_the_log_as_it_was(tmp_path: Path, clock: Clock) -> None:
    log = AuditLog(tmp_path / "a.sqlite", KEY, workspace_id=WORKSPACE_ID)
    log.append_many(earlier_entries())
    before = stored(tmp_path / "a.sqlite")
    unserialisable = (EntryKind.DOWNLOAD, "", [], {"what": object()})
    with pytest.raises(TypeError):
        log.append_many(batch_entries() + [unserialisable])
    assert stored(tmp_path / "a.sqlite") == before
    # A failure while the rows are written is rolled back too.
    log._db.execute("CREATE TEMP TRIGGER refuse BEFORE INSERT ON main.request_roots "
                    "WHEN NEW.request_id = 'r-039' BEGIN SELECT RAISE(ABORT, 'refused'); END")
    with pytest.raises(sqlite3.DatabaseError):
        log.append_many(batch_entries())
    assert stored(tmp_path / "a.sqlite") == before
    log._db.execute("DROP TRIGGER temp.refuse")
    log.append_many(batch_entries())
    assert log.verify().ok
    log.close()
