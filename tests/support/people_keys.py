"""People for tests, made as ``piitracer owners add NAME`` makes them: with the workspace's audit key
and signing key, their registration recorded in the audit log, each a token and their own signing key."""

from __future__ import annotations

from pathlib import Path

from piitracer.api import Keys
from piitracer.api.session import Session
from piitracer.audit import load_audit_key
from piitracer.crypto.envelope import write_master_key
from piitracer.crypto.signing import generate_signing_key

AUDIT_KEY = "people-test-audit-key-0123456789abcdef"


def workspace_keys(folder: Path, audit: str = AUDIT_KEY) -> Keys:
    """An audit key, a master key and a signing key (files under ``folder``, made once)."""
    folder.mkdir(parents=True, exist_ok=True)
    master, signing = folder / "master.key", folder / "signing.key"
    master_key = write_master_key(master) if not master.exists() else None
    if not signing.exists():
        generate_signing_key(signing)
    if master_key is None:
        from piitracer.crypto.envelope import load_master_key

        master_key = load_master_key(master)
    return Keys(audit=load_audit_key(audit), master=master_key, signing_key_file=signing)


def tokens(workspace, keys: Keys, *names: str) -> dict[str, str]:
    """A token per person (each registered in the workspace's audit log)."""
    with Session(workspace, keys) as session:
        return {name: session.add_person(name).token for name in names}
