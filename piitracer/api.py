"""The public API's wiring of the layers: workspace -> ingest -> graph -> plan -> execute (and,
later, verify and audit), plus the demo flow. Only this module and ``cli`` import across layers."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from pydantic import ValidationError

from piitracer.executor.runner import ExecuteOptions, ExecutionContext, PlanExecutor, RunSummary, StepResult
from piitracer.executor.table_state import read_table_states
from piitracer.graph.lineage_graph import LineageGraph
from piitracer.ingest.workspace_ingest import ingest_workspace
from piitracer.ingest.workspace_loader import Workspace, load_workspace
from piitracer.model.lineage import ColumnRef
from piitracer.model.plan import DeletionPlan, PlanRequest, Subject
from piitracer.model.table_state import TableState
from piitracer.model.verification import VerificationReport
from piitracer.planner.build import PlanningError, build_plan


def build_lineage_graph(workspace: Workspace | str | os.PathLike[str]) -> LineageGraph:
    """Ingest a workspace's lineage sources and build the graph with its catalog's relations."""
    if not isinstance(workspace, Workspace):
        workspace = load_workspace(workspace)
    return LineageGraph.build(ingest_workspace(workspace), workspace.config.catalog)


def parse_column(text: str, graph: LineageGraph) -> ColumnRef | str:
    """``db.table.column`` -> a :class:`ColumnRef`; ``db.table`` -> the dataset id.

    Dataset ids contain dots, so a known dataset id is tried first, then the part before the last
    dot. Raises ``KeyError`` naming what is unknown.
    """
    name = text.strip().lower()
    if graph.has_dataset(name):
        return name
    dataset, _, column = name.rpartition(".")
    if dataset and graph.has_dataset(dataset):
        ref = ColumnRef(dataset=dataset, column=column)
        if not graph.has_column(ref):
            known = ", ".join(graph.dataset(dataset).columns) or "none known"
            raise KeyError(f"dataset {dataset!r} has no column {column!r} (columns: {known})")
        return ref
    raise KeyError(f"{text!r} is neither a dataset nor a dataset.column of the lineage graph")


def plan_deletion(
    workspace: Workspace,
    graph: LineageGraph,
    sources: Sequence[str],
    subjects: Sequence[Subject],
    table_states: Mapping[str, TableState] | None = None,
) -> DeletionPlan:
    """Plan the erasure of ``subjects`` whose key is in the ``sources`` columns (``db.table.column``).

    ``table_states`` defaults to what the live Iceberg tables of the workspace say (tags, branches).
    """
    refs = []
    for text in sources:
        try:
            parsed = parse_column(text, graph)
        except KeyError as error:
            raise PlanningError(f"--source {text}: {error.args[0]}") from None
        if not isinstance(parsed, ColumnRef):
            raise PlanningError(f"--source {text}: expected DATASET.COLUMN, got a dataset")
        refs.append(parsed)
    request = PlanRequest(sources=tuple(refs), subjects=tuple(subjects))
    if table_states is None:
        table_states = live_table_states(workspace)
    return build_plan(graph, workspace.config.catalog, workspace.config.policy, request, table_states)


def live_table_states(workspace: Workspace) -> dict[str, TableState]:
    """Tags and branches of every catalogued Iceberg table that exists on disk."""
    catalog = workspace.config.catalog
    locations = {d: path for d in catalog if (path := workspace.location_of(d)) is not None}
    return read_table_states(catalog, locations)


def write_private(path: str | os.PathLike[str], text: str) -> None:
    """Write a file only its owner can read (mode 0600): plans and journals hold subject values."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # also when the file existed with a wider mode
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def load_plan(path: str | os.PathLike[str]) -> DeletionPlan:
    """Read a plan file, refusing one whose content no longer matches its ``plan_id``."""
    try:
        plan = DeletionPlan.model_validate_json(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise PlanningError(f"{path}: cannot read the plan: {error}") from None
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise PlanningError(f"{path}: not a piitracer plan: {field}: {first['msg']}") from None
    if plan.plan_id != plan.content_hash():
        raise PlanningError(f"{path}: plan_id does not match the plan's content (edited after planning?): re-plan")
    return plan


def execution_context(workspace: Workspace) -> ExecutionContext:
    """Where the executor finds tables, Spark settings and its journal, for one workspace."""
    catalog = workspace.config.catalog
    return ExecutionContext(
        catalog=catalog,
        locations={d: path for d in catalog if (path := workspace.location_of(d)) is not None},
        spark=workspace.config.spark,
        warehouse=workspace.resolve(workspace.config.spark.warehouse),
        journal_path=workspace.root / ".piitracer" / "journal.sqlite",
    )


def execute_plan(
    workspace: Workspace,
    plan: DeletionPlan,
    options: ExecuteOptions = ExecuteOptions(),
    on_step: Callable[[StepResult], None] | None = None,
) -> RunSummary:
    """Run a plan on the workspace's lakehouse (journaled; ``options.resume`` continues a killed run)."""
    return PlanExecutor(plan, execution_context(workspace), options, on_step).run()


# ---- the demo: build the fixture lakehouse, plan, execute (verify and audit slot in) ------------

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
    verification: VerificationReport | None = None  # issue 6: api.verify_plan (not merged yet)
    audit: Any | None = None  # issue 6: the audit log entries / report (not merged yet)
    seconds: dict[str, float] = field(default_factory=dict)

    def totals(self) -> dict[str, int]:
        """Datasets erased (a delete or rewrite committed), rows removed, files rewritten, bytes removed."""
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


def run_demo(
    folder: str | os.PathLike[str] = "demo",
    subjects: int | None = None,
    rows: int | None = None,
    rebuild: bool = False,
    warehouse: str | os.PathLike[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> DemoResult:
    """The whole demo in ``folder``: copy the fixture workspace there (once), build its lakehouse
    (or reuse it; ``rebuild`` starts over), plan the erasure of user 8841302 — or of ``subjects``
    random users that have rows, as one batch — from ``prod.payments.user_id``, write ``plan.json``
    (0600) and ``lineage.svg``, and execute the plan (it is the demo's own lakehouse: no concurrent
    writers, tags may be dropped). ``warehouse`` puts the Iceberg warehouse elsewhere (tests point
    it at their running Spark session's). ``progress`` gets one line per phase."""
    from piitracer.demo import DEFAULT_ROWS, DEFAULT_SEED, SUBJECT_USER_ID, build_lakehouse
    from piitracer.demo.subjects import existing_subjects, subject_rows
    from piitracer.demo.workspace_files import prepare_workspace
    from piitracer.executor.spark_session import spark_session
    from piitracer.render.lineage_diagram import lineage_diagram, render_lineage

    say = progress or (lambda message: None)
    seconds: dict[str, float] = {}
    clock = time.monotonic()

    def phase(name: str) -> None:
        nonlocal clock
        now = time.monotonic()
        seconds[name] = now - clock
        clock = now

    root = prepare_workspace(Path(folder), warehouse=Path(warehouse) if warehouse else None)
    workspace = load_workspace(root)
    built = build_lakehouse(workspace, rows=rows or DEFAULT_ROWS, rebuild=rebuild, progress=say)
    phase("build")
    say(f"lakehouse {'reused' if built.reused else 'built'} in {seconds['build']:.1f} s")

    graph = build_lineage_graph(workspace)
    source = _demo_source(workspace)
    spark = spark_session(workspace.config.spark, workspace.resolve(workspace.config.spark.warehouse))
    values = existing_subjects(spark, source.table, "user_id", subjects, DEFAULT_SEED) if subjects else [str(SUBJECT_USER_ID)]
    found = subject_rows(spark, source.table, "user_id", values)
    received = datetime.now(timezone.utc).replace(microsecond=0)
    batch = [Subject(value=v, request_id=f"demo-{i + 1}", received_at=received) for i, v in enumerate(values)]
    plan = plan_deletion(workspace, graph, [DEMO_SOURCE], batch)
    plan_path, diagram_path = root / "plan.json", root / "lineage.svg"
    write_private(plan_path, plan.to_json())
    start = ColumnRef(dataset="prod.payments", column="user_id")
    diagram_path.write_bytes(render_lineage(lineage_diagram(graph, start), "svg"))
    phase("plan")
    say(f"planned {len(plan.steps)} steps for {len(batch)} subject(s) ({found} source rows): {plan_path}")

    result = DemoResult(folder=root, build=built, subjects=len(batch), subject_rows=found, plan=plan,
                        plan_path=plan_path, diagram_path=diagram_path, seconds=seconds)
    options = ExecuteOptions(no_concurrent_writers=True, drop_refs=True)
    result.run = execute_plan(workspace, plan, options,
                              on_step=lambda r: say(f"  {r.step.id} {r.step.action.value} {r.step.dataset}: {r.state}"))
    phase("execute")

    # ---- issue 6 slots: verification, then the audit trail (being written on other branches) ----
    # result.verification = verify_plan(workspace, plan); phase("verify")
    # log = audit_log(workspace); record_plan(log, plan); record_run(log, plan, result.run)
    # record_verification(log, plan, result.verification); result.audit = audit_report(...); phase("audit")
    return result


def _demo_source(workspace: Workspace):
    """The demo's source dataset entry (``prod.payments``) of the workspace catalog."""
    dataset = DEMO_SOURCE.rsplit(".", 1)[0]
    entry = workspace.config.catalog.get(dataset)
    if entry is None or not entry.table:
        raise PlanningError(f"the demo workspace's catalog has no Iceberg table {dataset}")
    return entry
