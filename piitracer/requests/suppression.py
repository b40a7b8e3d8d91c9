"""The suppression list (issue 52): a minimal keyed record of every identifier an erasure removed,
kept after the request closes so that a backfill, a restore or a rebuild that brings the person
back is noticed.

One SQLite file beside the request store (``.piitracer/suppression.sqlite``, mode 0600,
``secure_delete`` on). Each record holds the identifier's keyed hash
(:mod:`piitracer.guard.hashing`: never the value, never an unkeyed hash), for a whole number also
the keyed hash of its number form (so integer columns are matched from their values' bytes), its
kind (the column the value came from and its type), the request id and the day it was erased. The suppression key is a
random 32-byte key wrapped under the master key and kept in the same file; forgetting everyone
destroys the records and the key, forgetting one person destroys their records.

The file also keeps where the last ``guard scan`` got to, per table (an Iceberg snapshot, a Delta
version, the plain files already read), so the next scan reads only what is new.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Iterable, Sequence

from piitracer.crypto.envelope import KeyWrapper, MasterKeyError
from piitracer.requests.private_sqlite import open_private, transaction
from piitracer.guard.hashing import KEY_BYTES, canonical_text, number_hash, suppression_hash
from piitracer.guard.suppression_list import SuppressionList

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    hash BLOB NOT NULL, kind TEXT NOT NULL, value_type TEXT NOT NULL, request_id TEXT NOT NULL, erased_on TEXT NOT NULL,
    number_hash BLOB,
    PRIMARY KEY (hash, kind, request_id)
);
CREATE INDEX IF NOT EXISTS records_by_request ON records (request_id);
CREATE TABLE IF NOT EXISTS scan_positions (
    dataset TEXT PRIMARY KEY, format TEXT NOT NULL, position TEXT NOT NULL, scanned_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS seen_files (dataset TEXT NOT NULL, path TEXT NOT NULL, PRIMARY KEY (dataset, path));
"""

KEY_CONTEXT = "piitracer-suppression-key/v1"
# records.number_hash: the number form's keyed hash; NOT_A_NUMBER for a value that is no 64-bit whole
# number; NULL for a record kept before number forms were (its value is gone: it cannot be added).
NOT_A_NUMBER = b""


@dataclass(frozen=True)
class Identifier:
    """One erased identifier to remember: its value (hashed, never stored), the column it came
    from (``dataset.column``, or a computed form's name) and the value's type."""

    value: object
    kind: str
    value_type: str


@dataclass(frozen=True)
class SuppressionRecord:
    """A kept record (as read back): the hash, the kind, the value's type, the request, the day."""

    hash: bytes
    kind: str
    value_type: str
    request_id: str
    erased_on: str


class SuppressionStore:
    """One workspace's suppression list (see the module docstring). ``wrapper`` (the master key)
    is needed to add records and to scan (both hash with the suppression key), not to count or
    forget them."""

    def __init__(self, path: Path, wrapper: KeyWrapper | None = None) -> None:
        self.path = Path(path)
        self.wrapper = wrapper
        self._db = open_private(self.path)  # secure_delete: a forgotten record or key is overwritten in the file
        self._db.executescript(SCHEMA)
        if "number_hash" not in {row[1] for row in self._db.execute("PRAGMA table_info(records)")}:
            with self._transaction():  # a list kept before number forms: its records have none (NULL)
                self._db.execute("ALTER TABLE records ADD COLUMN number_hash BLOB")
        self._key: bytes | None = None

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "SuppressionStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _transaction(self):
        return transaction(self._db)

    # ---- the key ----------------------------------------------------------------------------------

    def key(self) -> bytes:
        """The suppression key, unwrapped with the master key; made (random) on first use."""
        if self._key is not None:
            return self._key
        if self.wrapper is None:
            raise MasterKeyError("the suppression list needs the master key (--master-key-file or PIITRACER_MASTER_KEY_FILE)")
        row = self._db.execute("SELECT value FROM meta WHERE name = 'key'").fetchone()
        if row is None:
            key = secrets.token_bytes(KEY_BYTES)
            with self._transaction():
                self._db.execute("INSERT INTO meta VALUES ('key', ?)", (json.dumps(
                    {"wrapped": self.wrapper.wrap(key, KEY_CONTEXT), "master_fingerprint": self.wrapper.fingerprint}),))
            self._key = key
            return key
        kept = json.loads(row[0])
        if kept["master_fingerprint"] != self.wrapper.fingerprint:
            raise MasterKeyError(f"the suppression list {self.path} was made under master key fingerprint "
                                 f"{kept['master_fingerprint']}…; this key is {self.wrapper.fingerprint}…: use the original key file")
        self._key = self.wrapper.unwrap(kept["wrapped"], KEY_CONTEXT)
        return self._key

    # ---- records ----------------------------------------------------------------------------------

    def remember(self, request_id: str, identifiers: Iterable[Identifier], erased_on: date | None = None) -> int:
        """Keep one record per distinct (identifier, kind) of a closing request; returns how many
        are kept. Values with no canonical text (booleans, dates) identify no one and are skipped."""
        key = self.key()
        day = (erased_on or datetime.now(timezone.utc).date()).isoformat()
        rows = {}
        for identifier in identifiers:
            hashed = suppression_hash(key, identifier.value)
            if hashed is not None:
                number = number_hash(key, identifier.value) or NOT_A_NUMBER
                rows[(hashed, identifier.kind)] = (hashed, identifier.kind, identifier.value_type, request_id, day, number)
        with self._transaction():
            self._db.executemany("INSERT OR REPLACE INTO records (hash, kind, value_type, request_id, erased_on, number_hash) "
                                 "VALUES (?, ?, ?, ?, ?, ?)", sorted(rows.values()))
        return len(rows)

    def hashes(self) -> list[bytes]:
        """Every kept hash, distinct and sorted: the texts' hashes and the whole numbers' number forms."""
        return [bytes(h) for (h,) in self._db.execute(
            "SELECT hash FROM records UNION SELECT number_hash FROM records WHERE length(number_hash) > 0 ORDER BY 1")]

    def numbers_complete(self) -> bool:
        """Whether every record has its number form decided (kept, or none for a value that is no
        whole number): False while a record kept before number forms remains."""
        return self._db.execute("SELECT NOT EXISTS (SELECT 1 FROM records WHERE number_hash IS NULL)").fetchone()[0] == 1

    def suppression_list(self) -> SuppressionList:
        """The list a scan or a pipeline's guard checks values against: every kept hash, under the
        suppression key, integer columns hashed by number when every record has its number form."""
        return SuppressionList(self.key(), self.hashes(), numbers=self.numbers_complete())

    def records_for(self, hashes: Sequence[bytes]) -> list[SuppressionRecord]:
        """The records of these hashes, sorted by request, kind and hash."""
        found: list[SuppressionRecord] = []
        for start in range(0, len(hashes), 500):
            chunk = list(hashes[start:start + 500])
            marks = ", ".join("?" * len(chunk))
            found += [SuppressionRecord(bytes(h), k, t, r, d) for h, k, t, r, d in self._db.execute(
                f"SELECT hash, kind, value_type, request_id, erased_on FROM records WHERE hash IN ({marks})", chunk)]
        return sorted(found, key=lambda r: (r.request_id, r.kind, r.hash))

    def count(self) -> tuple[int, int]:
        """(records, distinct requests) kept."""
        records, requests = self._db.execute("SELECT count(*), count(DISTINCT request_id) FROM records").fetchone()
        return records, requests

    def kinds(self) -> list[str]:
        """Every kind the records hold (the columns and forms erased values came from), sorted."""
        return [k for (k,) in self._db.execute("SELECT DISTINCT kind FROM records ORDER BY kind")]

    def requests(self) -> list[str]:
        """The request ids the list remembers someone for, sorted."""
        return [r for (r,) in self._db.execute("SELECT DISTINCT request_id FROM records ORDER BY request_id")]

    def forget(self, request_id: str) -> int:
        """Destroy one request's records (the person is forgotten: a return is no longer noticed)."""
        with self._transaction():
            deleted = self._db.execute("DELETE FROM records WHERE request_id = ?", (request_id,)).rowcount
        self._db.execute("VACUUM")  # rebuild the file: no free page keeps the hashes
        return deleted

    def forget_everyone(self) -> int:
        """Destroy every record, the suppression key and the scan positions."""
        with self._transaction():
            deleted = self._db.execute("DELETE FROM records").rowcount
            self._db.execute("DELETE FROM meta WHERE name = 'key'")
            self._db.execute("DELETE FROM scan_positions")
            self._db.execute("DELETE FROM seen_files")
        self._db.execute("VACUUM")
        self._key = None
        return deleted

    # ---- where the last scan got to ------------------------------------------------------------------

    def position(self, dataset: str) -> tuple[str, dict] | None:
        """(format, position) the last scan of ``dataset`` reached, or None."""
        row = self._db.execute("SELECT format, position FROM scan_positions WHERE dataset = ?", (dataset,)).fetchone()
        return (row[0], json.loads(row[1])) if row else None

    def seen(self, dataset: str) -> set[str]:
        """The plain files of ``dataset`` a scan has read."""
        return {p for (p,) in self._db.execute("SELECT path FROM seen_files WHERE dataset = ?", (dataset,))}

    def save_position(self, dataset: str, format: str, position: dict, files_read: Iterable[str] = ()) -> None:
        """Keep where a scan of ``dataset`` got to (and the plain files it read)."""
        now = datetime.now(timezone.utc).isoformat()
        with self._transaction():
            self._db.execute("INSERT OR REPLACE INTO scan_positions VALUES (?, ?, ?, ?)",
                             (dataset, format, json.dumps(position, sort_keys=True), now))
            self._db.executemany("INSERT OR IGNORE INTO seen_files VALUES (?, ?)", [(dataset, p) for p in sorted(files_read)])

    def reset_positions(self) -> None:
        """Forget every scan position (``guard scan --full`` reads everything again)."""
        with self._transaction():
            self._db.execute("DELETE FROM scan_positions")
            self._db.execute("DELETE FROM seen_files")


def value_type(value: object) -> str:
    """The type name a record keeps for a value ('int', 'str', ...)."""
    return type(value).__name__


def identifiers_of(value_sets: dict[str, list], kinds: dict[str, str]) -> list[Identifier]:
    """The identifiers of a request's resolved value sets: each value with the column its set came
    from (``kinds``: value set name -> ``dataset.column`` or the computed form), skipping values
    with no canonical text."""
    found = []
    for name, values in sorted(value_sets.items()):
        # A set the plan does not describe is remembered under its own name, never as a column's
        # values (a return found by it is reported, and erased by no guess).
        kind = kinds.get(name, f"unknown via {name}")
        for value in values:
            if canonical_text(value) is not None:
                found.append(Identifier(value, kind, value_type(value)))
    return found
