"""The CLI on the fixture workspace: lineage stats/show and plan, their outputs and exit codes."""

from __future__ import annotations

import json
import stat
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
from click.testing import CliRunner

from piitracer.cli.main import cli
from paths import REPO

FIXTURES = str(REPO / "lineage_fixtures")
REACHED_FROM_USER_ID = {
    "prod.payments", "prod.payments_enriched", "analytics.customer_txn", "analytics.user_hashes",
    "analytics.daily_revenue", "analytics.user_monthly_spend", "analytics.v_recent_payments",
    "analytics.user_risk", "analytics.repeat_merchants", "analytics.last_payments", "ml.payment_features",
    "finance.settlements", "dev.payments_shallow", "dev.payments_deep", "dev.customer_txn_deep",
    "archive.payments_weekly", "stream.payments_cdc",
}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--workspace", FIXTURES, *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_stats_exit_zero_and_no_problems() -> None:
    code, out, _ = run("lineage", "stats", "--output", "json")
    stats = json.loads(out)
    assert code == 0
    assert stats["ingest_problems"] == 0 and stats["problems"] == []
    assert stats["datasets"] == 22 and stats["datasets_not_in_catalog"] == []  # 21 tables and the DR replica
    code, text, _ = run("lineage", "stats")
    assert code == 0 and "ingest problems" in text


def test_show_svg_names_every_table_reached(tmp_path: Path) -> None:
    target = tmp_path / "x.svg"
    code, _, _ = run("lineage", "show", "--from", "prod.payments.user_id", "--format", "svg", "-o", str(target))
    assert code == 0
    root = ElementTree.parse(target).getroot()
    assert root.tag.endswith("svg")
    texts = {node.text for node in root.iter() if node.tag.endswith("text") and node.text}
    missing = REACHED_FROM_USER_ID - texts
    assert not missing, f"datasets missing from the SVG: {missing}"
    assert "prod.merchants" not in texts  # not reached from the user id


def test_show_json_prints_nodes_and_typed_edges() -> None:
    code, out, _ = run("lineage", "show", "--from", "prod.payments.user_id", "--format", "json")
    graph = json.loads(out)
    assert code == 0
    assert {d["id"] for d in graph["datasets"]} >= REACHED_FROM_USER_ID
    edges = {(e["source"]["dataset"], e["source"]["column"], e["target_dataset"], e["target_column"], e["kind"], e["subtype"])
             for e in graph["column_edges"]}
    assert ("prod.payments", "user_id", "prod.payments_enriched", "customer_id", "DIRECT", "IDENTITY") in edges
    assert ("prod.payments", "user_id", "analytics.repeat_merchants", None, "INDIRECT", "JOIN") in edges


def test_show_dot_to_stdout_and_unknown_start() -> None:
    code, out, _ = run("lineage", "show", "--from", "prod.payments")
    assert code == 0 and out.startswith("digraph lineage")
    code, _, err = run("lineage", "show", "--from", "prod.payments.nope")
    assert code == 2 and "has no column 'nope'" in err


def test_bad_workspace_is_exit_2_with_the_file(tmp_path: Path) -> None:
    (tmp_path / "piitracer.yaml").write_text("policy:\n  deadline: [1]\n")
    result = CliRunner().invoke(cli, ["--workspace", str(tmp_path), "lineage", "stats"])
    assert result.exit_code == 2
    assert "piitracer.yaml:2: policy.deadline" in result.stderr


PLAN_ARGS = ("plan", "--source", "prod.payments.user_id", "--received-at", "2026-11-20T09:00:00Z")


def test_plan_writes_a_private_file_and_text_hides_values(tmp_path: Path) -> None:
    import shutil

    import piitracer
    from piitracer.api import load_plan, request_store

    workspace = tmp_path / "ws"
    shutil.copytree(FIXTURES, workspace)  # -o queues the request in the workspace's request store
    target = tmp_path / "plan.json"
    result = CliRunner(env={"PIITRACER_AUDIT_KEY": "cli-test-audit-key-0123456789"}).invoke(
        cli, ["--workspace", str(workspace), *PLAN_ARGS, "--subject", "8841302", "--request-id", "dsr-1", "-o", str(target)],
        catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    plan = json.loads(target.read_text())
    assert plan["subjects"][0]["value"].startswith("enc:v1:") and "8841302" not in target.read_text()
    assert "8841302" not in result.stdout and "dsr-1" in result.stdout
    with request_store(piitracer.load_workspace(workspace)) as store:  # the master key opens it
        assert load_plan(target, store.cipher).subjects[0].value == "8841302"
        assert store.get("dsr-1").state.value == "planned"


def test_plan_from_a_requests_file(tmp_path: Path) -> None:
    batch = tmp_path / "batch.csv"
    batch.write_text("value,request_id,received_at\n11,r-1,2026-11-19T10:00:00Z\n12,r-2,\n")
    code, out, _ = run(*PLAN_ARGS, "--requests", str(batch), "--output", "json")
    plan = json.loads(out)
    assert code == 0
    # Printed for a terminal or a pipe: the values redacted (-o writes them, encrypted).
    assert [(s["value"], s["request_id"]) for s in plan["subjects"]] == [
        ("<redacted subject #1>", "r-1"), ("<redacted subject #2>", "r-2")]
    assert plan["deadline_at"].startswith("2026-12-19T10:00:00")  # from the earliest request


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--source", "prod.payments.nope", "--subject", "1"), "has no column 'nope'"),
        (("--source", "prod.merchants.merchant_id", "--subject", "1"), None),
        (("--source", "nowhere.t.c", "--subject", "1"), "neither a dataset nor a dataset.column"),
        (("--source", "prod.payments.user_id", "--subject", " "), "must not be empty"),
        (("--source", "prod.payments", "--subject", "1"), "expected DATASET.COLUMN"),
    ],
)
def test_plan_errors_exit_2(args: tuple[str, ...], message: str | None) -> None:
    code, _, err = run("plan", *args)
    if message is None:  # a catalogued source without identifiers is still plannable
        assert code == 0
    else:
        assert code == 2 and message in err


def test_bad_request_file_names_the_line(tmp_path: Path) -> None:
    batch = tmp_path / "batch.jsonl"
    batch.write_text('{"value": "1"}\n{"value": ""}\n')
    code, _, err = run(*PLAN_ARGS, "--requests", str(batch))
    assert code == 2 and "batch.jsonl:2: value: required" in err


def test_plan_schema_is_json_schema() -> None:
    code, out, _ = run("plan", "--schema")
    schema = json.loads(out)
    assert code == 0 and "schema_version" in schema["properties"] and "Step" in schema["$defs"]
