"""Four eyes before execution (issues 41.2 and 50), below Spark: every identity the rule counts is
proven by that person's own token, which opens their own signing key. Under ``policy.approval:
required`` a kept plan needs its planner's token; an approval is the approver's signed statement,
bound to the plan's id and its planner, and counts only with the key the audit log registered for
them; the planner, a non-approver, a typed name, an OS account, a borrowed token, a revoked one, an
entry forged with the audit key alone, an approval moved from another plan and a policy switched off
after planning are refused before anything is written (exit 2). The public ``execute_plan`` runs
through the same checks. The whole lifecycle on Spark, with the auditor's check of the certificate,
is tests/integration/test_four_eyes.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from people_keys import AUDIT_KEY, workspace_keys
from users_lake import users_lake

import piitracer
from piitracer.api import Keys, open as open_session
from piitracer.audit.signatures import Registry, signer
from piitracer.cli.main import cli
from piitracer.model.audit import EntryKind
from piitracer.model.errors import IdentityRefusedError, NeedsApprovalError, PiitracerError
from piitracer.model.plan import Subject
from piitracer.model.requests import RequestState
from piitracer.requests.approval import ApprovalRefused, PolicyChanged, approval_state


def small_lake(root: Path, approval: str = "required", approvers=("ana", "bo", "chen")) -> piitracer.Workspace:
    return piitracer.load_workspace(users_lake(root, approvers=list(approvers), policy={"approval": approval}))


def subject(value: str = "7000000001", request_id: str = "r1") -> Subject:
    return Subject(value=value, request_id=request_id, received_at="2026-11-20T09:00:00Z")


class Lake:
    """The workspace, its keys, and a token for each approver and the owner."""

    def __init__(self, root: Path, approval: str = "required") -> None:
        self.root = root
        self.workspace = small_lake(root / "ws", approval)
        self.keys = workspace_keys(root / "keys")
        with open_session(self.workspace, self.keys) as session:
            self.tokens = {name: session.add_person(name).token for name in ("ana", "bo", "chen", "streaming-team")}

    def session(self):
        return open_session(self.workspace, self.keys)

    def plan(self, by: str | None = "ana", request: Subject | None = None):
        with self.session() as session:
            person = session.person(self.tokens[by]) if by else None
            return session.plan(["crm.users.user_id"], [request or subject()], keep=True, by=person).plan

    def entries(self, kind: EntryKind | None = None) -> list:
        with self.session() as session:
            return [e for e in session.audit().entries() if kind is None or e.kind is kind]


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    return Lake(tmp_path)


def test_an_unapproved_plan_is_refused_before_anything_is_written(lake: Lake) -> None:
    plan = lake.plan("ana")
    before = len(lake.entries())
    with lake.session() as session, pytest.raises(NeedsApprovalError) as refused:
        session.execute(plan, by=session.person(lake.tokens["ana"]))
    with lake.session() as session:
        assert session.request("r1").state is RequestState.PLANNED
    assert len(lake.entries()) == before
    message = str(refused.value)
    assert refused.value.exit_code == 2 and refused.value.kind == "needs-approval"
    assert "planned by ana" in message and "who may approve: bo, chen" in message and "nothing was changed" in message
    # The public function is no way around it: it runs through the same session.
    with pytest.raises(IdentityRefusedError):  # nobody proved who executes
        piitracer.execute_plan(lake.workspace, plan, keys=lake.keys)
    assert len(lake.entries()) == before


def test_the_plan_and_the_approval_are_signed_statements_bound_to_the_plan(lake: Lake) -> None:
    plan = lake.plan("ana")
    (plan_entry,) = [e for e in lake.entries(EntryKind.PLAN) if e.plan_id == plan.plan_id]
    assert plan_entry.body["planned_by"] == "ana" and plan_entry.body["policy"] == {"approval": "required",
                                                                                  "approvers": ["ana", "bo", "chen"]}
    assert plan_entry.body["planner"]["statement"]["plan_id"] == plan.plan_id
    with lake.session() as session:
        bo = session.person(lake.tokens["bo"])
        entry = session.approve(plan, bo)
        assert entry.kind is EntryKind.APPROVAL and entry.plan_id == plan.plan_id and entry.request_ids == ("r1",)
        assert entry.body["approved_by"] == "bo" and entry.body["planned_by"] == "ana"
        assert entry.body["approver"]["public_key"] == bo.public_key
        assert session.approve(plan, bo).seq == entry.seq  # once per approver
        state = approval_state(session.audit(), plan.plan_id, lake.workspace.config.approvers, session._registrar())
        assert (state.planned_by, state.approved_by) == ("ana", "bo")
    # Another plan (another subject): the first approval does not carry over.
    other = lake.plan("ana", subject("8000000002", "r2"))
    with lake.session() as session, pytest.raises(NeedsApprovalError):
        session.execute(other, by=session.person(lake.tokens["ana"]))


def test_a_typed_name_is_no_identity_at_any_door(lake: Lake, monkeypatch) -> None:
    monkeypatch.setenv("USER", "chen")
    monkeypatch.setenv("LOGNAME", "chen")
    with lake.session() as session:
        with pytest.raises(IdentityRefusedError, match="nobody proved who plans"):  # no token: not the OS account either
            session.plan(["crm.users.user_id"], [subject()], keep=True)
        with pytest.raises(IdentityRefusedError, match=r"a name \('bob'\) is not a proof of who plans"):
            session.plan(["crm.users.user_id"], [subject()], keep=True, by="bob")
    assert lake.entries(EntryKind.PLAN) == []  # nothing recorded
    plan = lake.plan("ana")
    with lake.session() as session:
        with pytest.raises(IdentityRefusedError, match=r"a name \('bo'\) is not a proof of who approves"):
            session.approve(plan, "bo")
        with pytest.raises(IdentityRefusedError, match="no person's of this workspace"):
            session.person("ptc.000000000000.forged")
    assert lake.entries(EntryKind.APPROVAL) == []


def test_the_planner_and_a_non_approver_are_refused(lake: Lake) -> None:
    plan = lake.plan("ana")
    with lake.session() as session:
        with pytest.raises(ApprovalRefused, match=r"ana planned .*: a plan is approved by a second person \(who may: bo, chen\)"):
            session.approve(plan, session.person(lake.tokens["ana"]))
        with pytest.raises(ApprovalRefused, match="streaming-team is not listed under approvers"):
            session.approve(plan, session.person(lake.tokens["streaming-team"]))
    assert lake.entries(EntryKind.APPROVAL) == []


def test_an_entry_written_with_the_audit_key_alone_counts_for_nobody(lake: Lake) -> None:
    plan = lake.plan("ana")
    other = lake.plan("ana", subject("8000000002", "r2"))
    with lake.session() as session:
        approval = session.approve(other, session.person(lake.tokens["bo"]))  # a real approval of another plan
        log = session.audit()
        subjects = [("r1", "7000000001")]
        # Forged with the audit key: a name, no signature; and the other plan's signed approval moved here.
        log.append(EntryKind.APPROVAL, plan.plan_id, subjects, {"plan_id": plan.plan_id, "approved_by": "bo",
                                                                "planned_by": "ana", "approved_at": "2026-11-21T00:00:00Z"})
        log.append(EntryKind.APPROVAL, plan.plan_id, subjects, {**approval.body, "plan_id": plan.plan_id})
        registry = Registry(log.entries(kinds=(EntryKind.PERSON,)), session._registrar())
        assert [signer(e, registry) for e in log.entries(plan_id=plan.plan_id, kinds=(EntryKind.APPROVAL,))] == [None, None]
        with pytest.raises(NeedsApprovalError):
            session.execute(plan, by=session.person(lake.tokens["ana"]))
        checked = session.check_audit()
    assert not checked.ok and "the signed statement is not this approval's" in str(checked.problem)


def test_a_revoked_or_replaced_credential_proves_nothing(lake: Lake) -> None:
    plan = lake.plan("ana")
    with lake.session() as session:
        assert session.revoke_person("bo") is not None
        with pytest.raises(IdentityRefusedError):
            session.person(lake.tokens["bo"])
        new = session.add_person("chen").token  # chen's old token is replaced
        with pytest.raises(IdentityRefusedError):
            session.person(lake.tokens["chen"])
        assert session.approve(plan, session.person(new)).body["approved_by"] == "chen"
    revocations = [e for e in lake.entries(EntryKind.PERSON) if e.body["change"] in ("revoked", "replaced")]
    assert [(e.body["name"], e.body["change"]) for e in revocations] == [("bo", "revoked"), ("chen", "replaced")]


def test_a_policy_switched_off_after_planning_does_not_run_the_plan(lake: Lake) -> None:
    plan = lake.plan("ana")
    text = (lake.workspace.root / "piitracer.yaml").read_text().replace("approval: required", "approval: none")
    (lake.workspace.root / "piitracer.yaml").write_text(text)
    relaxed = piitracer.load_workspace(lake.workspace.root)
    before = len(lake.entries())
    with open_session(relaxed, lake.keys) as session, pytest.raises(PolicyChanged) as refused:
        session.execute(plan)
    assert "was made under policy.approval required" in str(refused.value) and refused.value.exit_code == 2
    assert len(lake.entries()) == before


def test_without_the_policy_no_approval_is_asked_and_the_planner_may_be_unproven(tmp_path: Path) -> None:
    lake = Lake(tmp_path, approval="none")
    plan = lake.plan(by=None)
    (entry,) = lake.entries(EntryKind.PLAN)
    assert "planned_by" not in entry.body and entry.body["operator"]  # the OS account, for information only
    with lake.session() as session:
        assert not approval_state(session.audit(), plan.plan_id, lake.workspace.config.approvers).approved


def test_a_name_has_one_role(tmp_path: Path) -> None:
    from piitracer.workspace.model import WorkspaceError

    with pytest.raises(WorkspaceError, match="listed under both owners and approvers"):
        small_lake(tmp_path / "ws", approvers=("streaming-team",))


def test_the_cli_asks_each_person_for_their_own_token(lake: Lake, tmp_path: Path) -> None:
    audit_key, master = tmp_path / "audit.key", tmp_path / "keys" / "master.key"
    audit_key.write_text(AUDIT_KEY + "\n")
    audit_key.chmod(0o600)
    keys = ["--audit-key-file", str(audit_key), "--master-key-file", str(master), "--signing-key-file",
            str(lake.keys.signing_key_file)]
    root = ["--workspace", str(lake.workspace.root)]
    tokens = {name: tmp_path / f"{name}.token" for name in ("ana", "bo")}
    for name, path in tokens.items():
        path.write_text(lake.tokens[name])
    runner = CliRunner(env={"PIITRACER_TOKEN": None, "PIITRACER_CONSOLE_TOKEN": None})
    plan_args = [*root, "plan", "--source", "crm.users.user_id", "--subject", "7000000001", "--request-id", "r1", "-o",
                 str(tmp_path / "plan.json"), *keys]
    # alice types bob's name: refused without bob's token; with her own, it is hers, not bob's.
    typed = runner.invoke(cli, [*plan_args, "--by", "bo"])
    assert typed.exit_code == 2 and "a name proves nothing" in typed.output and not (tmp_path / "plan.json").exists()
    borrowed = runner.invoke(cli, [*plan_args, "--by", "bo", "--token-file", str(tokens["ana"])])
    assert borrowed.exit_code == 2 and "the token given is ana's, not bo's" in borrowed.output
    nobody = runner.invoke(cli, plan_args)
    assert nobody.exit_code == 2 and "nobody proved who plans" in nobody.output
    done = runner.invoke(cli, [*plan_args, "--token-file", str(tokens["ana"])])
    assert done.exit_code == 0, done.output
    refused = runner.invoke(cli, [*root, "execute", str(tmp_path / "plan.json"), "--token-file", str(tokens["ana"]), *keys])
    assert refused.exit_code == 2 and "Traceback" not in refused.output and "who may approve: bo, chen" in refused.output
    own = runner.invoke(cli, [*root, "approve", str(tmp_path / "plan.json"), "--token-file", str(tokens["ana"]), *keys])
    assert own.exit_code == 2 and "ana planned" in own.output
    as_bo = runner.invoke(cli, [*root, "approve", str(tmp_path / "plan.json"), "--by", "bo", "--token-file",
                                str(tokens["ana"]), *keys])
    assert as_bo.exit_code == 2 and "not bo's" in as_bo.output
    approved = runner.invoke(cli, [*root, "approve", "r1", "--token-file", str(tokens["bo"]), "--output", "json", *keys])
    assert approved.exit_code == 0, approved.output
    assert '"approved_by": "bo"' in approved.output and '"planned_by": "ana"' in approved.output


def test_an_approved_plan_edited_afterwards_is_no_approved_plan(lake: Lake, tmp_path: Path) -> None:
    import json as jsonlib

    from piitracer.api.plan import plan_file_text

    plan = lake.plan("ana")
    with lake.session() as session:
        session.approve(plan, session.person(lake.tokens["bo"]))
        text = plan_file_text(plan, session.requests().cipher(["r1"]))
    edited = jsonlib.loads(text)
    edited["datasets"][0]["reason"] += " (edited after approval)"
    (tmp_path / "edited.json").write_text(jsonlib.dumps(edited))
    before = len(lake.entries())
    with lake.session() as session, pytest.raises(PiitracerError) as refused:
        session.execute(tmp_path / "edited.json", by=session.person(lake.tokens["ana"]))
    assert refused.value.exit_code == 2 and "edited after planning" in str(refused.value) and len(lake.entries()) == before
