"""Opaque bytes at rest under the master key: the bodies ``piitracer serve`` rejected.

A rejected OpenLineage body may hold anything a producer sent, personal data included, so it is
kept only encrypted: each body gets its own random 256-bit key (AES-GCM, random nonce, the
record's id as associated data), and that key is stored wrapped by the master key (or a KMS,
through :class:`~piitracer.crypto.envelope.KeyWrapper`). Whoever holds the master key can open it
(a person looking at why a producer's event was refused; ``requests close`` searching it for the
closed request's values); nobody else can. Deleting the record deletes its only wrapped key.
"""

from __future__ import annotations

import base64
import secrets

from piitracer.crypto.envelope import KeyWrapper, MasterKeyError

CONTEXT_PREFIX = "rejected-event:"


class BodySealer:
    """Seals and opens rejected bodies under one master key (see the module docstring)."""

    def __init__(self, wrapper: KeyWrapper) -> None:
        self.wrapper = wrapper

    @property
    def fingerprint(self) -> str:
        """The master key's public name (kept beside each sealed body)."""
        return self.wrapper.fingerprint

    def seal(self, body: bytes, record_id: str) -> dict[str, str]:
        """``body`` encrypted for the record ``record_id``: its wrapped key and its ciphertext."""
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        key, nonce = secrets.token_bytes(32), secrets.token_bytes(12)
        context = CONTEXT_PREFIX + record_id
        sealed = AESGCM(key).encrypt(nonce, body, context.encode())
        return {"wrapped_key": self.wrapper.wrap(key, context), "master_fingerprint": self.wrapper.fingerprint,
                "sealed": base64.b64encode(nonce + sealed).decode("ascii")}

    def open(self, sealed: dict[str, str], record_id: str) -> bytes:
        """The body of ``sealed``; :class:`MasterKeyError` when this master key did not seal it or
        the record was altered."""
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        context = CONTEXT_PREFIX + record_id
        try:
            key = self.wrapper.unwrap(sealed["wrapped_key"], context)
            raw = base64.b64decode(sealed["sealed"])
            return AESGCM(key).decrypt(raw[:12], raw[12:], context.encode())
        except (KeyError, TypeError, ValueError, InvalidTag):
            raise MasterKeyError(f"rejected event {record_id}: the sealed body does not open (altered, or sealed "
                                 "under another master key)") from None
