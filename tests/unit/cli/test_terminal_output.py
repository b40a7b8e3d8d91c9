"""What a person sees of the CLI's text output (issue 34 point 5, issue 32 point 3): a name with
brackets — a dbt node id such as ``[model.shop.orders]`` — prints intact in ``lineage stats`` and
in the plan's tables (rich used to take it for a style tag and drop it), and `plan --wide` piped to
a file is plain and complete: every table row on one line, nothing folded onto a second line or
cut (the default fits a width: tests/unit/cli/test_output_fits.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cli_process import ROOT, run_cli

KEY = "terminal-output-audit-key-0123456789"
# An OpenLineage event writing to a Kafka topic named like a dbt node: the dataset id keeps the brackets.
BRACKETED = "kafka://broker.internal:9092/[model.shop.orders]"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("brackets") / "ws"
    shutil.copytree(ROOT / "lineage_fixtures", folder)
    events = json.loads((folder / "events" / "stream_payments_cdc.json").read_text())
    for event in events:
        event["job"]["name"] = "cdc.payments_to_dbt_topic"
        event["run"]["runId"] = "0190f4b1-0000-7000-8000-0000000000b1"
        for output in event["outputs"]:
            output["name"] = "[model.shop.orders]"
    (folder / "events" / "bracketed_topic.json").write_text(json.dumps(events))
    return folder


def table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("│")]


def test_lineage_stats_prints_a_bracketed_name_intact(workspace: Path) -> None:
    done = run_cli(workspace, KEY, "lineage", "stats")
    assert done.returncode == 0, done.stderr
    assert f"datasets in lineage but not in the catalog: {BRACKETED}" in done.stdout, done.stdout


def test_the_plan_tables_print_a_bracketed_name_intact(workspace: Path) -> None:
    done = run_cli(workspace, KEY, "plan", "--source", "prod.payments.user_id", "--subject", "8841302", "--wide")
    assert done.returncode == 0, done.stderr
    rows = [row for row in table_rows(done.stdout) if BRACKETED in row]
    assert len(rows) == 2, done.stdout  # its step in the steps table, its decision in the datasets table
    assert any("manual_review (blocking)" in row for row in rows)
    assert not [row for row in table_rows(done.stdout) if "kafka://broker.internal:9092/ " in row]
    # The default (issue 40): one line per dataset, the name as intact.
    done = run_cli(workspace, KEY, "plan", "--source", "prod.payments.user_id", "--subject", "8841302")
    assert len([row for row in table_rows(done.stdout) if BRACKETED in row]) == 1, done.stdout


def test_piped_tables_are_complete_rows_one_line_each(workspace: Path) -> None:
    # --wide: every column (issue 40 made the default one line per dataset, fitted to the width).
    done = run_cli(workspace, KEY, "plan", "--source", "prod.payments.user_id", "--subject", "8841302", "--wide")
    assert done.returncode == 0, done.stderr
    rows = table_rows(done.stdout)
    # A row folded onto more lines continues with an empty first cell; a cut one ends in an ellipsis.
    continued = [row for row in rows if row.strip("│").split("│")[0].strip() == ""]
    assert continued == [] and not [row for row in rows if "…" in row], "\n".join(continued[:3])
    steps = [row for row in rows if row.split("│")[2].strip().startswith("s0")]
    assert len(steps) > 50  # every step of the plan, each whole on its line: number, id, dataset, action, reason
    assert all(row.rstrip().endswith("│") and row.count("│") == rows[0].count("│") for row in steps)
