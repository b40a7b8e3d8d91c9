"""Four eyes before execution (issue 41.2), below Spark: who planned is recorded with the plan;
under ``policy.approval: required`` execute refuses an unapproved plan before anything is written
(NeedsApprovalError, exit 2, naming who may approve); an approval is an audit entry bound to the
plan id and the approver; the planner, a non-approver and a plan recorded without its planner are
refused; an approval of one plan does not approve another. The run of an approved plan (Spark) is
tests/integration/test_approval.py."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

import piitracer
from piitracer.api import Keys, open as open_session
from piitracer.audit import load_audit_key
from piitracer.crypto.envelope import write_master_key
from piitracer.model.audit import EntryKind
from piitracer.model.errors import NeedsApprovalError
from piitracer.model.plan import Subject
from piitracer.model.requests import RequestState
from piitracer.requests.approval import ApprovalRefused


def small_lake(root: Path, approval: str = "required", approvers=("ana", "bo", "chen")) -> piitracer.Workspace:
    (root / "users").mkdir(parents=True)
    pq.write_table(pa.table({"user_id": pa.array([7_000_000_001, 8_000_000_002], pa.int64())}),
                   root / "users" / "part-0.parquet")
    (root / "sql").mkdir()
    (root / "sql" / "p.sql").write_text("INSERT INTO stream.cdc SELECT user_id FROM crm.users;\n")
    (root / "piitracer.yaml").write_text(yaml.safe_dump({
        "lineage": {"sql": [{"path": "sql"}]}, "owners": ["streaming-team"], "approvers": list(approvers),
        "policy": {"approval": approval},
        "catalog": {"crm.users": {"format": "parquet", "location": "users", "columns": ["user_id"],
                                  "identifiers": ["user_id"], "subject_key": "user_id"},
                    "stream.cdc": {"format": "external", "owner": "streaming-team (topic cdc)", "columns": ["user_id"]}}}))
    return piitracer.load_workspace(root)


def subject(value: str = "7000000001", request_id: str = "r1") -> Subject:
    return Subject(value=value, request_id=request_id, received_at="2026-11-20T09:00:00Z")


@pytest.fixture
def lake(tmp_path: Path):
    workspace = small_lake(tmp_path / "ws")
    keys = Keys(audit=load_audit_key("approval-test-audit-key-0123456789"), master=write_master_key(tmp_path / "m.key"))
    return workspace, keys


def test_an_unapproved_plan_is_refused_before_anything_is_written(lake) -> None:
    workspace, keys = lake
    with open_session(workspace, keys) as session:
        planned = session.plan(["crm.users.user_id"], [subject()], keep=True, by="ana")
        before = len(session.audit().entries())
        with pytest.raises(NeedsApprovalError) as refused:
            session.execute(planned.plan)
        assert session.request("r1").state is RequestState.PLANNED
        assert len(session.audit().entries()) == before
    message = str(refused.value)
    assert refused.value.exit_code == 2 and refused.value.kind == "needs-approval"
    assert "planned by ana" in message and "who may approve: bo, chen" in message and "nothing was changed" in message


def test_the_plan_entry_names_its_planner_and_the_approval_is_bound_to_the_plan(lake) -> None:
    workspace, keys = lake
    with open_session(workspace, keys) as session:
        planned = session.plan(["crm.users.user_id"], [subject()], keep=True, by="ana")
        (plan_entry,) = [e for e in session.audit().entries(plan_id=planned.plan.plan_id) if e.kind is EntryKind.PLAN]
        assert plan_entry.body["planned_by"] == "ana"
        entry = session.approve(planned.plan, "bo")
        assert entry.kind is EntryKind.APPROVAL and entry.plan_id == planned.plan.plan_id
        assert entry.body["approved_by"] == "bo" and entry.body["planned_by"] == "ana" and entry.request_ids == ("r1",)
        assert session.approve(planned.plan, "bo").seq == entry.seq  # once per approver
        from piitracer.requests.approval import require_approval

        assert require_approval(session.audit(), planned.plan.plan_id, workspace.config.approvers).approved_by == "bo"
        # Another plan (another subject): the first approval does not carry over.
        other = session.plan(["crm.users.user_id"], [subject("8000000002", "r2")], keep=True, by="ana")
        with pytest.raises(NeedsApprovalError):
            session.execute(other.plan)


def test_the_planner_and_a_non_approver_are_refused(lake) -> None:
    workspace, keys = lake
    with open_session(workspace, keys) as session:
        planned = session.plan(["crm.users.user_id"], [subject()], keep=True, by="ana")
        with pytest.raises(ApprovalRefused, match=r"ana planned .*: a plan is approved by a second person \(who may: bo, chen\)"):
            session.approve(planned.plan, "ana")
        with pytest.raises(ApprovalRefused, match="streaming-team is not listed under approvers"):
            session.approve(planned.plan, "streaming-team")
        assert not [e for e in session.audit().entries() if e.kind is EntryKind.APPROVAL]


def test_without_a_name_the_planner_is_the_operating_system_user(lake, monkeypatch) -> None:
    workspace, keys = lake
    monkeypatch.setenv("USER", "chen")
    monkeypatch.setenv("LOGNAME", "chen")
    with open_session(workspace, keys) as session:
        planned = session.plan(["crm.users.user_id"], [subject()], keep=True)
        with pytest.raises(ApprovalRefused, match="chen planned"):
            session.approve(planned.plan, "chen")


def test_without_the_policy_no_approval_is_asked(tmp_path: Path) -> None:
    from piitracer.requests.approval import approval_state

    workspace = small_lake(tmp_path / "ws", approval="none")
    keys = Keys(audit=load_audit_key("approval-test-audit-key-0123456789"), master=write_master_key(tmp_path / "m.key"))
    assert workspace.config.policy.approval == "none"
    with open_session(workspace, keys) as session:
        planned = session.plan(["crm.users.user_id"], [subject()], keep=True, by="ana")
        assert not approval_state(session.audit(), planned.plan.plan_id, workspace.config.approvers).approved


def test_a_name_has_one_role(tmp_path: Path) -> None:
    from piitracer.workspace.model import WorkspaceError

    with pytest.raises(WorkspaceError, match="listed under both owners and approvers"):
        small_lake(tmp_path / "ws", approvers=("streaming-team",))


def test_the_cli_refuses_an_unapproved_plan_with_exit_2_naming_the_approvers(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from piitracer.cli.main import cli
    from piitracer.console.tokens import add_token

    workspace = small_lake(tmp_path / "ws")
    audit_key, master = tmp_path / "audit.key", tmp_path / "master.key"
    audit_key.write_text("approval-test-audit-key-0123456789\n")
    audit_key.chmod(0o600)
    write_master_key(master)
    keys = ["--audit-key-file", str(audit_key), "--master-key-file", str(master)]
    root = ["--workspace", str(workspace.root)]
    runner = CliRunner()
    done = runner.invoke(cli, [*root, "plan", "--source", "crm.users.user_id", "--subject", "7000000001", "--request-id",
                               "r1", "-o", str(tmp_path / "plan.json"), "--by", "ana", *keys])
    assert done.exit_code == 0, done.output
    refused = runner.invoke(cli, [*root, "execute", str(tmp_path / "plan.json"), *keys])
    assert refused.exit_code == 2 and "Traceback" not in refused.output
    assert "who may approve: bo, chen" in refused.output
    tokens = {name: tmp_path / f"{name}.token" for name in ("ana", "bo")}
    for name, path in tokens.items():
        path.write_text(add_token(workspace, name))
    own = runner.invoke(cli, [*root, "approve", str(tmp_path / "plan.json"), "--by", "ana", "--token-file", str(tokens["ana"]), *keys])
    assert own.exit_code == 2 and "ana planned" in own.output
    borrowed = runner.invoke(cli, [*root, "approve", str(tmp_path / "plan.json"), "--by", "bo", "--token-file", str(tokens["ana"]), *keys])
    assert borrowed.exit_code == 2 and "not bo's" in borrowed.output
    approved = runner.invoke(cli, [*root, "approve", "r1", "--by", "bo", "--token-file", str(tokens["bo"]), "--output", "json", *keys])
    assert approved.exit_code == 0, approved.output
    assert '"approved_by": "bo"' in approved.output and '"planned_by": "ana"' in approved.output
