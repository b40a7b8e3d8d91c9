"""A subject's data key, the keyed hash a subject is found by, and the errors of the shred room.

A subject's data key is one random 64-byte secret. Two keys are derived from it with HKDF-SHA256
(96 bytes, split), one per cipher: a 64-byte AES-SIV key (AES-256-SIV, deterministic: join-key
columns) and a 32-byte AES-GCM key (randomised: every other column). Deriving instead of splitting
the secret itself keeps the stored secret out of either cipher, and destroying the one secret
destroys both.

The vault never stores a subject value, not even hashed plainly: a plain hash of a user id or an
e-mail address is reversed by hashing every candidate. A subject is found by an HMAC-SHA256 of its
*typed* value (the integer 7 is not the text ``"7"``) under a lookup key derived from the master
key, so without the master key the lookup says nothing, and once the subject's row is gone
nothing in the vault names them.
"""

from __future__ import annotations

import hmac
import math
import secrets
import struct
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM, AESSIV

from piitracer.crypto.envelope import MasterKey, MasterKeyError, ShreddedError
from piitracer.model.errors import InputError, RefusedError, UnavailableError

SECRET_BYTES = 64
LOOKUP_INFO = b"piitracer/shred/subject-lookup/v1"
CIPHERS_INFO = b"piitracer/shred/aes-siv-and-aes-gcm/v1"  # 96 bytes: the AES-SIV key, then the AES-GCM key
SALT = b"piitracer-shred"
# The wrapping context binds a wrapped key to its row: a wrapped key copied onto another subject's
# row does not unwrap there.
WRAP_CONTEXT = "piitracer-shred-subject-key/v1:"


class ShredInputError(InputError):
    """A subject value or a column the shred functions cannot use (a null key, an unsupported type)."""


class CiphertextError(InputError):
    """A stored ciphertext that is not one piitracer wrote, was altered, or belongs to another subject."""


class SubjectShreddedError(ShreddedError):
    """No key for a row's subject in the vault: destroyed (crypto-shredded) or never created."""


class VaultKeyError(MasterKeyError):
    """The master key given is not the one the vault's keys are wrapped under."""


class VaultRefusedError(RefusedError):
    """A location that is not a piitracer key vault: piitracer will not write, delete or vacuum there."""


class VaultBusyError(UnavailableError):
    """The vault kept changing under a write (concurrent writers) for every attempt allowed."""


def _hkdf(secret: bytes, info: bytes, length: int) -> bytes:
    """HKDF-SHA256 (RFC 5869: extract, then expand), on the standard library's one-call HMAC.

    The same bytes as ``cryptography``'s HKDF (a test compares them), at a fifth of its cost: a
    batch derives the keys of every subject it holds, ten thousand of them per batch at worst.
    """
    prk = hmac.digest(SALT, secret, "sha256")
    out, block = b"", b""
    for counter in range(1, -(-length // 32) + 1):
        block = hmac.digest(prk, block + info + bytes([counter]), "sha256")
        out += block
    return out[:length]


def subject_bytes(value: Any) -> bytes:
    """The typed encoding of one subject value that is hashed for its lookup: a type tag, then the
    value. Equal values of one kind encode equally (``Decimal('1.10')`` and ``Decimal('1.1')``,
    an int32 and an int64 7); values of different kinds never do (``7``, ``"7"``, ``7.0``).

    Args:
        value: an int, str, bytes, Decimal, float, date or datetime (what Arrow's ``to_pylist``
            gives for the key types piitracer compares).

    Returns:
        The bytes to hash.

    Raises:
        ShredInputError: a null, a boolean, a NaN, or a type that is not a subject key type (the
            message names the type, never the value).
    """
    if value is None:
        raise ShredInputError("a subject key value is null: a row without a subject has no subject key")
    if isinstance(value, bool):
        raise ShredInputError("a subject key value is a boolean: not a key type")
    if isinstance(value, int):
        return b"i" + str(value).encode("ascii")
    if isinstance(value, str):
        return b"s" + value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return b"b" + bytes(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ShredInputError("a subject key value is a non-finite decimal")
        return b"d" + format(value.normalize(), "f").encode("ascii")
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise ShredInputError("a subject key value is a non-finite float")
        return b"f" + struct.pack(">d", value + 0.0)  # + 0.0: -0.0 is 0.0, as the values compare
    if isinstance(value, datetime):  # before date: a datetime is a date
        return b"t" + value.isoformat().encode("ascii")
    if isinstance(value, date):
        return b"D" + value.isoformat().encode("ascii")
    raise ShredInputError(f"a subject key value of type {type(value).__name__} is not a key type "
                          "(integers, strings, binary, decimals, floats, dates, timestamps)")


@dataclass(frozen=True)
class SubjectLookup:
    """The keyed hash a subject is found by in the vault (HMAC-SHA256 of :func:`subject_bytes`)."""

    secret: bytes = field(repr=False)

    def __repr__(self) -> str:  # never print the secret
        return "SubjectLookup()"

    @classmethod
    def from_master(cls, master: MasterKey) -> "SubjectLookup":
        """The lookup key derived from the master key (HKDF, its own label): the same master key
        finds the same subjects in every vault and every process.

        Args:
            master: the master key the vault's keys are wrapped under.

        Returns:
            The lookup.
        """
        return cls(_hkdf(master.secret, LOOKUP_INFO, 32))

    def of_bytes(self, encoded: bytes) -> str:
        """The lookup of a subject already encoded by :func:`subject_bytes` (64 hex characters)."""
        return hmac.digest(self.secret, encoded, "sha256").hex()

    def of(self, value: Any) -> str:
        """The lookup of one subject value, 64 hex characters.

        Args:
            value: a typed subject value (:func:`subject_bytes`).

        Returns:
            The hex HMAC.

        Raises:
            ShredInputError: the value is not a subject key value.
        """
        return self.of_bytes(subject_bytes(value))


class SubjectKey:
    """One subject's data key (plaintext only in memory), and its two cipher keys derived from it
    once (HKDF, 96 bytes: 64 for AES-256-SIV, 32 for AES-256-GCM), when first asked for."""

    __slots__ = ("secret", "_ciphers")

    def __init__(self, secret: bytes) -> None:
        self.secret = secret
        self._ciphers: tuple[Any, Any] | None = None

    def __repr__(self) -> str:  # never print the secret
        return "SubjectKey()"

    @classmethod
    def generate(cls) -> "SubjectKey":
        """A new random key (64 bytes from the OS's CSPRNG)."""
        return cls(secrets.token_bytes(SECRET_BYTES))

    def _derived(self) -> tuple[Any, Any]:
        if self._ciphers is None:
            derived = _hkdf(self.secret, CIPHERS_INFO, 96)
            self._ciphers = (AESSIV(derived[:64]), AESGCM(derived[64:]))
        return self._ciphers

    def siv(self):
        """The AES-256-SIV cipher (deterministic: equal plaintexts, equal ciphertexts)."""
        return self._derived()[0]

    def gcm(self):
        """The AES-256-GCM cipher (randomised: a fresh 96-bit nonce per value)."""
        return self._derived()[1]


def wrap_context(lookup: str) -> str:
    """The context a subject's key is wrapped under (binds the wrapped key to its row)."""
    return WRAP_CONTEXT + lookup
