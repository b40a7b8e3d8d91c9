"""``requests add`` at volume: a file of many requests is queued in one transaction of the request
store and one of the audit log (not one per request), and nothing else changes: every request
still has a data key of its own, which seals its values and opens no other request's (closing one
destroys its key and leaves the others readable); the audit log records each request as one append
per request did (same kinds, bodies and subject HMACs, verify ok, a Merkle root per request); the
store holds the same rows. An id already in the store refuses the whole file before anything is
written; a bad line is named by its line number, without its value, and nothing is queued; an audit
append that fails keeps none of the file's requests (the store commits after the log), an anchor
that cannot be written keeps them all, recorded."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner
from people_keys import AUDIT_KEY, workspace_keys
from users_lake import users_lake

import piitracer
from piitracer.api import open as open_session
from piitracer.cli.main import cli
from piitracer.crypto.envelope import DataKey, MasterKeyError, ShreddedError
from piitracer.model.audit import EntryKind
from piitracer.model.plan import Subject
from piitracer.model.requests import RequestState
from piitracer.requests.lifecycle import move_request
from piitracer.requests.store import RequestError

SOURCE = "crm.users.user_id"
RECEIVED = datetime(2026, 11, 20, 9, 0, tzinfo=timezone.utc)


def small_lake(root: Path) -> piitracer.Workspace:
    """One Parquet table whose bigint ``user_id`` is the subject key (tests/support/users_lake.py)."""
    return piitracer.load_workspace(users_lake(root))


@pytest.fixture
def lake(tmp_path: Path):
    return small_lake(tmp_path / "ws"), workspace_keys(tmp_path / "keys")


def values_of(count: int) -> dict[str, list[str]]:
    """``count`` requests, every seventh with two values (a person with two accounts)."""
    return {f"dsr-{n:05d}": [str(7_000_000_000 + 2 * n)] + ([str(7_000_000_001 + 2 * n)] if n % 7 == 0 else [])
            for n in range(count)}


def subjects_of(requests: dict[str, list[str]]) -> list[Subject]:
    return [Subject(value=value, request_id=request_id, received_at=RECEIVED + timedelta(hours=n % 48))
            for n, (request_id, values) in enumerate(requests.items()) for value in values]


class Transactions:
    """A connection's trace: how many transactions it began, and any write made outside one (each
    its own transaction and its own sync)."""

    def __init__(self) -> None:
        self.begun, self.open, self.outside = 0, False, []

    def __call__(self, sql: str) -> None:
        word = sql.lstrip().split(None, 1)[0].upper()
        if word == "BEGIN":
            self.begun, self.open = self.begun + 1, True
        elif word in ("COMMIT", "ROLLBACK", "END"):
            self.open = False
        elif word in ("INSERT", "UPDATE", "DELETE", "REPLACE") and not self.open:
            self.outside.append(sql)


def test_many_requests_are_one_transaction_in_the_store_and_one_in_the_audit_log(lake) -> None:
    workspace, keys = lake
    requests = values_of(400)
    with open_session(workspace, keys) as session:
        store, log = session.requests(), session.audit()
        traced = {"store": Transactions(), "audit": Transactions()}
        store._db.set_trace_callback(traced["store"])
        log._db.set_trace_callback(traced["audit"])
        added = session.queue([SOURCE], subjects_of(requests))
        store._db.set_trace_callback(None)
        log._db.set_trace_callback(None)
        assert [r.request_id for r in added] == sorted(requests)
        assert len(store.all()) == 400 and len(log.entries(kinds=(EntryKind.REQUEST,))) == 400
    assert (traced["store"].begun, traced["store"].outside) == (1, [])
    assert (traced["audit"].begun, traced["audit"].outside) == (1, [])


def test_each_request_of_a_bulk_add_is_sealed_under_its_own_data_key(lake) -> None:
    workspace, keys = lake
    requests = values_of(300)
    with open_session(workspace, keys) as session:
        added = session.queue([SOURCE], subjects_of(requests))
        store = session.requests()
        with sqlite3.connect(store.path) as db:
            wrapped = dict(db.execute("SELECT request_id, wrapped FROM data_keys").fetchall())
            sealed = {rid: json.loads(text) for rid, text in db.execute("SELECT request_id, sealed_values FROM requests")}
        # A key of its own per request: 300 wrapped keys, 300 distinct secrets, each the one the
        # request's row names, wrapped for that request only.
        secrets = {rid: keys.master.unwrap(blob, rid) for rid, blob in wrapped.items()}
        assert sorted(secrets) == sorted(requests) and len(set(secrets.values())) == 300
        assert all(DataKey(secrets[r.request_id]).fingerprint == r.key_fingerprint for r in added)
        with pytest.raises(MasterKeyError):
            keys.master.unwrap(wrapped["dsr-00001"], "dsr-00002")
        # Its values open with its key, and with no other request's.
        for request_id, values in requests.items():
            assert store.values(request_id) == values
            assert len(sealed[request_id]) == len(values) and not any(v in "".join(sealed[request_id]) for v in values)
        ids = sorted(requests)
        for mine, other in zip(ids, ids[1:] + ids[:1]):
            token = sealed[mine][0]
            assert DataKey(secrets[mine]).open(token, f"{mine}|subject") == requests[mine][0]
            with pytest.raises(MasterKeyError):
                DataKey(secrets[other]).open(token, f"{mine}|subject")
        # Closing one request destroys its key: its values are gone, every other one still opens.
        log = session.audit()
        closing = "dsr-00042"
        for state in (RequestState.PLANNED, RequestState.EXECUTING, RequestState.EXECUTED, RequestState.VERIFIED,
                      RequestState.WATCHING):
            move_request(store, log, closing, state, f"test: {state.value}", plan_id="plan-test")
        fingerprint = session.close(closing, "test: closed at once")
        assert fingerprint == next(r.key_fingerprint for r in added if r.request_id == closing)
        with pytest.raises(ShreddedError):
            store.values(closing)
        assert all(store.values(rid) == values for rid, values in requests.items() if rid != closing)
        with sqlite3.connect(store.path) as db:
            assert db.execute("SELECT COUNT(*) FROM data_keys WHERE request_id = ?", (closing,)).fetchone() == (0,)
            assert db.execute("SELECT COUNT(*) FROM data_keys").fetchone() == (299,)
        assert log.verify().ok


def test_the_audit_log_and_the_store_record_each_request_as_before(lake) -> None:
    workspace, keys = lake
    requests = values_of(120)
    subjects = subjects_of(requests)
    deadline = workspace.config.policy.deadline
    with open_session(workspace, keys) as session:
        added = session.queue([SOURCE], subjects)
        log, store = session.audit(), session.requests()
        entries = log.entries(kinds=(EntryKind.REQUEST,))
        assert log.verify().ok
        # One request entry per request, in request id order, with the body an append per request wrote.
        assert [e.request_ids for e in entries] == [(rid,) for rid in sorted(requests)]
        for entry, request in zip(entries, added):
            rid = request.request_id
            received = min(s.received_at for s in subjects if s.request_id == rid)
            body = {k: v for k, v in entry.body.items() if k != "at"}
            assert body == {"request_id": rid, "from_state": None, "to_state": "queued", "action": "added",
                            "plan_id": None, "reason": None, "deadline_at": (received + deadline).isoformat(),
                            "subjects": len(requests[rid])}
            assert datetime.fromisoformat(entry.body["at"]).tzinfo is not None
            assert entry.plan_id == "" and entry.kind is EntryKind.REQUEST
            assert sorted(d.hmac for d in entry.subjects) == sorted(keys.audit.subject_hmac(v) for v in requests[rid])
            # Each request's Merkle root: its one entry so far.
            assert log.stored_roots()[rid] == (log.request_root(rid), 1)
        # The store: the rows, the returned requests and the history as one add per request made them.
        for request in added:
            rid = request.request_id
            received = min(s.received_at for s in subjects if s.request_id == rid)
            assert store.get(rid) == request
            assert (request.state, request.subjects, request.sources, request.plan_id, request.last_action) == (
                RequestState.QUEUED, len(requests[rid]), (SOURCE,), None, "added")
            assert (request.received_at, request.deadline_at) == (received, received + deadline)
            assert [h[1:] for h in store.history(rid)] == [(None, "queued", "added", None)]
        raw = json.dumps([e.model_dump(mode="json") for e in log.entries()])
        assert not any(value in raw for values in requests.values() for value in values)


def test_an_id_already_in_the_store_refuses_the_whole_file_before_anything_is_written(lake) -> None:
    workspace, keys = lake
    with open_session(workspace, keys) as session:
        session.queue([SOURCE], subjects_of({"dsr-00050": ["7000000100"]}))
        log, store = session.audit(), session.requests()
        before = (log.head(), [r.request_id for r in store.all()])
        requests = values_of(100)  # dsr-00050 again, with requests sorted before and after it
        with pytest.raises(RequestError, match="request dsr-00050 is already in the request store") as refused:
            session.queue([SOURCE], subjects_of(requests))
        assert "none of the 100 requests given was queued" in str(refused.value)
        assert not any(v in str(refused.value) for values in requests.values() for v in values)
        assert (log.head(), [r.request_id for r in store.all()]) == before
        assert log.verify().ok


def test_requests_add_from_a_csv_file(lake, tmp_path: Path) -> None:
    workspace, keys = lake
    audit_key = tmp_path / "audit.key"
    audit_key.write_text(AUDIT_KEY + "\n")
    audit_key.chmod(0o600)
    arguments = ["--workspace", str(workspace.root), "requests", "add", "--source", SOURCE, "--audit-key-file",
                 str(audit_key), "--master-key-file", str(tmp_path / "keys" / "master.key")]
    lines = ["value,request_id,received_at"] + [f"{7_000_000_000 + n},dsr-{n:05d},2026-11-{1 + n % 28:02d}T09:00:00Z"
                                                for n in range(500)]
    # A bad value on line 58 (a fraction is no bigint): named by its line, not shown; nothing queued.
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(lines[:57] + ["4242.9,dsr-x,2026-11-02T09:00:00Z"] + lines[57:]) + "\n")
    refused = CliRunner().invoke(cli, [*arguments, "--requests", str(bad)])
    assert refused.exit_code == 2 and f"{bad}:58" in refused.output and "4242.9" not in refused.output
    with open_session(workspace, keys) as session:
        assert session.board() == [] and session.audit().entries(kinds=(EntryKind.REQUEST,)) == []
    good = tmp_path / "requests.csv"
    good.write_text("\n".join(lines) + "\n")
    done = CliRunner().invoke(cli, [*arguments, "--requests", str(good), "--output", "json"])
    assert done.exit_code == 0, done.output
    assert [r["request_id"] for r in json.loads(done.output)] == [f"dsr-{n:05d}" for n in range(500)]
    with open_session(workspace, keys) as session:
        assert len(session.board(state="queued")) == 500
        assert len(session.audit().entries(kinds=(EntryKind.REQUEST,))) == 500 and session.audit().verify().ok
        assert session.requests().values("dsr-00321") == ["7000000321"]
    again = CliRunner().invoke(cli, [*arguments, "--requests", str(good)])
    assert again.exit_code == 2 and "dsr-00000 is already in the request store" in again.output


def test_an_audit_append_that_fails_keeps_none_of_the_requests(lake) -> None:
    """The store's transaction is committed only after the audit entries are: a failed append
    leaves neither store holding the file's requests, and the same file can then be added."""
    workspace, keys = lake
    requests = values_of(200)
    with open_session(workspace, keys) as session:
        store, log = session.requests(), session.audit()
        log._db.execute("CREATE TEMP TRIGGER refuse BEFORE INSERT ON main.entries "
                        "WHEN NEW.request_ids = '[\"dsr-00150\"]' BEGIN SELECT RAISE(ABORT, 'disk full'); END")
        with pytest.raises(sqlite3.DatabaseError, match="disk full"):
            session.queue([SOURCE], subjects_of(requests))
        assert store.all() == [] and log.head()[0] == 0
        with sqlite3.connect(store.path) as db:
            assert [db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("data_keys", "history")] == [0, 0]
        log._db.execute("DROP TRIGGER temp.refuse")
        assert len(session.queue([SOURCE], subjects_of(requests))) == 200
        assert len(log.entries(kinds=(EntryKind.REQUEST,))) == 200 and log.verify().ok


def test_an_anchor_that_cannot_be_written_keeps_the_requests_recorded(lake) -> None:
    """An anchor write fails only after the entries are committed: the requests they record are
    kept, and the error is raised."""
    from piitracer.audit import AnchorError

    class Unwritable:
        def write(self, *args) -> None:
            raise AnchorError("audit.anchor /locked/anchor.json: cannot write the anchor: read-only")

    workspace, keys = lake
    with open_session(workspace, keys) as session:
        store, log = session.requests(), session.audit()
        log.anchor = Unwritable()
        with pytest.raises(AnchorError, match="cannot write the anchor"):
            session.queue([SOURCE], subjects_of(values_of(50)))
        log.anchor = None
        assert len(store.all()) == 50 and len(log.entries(kinds=(EntryKind.REQUEST,))) == 50 and log.verify().ok
