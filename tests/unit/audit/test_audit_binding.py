"""The audit log belongs to one workspace and one history.

Reproduced on the main before this change: a copy of this workspace's audit log, extended
elsewhere with the audit key and put back, passed ``audit verify`` with the anchor in place (the
anchor only asked that the anchored entry still be there); and a log from another workspace under
the same key verified as this one's. Now a workspace id is created once and bound into the log's
first entry and into the anchor; ``audit verify`` fails when the log's head is not the anchored head
(a longer log is reported) and when the log belongs to another workspace.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml
from click.testing import CliRunner

from piitracer.api import audit_log, workspace_identity
from piitracer.audit import AuditLog, load_audit_key, record_request_entry
from piitracer.cli.main import cli
from piitracer.ingest.workspace.loader import load_workspace
from piitracer.model.audit import EntryKind

KEY = "audit-binding-test-key-0123456789abcdef"


def make_workspace(folder: Path, anchor: Path | None) -> Path:
    folder.mkdir(parents=True)
    config: dict = {"catalog": {}}
    if anchor is not None:
        config["audit"] = {"anchor": str(anchor)}
    (folder / "piitracer.yaml").write_text(yaml.safe_dump(config))
    return folder


def record(folder: Path, *request_ids: str) -> None:
    with audit_log(load_workspace(folder), key=load_audit_key(KEY)) as log:
        for request_id in request_ids:
            record_request_entry(log, request_id, [(request_id, f"value-of-{request_id}")], from_state=None,
                                 to_state="queued", action="test")


def verify(folder: Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["--workspace", str(folder), "audit", "verify"],
                                env={"PIITRACER_AUDIT_KEY": KEY, "PIITRACER_AUDIT_KEY_FILE": None})
    return result.exit_code, result.stdout + result.stderr


def test_the_first_entry_binds_the_log_to_its_workspace(tmp_path: Path) -> None:
    folder = make_workspace(tmp_path / "ws", tmp_path / "locked" / "anchor.json")
    record(folder, "r1", "r2")
    workspace = load_workspace(folder)
    with audit_log(workspace, key=load_audit_key(KEY)) as log:
        first = log.entries()[0]
        assert first.kind is EntryKind.WORKSPACE and first.body == {"workspace_id": workspace_identity(workspace)}
    assert workspace_identity(workspace) == workspace_identity(load_workspace(folder))  # created once
    code, out = verify(folder)
    assert code == 0 and "bound to this workspace" in out and "anchor at entry 3 matches" in out, out


def test_a_longer_copy_of_the_log_is_reported_not_accepted(tmp_path: Path) -> None:
    folder = make_workspace(tmp_path / "ws", tmp_path / "locked" / "anchor.json")
    record(folder, "r1", "r2")
    log_file = folder / ".piitracer" / "audit.sqlite"
    copy = tmp_path / "elsewhere" / "audit.sqlite"
    copy.parent.mkdir()
    shutil.copy(log_file, copy)
    with AuditLog(copy, load_audit_key(KEY)) as extended:  # extended with the key, but not through the anchor
        record_request_entry(extended, "r9", [("r9", "someone-else")], from_state=None, to_state="queued", action="x")
    shutil.copy(copy, log_file)
    code, out = verify(folder)
    assert code == 1, out
    assert "the log has 1 entry past the anchored head (entry 3)" in out, out


def test_a_log_from_another_workspace_is_refused(tmp_path: Path) -> None:
    ours = make_workspace(tmp_path / "ours", None)
    theirs = make_workspace(tmp_path / "theirs", None)
    record(ours, "r1")
    record(theirs, "r1", "r2")  # the same key, another workspace
    shutil.copy(theirs / ".piitracer" / "audit.sqlite", ours / ".piitracer" / "audit.sqlite")
    code, out = verify(ours)
    assert code == 1, out
    theirs_id = workspace_identity(load_workspace(theirs))
    ours_id = workspace_identity(load_workspace(ours))
    assert f"the log belongs to workspace {theirs_id}, not to this workspace ({ours_id})" in out, out


def test_an_anchor_of_another_workspace_does_not_vouch_for_this_log(tmp_path: Path) -> None:
    anchor = tmp_path / "locked" / "anchor.json"
    ours = make_workspace(tmp_path / "ours", anchor)
    record(ours, "r1", "r2")
    other = make_workspace(tmp_path / "other", tmp_path / "locked2" / "anchor.json")
    record(other, "r1", "r2")
    # The other workspace's log and its own anchor, both put in place of ours: same key, same length.
    shutil.copy(other / ".piitracer" / "audit.sqlite", ours / ".piitracer" / "audit.sqlite")
    shutil.copy(tmp_path / "locked2" / "anchor.json", anchor)
    code, out = verify(ours)
    assert code == 1 and "not to this workspace" in out, out
