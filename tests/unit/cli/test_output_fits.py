"""Terminal output that fits (issue 40 point 1): `plan`, `verify` and `requests` print one line per
dataset or request at 80 and at 120 columns — a cell cropped with `…`, never a column folded onto
more lines — and the demo plan (the fixture workspace, subject 8841302) is under 60 lines at 80
columns (it was 748: the datasets table's `rule` column folded one letter a line). `--wide` prints
every column, each row whole on one line; piped output without $COLUMNS has one width, whatever the
rows hold; JSON is unchanged.

`plan` runs as a person runs it (a new process, COLUMNS set: rich's console width); `verify` and
the request board are rendered by the same functions at a console of each width, from a report and
requests made for the purpose (a verification needs a lakehouse)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from rich.console import Console

from piitracer.model.plan import DeletionPlan
from piitracer.model.requests import ErasureRequest, RequestState
from piitracer.model.verification import DatasetVerification, ErasureState, Finding, VerificationReport
from paths import DATA, REPO

EXPECTED = DATA / "expected" / "fixture_plan_8841302.json"
PLAN = ("plan", "--source", "prod.payments.user_id", "--subject", "8841302", "--request-id", "dsr-2026-0042",
        "--received-at", "2026-11-20T09:00:00Z")
NOW = datetime(2026, 12, 1, 9, tzinfo=timezone.utc)


def plan_cli(*args: str, columns: int | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    done = subprocess.run([sys.executable, "-m", "piitracer.cli.main", "-w", str(REPO / "lineage_fixtures"), *PLAN, *args],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    return done


def body_rows(text: str) -> list[list[str]]:
    """The cells of each body row of the tables in ``text`` (rows drawn with │)."""
    return [[cell.strip() for cell in line.strip().strip("│").split("│")] for line in text.splitlines()
            if line.startswith("│")]


def assert_fits(text: str, width: int, names: list[str]) -> None:
    """Every line within ``width``; one body row per name, in order, whose first cell is the name
    (whole, or cropped with '…'), and no cell of a row empty where its column's header is not (a
    folded row continues on lines whose first cell is empty)."""
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width, max(lines, key=len)
    rows = body_rows(text)
    assert len(rows) == len(names), f"{len(rows)} rows for {len(names)} names:\n{text}"
    for cells, name in zip(rows, names):
        shown = cells[0]
        assert shown == name or (shown.endswith("…") and name.startswith(shown[:-1]) and len(shown) >= 8), (shown, name)
    widths = {len(line) for line in lines if line.startswith("│")}
    assert len(widths) == 1  # one table, every row the same width: no cell pushed a row out
    assert all(line.rstrip().endswith("│") for line in lines if line.startswith("│"))  # not cut at the edge


def assert_every_column_accounted_for(text: str, headers: list[str]) -> None:
    """Each column is in the table's header or named as given up ('--wide adds: ...')."""
    header = next(line for line in text.splitlines() if line.startswith("┃"))
    shown = [cell.strip() for cell in header.strip("┃").split("┃")]
    dropped = next((line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("--wide adds: ")), "")
    assert sorted(shown + [d for d in dropped.split(", ") if d]) == sorted(headers), text


def rendered(renderable, width: int) -> str:
    out = io.StringIO()
    Console(file=out, width=width, markup=False, color_system=None).print(renderable)
    return out.getvalue()


@pytest.fixture(scope="module")
def plan_names() -> list[str]:
    return [d.dataset for d in DeletionPlan.model_validate_json(EXPECTED.read_text()).datasets]


@pytest.mark.parametrize("columns", [80, 120])
def test_plan_is_one_line_per_dataset_at_80_and_120_columns(columns: int, plan_names: list[str]) -> None:
    text = plan_cli(columns=columns).stdout
    assert_fits(text, columns, plan_names)
    assert_every_column_accounted_for(text, ["dataset", "status", "key column", "format", "deadline", "steps"])
    if columns == 80:
        assert len(text.splitlines()) < 60
    header = next(line for line in text.splitlines() if line.startswith("┃"))
    assert "dataset" in header and "status" in header
    assert "65 steps in 21 datasets" in text


def test_plan_wide_has_every_column_and_every_step_whole_on_one_line(plan_names: list[str]) -> None:
    text = plan_cli("--wide", columns=80).stdout  # --wide ignores the width: every row whole
    rows = body_rows(text)
    assert len(rows) == 65 + len(plan_names) and not [r for r in rows if r[0] == ""]
    assert not [r for r in rows if any(cell.endswith("…") for cell in r)]
    for header in ("key column", "values", "after", "note", "rule", "deadline"):
        assert header in text


def test_piped_plan_without_columns_has_one_width_whatever_the_rows(plan_names: list[str]) -> None:
    text = plan_cli(columns=None).stdout
    assert_fits(text, 120, plan_names)
    assert max(len(line) for line in text.splitlines()) <= 120  # it was 457 columns


def test_plan_json_is_unchanged_by_the_width() -> None:
    assert plan_cli("--output", "json", columns=80).stdout == plan_cli("--output", "json", columns=None).stdout
    assert json.loads(plan_cli("--output", "json", columns=40).stdout)["plan_id"]


def report(names: list[str]) -> VerificationReport:
    """A verification of the fixture plan's datasets with every state, long reasons and notes."""
    states = list(ErasureState)
    datasets = []
    for number, name in enumerate(names):
        state = states[number % len(states)]
        datasets.append(DatasetVerification(
            dataset=name, state=state, files_scanned=1234 * number, snapshots_checked=number,
            findings=(Finding(file="data/part-00000.parquet", where="user_id", value_set="prod.payments.user_id",
                              kind="data"),) if state is ErasureState.FOUND else (),
            pending_until="step s014 expire_snapshots removes the last pre-delete snapshot on 2026-12-20T09:00:00+00:00"
            if state is ErasureState.PENDING else None,
            reason="a person's step: the owner attests it once the Kafka topic's retention has passed and "
                   "compaction has run" if state is ErasureState.AWAITING_ATTESTATION else None,
            notes=("3 files decoded only as raw bytes (unknown format)",) if number % 3 == 0 else ()))
    return VerificationReport(plan_id="8dc35899ee8d991f" * 4, checked_at=NOW, datasets=tuple(datasets))


@pytest.mark.parametrize("columns", [80, 120])
def test_verify_is_one_line_per_dataset(columns: int, plan_names: list[str]) -> None:
    from piitracer.cli.terminal import verification_compact

    text = rendered(verification_compact(report(plan_names)), columns)
    assert_fits(text, columns, plan_names)
    assert_every_column_accounted_for(text, ["dataset", "state", "files", "snapshots", "findings",
                                             "pending until / reason"])
    assert "awaiting attestation" in text  # a state is never cropped
    assert len(text.splitlines()) < 60


@pytest.mark.parametrize("columns", [80, 120])
def test_requests_is_one_line_per_request(columns: int) -> None:
    from piitracer.cli.terminal import board_compact

    shown = [ErasureRequest(request_id=f"dsr-2026-{n:04d}-{'x' * (n % 7)}", received_at=NOW - timedelta(days=40 - n),
                            deadline_at=NOW + timedelta(days=n - 10), sources=("prod.payments.user_id",), subjects=n,
                            state=list(RequestState)[n % len(RequestState)], plan_id=None,
                            last_action=f"verified by piitracer verify after run {n} of plan 8dc35899ee8d991f",
                            last_action_at=NOW) for n in range(1, 30)]
    text = rendered(board_compact(shown, NOW), columns)
    assert_fits(text, columns, [r.request_id for r in shown])
    assert_every_column_accounted_for(text, ["request", "received", "deadline", "days left", "subjects", "state",
                                             "last action"])
    header = next(line for line in text.splitlines() if line.startswith("┃"))
    assert "state" in header and "request" in header
    assert "OVERDUE" in text or columns == 80  # days left is given up last but one
