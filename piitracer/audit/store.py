"""The audit log: one embedded SQLite file, append-only, every entry chained and sealed.

Tables:
- ``entries``: one row per entry (the hashed fields as columns, JSON columns in canonical form),
  ``entry_hash`` and ``seal`` = HMAC(audit key, entry_hash). Triggers refuse UPDATE and DELETE, so
  only appends go through SQLite; anyone who drops the triggers and edits rows is caught by
  :func:`piitracer.audit.verify.verify_log`.
- ``meta``: the key fingerprint and the sealed head (last seq and hash), so cutting entries off the
  end is caught too.
- ``request_roots``: the current Merkle root of each request's entries (derived, re-checked by
  verify; update it only through :meth:`AuditLog.append`).

An existing log is opened as it is: its tables and triggers are checked, never re-created (a
dropped trigger silently put back would hide the tampering). A damaged log refuses appends and
``verify`` names the damage. With an anchor (:mod:`piitracer.audit.anchor`), every append also
writes the new head outside the workspace.
"""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from piitracer.audit.anchor import AnchorFile
from piitracer.audit.hashing import canonical_json, entry_hash, merkle_root
from piitracer.audit.keys import AuditKey
from piitracer.audit.rows import ENTRY_COLUMNS, AuditError, entry_from_row
from piitracer.audit.verify import VerifyResult, verify_log
from piitracer.model.audit import AUDIT_SCHEMA_VERSION, GENESIS_HASH, AuditEntry, EntryKind

SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    seq INTEGER PRIMARY KEY, schema_version TEXT NOT NULL, kind TEXT NOT NULL, recorded_at TEXT NOT NULL,
    plan_id TEXT NOT NULL, request_ids TEXT NOT NULL, subjects TEXT NOT NULL, body TEXT NOT NULL,
    prev_hash TEXT NOT NULL, entry_hash TEXT NOT NULL, seal TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS entries_no_update BEFORE UPDATE ON entries
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS entries_no_delete BEFORE DELETE ON entries
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS request_roots (
    request_id TEXT PRIMARY KEY, merkle_root TEXT NOT NULL, leaves INTEGER NOT NULL, last_seq INTEGER NOT NULL
);
"""
EXPECTED_TABLES = {"entries", "meta", "request_roots"}
EXPECTED_TRIGGERS = {"entries_no_update", "entries_no_delete"}
__all__ = ["AuditError", "AuditLog", "ENTRY_COLUMNS", "entry_from_row", "utc_now"]  # the first and last two from rows


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class AuditLog:
    """An append-only, hash-chained audit log in one SQLite file (created with mode 0600)."""

    def __init__(self, path: str | os.PathLike[str], key: AuditKey, anchor: AnchorFile | None = None,
                 workspace_id: str | None = None) -> None:
        self.path = Path(path)
        self.key = key
        self.anchor = anchor
        #: the workspace this log belongs to: bound into its first entry (and the anchor) when the
        #: first entry is appended; verify fails on a log bound to another one
        self.workspace_id = workspace_id
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not self.path.exists():
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600))
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=DELETE")
            self._db.execute("PRAGMA synchronous=FULL")  # an appended entry survives a crash
            names = dict(self._db.execute("SELECT name, type FROM sqlite_master").fetchall())
            if not names:  # a new, empty file
                self._db.executescript(SCHEMA)
                names = dict(self._db.execute("SELECT name, type FROM sqlite_master").fetchall())
        except sqlite3.DatabaseError as error:
            raise AuditError(f"cannot read audit log {self.path}: {error}") from None
        #: what is missing from the log's structure (tables, the append-only triggers); empty when whole
        self.damage = sorted(f"table {name}" for name in EXPECTED_TABLES if names.get(name) != "table") + sorted(
            f"append-only trigger {name}" for name in EXPECTED_TRIGGERS if names.get(name) != "trigger")
        if "table meta" not in self.damage:
            self._check_key()

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "AuditLog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_key(self) -> None:
        stored = self.meta("key_id")
        if stored is None:
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('key_id', ?)", (self.key.key_id,))
        elif stored != self.key.key_id:
            raise AuditError(f"{self.path}: the audit key ({self.key.source}) is not the key this log was written with")

    def _read(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple]:
        """Rows of a query; a damaged or unreadable file is an AuditError, never a traceback."""
        try:
            return self._db.execute(sql, parameters).fetchall()
        except sqlite3.DatabaseError as error:
            raise AuditError(f"cannot read audit log {self.path}: {error}") from None

    def meta(self, name: str) -> str | None:
        rows = self._read("SELECT value FROM meta WHERE name = ?", (name,))
        return rows[0][0] if rows else None

    # ---- writing --------------------------------------------------------------------------

    def append(self, kind: EntryKind, plan_id: str, subjects: Sequence[tuple[str, str]], body: dict[str, Any]) -> AuditEntry:
        """Append one entry. ``subjects`` are (request id, raw value) pairs: only their HMACs are
        stored. Chaining, sealing and the request roots are updated in one transaction."""
        return self.append_many([(kind, plan_id, subjects, body)])[0]

    def append_many(self, entries: Sequence[tuple[EntryKind, str, Sequence[tuple[str, str]], dict[str, Any]]]
                    ) -> list[AuditEntry]:
        """Append entries ((kind, plan id, subjects, body) each, as :meth:`append` takes one) in
        order, in one transaction: each is numbered, chained, sealed and counted in its requests'
        Merkle roots exactly as appending them one by one would (the same rows, roots and sealed
        head, recording times aside), and the anchor is written once, with the last head. All or
        nothing: an entry that cannot be appended leaves the log as it was.

        Args:
            entries: the entries; ``subjects`` are (request id, raw value) pairs: only their HMACs
                are stored.

        Returns:
            The entries appended, in order (not the workspace's first entry, when a new log gets it).

        Raises:
            AuditError: the log is damaged or unreadable (nothing is appended).
        """
        if self.damage:
            raise AuditError(f"audit log {self.path} is damaged ({', '.join(self.damage)} missing): nothing is "
                             "appended to it; run `piitracer audit verify` and restore it from a copy")
        # HMACs and canonical bodies are computed before the write lock is taken: only the
        # numbering and chaining need it.
        prepared = [self._prepared(kind, plan_id, subjects, body) for kind, plan_id, subjects, body in entries]
        if not prepared:
            return []
        self._db.execute("BEGIN IMMEDIATE")  # one writer at a time: seq and prev_hash stay a chain
        try:
            last = self._db.execute("SELECT seq, entry_hash FROM entries ORDER BY seq DESC LIMIT 1").fetchone()
            seq, prev = (last[0] + 1, last[1]) if last else (1, GENESIS_HASH)
            opening = []
            if self.workspace_id is not None and last is None and prepared[0][0] != EntryKind.WORKSPACE:
                # A new log's history starts with the workspace it belongs to: a log copied into
                # another workspace, or one made elsewhere, is told apart by its first entry.
                opening = [self._prepared(EntryKind.WORKSPACE, "", (), {"workspace_id": self.workspace_id})]
            # Each request's root covers all its entries: those already in the log (read once for
            # the whole batch, as append read them for one entry), then the batch's own.
            touched = sorted({request_id for entry in prepared for request_id in entry[3]})
            hashes: dict[str, list[str]] = {request_id: [] for request_id in touched}
            if touched:
                for request_id, digest in self._read(
                        "SELECT r.value, e.entry_hash FROM entries e, json_each(e.request_ids) r "
                        "WHERE r.value IN (SELECT value FROM json_each(?)) ORDER BY e.seq", (canonical_json(touched),)):
                    hashes[request_id].append(digest)
            last_seq: dict[str, int] = {}
            rows, appended = [], []
            for kind, plan_id, digests, request_ids, body, body_text in opening + prepared:
                fields = {
                    "schema_version": AUDIT_SCHEMA_VERSION, "seq": seq, "kind": kind.value,
                    "recorded_at": utc_now(), "plan_id": plan_id, "request_ids": request_ids,
                    "subjects": [{"request_id": rid, "hmac": mac} for rid, mac in digests],
                    "body": body, "prev_hash": prev,
                }
                digest = entry_hash(fields)
                rows.append((seq, fields["schema_version"], fields["kind"], fields["recorded_at"], plan_id,
                             canonical_json(request_ids), canonical_json(fields["subjects"]), body_text,
                             prev, digest, self.key.seal(digest)))
                for request_id in request_ids:
                    hashes[request_id].append(digest)
                    last_seq[request_id] = seq
                appended.append(AuditEntry(**{**fields, "entry_hash": digest}))
                seq, prev = seq + 1, digest
            head = f"{seq - 1}:{prev}"
            self._db.executemany(
                f"INSERT INTO entries ({', '.join(ENTRY_COLUMNS)}) VALUES ({', '.join('?' * len(ENTRY_COLUMNS))})", rows)
            self._db.executemany("INSERT OR REPLACE INTO request_roots VALUES (?, ?, ?, ?)",
                                 [(rid, merkle_root(hashes[rid]), len(hashes[rid]), last_seq[rid]) for rid in touched])
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('head', ?)", (head,))
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('head_seal', ?)", (self.key.seal(head),))
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        if self.anchor is not None:
            self.anchor.write(self.key, seq - 1, prev, self.bound_workspace())
        return appended[len(opening):]

    def _prepared(self, kind: EntryKind, plan_id: str, subjects: Sequence[tuple[str, str]], body: dict[str, Any]
                  ) -> tuple[EntryKind, str, list[tuple[str, str]], list[str], Any, str]:
        """(kind, plan id, sorted (request id, HMAC) pairs, sorted request ids, the body as its
        canonical JSON reads back, and the canonical JSON of that) of one entry to append."""
        digests = sorted({(rid, self.key.subject_hmac(value)) for rid, value in subjects})
        loaded = json.loads(canonical_json(body))  # what the hash covers and a reader gets back (keys made text)
        return EntryKind(kind), plan_id, digests, sorted({rid for rid, _ in digests}), loaded, canonical_json(loaded)

    def bound_workspace(self) -> str | None:
        """The workspace id the log's first entry binds it to (None: the log is empty, or was
        begun before logs were bound to a workspace)."""
        rows = self._read("SELECT kind, body FROM entries WHERE seq = 1")
        if not rows or rows[0][0] != EntryKind.WORKSPACE.value:
            return None
        try:
            return str(json.loads(rows[0][1]).get("workspace_id"))
        except (ValueError, AttributeError):
            return None

    def _request_hashes(self, request_id: str) -> list[str]:
        rows = self._read(
            "SELECT e.entry_hash FROM entries e, json_each(e.request_ids) r WHERE r.value = ? ORDER BY e.seq",
            (request_id,))
        return [row[0] for row in rows]

    # ---- reading --------------------------------------------------------------------------

    def raw_rows(self) -> list[dict[str, Any]]:
        """Every stored row, as stored (verify reads these, so it sees tampering as it is)."""
        rows = self._read(f"SELECT {', '.join(ENTRY_COLUMNS)} FROM entries ORDER BY seq")
        return [dict(zip(ENTRY_COLUMNS, row)) for row in rows]

    def stored_roots(self) -> dict[str, tuple[str, int]]:
        """request id -> (stored Merkle root, leaf count)."""
        return {rid: (root, leaves) for rid, root, leaves in
                self._read("SELECT request_id, merkle_root, leaves FROM request_roots ORDER BY request_id")}

    def entries(self, request_id: str | None = None, plan_id: str | None = None,
                kinds: tuple[EntryKind, ...] = ()) -> list[AuditEntry]:
        """Entries in sequence order, optionally only a request's, a plan's, or of ``kinds``."""
        where, args = [], []
        if plan_id is not None:
            where.append("plan_id = ?")
            args.append(plan_id)
        if kinds:
            where.append(f"kind IN ({', '.join('?' * len(kinds))})")
            args += [EntryKind(kind).value for kind in kinds]
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self._read(f"SELECT {', '.join(ENTRY_COLUMNS)} FROM entries{clause} ORDER BY seq", tuple(args))
        found = []
        for row in rows:
            entry = entry_from_row(dict(zip(ENTRY_COLUMNS, row)))
            if request_id is not None and request_id not in entry.request_ids:
                continue
            found.append(entry)
        return found

    def head(self) -> tuple[int, str]:
        """(seq, hash) of the last entry; (0, genesis) for an empty log."""
        rows = self._read("SELECT seq, entry_hash FROM entries ORDER BY seq DESC LIMIT 1")
        return (rows[0][0], rows[0][1]) if rows else (0, GENESIS_HASH)

    def request_ids(self) -> list[str]:
        rows = self._read("SELECT DISTINCT r.value FROM entries e, json_each(e.request_ids) r ORDER BY 1")
        return [row[0] for row in rows]

    def verify(self, expect_head: str | None = None) -> VerifyResult:
        """Recompute everything (see :func:`piitracer.audit.verify.verify_log`, which reads this
        log through :class:`piitracer.audit.rows.LogReader`)."""
        return verify_log(self, expect_head=expect_head)

    def request_root(self, request_id: str) -> str:
        """The Merkle root recomputed from the request's entries."""
        return merkle_root(self._request_hashes(request_id))

