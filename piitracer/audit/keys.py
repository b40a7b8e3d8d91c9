"""The audit key: where it comes from, and the two keys derived from it.

There is no default key. The key comes from (first match) the caller (the demo passes a demo key
explicitly), a key file given by path, ``PIITRACER_AUDIT_KEY`` or ``PIITRACER_AUDIT_KEY_FILE``.
Two keys are derived so one secret never serves two purposes: one HMACs subject values, the other
seals entry hashes (so the chain cannot be rewritten by someone without the key).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from piitracer.model.errors import BadKeyError
from piitracer.storage.key_files import read_key_file, write_key_file

ENV_KEY = "PIITRACER_AUDIT_KEY"
ENV_KEY_FILE = "PIITRACER_AUDIT_KEY_FILE"
MIN_KEY_BYTES = 16


class AuditKeyError(BadKeyError):
    """No usable audit key: the message says how to supply one."""


@dataclass(frozen=True)
class AuditKey:
    """A loaded audit key and where it came from (``source`` never shows the key)."""

    secret: bytes
    source: str

    def __repr__(self) -> str:  # never print the secret
        return f"AuditKey(source={self.source!r})"

    def _derive(self, purpose: str) -> bytes:
        return hmac.new(self.secret, b"piitracer/audit/" + purpose.encode(), hashlib.sha256).digest()

    def subject_hmac(self, value: str) -> str:
        """HMAC-SHA256 of a subject value (hex): the only form in which a subject is stored."""
        return hmac.new(self._derive("subject"), value.encode("utf-8"), hashlib.sha256).hexdigest()

    def seal(self, entry_hash: str) -> str:
        """HMAC of an entry hash (or the head record): forging it needs the key."""
        return hmac.new(self._derive("seal"), entry_hash.encode("ascii"), hashlib.sha256).hexdigest()

    def plan_seal(self, plan_id: str) -> str:
        """HMAC of a plan's id (the hash of its content): only a holder of the key can seal a plan,
        so an edited plan with a recomputed id cannot be sealed again without it."""
        return hmac.new(self._derive("plan-seal"), plan_id.encode("ascii"), hashlib.sha256).hexdigest()

    @property
    def key_id(self) -> str:
        """A public fingerprint of the key, stored in the log to detect a wrong key early."""
        return self._derive("key-id").hex()[:16]


def load_audit_key(
    key: str | bytes | None = None,
    key_file: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    option: str = "--audit-key-file",
) -> AuditKey:
    """The audit key from ``key`` (explicit, e.g. the demo's), ``key_file``, ``$PIITRACER_AUDIT_KEY``
    or ``$PIITRACER_AUDIT_KEY_FILE``; raises :class:`AuditKeyError` when none is given, it is short,
    or its file says it is another key (``option`` is how the calling command takes a key file, for
    the message)."""
    environ = os.environ if environ is None else environ
    if key is not None:
        return _checked(key.encode("utf-8") if isinstance(key, str) else bytes(key), "given by the caller")
    if key_file is None and environ.get(ENV_KEY):
        return _checked(environ[ENV_KEY].encode("utf-8"), f"${ENV_KEY}")
    found = audit_key_file(key_file, environ)
    if found is not None:
        return _from_file(*found, option)
    raise AuditKeyError(
        f"no audit key: set {ENV_KEY} (at least {MIN_KEY_BYTES} bytes) or {ENV_KEY_FILE}=PATH, "
        f"or pass {option} PATH; piitracer has no default key"
    )


def audit_key_file(key_file: str | os.PathLike[str] | None = None,
                   environ: Mapping[str, str] | None = None) -> tuple[Path, str] | None:
    """The file :func:`load_audit_key` reads the key from, and how it was given (``key file F``,
    ``$PIITRACER_AUDIT_KEY_FILE (F)``); None when the key is not a file (``$PIITRACER_AUDIT_KEY``
    wins over the variable naming a file) or not given."""
    environ = os.environ if environ is None else environ
    if key_file is not None:
        return Path(key_file), f"key file {key_file}"
    if environ.get(ENV_KEY):
        return None
    if environ.get(ENV_KEY_FILE):
        return Path(environ[ENV_KEY_FILE]), f"${ENV_KEY_FILE} ({environ[ENV_KEY_FILE]})"
    return None


def write_audit_key(path: Path) -> AuditKey:
    """A new random audit key (32 bytes as hex) in a file marked as the audit key, 0600, never
    overwriting (:class:`AuditKeyError`)."""
    secret = secrets.token_hex(32)  # 64 characters: four times the minimum
    write_key_file(path, "audit", secret, error=AuditKeyError)
    return AuditKey(secret.encode("ascii"), f"key file {path}")


def _from_file(path: Path, source: str, option: str) -> AuditKey:
    secret = read_key_file(path, source, "the audit key", hint=f" (check {option})", error=AuditKeyError,
                           kind="audit")
    # A trailing newline from `echo ... > keyfile` is not part of the key.
    return _checked(secret.rstrip(b"\r\n"), source)


def _checked(secret: bytes, source: str) -> AuditKey:
    if len(secret) < MIN_KEY_BYTES:
        raise AuditKeyError(f"audit key from {source} is {len(secret)} bytes; at least {MIN_KEY_BYTES} are needed")
    return AuditKey(secret, source)
