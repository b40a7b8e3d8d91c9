"""The people file: each person's token, kept only as a slow hash, and their own Ed25519 key, the
private half sealed under their token (``.piitracer/people.json``, 0600, beside the journal).

A token reads ``ptc.<id>.<secret>``: the id finds its one entry (a sign-in costs one scrypt, never
one per person), scrypt(secret, salt) checks it, and scrypt(secret, key_salt) is the AES-GCM key
that opens the person's private key, bound to the entry's id, name and public key. So the key opens
only for whoever holds the token: not for the holder of every workspace key file, not for a copy of
this file. Making a person's entry needs the workspace's keys and is recorded in the audit log by
the API (``api/people.py``); this module only keeps the file.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from piitracer.crypto.signing import canonical_bytes
from piitracer.identity.statements import key_fingerprint
from piitracer.model.errors import InputError
from piitracer.workspace.layout import StateLayout
from piitracer.workspace.model import Workspace

PEOPLE_FILE = StateLayout.relative("people.json")
PREFIX = "ptc"
# scrypt at 2^14 x 8: ~16 MiB and tens of milliseconds per check, so a stolen file is slow to
# guess from while a sign-in stays quick (the secret is 256 random bits anyway).
SCRYPT = {"n": 2**14, "r": 8, "p": 1}
NONCE = 12


OWNER, VIEWER, APPROVER = "owner", "viewer", "approver"


class PeopleFileError(InputError):
    """The people file cannot be read (the message names it and how to write it again)."""


def role_of(workspace: Workspace, name: str) -> str | None:
    """``owner``/``viewer``/``approver`` as the workspace lists ``name`` now (None: not listed)."""
    if name in workspace.config.owners:
        return OWNER
    if name in workspace.config.viewers:
        return VIEWER
    if name in workspace.config.approvers:
        return APPROVER
    return None


def prove_in(workspace: Workspace, token: str) -> "ProvenPerson | None":
    """The person a token belongs to (:func:`prove`), only while the workspace lists them in the
    role their key was made for: removing a name from ``owners:``/``viewers:``/``approvers:`` ends it."""
    found = prove(workspace.root, token)
    return found if found is not None and role_of(workspace, found.name) == found.role else None


@dataclass(frozen=True)
class PersonRecord:
    """One person as the people file keeps them: never a secret."""

    id: str
    name: str
    role: str
    public_key: str  # raw Ed25519 public key, hex
    created_at: str

    @property
    def fingerprint(self) -> str:
        return key_fingerprint(self.public_key)


class ProvenPerson:
    """A person who proved who they are with their own token: their name and role as the people
    file records them, and their private key, opened, to sign what they do. ``repr`` never shows
    the key."""

    __slots__ = ("record", "_key")

    def __init__(self, record: PersonRecord, key: Ed25519PrivateKey) -> None:
        self.record, self._key = record, key

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def role(self) -> str:
        return self.record.role

    @property
    def public_key(self) -> str:
        return self.record.public_key

    def __repr__(self) -> str:
        return f"ProvenPerson(name={self.name!r}, role={self.role!r}, key={self.record.fingerprint[:16]})"

    def sign(self, document: Mapping[str, Any]) -> str:
        """The Ed25519 signature (base64) of ``document``'s canonical JSON with this person's key."""
        return base64.b64encode(self._key.sign(canonical_bytes(document))).decode("ascii")

    def seal(self, secret: bytes) -> str:
        """This person's private key sealed under ``secret`` (a console session's id), to be opened
        by :func:`open_sealed` only with the same secret (the session's cookie)."""
        return _seal(_session_key(secret), self._raw(), _bound(self.record))

    def _raw(self) -> bytes:
        return self._key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                       serialization.NoEncryption())


def people_path(workspace_root: Path) -> Path:
    """Where a workspace's people file is."""
    return Path(workspace_root) / PEOPLE_FILE


def add_person(workspace_root: Path, name: str, role: str) -> tuple[str, PersonRecord, PersonRecord | None]:
    """A new token and key pair for ``name`` in ``role``, replacing their old ones.

    Args:
        workspace_root: the workspace folder.
        name: the person (listed in the workspace under ``role``; the caller checks).
        role: owner, viewer or approver.

    Returns:
        The token (shown once: the only time it exists outside the holder's hands), the new record,
            and the record it replaced (None: new).
    """
    path = people_path(workspace_root)
    entries = _read(path)
    old = next((_record(e) for e in entries if e.get("name") == name), None)
    entries = [e for e in entries if e.get("name") != name]
    token_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
    salt, key_salt = secrets.token_bytes(16), secrets.token_bytes(16)
    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex()
    record = PersonRecord(token_id, name, role, public, datetime.now(timezone.utc).isoformat(timespec="seconds"))
    raw = key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption())
    entries.append({"id": token_id, "name": name, "role": role, "salt": salt.hex(), "scrypt": _hash(secret, salt).hex(),
                    "public_key": public, "key_salt": key_salt.hex(),
                    "sealed_key": _seal(_hash(secret, key_salt), raw, _bound(record)), "created_at": record.created_at})
    _write(path, sorted(entries, key=lambda e: e["name"]))
    return f"{PREFIX}.{token_id}.{secret}", record, old


def remove_person(workspace_root: Path, name: str) -> PersonRecord | None:
    """Remove ``name``'s entry: their token no longer opens anything. Returns the record removed."""
    path = people_path(workspace_root)
    entries = _read(path)
    gone = next((_record(e) for e in entries if e.get("name") == name), None)
    if gone is not None:
        _write(path, [e for e in entries if e.get("name") != name])
    return gone


def person(workspace_root: Path, name: str) -> PersonRecord | None:
    """``name``'s record (None: no entry)."""
    return next((_record(e) for e in _read(people_path(workspace_root)) if e.get("name") == name), None)


def prove(workspace_root: Path, token: str) -> ProvenPerson | None:
    """The person a token belongs to, their key opened; None for an unknown, wrong or revoked token
    (a wrong one costs the same time as a right one's check)."""
    prefix, _, rest = token.strip().partition(".")
    token_id, _, secret = rest.partition(".")
    if prefix != PREFIX or not token_id or not secret:
        return None
    entry = next((e for e in _read(people_path(workspace_root)) if e.get("id") == token_id), None)
    if entry is None or "sealed_key" not in entry:
        _hash(secret, b"\0" * 16)  # as slow as a known id: the time does not tell which ids exist
        return None
    if not hmac.compare_digest(_hash(secret, bytes.fromhex(entry["salt"])).hex(), entry["scrypt"]):
        return None
    record = _record(entry)
    raw = _open(_hash(secret, bytes.fromhex(entry["key_salt"])), entry["sealed_key"], _bound(record))
    return None if raw is None else _proven(record, raw)


def open_sealed(record: PersonRecord, secret: bytes, sealed: str) -> ProvenPerson | None:
    """The person whose key :meth:`ProvenPerson.seal` sealed under ``secret``; None when it does
    not open (another secret, another record: a replaced key)."""
    raw = _open(_session_key(secret), sealed, _bound(record))
    return None if raw is None else _proven(record, raw)


def _proven(record: PersonRecord, raw: bytes) -> ProvenPerson | None:
    key = Ed25519PrivateKey.from_private_bytes(raw)
    public = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex()
    return ProvenPerson(record, key) if public == record.public_key else None


def _bound(record: PersonRecord) -> bytes:
    """What a sealed key is bound to: its entry's id, name and public key (a sealed key moved to
    another entry does not open)."""
    return f"piitracer-person/1|{record.id}|{record.name}|{record.public_key}".encode()


def _session_key(secret: bytes) -> bytes:
    return hashlib.sha256(b"piitracer-console-session-key/1|" + secret).digest()


def _seal(key: bytes, raw: bytes, bound: bytes) -> str:
    nonce = secrets.token_bytes(NONCE)
    return base64.b64encode(nonce + AESGCM(key).encrypt(nonce, raw, bound)).decode("ascii")


def _open(key: bytes, sealed: str, bound: bytes) -> bytes | None:
    try:
        blob = base64.b64decode(sealed, validate=True)
        return AESGCM(key).decrypt(blob[:NONCE], blob[NONCE:], bound)
    except (InvalidTag, ValueError):
        return None


def _hash(secret: str, salt: bytes) -> bytes:
    return hashlib.scrypt(secret.encode("utf-8"), salt=salt, dklen=32, **SCRYPT)


def _record(entry: Mapping[str, Any]) -> PersonRecord:
    return PersonRecord(str(entry["id"]), str(entry["name"]), str(entry["role"]), str(entry.get("public_key", "")),
                        str(entry.get("created_at", "")))


def _read(path: Path) -> list[dict]:
    if not path.exists():
        return []
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise PeopleFileError(f"{path}: cannot read the people file ({error}); `piitracer people add NAME` writes it "
                              "again") from None
    if not isinstance(entries, list) or not all(isinstance(e, dict) and "id" in e and "name" in e for e in entries):
        raise PeopleFileError(f"{path}: expected a list of people (id, name, role, keys)")
    return entries


def _write(path: Path, entries: list[dict]) -> None:
    """The file, only its owner may read it (0600, also when it existed with a wider mode)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(entries, indent=2) + "\n")
