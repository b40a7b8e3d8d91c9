"""The erasure certificate: issued only for a complete verification on an intact log, signed with
Ed25519, checked by `audit check-certificate` and by the README's few lines of plain
`cryptography`; one byte changed or another key's signature fails both."""

from __future__ import annotations

import json
import re
import stat
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from audit_builders import KEY, RAW_VALUES, record_all, verification
from piitracer.api import Evidence, attest_step, erasure_certificate, record_verification
from piitracer.cli.main import cli
from piitracer.crypto.signing import load_signing_key
from piitracer.model.audit import EntryKind
from paths import REPO

README = REPO / "README.md"
PERSON = {"manual", "manual_review", "recompute"}
ENV = {"PIITRACER_AUDIT_KEY": KEY, "PIITRACER_AUDIT_KEY_FILE": None, "PIITRACER_SIGNING_KEY_FILE": None}


def run(*args: str, env: dict | None = None):
    result = CliRunner().invoke(cli, list(args), env={**ENV, **(env or {})})
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture()
def completed(tmp_path: Path):
    """A recorded trail whose person steps are attested, each by an owner with their own registered
    key (registered under the signing key the certificate is signed with), and whose latest
    verification is complete."""
    from piitracer.audit import record_person_entry
    from piitracer.crypto.signing import generate_signing_key
    from piitracer.identity.people import add_person, prove

    trail = record_all(tmp_path, found=None)
    generate_signing_key(tmp_path / "signing.key")
    registrar = load_signing_key(tmp_path / "signing.key")
    owners = {}
    for number, step in enumerate(s for s in trail.plan.steps if s.action.value in PERSON):
        name = f"owner-{number}"
        token, record, _ = add_person(trail.workspace.root, name, "owner")
        record_person_entry(trail.log, name=name, role="owner", change="added", public_key=record.public_key,
                            registrar=registrar)
        owners[step.id] = prove(trail.workspace.root, token)
        attest_step(trail.log, trail.plan, step.id, owners[step.id], Evidence.of(f"ticket for {step.id}"))
    record_verification(trail.log, trail.plan, verification(trail.plan, found=None, attested=True))
    trail.log.close()
    return trail


def keygen(folder: Path, name: str = "signing.key") -> tuple[Path, Path]:
    private = folder / name
    if private.exists():  # the completed trail's: its people were registered under it
        return private, Path(str(private) + ".pub")
    code, out, err = run("audit", "keygen", str(private))
    assert code == 0, err
    return private, Path(str(private) + ".pub")


def certify(trail, private: Path, out: Path, request: str = "dsr-1"):
    return run("--workspace", str(trail.workspace.root), "audit", "certificate", "--request", request,
               "--signing-key", str(private), "-o", str(out))


def test_keygen_writes_a_private_key_only_its_owner_reads_and_never_overwrites(tmp_path: Path) -> None:
    private, public = keygen(tmp_path)
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert b"BEGIN PRIVATE KEY" in private.read_bytes() and b"BEGIN PUBLIC KEY" in public.read_bytes()
    code, _, err = run("audit", "keygen", str(private))
    assert code == 2 and "never overwritten" in err


def test_certificate_states_the_requests_outcome_and_ties_to_the_log(completed, tmp_path: Path) -> None:
    private, public = keygen(tmp_path)
    out = tmp_path / "cert.json"
    code, text, err = certify(completed, private, out)
    assert code == 0, err
    assert "erasure certificate for request dsr-1" in text
    document = json.loads(out.read_text())
    body = document["certificate"]
    from piitracer.api import audit_log

    with audit_log(completed.workspace, key=KEY, create=False) as log:
        entries = log.entries(request_id="dsr-1")
        assert body["audit"]["merkle_root"] == log.request_root("dsr-1")
        assert body["audit"]["chain_head"] == log.head()[1]
        plan_entry = next(e for e in entries if e.kind is EntryKind.PLAN)
    assert body["request_id"] == "dsr-1" and body["plan_id"] == completed.plan.plan_id
    assert body["subject_hmacs"] == sorted(s.hmac for s in plan_entry.subjects if s.request_id == "dsr-1")
    assert body["batched_with"] == ["dsr-2"]
    assert {d["dataset"]: d["state"] for d in body["datasets"]} == {
        d.dataset: ("erased" if d.status.value == "erase" else "no_action" if d.status.value == "no_action" else "attested")
        for d in completed.plan.datasets}
    attested = sorted(s.id for s in completed.plan.steps if s.action.value in PERSON)
    assert sorted(a["step_id"] for a in body["attestations"]) == attested and attested
    assert all(re.fullmatch(r"[0-9a-f]{64}", a["evidence_sha256"]) for a in body["attestations"])
    assert body["closed"] is None  # not closed: values are still held (encrypted) for re-verification
    raw = out.read_bytes()
    assert not any(value.encode() in raw for value in RAW_VALUES)
    # and the auditor's own check
    code, text, _ = run("audit", "check-certificate", str(out), "--public-key", str(public))
    assert code == 0 and "certificate valid" in text


def test_the_report_lists_the_attestations(completed) -> None:
    code, text, err = run("--workspace", str(completed.workspace.root), "audit", "report", "--request", "dsr-1",
                          "--format", "md")
    assert code == 0, err
    section = text.split("## Attestations", 1)[1].split("## Verification evidence", 1)[0]
    rows = [line for line in section.splitlines() if re.match(r"\| s\d+ ", line)]
    assert sorted(row.split("|")[1].strip() for row in rows) == sorted(
        s.id for s in completed.plan.steps if s.action.value in PERSON)


def test_one_changed_byte_or_another_key_fails_the_check(completed, tmp_path: Path) -> None:
    private, public = keygen(tmp_path)
    _, other_public = keygen(tmp_path, "other.key")
    out = tmp_path / "cert.json"
    assert certify(completed, private, out)[0] == 0
    text = out.read_text()
    changed = tmp_path / "changed.json"
    # one byte: the first dataset's files_scanned count gains a digit's worth
    position = text.index('"files_scanned": ') + len('"files_scanned": ')
    changed.write_text(text[:position] + ("9" if text[position] != "9" else "8") + text[position + 1:])
    assert sum(a != b for a, b in zip(text, changed.read_text())) == 1
    code, _, err = run("audit", "check-certificate", str(changed), "--public-key", str(public))
    assert code == 1 and "changed after it was signed" in err
    code, _, err = run("audit", "check-certificate", str(out), "--public-key", str(other_public))
    assert code == 1 and "another key" in err
    code, _, err = run("audit", "check-certificate", str(out), "--public-key", str(tmp_path / "missing.pub"))
    assert code == 2 and "--public-key" in err


def readme_check_snippet() -> str:
    text = README.read_text()
    block = text.split("<!-- certificate-check -->", 1)[1]
    return block.split("```python", 1)[1].split("```", 1)[0]


def test_the_readme_snippet_checks_a_certificate_with_cryptography_alone(completed, tmp_path: Path) -> None:
    private, public = keygen(tmp_path)
    _, other_public = keygen(tmp_path, "other.key")
    out = tmp_path / "cert.json"
    assert certify(completed, private, out)[0] == 0
    script = tmp_path / "check.py"
    script.write_text(readme_check_snippet())
    assert "piitracer" not in script.read_text().replace("piitracer-", "")  # the check does not use piitracer
    good = subprocess.run([sys.executable, str(script), str(out), str(public)], capture_output=True, text=True)
    assert good.returncode == 0 and "valid certificate for request dsr-1" in good.stdout
    document = json.loads(out.read_text())
    document["certificate"]["datasets"][0]["state"] = "erased" if document["certificate"]["datasets"][0]["state"] != "erased" else "found"
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(document))
    for certificate, key in ((forged, public), (out, other_public)):
        bad = subprocess.run([sys.executable, str(script), str(certificate), str(key)], capture_output=True, text=True)
        assert bad.returncode != 0 and "InvalidSignature" in bad.stderr


def test_no_certificate_for_an_unfinished_erasure_or_a_tampered_log(tmp_path: Path) -> None:
    trail = record_all(tmp_path, found="risk.card_usage")  # the latest verification found data
    trail.log.close()
    private, _ = keygen(tmp_path)
    code, _, err = certify(trail, private, tmp_path / "c.json")
    assert code == 1 and "not complete" in err and not (tmp_path / "c.json").exists()
    import sqlite3

    db = sqlite3.connect(trail.db)
    db.execute("DROP TRIGGER entries_no_update")
    db.execute("UPDATE entries SET recorded_at = '2020-01-01' WHERE seq = 2")
    db.commit()
    db.close()
    code, _, err = certify(trail, private, tmp_path / "c.json")
    assert code == 1 and "not intact" in err
    code, _, err = run("--workspace", str(trail.workspace.root), "audit", "certificate", "--request", "dsr-1")
    assert code == 2 and "no signing key" in err and "--signing-key" in err


def test_the_same_trail_and_time_give_the_same_certificate(completed, tmp_path: Path) -> None:
    from piitracer.api import audit_log

    private, _ = keygen(tmp_path)
    key = load_signing_key(private)
    moment = datetime(2026, 11, 24, 12, 0, tzinfo=timezone.utc)
    with audit_log(completed.workspace, key=KEY, create=False) as log:
        first = erasure_certificate(completed.workspace, log, "dsr-1", key, issued_at=moment)
        second = erasure_certificate(completed.workspace, log, "dsr-1", key, issued_at=moment)
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
