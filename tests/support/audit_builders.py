"""A recorded audit trail for tests: the fixture workspace copied to a temporary folder, a plan for
two requests (no Spark: ``table_states={}``), a run summary and a verification report built as plain
data, all recorded through the public API."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import piitracer
from piitracer.api import audit_log, plan_deletion, record_plan, record_run, record_verification
from piitracer.audit import AuditLog
from piitracer.model.outcome import StepOutcome
from piitracer.executor.runner import RunSummary, StepResult
from piitracer.model.plan import Action, DeletionPlan, Subject
from piitracer.model.verification import DatasetVerification, ErasureState, Finding, VerificationReport
from paths import REPO

FIXTURES = REPO / "lineage_fixtures"
KEY = "test-audit-key-0123456789abcdef"
# Long or distinctive enough that finding them by chance in hashes or counts is out of the question.
RAW_VALUES = ("88413021977", "asha.rao+dsr@example.in", "x'); DROP TABLE entries;--")
RECEIVED = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)
CHECKED = datetime(2026, 1, 9, 12, 0, tzinfo=timezone.utc)
NOT_PERFORMED = {Action.MANUAL, Action.MANUAL_REVIEW, Action.RECOMPUTE}


@dataclass
class Recorded:
    workspace: piitracer.Workspace
    graph: piitracer.LineageGraph
    plan: DeletionPlan
    log: AuditLog
    summary: RunSummary
    report: VerificationReport

    @property
    def db(self) -> Path:
        return self.workspace.root / ".piitracer" / "audit.sqlite"


def copy_workspace(tmp_path: Path, anchor: Path | None = None) -> piitracer.Workspace:
    """The fixture workspace in ``tmp_path`` (the audit log goes inside the workspace), with fake
    Iceberg and Delta metadata files so steps get metadata hashes; ``anchor``: its audit.anchor."""
    root = tmp_path / "ws"
    shutil.copytree(FIXTURES, root)
    # The raw values below are hostile strings (a leak test looks for them in every byte): declare
    # the key a string so they are plannable subject values (a bigint key refuses them).
    config = root / "piitracer.yaml"
    config.write_text(config.read_text().replace("column_types: {user_id: bigint,", "column_types: {user_id: string,")
                      + (f"\naudit:\n  anchor: {anchor}\n" if anchor else ""))
    workspace = piitracer.load_workspace(root)
    iceberg = workspace.location_of("prod.payments") / "metadata"
    iceberg.mkdir(parents=True)
    for version in (1, 2, 10):
        (iceberg / f"v{version}.metadata.json").write_text(f'{{"format-version": 2, "v": {version}}}')
    delta = workspace.location_of("analytics.customer_txn") / "_delta_log"
    delta.mkdir(parents=True)
    for version in (0, 1):
        (delta / f"{version:020d}.json").write_text(f'{{"commitInfo": {{"v": {version}}}}}')
    return workspace


def make_plan(workspace: piitracer.Workspace, graph: piitracer.LineageGraph) -> DeletionPlan:
    subjects = [Subject(value=RAW_VALUES[0], request_id="dsr-1", received_at=RECEIVED),
                Subject(value=RAW_VALUES[1], request_id="dsr-1", received_at=RECEIVED),
                Subject(value=RAW_VALUES[2], request_id="dsr-2", received_at=RECEIVED)]
    return plan_deletion(workspace, graph, ["prod.payments.user_id"], subjects, table_states={}, live_types={})


def run_summary(plan: DeletionPlan) -> RunSummary:
    """Every performed step committed (with versions and counts); manual/recompute pending."""
    results = []
    for index, step in enumerate(plan.steps):
        if step.action in NOT_PERFORMED:
            results.append(StepResult(step, "pending", message=f"to be done: {step.action.value}"))
        else:
            outcome = StepOutcome(rows_deleted=2 if step.action is Action.DELETE_ROWS else 0, files_rewritten=1,
                                  files_removed=1, bytes_removed=1000 + index,
                                  version_before=str(5000 + index), version_after=str(6000 + index))
            results.append(StepResult(step, "committed", outcome, seconds=0.5))
    return RunSummary("run-0001", plan.plan_id, "incomplete", results, 12.0)


def verification(plan: DeletionPlan, found: str | None = "risk.card_usage", attested: bool = False) -> VerificationReport:
    """Erase datasets erased (except ``found``), a person's datasets awaiting attestation (or
    ``attested``), the others needing no action."""
    results = []
    for decision in plan.datasets:
        if decision.dataset == found:
            results.append(DatasetVerification(
                dataset=decision.dataset, state=ErasureState.FOUND, files_scanned=3,
                findings=(Finding(file="part-00000.parquet", where="column pan", value_set="prod.payments.pan", kind="data"),)))
        elif decision.status.value == "erase":
            results.append(DatasetVerification(dataset=decision.dataset, state=ErasureState.ERASED, files_scanned=4, snapshots_checked=1))
        elif decision.status.value == "no_action":
            results.append(DatasetVerification(dataset=decision.dataset, state=ErasureState.NO_ACTION, reason="holds no value"))
        else:
            state = ErasureState.ATTESTED if attested else ErasureState.AWAITING_ATTESTATION
            results.append(DatasetVerification(dataset=decision.dataset, state=state, reason="a person's step"))
    return VerificationReport(plan_id=plan.plan_id, checked_at=CHECKED, datasets=tuple(results))


def record_all(tmp_path: Path, found: str | None = "risk.card_usage", anchor: Path | None = None) -> Recorded:
    workspace = copy_workspace(tmp_path, anchor)
    graph = piitracer.build_lineage_graph(workspace)
    plan = make_plan(workspace, graph)
    log = audit_log(workspace, key=KEY)
    record_plan(log, plan)
    summary = run_summary(plan)
    record_run(log, plan, summary, workspace)
    report = verification(plan, found)
    record_verification(log, plan, report)
    return Recorded(workspace, graph, plan, log, summary, report)
