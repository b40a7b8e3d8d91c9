"""The key vault: one data key per subject, stored only wrapped under the master key, found by a
keyed hash of the subject (never the subject itself), destroyed to the bytes.

One call per batch, never per row: :meth:`KeyVault.keys_for` gets or creates the keys of every
subject of a batch in one read and (for the new ones) one write; :meth:`KeyVault.fetch` reads the
keys of a batch; :meth:`KeyVault.destroy` deletes subjects' keys and removes every copy the
backend kept (SQLite: ``secure_delete`` then ``VACUUM``; Delta: a rewrite, a vacuum and the log's
old versions, :mod:`piitracer.shred.delta_vault`).

Two writers creating a key for the same new subject at once must end with one key, or the
loser's rows would be encrypted under a key the vault does not keep. Both backends insert only
when absent and then read back what is stored: every writer uses the winner's key.

SQLite is the embedded default: a file of two tables, ``vault`` (the format and the fingerprint of
the master key the keys are wrapped under) and ``subject_keys`` (``lookup`` hex HMAC, ``wrapped``
key), nothing else.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Protocol

from piitracer.crypto.envelope import KeyWrapper, MasterKey, MasterKeyError
from piitracer.shred.keys import (SubjectKey, SubjectLookup, VaultKeyError, VaultRefusedError, subject_bytes,
                                  wrap_context)

FORMAT = "piitracer-shred-vault/1"
# SQLite's limit on bound parameters is 32766 since 3.32; a chunk well under it.
_CHUNK = 10_000


@dataclass(frozen=True)
class Destroyed:
    """What destroying keys did, as evidence: how many keys were in the vault and deleted, how many
    files of the vault were rewritten or removed, and the vault's state after."""

    location: str
    keys_destroyed: int
    files_removed: int = 0
    version_after: str = ""
    details: dict[str, Any] = field(default_factory=dict)


class VaultBackend(Protocol):
    """Where wrapped keys live: ``lookup`` (hex HMAC) -> ``wrapped`` (the master key's blob)."""

    location: str
    fingerprint: str  # of the master key the vault's keys are wrapped under

    def find(self, lookups: list[str]) -> dict[str, str]:
        """The stored wrapped key of each of ``lookups`` that the vault holds."""

    def insert_missing(self, rows: Mapping[str, str]) -> dict[str, str]:
        """Insert each (lookup, wrapped) whose lookup is absent; return what is stored for every
        lookup of ``rows`` afterwards (another writer's key where it won)."""

    def destroy(self, lookups: list[str]) -> Destroyed:
        """Delete the rows of ``lookups`` and every copy of them the backend keeps."""

    def close(self) -> None:
        """Release the backend's connection or handles."""


class Keyring:
    """The keys of one batch's subjects, by typed subject value. A subject the vault has no key
    for (destroyed, or never created) is absent: :meth:`get` gives None."""

    def __init__(self, keys: Mapping[bytes, SubjectKey]) -> None:
        self._keys = dict(keys)

    def __len__(self) -> int:
        return len(self._keys)

    def get(self, subject: Any) -> SubjectKey | None:
        """The key of one subject value, None when the vault holds none.

        Args:
            subject: a typed subject value.

        Returns:
            The subject's key, or None.

        Raises:
            ShredInputError: the value is not a subject key value.
        """
        return self._keys.get(subject_bytes(subject))


class KeyVault:
    """Per-subject data keys over a backend, wrapped by ``wrapper`` (the master key or a KMS) and
    found by ``lookup``. Opening checks the master key is the vault's (its fingerprint)."""

    def __init__(self, backend: VaultBackend, wrapper: KeyWrapper, lookup: SubjectLookup) -> None:
        if backend.fingerprint != wrapper.fingerprint:
            backend.close()
            raise VaultKeyError(f"the key vault at {backend.location} holds keys wrapped under another master key "
                                f"(fingerprint {backend.fingerprint}, given {wrapper.fingerprint}): give the master key "
                                "the vault was created with; nothing was changed")
        self.backend, self.wrapper, self.lookup = backend, wrapper, lookup
        # Kept between batches of one process (bounded, oldest out first): a subject's lookup, and
        # a key opened from the exact wrapped blob the vault returned. The vault is still asked
        # once per batch, so a key destroyed meanwhile is absent from its answer and never used
        # again; only the work of hashing and unwrapping (HKDFs and AES per subject) is saved for
        # the subjects that recur from batch to batch.
        self._hashed: dict[bytes, str] = {}
        self._opened: dict[tuple[str, str], SubjectKey] = {}

    @property
    def location(self) -> str:
        """Where the vault is (a file path or a table URI), for messages and evidence."""
        return self.backend.location

    def close(self) -> None:
        """Close the backend (the vault cannot be used afterwards)."""
        self.backend.close()

    def __enter__(self) -> "KeyVault":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _lookups(self, subjects: Iterable[Any]) -> dict[str, bytes]:
        lookups, hashed = {}, self._hashed
        for subject in subjects:
            encoded = subject_bytes(subject)
            lookup = hashed.get(encoded)
            if lookup is None:
                lookup = _remember(hashed, encoded, self.lookup.of_bytes(encoded))
            lookups.setdefault(lookup, encoded)
        return lookups

    def keys_for(self, subjects: Iterable[Any]) -> Keyring:
        """Get or create the key of every subject of a batch: one read, and one write for the
        subjects new to the vault (a key made by a concurrent writer wins over ours).

        Args:
            subjects: typed subject values (repeats are fine).

        Returns:
            A keyring holding a key for every subject.

        Raises:
            ShredInputError: a value is not a subject key value (null, boolean, another type).
            VaultKeyError: a stored key does not unwrap under the master key.
            VaultBusyError: the vault kept changing under the write.
        """
        lookups = self._lookups(subjects)
        stored = self.backend.find(sorted(lookups)) if lookups else {}
        missing = [lookup for lookup in sorted(lookups) if lookup not in stored]
        if missing:
            new = {lookup: self.wrapper.wrap(SubjectKey.generate().secret, wrap_context(lookup)) for lookup in missing}
            stored.update(self.backend.insert_missing(new))
        return self._unwrapped(lookups, stored)

    def fetch(self, subjects: Iterable[Any]) -> Keyring:
        """The keys the vault holds for a batch's subjects, in one read; a subject without one
        (destroyed or never created) is absent from the keyring.

        Args:
            subjects: typed subject values (repeats are fine).

        Returns:
            The keyring.

        Raises:
            ShredInputError: a value is not a subject key value.
            VaultKeyError: a stored key does not unwrap under the master key.
        """
        lookups = self._lookups(subjects)
        return self._unwrapped(lookups, self.backend.find(sorted(lookups)) if lookups else {})

    def destroy(self, subjects: Iterable[Any]) -> Destroyed:
        """Destroy the keys of ``subjects``: their rows deleted and every copy of them the vault's
        files kept removed. Idempotent: run again after a crash, it finishes the removal.

        Args:
            subjects: typed subject values.

        Returns:
            What was destroyed and removed (evidence for the certificate).

        Raises:
            ShredInputError: a value is not a subject key value.
        """
        lookups = self._lookups(subjects)
        self._opened = {pair: key for pair, key in self._opened.items() if pair[0] not in lookups}
        return self.backend.destroy(sorted(lookups))

    def _unwrapped(self, lookups: Mapping[str, bytes], stored: Mapping[str, str]) -> Keyring:
        keys, opened = {}, self._opened
        for lookup, encoded in lookups.items():
            wrapped = stored.get(lookup)
            if wrapped is None:
                continue
            key = opened.get((lookup, wrapped))
            if key is None:
                try:
                    key = SubjectKey(self.wrapper.unwrap(wrapped, wrap_context(lookup)))
                except MasterKeyError:  # its message names the context: the lookup must not reach a log
                    raise VaultKeyError(f"a subject key of the vault at {self.location} does not unwrap under the "
                                        "master key given (another master key, or an altered row)") from None
                _remember(opened, (lookup, wrapped), key)
            keys[encoded] = key
        return Keyring(keys)


KEPT = 1 << 18  # lookups and opened keys kept between batches (a few hundred bytes each)


def _remember(cache: dict, key: Any, value: Any) -> Any:
    """Put ``value`` in ``cache``, dropping the oldest entry beyond :data:`KEPT`; returns ``value``."""
    if len(cache) >= KEPT:
        del cache[next(iter(cache))]
    cache[key] = value
    return value


# ---- SQLite ------------------------------------------------------------------------------------

class SqliteVault:
    """The vault in one SQLite file (0600). Deleted rows are overwritten (``secure_delete``) and
    the file rebuilt (``VACUUM``); the rollback journal (never a WAL, whose frames would keep old
    pages after the delete) exists only during a write."""

    def __init__(self, path: str | os.PathLike[str], fingerprint: str) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        existed = self.path.exists()
        if not existed:
            if not self.path.parent.is_dir():
                raise VaultRefusedError(f"{self.path}: no folder {self.path.parent} for the key vault")
            # Created 0600 before SQLite opens it: SQLite gives its journal the same mode.
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        self._db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        try:
            self._db.execute("PRAGMA secure_delete = ON")  # per connection: freed cells are zeroed
            self._db.execute("PRAGMA journal_mode = DELETE")
            self.fingerprint = self._checked(fingerprint) if existed else self._created(fingerprint)
        except sqlite3.DatabaseError as error:
            self._db.close()
            raise VaultRefusedError(f"{self.path}: not a piitracer key vault ({error}); "
                                    "piitracer will not write or delete there") from None
        except BaseException:
            self._db.close()
            raise

    def _created(self, fingerprint: str) -> str:
        with self._transaction():
            self._db.execute("CREATE TABLE vault (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
            self._db.execute("CREATE TABLE subject_keys (lookup TEXT PRIMARY KEY, wrapped TEXT NOT NULL) WITHOUT ROWID")
            self._db.executemany("INSERT INTO vault VALUES (?, ?)", [("format", FORMAT), ("master", fingerprint)])
        return fingerprint

    def _checked(self, fingerprint: str) -> str:
        tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        meta = dict(self._db.execute("SELECT name, value FROM vault")) if tables == {"vault", "subject_keys"} else {}
        if meta.get("format") != FORMAT or "master" not in meta:
            raise VaultRefusedError(f"{self.path}: not a piitracer key vault (tables: {', '.join(sorted(tables)) or 'none'}); "
                                    "piitracer will not write or delete there")
        return meta["master"]

    def _transaction(self):
        return _Immediate(self._db)

    def find(self, lookups: list[str]) -> dict[str, str]:
        """The stored wrapped key of each of ``lookups`` the vault holds (one query per 10,000).

        Args:
            lookups: hex lookups.

        Returns:
            lookup -> wrapped key, for those present.
        """
        found = {}
        for chunk in _chunks(lookups):
            marks = ",".join("?" * len(chunk))
            found.update(self._db.execute(f"SELECT lookup, wrapped FROM subject_keys WHERE lookup IN ({marks})", chunk))
        return found

    def insert_missing(self, rows: Mapping[str, str]) -> dict[str, str]:
        """Insert each (lookup, wrapped) whose lookup is absent, in one write transaction.

        Args:
            rows: lookup -> wrapped key, for subjects the caller found absent.

        Returns:
            What is stored for every lookup of ``rows`` afterwards (a concurrent writer's key
            where it was first).
        """
        # One write transaction: INSERT OR IGNORE keeps a concurrent writer's key, read back inside it.
        with self._transaction():
            self._db.executemany("INSERT OR IGNORE INTO subject_keys (lookup, wrapped) VALUES (?, ?)", rows.items())
            return self.find(list(rows))

    def destroy(self, lookups: list[str]) -> Destroyed:
        """Delete the rows of ``lookups`` (cells zeroed by ``secure_delete``), then ``VACUUM``.

        Args:
            lookups: hex lookups of the subjects whose keys go.

        Returns:
            How many keys were deleted.
        """
        with self._transaction():
            deleted = 0
            for chunk in _chunks(lookups):
                marks = ",".join("?" * len(chunk))
                deleted += self._db.execute(f"DELETE FROM subject_keys WHERE lookup IN ({marks})", chunk).rowcount
        # secure_delete zeroed the cells; VACUUM rebuilds the file so no free page or slack keeps them.
        self._db.execute("VACUUM")
        return Destroyed(self.location, deleted, details={"vacuum": "sqlite"})

    def count(self) -> int:
        """How many subject keys the vault holds."""
        return int(self._db.execute("SELECT COUNT(*) FROM subject_keys").fetchone()[0])

    def close(self) -> None:
        """Close the SQLite connection."""
        self._db.close()


class _Immediate:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (rollback on error): the write lock is taken before the
    first read, so two writers serialise instead of failing on upgrade."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, *rest: object) -> None:
        self.db.execute("COMMIT" if kind is None else "ROLLBACK")


def _chunks(items: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start:start + _CHUNK]


def sqlite_vault(path: str | os.PathLike[str], master: MasterKey) -> KeyVault:
    """The key vault in a SQLite file (created, 0600, when absent).

    Args:
        path: the vault's file; its folder must exist.
        master: the master key the keys are wrapped under (the lookup key is derived from it).

    Returns:
        The open vault.

    Raises:
        VaultRefusedError: the file exists and is not a piitracer key vault (nothing is changed).
        VaultKeyError: the vault was created under another master key.
    """
    return KeyVault(SqliteVault(path, master.fingerprint), master, SubjectLookup.from_master(master))
