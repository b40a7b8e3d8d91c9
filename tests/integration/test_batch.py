"""Batch windows (issue 21.5): `batch plan` plans exactly the queued requests due within the
window, flags the ones that cannot wait for the next window, estimates from table metadata (the
byte estimate within 20% of what execute then rewrites, on a real Delta table and a real
archive of Parquet exports), and refuses a batch over its budget unless told otherwise."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import yaml
from click.testing import CliRunner
from delta_parquet_lakehouse import SUBJECTS, build, workspace

from piitracer.cli.main import cli

KEY = "batch-test-audit-key-0123456789abcdef"
ENV = {"PIITRACER_AUDIT_KEY": KEY, "PIITRACER_AUDIT_KEY_FILE": None}


def run(root: Path, *args: str):
    result = CliRunner().invoke(cli, ["--workspace", str(root), *args], env=ENV)
    return result.exit_code, result.stdout, result.stderr


def queue(root: Path, request_id: str, value: int, due_in_days: int) -> None:
    """A request received so that its 30-day deadline falls ``due_in_days`` from now."""
    received = (datetime.now(timezone.utc) - timedelta(days=30 - due_in_days)).strftime("%Y-%m-%dT%H:%M:%S%z")
    code, _, err = run(root, "requests", "add", "--source", "crm.people.user_id", "--subject", str(value),
                       "--request-id", request_id, "--received-at", received)
    assert code == 0, err


def states(root: Path) -> dict[str, str]:
    code, out, _ = run(root, "requests", "--output", "json")
    return {r["request_id"]: r["state"] for r in json.loads(out)}


def with_pricing(root: Path) -> None:
    config = yaml.safe_load((root / "piitracer.yaml").read_text())
    config["pricing"] = {"currency": "INR", "per_gb_rewritten": 50000.0, "archive_per_object_deleted": 2.0}
    config["policy"] = {"batch_every": "7d"}
    (root / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def test_batch_plan_takes_the_due_requests_estimates_and_keeps_to_its_budget(tmp_path: Path, warehouse: Path) -> None:
    locations = build(tmp_path / "lake")
    root = workspace(tmp_path, warehouse, locations)
    with_pricing(root)
    queue(root, "r-soon", SUBJECTS[0], due_in_days=3)
    queue(root, "r-mid", SUBJECTS[1], due_in_days=6)   # outside a 5-day window, but before the next one (7d)
    queue(root, "r-late", SUBJECTS[2], due_in_days=20)

    code, out, err = run(root, "batch", "plan", "--due-within", "5", "-o", str(tmp_path / "soon.json"), "--output", "json")
    assert code == 0, err
    batch = json.loads(out)
    assert batch["requests"] == ["r-soon"]
    assert [r["request_id"] for r in batch["cannot_wait"]] == ["r-mid"]
    assert states(root) == {"r-soon": "planned", "r-mid": "queued", "r-late": "queued"}
    steps = {(s["dataset"], s["action"]): s for s in batch["estimate"]["steps"]}
    source = steps[("crm.people", "delete_rows")]
    archive = steps[("archive.people_weekly", "rewrite_archive")]
    assert not source["upper_bound"] and not archive["upper_bound"]
    assert source["files"] == 1 and archive["files"] == 3  # the statistics prune the other files
    assert steps[("crm.cards", "rewrite_files")]["upper_bound"]  # keyed by PAN: resolved at run time
    assert archive["cost"] > 3 * 2.0  # per archived object, plus the bytes

    # Run it; the estimate is within 20% of the bytes the run rewrote.
    code, out, err = run(root, "execute", str(tmp_path / "soon.json"), "--no-concurrent-writers")
    assert code == 0, err + out
    from piitracer.api import journal_steps, load_workspace

    plan_id = json.loads((tmp_path / "soon.json").read_text())["plan_id"]
    # The bytes of the data files the run replaced: a Parquet rewrite's originals, and the Delta
    # files the delete tombstoned, which vacuum then removes (log cleanup removes log files, not data).
    actual: dict[str, int] = {}
    for record in journal_steps(load_workspace(root), plan_id):
        if record.action in ("rewrite_files", "rewrite_archive", "vacuum"):
            actual[record.dataset] = actual.get(record.dataset, 0) + record.bytes_removed
    for dataset, estimated in (("crm.people", source), ("archive.people_weekly", archive)):
        assert actual[dataset] > 0
        assert abs(estimated["bytes"] - actual[dataset]) <= 0.2 * actual[dataset], (dataset, estimated["bytes"], actual[dataset])

    # The report sets the estimate beside what the run removed.
    code, report, err = run(root, "audit", "report", "--request", "r-soon", "--format", "md")
    assert code == 0, err
    section = report.split("## Estimate and run", 1)[1].split("## Attestations", 1)[0]
    rows = {cells[0]: cells for cells in ([c.strip() for c in line.strip("|").split("|")]
                                          for line in section.splitlines() if line.startswith("| crm.") or line.startswith("| archive."))}
    assert rows["crm.people"][2] == f"{source['bytes']:,}" and rows["crm.people"][4] == f"{actual['crm.people']:,}"
    assert rows["crm.cards"][5] == "upper bound: values resolved at run time"

    # Over budget: exit 1 naming the top costs, nothing written, nothing moved; --over-budget OK writes it.
    over = tmp_path / "over.json"
    code, out, err = run(root, "batch", "plan", "--due-within", "7", "--budget", "1", "-o", str(over))
    assert code == 1 and "over budget" in out and "top costs" in out and not over.exists()
    assert states(root)["r-mid"] == "queued"
    code, out, err = run(root, "batch", "plan", "--due-within", "7", "--budget", "1", "--over-budget", "OK", "-o", str(over))
    assert code == 0 and over.exists(), err
    assert states(root) == {"r-soon": "executed", "r-mid": "planned", "r-late": "queued"}
    # run time from the throughput measured by the first batch's run
    code, out, _ = run(root, "batch", "plan", "--all-open", "-o", str(tmp_path / "late.json"), "--output", "json")
    late = json.loads(out)
    assert code == 0 and late["requests"] == ["r-late"] and late["estimate"]["throughput_bytes_per_second"] > 0


def test_nothing_due_and_bad_options(tmp_path: Path) -> None:
    locations = build(tmp_path / "lake")
    root = workspace(tmp_path, tmp_path / "wh", locations)
    queue(root, "r-late", SUBJECTS[2], due_in_days=20)
    code, out, _ = run(root, "batch", "plan", "--due-within", "5", "-o", str(tmp_path / "p.json"))
    assert code == 0 and "nothing planned" in out and not (tmp_path / "p.json").exists()
    code, _, err = run(root, "batch", "plan", "-o", str(tmp_path / "p.json"))
    assert code == 2 and "--due-within DAYS or --all-open" in err
