"""Ed25519 signatures for erasure certificates, so an auditor can check one with a public key and
a few lines of ``cryptography`` — without piitracer and without any of its secrets.

What is signed is the certificate object's canonical JSON: keys sorted, no whitespace
(``separators=(",", ":")``), UTF-8 (``ensure_ascii=False``). The signed document is
``{"certificate": {...}, "signature": {"algorithm": "Ed25519", "public_key_sha256": ..., "value":
base64}}``. Keys are PEM files: the private key PKCS#8 (mode 0600, never overwritten), the public
key SubjectPublicKeyInfo beside it as ``<private>.pub``. There is no default key.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Mapping

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from piitracer.model.errors import BadKeyError
from piitracer.storage.key_files import read_key_file

ENV_SIGNING_KEY_FILE = "PIITRACER_SIGNING_KEY_FILE"
ALGORITHM = "Ed25519"


class SigningKeyError(BadKeyError):
    """A signing or public key cannot be made, read or used."""


def canonical_bytes(document: Any) -> bytes:
    """The bytes that are signed: sorted keys, no whitespace, UTF-8."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def public_key_path(private_path: Path) -> Path:
    """Where :func:`generate_signing_key` puts the public half of ``private_path``."""
    return private_path.with_name(private_path.name + ".pub")


def generate_signing_key(path: Path) -> tuple[Path, str]:
    """A new Ed25519 key: the private key at ``path`` (0600, refused if it exists), the public key
    at ``path.pub``. Returns the public key's path and fingerprint."""
    public_path = public_key_path(path)
    for target in (path, public_path):
        if target.exists():
            raise SigningKeyError(f"{target} exists: a signing key is never overwritten")
    key = Ed25519PrivateKey.generate()
    private_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(private_pem)
    public_path.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                          serialization.PublicFormat.SubjectPublicKeyInfo))
    return public_path, fingerprint(key.public_key())


def load_signing_key(path: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None,
                     option: str = "--signing-key") -> Ed25519PrivateKey:
    """The private key from ``path`` or ``$PIITRACER_SIGNING_KEY_FILE``; no default."""
    environ = os.environ if environ is None else environ
    source = Path(path) if path is not None else Path(environ[ENV_SIGNING_KEY_FILE]) if environ.get(ENV_SIGNING_KEY_FILE) else None
    if source is None:
        raise SigningKeyError(f"no signing key: pass {option} PATH or set {ENV_SIGNING_KEY_FILE}=PATH "
                              "(make one with `piitracer audit keygen PATH`)")
    return _load_pem(source, option, "private", lambda data: serialization.load_pem_private_key(data, password=None),
                     Ed25519PrivateKey)


def load_public_key(path: Path, option: str = "--public-key") -> Ed25519PublicKey:
    """An Ed25519 public key from a PEM file."""
    return _load_pem(path, option, "public", serialization.load_pem_public_key, Ed25519PublicKey)


def _load_pem(path: Path, option: str, kind: str, loader, expected: type):
    """A key of type ``expected`` from a PEM file, or one clear SigningKeyError naming ``option``."""
    # A public key is meant to be shared: only the private key's file must be its owner's alone.
    data = read_key_file(path, f"{option} {path}", f"the {kind} key", secret=kind == "private", error=SigningKeyError,
                         kind="signing" if kind == "private" else "public")  # an audit or master key file is refused
    try:
        key = loader(data)
    except (ValueError, TypeError) as error:
        raise SigningKeyError(f"{option} {path}: not a PEM {kind} key ({str(error).splitlines()[0]})") from None
    if not isinstance(key, expected):
        raise SigningKeyError(f"{option} {path}: expected an Ed25519 {kind} key, got {type(key).__name__}")
    return key


def fingerprint(public: Ed25519PublicKey) -> str:
    """SHA-256 (hex) of the raw public key: names the key in a certificate."""
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def sign(certificate: Mapping[str, Any], key: Ed25519PrivateKey) -> dict[str, Any]:
    """The signed document for ``certificate``."""
    value = key.sign(canonical_bytes(certificate))
    return {"certificate": dict(certificate),
            "signature": {"algorithm": ALGORITHM, "public_key_sha256": fingerprint(key.public_key()),
                          "value": base64.b64encode(value).decode("ascii")}}


def check(document: Any, public: Ed25519PublicKey) -> str | None:
    """None when ``document`` is a certificate signed by ``public`` and unchanged since; else why not."""
    if not isinstance(document, dict) or not isinstance(document.get("certificate"), dict) \
            or not isinstance(document.get("signature"), dict):
        return "not a signed certificate (expected 'certificate' and 'signature' objects)"
    signature = document["signature"]
    if signature.get("algorithm") != ALGORITHM:
        return f"signature algorithm {signature.get('algorithm')!r}; expected {ALGORITHM}"
    try:
        value = base64.b64decode(str(signature.get("value", "")), validate=True)
    except ValueError:
        return "the signature value is not base64"
    if signature.get("public_key_sha256") != fingerprint(public):
        return (f"signed by another key (fingerprint {str(signature.get('public_key_sha256'))[:16]}…, this public key is "
                f"{fingerprint(public)[:16]}…)")
    try:
        public.verify(value, canonical_bytes(document["certificate"]))
    except InvalidSignature:
        return "the signature does not match: the certificate was changed after it was signed"
    return None
