"""Requests operated over time, through the CLI: queued -> planned -> executing -> executed ->
awaiting_attestation -> verified -> watching -> closed, each change in the audit log; close refused
in every earlier state; close = crypto-shred (the data key destroyed, the journal's values deleted,
verify refused afterwards, the audit trail still intact); re-verification while watching catches a
resurrected row; a lost or wrong master key is one clear line and changes nothing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner
from spark_lakehouse import write_workspace

from piitracer.cli.main import cli
from piitracer.crypto.signing import generate_signing_key

AUDIT = "requests-test-audit-key-0123456789"
SUBJECT, PAN = 7_000_000_001, "SUBJ-PAN-000001"
STATES = ["queued", "planned", "executing", "executed", "awaiting_attestation", "verified", "watching", "closed"]


@pytest.fixture()
def ws(tmp_path: Path, warehouse: Path):
    lake = tmp_path / "lake"
    (lake / "users").mkdir(parents=True)
    ids = [SUBJECT] + [8_000_000_000 + i for i in range(100)]
    pans = [PAN] + [f"4111-{i:06d}" for i in range(100)]
    pq.write_table(pa.table({"user_id": pa.array(ids, pa.int64()), "pan": pans}), lake / "users" / "part-0.parquet")
    (lake / "cards").mkdir()
    pq.write_table(pa.table({"pan": pans, "n": list(range(101))}), lake / "cards" / "part-0.parquet")
    catalog = {
        "crm.users": {"format": "parquet", "location": str(lake / "users"), "columns": ["user_id", "pan"],
                      "identifiers": ["user_id", "pan"], "subject_key": "user_id"},
        "crm.cards": {"format": "parquet", "location": str(lake / "cards"), "columns": ["pan", "n"]},
        "stream.cdc": {"format": "external", "owner": "streaming-team", "columns": ["user_id"]},
    }
    sql = "INSERT INTO crm.cards SELECT pan, 1 AS n FROM crm.users;\nINSERT INTO stream.cdc SELECT user_id FROM crm.users;\n"
    root = write_workspace(tmp_path / "ws", warehouse, catalog, sql)
    config = yaml.safe_load((root / "piitracer.yaml").read_text())
    (root / "piitracer.yaml").write_text(yaml.safe_dump({**config, "owners": ["streaming-team"]}, sort_keys=False))
    master = tmp_path / "secrets" / "master.key"
    master.parent.mkdir()
    generate_signing_key(tmp_path / "secrets" / "signing.key")  # the owner's credential is made with it
    code, out = run(root, "owners", "add", "streaming-team", env={"PIITRACER_SIGNING_KEY_FILE": str(tmp_path / "secrets" / "signing.key")})
    assert code == 0, out
    (tmp_path / "secrets" / "owner.token").write_text(out.strip().splitlines()[-1])
    return root, master, lake


def owner_token(root: Path) -> str:
    """The streaming-team owner's token file (made by the fixture)."""
    return str(root.parent / "secrets" / "owner.token")


def run(root: Path, *args: str, master: Path | None = None, env: dict | None = None, input: str | None = None):
    # The session's master key (conftest) is removed: these tests say which master key each command has.
    environment = {"PIITRACER_AUDIT_KEY": AUDIT, "PIITRACER_MASTER_KEY": None,
                   **({"PIITRACER_MASTER_KEY_FILE": str(master)} if master else {}), **(env or {})}
    result = CliRunner(env=environment).invoke(cli, ["--workspace", str(root), *args], input=input)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


def board(root: Path) -> dict[str, dict]:
    code, out = run(root, "requests", "--output", "json")
    assert code == 0, out
    return {r["request_id"]: r for r in json.loads(out)}


def audit_states(root: Path, request_id: str) -> list[tuple[str | None, str]]:
    db = sqlite3.connect(root / ".piitracer" / "audit.sqlite")
    bodies = [json.loads(b) for (b,) in db.execute("SELECT body FROM entries WHERE kind = 'request' ORDER BY seq")]
    return [(b["from_state"], b["to_state"]) for b in bodies if b["request_id"] == request_id]


def bytes_of_every_file(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def test_a_request_walks_every_state_and_close_shreds_piitracers_copies(ws) -> None:
    root, master, lake = ws
    assert run(root, "requests", "keygen", str(master))[0] == 0
    assert master.stat().st_mode & 0o777 == 0o600
    code, out = run(root, "requests", "add", "--source", "crm.users.user_id", "--subject", str(SUBJECT),
                    "--request-id", "dsr-7", master=master)
    assert code == 0 and "queued dsr-7: 1 subject(s)" in out
    plan_file = root.parent / "plan.json"

    def refused_close(state: str) -> None:
        assert board(root)["dsr-7"]["state"] == state
        code, out = run(root, "requests", "close", "dsr-7", master=master)
        assert code == 2 and out.startswith("error: request dsr-7 is ") and "Traceback" not in out, out

    refused_close("queued")
    code, out = run(root, "plan", "--source", "crm.users.user_id", "--subject", str(SUBJECT), "--request-id", "dsr-7",
                    "-o", str(plan_file), master=master)
    assert code == 0, out
    assert str(SUBJECT) not in plan_file.read_text() and '"value": "enc:v1:' in plan_file.read_text()
    refused_close("planned")
    code, out = run(root, "execute", str(plan_file), "--no-concurrent-writers", master=master)
    assert code == 0 and "incomplete: 1 step(s) awaiting attestation" in out, out
    refused_close("executed")
    journal = root / ".piitracer" / "journal.sqlite"
    assert str(SUBJECT).encode() not in journal.read_bytes() and PAN.encode() not in journal.read_bytes()  # sealed

    code, out = run(root, "verify", str(plan_file), master=master)
    assert code == 1
    refused_close("awaiting_attestation")
    step = next(s["id"] for s in json.loads(plan_file.read_text())["steps"] if s["action"] == "manual")
    assert run(root, "attest", str(plan_file), "--step", step, "--token-file", owner_token(root), "--evidence", "INC-1",
               master=master)[0] == 0
    code, out = run(root, "verify", str(plan_file), master=master)
    assert code == 0, out
    refused_close("watching")  # the watching period (30 days by default) is not over
    assert "watched until" in run(root, "requests", "close", "dsr-7", master=master)[1]

    code, out = run(root, "requests", "close", "dsr-7", "--now", "the data subject asked us to confirm today",
                    master=master)
    assert code == 0 and "closed dsr-7: data key" in out
    request = board(root)["dsr-7"]
    assert request["state"] == "closed" and request["key_fingerprint"] and request["closed_at"]
    assert audit_states(root, "dsr-7") == [(None, "queued"), ("queued", "planned"), ("planned", "executing"),
                                           ("executing", "executed"), ("executed", "awaiting_attestation"),
                                           ("awaiting_attestation", "verified"), ("verified", "watching"),
                                           ("watching", "closed")]
    assert [s for _, s in audit_states(root, "dsr-7")] == STATES
    code, out = run(root, "requests", "close", "dsr-7", "--now", "again", master=master)
    assert code == 2 and "already closed" in out

    # After close: piitracer's own state holds nothing of the person; verify is refused; the trail verifies.
    state = bytes_of_every_file(root / ".piitracer")
    for form in (str(SUBJECT).encode(), PAN.encode()):
        assert form not in state
    db = sqlite3.connect(root / ".piitracer" / "requests.sqlite")
    assert db.execute("SELECT count(*) FROM data_keys").fetchone() == (0,)
    assert sqlite3.connect(journal).execute("SELECT count(*) FROM request_values").fetchone() == (0,)
    code, out = run(root, "verify", str(plan_file), master=master)
    assert code == 2 and "values shredded at close; the certificate is the proof" in out
    assert run(root, "audit", "verify")[0] == 0


def test_reverify_catches_a_resurrected_row_and_moves_the_request_back(ws) -> None:
    root, master, lake = ws
    run(root, "requests", "keygen", str(master))
    plan_file = root.parent / "plan.json"
    assert run(root, "plan", "--source", "crm.users.user_id", "--subject", str(SUBJECT), "--request-id", "dsr-8",
               "-o", str(plan_file), master=master)[0] == 0
    assert run(root, "execute", str(plan_file), "--no-concurrent-writers", master=master)[0] == 0
    step = next(s["id"] for s in json.loads(plan_file.read_text())["steps"] if s["action"] == "manual")
    run(root, "attest", str(plan_file), "--step", step, "--token-file", owner_token(root), master=master)
    assert run(root, "verify", str(plan_file), master=master)[0] == 0
    assert board(root)["dsr-8"]["state"] == "watching"
    code, out = run(root, "requests", "reverify", master=master)
    assert code == 0 and "dsr-8: still erased" in out

    # A late pipeline run writes the subject's card again.
    pq.write_table(pa.table({"pan": [PAN], "n": [1]}), lake / "cards" / "part-late.parquet")
    code, out = run(root, "requests", "reverify", master=master)
    assert code == 1 and "dsr-8: subject data found again: back to executed" in out
    request = board(root)["dsr-8"]
    assert request["state"] == "executed" and request["last_action"] == "re-verified: subject data again"


def test_a_lost_or_wrong_master_key_is_one_line_and_changes_nothing(ws, tmp_path: Path) -> None:
    root, master, lake = ws
    run(root, "requests", "keygen", str(master))
    plan_file = root.parent / "plan.json"
    assert run(root, "plan", "--source", "crm.users.user_id", "--subject", str(SUBJECT), "--request-id", "dsr-9",
               "-o", str(plan_file), master=master)[0] == 0
    before = {p: p.read_bytes() for p in sorted((root / ".piitracer").rglob("*")) if p.is_file()} | {plan_file: plan_file.read_bytes()}
    wrong = tmp_path / "wrong.key"
    run(root, "requests", "keygen", str(wrong))
    for args, extra in ((["execute", str(plan_file)], {}), (["execute", str(plan_file)], {"master": wrong}),
                        (["verify", str(plan_file)], {"master": wrong}),
                        (["attest", str(plan_file), "--step", "s001", "--token-file", owner_token(root)], {"master": wrong}),
                        (["plan", "--source", "crm.users.user_id", "--subject", "1", "-o", str(tmp_path / "p.json")], {})):
        code, out = run(root, *args, **extra)
        assert code == 2 and len(out.strip().splitlines()) == 1 and "--master-key-file" in out, (args, out)
        assert str(SUBJECT) not in out
    after = {p: p.read_bytes() for p in sorted((root / ".piitracer").rglob("*")) if p.is_file()} | {plan_file: plan_file.read_bytes()}
    assert after == before
    assert not (root / ".piitracer" / "journal.sqlite").exists()


def test_requests_from_a_file_and_from_stdin_are_checked_like_plan(ws, tmp_path: Path) -> None:
    root, master, lake = ws
    run(root, "requests", "keygen", str(master))
    batch = tmp_path / "batch.jsonl"
    batch.write_text('{"value": "7000000001", "request_id": "a", "received_at": "2026-10-01T00:00:00Z"}\n'
                     '{"value": "8000000001", "request_id": "b", "received_at": "2026-11-10T00:00:00Z"}\n'
                     '{"value": "8000000002", "request_id": "b", "received_at": "2026-11-10T00:00:00Z"}\n')
    code, out = run(root, "requests", "add", "--source", "crm.users.user_id", "--requests", str(batch), master=master)
    assert code == 0 and "queued a: 1 subject(s), deadline 2026-10-31" in out and "queued b: 2 subject(s)" in out
    code, out = run(root, "requests", "add", "--source", "crm.users.user_id", "--requests", "-", master=master,
                    input='{"value": "4242.9", "request_id": "c"}\n')
    assert code == 2 and "<stdin>:1: the value is not an exact bigint" in out and "4242.9" not in out
    assert set(board(root)) == {"a", "b"}
    code, out = run(root, "requests", "--overdue")
    assert code == 0 and "│ a " in out and "OVERDUE" in out
