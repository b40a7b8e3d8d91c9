"""Four eyes end to end, through the CLI on real Spark (issue 50): ``policy.approval: required``,
three people, each with their own token. ana plans, bo approves, ana runs it, the stream's owner
attests its manual step, verify is complete, the request is closed and certified. Then an auditor,
with the workspace's public signing key only, runs the script of docs/use/audit.md on the
certificate: it names the planner, the approver and the owner, each signature checked against the
key the workspace registered for them; and a certificate whose approval is swapped for one the
planner signed, re-signed by a holder of the signing key, fails that script.

Before the run, every way the issue found to pass the rule alone is refused (exit 2, nothing
changed): a plan under another person's name, the planner approving their own plan, an execute
without approval, the public ``execute_plan``, another plan's approval; and (a test of its own, its
log then holds a forged entry) an approval moved from another plan and a policy switched off after
planning."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from byte_scan import find_values
from click.testing import CliRunner
from spark_lakehouse import write_workspace

import piitracer
from piitracer.cli.main import cli
from piitracer.crypto.signing import canonical_bytes, generate_signing_key, load_signing_key

from paths import REPO

AUDIT = "four-eyes-test-audit-key-0123456789"
SUBJECT = 7_000_000_001
PEOPLE = ("ana", "bo", "streaming-team")


def people_check_script() -> str:
    text = (REPO / "docs" / "use" / "audit.md").read_text()
    block = text.split("<!-- --8<-- [start:people-check] -->", 1)[1].split("<!-- --8<-- [end:people-check] -->", 1)[0]
    return re.search(r"```python\n(.*?)```", block, re.S).group(1)


@pytest.fixture()
def lake(tmp_path: Path, warehouse: Path):
    root = tmp_path / "lake"
    (root / "users").mkdir(parents=True)
    ids = [SUBJECT] + [8_000_000_000 + i for i in range(50)]
    pq.write_table(pa.table({"user_id": pa.array(ids, pa.int64())}), root / "users" / "part-0.parquet")
    catalog = {"crm.users": {"format": "parquet", "location": str(root / "users"), "columns": ["user_id"],
                             "identifiers": ["user_id"], "subject_key": "user_id"},
               "stream.cdc": {"format": "external", "owner": "streaming-team", "columns": ["user_id"]}}
    folder = write_workspace(tmp_path / "ws", warehouse, catalog, "INSERT INTO stream.cdc SELECT user_id FROM crm.users;\n")
    config = yaml.safe_load((folder / "piitracer.yaml").read_text())
    config.update(policy={"approval": "required"}, approvers=["ana", "bo"], owners=["streaming-team"])
    (folder / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    generate_signing_key(secrets / "signing.key")
    env = {"PIITRACER_AUDIT_KEY": AUDIT, "PIITRACER_SIGNING_KEY_FILE": str(secrets / "signing.key"), "PIITRACER_TOKEN": None}
    for name in PEOPLE:
        code, out = cli_run(folder, env, "owners", "add", name)
        assert code == 0, out
        (secrets / f"{name}.token").write_text(out.strip().splitlines()[-1])
    return folder, secrets, env, root


def keys_of(env: dict) -> piitracer.Keys:
    """The keys the CLI runs see: this process's environment (the master key) with the test's."""
    import os

    return piitracer.Keys.load(environ={**os.environ, **{k: v for k, v in env.items() if v is not None}})


def cli_run(folder: Path, env: dict, *args: str) -> tuple[int, str]:
    result = CliRunner(env=env).invoke(cli, ["--workspace", str(folder), *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


def test_three_people_and_an_auditor_who_checks_them_with_public_keys(lake, tmp_path: Path) -> None:
    folder, secrets, env, root = lake
    token = {name: ["--token-file", str(secrets / f"{name}.token")] for name in PEOPLE}
    plan_file, other_file = tmp_path / "plan.json", tmp_path / "other.json"
    plan_args = ["plan", "--source", "crm.users.user_id", "--subject", str(SUBJECT), "--request-id", "r1"]
    # ana cannot plan as bo, with or without bo's name.
    code, out = cli_run(folder, env, *plan_args, "-o", str(plan_file), "--by", "bo", *token["ana"])
    assert code == 2 and "the token given is ana's, not bo's" in out and not plan_file.exists()
    assert cli_run(folder, env, *plan_args, "-o", str(plan_file), *token["ana"])[0] == 0
    assert cli_run(folder, env, "plan", "--source", "crm.users.user_id", "--subject", "8000000001", "--request-id", "r2",
                   "-o", str(other_file), *token["ana"])[0] == 0
    audit_db = folder / ".piitracer" / "audit.sqlite"
    before = audit_db.read_bytes()
    # ana alone: her own approval, an execute without one, the public function: each refused, nothing changed.
    code, out = cli_run(folder, env, "approve", str(plan_file), *token["ana"])
    assert code == 2 and "ana planned" in out
    code, out = cli_run(folder, env, "execute", str(plan_file), "--no-concurrent-writers", *token["ana"])
    assert code == 2 and "needs a second person's approval" in out
    with piitracer.open(folder, keys_of(env)) as session, \
            pytest.raises(piitracer.model.errors.NeedsApprovalError):
        piitracer.execute_plan(session.workspace, plan_file, keys=session.keys,
                               by=session.person((secrets / "ana.token").read_text()))
    assert audit_db.read_bytes() == before and find_values(root / "users", [SUBJECT])
    # bo approves the other plan: that approval does not carry over to this one.
    assert cli_run(folder, env, "approve", str(other_file), *token["bo"])[0] == 0
    code, out = cli_run(folder, env, "execute", str(plan_file), "--no-concurrent-writers", *token["ana"])
    assert code == 2 and "needs a second person's approval" in out
    # The honest path: bo approves this plan, ana runs it, the owner attests, verify, close, certify.
    assert cli_run(folder, env, "approve", str(plan_file), *token["bo"])[0] == 0
    code, out = cli_run(folder, env, "execute", str(plan_file), "--no-concurrent-writers", *token["ana"])
    assert code == 0 and "incomplete: 1 step(s) awaiting attestation" in out, out
    step = next(s["id"] for s in json.loads(plan_file.read_text())["steps"] if s["action"] == "manual")
    assert cli_run(folder, env, "attest", str(plan_file), "--step", step, "--evidence", "INC-1",
                   *token["streaming-team"])[0] == 0
    assert cli_run(folder, env, "verify", str(plan_file))[0] == 0
    assert find_values(root / "users", [SUBJECT]) == []
    assert cli_run(folder, env, "requests", "close", "r1", "--now", "test")[0] == 0
    certificate = tmp_path / "certificate.json"
    code, out = cli_run(folder, env, "audit", "certificate", "--request", "r1", "-o", str(certificate))
    assert code == 0, out
    public = Path(str(secrets / "signing.key") + ".pub")
    assert cli_run(folder, env, "audit", "check-certificate", str(certificate), "--public-key", str(public))[0] == 0
    people = json.loads(certificate.read_text())["certificate"]["people"]
    assert (people["planner"]["name"], [a["name"] for a in people["approvals"]],
            [a["name"] for a in people["attestations"]], [e["name"] for e in people["executions"]]) == (
        "ana", ["bo"], ["streaming-team"], ["ana"])

    # The auditor: the docs' script, public keys only, in a new interpreter.
    script = tmp_path / "check_people.py"
    script.write_text(people_check_script())
    checked = subprocess.run([sys.executable, str(script), str(certificate), str(public)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip() == "planned by ana | approved by ['bo'] | attested by ['streaming-team']"

    # A holder of the signing key swaps the approval for one signed by the planner's key, and re-signs.
    document = json.loads(certificate.read_text())
    forged = document["certificate"]
    forged["people"]["approvals"][0] = {**forged["people"]["planner"], "name": "bo",
                                        "statement": {**forged["people"]["approvals"][0]["statement"]}}
    key = load_signing_key(secrets / "signing.key")
    document["signature"]["value"] = base64.b64encode(key.sign(canonical_bytes(forged))).decode()
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(document))
    failed = subprocess.run([sys.executable, str(script), str(tampered), str(public)], capture_output=True, text=True)
    assert failed.returncode != 0 and ("AssertionError" in failed.stderr or "InvalidSignature" in failed.stderr)
    code, out = cli_run(folder, env, "audit", "check-certificate", str(tampered), "--public-key", str(public))
    assert code != 0 and "people:" in out


def test_a_moved_approval_and_a_policy_switched_off_do_not_run_the_plan(lake, tmp_path: Path) -> None:
    folder, secrets, env, root = lake
    plan_file, other_file = tmp_path / "plan.json", tmp_path / "other.json"
    for request, value, out in (("r1", str(SUBJECT), plan_file), ("r2", "8000000001", other_file)):
        assert cli_run(folder, env, "plan", "--source", "crm.users.user_id", "--subject", value, "--request-id", request,
                       "-o", str(out), "--token-file", str(secrets / "ana.token"))[0] == 0
    assert cli_run(folder, env, "approve", str(other_file), "--token-file", str(secrets / "bo.token"))[0] == 0
    # bo's signed approval of the other plan, moved onto this one by anyone with the audit key: it counts for nobody.
    with piitracer.open(folder, keys_of(env)) as session:
        log = session.audit()
        (moved,) = [e for e in log.entries() if e.kind.value == "approval"]
        this_plan = json.loads(plan_file.read_text())["plan_id"]
        log.append(moved.kind, this_plan, [("r1", str(SUBJECT))], {**moved.body, "plan_id": this_plan})
    code, out = cli_run(folder, env, "execute", str(plan_file), "--no-concurrent-writers", "--token-file",
                        str(secrets / "ana.token"))
    assert code == 2 and "needs a second person's approval" in out
    code, out = cli_run(folder, env, "audit", "verify")
    assert code != 0 and "the signed statement is not this approval's" in out
    text = (folder / "piitracer.yaml").read_text().replace("approval: required", "approval: none")
    (folder / "piitracer.yaml").write_text(text)
    code, out = cli_run(folder, env, "execute", str(plan_file), "--no-concurrent-writers")
    assert code == 2 and "was made under policy.approval required" in out
    assert find_values(root / "users", [SUBJECT])
