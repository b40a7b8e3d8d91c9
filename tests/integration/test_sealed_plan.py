"""A plan cannot be altered into something else.

Reproduced before: an edited plan with a recomputed ``plan_id`` (a plain SHA-256 anyone can
recompute) turned an Iceberg table's ``delete_rows`` into ``rewrite_files``; execute rewrote the
Iceberg data files in place as plain Parquet and the table became unreadable, exit 0. Duplicate
step ids, a ``depends_on`` cycle, an unknown ``schema_version`` and a key column
``nonexistent; DROP TABLE x`` all passed ``--dry-run``. Now: a sealed plan whose seal does not
verify is refused; without a seal it needs ``--unsealed`` (and the audit log says so); every
structural or catalog mismatch is one clear line, exit 2, with nothing journaled or recorded and
every table untouched."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import ValidationError
from spark_lakehouse import build, checksum, new_namespace, spark_for, table_rows, workspace

import piitracer
from piitracer.api import audit_log, plan_deletion, record_plan, seal_plan, write_private
from piitracer.audit import load_audit_key
from piitracer.cli.main import cli
from piitracer.model.plan import DeletionPlan, Subject

KEY = "sealed-plan-test-key-0123456789abcdef"
SUBJECT = 7_000_000_001


@pytest.fixture(scope="module")
def lake(tmp_path_factory, warehouse: Path):
    spark = spark_for(warehouse)
    ns = new_namespace("seal")
    build(spark, warehouse, ns)
    root = tmp_path_factory.mktemp("seal")
    ws = piitracer.load_workspace(workspace(root, warehouse, ns))
    plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), [f"{ns}.src.user_id"],
                         [Subject(value=str(SUBJECT), request_id="r1", received_at="2026-11-20T09:00:00Z")])
    return ns, ws, spark, plan


def state(lake) -> dict:
    ns, ws, spark, _ = lake
    return {name: checksum(table_rows(spark, f"lake.{ns}.{name}")) for name in ("src", "cow", "clone")}


def execute(ws, plan_file: Path, *args: str, monkeypatch=None) -> tuple[int, str]:
    result = CliRunner(env={"PIITRACER_AUDIT_KEY": KEY}).invoke(
        cli, ["--workspace", str(ws.root), "execute", str(plan_file), *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


def rehash(data: dict) -> dict:
    """What an attacker does: recompute the id over the edited content with piitracer's own code
    (a plan that no longer validates cannot get an id that way: its shape is refused first)."""
    try:
        data["plan_id"] = DeletionPlan.model_validate({**data, "seal": None}).content_hash()
    except ValidationError:
        body = {k: v for k, v in data.items() if k not in ("plan_id", "seal")}
        data["plan_id"] = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return data


def written(tmp_path: Path, data: dict, name: str = "edited.json") -> Path:
    path = tmp_path / name
    write_private(path, json.dumps(data, indent=2))
    return path


def nothing_recorded(ws) -> None:
    assert not (ws.root / ".piitracer" / "journal.sqlite").exists()
    assert not (ws.root / ".piitracer" / "audit.sqlite").exists()


def test_an_iceberg_delete_turned_into_a_parquet_rewrite_is_refused(lake, tmp_path: Path) -> None:
    ns, ws, _, plan = lake
    before = state(lake)
    sealed = json.loads(seal_plan(plan, load_audit_key(KEY)).to_json())
    for step in sealed["steps"]:
        if step["dataset"] == f"{ns}.src" and step["action"] == "delete_rows":
            step["action"], step["params"] = "rewrite_files", {}
    edited = rehash(sealed) | {"seal": sealed["seal"]}  # the old seal kept: it no longer verifies
    code, out = execute(ws, written(tmp_path, edited), "--no-concurrent-writers")
    assert code == 2 and "its seal does not verify: the plan was altered after it was sealed" in out

    edited["seal"] = None  # without the seal, and the operator even accepts unsealed plans
    code, out = execute(ws, written(tmp_path, edited), "--no-concurrent-writers", "--unsealed")
    assert code == 2
    assert f"rewrite_files is not an action of a iceberg dataset ({ns}.src): the plan was altered" in out
    assert state(lake) == before  # readable and unchanged
    nothing_recorded(ws)


def edits(ns: str):
    """(name, how to edit the plan's JSON, the one line a person must see)."""

    def duplicate(d):
        d["steps"][2]["id"] = d["steps"][1]["id"]

    def cycle(d):
        d["steps"][1]["depends_on"] = [d["steps"][3]["id"]]

    def version(d):
        d["schema_version"] = "9.9"

    def key_column(d):
        for step in d["steps"]:
            if step["dataset"] == f"{ns}.cow" and step["action"] == "delete_rows":
                step["key_column"] = "nonexistent; DROP TABLE x"
        for decision in d["datasets"]:
            if decision["dataset"] == f"{ns}.cow":
                decision["key_column"] = "nonexistent; DROP TABLE x"

    def option(d):
        for step in d["steps"]:
            if step["action"] == "rewrite_data_files":
                step["params"]["options"]["delete-file-threshold"] = "1'), x => ('"

    def expression(d):
        d["resolve"][0]["computed"] = [{"name": f"{ns}.src.user_id~evil", "kind": "computed",
                                        "source": {"dataset": f"{ns}.src", "column": "user_id"},
                                        "expression": "reflect('java.lang.System', 'exit', CAST(user_id AS STRING))"}]

    def foreign(d):
        for item in d["steps"] + d["datasets"]:
            item["dataset"] = item["dataset"].replace(f"{ns}.cow", "other.cow")
        d["resolve"] = d["resolve"]

    def moved(d):
        for decision in d["datasets"]:
            if decision["dataset"] == f"{ns}.cow":
                decision["location"] = "/somewhere/else"

    return [
        ("duplicate step ids", duplicate, "appears twice"),
        ("depends_on cycle", cycle, "which comes later (a cycle or a reordered plan)"),
        ("unknown schema version", version, "plan schema_version '9.9' is not one this piitracer reads"),
        ("key column not in the table", key_column, "has no column 'nonexistent; DROP TABLE x'"),
        ("SQL through a rewrite option", option, "value must be letters, digits"),
        ("a computed key calling Java", expression, "calls REFLECT, which reaches outside the row"),
        ("a plan from another workspace", foreign, "dataset other.cow is not in this workspace's catalog"),
        ("a catalog that moved since planning", moved, "changed in the catalog since planning (location /somewhere/else ->"),
    ]


@pytest.mark.parametrize("case", range(8))
def test_every_altered_plan_is_refused_even_as_a_dry_run(lake, tmp_path: Path, case: int) -> None:
    ns, ws, _, plan = lake
    name, edit, expected = edits(ns)[case]
    data = json.loads(plan.to_json())
    edit(data)
    path = written(tmp_path, rehash(data))
    for args in (["--dry-run", "--unsealed"], ["--unsealed", "--no-concurrent-writers"]):
        code, out = execute(ws, path, *args)
        assert code == 2, (name, out)
        assert expected in out, (name, out)
        assert out.startswith("error: ") and len(out.strip().splitlines()) == 1 and "Traceback" not in out
    nothing_recorded(ws)


def test_unsealed_plans_need_unsealed_and_the_audit_log_says_so(lake, tmp_path: Path) -> None:
    ns, ws, _, plan = lake
    path = written(tmp_path, json.loads(plan.to_json()), "unsealed.json")
    code, out = execute(ws, path, "--no-concurrent-writers")
    assert code == 2 and "is not sealed" in out and "--unsealed" in out
    nothing_recorded(ws)

    code, out = execute(ws, path, "--no-concurrent-writers", "--unsealed")
    assert code == 2 and "is not recorded in this workspace's audit log" in out  # made through the API, unrecorded
    nothing_recorded(ws)
    with audit_log(ws, key=load_audit_key(KEY)) as log:  # its maker records it, as `plan -o` does
        record_plan(log, plan)
    code, out = execute(ws, path, "--no-concurrent-writers", "--unsealed")
    assert code == 0, out
    db = sqlite3.connect(ws.root / ".piitracer" / "audit.sqlite")
    bodies = [json.loads(b) for (b,) in db.execute("SELECT body FROM entries WHERE kind = 'plan'")]
    assert [(b["sealed"], b["seal_key_id"]) for b in bodies] == [(False, None)]
    _, _, spark, _ = lake
    remaining = [r[0] for r in table_rows(spark, f"lake.{ns}.src")]
    assert len(remaining) == 1504 and SUBJECT not in remaining  # the subject's 2 rows went: the run really ran


def test_the_cli_seals_a_plan_when_a_key_is_there(lake, tmp_path: Path) -> None:
    ns, ws, _, _ = lake
    out = tmp_path / "sealed.json"
    result = CliRunner(env={"PIITRACER_AUDIT_KEY": KEY}).invoke(
        cli, ["--workspace", str(ws.root), "plan", "--source", f"{ns}.src.user_id", "--subject", "8000000001", "-o", str(out)])
    assert result.exit_code == 0, result.output
    seal = json.loads(out.read_text())["seal"]
    key = load_audit_key(KEY)
    assert seal == {"key_id": key.key_id, "hmac": key.plan_seal(json.loads(out.read_text())["plan_id"])}
    other = CliRunner(env={"PIITRACER_AUDIT_KEY": "another-key-0123456789abcdef"}).invoke(
        cli, ["--workspace", str(ws.root), "execute", str(out), "--dry-run"])
    assert other.exit_code == 2 and "was sealed with another audit key" in other.output
