"""People's signatures in the audit log (issue 50): who planned, approved, attested or executed is
the person whose own key signed the entry's statement, with the key the log registered for them at
that point — never the name an entry says.

- A ``person`` entry registers, replaces or revokes a person's public key. It carries the
  registration statement signed by the workspace's signing key (the certificate's): only a holder of
  that key registers a key for anyone, and an auditor checks it with its public key.
- A ``plan``, ``approval``, ``attestation`` or ``execution`` entry may carry its actor's proof
  (``planner``, ``approver``, ``attester``, ``executor``): the statement, the public key and the
  signature. It counts for that person only when the statement is this entry's (its kind, its plan,
  its step, the person named), the key is the one registered for the person at that point of the log
  (not revoked, not replaced), and the signature verifies. An entry written with only the audit key
  has no such signature, so it counts for nobody.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from piitracer.identity.statements import APPROVAL, ATTESTATION, EXECUTION, PERSON, PLAN, key_fingerprint, signed_by
from piitracer.model.audit import AuditEntry, EntryKind

# The field of an entry's body holding its actor's proof, and the field naming the actor.
PROOF_FIELD = {EntryKind.PLAN: "planner", EntryKind.APPROVAL: "approver", EntryKind.ATTESTATION: "attester",
               EntryKind.EXECUTION: "executor"}
NAME_FIELD = {EntryKind.PLAN: "planned_by", EntryKind.APPROVAL: "approved_by", EntryKind.ATTESTATION: "attested_by",
              EntryKind.EXECUTION: "executed_by"}
STATEMENT_KIND = {EntryKind.PLAN: PLAN, EntryKind.APPROVAL: APPROVAL, EntryKind.ATTESTATION: ATTESTATION,
                  EntryKind.EXECUTION: EXECUTION}
# What an entry's statement must repeat of its body (beside the kind, the plan and the person).
BOUND_FIELDS = {EntryKind.APPROVAL: ("planned_by",), EntryKind.ATTESTATION: ("step_id", "dataset", "action",
                                                                              "evidence_sha256"),
                EntryKind.EXECUTION: (), EntryKind.PLAN: ()}
ADDED, REPLACED, REVOKED = "added", "replaced", "revoked"


@dataclass(frozen=True)
class Registration:
    """One ``person`` entry: a person's key from entry ``seq`` on (None: revoked)."""

    seq: int
    name: str
    role: str | None
    public_key: str | None
    change: str


class Registry:
    """Every person's registered keys along the log, from its ``person`` entries; ``registrar`` is
    the workspace's signing key (its public key, an ``Ed25519PublicKey``), whose signature each
    registration must carry (None: registrations are taken from the log's own integrity alone)."""

    def __init__(self, entries: Iterable[AuditEntry], registrar: Any = None) -> None:
        self.registrations: dict[str, list[Registration]] = {}
        self.problems: list[tuple[int, str]] = []
        wanted = None
        if registrar is not None:
            from piitracer.crypto.signing import fingerprint

            wanted = fingerprint(registrar)
        for entry in entries:
            if entry.kind is not EntryKind.PERSON:
                continue
            problem = registration_problem(entry.body, wanted, registrar)
            if problem is not None:
                self.problems.append((entry.seq, problem))
                continue
            body = entry.body
            self.registrations.setdefault(str(body["name"]), []).append(Registration(
                entry.seq, str(body["name"]), body.get("role"), body.get("public_key") if body["change"] != REVOKED else None,
                str(body["change"])))

    def key_at(self, name: str, seq: int) -> Registration | None:
        """The registration of ``name`` in force at entry ``seq`` (None: none, or revoked)."""
        found = None
        for registration in self.registrations.get(name, ()):
            if registration.seq < seq:
                found = registration
        return found if found is not None and found.public_key else None

    def current(self, name: str) -> Registration | None:
        """``name``'s registration in force now."""
        return self.key_at(name, 2**62)


def registration_problem(body: Mapping[str, Any], registrar_fingerprint: str | None, registrar: Any) -> str | None:
    """Why a ``person`` entry's body is not a registration the workspace's signing key made (None: it is)."""
    name, change, public_key = body.get("name"), body.get("change"), body.get("public_key")
    if not isinstance(name, str) or change not in (ADDED, REPLACED, REVOKED):
        return "a person entry without a name or a known change"
    if change != REVOKED and not isinstance(public_key, str):
        return f"{name}: a registration without a public key"
    proof = body.get("registration")
    if not isinstance(proof, dict) or not isinstance(proof.get("statement"), dict):
        return f"{name}: a registration the workspace's signing key did not sign"
    said = proof["statement"]
    if said.get("kind") != PERSON or said.get("name") != name or said.get("change") != change \
            or said.get("public_key") != public_key or said.get("role") != body.get("role"):
        return f"{name}: the registration's signed statement is not this entry's"
    if registrar is None:
        return None
    if proof.get("registrar") != registrar_fingerprint:
        return f"{name}: registered under another signing key ({str(proof.get('registrar'))[:16]}…)"
    from piitracer.crypto.signing import canonical_bytes

    try:
        import base64

        registrar.verify(base64.b64decode(str(proof.get("signature", "")), validate=True), canonical_bytes(said))
    except Exception:  # InvalidSignature or a malformed value: not signed by the registrar
        return f"{name}: the registration's signature is not the workspace signing key's"
    return None


def proof_of(person: Any, document: Mapping[str, Any]) -> dict[str, Any]:
    """An actor's proof for an entry's body: the statement, their public key and their signature
    (``person``: an ``identity.people.ProvenPerson``)."""
    return {"statement": dict(document), "public_key": person.public_key, "key_sha256": key_fingerprint(person.public_key),
            "signature": person.sign(document)}


def signer(entry: AuditEntry, registry: Registry) -> str | None:
    """The person whose own key signed this entry's statement (module docstring), or None."""
    return signer_problem(entry, registry)[0]


def signer_problem(entry: AuditEntry, registry: Registry) -> tuple[str | None, str | None]:
    """(the signer, None) or (None, why the entry counts for nobody); (None, None) for an entry no
    person signs."""
    field = PROOF_FIELD.get(entry.kind)
    if field is None:
        return None, None
    body = entry.body
    name, proof = body.get(NAME_FIELD[entry.kind]), body.get(field)
    if not isinstance(proof, dict):
        return None, f"entry {entry.seq}: {entry.kind.value} by {name or 'nobody'} carries no signature of theirs"
    said = proof.get("statement")
    if not isinstance(said, dict) or said.get("kind") != STATEMENT_KIND[entry.kind] or said.get("by") != name \
            or said.get("plan_id") != entry.plan_id \
            or any(said.get(key) != body.get(key) for key in BOUND_FIELDS[entry.kind]):
        return None, f"entry {entry.seq}: the signed statement is not this {entry.kind.value}'s"
    registered = registry.key_at(str(name), entry.seq)
    if registered is None:
        return None, f"entry {entry.seq}: {name} had no registered key then (never added, or revoked)"
    if proof.get("public_key") != registered.public_key:
        return None, f"entry {entry.seq}: signed with a key that is not {name}'s registered one"
    if not signed_by(registered.public_key, said, str(proof.get("signature", ""))):
        return None, f"entry {entry.seq}: the signature is not {name}'s"
    return str(name), None


def signature_problems(entries: Iterable[AuditEntry], registrar: Any = None) -> list[tuple[int, str]]:
    """Every signed entry of the log whose signature does not hold, and every registration the
    signing key did not make (``audit verify``): (seq, why)."""
    entries = list(entries)
    registry = Registry(entries, registrar)
    problems = list(registry.problems)
    for entry in entries:
        if entry.kind in PROOF_FIELD and isinstance(entry.body.get(PROOF_FIELD[entry.kind]), dict):
            _, problem = signer_problem(entry, registry)
            if problem is not None:
                problems.append((entry.seq, problem))
    return sorted(problems)


def people_of(entries: Iterable[AuditEntry], registry: Registry, registrations: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Who acted on a request's plan (its ``entries``), each with the statement they signed, their
    public key and their signature — only entries whose signature holds with the key the log
    registered for them then — and the workspace signing key's registration of each of those keys,
    for the certificate: an auditor checks every one with public keys alone (docs/use/audit.md)."""
    where = {EntryKind.PLAN: "planner", EntryKind.APPROVAL: "approvals", EntryKind.ATTESTATION: "attestations",
             EntryKind.EXECUTION: "executions"}
    acted: dict[str, list[dict[str, Any]]] = {name: [] for name in where.values()}
    keys: set[tuple[str, str]] = set()
    for entry in entries:
        if entry.kind not in where or signer(entry, registry) is None:
            continue
        proof, name = entry.body[PROOF_FIELD[entry.kind]], entry.body[NAME_FIELD[entry.kind]]
        acted[where[entry.kind]].append({"name": name, "public_key": proof["public_key"], "statement": proof["statement"],
                                         "signature": proof["signature"]})
        keys.add((name, proof["public_key"]))
    planner = acted.pop("planner")
    return {"planner": planner[0] if planner else None, **acted,
            "registrations": [{"name": r["name"], "role": r.get("role"), "change": r["change"],
                               "public_key": r.get("public_key"), **r["registration"]}
                              for r in registrations if (r["name"], r.get("public_key")) in keys]}
