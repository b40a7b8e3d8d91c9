"""The audit log: what it stores, that it never stores a subject value, and that `verify` (and
`piitracer audit verify`) catch an altered field, a deleted entry, reordered entries, a rewritten
hash, a cut-off tail and a forged Merkle root, naming the first bad entry."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from audit_builders import KEY, RAW_VALUES, copy_workspace, record_all
from piitracer.api import audit_log, record_run
from piitracer.audit import AuditError, AuditKeyError, load_audit_key
from piitracer.audit.hashing import entry_hash, merkle_root
from piitracer.cli.main import cli
from piitracer.model.audit import EntryKind
from piitracer.model.steps import StepRecord


@pytest.fixture()
def recorded(tmp_path: Path):
    trail = record_all(tmp_path)
    yield trail
    trail.log.close()


def tamper(db: Path, *statements: str, params: tuple = (), cover_tracks: bool = True) -> None:
    """Edit the database as an attacker would: drop the append-only triggers, change rows, then
    (``cover_tracks``) put the triggers back as they were."""
    connection = sqlite3.connect(db)
    triggers = connection.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger'").fetchall()
    connection.execute("DROP TRIGGER IF EXISTS entries_no_update")
    connection.execute("DROP TRIGGER IF EXISTS entries_no_delete")
    for statement in statements:
        connection.execute(statement, params if "?" in statement else ())
    if cover_tracks:
        for (sql,) in triggers:
            connection.execute(sql)
    connection.commit()
    connection.close()


WIPE = ("DELETE FROM entries", "DELETE FROM meta WHERE name IN ('head', 'head_seal')", "DELETE FROM request_roots")


def cli_verify(workspace: Path, env: dict[str, str | None] | None = None, *extra: str):
    environment = {"PIITRACER_AUDIT_KEY": KEY, "PIITRACER_AUDIT_KEY_FILE": None}
    environment.update(env or {})
    result = CliRunner().invoke(cli, ["--workspace", str(workspace), "audit", *extra, "verify"], env=environment)
    return result.exit_code, result.stdout, result.stderr


def step_seq(trail, step_id: str) -> int:
    return next(e.seq for e in trail.log.entries() if e.kind is EntryKind.STEP and e.body["step_id"] == step_id)


# ---- what is stored ------------------------------------------------------------------------


def test_intact_log_verifies_and_cli_exits_zero(recorded) -> None:
    entries = recorded.log.entries()
    assert [e.kind for e in entries] == ([EntryKind.WORKSPACE, EntryKind.PLAN] + [EntryKind.STEP] * len(recorded.plan.steps)
                                         + [EntryKind.VERIFICATION])  # the first binds the log to its workspace
    assert [e.seq for e in entries] == list(range(1, len(entries) + 1))
    assert all(e.prev_hash == p.entry_hash for p, e in zip(entries, entries[1:]))
    result = recorded.log.verify()
    assert result.ok and result.problem is None and result.entries == len(entries)
    assert result.head_hash == entries[-1].entry_hash
    code, out, _ = cli_verify(recorded.workspace.root)
    assert code == 0 and f"{len(entries)} entries" in out and entries[-1].entry_hash in out


def test_plan_entry_holds_decisions_and_requests(recorded) -> None:
    plan_entry = recorded.log.entries()[1]  # after the workspace entry
    body = plan_entry.body
    assert plan_entry.plan_id == body["plan_id"] == recorded.plan.plan_id
    assert body["deadline_at"] == recorded.plan.deadline_at.isoformat()
    assert [r["request_id"] for r in body["requests"]] == ["dsr-1", "dsr-2"]
    decisions = {d["dataset"]: d for d in body["datasets"]}
    assert set(decisions) == {d.dataset for d in recorded.plan.datasets}
    assert decisions["analytics.customer_txn"]["key_column"] == "cust"
    assert decisions["ml.payment_features"]["status"] == "manual_review"
    assert decisions["ml.payment_features"]["reason"]
    assert all(d["rule"] for d in decisions.values())


def test_step_entries_carry_versions_counts_times_and_metadata_hashes(recorded) -> None:
    steps = {e.body["step_id"]: e.body for e in recorded.log.entries() if e.kind is EntryKind.STEP}
    delete = steps["s002"]  # prod.payments delete_rows
    assert (delete["dataset"], delete["action"], delete["state"]) == ("prod.payments", "delete_rows", "committed")
    assert (delete["version_before"], delete["version_after"], delete["rows_deleted"]) == ("5001", "6001", 2)
    assert delete["run_id"] == "run-0001" and delete["plan_id"] == recorded.plan.plan_id
    # The newest Iceberg metadata file is v10 (numerically, not v2 by name order).
    newest = recorded.workspace.location_of("prod.payments") / "metadata" / "v10.metadata.json"
    assert delete["metadata_file"] == "metadata/v10.metadata.json"
    assert delete["metadata_hash"] == hashlib.sha256(newest.read_bytes()).hexdigest()
    delta = next(s for s in steps.values() if s["dataset"] == "analytics.customer_txn")
    last_commit = recorded.workspace.location_of("analytics.customer_txn") / "_delta_log" / f"{1:020d}.json"
    assert delta["metadata_hash"] == hashlib.sha256(last_commit.read_bytes()).hexdigest()
    manual = next(s for s in steps.values() if s["action"] == "manual")
    assert manual["state"] == "pending" and manual["metadata_hash"] is None


def test_verification_entry_names_files_not_values(recorded) -> None:
    body = recorded.log.entries()[-1].body
    found = next(d for d in body["datasets"] if d["dataset"] == "risk.card_usage")
    assert found["state"] == "found" and found["findings_count"] == 1 and found["files_scanned"] == 3
    assert found["findings"] == [{"file": "part-00000.parquet", "where": "column pan", "value_set": "prod.payments.pan", "kind": "data"}]


def test_every_entry_carries_the_hmac_of_each_subject(recorded) -> None:
    key = load_audit_key(KEY)
    expected = sorted([("dsr-1", key.subject_hmac(RAW_VALUES[0])), ("dsr-1", key.subject_hmac(RAW_VALUES[1])),
                       ("dsr-2", key.subject_hmac(RAW_VALUES[2]))])
    for entry in recorded.log.entries()[1:]:  # the workspace entry names no subject
        assert sorted((s.request_id, s.hmac) for s in entry.subjects) == expected
        assert entry.request_ids == ("dsr-1", "dsr-2")


def test_no_raw_subject_value_in_the_database_bytes(recorded) -> None:
    recorded.log.close()
    folder = recorded.db.parent
    files = [p for p in folder.iterdir() if p.name.startswith("audit.sqlite")]
    data = b"".join(p.read_bytes() for p in files)
    assert len(data) > 10_000  # the log is really there
    for value in RAW_VALUES:
        for encoding in ("utf-8", "utf-16-le"):
            assert value.encode(encoding) not in data, f"raw subject value stored ({encoding})"
    assert load_audit_key(KEY).subject_hmac(RAW_VALUES[0]).encode() in data


def test_log_file_and_folder_are_private(recorded) -> None:
    assert stat.S_IMODE(recorded.db.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(recorded.db.stat().st_mode) == 0o600


def test_sqlite_refuses_updates_and_deletes(recorded) -> None:
    connection = sqlite3.connect(recorded.db)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        connection.execute("UPDATE entries SET kind = 'plan' WHERE seq = 2")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        connection.execute("DELETE FROM entries WHERE seq = 2")
    connection.close()


def test_recording_a_run_again_adds_nothing_and_journal_steps_are_accepted(recorded) -> None:
    before = len(recorded.log.entries())
    assert record_run(recorded.log, recorded.plan, recorded.summary, recorded.workspace) == []
    # The journal's form (Journal.records): a pending step later committed adds one entry.
    journal_steps = [StepRecord(step_id="s057", order=57, dataset="stream.payments_cdc", action="manual",
                                state="committed", started_at="2026-01-08T10:00:00.000+00:00",
                                finished_at="2026-01-08T11:00:00.000+00:00", run_id="run-0002")]
    added = record_run(recorded.log, recorded.plan, journal_steps, recorded.workspace)
    assert [(e.seq, e.body["state"], e.body["finished_at"]) for e in added] == [(before + 1, "committed", "2026-01-08T11:00:00.000+00:00")]
    assert recorded.log.verify().ok


def test_merkle_root_per_request(recorded) -> None:
    hashes = [e.entry_hash for e in recorded.log.entries(request_id="dsr-1")]
    assert recorded.log.request_root("dsr-1") == merkle_root(hashes)
    assert recorded.log.stored_roots()["dsr-1"] == (merkle_root(hashes), len(hashes))
    # RFC 6962 shape for three leaves: ((l1, l2), l3).
    leaf = [hashlib.sha256(b"\x00" + h.encode()).digest() for h in ("a" * 64, "b" * 64, "c" * 64)]
    node = lambda left, right: hashlib.sha256(b"\x01" + left + right).digest()  # noqa: E731
    assert merkle_root(["a" * 64, "b" * 64, "c" * 64]) == node(node(leaf[0], leaf[1]), leaf[2]).hex()
    assert merkle_root(["a" * 64, "b" * 64]) != merkle_root(["b" * 64, "a" * 64])


# ---- tampering -----------------------------------------------------------------------------


def test_altered_field_is_caught_and_named(recorded) -> None:
    seq = step_seq(recorded, "s002")
    tamper(recorded.db, f"UPDATE entries SET body = json_set(body, '$.rows_deleted', 0) WHERE seq = {seq}")
    result = recorded.log.verify()
    assert not result.ok and result.problem.seq == seq
    assert "altered" in result.problem.what
    code, _, err = cli_verify(recorded.workspace.root)
    assert code == 1 and f"entry {seq}:" in err and "altered" in err


def test_altered_column_outside_the_body_is_caught(recorded) -> None:
    tamper(recorded.db, "UPDATE entries SET recorded_at = '2025-01-01T00:00:00.000+00:00' WHERE seq = 5")
    result = recorded.log.verify()
    assert not result.ok and result.problem.seq == 5


def test_deleted_entry_is_caught_and_named(recorded) -> None:
    tamper(recorded.db, "DELETE FROM entries WHERE seq = 4")
    result = recorded.log.verify()
    assert not result.ok and result.problem.seq == 5 and "entry 4 deleted" in result.problem.what
    code, _, err = cli_verify(recorded.workspace.root)
    assert code == 1 and "entry 5:" in err and "entry 4 deleted" in err


def test_deleted_last_entry_is_caught(recorded) -> None:
    last = len(recorded.log.entries())
    tamper(recorded.db, f"DELETE FROM entries WHERE seq = {last}")
    result = recorded.log.verify()
    assert not result.ok and f"names entry {last}" in result.problem.what and f"ends at entry {last - 1}" in result.problem.what
    assert cli_verify(recorded.workspace.root)[0] == 1


def test_reordered_entries_are_caught_and_named(recorded) -> None:
    # Swap entries 6 and 7 by their sequence numbers.
    tamper(recorded.db, "UPDATE entries SET seq = -1 WHERE seq = 6", "UPDATE entries SET seq = 6 WHERE seq = 7",
           "UPDATE entries SET seq = 7 WHERE seq = -1")
    result = recorded.log.verify()
    assert not result.ok and result.problem.seq == 6
    code, _, err = cli_verify(recorded.workspace.root)
    assert code == 1 and "entry 6:" in err


def test_rehashed_entry_without_the_key_is_caught_by_its_seal(recorded) -> None:
    # An attacker alters the last entry and recomputes its hash and the head: only the seal (an HMAC
    # under the audit key) can no longer be made to match.
    last = recorded.log.entries()[-1]
    fields = last.hashed_fields()
    fields["body"]["all_erased"] = True
    forged = entry_hash(fields)
    tamper(recorded.db, "UPDATE entries SET body = ?, entry_hash = ? WHERE seq = ?",
           params=(json.dumps(fields["body"], sort_keys=True, separators=(",", ":")), forged, last.seq))
    tamper(recorded.db, "UPDATE meta SET value = ? WHERE name = 'head'", params=(f"{last.seq}:{forged}",))
    result = recorded.log.verify()
    assert not result.ok and result.problem.seq == last.seq and "seal" in result.problem.what


def test_forged_merkle_root_is_caught(recorded) -> None:
    tamper(recorded.db, "UPDATE request_roots SET merkle_root = ? WHERE request_id = 'dsr-2'", params=("0" * 64,))
    result = recorded.log.verify()
    assert not result.ok and "request dsr-2" in result.problem.what and "Merkle root" in result.problem.what
    assert cli_verify(recorded.workspace.root)[0] == 1


# ---- the key -------------------------------------------------------------------------------


def test_missing_key_is_a_clear_error_and_exit_2(recorded, monkeypatch) -> None:
    monkeypatch.delenv("PIITRACER_AUDIT_KEY", raising=False)
    monkeypatch.delenv("PIITRACER_AUDIT_KEY_FILE", raising=False)
    with pytest.raises(AuditKeyError, match="no audit key.*PIITRACER_AUDIT_KEY"):
        audit_log(recorded.workspace)
    code, out, err = cli_verify(recorded.workspace.root, {"PIITRACER_AUDIT_KEY": None})
    assert code == 2 and "no audit key" in err and "Traceback" not in out + err


def test_key_from_file_env_file_and_refusals(recorded, tmp_path: Path) -> None:
    key_file = tmp_path / "audit.key"
    key_file.write_text(KEY + "\n")
    key_file.chmod(0o600)  # a key file others may read is refused (tests/unit/cli/test_key_files.py)
    assert load_audit_key(key_file=key_file, environ={}).secret == KEY.encode()
    assert load_audit_key(environ={"PIITRACER_AUDIT_KEY_FILE": str(key_file)}).secret == KEY.encode()
    assert load_audit_key(environ={"PIITRACER_AUDIT_KEY": KEY}).secret == KEY.encode()
    assert KEY not in repr(load_audit_key(KEY))
    with pytest.raises(AuditKeyError, match="at least 16"):
        load_audit_key("short", environ={})
    with pytest.raises(AuditKeyError, match="cannot read"):
        load_audit_key(key_file=tmp_path / "missing.key", environ={})
    assert cli_verify(recorded.workspace.root, {"PIITRACER_AUDIT_KEY": None}, "--audit-key-file", str(key_file))[0] == 0


def test_wrong_key_is_an_error_not_a_tampering_verdict(recorded) -> None:
    with pytest.raises(AuditError, match="not the key this log was written with"):
        audit_log(recorded.workspace, key="another-key-0123456789abcdef")
    code, _, err = cli_verify(recorded.workspace.root, {"PIITRACER_AUDIT_KEY": "another-key-0123456789abcdef"})
    assert code == 2 and "not the key" in err


def test_verify_without_a_log_is_exit_2(tmp_path: Path) -> None:
    workspace = copy_workspace(tmp_path)
    code, _, err = cli_verify(workspace.root)
    assert code == 2 and "no audit log" in err
    assert not (workspace.root / ".piitracer" / "audit.sqlite").exists()


def test_plan_is_recorded_once(recorded) -> None:
    from piitracer.api import record_plan

    before = len(recorded.log.entries())
    assert record_plan(recorded.log, recorded.plan).seq == 2  # after the workspace entry
    assert len(recorded.log.entries()) == before


# ---- a log wiped whole (issue 13: "intact: 0 entries", exit 0) -------------------------------

def test_a_wipe_that_drops_the_triggers_is_caught_by_the_logs_structure(recorded) -> None:
    tamper(recorded.db, *WIPE, cover_tracks=False)
    code, _, err = cli_verify(recorded.workspace.root)
    assert code == 1 and "TAMPERED" in err and "append-only trigger entries_no_delete" in err
    # and nothing is appended to a damaged log (a later run would otherwise re-create the triggers)
    with pytest.raises(AuditError, match="damaged"):
        audit_log(recorded.workspace, key=KEY).append(EntryKind.PLAN, "p", [], {})


def test_a_covered_wipe_is_caught_by_the_journal(recorded) -> None:
    from piitracer.executor.journal import Journal

    journal = Journal(recorded.workspace.root / ".piitracer" / "journal.sqlite")  # the run the log recorded
    journal.start_run("run-0001", recorded.plan.plan_id, {})
    journal.close()
    assert cli_verify(recorded.workspace.root)[0] == 0
    tamper(recorded.db, *WIPE)
    code, out, err = cli_verify(recorded.workspace.root)
    assert code == 1 and "journal records 1 executed plan(s) with no audit entry" in err, out


def test_a_covered_wipe_of_log_and_journal_is_caught_by_the_anchor(tmp_path: Path) -> None:
    anchor = tmp_path / "locked" / "audit-anchor.json"
    trail = record_all(tmp_path, anchor=anchor)
    entries, head = len(trail.log.entries()), trail.log.head()[1]
    trail.log.close()
    document = json.loads(anchor.read_text())
    assert document["seq"] == entries and document["entry_hash"] == head
    code, out, _ = cli_verify(trail.workspace.root)
    assert code == 0 and f"anchor at entry {entries} matches" in out
    tamper(trail.db, *WIPE)
    code, _, err = cli_verify(trail.workspace.root)
    assert code == 1 and f"the anchor names entry {entries}" in err and "ends at entry 0" in err


def test_an_edited_or_deleted_anchor_is_caught(tmp_path: Path) -> None:
    anchor = tmp_path / "locked" / "audit-anchor.json"
    trail = record_all(tmp_path, anchor=anchor)
    trail.log.close()
    document = json.loads(anchor.read_text())
    anchor.write_text(json.dumps({**document, "seq": 1}))  # point it at an earlier entry, without the key
    code, _, err = cli_verify(trail.workspace.root)
    assert code == 1 and "rewritten without the audit key" in err
    anchor.unlink()
    code, _, err = cli_verify(trail.workspace.root)
    assert code == 1 and "anchor" in err and "is missing but the log has" in err


def test_an_anchor_inside_the_workspace_is_refused(tmp_path: Path) -> None:
    trail_root = copy_workspace(tmp_path, anchor=tmp_path / "ws" / "anchor.json").root
    code, _, err = cli_verify(trail_root)
    assert code == 2 and "audit.anchor" in err and "inside the workspace" in err


def test_expect_head_catches_a_covered_wipe(recorded) -> None:
    head = recorded.log.head()[1]
    result = CliRunner().invoke(cli, ["--workspace", str(recorded.workspace.root), "audit", "verify", "--expect-head",
                                      head[:20]], env={"PIITRACER_AUDIT_KEY": KEY, "PIITRACER_AUDIT_KEY_FILE": None})
    assert result.exit_code == 0 and "expected head is entry" in result.stdout
    tamper(recorded.db, *WIPE)
    result = CliRunner().invoke(cli, ["--workspace", str(recorded.workspace.root), "audit", "verify", "--expect-head",
                                      head], env={"PIITRACER_AUDIT_KEY": KEY, "PIITRACER_AUDIT_KEY_FILE": None})
    assert result.exit_code == 1 and "is not an entry of this log" in result.stderr
    result = CliRunner().invoke(cli, ["--workspace", str(recorded.workspace.root), "audit", "verify", "--expect-head",
                                      "abc"], env={"PIITRACER_AUDIT_KEY": KEY, "PIITRACER_AUDIT_KEY_FILE": None})
    assert result.exit_code == 2 and "--expect-head" in result.stderr


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_malformed_log_file_is_exit_2_cannot_read(recorded, damage: str) -> None:
    recorded.log.close()
    data = recorded.db.read_bytes()
    recorded.db.write_bytes(b"not a database at all " * 200 if damage == "garbage" else data[: len(data) // 3])
    code, _, err = cli_verify(recorded.workspace.root)
    assert code == 2 and "cannot read audit log" in err and "Traceback" not in err


def test_a_step_entry_is_the_journals_step_record_whole(recorded) -> None:
    """One shape from the journal to the audit log (issue 15): every field of StepRecord, nothing else."""
    steps = [e for e in recorded.log.entries() if e.kind is EntryKind.STEP]
    assert steps and all(set(e.body) == {"plan_id"} | set(StepRecord.model_fields) for e in steps)


def test_an_anchor_on_table_files_or_over_a_foreign_file_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    """The anchor is replaced at every append: a mistyped path must never overwrite a table's file
    (inside a catalogued location, outside the workspace) or any file that is not an anchor."""
    lake = tmp_path / "lake" / "merchants"
    lake.mkdir(parents=True)
    data_file = lake / "part-0.parquet"
    data_file.write_bytes(b"PAR1 table bytes PAR1")
    notes = tmp_path / "elsewhere" / "notes.txt"
    notes.parent.mkdir()
    notes.write_text("someone's file\n")
    for anchor, expected in ((data_file, "inside dataset prod.merchants's location"),
                             (notes, "not a piitracer audit anchor")):
        root = tmp_path / f"case-{anchor.name}"
        workspace = copy_workspace(root, anchor=anchor)
        config = workspace.root / "catalog.discovered.yaml"  # where the demo's table locations are said
        config.write_text(config.read_text().replace("location: warehouse/prod/merchants", f"location: {lake}"))
        before = anchor.read_bytes()
        code, _, err = cli_verify(workspace.root)
        assert code == 2 and expected in err, err
        from piitracer.api import load_workspace

        with pytest.raises(AuditError, match="audit.anchor"):
            audit_log(load_workspace(workspace.root), key=KEY)
        assert anchor.read_bytes() == before and not Path(str(anchor) + ".tmp").exists()
        assert not (workspace.root / ".piitracer" / "audit.sqlite").exists()
