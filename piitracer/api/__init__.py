"""The public API: one module per use case a person has, each wiring the rooms below it.

- :mod:`piitracer.api.session`: the session (:func:`open`), its use cases as methods
- :mod:`piitracer.api.keys`: the keys as one value (audit, master, signing)
- :mod:`piitracer.api.lineage`: the lineage graph (through the lineage store), column names
- :mod:`piitracer.api.catalog`: ``catalog discover``, ``classify``, ``check`` and the discovered catalog file
- :mod:`piitracer.api.plan`: plan an erasure, plan files, seals, a plan's origin
- :mod:`piitracer.api.execute`: run a plan (journaled, recorded, its requests moved), its OpenLineage run events
- :mod:`piitracer.api.verify`: verify (and sweep) a plan and settle its requests, re-verify, attest person steps
- :mod:`piitracer.api.audit`: the audit log, its verification, report and erasure certificate
- :mod:`piitracer.api.requests`: the request store, the board, request states, batch windows (estimated), close
- :mod:`piitracer.api.demo`: the demo flow
- :mod:`piitracer.api.demo_shred`: the crypto-shredding demo (``demo --shred``)
- :mod:`piitracer.api.workspace_init`: ``piitracer init``: a new workspace and its two keys, kept outside it
- :mod:`piitracer.api.wiring`: what they share (workspace -> file store, locations, roots, journal, request store)

The front doors (CLI, console, HTTP endpoint, demo, notebooks) go through one session:
``with piitracer.open(workspace, keys) as session:`` (:mod:`piitracer.api.session`) opens the
request store and the audit log once, and its methods are the use cases; the functions below it
take the stores they need as arguments and open none themselves.

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
    # piitracer.api.session: the front doors' one way in
    "open": "session", "Session": "session", "Planned": "session", "Verified": "session", "BatchWindow": "session",
    # piitracer.api.keys
    "Keys": "keys",
    # piitracer.api.lineage
    "build_lineage_graph": "lineage", "lineage_graph_for": "lineage", "named_dataset": "lineage", "parse_column": "lineage",
    "rebuild_lineage_store": "lineage", "stored_graph_for": "lineage",
    # piitracer.api.catalog
    "Classification": "catalog", "catalog_drift": "catalog", "classify_catalog": "catalog",
    "discover_catalog": "catalog", "discovered_name": "catalog", "lineage_only_datasets": "catalog",
    "write_discovered_catalog": "catalog",
    # piitracer.api.plan
    "PlanSealError": "plan", "check_plan_origin": "plan", "check_plan_seal": "plan", "live_table_states": "plan",
    "load_plan": "plan", "parse_plan": "plan", "plan_deletion": "plan", "plan_file_text": "plan",
    "plan_requests": "plan", "planning_difference": "plan", "seal_plan": "plan", "source_key_types": "plan",
    "plan_erasure": "plan",
    # piitracer.api.execute
    "execute_plan": "session",
    # piitracer.api.people
    "Credential": "people", "PersonError": "people", "make_credential": "people", "revoke_credential": "people",
    # piitracer.api.verify
    "AttestationError": "verify", "Evidence": "verify", "attest_step": "verify", "attested_steps": "audit",
    "scanner_choice": "verify", "verify_plan": "verify", "reverify_requests": "verify",
    # piitracer.api.audit
    "audit_anchor": "audit", "audit_log": "audit", "audit_report": "audit", "check_certificate": "audit",
    "erasure_certificate": "audit", "record_plan": "audit", "record_run": "audit", "record_verification": "audit",
    "request_trail": "audit", "table_metadata_hash": "audit", "verify_audit": "audit", "workspace_identity": "audit",
    # piitracer.api.requests
    "BatchPlan": "requests", "add_requests": "requests", "batch_plan": "requests", "estimate_plan_cost": "requests",
    "filter_board": "requests", "forget_copies": "requests",
    # piitracer.api.demo
    "DEMO_SOURCE": "demo", "DemoResult": "demo", "demo_keys": "demo", "demo_audit_key": "demo",
    "demo_master_key": "demo", "demo_signing_key": "demo", "plan_diagram": "demo", "run_demo": "demo",
    # piitracer.api.demo_shred
    "ShredDemoResult": "demo_shred", "run_shred_demo": "demo_shred",
    # piitracer.api.workspace_init
    "InitRefused": "workspace_init", "InitResult": "workspace_init", "init_workspace": "workspace_init",
    # piitracer.api.wiring
    "audit_log_path": "wiring", "dataset_locations": "wiring", "execution_context": "wiring", "journal_steps": "wiring",
    "protected_places": "wiring", "request_store": "wiring", "request_store_path": "wiring",
    "warehouse_roots": "wiring", "workspace_store": "wiring", "write_private": "wiring",
    # re-exported from below, as the single-module api did
    "load_workspace": "piitracer.ingest.workspace.loader",
    "CloseRefused": "piitracer.requests.lifecycle", "RequestRefused": "piitracer.requests.lifecycle",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from piitracer.api.session import BatchWindow, Planned, Session, Verified, open  # noqa: F401, A004
    from piitracer.api.keys import Keys  # noqa: F401


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'piitracer.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(module if "." in module else f"{__name__}.{module}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
