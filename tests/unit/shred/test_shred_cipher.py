"""The pipeline side of crypto-shredding (issue 42 point 2): Arrow columns encrypted under each row's
subject key, deterministic (AES-SIV) for join keys and randomised (AES-GCM) for the rest, a
versioned ciphertext that carries nothing of the subject, keys fetched once per batch, and a
named error when a destroyed key is needed."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import date, datetime, timezone
from decimal import Decimal

import pyarrow as pa
import pytest

from piitracer.crypto.envelope import MasterKey, ShreddedError
from piitracer.model.errors import CannotVerifyError, InputError
from piitracer.shred.cipher import ShredColumns, decrypt_array, decrypt_batch, encrypt_array, encrypt_batch
from piitracer.shred.keys import CiphertextError, ShredInputError, SubjectLookup, SubjectShreddedError, subject_bytes
from piitracer.shred.vault import sqlite_vault

USERS = [101, 102, 103, 101, 102, 101, 104, 103]
EMAILS = ["ann@example.org", "bo@example.org", "cy@example.org", "ann@example.org", "bo@example.org",
          "ann@example.org", "", "cy@example.org"]
SPEC = ShredColumns(key="user_id", deterministic=("email",), randomised=("phone", "born", "salary"))


def batch() -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({
        "user_id": pa.array(USERS, pa.int64()),
        "email": pa.array(EMAILS, pa.string()),
        "phone": pa.array(["+44 20 7946 0001", None, "+44 20 7946 0003", "+44 20 7946 0001", "x", "y", "z", "w"]),
        "born": pa.array([date(1990, 1, n) for n in range(1, 9)], pa.date32()),
        "salary": pa.array([Decimal(f"{n}000.50") for n in range(1, 9)], pa.decimal128(10, 2)),
        "amount": pa.array(range(8), pa.int64()),
    })


@pytest.fixture()
def vault(tmp_path):
    key = MasterKey(secrets.token_hex(32).encode(), "test")
    with sqlite_vault(tmp_path / "vault.sqlite", key) as opened:
        yield opened


def test_deterministic_join_keys_randomised_rest_and_a_typed_round_trip(vault) -> None:
    plain = batch()
    stored = encrypt_batch(plain, vault, SPEC)
    email, phone = stored.column("email").to_pylist(), stored.column("phone").to_pylist()
    assert stored.schema.field("email").type == pa.binary() and stored.column("amount") == plain.column("amount")
    # Equal plaintexts of one subject: equal ciphertexts (rows 0, 3, 5 are user 101's one address).
    assert email[0] == email[3] == email[5] and email[1] == email[4] and email[2] == email[7]
    assert len(set(email)) == 4
    # Randomised: user 101's same phone number twice gives two ciphertexts; a null stays null.
    assert phone[0] != phone[3] and phone[1] is None
    assert {value[0] for value in email} == {0x01} and {value[0] for value in phone if value} == {0x02}
    back = decrypt_batch(stored, vault, SPEC, types={name: plain.schema.field(name).type for name in SPEC.columns})
    assert back.equals(plain)


def test_the_same_value_of_two_subjects_gives_two_ciphertexts(vault) -> None:
    subjects = pa.array(["ann", "bo"])
    values = pa.array(["shared@example.org", "shared@example.org"])
    keys = vault.keys_for(["ann", "bo"])
    siv = encrypt_array(values, subjects, keys, deterministic=True).to_pylist()
    assert siv[0] != siv[1]


def test_values_of_every_kind_round_trip(vault) -> None:
    columns = {
        "text": pa.array(["", "ünïcødé ✓", None], pa.string()),
        "blob": pa.array([b"", b"\x00\xff", None], pa.binary()),
        "flag": pa.array([True, False, None]),
        "count": pa.array([-(2**63), 2**63 - 1, None], pa.int64()),
        "ratio": pa.array([-0.0, 1.5e300, None], pa.float64()),
        "money": pa.array([Decimal("-1.05"), Decimal("0.00"), None], pa.decimal128(12, 2)),
        "day": pa.array([date(1, 1, 1), date(9999, 12, 31), None], pa.date32()),
        "at": pa.array([datetime(2026, 11, 28, 12, 0, 1, 5, tzinfo=timezone.utc), None, None], pa.timestamp("us", "UTC")),
    }
    subjects = pa.array(["ann", "bo", "ann"])
    keys = vault.keys_for(["ann", "bo"])
    for name, values in columns.items():
        for deterministic in (True, False):
            stored = encrypt_array(values, subjects, keys, deterministic, column=name)
            assert decrypt_array(stored, subjects, keys, values.type, column=name).equals(values), name


def test_the_ciphertext_is_version_and_cipher_output_only(vault) -> None:
    # Exact sizes: 1 version byte + AES-SIV's 16-byte IV, or + GCM's 12-byte nonce and 16-byte tag,
    # around the value and its 1-byte kind. Anything of the subject (a key id, a lookup) would add bytes.
    subject = "ann@example.org"
    keys = vault.keys_for([subject])
    values = pa.array(["x" * 20])
    siv = encrypt_array(values, pa.array([subject]), keys, True).to_pylist()[0]
    gcm = encrypt_array(values, pa.array([subject]), keys, False).to_pylist()[0]
    assert len(siv) == 1 + 16 + 21 and len(gcm) == 1 + 12 + 21 + 16
    lookup = SubjectLookup.from_master(vault.wrapper).of(subject)
    for blob in (siv, gcm):
        assert subject.encode() not in blob and bytes.fromhex(lookup)[:8] not in blob
        assert hmac.new(b"", subject_bytes(subject), hashlib.sha256).digest()[:8] not in blob


def test_keys_are_fetched_once_per_batch(vault) -> None:
    calls = []
    backend = vault.backend
    for name in ("find", "insert_missing"):
        real = getattr(backend, name)
        setattr(backend, name, lambda *a, _real=real, _name=name: calls.append(_name) or _real(*a))
    rows = 500
    big = pa.RecordBatch.from_pydict({"user_id": [n % 50 for n in range(rows)],
                                      "email": [f"user{n % 50}@example.org" for n in range(rows)],
                                      "phone": [str(n) for n in range(rows)]})
    spec = ShredColumns(key="user_id", deterministic=("email",), randomised=("phone",))
    stored = encrypt_batch(big, vault, spec)
    assert calls == ["find", "insert_missing", "find"]  # one read; one write transaction that reads back
    calls.clear()
    assert encrypt_batch(big, vault, spec).num_rows == rows and calls == ["find"]
    calls.clear()
    assert decrypt_batch(stored, vault, spec).equals(big) and calls == ["find"]


def test_a_destroyed_key_fails_by_name_or_reads_as_null(vault) -> None:
    plain = batch()
    stored = encrypt_batch(plain, vault, SPEC)
    assert vault.destroy([101]).keys_destroyed == 1
    with pytest.raises(SubjectShreddedError) as caught:
        decrypt_batch(stored, vault, SPEC)
    assert isinstance(caught.value, ShreddedError) and isinstance(caught.value, CannotVerifyError)
    assert caught.value.kind == "cannot-verify" and "row 0" in str(caught.value) and "crypto-shredded" in str(caught.value)
    assert "101" not in str(caught.value) and "ann@" not in str(caught.value)
    readable = decrypt_batch(stored, vault, SPEC, missing="null")
    for name in SPEC.columns:
        values, originals = readable.column(name).to_pylist(), plain.column(name).to_pylist()
        assert [v for v, u in zip(values, USERS) if u == 101] == [None, None, None]
        assert [v for v, u in zip(values, USERS) if u != 101] == [o for o, u in zip(originals, USERS) if u != 101]


def test_altered_moved_or_foreign_ciphertexts_are_refused(vault) -> None:
    subjects = pa.array(["ann", "bo"])
    keys = vault.keys_for(["ann", "bo"])
    for deterministic in (True, False):
        blobs = encrypt_array(pa.array(["a@example.org", "b@example.org"]), subjects, keys, deterministic).to_pylist()
        flipped = blobs[0][:-1] + bytes([blobs[0][-1] ^ 1])
        cases = {
            "altered": ([flipped, blobs[1]], subjects, ""),
            "moved to another subject's row": ([blobs[1], blobs[0]], subjects, ""),
            "another context": (blobs, subjects, "payments.email"),
            "unknown version": ([b"\x07" + blobs[0][1:], blobs[1]], subjects, ""),
            "empty": ([b"", blobs[1]], subjects, ""),
        }
        for case, (values, who, context) in cases.items():
            with pytest.raises(CiphertextError) as caught:
                decrypt_array(pa.array(values, pa.binary()), who, keys, context=context, column="email")
            assert isinstance(caught.value, InputError) and "row 0" in str(caught.value), case
            assert "ann" not in str(caught.value) and "a@example.org" not in str(caught.value)


def test_a_text_column_is_refused_as_not_ciphertext(vault) -> None:
    """A string column handed to decrypt (plaintext, or ciphertext someone decoded as text) is one
    named error naming the column and what it holds, not a TypeError from deep inside."""
    subjects = pa.array(["ann"])
    keys = vault.keys_for(["ann"])
    for values in (pa.array(["a@example.org"]), pa.array(["a@example.org"], pa.large_string())):
        with pytest.raises(CiphertextError) as caught:
            decrypt_array(values, subjects, keys, column="email")
        assert str(caught.value).startswith("column email: holds ") and "not ciphertext" in str(caught.value)
        assert "a@example.org" not in str(caught.value) and "ann" not in str(caught.value)
    blob = encrypt_array(pa.array(["a@example.org"]), subjects, keys, True)
    assert decrypt_array(pa.array(blob.to_pylist(), pa.large_binary()), subjects, keys).to_pylist() == ["a@example.org"]


def test_null_subjects_and_the_key_column_itself_are_refused(vault) -> None:
    with pytest.raises(ShredInputError) as caught:
        encrypt_batch(pa.RecordBatch.from_pydict({"user_id": [1, None], "email": ["a@x.org", "b@x.org"]}), vault,
                      ShredColumns(key="user_id", deterministic=("email",)))
    assert "row 1" in str(caught.value) and "b@x.org" not in str(caught.value)
    with pytest.raises(ShredInputError):
        ShredColumns(key="user_id", deterministic=("user_id",))
    with pytest.raises(ShredInputError) as absent:
        encrypt_batch(batch(), vault, ShredColumns(key="user_id", randomised=("mail",)))
    assert "mail" in str(absent.value)


def test_a_join_on_deterministic_ciphertext_matches_the_plaintext_join(vault) -> None:
    orders = pa.table({"user_id": [101, 102, 101, 103], "email": ["ann@example.org", "bo@example.org",
                                                                  "ann@example.org", "cy@example.org"],
                       "order": [1, 2, 3, 4]})
    profiles = pa.table({"user_id": [101, 102, 104], "email": ["ann@example.org", "bo@example.org", "di@example.org"],
                         "city": ["Leeds", "York", "Hull"]})
    spec = ShredColumns(key="user_id", deterministic=("email",))
    left = pa.Table.from_batches([encrypt_batch(orders, vault, spec)])
    right = pa.Table.from_batches([encrypt_batch(profiles, vault, spec)])
    encrypted = left.join(right, keys=["user_id", "email"], join_type="inner").sort_by("order")
    plain = orders.join(profiles, keys=["user_id", "email"], join_type="inner").sort_by("order")
    assert encrypted.column("order").to_pylist() == plain.column("order").to_pylist() == [1, 2, 3]
    assert encrypted.column("city").to_pylist() == plain.column("city").to_pylist()
