"""People: make, replace or revoke a person's credential — their token and their own signing key
(``piitracer owners add|revoke``, issue 50). Guarded and recorded: it needs the workspace's audit key
(the ``person`` entry is appended to the audit log) and its signing key (which signs the
registration, so an auditor sees the workspace vouched for the person's public key), and it ends
every console session of the person's old credential (a session is bound to the credential it
signed in with). Rooms: identity, audit, crypto.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from piitracer.audit import AuditLog, record_person_entry
from piitracer.audit.signatures import ADDED, REPLACED, REVOKED
from piitracer.identity.people import PersonRecord, add_person, remove_person, role_of
from piitracer.model.errors import InputError
from piitracer.workspace.model import WORKSPACE_FILE, Workspace


class PersonError(InputError):
    """A person who cannot be given a credential (not listed in the workspace)."""


@dataclass(frozen=True)
class Credential:
    """What :func:`make_credential` made: the token (shown once), the person's record and the
    audit entry that registers their key."""

    token: str
    record: PersonRecord
    replaced: bool
    audit_seq: int


def make_credential(workspace: Workspace, log: AuditLog, signing_key: Any, name: str) -> Credential:
    """A new token and signing key for ``name``, replacing their old ones (whose sessions end).

    Args:
        workspace: the loaded workspace (``name`` must be listed under owners:, viewers: or approvers:).
        log: the workspace's audit log (the registration is appended to it).
        signing_key: the workspace's signing key (an ``Ed25519PrivateKey``): it signs the registration.
        name: the person.

    Returns:
        The token, the record, whether it replaced an older credential, and the audit entry's sequence.

    Raises:
        PersonError: ``name`` is not listed in the workspace.
    """
    role = role_of(workspace, name)
    if role is None:
        raise PersonError(f"{workspace.root / WORKSPACE_FILE}: {name!r} is not listed under owners:, viewers: or "
                          "approvers: (add it there first: the workspace says who may act)")
    token, record, old = add_person(workspace.root, name, role)
    entry = record_person_entry(log, name=name, role=role, change=REPLACED if old else ADDED,
                                public_key=record.public_key, registrar=signing_key)
    return Credential(token, record, old is not None, entry.seq)


def revoke_credential(workspace: Workspace, log: AuditLog, signing_key: Any, name: str) -> PersonRecord | None:
    """End ``name``'s credential: their token opens nothing, their sessions end, and the audit log
    records that their key no longer counts from here on.

    Args:
        workspace: the loaded workspace.
        log: the workspace's audit log.
        signing_key: the workspace's signing key (it signs the revocation).
        name: the person.

    Returns:
        The record revoked, or None when ``name`` had no credential (nothing is recorded then).
    """
    gone = remove_person(workspace.root, name)
    if gone is not None:
        record_person_entry(log, name=name, role=gone.role, change=REVOKED, public_key=None, registrar=signing_key)
    return gone
