"""The key vault in SQLite (issue 42 point 1): per-subject keys wrapped under the master key, found
by a keyed hash of the typed subject, one read and one write per batch, and a destroyed key gone
from every byte of the vault's folder while every other subject's key still unwraps."""

from __future__ import annotations

import base64
import secrets
import sqlite3
import stat
from datetime import date
from decimal import Decimal

import pytest

from byte_scan import find_values
from piitracer.crypto.envelope import MasterKey
from piitracer.model.errors import BadKeyError, InputError, RefusedError
from piitracer.shred.keys import (ShredInputError, SubjectLookup, VaultKeyError, VaultRefusedError, subject_bytes,
                                  wrap_context)
from piitracer.shred.vault import KeyVault, SqliteVault, sqlite_vault

SUBJECTS = [f"person-{n:04d}@example.org" for n in range(40)] + list(range(1000, 1040))


def master() -> MasterKey:
    return MasterKey(secrets.token_hex(32).encode(), "test")


class Counting:
    """The real backend, counting the calls that reach it (one read and one write per batch)."""

    def __init__(self, backend) -> None:
        self.backend, self.calls = backend, []

    def __getattr__(self, name):
        attribute = getattr(self.backend, name)
        if callable(attribute):
            def counted(*args, **kwargs):
                self.calls.append(name)
                return attribute(*args, **kwargs)
            return counted
        return attribute


def test_the_lookup_is_keyed_and_typed() -> None:
    key = master()
    lookup = SubjectLookup.from_master(key)
    assert lookup.of(7) != lookup.of("7") != lookup.of(7.0)
    assert lookup.of(Decimal("1.10")) == lookup.of(Decimal("1.1"))
    assert lookup.of(date(2026, 1, 2)) != lookup.of("2026-01-02")
    assert lookup.of("a@b.org") == SubjectLookup.from_master(MasterKey(key.secret, "again")).of("a@b.org")
    assert lookup.of("a@b.org") != SubjectLookup.from_master(master()).of("a@b.org")  # keyed: not a plain hash
    for bad in (None, True, float("nan"), object()):
        with pytest.raises(ShredInputError) as caught:
            subject_bytes(bad)
        assert isinstance(caught.value, InputError)


def test_keys_for_a_batch_are_one_read_and_one_write(tmp_path) -> None:
    key = master()
    vault = sqlite_vault(tmp_path / "vault.sqlite", key)
    counting = Counting(vault.backend)
    vault.backend = counting
    ring = vault.keys_for(SUBJECTS + SUBJECTS[:10])  # repeats are one subject each
    assert counting.calls == ["find", "insert_missing"]
    assert len(ring) == len(SUBJECTS)
    counting.calls.clear()
    again = vault.keys_for(SUBJECTS)
    assert counting.calls == ["find"]  # nothing new: no write
    assert all(again.get(s).secret == ring.get(s).secret for s in SUBJECTS)
    assert len({ring.get(s).secret for s in SUBJECTS}) == len(SUBJECTS)  # one key per subject
    assert all(len(ring.get(s).secret) == 64 for s in SUBJECTS)
    vault.close()
    with sqlite_vault(tmp_path / "vault.sqlite", MasterKey(key.secret, "reopened")) as reopened:
        fetched = reopened.fetch(SUBJECTS[::7])
        assert all(fetched.get(s).secret == ring.get(s).secret for s in SUBJECTS[::7])
        assert reopened.fetch(["nobody@example.org"]).get("nobody@example.org") is None  # fetch creates nothing
        assert reopened.backend.count() == len(SUBJECTS)


def test_nothing_in_clear_at_rest(tmp_path) -> None:
    path = tmp_path / "vault.sqlite"
    with sqlite_vault(path, master()) as vault:
        ring = vault.keys_for(SUBJECTS)
    data = path.read_bytes()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for subject in SUBJECTS:
        secret = ring.get(subject).secret
        for form in (secret, secret.hex().encode(), base64.b64encode(secret)):
            assert form not in data
    # The e-mail-like subjects as text (a 4-digit number's text turns up in any 5 KB of hex by chance).
    assert find_values(tmp_path, [s for s in SUBJECTS if isinstance(s, str)]) == []


def test_a_concurrent_creator_gets_the_first_writers_key(tmp_path) -> None:
    key = master()
    first = sqlite_vault(tmp_path / "vault.sqlite", key)
    second = sqlite_vault(tmp_path / "vault.sqlite", key)
    # The second writer read the vault before the first committed: it saw no key and makes its own.
    backend, reads = second.backend, []

    def stale_first_read(lookups):
        reads.append(lookups)
        return {} if len(reads) == 1 else SqliteVault.find(backend, lookups)

    backend.find = stale_first_read
    mine = first.keys_for(["late@example.org"]).get("late@example.org")
    theirs = second.keys_for(["late@example.org"]).get("late@example.org")
    assert theirs.secret == mine.secret
    assert second.fetch(["late@example.org"]).get("late@example.org").secret == mine.secret
    first.close(), second.close()


def test_destroyed_key_is_gone_from_every_byte(tmp_path) -> None:
    folder = tmp_path / "vault"
    folder.mkdir()
    key = master()
    lookup = SubjectLookup.from_master(key)
    vault = sqlite_vault(folder / "keys.sqlite", key)
    ring = vault.keys_for(SUBJECTS)
    target = SUBJECTS[17]
    hashed = lookup.of(target)
    wrapped = vault.backend.find([hashed])[hashed]
    # The scan sees them before: the test can fail.
    assert find_values(folder, [wrapped]) and find_values(folder, [hashed])

    outcome = vault.destroy([target])

    assert outcome.keys_destroyed == 1
    assert find_values(folder, [wrapped, hashed]) == []
    assert hashed.encode() not in (folder / "keys.sqlite").read_bytes()
    assert vault.fetch([target]).get(target) is None
    others = [s for s in SUBJECTS if s != target]
    fetched = vault.fetch(others)
    assert all(fetched.get(s).secret == ring.get(s).secret for s in others)
    assert vault.backend.count() == len(others)
    assert vault.destroy([target]).keys_destroyed == 0  # idempotent
    vault.close()


def test_another_master_key_is_refused(tmp_path) -> None:
    sqlite_vault(tmp_path / "vault.sqlite", master()).close()
    with pytest.raises(VaultKeyError) as caught:
        sqlite_vault(tmp_path / "vault.sqlite", master())
    assert isinstance(caught.value, BadKeyError) and "another master key" in str(caught.value)


def test_a_wrapped_key_on_another_subjects_row_does_not_unwrap(tmp_path) -> None:
    key = master()
    lookup = SubjectLookup.from_master(key)
    with sqlite_vault(tmp_path / "vault.sqlite", key) as vault:
        vault.keys_for(["a@example.org", "b@example.org"])
    db = sqlite3.connect(tmp_path / "vault.sqlite")
    moved = db.execute("SELECT wrapped FROM subject_keys WHERE lookup = ?", (lookup.of("a@example.org"),)).fetchone()[0]
    db.execute("UPDATE subject_keys SET wrapped = ? WHERE lookup = ?", (moved, lookup.of("b@example.org")))
    db.commit(), db.close()
    with sqlite_vault(tmp_path / "vault.sqlite", key) as vault, pytest.raises(VaultKeyError) as caught:
        vault.fetch(["b@example.org"])
    assert "b@example.org" not in str(caught.value) and lookup.of("b@example.org") not in str(caught.value)
    assert wrap_context("x") != wrap_context("y")


def test_a_file_that_is_not_a_vault_is_refused_and_left_alone(tmp_path) -> None:
    other = tmp_path / "app.sqlite"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE users (email TEXT)")
    db.execute("INSERT INTO users VALUES ('someone@example.org')")
    db.commit(), db.close()
    text = tmp_path / "notes.txt"
    text.write_text("not a database at all, but long enough to be read as a header " * 4)
    for path in (other, text):
        before = path.read_bytes()
        with pytest.raises(VaultRefusedError) as caught:
            SqliteVault(path, master().fingerprint)
        assert isinstance(caught.value, RefusedError) and "not a piitracer key vault" in str(caught.value)
        assert path.read_bytes() == before
    with pytest.raises(VaultRefusedError):
        SqliteVault(tmp_path / "missing" / "vault.sqlite", master().fingerprint)


def test_keyvault_checks_the_fingerprint_before_use(tmp_path) -> None:
    key = master()
    backend = SqliteVault(tmp_path / "vault.sqlite", key.fingerprint)
    with pytest.raises(VaultKeyError):
        KeyVault(backend, master(), SubjectLookup.from_master(key))


def test_the_key_derivation_is_rfc_5869_hkdf() -> None:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    from piitracer.shred.keys import SALT, _hkdf

    secret = secrets.token_bytes(64)
    for length in (32, 64, 96):
        expected = HKDF(algorithm=hashes.SHA256(), length=length, salt=SALT, info=b"label").derive(secret)
        assert _hkdf(secret, b"label", length) == expected


def test_a_key_destroyed_by_another_process_is_not_served_from_memory(tmp_path) -> None:
    key = master()
    reader, eraser = sqlite_vault(tmp_path / "vault.sqlite", key), sqlite_vault(tmp_path / "vault.sqlite", key)
    ring = reader.keys_for(SUBJECTS)  # the reader has opened every key (kept between its batches)
    assert reader.fetch([SUBJECTS[5]]).get(SUBJECTS[5]).secret == ring.get(SUBJECTS[5]).secret
    eraser.destroy([SUBJECTS[5]])
    assert reader.fetch([SUBJECTS[5]]).get(SUBJECTS[5]) is None
    assert reader.keys_for([SUBJECTS[5]]).get(SUBJECTS[5]).secret != ring.get(SUBJECTS[5]).secret  # a new key
    reader.close(), eraser.close()
