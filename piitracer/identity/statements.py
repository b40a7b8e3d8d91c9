"""What a person signs, and checking it with their public key alone (no piitracer secret).

A statement is a small JSON object naming what is done (``kind``: plan, approval, attestation,
execution, person), the plan it is bound to and who does it; it is signed as its canonical JSON
(keys sorted, no whitespace, UTF-8), the same bytes the certificate signs
(:func:`piitracer.crypto.signing.canonical_bytes`). The signature travels beside the statement, as
base64, with the signer's raw public key (hex): an auditor checks it with ``cryptography`` alone::

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    Ed25519PublicKey.from_public_bytes(bytes.fromhex(signed["public_key"])).verify(
        base64.b64decode(signed["signature"]),
        json.dumps(signed["statement"], sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode())
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any, Mapping

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from piitracer.crypto.signing import canonical_bytes

FORMAT = "piitracer-statement/1"
PLAN, APPROVAL, ATTESTATION, EXECUTION, PERSON = "plan", "approval", "attestation", "execution", "person"


def statement(kind: str, **fields: Any) -> dict[str, Any]:
    """A statement of ``kind`` with ``fields`` (JSON values; ``None`` fields are left out)."""
    return {"format": FORMAT, "kind": kind, **{k: v for k, v in fields.items() if v is not None}}


def key_fingerprint(public_key: str) -> str:
    """SHA-256 (hex) of a raw public key given in hex: names the key (as the certificate's)."""
    return hashlib.sha256(bytes.fromhex(public_key)).hexdigest()


def signed_by(public_key: str, document: Mapping[str, Any], signature: str) -> bool:
    """Whether ``signature`` (base64) is the Ed25519 signature of ``document`` by ``public_key``
    (raw, hex). Anything malformed is False."""
    try:
        key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key))
        key.verify(base64.b64decode(signature, validate=True), canonical_bytes(document))
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True


def people_problem(certificate: Mapping[str, Any], workspace_key: Any) -> str | None:
    """Why the people a certificate names are not proven by public keys alone (None: they are):
    each registration signed by the workspace key that signed the certificate, each act (plan,
    approval, attestation, execution) signed by its person's registered key over a statement of
    this plan, and no approval by the planner's key (the same check as docs/use/audit.md's script).
    A certificate without a ``people`` section (made before issue 50) has nobody to check."""
    import base64 as b64

    from piitracer.crypto.signing import canonical_bytes as canonical

    people = certificate.get("people")
    if people is None:
        return None
    keys: dict[str, set[str]] = {}
    for registration in people.get("registrations", []):
        try:
            workspace_key.verify(b64.b64decode(registration["signature"]), canonical(registration["statement"]))
        except Exception:  # InvalidSignature or a malformed entry
            return f"the registration of {registration.get('name')!r} is not signed by the workspace's signing key"
        if registration["statement"].get("public_key") != registration.get("public_key"):
            return f"the registration of {registration.get('name')!r} names another key than it registers"
        keys.setdefault(registration["name"], set()).add(registration["public_key"])
    planner = people.get("planner")
    acts = ([planner] if planner else []) + people.get("approvals", []) + people.get("attestations", []) \
        + people.get("executions", [])
    for act in acts:
        said = act.get("statement") or {}
        if act.get("public_key") not in keys.get(act.get("name"), ()) or said.get("by") != act.get("name"):
            return f"{act.get('name')!r} signed with a key the workspace did not register for them"
        if said.get("plan_id") != certificate.get("plan_id"):
            return f"{act.get('name')!r} signed a statement of another plan"
        if not signed_by(act["public_key"], said, str(act.get("signature", ""))):
            return f"{act.get('name')!r}'s signature does not hold: the statement was changed after it was signed"
    if planner and any(a["public_key"] == planner["public_key"] or a["name"] == planner["name"]
                       for a in people.get("approvals", [])):
        return "the plan was approved by its own planner"
    return None
