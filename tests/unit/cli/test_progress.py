"""Progress on the longest work (issue 40 point 3): the use cases report it — verify per file
decoded and per dataset checked, classify per table sampled and per table classified, a batch's
estimate per step — to a callback (piitracer.model.progress), and the CLI draws it as rich bars on
stderr only when stderr is a terminal (a pipe or a CI log gets none).

On real files: an Iceberg lakehouse in pyiceberg's sql catalog (no Spark), and Parquet files."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner
from iceberg_catalog_lakehouse import LINEAGE_SQL, SUBJECT, SUBJECT_PAN, build, catalog_environment
from pyiceberg.catalog.sql import SqlCatalog
from rich.console import Console

import piitracer
from piitracer.api import dataset_locations, plan_erasure, workspace_store
from piitracer.cli.main import cli
from piitracer.model.plan import Subject
from piitracer.verify import verify_datasets
from piitracer.verify.verifier import sets_for


class Heard:
    """Every report a use case made, in order."""

    def __init__(self) -> None:
        self.reports: list[tuple[str, int, int]] = []

    def __call__(self, what: str, done: int, total: int) -> None:
        self.reports.append((what, done, total))

    def phase(self, what: str) -> list[tuple[int, int]]:
        return [(done, total) for said, done, total in self.reports if said == what]


def counted_through(steps: list[tuple[int, int]]) -> bool:
    """0, 1, ... total, one step at a time, against one total."""
    return bool(steps) and [done for done, _ in steps] == list(range(steps[-1][1] + 1)) and len({t for _, t in steps}) == 1


@pytest.fixture()
def iceberg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for key in list(os.environ):
        if key.upper().startswith("PYICEBERG_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))
    build(SqlCatalog("prod", uri=f"sqlite:///{tmp_path}/prod.db", warehouse=f"file://{tmp_path}/lake"))
    for key, value in catalog_environment(f"sqlite:///{tmp_path}/prod.db", f"file://{tmp_path}/lake").items():
        monkeypatch.setenv(key, value)
    (tmp_path / "sql").mkdir()
    (tmp_path / "sql" / "pipeline.sql").write_text(LINEAGE_SQL)
    config = {"version": 1, "lineage": {"sql": [{"path": "sql", "dialect": "spark"}]}, "warehouse_roots": ["lake"],
              "catalog": {"fintech.payments": {"format": "iceberg", "table": "prod.fintech.payments",
                                               "location": "lake/fintech/payments", "columns": ["user_id", "pan", "amount", "dt"],
                                               "identifiers": ["user_id", "pan"], "subject_key": "user_id"},
                          "fintech.payments_daily": {"format": "iceberg", "table": "prod.fintech.payments_daily",
                                                     "columns": ["user_id", "total"]}}}
    (tmp_path / "piitracer.yaml").write_text(yaml.safe_dump(config))
    workspace = piitracer.load_workspace(tmp_path)
    subjects = [Subject(value=str(SUBJECT), request_id="r-1", received_at="2026-11-20T09:00:00Z")]
    return workspace, plan_erasure(workspace, ["prod.fintech.payments.user_id"], subjects)


def test_verify_reports_each_file_decoded_then_each_dataset_checked(iceberg) -> None:
    workspace, plan = iceberg
    values = {name: [SUBJECT_PAN] if name.endswith(".pan") else [SUBJECT]
              for decision in plan.datasets for name in sets_for(plan, decision)}
    heard = Heard()
    report = verify_datasets(plan, workspace.config.catalog, dataset_locations(workspace), values,
                             store=workspace_store(workspace), progress=heard)
    decoding, checking = heard.phase("decoding files"), heard.phase("checking datasets")
    assert counted_through(decoding) and decoding[-1][1] >= sum(d.files_scanned for d in report.datasets) > 0
    assert counted_through(checking) and checking[-1][1] == len(plan.datasets) == 2
    assert [what for what, _, _ in heard.reports].index("checking datasets") > len(decoding) - 1  # files first


def test_a_batch_estimate_reports_each_step(iceberg) -> None:
    from piitracer.api.requests import estimate_plan_cost

    workspace, plan = iceberg
    heard = Heard()
    estimate = estimate_plan_cost(workspace, plan, heard)
    assert counted_through(heard.phase("estimating steps")) and heard.reports[-1][2] == len(estimate.steps) > 0


def test_classify_reports_each_table_sampled_and_classified(tmp_path: Path) -> None:
    from piitracer.api import classify_catalog

    for name in ("crm/people", "crm/orders", "shop/visits"):
        folder = tmp_path / "parquet" / name
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"email": [f"p{i}@example.net" for i in range(30)], "qty": list(range(30))}),
                       folder / "part-0.parquet")
    (tmp_path / "piitracer.yaml").write_text(yaml.safe_dump({"version": 1}))
    heard = Heard()
    result = classify_catalog(piitracer.load_workspace(tmp_path), 10, heard)
    assert counted_through(heard.phase("sampling tables")) and heard.phase("sampling tables")[-1][1] == 3
    assert counted_through(heard.phase("classifying columns")) and heard.phase("classifying columns")[-1][1] == 3
    assert {v.kind for v in result.verdicts if v.shown == "email"} == {"email"}


def test_the_cli_draws_bars_on_a_terminal_only() -> None:
    from piitracer.cli.terminal import progress_bars

    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=100)
    with progress_bars(terminal) as progress:
        assert progress is not None
        for done in range(4):
            progress("decoding files", done, 3)
    assert "decoding files" in screen.getvalue()
    with progress_bars(Console(file=io.StringIO(), force_terminal=False)) as progress:
        assert progress is None  # piped: nothing drawn, nothing reported


def test_a_piped_classify_prints_no_bar(tmp_path: Path) -> None:
    folder = tmp_path / "parquet" / "crm" / "people"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"email": [f"p{i}@example.net" for i in range(30)]}), folder / "part-0.parquet")
    (tmp_path / "piitracer.yaml").write_text(yaml.safe_dump({"version": 1}))
    result = CliRunner().invoke(cli, ["-w", str(tmp_path), "catalog", "classify"])
    assert result.exit_code == 0, result.output
    assert "sampling tables" not in result.stderr and "e-mail address" in result.stdout
