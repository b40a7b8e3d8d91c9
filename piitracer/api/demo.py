"""The demo: build the fixture lakehouse, plan the erasure of one user (or a batch), execute,
verify, attest the person steps as simulated owners, verify again, close the requests, and write
the audit report and a signed certificate, with the demo's own keys. Rooms: demo (the lakehouse
builder), executor (its Spark session), render (the lineage diagram), crypto, and every use case."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from piitracer.api.wiring import write_private
from piitracer.api.keys import Keys
from piitracer.api.lineage import build_lineage_graph
from piitracer.api.plan import plan_requests
from piitracer.api.session import open as open_session
from piitracer.api.verify import Evidence
from piitracer.audit import load_audit_key
from piitracer.audit.keys import write_audit_key
from piitracer.crypto.envelope import load_master_key, write_master_key
from piitracer.crypto.signing import generate_signing_key, public_key_path
from piitracer.demo import DEFAULT_ROWS, DEFAULT_SEED, SUBJECT_USER_ID, build_lakehouse, demo_spark
from piitracer.demo.subjects import existing_subjects, subject_rows
from piitracer.demo.workspace_files import prepare_workspace
from piitracer.executor.runner import ExecuteOptions, RunSummary
from piitracer.graph.lineage_graph import LineageGraph
from piitracer.workspace.model import Workspace
from piitracer.ingest.workspace.loader import load_workspace
from piitracer.model.audit import AuditEntry
from piitracer.model.lineage import ColumnRef
from piitracer.model.plan import PERSON_ACTIONS, DeletionPlan, Subject
from piitracer.model.verification import VerificationReport
from piitracer.render.lineage_diagram import lineage_diagram, render_lineage
from piitracer.requests.board import owner_name
from piitracer.workspace.layout import StateLayout
from piitracer.model.errors import BadWorkspaceError


DEMO_SOURCE = "prod.payments.user_id"


@dataclass
class DemoResult:
    """What :func:`run_demo` did, phase by phase (``seconds``: phase -> wall time)."""

    folder: Path
    build: Any  # piitracer.demo.DemoBuild
    subjects: int
    subject_rows: int  # the subjects' rows in the source before the erasure (0: already erased)
    plan: DeletionPlan
    plan_path: Path
    diagram_path: Path
    run: RunSummary | None = None
    # The verification right after execute: the person steps still open (verify exits 1 then).
    first_verification: VerificationReport | None = None
    attestations: list[AuditEntry] = field(default_factory=list)  # the simulated owners' attestations
    verification: VerificationReport | None = None  # the final one
    report_path: Path | None = None  # the audit report (HTML) of the batch's first request
    certificate_path: Path | None = None  # its signed erasure certificate (when verification completed)
    public_key_path: Path | None = None  # the demo signing key's public half, to check the certificate
    closed: list[str] = field(default_factory=list)  # the requests closed (values shredded) at the end
    audit_intact: bool | None = None  # the audit log verified after recording this run
    seconds: dict[str, float] = field(default_factory=dict)

    def totals(self) -> dict[str, int]:
        """What the demo's run erased.

        Returns:
            Datasets erased (a delete or rewrite committed), rows deleted, files rewritten, files
                removed and bytes removed; all 0 when nothing ran.
        """
        totals = {"datasets_erased": 0, "rows_deleted": 0, "files_rewritten": 0, "files_removed": 0, "bytes_removed": 0}
        if self.run is None:
            return totals
        for dataset, row in self.run.by_dataset().items():
            for key in ("rows_deleted", "files_rewritten", "files_removed", "bytes_removed"):
                totals[key] += row[key]
            if any(r.step.dataset == dataset and r.state == "committed" and r.step.action.value in ("delete_rows", "rewrite_files", "rewrite_archive")
                   for r in self.run.results):
                totals["datasets_erased"] += 1
        return totals


class PhaseClock:
    """Wall time per phase of a demo: ``phase("build")`` records the time since the last call
    (or since the clock was made) under that name in :attr:`seconds`."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.monotonic()

    def __call__(self, name: str) -> None:
        now = time.monotonic()
        self.seconds[name] = now - self._last
        self._last = now


def run_demo(
    folder: str | os.PathLike[str] = "demo",
    subjects: int | None = None,
    rows: int | None = None,
    rebuild: bool = False,
    warehouse: str | os.PathLike[str] | None = None,
    progress: Callable[[str], None] | None = None,
    attest: bool = True,
    close: bool = True,
) -> DemoResult:
    """The whole demo in ``folder``, as a short script over one session.

    Copy the fixture workspace there (once), build its lakehouse (or reuse it), plan the erasure
    of user 8841302 — or of ``subjects`` random users that have rows, as one batch — from
    ``prod.payments.user_id``, write ``plan.json`` (0600) and ``lineage.svg``, and execute the plan
    (it is the demo's own lakehouse: no concurrent writers). Then verify: the person steps (a
    Kafka topic, a masked token table, an aggregate) are still awaiting attestation, so this first
    verification is not complete; attest each as its simulated owner (the evidence says it is
    simulated), verify again, close the requests and write the audit report and the certificate.

    Every use case goes through one session with the demo's own keys ([`demo_keys`][piitracer.api.demo.demo_keys]), exactly
    as ``piitracer plan -o``, ``execute``, ``verify``, ``attest``, ``requests close`` and ``audit
    certificate`` run them: the subjects live only under their requests' data keys.

    Args:
        folder: the demo's folder (made when missing).
        subjects: erase this many random users that have rows, as one batch (default: user
            8841302 alone).
        rows: payments to build (default: the demo's size); at least 100.
        rebuild: build the lakehouse again instead of reusing it.
        warehouse: put the Iceberg warehouse elsewhere (tests point it at their running Spark
            session's).
        progress: gets one line per phase and step.
        attest: attest the person steps as their simulated owners and verify again.
        close: close the requests of a complete erasure (their values shredded).

    Returns:
        What each phase did: the build, the plan and its files, the run, both verifications, the
            attestations, the report and certificate paths, the requests closed, phase times.

    Raises:
        DemoBuildError: the lakehouse cannot be built (too few rows, a table outside the
            workspace and the warehouse, a catalog entry the demo cannot build).
        BadWorkspaceError: the demo workspace's catalog has no Iceberg table ``prod.payments``.
        ExecutionError: a step failed (the run is recorded first, as ``execute`` records it).
    """
    say = progress or (lambda message: None)
    phase = PhaseClock()
    seconds = phase.seconds

    root = prepare_workspace(Path(folder), warehouse=Path(warehouse) if warehouse else None)
    workspace = load_workspace(root)
    built = build_lakehouse(workspace, rows=rows or DEFAULT_ROWS, rebuild=rebuild, progress=say)
    phase("build")
    say(f"lakehouse {'reused' if built.reused else 'built'} in {seconds['build']:.1f} s")

    source = _demo_source(workspace)
    spark = demo_spark(workspace)  # the workspace's Iceberg catalogs too: a reused lakehouse may live in one
    values = existing_subjects(spark, source.table, "user_id", subjects, DEFAULT_SEED) if subjects else [str(SUBJECT_USER_ID)]
    found = subject_rows(spark, source.table, "user_id", values)
    received = datetime.now(timezone.utc).replace(microsecond=0)
    batch = [Subject(value=v, request_id=f"demo-{received:%Y%m%dT%H%M%S}-{i + 1}", received_at=received) for i, v in enumerate(values)]
    plan_path, diagram_path = root / "plan.json", root / "lineage.svg"

    with open_session(workspace, demo_keys(root)) as session:
        planned = session.plan([DEMO_SOURCE], batch, keep=True, action="planned (demo)")  # as `plan -o`
        plan = planned.plan
        write_private(plan_path, planned.text)
        graph = build_lineage_graph(workspace)
        diagram_path.write_bytes(render_lineage(plan_diagram(graph, plan), "svg"))
        phase("plan")
        say(f"planned {len(plan.steps)} steps for {len(batch)} subject(s) ({found} source rows): {plan_path}")

        result = DemoResult(folder=root, build=built, subjects=len(batch), subject_rows=found, plan=plan,
                            plan_path=plan_path, diagram_path=diagram_path, seconds=seconds)
        # No --drop-refs: the demo's month_end_close tag is rewritten (rewrite_ref), not dropped.
        result.run = session.execute(plan_path, ExecuteOptions(no_concurrent_writers=True), on_step=lambda r: say(
            f"  {r.step.id} {r.step.action.value} {r.step.dataset}: {r.state}"))
        awaiting = result.run.awaiting()
        say(f"executed: {result.run.status}" + (f": {len(awaiting)} step(s) awaiting attestation: " + ", ".join(
            f"{r.step.id} {r.step.action.value} {r.step.dataset}" for r in awaiting) if awaiting else ""))
        phase("execute")

        result.first_verification = result.verification = session.verify(plan_path).report
        say("verified: " + ("complete" if result.verification.complete else
                            f"not complete (verify exits 1): {_open_summary(result.verification)}"))
        if attest and not result.verification.complete:
            result.attestations += attest_as_simulated_owners(session, plan, plan_path, say)
            result.verification = session.verify(plan_path).report
            say("verified again: " + ("complete" if result.verification.complete else _open_summary(result.verification)))
        phase("verify")
        if close and result.verification.complete:
            for request_id in plan_requests(plan):
                session.close(request_id, now_reason="demo: closed at once, no watching period")
                result.closed.append(request_id)
            say(f"closed {len(result.closed)} request(s): piitracer's own copies of the subject(s) shredded")
        result.audit_intact = session.check_audit().ok
        result.report_path = root / "report.html"
        result.report_path.write_text(session.report(batch[0].request_id, graph=graph), encoding="utf-8")
        if result.verification.complete:
            result.public_key_path = public_key_path(session.keys.signing_key_file)
            document = session.certificate(batch[0].request_id)
            result.certificate_path = root / "certificate.json"
            result.certificate_path.write_text(json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
                                               encoding="utf-8")
    phase("audit")
    say(f"audit trail recorded; report: {result.report_path}")
    return result


def attest_as_simulated_owners(session, plan: DeletionPlan, plan_path: Path,
                               say: Callable[[str], None] = lambda message: None) -> list:
    """Attest every person step of a plan not yet attested as its simulated owner (the demo's
    stand-in for the people who would do them; the statement says it is simulated). Each owner
    proves who they are with a credential made with the session's keys.

    Args:
        session (Session): a session with the audit and signing keys.
        plan: the plan.
        plan_path: its file.
        say: told of each attestation.

    Returns:
        The attestations' audit entries.
    """
    attested = session.attested(plan)
    owners: dict[str, Any] = {}
    entries = []
    for step in (s for s in plan.steps if s.action in PERSON_ACTIONS and s.id not in attested):
        owner = owner_name(step.owner) or _DEMO_OWNERS.get(step.action.value, "streaming-team")
        if owner not in owners:
            owners[owner] = session.person(session.add_person(owner).token)
        statement = (f"SIMULATED by piitracer demo: no person did this; {owner} would confirm "
                     f"{step.action.value} of {step.dataset} here")
        entries.append(session.attest(plan_path, step.id, owners[owner], Evidence.of(statement), statement=statement))
        say(f"  attested {step.id} {step.action.value} {step.dataset} as {owner} (simulated)")
    return entries


# Who the demo's simulated attestations name when a step has no owner in the catalog.
_DEMO_OWNERS = {"manual_review": "ml-platform", "recompute": "analytics-eng", "manual": "streaming-team"}


def _open_summary(report: VerificationReport) -> str:
    counts: dict[str, int] = {}
    for item in report.open_items():
        counts[item.state.value] = counts.get(item.state.value, 0) + 1
    return ", ".join(f"{n} {state}" for state, n in sorted(counts.items())) or "nothing open"


def plan_diagram(graph: LineageGraph, plan: DeletionPlan):
    """The lineage diagram of a plan's datasets, reached through every identifier of its sources
    (the resolve step captures them all: a PAN-only table is the subject's too); the source key
    column is highlighted first.

    Args:
        graph: the lineage graph.
        plan: the plan.

    Returns:
        diagram (graphviz.Digraph): the diagram (render it as SVG or PNG).
    """
    starts: list[ColumnRef] = []
    for capture in plan.resolve:
        for column in (*capture.key_columns, *capture.identifiers):
            ref = ColumnRef(dataset=capture.dataset, column=column)
            if graph.has_column(ref) and ref not in starts:
                starts.append(ref)
    return lineage_diagram(graph, starts or None, datasets=[d.dataset for d in plan.datasets])


def demo_audit_key(folder: Path) -> Path:
    """The demo's own audit key: random, made once per demo folder, in a 0600 file in its state
    folder. (Outside the demo the key comes from the environment or a key file the user keeps
    secret; piitracer has no key of its own.)

    Args:
        folder: the demo's folder.

    Returns:
        The key file's path.
    """
    path = StateLayout(Path(folder)).demo_key("audit")
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_audit_key(path)  # marked as the audit key, like the keys `init` writes
    return path


def demo_master_key(folder: Path) -> Path:
    """The demo's own master key (0600, made once per demo folder); outside the demo it comes from
    ``--master-key-file`` or the environment.

    Args:
        folder: the demo's folder.

    Returns:
        The key file's path.
    """
    path = StateLayout(Path(folder)).demo_key("master")
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_master_key(path)
    return path


def demo_signing_key(folder: Path) -> tuple[Path, Path]:
    """The demo's own certificate signing key, made once per demo folder. Outside the demo:
    ``piitracer audit keygen PATH``, the private key kept secret.

    Args:
        folder: the demo's folder.

    Returns:
        The private key's file (0600) and the public key's file.
    """
    path = StateLayout(Path(folder)).demo_key("signing")
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        generate_signing_key(path)
    return path, public_key_path(path)


def demo_keys(folder: Path) -> Keys:
    """The demo's own keys, made once per demo folder, 0600 in its state folder: the demo runs on
    its own lakehouse with keys nobody else holds.

    Args:
        folder: the demo's folder.

    Returns:
        The audit, master and signing keys, loaded.
    """
    signing, _ = demo_signing_key(folder)
    return Keys(audit=load_audit_key(key_file=demo_audit_key(folder)), master=load_master_key(demo_master_key(folder)),
                signing_key_file=signing)


def _demo_source(workspace: Workspace):
    """The demo's source dataset entry (``prod.payments``) of the workspace catalog."""
    dataset = DEMO_SOURCE.rsplit(".", 1)[0]
    entry = workspace.config.catalog.get(dataset)
    if entry is None or not entry.table:
        raise BadWorkspaceError(f"the demo workspace's catalog has no Iceberg table {dataset}")
    return entry
