"""The executor on its own, for the tests of what it does to tables: preflight, steps, journal —
without the session's seal, origin, approval and audit checks (piitracer.execute_plan and every front
door run a plan only through the session; audit verify flags a run recorded nowhere)."""

from __future__ import annotations

from piitracer.api.execute import prepare_execution, run_execution
from piitracer.executor.runner import ExecuteOptions


def run_plan(workspace, plan, options: ExecuteOptions = ExecuteOptions(), on_step=None, attested=(), cipher=None,
             master=None):
    """Preflight and run ``plan`` on ``workspace``'s lakehouse, journaled (not recorded in the audit log)."""
    return run_execution(workspace, prepare_execution(workspace, plan, options, on_step, attested, cipher, master))
