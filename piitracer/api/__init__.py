"""The public API: one module per use case a person has, each wiring the rooms below it.

- :mod:`piitracer.api.lineage`: the lineage graph (through the lineage store), column names
- :mod:`piitracer.api.catalog`: ``catalog discover``, ``classify``, ``check`` and the discovered catalog file
- :mod:`piitracer.api.plan`: plan an erasure, plan files, seals, a plan's origin
- :mod:`piitracer.api.execute`: run a plan (journaled, recorded, its requests moved), its OpenLineage run events
- :mod:`piitracer.api.verify`: verify (and sweep) a plan and settle its requests, re-verify, attest person steps
- :mod:`piitracer.api.audit`: the audit log, its verification, report and erasure certificate
- :mod:`piitracer.api.requests`: the request store, the board, request states, batch windows (estimated), close
- :mod:`piitracer.api.demo`: the demo flow
- :mod:`piitracer.api.workspace_init`: ``piitracer init``: a new workspace and its two keys, kept outside it
- :mod:`piitracer.api._wiring`: what they share (workspace -> file store, locations, roots, journal, request store)

The functions named after a command (``execute_recorded``, ``verify_recorded``, ``keep_plan``,
``plan_batch_window``...) open the workspace's request store and audit log themselves: the CLI
parses, calls one of them and prints.

Every public name is also importable from here (``from piitracer.api import plan_deletion``). The
names are imported on first use (PEP 562), so ``import piitracer.api.plan`` loads planning only, not
the verifier, the audit trail, the demo or Spark: a cold ``piitracer plan`` pays for what it uses.
Only ``piitracer.api`` and ``piitracer.cli`` import across layers (tests/unit/architecture/test_layers.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Public name -> the module of this package that defines it (or a full module path for a name the
# old single-module api re-exported from below, kept so existing imports keep working).
_EXPORTS = {
    # piitracer.api.lineage
    "build_lineage_graph": "lineage", "lineage_graph_for": "lineage", "parse_column": "lineage",
    "rebuild_lineage_store": "lineage", "stored_graph_for": "lineage",
    # piitracer.api.catalog
    "Classification": "catalog", "catalog_drift": "catalog", "classify_catalog": "catalog",
    "discover_catalog": "catalog", "discovered_name": "catalog", "lineage_only_datasets": "catalog",
    "write_discovered_catalog": "catalog",
    # piitracer.api.plan
    "PlanSealError": "plan", "check_plan_origin": "plan", "check_plan_seal": "plan", "live_table_states": "plan",
    "load_plan": "plan", "parse_plan": "plan", "plan_deletion": "plan", "plan_file_text": "plan",
    "plan_requests": "plan", "planning_difference": "plan", "seal_plan": "plan", "source_key_types": "plan",
    "plan_erasure": "plan", "load_workspace_plan": "plan",
    # piitracer.api.execute
    "execute_plan": "execute", "execute_recorded": "execute", "prepare_execution": "execute", "run_execution": "execute",
    # piitracer.api.verify
    "AttestationError": "verify", "Evidence": "verify", "attest_step": "verify", "attested_steps": "verify",
    "recorded_attestations": "verify", "scanner_choice": "verify", "verify_plan": "verify", "Verified": "verify",
    "verify_recorded": "verify", "reverify_requests": "verify", "reverify_watched": "verify", "attest_recorded": "verify",
    # piitracer.api.audit
    "audit_anchor": "audit", "audit_log": "audit", "audit_report": "audit", "check_certificate": "audit",
    "erasure_certificate": "audit", "record_plan": "audit", "record_run": "audit", "record_verification": "audit",
    "request_trail": "audit", "table_metadata_hash": "audit", "verify_audit": "audit",
    "workspace_identity": "audit", "check_workspace_audit": "audit", "request_report": "audit",
    "request_certificate": "audit",
    # piitracer.api.requests
    "BatchPlan": "requests", "CloseRefused": "requests", "add_requests": "requests", "batch_plan": "requests",
    "close_request": "requests", "move_plan_requests": "requests", "move_request": "requests",
    "register_plan_requests": "requests", "settle_after_verify": "requests", "estimate_plan_cost": "requests",
    "keep_plan": "requests", "request_board": "requests", "queue_requests": "requests", "shred_request": "requests",
    "note_attestation": "requests", "BatchWindow": "requests", "plan_batch_window": "requests",
    # piitracer.api.demo
    "DEMO_SOURCE": "demo", "DemoResult": "demo", "demo_audit_key": "demo", "demo_master_key": "demo",
    "demo_signing_key": "demo", "plan_diagram": "demo", "run_demo": "demo",
    # piitracer.api.workspace_init
    "InitRefused": "workspace_init", "InitResult": "workspace_init", "init_workspace": "workspace_init",
    # piitracer.api._wiring
    "audit_log_path": "_wiring", "dataset_locations": "_wiring", "execution_context": "_wiring", "journal_steps": "_wiring",
    "protected_places": "_wiring", "request_store": "_wiring", "request_store_path": "_wiring",
    "warehouse_roots": "_wiring", "workspace_store": "_wiring", "write_private": "_wiring",
    # re-exported from below, as the single-module api did
    "load_workspace": "piitracer.ingest.workspace.loader",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from piitracer.ingest.workspace.loader import load_workspace
    from piitracer.api.lineage import (build_lineage_graph, lineage_graph_for, parse_column, rebuild_lineage_store,
                                       stored_graph_for)
    from piitracer.api.catalog import (catalog_drift, Classification, classify_catalog, discover_catalog,
                                       discovered_name, lineage_only_datasets, write_discovered_catalog)
    from piitracer.api.plan import (check_plan_origin, check_plan_seal, live_table_states, load_plan,
                                    load_workspace_plan, parse_plan, plan_deletion, plan_erasure, plan_file_text,
                                    plan_requests, planning_difference, PlanSealError, seal_plan, source_key_types)
    from piitracer.api.execute import (execute_plan, execute_recorded, prepare_execution, run_execution)
    from piitracer.api.verify import (attest_recorded, attest_step, AttestationError, attested_steps, Evidence,
                                      recorded_attestations, reverify_requests, reverify_watched, scanner_choice,
                                      Verified, verify_plan, verify_recorded)
    from piitracer.api.audit import (audit_anchor, audit_log, audit_report, check_certificate, erasure_certificate,
                                     record_plan, record_run, record_verification, request_trail,
                                     table_metadata_hash, verify_audit, workspace_identity, check_workspace_audit,
                                     request_report, request_certificate)
    from piitracer.api.requests import (add_requests, batch_plan, BatchPlan, BatchWindow, close_request,
                                        CloseRefused, estimate_plan_cost, keep_plan, move_plan_requests,
                                        move_request, note_attestation, plan_batch_window, queue_requests,
                                        register_plan_requests, request_board, settle_after_verify, shred_request)
    from piitracer.api.demo import (demo_audit_key, demo_master_key, demo_signing_key, DEMO_SOURCE, DemoResult,
                                    plan_diagram, run_demo)
    from piitracer.api.workspace_init import InitRefused, InitResult, init_workspace
    from piitracer.api._wiring import (audit_log_path, dataset_locations, execution_context, journal_steps,
                                       protected_places, request_store, request_store_path, warehouse_roots,
                                       workspace_store, write_private)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'piitracer.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(module if "." in module else f"{__name__}.{module}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
