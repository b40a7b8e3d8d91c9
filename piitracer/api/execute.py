"""Execution: run a plan on the workspace's lakehouse (preflight first, journaled, resumable),
report the run as an OpenLineage job when the workspace says so, and, for ``piitracer execute``,
check the plan file's seal and origin, move its requests and record the run in the audit log.
Rooms: executor, serve (run events), audit, requests, model."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from typing import Callable, Sequence

from piitracer.api._wiring import audit_log_path, dataset_locations, execution_context, journal_steps, request_store
from piitracer.api.audit import audit_log, record_plan, record_run
from piitracer.api.plan import check_plan_origin, check_plan_seal, load_plan, plan_requests
from piitracer.api.requests import move_plan_requests, register_plan_requests
from piitracer.api.verify import recorded_attestations
from piitracer.audit import AuditKey
from piitracer.crypto.envelope import KeyWrapper, ValueCipher
from piitracer.executor.preflight import PlanRefused
from piitracer.executor.runner import ExecuteOptions, ExecutionError, PlanExecutor, RunSummary, StepResult
from piitracer.workspace.model import Workspace
from piitracer.model.plan import NO_FILE_WORK, Action, DeletionPlan
from piitracer.model.requests import RequestState
from piitracer.serve.emit import ChangedDataset, emit_run_event, run_uuid


def execute_plan(
    workspace: Workspace,
    plan: DeletionPlan,
    options: ExecuteOptions = ExecuteOptions(),
    on_step: Callable[[StepResult], None] | None = None,
    attested: Sequence[str] = (),
    cipher: ValueCipher | None = None,
) -> RunSummary:
    """Run a plan on the workspace's lakehouse (journaled; ``options.resume`` continues a killed run).
    The executor's preflight refuses a plan that does not match the workspace or would act outside
    its datasets' locations before anything is journaled. Person steps are ``awaiting_attestation``
    unless their ids are in ``attested``."""
    return run_execution(workspace, prepare_execution(workspace, plan, options, on_step, attested, cipher))


def run_execution(workspace: Workspace, executor: PlanExecutor) -> RunSummary:
    """``executor.run()``, reported as an OpenLineage job when the workspace has an
    ``openlineage:`` block: START before, COMPLETE (the datasets changed as outputs) or FAIL after.
    A dry run is not reported."""
    settings = workspace.config.openlineage
    if settings is None or executor.options.dry_run:
        return executor.run()
    plan_id = executor.plan.plan_id
    run = run_uuid(plan_id, datetime.now(timezone.utc).isoformat())
    emit_run_event(settings, "START", run, plan_id)
    try:
        summary = executor.run()
    except ExecutionError as error:
        changed = _changed_datasets(workspace, [(r.dataset, r.action, r.state) for r in journal_steps(workspace, plan_id)])
        emit_run_event(settings, "FAIL", run, plan_id, changed, error=str(error))
        raise
    changed = _changed_datasets(workspace, [(r.step.dataset, r.step.action.value, r.state) for r in summary.results])
    emit_run_event(settings, "COMPLETE", run, plan_id, changed)
    return summary


def _changed_datasets(workspace: Workspace, states: Sequence[tuple[str, str, str]]):
    """The datasets a run wrote: a committed step that rewrites, deletes or expires something."""
    touching_nothing = {action.value for action in NO_FILE_WORK | {Action.RESOLVE}}  # resolve only reads
    locations = dataset_locations(workspace)
    names = sorted({dataset for dataset, action, state in states if state == "committed" and action not in touching_nothing})
    return [ChangedDataset(name, str(locations[name]) if name in locations else None) for name in names]


def prepare_execution(
    workspace: Workspace,
    plan: DeletionPlan,
    options: ExecuteOptions = ExecuteOptions(),
    on_step: Callable[[StepResult], None] | None = None,
    attested: Sequence[str] = (),
    cipher: ValueCipher | None = None,
) -> PlanExecutor:
    """An executor whose preflight already passed (``PlanRefused`` otherwise): the CLI checks
    everything before it records anything in the audit log, then calls ``run()``."""
    executor = PlanExecutor(plan, execution_context(workspace, attested, cipher), options, on_step)
    executor.preflight()
    return executor




def execute_recorded(workspace: Workspace, plan_file: str | os.PathLike[str], options: ExecuteOptions = ExecuteOptions(),
                     *, audit_key: AuditKey, master: KeyWrapper, on_start: Callable[[DeletionPlan], None] | None = None,
                     on_step: Callable[[StepResult], None] | None = None) -> RunSummary:
    """``piitracer execute``: everything is checked before the audit log, the request store or the
    journal is written, so a refused run leaves no trace — the plan file opened with the request
    store's keys, its seal (``options.unsealed`` accepts none), the plan against the workspace and the
    lakehouse (preflight), then its origin (recorded in this workspace's audit log, and what
    planning it again gives now, unless resumed or re-run). A dry run stops there and returns what
    it would do. Otherwise the plan's requests move executing -> executed around the run, and every
    step is recorded in the audit log (a failed run too, before its error is raised). ``on_start``
    gets the plan once it runs; ``on_step`` each step's result."""
    with request_store(workspace, master) as store:
        plan = load_plan(plan_file, store.cipher)
        check_plan_seal(plan, audit_key, unsealed_ok=options.unsealed)
        executor = prepare_execution(workspace, plan, options, attested=recorded_attestations(workspace, audit_key, plan))
        if not audit_log_path(workspace).exists():  # opening would create it: a refusal leaves no trace
            raise PlanRefused(f"plan {plan.plan_id[:16]} is not recorded in this workspace's audit log (there is none "
                              "yet): plan again with `piitracer plan -o`")
        with audit_log(workspace, key=audit_key, create=False) as log:
            check_plan_origin(workspace, log, plan, replan=not (options.resume or options.rerun))
        if options.dry_run:
            return executor.run()
        with audit_log(workspace, key=audit_key) as log:
            register_plan_requests(workspace, store, log, plan, "planned (execute)")
            executor.context.cipher = store.cipher(plan_requests(plan))
            record_plan(log, plan)
            move_plan_requests(store, log, plan, RequestState.EXECUTING, "execute" + (" --resume" if options.resume else
                                                                                        " --rerun" if options.rerun else ""))
            if on_start is not None:
                on_start(plan)
            executor.on_step = on_step
            try:
                summary = run_execution(workspace, executor)
            except ExecutionError as error:
                record_run(log, plan, journal_steps(workspace, plan.plan_id), workspace)  # the failed step too
                move_plan_requests(store, log, plan, RequestState.EXECUTING, "execute failed", reason=str(error)[:300])
                raise
            record_run(log, plan, summary, workspace)
            move_plan_requests(store, log, plan, RequestState.EXECUTED, f"executed: {summary.status}")
    return summary
