"""The public API's wiring of the layers: workspace -> ingest -> graph -> plan -> execute ->
verify. Only this module and ``cli`` import across layers."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Mapping, Sequence

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
from piitracer.verify import VerificationError, verify_datasets


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


def verify_plan(
    workspace: Workspace,
    plan: DeletionPlan,
    value_sets: Mapping[str, list] | None = None,
    step_states: Mapping[str, str] | None = None,
) -> VerificationReport:
    """Check that no file and no retained snapshot/version of the plan's datasets still holds a
    subject value. ``value_sets`` and ``step_states`` (step id -> journal state) default to what
    the workspace journal recorded for this plan; a plan never resolved raises
    :class:`~piitracer.verify.VerificationError` (run ``piitracer execute`` first)."""
    from piitracer.executor.journal import Journal

    context = execution_context(workspace)
    if value_sets is None or step_states is None:
        if not context.journal_path.exists():
            raise VerificationError(f"plan {plan.plan_id[:16]} was never executed in this workspace (no journal at "
                                    f"{context.journal_path}): run `piitracer execute` first")
        journal = Journal(context.journal_path)
        try:
            if value_sets is None:
                value_sets = journal.load_values(plan.plan_id)
            if step_states is None:
                step_states = {record["step_id"]: record["state"] for record in journal.steps(plan.plan_id)}
        finally:
            journal.close()
    if not value_sets:
        raise VerificationError(f"plan {plan.plan_id[:16]} has no resolved values in the journal: "
                                "run `piitracer execute` first (its resolve step captures them)")
    return verify_datasets(plan, workspace.config.catalog, context.locations, value_sets, step_states)
