"""Execution: run a plan on the workspace's lakehouse (preflight first, journaled, resumable),
report the run as an OpenLineage job when the workspace says so, and, for ``piitracer execute``,
check the plan file's seal and origin, move its requests and record the run in the audit log.
Rooms: executor, serve (run events), audit, requests, model."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable, Sequence

from piitracer.api.lakehouse import Lakehouse, lakehouse_of
from piitracer.api.wiring import execution_context, journal_steps
from piitracer.crypto.envelope import KeyWrapper, ValueCipher
from piitracer.executor.runner import ExecuteOptions, ExecutionError, PlanExecutor, RunSummary, StepResult
from piitracer.workspace.model import Workspace
from piitracer.model.plan import NO_FILE_WORK, Action, DeletionPlan
from piitracer.serve.emit import ChangedDataset, emit_run_event, run_uuid


def run_execution(workspace: Workspace, executor: PlanExecutor, lakehouse: Lakehouse | None = None) -> RunSummary:
    """(The session's, after its checks: not a public way in.) Run a prepared executor, reported as an OpenLineage job when the workspace has an
    ``openlineage:`` block: START before, COMPLETE (the datasets changed as outputs) or FAIL
    after. A dry run is not reported.

    Args:
        workspace: the loaded workspace.
        executor: the executor [`prepare_execution`][piitracer.api.execute.prepare_execution] gave.
        lakehouse: the session's lakehouse (the changed datasets' places); default: a new one.

    Returns:
        The run's summary.

    Raises:
        ExecutionError: a step failed (after the FAIL event).
    """
    settings = workspace.config.openlineage
    if settings is None or executor.options.dry_run:
        return executor.run()
    plan_id = executor.plan.plan_id
    run = run_uuid(plan_id, datetime.now(timezone.utc).isoformat())
    emit_run_event(settings, "START", run, plan_id)
    try:
        summary = executor.run()
    except ExecutionError as error:
        changed = _changed_datasets(workspace, [(r.dataset, r.action, r.state) for r in journal_steps(workspace, plan_id)],
                                    lakehouse)
        emit_run_event(settings, "FAIL", run, plan_id, changed, error=str(error))
        raise
    changed = _changed_datasets(workspace, [(r.step.dataset, r.step.action.value, r.state) for r in summary.results],
                                lakehouse)
    emit_run_event(settings, "COMPLETE", run, plan_id, changed)
    return summary


def _changed_datasets(workspace: Workspace, states: Sequence[tuple[str, str, str]], lakehouse: Lakehouse | None = None):
    """The datasets a run wrote: a committed step that rewrites, deletes or expires something."""
    touching_nothing = {action.value for action in NO_FILE_WORK | {Action.RESOLVE}}  # resolve only reads
    locations = lakehouse_of(workspace, lakehouse).locations
    names = sorted({dataset for dataset, action, state in states if state == "committed" and action not in touching_nothing})
    return [ChangedDataset(name, str(locations[name]) if name in locations else None) for name in names]


def prepare_execution(
    workspace: Workspace,
    plan: DeletionPlan,
    options: ExecuteOptions = ExecuteOptions(),
    on_step: Callable[[StepResult], None] | None = None,
    attested: Sequence[str] = (),
    cipher: ValueCipher | None = None,
    master: KeyWrapper | None = None,
    lakehouse: Lakehouse | None = None,
) -> PlanExecutor:
    """(The session's, before its checks: not a public way in.) An executor whose preflight already
    passed: the session checks everything else before it records anything in the audit log, then runs it ([`run_execution`][piitracer.api.execute.run_execution]).

    Args:
        workspace: the loaded workspace.
        plan: the plan.
        options: dry run, resume, rerun, concurrent writers, refs.
        on_step: called with each step's result as it finishes.
        attested: ids of person steps their owners attested.
        cipher: the journal's cipher (or a function giving it): seals the values the journal keeps.
        master: the master key, for a key destruction in the workspace's key vault.
        lakehouse: the session's lakehouse (its places resolved once); default: a new one.

    Returns:
        The executor, ready to run.

    Raises:
        PlanRefused: the plan does not match the workspace or acts outside its locations.
    """
    executor = PlanExecutor(plan, execution_context(workspace, attested, cipher, master, lakehouse), options, on_step)
    executor.preflight()
    return executor
