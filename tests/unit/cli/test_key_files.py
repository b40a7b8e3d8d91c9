"""Key files through the real CLI: a key file that group or others may read is refused as ssh
refuses a private key (one line naming the file and `chmod 600 FILE`); keygen into a folder that
does not exist is one line naming the folder; the request store keeps its master key's fingerprint
and refuses another master key before anything is written."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from piitracer.cli.main import cli
from piitracer.crypto.envelope import MasterKeyError, load_master_key
from piitracer.requests.store import RequestStore
from one_table_workspace import one_table_workspace

AUDIT = "key-files-test-audit-key-0123456789"
SUBJECT = "7000000001"


def run(root: Path | None, *args: str, env: dict | None = None) -> tuple[int, str]:
    """The CLI in-process, keys only from ``env`` (the session's master key is removed); an
    exception escaping it (a traceback for a user) fails the test."""
    environment = {"PIITRACER_AUDIT_KEY": AUDIT, "PIITRACER_AUDIT_KEY_FILE": None, "PIITRACER_MASTER_KEY": None,
                   "PIITRACER_MASTER_KEY_FILE": None, "PIITRACER_SIGNING_KEY_FILE": None, **(env or {})}
    base = ["--workspace", str(root)] if root is not None else []
    result = CliRunner(env=environment).invoke(cli, [*base, *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    return one_table_workspace(tmp_path)


@pytest.fixture()
def secrets_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "secrets"
    folder.mkdir(mode=0o700)
    return folder


def add(root: Path, request_id: str, *extra: str, env: dict | None = None) -> tuple[int, str]:
    return run(root, "requests", "add", "--source", "a.b.user_id", "--subject", SUBJECT, "--request-id", request_id,
               *extra, env=env)


def one_error_line(out: str) -> str:
    lines = out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), out
    return lines[0]


# ---- key files others may read ------------------------------------------------------------------

@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620], ids=lambda mode: f"{mode:04o}")
@pytest.mark.parametrize("how", ["--master-key-file", "PIITRACER_MASTER_KEY_FILE", "--audit-key-file",
                                 "PIITRACER_AUDIT_KEY_FILE"])
def test_a_key_file_group_or_others_may_open_is_refused_with_the_fix(ws: Path, secrets_folder: Path, how: str,
                                                                     mode: int) -> None:
    master = secrets_folder / "master.key"
    assert run(None, "requests", "keygen", str(master))[0] == 0
    audit = secrets_folder / "audit.key"
    audit.write_text(AUDIT + "\n")
    audit.chmod(0o600)
    target = master if "MASTER" in how.upper() else audit
    target.chmod(mode)
    options = {"--master-key-file": ["--master-key-file", str(master)],
               "--audit-key-file": ["--audit-key-file", str(audit), "--master-key-file", str(master)]}.get(how, [])
    env = {how: str(target)} if how.startswith("PIITRACER") else {}
    if how == "PIITRACER_AUDIT_KEY_FILE":
        env |= {"PIITRACER_AUDIT_KEY": None, "PIITRACER_MASTER_KEY_FILE": str(master)}
    code, out = add(ws, "dsr-1", *options, env=env)
    line = one_error_line(out)
    assert code == 2
    assert f"{target} is open to group or others (mode {mode:04o})" in line and f"run `chmod 600 {target}`" in line
    assert not (ws / ".piitracer" / "requests.sqlite").exists()  # refused before the store was opened
    target.chmod(0o600)
    code, out = add(ws, "dsr-1", *options, env=env)
    assert code == 0 and "queued dsr-1" in out, out


def test_a_private_signing_key_others_may_read_is_refused_but_its_public_key_is_not(tmp_path: Path) -> None:
    private = tmp_path / "signing.key"
    assert run(None, "audit", "keygen", str(private))[0] == 0
    private.chmod(0o644)
    code, out = run(tmp_path, "audit", "certificate", "--request", "dsr-1", "--signing-key", str(private))
    line = one_error_line(out)
    assert code == 2 and f"--signing-key {private}: {private} is open to group or others (mode 0644)" in line
    assert f"chmod 600 {private}" in line
    code, out = run(tmp_path, "audit", "certificate", "--request", "dsr-1",
                    env={"PIITRACER_SIGNING_KEY_FILE": str(private)})
    assert code == 2 and f"chmod 600 {private}" in out
    private.chmod(0o600)
    code, out = run(tmp_path, "audit", "certificate", "--request", "dsr-1", "--signing-key", str(private))
    assert code == 2 and "chmod" not in out  # past the key: this folder has no workspace
    public = Path(f"{private}.pub")
    assert public.stat().st_mode & 0o044  # a public key is meant to be read by others: not refused
    certificate = tmp_path / "c.json"
    certificate.write_text("{}")
    code, out = run(None, "audit", "check-certificate", str(certificate), "--public-key", str(public))
    assert code == 1 and "chmod" not in out


def test_a_key_in_the_environment_is_not_a_file_and_is_not_checked(ws: Path) -> None:
    code, out = add(ws, "dsr-1", env={"PIITRACER_MASTER_KEY": "m" * 40})
    assert code == 0 and "queued dsr-1" in out, out


# ---- keygen into a folder that does not exist ---------------------------------------------------

@pytest.mark.parametrize("group", ["requests", "audit"])
def test_keygen_into_a_missing_folder_is_one_line_naming_the_folder(tmp_path: Path, group: str) -> None:
    folder = tmp_path / "no" / "such"
    code, out = run(None, group, "keygen", str(folder / "x.key"))
    line = one_error_line(out)
    assert code == 2 and f"folder {folder} does not exist" in line and "no key was written" in line
    assert not (tmp_path / "no").exists()  # the folder of a secret is not made behind the owner's back
    parent_is_a_file = tmp_path / "file"
    parent_is_a_file.write_text("")
    code, out = run(None, group, "keygen", str(parent_is_a_file / "x.key"))
    assert code == 2 and f"folder {parent_is_a_file} does not exist (or is not a folder)" in one_error_line(out)


# ---- the request store's master key -------------------------------------------------------------

def fingerprint(path: Path) -> str:
    return load_master_key(path, environ={}).fingerprint


def test_the_request_store_refuses_a_second_master_key_and_changes_nothing(ws: Path, secrets_folder: Path) -> None:
    first, second = secrets_folder / "first.key", secrets_folder / "second.key"
    for key in (first, second):
        assert run(None, "requests", "keygen", str(key))[0] == 0
    assert add(ws, "dsr-1", "--master-key-file", str(first))[0] == 0
    store = ws / ".piitracer" / "requests.sqlite"
    before = store.read_bytes()
    code, out = add(ws, "dsr-2", "--master-key-file", str(second))
    line = one_error_line(out)
    assert code == 2
    assert f"was created under master key fingerprint {fingerprint(first)}" in line
    assert f"this key (--master-key-file {second}) is {fingerprint(second)}" in line and "use the original key file" in line
    assert store.read_bytes() == before
    code, out = add(ws, "dsr-2", env={"PIITRACER_MASTER_KEY_FILE": str(second)})
    assert code == 2 and f"$PIITRACER_MASTER_KEY_FILE ({second})" in out and fingerprint(first) in out
    assert add(ws, "dsr-2", "--master-key-file", str(first))[0] == 0
    with RequestStore(store, load_master_key(first, environ={})) as opened:
        assert opened.master_fingerprint() == fingerprint(first)
        assert [r.request_id for r in opened.all()] == ["dsr-1", "dsr-2"]


def test_a_store_opened_without_a_key_checks_the_one_it_loads_later(tmp_path: Path, monkeypatch) -> None:
    first, second = (tmp_path / "first.key", tmp_path / "second.key")
    for key in (first, second):
        key.write_text(key.stem * 20)
        key.chmod(0o600)
    path = tmp_path / "requests.sqlite"
    with RequestStore(path, load_master_key(first, environ={})) as store:
        store.add("r1", *_dates(), ["a.b.user_id"], [SUBJECT])
    monkeypatch.delenv("PIITRACER_MASTER_KEY", raising=False)
    monkeypatch.setenv("PIITRACER_MASTER_KEY_FILE", str(second))
    with RequestStore(path) as store:  # the board needs no key
        assert [r.request_id for r in store.all()] == ["r1"]
        with pytest.raises(MasterKeyError, match=f"created under master key fingerprint {fingerprint(first)}"):
            store.add("r2", *_dates(), ["a.b.user_id"], [SUBJECT])
        assert not store.has("r2")


def test_a_store_from_before_the_fingerprint_records_it_from_its_data_keys(tmp_path: Path) -> None:
    first, second = (tmp_path / "first.key", tmp_path / "second.key")
    for key in (first, second):
        key.write_text(key.stem * 20)
        key.chmod(0o600)
    old, empty = tmp_path / "old.sqlite", tmp_path / "empty.sqlite"
    with RequestStore(old, load_master_key(first, environ={})) as store:
        store.add("r1", *_dates(), ["a.b.user_id"], [SUBJECT])
    for path in (old, empty):
        RequestStore(path).close()
        with sqlite3.connect(path) as db:  # as a store written before the fingerprint was kept
            db.execute("DROP TABLE meta")
    # Its data keys name the master key that wrapped them: another one is refused, not recorded.
    with pytest.raises(MasterKeyError, match=f"fingerprint {fingerprint(first)}…; this key .* is {fingerprint(second)}"):
        RequestStore(old, load_master_key(second, environ={}))
    with RequestStore(old) as store:
        assert store.master_fingerprint() is None
    with RequestStore(old, load_master_key(first, environ={})) as store:
        assert store.master_fingerprint() == fingerprint(first) and store.values("r1") == [SUBJECT]
    # No data key left (every request closed, or none yet): the first key used is recorded.
    with RequestStore(empty, load_master_key(second, environ={})) as store:
        assert store.master_fingerprint() == fingerprint(second)
    with pytest.raises(MasterKeyError, match="use the original key file"):
        RequestStore(empty, load_master_key(first, environ={}))


def _dates():
    from datetime import datetime, timedelta, timezone

    received = datetime(2026, 11, 1, tzinfo=timezone.utc)
    return received, received + timedelta(days=30)
