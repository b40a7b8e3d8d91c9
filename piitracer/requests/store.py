"""The request store: every erasure request piitracer operates, its state and deadline, and its
subjects' values — encrypted under the request's own data key, which is wrapped by the master key.

One SQLite file beside the journal (``.piitracer/requests.sqlite``, mode 0600, folder 0700), with
``secure_delete`` on: a deleted row's bytes are overwritten, so a destroyed data key is gone from
the file's pages too (crypto-shredding must not leave the key in a free page). Closing a request
deletes its wrapped data key and its sealed values; its row stays (id, dates, state, the key's
fingerprint), so the board and the audit trail still tell what happened.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable, Sequence

from piitracer.crypto.envelope import DataKey, KeyWrapper, MasterKeyError, ValueCipher, wrap_many
from piitracer.model.errors import NotFoundError, NotNowError
from piitracer.model.requests import TRANSITIONS, ErasureRequest, RequestState
from piitracer.requests.private_sqlite import open_private, transaction
from piitracer.requests.board import INDEXES, BoardPage, BoardQuery, board_page, set_plan_owners, utc_text

SCHEMA = """
CREATE TABLE IF NOT EXISTS requests (
    request_id TEXT PRIMARY KEY, received_at TEXT NOT NULL, deadline_at TEXT NOT NULL, sources TEXT NOT NULL,
    subjects INTEGER NOT NULL, sealed_values TEXT NOT NULL, state TEXT NOT NULL, plan_id TEXT,
    last_action TEXT NOT NULL, last_action_at TEXT NOT NULL, watch_until TEXT, closed_at TEXT, key_fingerprint TEXT
);
CREATE TABLE IF NOT EXISTS data_keys (
    request_id TEXT PRIMARY KEY, wrapped TEXT NOT NULL, master_fingerprint TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS plans (
    plan_id TEXT PRIMARY KEY, plan_json TEXT NOT NULL, written_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
    name TEXT PRIMARY KEY, value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS notified (
    what TEXT PRIMARY KEY, at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS history (
    request_id TEXT NOT NULL, at TEXT NOT NULL, from_state TEXT, to_state TEXT NOT NULL, action TEXT NOT NULL,
    reason TEXT, plan_id TEXT
);
"""


class RequestError(NotNowError):
    """A request that cannot be added or moved (already there, not ready for that step)."""


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


class RequestStore:
    """One workspace's requests (see the module docstring). ``wrapper`` is the master key (or a
    KMS): needed to add requests and to read their values, not to read the board."""

    def __init__(self, path: Path, wrapper: KeyWrapper | None = None) -> None:
        self.path = Path(path)
        self.wrapper = wrapper
        self._wrapper_checked = False
        self._db = open_private(self.path)  # secure_delete: deleted keys and values are overwritten in the file
        self._db.executescript(SCHEMA)
        self._db.executescript(INDEXES)  # the board's queries (requests/board.py) at thousands of requests
        self._utc_deadlines()
        if wrapper is not None:  # a key was given: a wrong one is refused now, before anything is read or written
            try:
                self._wrapper()
            except MasterKeyError:
                self._db.close()
                raise

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "RequestStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- reading ------------------------------------------------------------------------------

    def get(self, request_id: str) -> ErasureRequest:
        row = self._db.execute(f"SELECT {_COLUMNS} FROM requests WHERE request_id = ?", (request_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no request {request_id!r} in the request store")
        return _request(row)

    def has(self, request_id: str) -> bool:
        return self._db.execute("SELECT 1 FROM requests WHERE request_id = ?", (request_id,)).fetchone() is not None

    def all(self) -> list[ErasureRequest]:
        """Every request, by deadline then id."""
        rows = self._db.execute(f"SELECT {_COLUMNS} FROM requests ORDER BY deadline_at, request_id").fetchall()
        return [_request(row) for row in rows]

    def board_page(self, query: BoardQuery) -> BoardPage:
        """One page of the board, filtered, sorted and counted in SQL (:mod:`piitracer.requests.board`)."""
        return board_page(self._db, _COLUMNS, _request, query)

    def plan_ids(self, state: RequestState) -> list[str]:
        """The plans of the requests in ``state``, sorted."""
        return [row[0] for row in self._db.execute("SELECT DISTINCT plan_id FROM requests WHERE state = ? AND "
                                                   "plan_id IS NOT NULL ORDER BY plan_id", (state.value,))]

    def request_ids_of_plan(self, plan_id: str) -> list[str]:
        """The requests last planned in ``plan_id``, sorted."""
        return [row[0] for row in self._db.execute("SELECT request_id FROM requests WHERE plan_id = ? ORDER BY request_id",
                                                   (plan_id,))]

    def was_notified(self, what: str) -> bool:
        """Whether a notification (``plan|step|owner``) was sent already."""
        return self._db.execute("SELECT 1 FROM notified WHERE what = ?", (what,)).fetchone() is not None

    def mark_notified(self, what: str) -> None:
        """Remember that a notification was sent (so it is sent once)."""
        self._db.execute("INSERT OR IGNORE INTO notified VALUES (?, ?)", (what, utc_now().isoformat()))

    def set_plan_owners(self, plan_id: str, owners: Sequence[str]) -> None:
        """Say which console users own a dataset the plan reaches (the board's owner filter)."""
        with self._transaction():
            set_plan_owners(self._db, plan_id, owners)

    def history(self, request_id: str) -> list[tuple[str, str | None, str, str, str | None]]:
        """(at, from, to, action, reason) of every change of a request, in order."""
        return self._db.execute("SELECT at, from_state, to_state, action, reason FROM history WHERE request_id = ? "
                                "ORDER BY rowid", (request_id,)).fetchall()

    def cipher(self, request_ids: Iterable[str]) -> ValueCipher:
        """The data keys of these requests (``None`` for a closed one: its values are shredded)."""
        keys: dict[str, DataKey | None] = {}
        for request_id in sorted(set(request_ids)):
            row = self._db.execute("SELECT wrapped FROM data_keys WHERE request_id = ?", (request_id,)).fetchone()
            if row is None:
                if self.has(request_id):
                    keys[request_id] = None
                continue
            keys[request_id] = DataKey(self._wrapper().unwrap(row[0], request_id))
        return ValueCipher(keys)

    def values(self, request_id: str) -> list[str]:
        """The request's subject values, decrypted (refused once shredded)."""
        cipher = self.cipher([request_id])
        cipher.key(request_id)  # ShreddedError for a closed request
        (sealed,) = self._db.execute("SELECT sealed_values FROM requests WHERE request_id = ?", (request_id,)).fetchone()
        return [cipher.open(request_id, token, "subject") for token in json.loads(sealed)]

    def plan_json(self, plan_id: str) -> str:
        row = self._db.execute("SELECT plan_json FROM plans WHERE plan_id = ?", (plan_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no plan {plan_id[:16]} in the request store")
        return row[0]

    # ---- writing ------------------------------------------------------------------------------

    def add(self, request_id: str, received_at: datetime, deadline_at: datetime, sources: Sequence[str],
            values: Sequence[str], action: str = "added") -> ErasureRequest:
        """A new queued request: a fresh data key, wrapped by the master key, seals its values."""
        return self.add_batch([(request_id, received_at, deadline_at, sources, values)], action)[0]

    def add_many(self, requests: Iterable[tuple[str, datetime, datetime, Sequence[str], Sequence[str]]],
                 action: str = "added") -> int:
        """Queue many requests ((id, received, deadline, sources, values) each) in one transaction,
        each under its own data key (an import from another system; the benchmark's 10,000).
        Times are kept in UTC (the board compares them as text). Returns how many were added."""
        return len(self.add_batch(requests, action))

    def add_batch(self, requests: Iterable[tuple[str, datetime, datetime, Sequence[str], Sequence[str]]],
                  action: str = "added", before_commit: Callable[[list[ErasureRequest]], None] | None = None
                  ) -> list[ErasureRequest]:
        """Queue requests ((id, received, deadline, sources, values) each) as :meth:`add` queues
        one, all in one transaction: each gets a fresh data key of its own (wrapped by the master
        key, the wraps made in one batch) that seals its values and no other request's.

        Args:
            requests: the requests, in the order their rows and history are written.
            action: what each request's history says of the queueing.
            before_commit: called with the requests once their rows are written, before they are
                committed (their audit entries are appended there): when it raises, nothing of the
                batch is kept.

        Returns:
            The requests queued, in the order given, as the store now holds them.

        Raises:
            RequestError: an id already in the store (the first such id, sorted, is named) or given
                twice: nothing of the batch is written.
            MasterKeyError: no master key, or not the store's.
        """
        wrapper = self._wrapper()
        given = [(request_id, received_at, deadline_at, list(sources), list(values))
                 for request_id, received_at, deadline_at, sources, values in requests]
        twice = sorted(request_id for request_id, count in Counter(r[0] for r in given).items() if count > 1)
        if twice:
            raise RequestError(f"request {twice[0]} is given twice: none of the {len(given)} requests given was queued")
        now = utc_now().isoformat()
        data_keys = DataKey.generate_many(len(given))
        # One derivation of the wrapping key for the whole batch, not one per request (MasterKey.wrap_many).
        wrapped = wrap_many(wrapper, [(key.secret, request_id) for key, (request_id, *_) in zip(data_keys, given)])
        master = wrapper.fingerprint
        rows, keys, history = [], [], []
        for key, wrapped_key, (request_id, received_at, deadline_at, sources, values) in zip(data_keys, wrapped, given):
            sealed = json.dumps([key.seal(v, f"{request_id}|subject") for v in values])
            keys.append((request_id, wrapped_key, master))
            rows.append((request_id, utc_text(received_at), utc_text(deadline_at), json.dumps(sources), len(values),
                         sealed, RequestState.QUEUED.value, None, action, now, None, None, key.fingerprint))
            history.append((request_id, now, RequestState.QUEUED.value, action))
        # The rows as written are the requests as the store will hold them (what get() would read back).
        added = [_request(row) for row in rows]
        with self._transaction():
            # Checked inside the write transaction: no other writer can add one of these ids between.
            taken = self._db.execute("SELECT request_id, state FROM requests WHERE request_id IN "
                                     "(SELECT value FROM json_each(?)) ORDER BY request_id LIMIT 1",
                                     (json.dumps([r[0] for r in rows]),)).fetchone()
            if taken is not None:
                rest = f"; none of the {len(rows)} requests given was queued" if len(rows) > 1 else ""
                raise RequestError(f"request {taken[0]} is already in the request store (state {taken[1]}){rest}")
            try:
                self._db.executemany("INSERT INTO data_keys VALUES (?, ?, ?)", keys)
                self._db.executemany(f"INSERT INTO requests ({_COLUMNS}) VALUES ({', '.join('?' * 13)})", rows)
                self._db.executemany("INSERT INTO history VALUES (?, ?, NULL, ?, ?, NULL, NULL)", history)
            except sqlite3.IntegrityError as error:  # not expected after the checks above; rolled back
                raise RequestError(f"the request store refused the batch ({error}): none of the {len(rows)} "
                                   "requests given was queued") from None
            if before_commit is not None:
                # Inside the transaction: the requests are committed only once their entries are
                # recorded; an append that fails keeps none of them (a request never goes unrecorded).
                before_commit(added)
        return added

    def _transaction(self):
        """One transaction (:func:`~piitracer.requests.private_sqlite.transaction`)."""
        return transaction(self._db)

    def _utc_deadlines(self) -> None:
        """Rows written before times were kept in UTC (an offset other than +00:00) are rewritten
        in UTC once, so the board's text comparisons hold."""
        rows = self._db.execute("SELECT request_id, received_at, deadline_at FROM requests WHERE "
                                "deadline_at NOT LIKE '%+00:00' OR received_at NOT LIKE '%+00:00'").fetchall()
        with self._transaction():
            for request_id, received, deadline in rows:
                self._db.execute("UPDATE requests SET received_at = ?, deadline_at = ? WHERE request_id = ?",
                                 (utc_text(datetime.fromisoformat(received)), utc_text(datetime.fromisoformat(deadline)),
                                  request_id))

    def move(self, request_id: str, to: RequestState, action: str, *, plan_id: str | None = None,
             reason: str | None = None, watch_until: datetime | None = None) -> tuple[RequestState, ErasureRequest]:
        """Change a request's state (only along :data:`TRANSITIONS`); returns (from, the request now)."""
        current = self.get(request_id)
        if to not in TRANSITIONS[current.state]:
            raise RequestError(f"request {request_id} is {current.state.value}: it cannot become {to.value} ({action})")
        now = utc_now().isoformat()
        with self._transaction():
            self._db.execute("UPDATE requests SET state = ?, last_action = ?, last_action_at = ?, plan_id = COALESCE(?, plan_id), "
                             "watch_until = COALESCE(?, watch_until) WHERE request_id = ?",
                             (to.value, action, now, plan_id, watch_until.isoformat() if watch_until else None, request_id))
            self._db.execute("INSERT INTO history VALUES (?, ?, ?, ?, ?, ?, ?)",
                             (request_id, now, current.state.value, to.value, action, reason, plan_id))
        return current.state, self.get(request_id)

    def note(self, request_id: str, action: str) -> None:
        """Record an action that does not change the state (an attestation)."""
        self._db.execute("UPDATE requests SET last_action = ?, last_action_at = ? WHERE request_id = ?",
                         (action, utc_now().isoformat(), request_id))

    def keep_plan(self, plan_id: str, plan_json: str) -> None:
        """Keep a plan (values sealed) for later re-verification without its file."""
        self._db.execute("INSERT OR REPLACE INTO plans VALUES (?, ?, ?)", (plan_id, plan_json, utc_now().isoformat()))

    def shred(self, request_id: str, action: str, reason: str | None) -> str:
        """Close: destroy the request's data key and its sealed values; returns the key's fingerprint."""
        current = self.get(request_id)
        if RequestState.CLOSED not in TRANSITIONS[current.state]:
            raise RequestError(f"request {request_id} is {current.state.value}: only a watching request can be closed")
        now = utc_now().isoformat()
        with self._transaction():
            self._db.execute("DELETE FROM data_keys WHERE request_id = ?", (request_id,))
            self._db.execute("UPDATE requests SET sealed_values = '[]', state = ?, last_action = ?, last_action_at = ?, "
                             "closed_at = ? WHERE request_id = ?", (RequestState.CLOSED.value, action, now, now, request_id))
            self._db.execute("INSERT INTO history VALUES (?, ?, ?, ?, ?, ?, NULL)",
                             (request_id, now, current.state.value, RequestState.CLOSED.value, action, reason))
        self._db.execute("VACUUM")  # rebuild the file: no page keeps the key, whatever secure_delete missed
        return current.key_fingerprint or ""

    def forget_plan(self, plan_id: str) -> None:
        """Drop a kept plan (all its requests are closed: its sealed values can no longer be read)."""
        self._db.execute("DELETE FROM plans WHERE plan_id = ?", (plan_id,))

    def _wrapper(self) -> KeyWrapper:
        if self.wrapper is None:
            from piitracer.crypto.envelope import load_master_key

            self.wrapper = load_master_key()
        if not self._wrapper_checked:
            self._check_master(self.wrapper)
            self._wrapper_checked = True
        return self.wrapper

    def master_fingerprint(self) -> str | None:
        """The fingerprint of the master key this store was created under (None: not yet used with one)."""
        row = self._db.execute("SELECT value FROM meta WHERE name = 'master_fingerprint'").fetchone()
        return row[0] if row else None

    def _check_master(self, wrapper: KeyWrapper) -> None:
        """Refuse a master key other than the store's own (:class:`MasterKeyError`, nothing written):
        requests added under a second key would make the store half unreadable, and every batch
        plan over it would fail later, far from the cause. Only the key's fingerprint (a hash of a
        value derived from it) is kept, never the key."""
        recorded = self.master_fingerprint()
        if recorded is None:
            # A store written before the fingerprint was recorded (or a new one) records it on first
            # use with a key. Its data keys already name the master key that wrapped them: a key that
            # wrapped none of them is refused here too rather than recorded.
            wrapped_by = [row[0] for row in self._db.execute(
                "SELECT DISTINCT master_fingerprint FROM data_keys ORDER BY master_fingerprint")]
            if wrapped_by and wrapper.fingerprint not in wrapped_by:
                raise MasterKeyError(self._wrong_master(wrapper, ", ".join(f"{f}…" for f in wrapped_by)))
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('master_fingerprint', ?)", (wrapper.fingerprint,))
            return
        if recorded != wrapper.fingerprint:
            raise MasterKeyError(self._wrong_master(wrapper, f"{recorded}…"))

    def _wrong_master(self, wrapper: KeyWrapper, expected: str) -> str:
        source = getattr(wrapper, "source", "the master key given")
        option = getattr(wrapper, "option", "--master-key-file")
        return (f"the request store {self.path} was created under master key fingerprint {expected}; this key "
                f"({source}) is {wrapper.fingerprint}…: use the original key file ({option} or "
                f"PIITRACER_MASTER_KEY_FILE); nothing was changed")


_COLUMNS = ("request_id, received_at, deadline_at, sources, subjects, sealed_values, state, plan_id, last_action, "
            "last_action_at, watch_until, closed_at, key_fingerprint")


def _request(row: tuple) -> ErasureRequest:
    (request_id, received, deadline, sources, subjects, _, state, plan_id, action, action_at, watch, closed, fingerprint) = row
    return ErasureRequest(
        request_id=request_id, received_at=datetime.fromisoformat(received), deadline_at=datetime.fromisoformat(deadline),
        sources=tuple(json.loads(sources)), subjects=subjects, state=RequestState(state), plan_id=plan_id,
        last_action=action, last_action_at=datetime.fromisoformat(action_at),
        watch_until=datetime.fromisoformat(watch) if watch else None,
        closed_at=datetime.fromisoformat(closed) if closed else None, key_fingerprint=fingerprint)
