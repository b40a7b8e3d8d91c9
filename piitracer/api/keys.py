"""The keys a session works with, as one value: the audit key (seals plans, HMACs subjects in the
audit log), the master key (wraps each request's data key) and the certificate signing key.

Each is read by its own room's loader (``audit.keys``, ``crypto.envelope``, ``crypto.signing``),
all through the one key-file reader and its permission rule (``model.key_files``). A key that is
given (a file, or set in the environment) but unusable is an error when the keys are loaded; a key
that is absent stays ``None`` until a use case needs it, which then says how to supply it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from piitracer.audit.keys import ENV_KEY as ENV_AUDIT_KEY, ENV_KEY_FILE as ENV_AUDIT_KEY_FILE, AuditKey, \
    audit_key_file as audit_key_file_of, load_audit_key
from piitracer.crypto.envelope import KeyWrapper, has_master_key, load_master_key, master_key_file as master_key_file_of
from piitracer.crypto.signing import ENV_SIGNING_KEY_FILE, load_signing_key
from piitracer.model.errors import BadKeyError
from piitracer.storage.key_files import swapped_keys

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


@dataclass(frozen=True)
class Keys:
    """The audit key, the master key (or a KMS wrapper) and the signing key's file; each may be
    absent (``None``). ``repr`` never shows a secret."""

    audit: AuditKey | None = None
    master: KeyWrapper | None = None
    signing_key_file: Path | None = None

    @classmethod
    def load(cls, audit_key_file: str | os.PathLike[str] | None = None,
             master_key_file: str | os.PathLike[str] | None = None,
             signing_key_file: str | os.PathLike[str] | None = None, *,
             environ: Mapping[str, str] | None = None) -> "Keys":
        """Every key given as a file or set in the environment (``PIITRACER_AUDIT_KEY[_FILE]``,
        ``PIITRACER_MASTER_KEY[_FILE]``, ``PIITRACER_SIGNING_KEY_FILE``).

        Args:
            audit_key_file: the audit key's file (else the environment's).
            master_key_file: the master key's file (else the environment's).
            signing_key_file: the certificate signing key's file (else the environment's).
            environ: the environment to read (default: the process's).

        Returns:
            The keys found; an absent one is ``None``.

        Raises:
            BadKeyError: a key that is given but unreadable, too short or open to group or others;
                a key file that says it holds another key (the audit and master key files given
                the wrong way round are named together, in one line, before either is used).
        """
        environ = os.environ if environ is None else environ
        audit_file = audit_key_file_of(audit_key_file, environ)
        master_file = master_key_file_of(master_key_file, environ)
        swapped = swapped_keys(
            audit_file and (audit_file[0], f"--audit-key-file {audit_key_file}" if audit_key_file else audit_file[1]),
            master_file and (master_file[0], master_file[1]))
        if swapped:
            raise BadKeyError(swapped)
        audit = None
        if audit_key_file is not None or environ.get(ENV_AUDIT_KEY) or environ.get(ENV_AUDIT_KEY_FILE):
            audit = load_audit_key(key_file=audit_key_file, environ=environ, option="--audit-key-file")
        master = load_master_key(master_key_file, environ) if has_master_key(master_key_file, environ) else None
        signing = Path(signing_key_file) if signing_key_file is not None else (
            Path(environ[ENV_SIGNING_KEY_FILE]) if environ.get(ENV_SIGNING_KEY_FILE) else None)
        if signing is not None:
            load_signing_key(signing, option="--signing-key")  # a bad key is refused now, not at the certificate
        return cls(audit=audit, master=master, signing_key_file=signing)

    def need_audit(self) -> AuditKey:
        """The audit key, when the use case cannot go on without it.

        Returns:
            The audit key.

        Raises:
            AuditKeyError: there is none; the message says how to supply one.
        """
        return self.audit if self.audit is not None else load_audit_key(environ={})

    def need_master(self) -> KeyWrapper:
        """The master key, when the use case cannot go on without it.

        Returns:
            The master key (or KMS wrapper).

        Raises:
            MasterKeyError: there is none; the message says how to supply one.
        """
        return self.master if self.master is not None else load_master_key(environ={})

    def need_signing(self) -> "Ed25519PrivateKey":
        """The certificate signing key, loaded, when the use case cannot go on without it.

        Returns:
            The Ed25519 private key.

        Raises:
            SigningKeyError: there is none, or its file is unusable; the message says how to supply one.
        """
        return load_signing_key(self.signing_key_file, environ={}, option="--signing-key")

    def with_audit(self, audit: AuditKey | None) -> "Keys":
        """These keys with another audit key.

        Args:
            audit: the audit key (None: none).

        Returns:
            A new ``Keys``; the master and signing keys unchanged.
        """
        return Keys(audit=audit, master=self.master, signing_key_file=self.signing_key_file)

    def describe(self) -> dict[str, Any]:
        """Which keys are present, never a secret: for logs and ``--output json``.

        Returns:
            ``{"audit": bool, "master": bool, "signing": bool}``.
        """
        return {"audit": self.audit is not None, "master": self.master is not None,
                "signing": self.signing_key_file is not None}
