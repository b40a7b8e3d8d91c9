"""Console users: who is signed in and in which role. A person signs in with their own token
(``piitracer owners add NAME`` printed it once); the token proves who they are and opens their own
signing key, which the console keeps only sealed under the session's cookie, to sign what they
approve or attest (``identity/people.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from piitracer.identity.people import APPROVER, OWNER, VIEWER, ProvenPerson, people_path, prove_in, role_of
from piitracer.workspace.model import Workspace

__all__ = ["APPROVER", "OWNER", "VIEWER", "ConsoleUser", "check_token", "people_path", "role_of"]


@dataclass(frozen=True)
class ConsoleUser:
    """Someone signed in: the name the audit log records, the role (owner, viewer or approver), and
    the id of the credential they signed in with (None: a proxy vouched for them)."""

    name: str
    role: str
    credential: str | None = None

    @property
    def can_attest(self) -> bool:
        return self.role == OWNER

    @property
    def can_approve(self) -> bool:
        return self.role == APPROVER


def check_token(workspace: Workspace, token: str) -> tuple[ConsoleUser, ProvenPerson] | None:
    """The user a token belongs to, with their key opened; None for an unknown, wrong, replaced or
    revoked token, or a name no longer listed in the role its key was made for."""
    person = prove_in(workspace, token) if token else None
    if person is None:
        return None
    return ConsoleUser(person.name, person.role, person.record.id), person
