"""Key files say what they are (issue 40.3): the audit and master keys carry a first line
``piitracer-<kind>-key v1``, the signing key is a PEM private key. An audit and a master key file
given the wrong way round are refused at first use, in one line naming both, before anything is
read or written; a key file of another kind given alone is refused naming what it is. Files
written before the marker (the secret alone) keep working, taken as given, and marking one by
adding the line keeps the same key. Keys set in the environment as values are not files: nothing
to check there."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from piitracer.api.demo import demo_audit_key, demo_master_key, demo_signing_key
from piitracer.api.keys import Keys
from piitracer.audit.keys import AuditKeyError, load_audit_key
from piitracer.cli.main import cli
from piitracer.crypto.envelope import MasterKeyError, load_master_key
from piitracer.model.errors import BadKeyError
from piitracer.storage.key_files import kind_of_file
from one_table_workspace import one_table_workspace

SUBJECT = "7000000001"
NO_KEYS = {"PIITRACER_AUDIT_KEY": None, "PIITRACER_AUDIT_KEY_FILE": None, "PIITRACER_MASTER_KEY": None,
           "PIITRACER_MASTER_KEY_FILE": None, "PIITRACER_SIGNING_KEY_FILE": None}


def run(root: Path | None, *args: str, env: dict | None = None) -> tuple[int, str]:
    """The CLI in-process with only the keys of ``env``; an exception escaping it fails the test."""
    base = ["--workspace", str(root)] if root is not None else []
    result = CliRunner(env={**NO_KEYS, **(env or {})}).invoke(cli, [*base, *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


def one_error_line(out: str) -> str:
    lines = out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), out
    return lines[0]


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    return one_table_workspace(tmp_path)


@pytest.fixture()
def keys(tmp_path: Path) -> dict[str, Path]:
    """The keys `init` makes (marked), and an audit and a master key as written before the marker."""
    folder = tmp_path / "keys"
    code, out = run(None, "init", str(tmp_path / "other-ws"), "--warehouse-root", str(tmp_path), "--keys-dir",
                    str(folder))
    assert code == 0, out
    made = {"audit": folder / "audit.key", "master": folder / "master.key", "signing": folder / "signing.key"}
    for kind in ("audit", "master"):
        old = folder / f"old-{kind}.key"
        old.write_text(f"an-old-{kind}-key-written-before-the-marker-0123456789\n")
        old.chmod(0o600)
        made[f"old-{kind}"] = old
    return made


def add(root: Path, *options: str, env: dict | None = None) -> tuple[int, str]:
    return run(root, "requests", "add", "--source", "a.b.user_id", "--subject", SUBJECT, "--request-id", "dsr-1",
               *options, env=env)


# ---- a swapped pair ------------------------------------------------------------------------------

@pytest.mark.parametrize("audit_given, master_given", [("master", "audit"), ("master", "old-audit"),
                                                       ("old-master", "audit")],
                         ids=["both-marked", "only-the-master-key-marked", "only-the-audit-key-marked"])
@pytest.mark.parametrize("how", ["options", "environment"])
def test_a_swapped_pair_is_refused_at_first_use_in_one_line_naming_both(ws: Path, keys: dict[str, Path], how: str,
                                                                       audit_given: str, master_given: str) -> None:
    audit_file, master_file = keys[audit_given], keys[master_given]
    if how == "options":
        code, out = add(ws, "--audit-key-file", str(audit_file), "--master-key-file", str(master_file))
        audit_said, master_said = f"--audit-key-file {audit_file}", f"--master-key-file {master_file}"
    else:
        code, out = add(ws, env={"PIITRACER_AUDIT_KEY_FILE": str(audit_file),
                                 "PIITRACER_MASTER_KEY_FILE": str(master_file)})
        audit_said = f"$PIITRACER_AUDIT_KEY_FILE ({audit_file})"
        master_said = f"$PIITRACER_MASTER_KEY_FILE ({master_file})"
    line = one_error_line(out)
    assert code == 2
    assert "the audit and master key files are swapped" in line
    assert str(audit_file) in line and str(master_file) in line  # both named, whichever is marked
    if audit_given == "master":
        assert f"{audit_said} is the master key (piitracer-master-key v1)" in line
    if master_given == "audit":
        assert f"{master_said} is the audit key (piitracer-audit-key v1)" in line
    assert f"give {audit_file} as the master key and {master_file} as the audit key" in line
    assert not (ws / ".piitracer" / "requests.sqlite").exists()  # refused before the request was queued
    assert not (ws / ".piitracer" / "audit.sqlite").exists()
    # The right way round, the same files are accepted.
    code, out = add(ws, "--audit-key-file", str(master_file), "--master-key-file", str(audit_file))
    assert code == 0 and "queued dsr-1" in out, out


def test_the_python_api_refuses_the_swap_the_same_way(keys: dict[str, Path]) -> None:
    with pytest.raises(BadKeyError, match="the audit and master key files are swapped"):
        Keys.load(keys["master"], keys["audit"], environ={})
    loaded = Keys.load(keys["audit"], keys["master"], keys["signing"], environ={})
    assert loaded.describe() == {"audit": True, "master": True, "signing": True}


# ---- one key file of another kind -----------------------------------------------------------------

def test_a_key_file_of_another_kind_given_alone_is_refused_naming_what_it_is(ws: Path, keys: dict[str, Path]) -> None:
    # The master key as the audit key, the master key set in the environment as a value (not a file).
    code, out = add(ws, "--audit-key-file", str(keys["master"]), env={"PIITRACER_MASTER_KEY": "m" * 40})
    line = one_error_line(out)
    assert code == 2 and (f"{keys['master']}: this file is the master key (piitracer-master-key v1), not the audit "
                          "key (check --audit-key-file)") in line
    # The audit key as the master key.
    code, out = add(ws, "--master-key-file", str(keys["audit"]), env={"PIITRACER_AUDIT_KEY": "a" * 40})
    assert code == 2 and "this file is the audit key (piitracer-audit-key v1), not the master key" in one_error_line(out)
    # The signing key (a PEM private key) as either.
    code, out = add(ws, "--audit-key-file", str(keys["signing"]), env={"PIITRACER_MASTER_KEY": "m" * 40})
    assert code == 2 and "this file is a signing (private) key, not the audit key" in one_error_line(out)
    with pytest.raises(MasterKeyError, match="this file is a signing"):
        load_master_key(keys["signing"], environ={})
    # An audit key file as the signing key: named as what it is, not "not a PEM key".
    code, out = run(ws, "audit", "certificate", "--request", "dsr-1", "--signing-key", str(keys["audit"]))
    assert code == 2 and (f"--signing-key {keys['audit']}: this file is the audit key (piitracer-audit-key v1), not the "
                          "private key") in one_error_line(out)
    assert not (ws / ".piitracer" / "requests.sqlite").exists()


def test_a_key_in_the_environment_is_not_a_file_and_is_not_checked(ws: Path, keys: dict[str, Path]) -> None:
    """$PIITRACER_AUDIT_KEY (a value) wins over $PIITRACER_AUDIT_KEY_FILE: the file it names is
    not read, so it is not a swap even when it is the master key's."""
    code, out = add(ws, "--master-key-file", str(keys["master"]),
                    env={"PIITRACER_AUDIT_KEY": "a-key-set-as-a-value-0123456789",
                         "PIITRACER_AUDIT_KEY_FILE": str(keys["master"])})
    assert code == 0 and "queued dsr-1" in out, out


def test_one_file_given_as_both_keys_is_refused_by_the_key_it_is_not(keys: dict[str, Path]) -> None:
    with pytest.raises(MasterKeyError, match="this file is the audit key"):
        Keys.load(keys["audit"], keys["audit"], environ={})


def test_a_marker_of_a_later_version_is_refused(tmp_path: Path) -> None:
    later = tmp_path / "later.key"
    later.write_text("piitracer-audit-key v2\n" + "0" * 64 + "\n")
    later.chmod(0o600)
    with pytest.raises(AuditKeyError, match="the audit key file version 2; this piitracer reads version 1"):
        load_audit_key(key_file=later, environ={})


# ---- files written before the marker ----------------------------------------------------------

def test_key_files_written_before_the_marker_still_work_and_marking_one_keeps_the_key(
        ws: Path, keys: dict[str, Path]) -> None:
    old_audit, old_master = keys["old-audit"], keys["old-master"]
    code, out = add(ws, "--audit-key-file", str(old_audit), "--master-key-file", str(old_master))
    assert code == 0 and "queued dsr-1" in out, out
    before = (load_audit_key(key_file=old_audit, environ={}).key_id, load_master_key(old_master, environ={}).fingerprint)
    for path, kind in ((old_audit, "audit"), (old_master, "master")):  # the owner marks them by hand
        path.write_text(f"piitracer-{kind}-key v1\n" + path.read_text())
    after = (load_audit_key(key_file=old_audit, environ={}).key_id, load_master_key(old_master, environ={}).fingerprint)
    assert after == before  # the marker is not part of the secret
    # The request store (which records its master key's fingerprint) and the audit log accept them.
    code, out = run(ws, "requests", "add", "--source", "a.b.user_id", "--subject", "7000000002", "--request-id", "dsr-2",
                    "--audit-key-file", str(old_audit), "--master-key-file", str(old_master))
    assert code == 0 and "queued dsr-2" in out, out
    code, out = run(ws, "audit", "verify", "--audit-key-file", str(old_audit))
    assert code == 0 and "audit log intact" in out, out


# ---- every key piitracer writes says what it is ------------------------------------------------

def test_every_key_piitracer_writes_says_what_it_is(tmp_path: Path, keys: dict[str, Path]) -> None:
    assert run(None, "requests", "keygen", str(tmp_path / "m.key"))[0] == 0
    assert run(None, "audit", "keygen", str(tmp_path / "s.key"))[0] == 0
    demo = tmp_path / "demo"
    written = {
        tmp_path / "m.key": "master", tmp_path / "s.key": "signing", tmp_path / "s.key.pub": "public",
        keys["audit"]: "audit", keys["master"]: "master", keys["signing"]: "signing",
        Path(f"{keys['signing']}.pub"): "public",
        demo_audit_key(demo): "audit", demo_master_key(demo): "master", demo_signing_key(demo)[0]: "signing",
    }
    assert {path: kind_of_file(path) for path in written} == written
    assert (tmp_path / "m.key").read_text().splitlines()[0] == "piitracer-master-key v1"
