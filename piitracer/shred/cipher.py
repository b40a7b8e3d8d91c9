"""Encrypt and decrypt a pipeline's columns under each row's subject key, over Arrow arrays.

Join-key columns are encrypted deterministically (AES-SIV): equal plaintexts of one subject give
equal ciphertexts, so a join or a GROUP BY on the ciphertext still works, and equality within
one subject is all it reveals. Every other column is randomised (AES-GCM, a fresh 96-bit nonce
per value): equal plaintexts give different ciphertexts.

A ciphertext is ``version byte || body`` and carries nothing of the subject (no key id, no
lookup): the row's subject key column says whose key opens it. Version ``0x01`` is AES-SIV
(body: 16-byte synthetic IV, then the ciphertext), ``0x02`` AES-GCM (body: 12-byte nonce, the
ciphertext, the 16-byte tag); the version byte is bound into the associated data. The plaintext
inside starts with one byte naming the value's kind (string, binary, integer, float, decimal,
date, timestamp), so decryption gives back typed values, and an empty string is never an empty
plaintext (which AES-SIV refuses). Nulls stay null: a null is not encrypted.

Keys are fetched once per batch (:func:`encrypt_batch` asks the vault for every subject of the
batch in one call); the arrays are then encrypted row by row with one cipher object per subject.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from piitracer.shred.keys import CiphertextError, ShredInputError, SubjectKey, SubjectShreddedError
from piitracer.shred.vault import KeyVault, Keyring

SIV, GCM = 0x01, 0x02
VERSIONS = {SIV: "AES-SIV", GCM: "AES-GCM"}
NONCE, TAG = 12, 16
RAISE, NULL = "raise", "null"
# The shortest ciphertext of each version: the version byte, the IV or nonce and tag, and a
# plaintext of at least its one kind byte.
SHORTEST = {SIV: 1 + 16 + 1, GCM: 1 + NONCE + 1 + TAG}


def holds_ciphertext(type: pa.DataType) -> bool:
    """Whether a column stored as ``type`` can hold this library's ciphertext: a binary type
    (variable length, or fixed at least as long as the shortest ciphertext). A string column cannot:
    what it holds is text, not ciphertext."""
    if pa.types.is_fixed_size_binary(type):
        return type.byte_width >= min(SHORTEST.values())
    return pa.types.is_binary(type) or pa.types.is_large_binary(type) or pa.types.is_binary_view(type)


def ciphertext_problem(blob: bytes) -> str | None:
    """Why ``blob`` is not a ciphertext this library wrote (its format, not whether it opens), in
    words that never show a byte of it; None when its form is one.

    Examples:
        >>> ciphertext_problem(b"alice@example.org")
        'not a piitracer ciphertext (its first byte is no ciphertext version; 17 bytes)'
        >>> ciphertext_problem(bytes([GCM]) + bytes(12)) is None
        False
    """
    if not blob:
        return "an empty value, not a piitracer ciphertext"
    version = blob[0]
    if version not in VERSIONS:
        return f"not a piitracer ciphertext (its first byte is no ciphertext version; {len(blob)} bytes)"
    if len(blob) < SHORTEST[version]:
        return f"too short for a {VERSIONS[version]} ciphertext ({len(blob)} bytes, at least {SHORTEST[version]})"
    return None


@dataclass(frozen=True)
class ShredColumns:
    """Which columns of a batch are ciphertext under which subject key.

    ``key`` is the subject key column (plaintext: it says whose key opens the row); ``deterministic``
    are the join-key columns (AES-SIV), ``randomised`` every other encrypted column (AES-GCM).
    ``context`` is bound into every ciphertext: a ciphertext decrypts only under the same context
    (use one context for the columns a join compares)."""

    key: str
    deterministic: tuple[str, ...] = ()
    randomised: tuple[str, ...] = ()
    context: str = ""

    def __post_init__(self) -> None:
        columns = self.deterministic + self.randomised
        if self.key in columns:
            raise ShredInputError(f"column {self.key!r} is the subject key column: it cannot be encrypted under the "
                                  "key it names (nothing would say whose key opens it)")
        if len(set(columns)) != len(columns):
            raise ShredInputError("a column is listed twice among the encrypted columns")

    @property
    def columns(self) -> tuple[str, ...]:
        """Every encrypted column: the deterministic ones, then the randomised ones."""
        return self.deterministic + self.randomised


# ---- the plaintext inside: one kind byte, then the value ---------------------------------------

def _encode(value: Any) -> bytes:
    if isinstance(value, str):
        return b"s" + value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return b"b" + bytes(value)
    if isinstance(value, bool):
        return b"?" + (b"\x01" if value else b"\x00")
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise ShredInputError("an integer value outside 64 bits cannot be encrypted")
        return b"i" + struct.pack(">q", value)
    if isinstance(value, float):
        return b"f" + struct.pack(">d", value)
    if isinstance(value, Decimal):
        return b"d" + format(value, "f").encode("ascii")
    if isinstance(value, datetime):  # before date: a datetime is a date
        return b"t" + value.isoformat().encode("ascii")
    if isinstance(value, date):
        return b"D" + value.isoformat().encode("ascii")
    raise ShredInputError(f"a value of type {type(value).__name__} cannot be encrypted (strings, binary, booleans, "
                          "integers, floats, decimals, dates, timestamps)")


def _encoder(type: pa.DataType):
    """The encoding of one value of ``type``: a direct one for strings (most personal columns),
    the general one otherwise."""
    if pa.types.is_string(type) or pa.types.is_large_string(type):
        return lambda value: b"s" + value.encode("utf-8")
    return _encode


_DECODE = {
    ord("s"): lambda body: body.decode("utf-8"),
    ord("b"): bytes,
    ord("?"): lambda body: body == b"\x01",
    ord("i"): lambda body: struct.unpack(">q", body)[0],
    ord("f"): lambda body: struct.unpack(">d", body)[0],
    ord("d"): lambda body: Decimal(body.decode("ascii")),
    ord("t"): lambda body: datetime.fromisoformat(body.decode("ascii")),
    ord("D"): lambda body: date.fromisoformat(body.decode("ascii")),
}


def _subject_indices(subjects: pa.Array | pa.ChunkedArray, what: str) -> tuple[list[Any], list[int]]:
    """The distinct subjects and, per row, the index of its subject (dictionary encoding: the key
    of each subject is looked up once, not once per row). A null subject is refused."""
    if isinstance(subjects, pa.ChunkedArray):
        subjects = subjects.combine_chunks()
    encoded = pc.dictionary_encode(subjects)
    indices = encoded.indices
    if indices.null_count:
        row = pc.index(pc.is_null(indices), True).as_py()
        raise ShredInputError(f"row {row}: the subject key column is null; {what} needs a subject key on every row")
    return encoded.dictionary.to_pylist(), indices.to_pylist()


@dataclass(frozen=True)
class _Rows:
    """Each row's index into ``keys``, the key of each distinct subject (None: the vault has none)."""

    rows: list[int]
    keys: list[SubjectKey | None]


def _resolved(subjects: pa.Array | pa.ChunkedArray, keys: Keyring, what: str) -> _Rows:
    distinct, rows = _subject_indices(subjects, what)
    return _Rows(rows, [keys.get(subject) for subject in distinct])


def encrypt_array(values: pa.Array | pa.ChunkedArray, subjects: pa.Array | pa.ChunkedArray, keys: Keyring,
                  deterministic: bool, context: str = "", column: str = "values") -> pa.Array:
    """Encrypt each value under its row's subject key.

    Args:
        values: the plaintext column (strings, binary, booleans, integers, floats, decimals, dates,
            timestamps); nulls stay null.
        subjects: the subject key column, one value per row (never null).
        keys: the keys of the batch's subjects (:meth:`KeyVault.keys_for`).
        deterministic: AES-SIV (join keys: equal plaintexts of one subject, equal ciphertexts)
            when true, else AES-GCM (randomised).
        context: bound into every ciphertext; decryption needs the same.
        column: the column's name, for messages.

    Returns:
        A binary array of ciphertexts (``version byte || body``).

    Raises:
        ShredInputError: a null subject, a value of an unsupported type, or lengths that differ.
        SubjectShreddedError: a row's subject has no key in ``keys``.
    """
    if len(values) != len(subjects):
        raise ShredInputError(f"column {column}: {len(values)} values but {len(subjects)} subject keys")
    return _encrypt(values, _resolved(subjects, keys, f"column {column}"), deterministic, context, column)


def _encrypt(values: pa.Array | pa.ChunkedArray, resolved: _Rows, deterministic: bool, context: str,
             column: str) -> pa.Array:
    rows = resolved.rows
    version = SIV if deterministic else GCM
    ad = bytes([version]) + context.encode("utf-8")
    ciphers = []
    for index, key in enumerate(resolved.keys):
        if key is None:
            raise SubjectShreddedError(f"column {column}: no key in the vault for the subject of row {rows.index(index)} "
                                       "(destroyed: crypto-shredded, or not fetched with keys_for)")
        ciphers.append(key.siv() if deterministic else key.gcm())
    plain = values.to_pylist()
    encode = _encoder(values.type)
    header = bytes([version])
    # Comprehensions over bound methods: the per-value work is the cipher call, not the interpreter.
    seal = [cipher.encrypt for cipher in ciphers]
    if deterministic:
        ads = [ad]
        out = [None if value is None else header + seal[subject](encode(value), ads)
               for value, subject in zip(plain, rows)]
    else:
        # One call to the OS for every nonce of the array (96 random bits per value).
        randoms = os.urandom(NONCE * len(plain))
        nonces = [randoms[start:start + NONCE] for start in range(0, len(randoms), NONCE)]
        out = [None if value is None else header + nonce + seal[subject](nonce, encode(value), ad)
               for value, subject, nonce in zip(plain, rows, nonces)]
    return pa.array(out, pa.binary())


def decrypt_array(ciphertexts: pa.Array | pa.ChunkedArray, subjects: pa.Array | pa.ChunkedArray, keys: Keyring,
                  type: pa.DataType | None = None, context: str = "", column: str = "values",
                  missing: str = RAISE) -> pa.Array:
    """Decrypt each ciphertext under its row's subject key (either version, per value).

    Args:
        ciphertexts: a binary column written by :func:`encrypt_array`; nulls stay null.
        subjects: the subject key column, one value per row (never null).
        keys: the keys of the batch's subjects (:meth:`KeyVault.fetch`).
        type: the plaintext's Arrow type (default: inferred from the values).
        context: the context the values were encrypted with.
        column: the column's name, for messages.
        missing: ``"raise"`` (default): a row whose subject has no key raises; ``"null"``: that
            row's value is null (a reader of a table where some subjects were shredded).

    Returns:
        The plaintext array.

    Raises:
        SubjectShreddedError: a row's subject has no key in the vault (``missing="raise"``).
        CiphertextError: the column is not binary, or a value is not a ciphertext of a known
            version, was altered, or is not under its row's subject key and this context.
        ShredInputError: a null subject, or lengths that differ.
    """
    if len(ciphertexts) != len(subjects):
        raise ShredInputError(f"column {column}: {len(ciphertexts)} values but {len(subjects)} subject keys")
    if missing not in (RAISE, NULL):
        raise ShredInputError(f"missing={missing!r}: expected 'raise' or 'null'")
    if not (pa.types.is_binary(ciphertexts.type) or pa.types.is_large_binary(ciphertexts.type)
            or pa.types.is_fixed_size_binary(ciphertexts.type) or pa.types.is_binary_view(ciphertexts.type)):
        # A string column is plaintext (or ciphertext someone decoded as text): say so, not a TypeError.
        raise CiphertextError(f"column {column}: holds {ciphertexts.type}, not ciphertext (encrypt_array writes binary)")
    return _decrypt(ciphertexts, _resolved(subjects, keys, f"column {column}"), type, context, column, missing)


def _decrypt(ciphertexts: pa.Array | pa.ChunkedArray, resolved: _Rows, type: pa.DataType | None, context: str,
             column: str, missing: str) -> pa.Array:
    from cryptography.exceptions import InvalidTag

    rows, found = resolved.rows, resolved.keys
    ciphers: dict[tuple[int, int], Any] = {}
    suffix = context.encode("utf-8")
    out: list[Any] = []
    for row, (blob, subject) in enumerate(zip(ciphertexts.to_pylist(), rows)):
        if blob is None:
            out.append(None)
            continue
        key = found[subject]
        if key is None:
            if missing == NULL:
                out.append(None)
                continue
            raise SubjectShreddedError(f"column {column}, row {row}: no key in the vault for the row's subject: "
                                       "its values were crypto-shredded (or the key was never created)")
        problem = ciphertext_problem(blob)
        if problem is not None:  # said without a byte of the value: it may be a plaintext
            raise CiphertextError(f"column {column}, row {row}: {problem}")
        version = blob[0]
        cipher = ciphers.get((subject, version))
        if cipher is None:
            cipher = ciphers[subject, version] = key.siv() if version == SIV else key.gcm()
        ad = bytes([version]) + suffix
        try:
            if version == SIV:
                plain = cipher.decrypt(blob[1:], [ad])
            else:
                plain = cipher.decrypt(blob[1:1 + NONCE], blob[1 + NONCE:], ad)
        except (InvalidTag, ValueError):
            raise CiphertextError(f"column {column}, row {row}: a {VERSIONS[version]} ciphertext that does not open under "
                                  "its row's subject key and this context (altered, moved from another row, or "
                                  "another context)") from None
        decode = _DECODE.get(plain[0]) if plain else None
        if decode is None:
            raise CiphertextError(f"column {column}, row {row}: the decrypted value has an unknown kind")
        out.append(decode(plain[1:]))
    return pa.array(out, type) if type is not None else pa.array(out)


def _replaced(batch: pa.RecordBatch, columns: Mapping[str, pa.Array]) -> pa.RecordBatch:
    fields, arrays = [], []
    for index, field in enumerate(batch.schema):
        array = columns.get(field.name, batch.column(index))
        fields.append(field.with_type(array.type))
        arrays.append(array)
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields, metadata=batch.schema.metadata))


def _as_batch(data: pa.RecordBatch | pa.Table) -> pa.RecordBatch:
    if isinstance(data, pa.Table):
        return data.combine_chunks().to_batches()[0] if data.num_rows else pa.RecordBatch.from_pylist([], schema=data.schema)
    return data


def _check_columns(batch: pa.RecordBatch, spec: ShredColumns) -> None:
    absent = [name for name in (spec.key, *spec.columns) if name not in batch.schema.names]
    if absent:
        raise ShredInputError(f"the batch has no column {', '.join(absent)} (columns: {', '.join(batch.schema.names)})")


def encrypt_batch(data: pa.RecordBatch | pa.Table, vault: KeyVault, spec: ShredColumns) -> pa.RecordBatch:
    """Encrypt a batch's columns under each row's subject key, creating the keys of subjects new
    to the vault: one vault call for the whole batch.

    Args:
        data: the plaintext batch (or a table, taken as one batch).
        vault: the key vault.
        spec: the key column and the columns to encrypt.

    Returns:
        The batch with each encrypted column replaced by a binary column of ciphertexts.

    Raises:
        ShredInputError: a column is absent, a subject is null, a value is of an unsupported type.
    """
    batch = _as_batch(data)
    _check_columns(batch, spec)
    if not spec.columns:
        return batch
    # One dictionary encoding and one vault call for the batch; each column then indexes the keys.
    distinct, rows = _subject_indices(batch.column(spec.key), "the batch")
    keys = vault.keys_for(distinct)
    resolved = _Rows(rows, [keys.get(subject) for subject in distinct])
    encrypted = {name: _encrypt(batch.column(name), resolved, name in spec.deterministic, spec.context, name)
                 for name in spec.columns}
    return _replaced(batch, encrypted)


def decrypt_batch(data: pa.RecordBatch | pa.Table, vault: KeyVault, spec: ShredColumns,
                  types: Mapping[str, pa.DataType] | None = None, missing: str = RAISE) -> pa.RecordBatch:
    """Decrypt a batch's encrypted columns, the keys fetched in one vault call (none created).

    Args:
        data: the batch as stored (or a table, taken as one batch).
        vault: the key vault.
        spec: the key column and the encrypted columns.
        types: each column's plaintext Arrow type (default: inferred from the values).
        missing: ``"raise"`` or ``"null"`` for a row whose subject's key is destroyed (:func:`decrypt_array`).

    Returns:
        The batch with the plaintext columns.

    Raises:
        SubjectShreddedError: a row's subject key is destroyed (``missing="raise"``).
        CiphertextError: a value does not decrypt under its row's subject key.
        ShredInputError: a column is absent or a subject is null.
    """
    batch = _as_batch(data)
    _check_columns(batch, spec)
    types = dict(types or {})
    if missing not in (RAISE, NULL):
        raise ShredInputError(f"missing={missing!r}: expected 'raise' or 'null'")
    if not spec.columns:
        return batch
    distinct, rows = _subject_indices(batch.column(spec.key), "the batch")
    keys = vault.fetch(distinct)
    resolved = _Rows(rows, [keys.get(subject) for subject in distinct])
    plain = {name: _decrypt(batch.column(name), resolved, types.get(name), spec.context, name, missing)
             for name in spec.columns}
    return _replaced(batch, plain)
