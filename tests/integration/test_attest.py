"""Manual work is closed by attestation, never assumed done.

Before: ``execute`` said "complete" and ``verify`` exited 0 while ``manual`` (a Kafka topic),
``manual_review`` (a masked token table) and ``recompute`` (an aggregate) steps were open. Now
execute ends ``incomplete: 3 step(s) awaiting attestation`` listing them, verify exits 1 while any
is open, ``piitracer attest`` records who confirmed each step — an owner proven by their own token,
whose key signs the attestation (issue 50) — when, and the SHA-256 of the evidence in the audit log,
and verify exits 0 once every one is attested."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner
from spark_lakehouse import write_workspace, record_made_plan

import piitracer
from piitracer.api import plan_deletion, seal_plan, write_private
from piitracer.audit import load_audit_key
from piitracer.cli.main import cli
from piitracer.crypto.signing import generate_signing_key
from piitracer.model.plan import Subject

KEY = "attest-test-audit-key-0123456789"
SUBJECT = 7_000_000_001


@pytest.fixture()
def planned(tmp_path: Path, warehouse: Path):
    root = tmp_path / "lake"
    (root / "users").mkdir(parents=True)
    ids = [SUBJECT] + [8_000_000_000 + i for i in range(100)]
    pq.write_table(pa.table({"user_id": pa.array(ids, pa.int64()), "salt": ["s"] * len(ids),
                             "dt": ["2026-11-01"] * len(ids)}), root / "users" / "part-0.parquet")
    for name in ("tokens", "daily"):
        (root / name).mkdir()
    catalog = {
        "crm.users": {"format": "parquet", "location": str(root / "users"), "columns": ["user_id", "salt", "dt"],
                      "identifiers": ["user_id"], "subject_key": "user_id"},
        "ml.tokens": {"format": "parquet", "location": str(root / "tokens"), "columns": ["token"]},
        "an.daily": {"format": "parquet", "location": str(root / "daily"), "columns": ["dt", "users"]},
        "stream.cdc": {"format": "external", "owner": "streaming-team", "columns": ["user_id"]},
    }
    sql = ("INSERT INTO ml.tokens SELECT sha2(concat(CAST(user_id AS STRING), salt), 256) AS token FROM crm.users;\n"
           "INSERT INTO an.daily SELECT dt, count(user_id) AS users FROM crm.users GROUP BY dt;\n"
           "INSERT INTO stream.cdc SELECT user_id FROM crm.users;\n")
    folder = write_workspace(tmp_path / "ws", warehouse, catalog, sql)
    config = yaml.safe_load((folder / "piitracer.yaml").read_text())
    config["owners"] = ["streaming-team", "data-eng"]
    (folder / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    ws = piitracer.load_workspace(folder)
    plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), ["crm.users.user_id"],
                         [Subject(value=str(SUBJECT), request_id="r1", received_at="2026-11-20T09:00:00Z")])
    plan = seal_plan(plan, load_audit_key(KEY))
    write_private(tmp_path / "plan.json", plan.to_json())
    record_made_plan(ws, plan, KEY)
    generate_signing_key(tmp_path / "signing.key")
    for name in ("streaming-team", "data-eng"):  # each owner's credential, as `owners add` makes it
        code, out = cli_run(ws, "owners", "add", name, "--signing-key-file", str(tmp_path / "signing.key"))
        assert code == 0, out
        (tmp_path / f"{name}.token").write_text(out.strip().splitlines()[-1])
    person = {s.dataset: s.id for s in plan.steps if s.action.value in ("manual", "manual_review", "recompute")}
    assert {s.dataset: s.action.value for s in plan.steps if s.id in person.values()} == {
        "ml.tokens": "manual_review", "an.daily": "recompute", "stream.cdc": "manual"}
    return ws, plan, tmp_path / "plan.json", person


def cli_run(ws, *args: str, key: str = KEY) -> tuple[int, str]:
    result = CliRunner(env={"PIITRACER_AUDIT_KEY": key, "PIITRACER_TOKEN": None}).invoke(
        cli, ["--workspace", str(ws.root), *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


def states(output: str) -> dict[str, str]:
    rows = [[c.strip() for c in line.strip("│").split("│")] for line in output.splitlines() if line.startswith("│")]
    return {row[0]: row[1] for row in rows if len(row) > 2 and row[0]}


def test_person_steps_keep_the_erasure_open_until_attested(planned, tmp_path: Path) -> None:
    ws, plan, plan_file, person = planned
    code, out = cli_run(ws, "execute", str(plan_file), "--no-concurrent-writers")
    assert code == 0
    assert "incomplete: 3 step(s) awaiting attestation" in out and "complete: every step" not in out
    assert f"  {person['stream.cdc']} manual stream.cdc (owner streaming-team): awaiting_attestation" in out

    code, out = cli_run(ws, "verify", str(plan_file))
    assert code == 1
    assert states(out) == {"crm.users": "erased", "ml.tokens": "awaiting attestation", "an.daily": "awaiting attestation",
                           "stream.cdc": "awaiting attestation"}

    ticket = tmp_path / "ticket.txt"
    ticket.write_text("CDC topic compacted, tombstones written; see INC-2291\n")
    code, out = cli_run(ws, "attest", str(plan_file), "--step", person["stream.cdc"], "--by", "streaming-team",
                        "--token-file", str(tmp_path / "streaming-team.token"), "--evidence", str(ticket))
    assert code == 0 and f"attested {person['stream.cdc']} manual stream.cdc by streaming-team" in out
    assert hashlib.sha256(ticket.read_bytes()).hexdigest() in out
    code, out = cli_run(ws, "verify", str(plan_file))
    assert code == 1 and states(out)["stream.cdc"] == "attested" and states(out)["ml.tokens"] == "awaiting attestation"

    for dataset in ("ml.tokens", "an.daily"):
        code, out = cli_run(ws, "attest", str(plan_file), "--step", person[dataset], "--token-file",
                            str(tmp_path / "data-eng.token"), "--evidence", "rebuilt from the erased source", "--output", "json")
        assert code == 0 and json.loads(out)["evidence_kind"] == "text"
    code, out = cli_run(ws, "verify", str(plan_file))
    assert code == 0, out
    assert set(states(out).values()) == {"erased", "attested"}

    db = sqlite3.connect(ws.root / ".piitracer" / "audit.sqlite")
    bodies = [json.loads(b) for (b,) in db.execute("SELECT body FROM entries WHERE kind = 'attestation' ORDER BY seq")]
    assert [(b["step_id"], b["attested_by"], b["evidence_kind"]) for b in bodies] == [
        (person["stream.cdc"], "streaming-team", "file"), (person["ml.tokens"], "data-eng", "text"),
        (person["an.daily"], "data-eng", "text")]
    assert bodies[0]["evidence_sha256"] == hashlib.sha256(ticket.read_bytes()).hexdigest()
    assert "INC-2291" not in (ws.root / ".piitracer" / "audit.sqlite").read_bytes().decode("latin-1")  # never the content
    code, out = cli_run(ws, "audit", "verify")
    assert code == 0

    # A re-execution now sees the attestations: the run is complete.
    code, out = cli_run(ws, "execute", str(plan_file), "--rerun", "--no-concurrent-writers")
    assert code == 0 and "complete: every step committed or attested" in out


def test_bad_attestations_are_one_clear_line(planned, tmp_path: Path) -> None:
    ws, plan, plan_file, person = planned
    delete = next(s.id for s in plan.steps if s.action.value == "rewrite_files")
    owner = ["--token-file", str(tmp_path / "streaming-team.token")]
    for args, message in (
        (["--step", "s999", *owner], "--step s999: no such step in plan"),
        (["--step", delete, *owner], f"--step {delete}: rewrite_files on crm.users is a step piitracer performs"),
        (["--step", person["an.daily"], *owner, "--evidence", str(tmp_path)], "cannot read the evidence file"),
        # A name is no identity: any name, listed or not, without its owner's token.
        (["--step", person["an.daily"], "--by", "x"], "--by x: a name proves nothing"),
        (["--step", person["stream.cdc"], "--by", "streaming-team"], "--by streaming-team: a name proves nothing"),
        (["--step", person["stream.cdc"], "--by", "streaming-team", "--token-file", str(tmp_path / "data-eng.token")],
         "the token given is data-eng's, not streaming-team's"),
        (["--step", person["stream.cdc"], "--token-file", str(tmp_path / "data-eng.token")],
         "stream.cdc belongs to streaming-team, not data-eng"),
        (["--step", person["an.daily"]], "nobody proved who attests"),
    ):
        code, out = cli_run(ws, "attest", str(plan_file), *args)
        assert code == 2 and out.startswith("error: ") and message in out and len(out.strip().splitlines()) == 1, out
    code, out = cli_run(ws, "attest", str(plan_file), "--step", person["an.daily"], *owner,
                        key="another-audit-key-0123456789")
    assert code == 2 and "was sealed with another audit key" in out
    db = sqlite3.connect(ws.root / ".piitracer" / "audit.sqlite")
    assert db.execute("SELECT COUNT(*) FROM entries WHERE kind = 'attestation'").fetchone() == (0,)  # none recorded
