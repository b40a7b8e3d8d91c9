"""Console sign-in tokens: who holds one, in which role, kept only as a slow hash.

``piitracer owners add NAME`` makes a token for a name the workspace lists under ``owners:`` or
``viewers:`` and prints it once. What is kept is ``.piitracer/console-tokens.json`` (mode 0600,
beside the journal, so ``piitracer.yaml`` stays a hand-edited, reviewable file without secrets):
per token its id, the name, the role and scrypt(secret, salt). A token reads
``ptc.<id>.<secret>``: the id finds its one entry, so a sign-in costs one scrypt, never one per
user. Adding a name again replaces its token (the old one stops working).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from piitracer.model.errors import InputError
from piitracer.workspace.model import Workspace
from piitracer.workspace.layout import StateLayout

TOKENS_FILE = StateLayout.relative("console-tokens.json")
PREFIX = "ptc"
# scrypt at 2^14 x 8: ~16 MiB and tens of milliseconds per check, so a stolen file is slow to
# guess from while a sign-in stays quick (the secret is 256 random bits anyway).
SCRYPT = {"n": 2**14, "r": 8, "p": 1}
OWNER, VIEWER, APPROVER = "owner", "viewer", "approver"


class ConsoleUserError(InputError):
    """A console user that cannot be given a token (not listed in the workspace)."""


@dataclass(frozen=True)
class ConsoleUser:
    """Someone signed in: the name the audit log records, and the role (owner, viewer or approver)."""

    name: str
    role: str

    @property
    def can_attest(self) -> bool:
        return self.role == OWNER

    @property
    def can_approve(self) -> bool:
        return self.role == APPROVER


def tokens_path(workspace_root: Path) -> Path:
    return Path(workspace_root) / TOKENS_FILE


def role_of(workspace: Workspace, name: str) -> str | None:
    """``owner``/``viewer``/``approver`` as the workspace lists ``name`` now (None: not listed)."""
    if name in workspace.config.owners:
        return OWNER
    if name in workspace.config.viewers:
        return VIEWER
    if name in workspace.config.approvers:
        return APPROVER
    return None


def add_token(workspace: Workspace, name: str) -> str:
    """A new token for ``name`` (listed under ``owners:``, ``viewers:`` or ``approvers:``), replacing its old one;
    returns the token — the only time it exists outside the holder's hands."""
    from piitracer.api import write_private

    role = role_of(workspace, name)
    if role is None:
        raise ConsoleUserError(f"{workspace.root / 'piitracer.yaml'}: {name!r} is not listed under owners:, viewers: or approvers: "
                               "(add it there first: the workspace says who may sign in to the console)")
    path = tokens_path(workspace.root)
    entries = [e for e in _read(path) if e.get("name") != name]
    token_id, secret, salt = secrets.token_hex(6), secrets.token_urlsafe(32), secrets.token_bytes(16)
    entries.append({"id": token_id, "name": name, "role": role, "salt": salt.hex(), "scrypt": _hash(secret, salt).hex(),
                    "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_private(path, json.dumps(sorted(entries, key=lambda e: e["name"]), indent=2) + "\n")
    return f"{PREFIX}.{token_id}.{secret}"


def revoke_token(workspace: Workspace, name: str) -> bool:
    """Remove ``name``'s token (True when there was one): it no longer signs in."""
    from piitracer.api import write_private

    path = tokens_path(workspace.root)
    entries = _read(path)
    kept = [e for e in entries if e.get("name") != name]
    if len(kept) != len(entries):
        write_private(path, json.dumps(kept, indent=2) + "\n")
    return len(kept) != len(entries)


def check_token(workspace: Workspace, token: str) -> ConsoleUser | None:
    """The user a token belongs to, or None (unknown, wrong, or its name no longer listed in the
    workspace: removing a name from ``owners:``/``viewers:`` revokes its token)."""
    prefix, _, rest = token.strip().partition(".")
    token_id, _, secret = rest.partition(".")
    if prefix != PREFIX or not token_id or not secret:
        return None
    entry = next((e for e in _read(tokens_path(workspace.root)) if e.get("id") == token_id), None)
    if entry is None:
        _hash(secret, b"\0" * 16)  # as slow as a known id: the time does not tell which ids exist
        return None
    if not hmac.compare_digest(_hash(secret, bytes.fromhex(entry["salt"])).hex(), entry["scrypt"]):
        return None
    role = role_of(workspace, entry["name"])
    if role is None or role != entry.get("role"):
        return None
    return ConsoleUser(entry["name"], role)


def _hash(secret: str, salt: bytes) -> bytes:
    return hashlib.scrypt(secret.encode("utf-8"), salt=salt, dklen=32, **SCRYPT)


def _read(path: Path) -> list[dict]:
    if not path.exists():
        return []
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ConsoleUserError(f"{path}: cannot read the console tokens ({error}); `piitracer owners add NAME` "
                               "writes the file again") from None
    if not isinstance(entries, list):
        raise ConsoleUserError(f"{path}: expected a list of token entries")
    return entries
