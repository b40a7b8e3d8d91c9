"""Erased people stay erased (issue 52), on a plain-Parquet lakehouse (no Spark): closing a request
keeps a keyed record of each identifier it erased (never the value, never an unkeyed hash); a
restored file brings the person back and ``guard scan`` finds them, opens a new request linked to
the earlier one (recorded in the audit log, on the board, its value read from where it was found
and sealed), which plans, executes and verifies as any request; a neighbouring id and a phone with
the same last four digits are not flagged; a second scan with nothing new reads nothing; a
request forgotten is no longer noticed; policy ``suppression: off`` keeps nothing."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner
from people_keys import AUDIT_KEY, workspace_keys

import piitracer
from piitracer.api import open as open_session
from piitracer.cli.main import cli
from piitracer.executor.runner import ExecuteOptions
from piitracer.model.audit import EntryKind
from piitracer.model.plan import Subject
from piitracer.model.requests import RequestState

PERSON = {"user_id": 7_000_000_001, "pan": "ABCPE1234F", "phone": "+919812345678"}
DECOY = {"user_id": 7_000_000_002, "pan": "ZZZPZ9999Z", "phone": "+919800005678"}  # neighbour id, same last four
OTHERS = [{"user_id": 7_000_000_100 + n, "pan": f"QQQPQ{n:04d}Q", "phone": f"+9198000{n:05d}"} for n in range(50)]


def write_users(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"user_id": pa.array([r["user_id"] for r in rows], pa.int64()),
                             "pan": [r["pan"] for r in rows], "phone": [r["phone"] for r in rows]}), path)


def write_cards(path: Path, rows: list[dict]) -> None:
    """A table of card numbers only (the PAN): no user id in it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"pan": [r["pan"] for r in rows]}), path)


def lake(root: Path, suppression: str = "keep") -> piitracer.Workspace:
    write_users(root / "users" / "part-0.parquet", [PERSON, *OTHERS])
    write_users(root / "contacts" / "part-0.parquet", [DECOY, *OTHERS[:5]])
    write_cards(root / "cards" / "part-0.parquet", [PERSON, *OTHERS[:20]])
    (root / "sql").mkdir(parents=True, exist_ok=True)
    (root / "sql" / "p.sql").write_text("INSERT INTO crm.contacts SELECT user_id, pan, phone FROM crm.users;\n"
                                        "INSERT INTO crm.cards SELECT pan FROM crm.users;\n")
    (root / "piitracer.yaml").write_text(yaml.safe_dump({
        "lineage": {"sql": [{"path": "sql"}]}, "warehouse_roots": ["users", "contacts", "cards"],
        "policy": {"suppression": suppression},
        "catalog": {"crm.users": {"format": "parquet", "location": "users", "columns": ["user_id", "pan", "phone"],
                                  "identifiers": ["user_id", "pan", "phone"], "subject_key": "user_id",
                                  "column_types": {"user_id": "bigint"}},
                    "crm.contacts": {"format": "parquet", "location": "contacts", "columns": ["user_id", "pan", "phone"]},
                    "crm.cards": {"format": "parquet", "location": "cards", "columns": ["pan"]}}}))
    return piitracer.load_workspace(root)


def erase(workspace, keys, subjects: list[Subject] | None = None) -> None:
    """Plan (from the queued requests when ``subjects`` is None), execute, verify, close at once."""
    with open_session(workspace, keys) as session:
        if subjects is None:
            path = workspace.root / "batch-plan.json"
            path.write_text(session.batch_window(None).text)
            plan = path
        else:
            plan = session.plan(["crm.users.user_id"], subjects, keep=True).plan
        run = session.execute(plan, ExecuteOptions(no_concurrent_writers=True))
        assert run.status == "complete", [(r.step.id, r.state, r.message) for r in run.results]
        report = session.verify(plan).report
        assert report.complete, [(d.dataset, d.state.value) for d in report.open_items()]
        for request_id in sorted({r.request_id for r in session.board(None, False) if r.state is RequestState.WATCHING}):
            session.close(request_id, now_reason="test: at once")


def rows_of(folder: Path) -> list[tuple]:
    found = []
    for path in sorted(folder.rglob("*.parquet")):
        found += [tuple(r.values()) for r in pq.read_table(path).to_pylist()]
    return sorted(found)


def forms(person: dict) -> list[bytes]:
    """The person's values as text, as the unkeyed hashes a dictionary attack would reverse, and a
    whole number's own 8 bytes (the unkeyed form of a number)."""
    texts = [str(v) for v in person.values()]
    found = [t.encode() for t in texts]
    found += [v.to_bytes(8, order, signed=True) for v in person.values() if isinstance(v, int) for order in ("little", "big")]
    for text in texts:
        for algorithm in ("sha256", "sha1", "md5"):
            digest = hashlib.new(algorithm, text.encode())
            found += [digest.digest(), digest.hexdigest().encode()]
    return found


@pytest.fixture
def erased(tmp_path: Path):
    """The lake with PERSON erased and the request closed; a copy of their file taken before."""
    workspace, keys = lake(tmp_path / "ws"), workspace_keys(tmp_path / "keys")
    shutil.copy(tmp_path / "ws" / "users" / "part-0.parquet", tmp_path / "backup.parquet")
    shutil.copy(tmp_path / "ws" / "cards" / "part-0.parquet", tmp_path / "cards-backup.parquet")
    erase(workspace, keys, [Subject(value=str(PERSON["user_id"]), request_id="r1", received_at="2026-11-20T09:00:00Z")])
    return workspace, keys, tmp_path


def test_closing_keeps_keyed_records_only(erased) -> None:
    workspace, keys, _ = erased
    path = workspace.root / ".piitracer" / "suppression.sqlite"
    with sqlite3.connect(path) as db:
        records = db.execute("SELECT kind, value_type, request_id FROM records ORDER BY kind").fetchall()
        hashes = [bytes(h) for (h,) in db.execute("SELECT hash FROM records")]
    # The subject value (of its source column) and every identifier the resolve step captured.
    assert {r[2] for r in records} == {"r1"}
    assert {r[0] for r in records} >= {"crm.users.user_id", "crm.users.pan", "crm.users.phone"}
    assert len(set(hashes)) >= 3 and all(len(h) == 16 for h in hashes)
    with sqlite3.connect(path) as db:  # a whole number keeps its number form's keyed hash too; a text, none
        numbers = {kind: bytes(h) for kind, h in db.execute("SELECT kind, number_hash FROM records")}
    assert len(numbers["crm.users.user_id"]) == 16 and numbers["crm.users.user_id"] not in hashes
    assert numbers["crm.users.pan"] == numbers["crm.users.phone"] == b""
    raw = path.read_bytes()
    assert [f for f in forms(PERSON) if f in raw] == []
    with open_session(workspace, keys) as session:
        audit = [e for e in session.audit().entries() if e.kind is EntryKind.REQUEST and e.body.get("to_state") == "closed"]
    assert audit[-1].body["suppression_records_kept"] == len(records)


def test_a_restored_file_brings_the_person_back_and_the_scan_reopens_them(erased) -> None:
    workspace, keys, tmp_path = erased
    users = workspace.root / "users"
    before = rows_of(users)
    assert not [r for r in before if PERSON["user_id"] in r]
    with open_session(workspace, keys) as session:
        first = session.guard_scan()
    assert first.came_back == []  # the decoy (a neighbouring id, the same last four digits) is not flagged
    assert {t.dataset for t in first.tables} == {"crm.users", "crm.contacts", "crm.cards"}

    shutil.copy(tmp_path / "backup.parquet", users / "restored-part-0.parquet")  # a restore writes the old file back
    with open_session(workspace, keys) as session:
        scan = session.guard_scan()
        board = {r.request_id: r for r in session.board(None, False)}
        entries = [e for e in session.audit().entries() if e.kind is EntryKind.REQUEST and e.body.get("action") == "came back"]
    assert [(c.earlier_requests, c.new_request) for c in scan.came_back] == [(["r1"], scan.came_back[0].new_request)]
    back = scan.came_back[0]
    assert back.new_request.startswith("r1-back-")
    assert sorted({(p["dataset"], p["file"], p["column"]) for p in back.places}) == [
        ("crm.users", "restored-part-0.parquet", "pan"), ("crm.users", "restored-part-0.parquet", "phone"),
        ("crm.users", "restored-part-0.parquet", "user_id")]
    read = {t.dataset: t for t in scan.tables}
    assert read["crm.users"].files_read == [i for i in read["crm.users"].files_read if i.startswith("restored-part-0.parquet|")]
    assert read["crm.contacts"].unchanged and read["crm.contacts"].files_read == []
    assert read["crm.cards"].unchanged
    assert board[back.new_request].state is RequestState.QUEUED and "came back" in board[back.new_request].last_action
    assert {e.body["request_id"] for e in entries} == {"r1", back.new_request}
    assert not [f for f in forms(PERSON) if any(f in e.model_dump_json().encode() for e in entries)]
    with open_session(workspace, keys) as session:
        assert session.requests().values(back.new_request) == [str(PERSON["user_id"])]  # read from where it was found
        again = session.guard_scan()
    assert again.came_back == [] and all(t.unchanged for t in again.tables)  # nothing new: nothing read

    others = [r for r in rows_of(users) if r[0] != PERSON["user_id"]]
    erase(workspace, keys)  # the new request plans, executes and verifies as any request
    assert not [r for r in rows_of(users) if PERSON["user_id"] in r]
    assert rows_of(users) == others
    with open_session(workspace, keys) as session:
        assert session.guard_scan(full=True).came_back == []
    raw = b"".join(p.read_bytes() for p in (workspace.root / ".piitracer").rglob("*") if p.is_file())
    assert [f for f in forms(PERSON)[:3] if f in raw] == []  # nothing of the person beyond the keyed records


def test_a_list_kept_before_number_forms_still_finds_an_id_by_its_text(erased) -> None:
    """A suppression file from before number forms were kept (its records table without the
    column; the values are gone, so no form can be added): opened, its old records are marked as
    having none, integer columns are hashed by text, and a restored file still brings the person
    back in every column. New records keep number forms; the list hashes by number only once no
    old record is left."""
    workspace, keys, tmp_path = erased
    path = workspace.root / ".piitracer" / "suppression.sqlite"
    with sqlite3.connect(path) as db:  # the records table as it was made before
        db.executescript("""
            CREATE TABLE old_records (hash BLOB NOT NULL, kind TEXT NOT NULL, value_type TEXT NOT NULL,
                request_id TEXT NOT NULL, erased_on TEXT NOT NULL, PRIMARY KEY (hash, kind, request_id));
            INSERT INTO old_records SELECT hash, kind, value_type, request_id, erased_on FROM records;
            DROP TABLE records;
            ALTER TABLE old_records RENAME TO records;
            CREATE INDEX records_by_request ON records (request_id);""")
    with open_session(workspace, keys) as session:
        store = session.suppression()
        assert not store.numbers_complete() and not store.suppression_list().numbers
        with sqlite3.connect(path) as db:
            texts = sorted({bytes(h) for (h,) in db.execute("SELECT hash FROM records")})
        assert store.hashes() == texts  # texts' hashes alone
    shutil.copy(tmp_path / "backup.parquet", workspace.root / "users" / "restored-part-0.parquet")
    with open_session(workspace, keys) as session:
        scan = session.guard_scan()
    assert sorted({p["column"] for p in scan.came_back[0].places}) == ["pan", "phone", "user_id"]
    with open_session(workspace, keys) as session:
        session.guard_forget("r1")
        store = session.suppression()
        assert store.numbers_complete() and store.suppression_list().numbers  # only new records are left


def test_the_cli_scan_exits_1_when_someone_came_back_and_prints_no_value(erased) -> None:
    workspace, keys, tmp_path = erased
    shutil.copy(tmp_path / "backup.parquet", workspace.root / "contacts" / "old.parquet")
    audit_key = tmp_path / "audit.key"
    audit_key.write_text(AUDIT_KEY + "\n")
    audit_key.chmod(0o600)
    args = ["--workspace", str(workspace.root), "guard", "scan", "--audit-key-file", str(audit_key),
            "--master-key-file", str(tmp_path / "keys" / "master.key")]
    env = {"PIITRACER_AUDIT_KEY": None, "PIITRACER_MASTER_KEY_FILE": None}
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert lines[1].startswith("CAME BACK: erased under r1 (new request r1-back-")
    assert sorted(lines[2:5]) == [f"  crm.contacts file old.parquet column {c}" for c in ("pan", "phone", "user_id")]
    assert not [v for v in PERSON.values() if str(v) in result.output]
    again = CliRunner().invoke(cli, args, env=env)
    assert again.exit_code == 0 and again.output.splitlines()[-1] == "no erased person came back"


def test_a_forgotten_request_is_no_longer_noticed(erased) -> None:
    workspace, keys, tmp_path = erased
    with open_session(workspace, keys) as session:
        assert session.guard_forget("r1") >= 3
    shutil.copy(tmp_path / "backup.parquet", workspace.root / "users" / "restored.parquet")
    with open_session(workspace, keys) as session:
        assert session.guard_scan(full=True).came_back == []
    with sqlite3.connect(workspace.root / ".piitracer" / "suppression.sqlite") as db:
        assert db.execute("SELECT count(*) FROM records").fetchone() == (0,)


def test_forgetting_everyone_destroys_the_key(erased) -> None:
    workspace, keys, _ = erased
    path = workspace.root / ".piitracer" / "suppression.sqlite"
    with sqlite3.connect(path) as db:
        wrapped = db.execute("SELECT value FROM meta WHERE name = 'key'").fetchone()[0]
    with open_session(workspace, keys) as session:
        assert session.guard_forget(None) >= 3
    assert wrapped.encode() not in path.read_bytes()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM records").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM meta WHERE name = 'key'").fetchone() == (0,)


def test_policy_off_keeps_nothing(tmp_path: Path) -> None:
    workspace, keys = lake(tmp_path / "ws", suppression="off"), workspace_keys(tmp_path / "keys")
    erase(workspace, keys, [Subject(value=str(PERSON["user_id"]), request_id="r1", received_at="2026-11-20T09:00:00Z")])
    path = workspace.root / ".piitracer" / "suppression.sqlite"
    assert not path.exists()
    with open_session(workspace, keys) as session:
        scan = session.guard_scan()
    assert scan.suppressed == 0 and scan.tables == []


def test_a_person_erased_twice_comes_back_once(erased) -> None:
    """The same person under two closed requests: one return, one new request linked to both."""
    workspace, keys, tmp_path = erased
    erase(workspace, keys, [Subject(value=str(PERSON["user_id"]), request_id="r2", received_at="2026-11-21T09:00:00Z")])
    shutil.copy(tmp_path / "backup.parquet", workspace.root / "users" / "restored.parquet")
    with open_session(workspace, keys) as session:
        scan = session.guard_scan()
        entries = [e for e in session.audit().entries() if e.kind is EntryKind.REQUEST and e.body.get("action") == "came back"]
    assert [(c.earlier_requests, c.new_request) for c in scan.came_back] == [(["r1", "r2"], "r2-back-" + scan.came_back[0].new_request[8:])]
    assert sorted(e.body["request_id"] for e in entries) == sorted(["r1", "r2", scan.came_back[0].new_request])


def test_a_table_that_cannot_be_read_makes_the_scan_incomplete_and_is_read_again(erased) -> None:
    """An unreadable file may hide a return: the scan says so (exit 1), still reads the other
    tables, and keeps no position for that table, so the next scan reads it again."""
    workspace, keys, tmp_path = erased
    (workspace.root / "contacts" / "broken.parquet").write_bytes(b"PAR1 not really")
    shutil.copy(tmp_path / "backup.parquet", workspace.root / "users" / "restored.parquet")
    with open_session(workspace, keys) as session:
        scan = session.guard_scan()
    assert not scan.complete and [t.dataset for t in scan.problems] == ["crm.contacts"]
    assert [c.earlier_requests for c in scan.came_back] == [["r1"]]  # the other table was still read
    (workspace.root / "contacts" / "broken.parquet").unlink()
    shutil.copy(tmp_path / "backup.parquet", workspace.root / "contacts" / "copied.parquet")
    with open_session(workspace, keys) as session:
        again = session.guard_scan()
    assert again.complete and {p["dataset"] for c in again.came_back for p in c.places} == {"crm.contacts"}
    # Found again before the reopened request was erased: noted on it, no second request.
    assert [(c.new_request, c.why) for c in again.came_back] == [
        (scan.came_back[0].new_request, "already reopened: this return is noted on that request")]
    with open_session(workspace, keys) as session:
        assert [r.request_id for r in session.board(None, False) if r.state is RequestState.QUEUED] == [
            scan.came_back[0].new_request]


def test_a_card_number_alone_brings_the_person_back_and_is_erased_by_it(erased) -> None:
    """A restored file holding only the person's PAN (no user id): the new request names the
    person by the PAN, of its catalogued identifier column, and erases them again."""
    workspace, keys, tmp_path = erased
    cards = workspace.root / "cards"
    assert not [r for r in rows_of(cards) if PERSON["pan"] in r]
    shutil.copy(tmp_path / "cards-backup.parquet", cards / "restored.parquet")
    with open_session(workspace, keys) as session:
        scan = session.guard_scan()
        (back,) = scan.came_back
        request = session.requests().get(back.new_request)
        values = session.requests().values(back.new_request)
    assert (back.kinds, request.sources, values) == (["crm.users.pan"], ("crm.users.pan",), [PERSON["pan"]])
    others = [r for r in rows_of(cards) if PERSON["pan"] not in r]
    erase(workspace, keys)
    assert rows_of(cards) == others


def test_a_derived_form_found_opens_no_request_and_erases_no_one(erased) -> None:
    """A surrogate key (or a hash) of the person is no value of a column to erase by: 7000000107 as
    a surrogate of the person is user 7000000107 in crm.users, someone else. Its return is
    reported, no request is opened, nobody's rows change."""
    from piitracer.requests.suppression import Identifier, SuppressionStore

    workspace, keys, _ = erased
    someone_else = OTHERS[7]["user_id"]
    with SuppressionStore(workspace.root / ".piitracer" / "suppression.sqlite", keys.master) as store:
        store.remember("r9", [Identifier(someone_else, "crm.users.user_id via r9~surrogate", "int")])
    users = rows_of(workspace.root / "users")
    with open_session(workspace, keys) as session:
        scan = session.guard_scan(full=True)
        queued = [r.request_id for r in session.board(None, False) if r.state is RequestState.QUEUED]
    (back,) = scan.came_back
    assert (back.earlier_requests, back.new_request, queued) == (["r9"], None, [])
    assert back.why.startswith("only computed or derived forms were found")
    assert rows_of(workspace.root / "users") == users


def test_only_a_columns_own_values_are_remembered_as_that_column() -> None:
    """The kinds records keep: an identifier set of a column is that column; a computed form or a
    surrogate key derived from it is '<column> via ...' (never taken for the column's values)."""
    import json

    from piitracer.api.requests import value_set_kinds

    plan = {"resolve": [{"dataset": "prod.p", "key_columns": ["user_id"], "identifiers": ["pan", "user_id"]}],
            "steps": [{"values_from": [
                {"name": "prod.p.user_id", "kind": "identifier", "source": {"dataset": "prod.p", "column": "user_id"}},
                {"name": "computed_1", "kind": "computed", "source": {"dataset": "prod.p", "column": "phone"},
                 "expression": "SHA2(phone, 256)"},
                {"name": "m.keys~surrogate", "kind": "surrogate", "source": {"dataset": "prod.p", "column": "user_id"},
                 "lookup": {"dataset": "m.keys"}}]}]}
    assert value_set_kinds(json.dumps(plan)) == {
        "prod.p.user_id": "prod.p.user_id", "prod.p.pan": "prod.p.pan",
        "computed_1": "prod.p.phone via SHA2(phone, 256)", "m.keys~surrogate": "prod.p.user_id via m.keys~surrogate"}


def test_a_catalogued_table_with_no_candidate_column_is_said_not_read(tmp_path: Path) -> None:
    """A catalogued table the catalog and the lineage give no identifier column is not read by the
    default scan, and the scan says so (JSON and text), never silently; --all-columns reads it."""
    root = tmp_path / "ws"
    lake(root)
    pq.write_table(pa.table({"ref": pa.array([PERSON["user_id"], 1, 2], pa.int64())}), _made(root / "totals") / "part-0.parquet")
    config = yaml.safe_load((root / "piitracer.yaml").read_text())
    config["warehouse_roots"].append("totals")
    config["catalog"]["fin.totals"] = {"format": "parquet", "location": "totals", "columns": ["ref"]}
    (root / "piitracer.yaml").write_text(yaml.safe_dump(config))
    workspace, keys = piitracer.load_workspace(root), workspace_keys(tmp_path / "keys")
    erase(workspace, keys, [Subject(value=str(PERSON["user_id"]), request_id="r1", received_at="2026-11-20T09:00:00Z")])
    with open_session(workspace, keys) as session:
        default = session.guard_scan(full=True)
        assert default.not_read == ["fin.totals"] and "fin.totals" not in [t.dataset for t in default.tables]
        assert default.as_dict()["not_read"] == [{"dataset": "fin.totals", "why": piitracer.api.guard.NO_CANDIDATE}]
        every = session.guard_scan(full=True, all_columns=True)
        assert every.not_read == [] and "fin.totals" in [t.dataset for t in every.tables]
    audit_key = tmp_path / "audit.key"
    audit_key.write_text(AUDIT_KEY + "\n")
    audit_key.chmod(0o600)
    args = ["--workspace", str(root), "guard", "scan", "--full", "--audit-key-file", str(audit_key),
            "--master-key-file", str(tmp_path / "keys" / "master.key")]
    shown = CliRunner().invoke(cli, args, env={"PIITRACER_AUDIT_KEY": None, "PIITRACER_MASTER_KEY_FILE": None})
    assert shown.exit_code == 0, shown.output
    assert "  not read (1): fin.totals: no column the catalog or the lineage says can hold an identifier" in shown.output


def _made(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder
