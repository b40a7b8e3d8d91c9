"""Subject values at rest under envelope encryption, and crypto-shredding.

Every subject value piitracer keeps — in the request store, in the plan files it writes, in the
journal's resolved values and computed forms — is encrypted with its request's own 256-bit *data
key* (AES-GCM). Data keys are stored only *wrapped* (encrypted) under the *master key*, which comes
from a key file or an environment variable and is never stored by piitracer (no default). Closing
a request destroys its wrapped data key: its values, wherever a copy of the ciphertext lies, can
no longer be read by anyone, piitracer included (crypto-shredding). That is how piitracer stops
being the last copy of the person it erased.

Values are encrypted deterministically (the nonce is an HMAC of the value under the data key, the
SIV idea): the same value under the same request always gives the same ciphertext, so a plan file
written twice is byte-identical, and equality inside one request is all it reveals.

A KMS takes the master key's place through :class:`KeyWrapper`: ``wrap``/``unwrap`` a data key
for a context (the request id), and a ``fingerprint``. :class:`MasterKey` is the file/environment
implementation.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Protocol, Sequence

from piitracer.model.errors import BadKeyError, CannotVerifyError
from piitracer.storage.key_files import read_key_file, write_key_file
from piitracer.storage.key_files import missing_folder  # noqa: F401 (re-exported: keygen's message)

ENV_KEY = "PIITRACER_MASTER_KEY"
ENV_KEY_FILE = "PIITRACER_MASTER_KEY_FILE"
MIN_SECRET_BYTES = 32
PREFIX = "enc:v1:"


class MasterKeyError(BadKeyError):
    """No usable master key, or not the one that wrapped a request's data key."""


class ShreddedError(CannotVerifyError):
    """A request's values were shredded at close: its data key is destroyed."""


class KeyWrapper(Protocol):
    """What wraps data keys: the master key here, a KMS elsewhere."""

    fingerprint: str

    def wrap(self, data_key: bytes, context: str) -> str: ...

    def unwrap(self, blob: str, context: str) -> bytes: ...


def _hkdf(secret: bytes, info: bytes) -> bytes:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=hashes.SHA256(), length=32, salt=b"piitracer", info=info).derive(secret)


@dataclass(frozen=True)
class MasterKey:
    """The key-encryption key, from a file or the environment (never stored by piitracer)."""

    secret: bytes = field(repr=False)
    source: str
    option: str = "--master-key-file"  # how the command that loaded it takes a key file, for messages

    def __repr__(self) -> str:  # never print the secret
        return f"MasterKey(source={self.source!r})"

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(_hkdf(self.secret, b"fingerprint")).hexdigest()[:16]

    def wrap(self, data_key: bytes, context: str) -> str:
        """``data_key`` encrypted under the master key for ``context`` (its request id), base64."""
        return self.wrap_many([(data_key, context)])[0]

    def wrap_many(self, keys: Sequence[tuple[bytes, str]]) -> list[str]:
        """Wrap many data keys, each for its own context (its request id), as :meth:`wrap` wraps
        one: the wrapping key is derived once for the batch, every key gets its own random nonce."""
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        cipher = AESGCM(_hkdf(self.secret, b"wrap"))
        wrapped = []
        for data_key, context in keys:
            nonce = secrets.token_bytes(12)
            wrapped.append(base64.b64encode(nonce + cipher.encrypt(nonce, data_key, context.encode())).decode("ascii"))
        return wrapped

    def unwrap(self, blob: str, context: str) -> bytes:
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        raw = base64.b64decode(blob)
        try:
            return AESGCM(_hkdf(self.secret, b"wrap")).decrypt(raw[:12], raw[12:], context.encode())
        except InvalidTag:
            raise MasterKeyError(f"the master key ({self.source}) does not open the data key of {context}: it is not "
                                 f"the master key the values were stored with (check {self.option}); nothing was changed") from None


def wrap_many(wrapper: KeyWrapper, keys: Sequence[tuple[bytes, str]]) -> list[str]:
    """Wrap many (data key, context) pairs under ``wrapper``: in one call when it wraps batches
    (:meth:`MasterKey.wrap_many`; a KMS may too), else one :meth:`KeyWrapper.wrap` each."""
    batched = getattr(wrapper, "wrap_many", None)
    if batched is not None:
        return list(batched(keys))
    return [wrapper.wrap(data_key, context) for data_key, context in keys]


def load_master_key(key_file: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None,
                    option: str = "--master-key-file") -> MasterKey:
    """The master key from ``key_file``, ``$PIITRACER_MASTER_KEY_FILE`` or ``$PIITRACER_MASTER_KEY``
    (at least 32 bytes of secret; a trailing newline is ignored; a file that says it holds another
    key is refused). No default."""
    environ = os.environ if environ is None else environ
    found = master_key_file(key_file, environ, option)
    if found is not None:
        return _from_file(*found, option)
    if environ.get(ENV_KEY):
        return _checked(environ[ENV_KEY].encode(), f"${ENV_KEY}", option)
    raise MasterKeyError(f"no master key: pass {option} PATH or set {ENV_KEY_FILE}=PATH (a file of at least "
                         f"{MIN_SECRET_BYTES} random bytes, e.g. `piitracer requests keygen PATH`); subject values "
                         "are only ever stored encrypted, and piitracer has no default key")


def master_key_file(key_file: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None,
                    option: str = "--master-key-file") -> tuple[Path, str] | None:
    """The file :func:`load_master_key` reads the key from and how it was given; None when the key
    is not a file (``$PIITRACER_MASTER_KEY``) or not given."""
    environ = os.environ if environ is None else environ
    if key_file is not None:
        return Path(key_file), f"{option} {key_file}"
    if environ.get(ENV_KEY_FILE):
        return Path(environ[ENV_KEY_FILE]), f"${ENV_KEY_FILE} ({environ[ENV_KEY_FILE]})"
    return None


def has_master_key(key_file: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None) -> bool:
    environ = os.environ if environ is None else environ
    return key_file is not None or bool(environ.get(ENV_KEY_FILE) or environ.get(ENV_KEY))


def write_master_key(path: Path) -> MasterKey:
    """A new random master key in a file marked as the master key that only its owner can read
    (0600); refuses to overwrite (:class:`MasterKeyError`)."""
    secret = secrets.token_hex(32)
    write_key_file(path, "master", secret, error=MasterKeyError)
    return MasterKey(secret.encode(), f"key file {path}")


def _from_file(path: Path, source: str, option: str) -> MasterKey:
    secret = read_key_file(path, source, "the master key", hint=f" (check {option})", error=MasterKeyError,
                           kind="master")
    return _checked(secret.rstrip(b"\r\n"), source, option)


def _checked(secret: bytes, source: str, option: str) -> MasterKey:
    if len(secret) < MIN_SECRET_BYTES:
        raise MasterKeyError(f"master key from {source} is {len(secret)} bytes; at least {MIN_SECRET_BYTES} are needed "
                             f"({option})")
    return MasterKey(secret, source, option)


@dataclass(frozen=True)
class DataKey:
    """One request's data key (plaintext only in memory)."""

    secret: bytes = field(repr=False)

    @classmethod
    def generate(cls) -> "DataKey":
        return cls(secrets.token_bytes(32))

    @classmethod
    def generate_many(cls, count: int) -> list["DataKey"]:
        """``count`` fresh data keys, one per request (one read of the system's random source,
        cut in 32-byte keys: as random as ``count`` calls of :meth:`generate`)."""
        raw = secrets.token_bytes(32 * count)
        return [cls(raw[32 * index:32 * (index + 1)]) for index in range(count)]

    @property
    def fingerprint(self) -> str:
        """A public name of the key (kept in the audit log after the key is destroyed)."""
        return hashlib.sha256(b"piitracer/data-key/" + self.secret).hexdigest()[:16]

    def seal(self, text: str, purpose: str) -> str:
        """``enc:v1:...``: ``text`` encrypted for ``purpose`` (the same text and purpose, the same result)."""
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        aad = purpose.encode()
        nonce = hmac.new(self.secret, aad + b"\x00" + text.encode(), hashlib.sha256).digest()[:12]
        sealed = AESGCM(self.secret).encrypt(nonce, text.encode(), aad)
        return PREFIX + base64.urlsafe_b64encode(nonce + sealed).decode("ascii")

    def open(self, token: str, purpose: str) -> str:
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        raw = base64.urlsafe_b64decode(token[len(PREFIX):])
        try:
            return AESGCM(self.secret).decrypt(raw[:12], raw[12:], purpose.encode()).decode()
        except InvalidTag:
            raise MasterKeyError(f"a stored value of {purpose} does not decrypt: altered, or from another request") from None


def is_sealed(text: str) -> bool:
    return isinstance(text, str) and text.startswith(PREFIX)


class ValueCipher:
    """The data keys of the requests a command works on: seals and opens their values. A request
    whose key was destroyed at close cannot be opened (:class:`ShreddedError`)."""

    def __init__(self, keys: Mapping[str, DataKey | None]) -> None:
        self._keys = dict(keys)

    def knows(self, request_id: str) -> bool:
        return request_id in self._keys

    def key(self, request_id: str) -> DataKey:
        if request_id not in self._keys:
            raise MasterKeyError(f"request {request_id} is not in the request store: no data key to use")
        key = self._keys[request_id]
        if key is None:
            raise ShreddedError(f"request {request_id}: values shredded at close; the certificate is the proof")
        return key

    def seal(self, request_id: str, text: str, purpose: str) -> str:
        return self.key(request_id).seal(text, f"{request_id}|{purpose}")

    def open(self, request_id: str, token: str, purpose: str) -> str:
        return self.key(request_id).open(token, f"{request_id}|{purpose}")
