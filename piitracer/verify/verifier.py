"""The verdict per dataset of a plan: erased, pending (bytes remain only where a planned step
that has not committed yet will remove them), found, or not checked.

Which values are searched in a dataset: the value sets its own steps match on (``values_from``,
computed keys such as hashes included) plus every identifier value set of the plan, because an
identifier (a PAN, a phone number) can leak into any table, whatever lineage says. Computed sets
are searched only where the plan uses them: a hash of a user id in an unrelated table would be
a coincidence to chase, not evidence.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

from piitracer.model.plan import Action, DatasetDecision, DatasetStatus, DeletionPlan, ValueKind
from piitracer.model.verification import DatasetVerification, ErasureState, Finding, VerificationReport
from piitracer.model.workspace import CatalogDataset, DatasetFormat
from piitracer.verify.decoders import scan_location
from piitracer.verify.tables import TableView, delta_view, iceberg_view, parquet_view
from piitracer.verify.values import ValueIndex
from piitracer.model.errors import PiitracerError

log = logging.getLogger(__name__)  # datasets and states only, never a value
COMMITTED = "committed"
NOT_RUN = "not run"


class VerificationError(PiitracerError, RuntimeError):
    """Verification cannot start (no resolved values, unreadable plan); never names a value."""


def identifier_sets(plan: DeletionPlan) -> set[str]:
    """Names of every identifier value set the plan's resolve step captures."""
    names = {f"{c.dataset}.{column}" for c in plan.resolve for column in (*c.key_columns, *c.identifiers)}
    for step in plan.steps:
        names |= {v.name for v in step.values_from if v.kind is ValueKind.IDENTIFIER}
    return names


def sets_for(plan: DeletionPlan, decision: DatasetDecision) -> list[str]:
    """The value sets searched in one dataset (see the module docstring)."""
    names = identifier_sets(plan) | {v.name for v in decision.values_from}
    for step in plan.steps:
        if step.dataset == decision.dataset:
            names |= {v.name for v in step.values_from}
    return sorted(names)


def verify_datasets(
    plan: DeletionPlan,
    catalog: Mapping[str, CatalogDataset],
    locations: Mapping[str, Path],
    value_sets: Mapping[str, list[Any]],
    step_states: Mapping[str, str] | None = None,
    checked_at: datetime | None = None,
) -> VerificationReport:
    """Check every dataset of ``plan``: decode every file under its location and read back every
    retained snapshot/version. ``step_states`` maps step id -> journal state (missing: not run)."""
    if not value_sets:
        raise VerificationError("no resolved values for this plan: run `piitracer execute` first")
    states = dict(step_states or {})
    results = []
    for decision in plan.datasets:
        result = verify_dataset(plan, decision, catalog.get(decision.dataset), locations.get(decision.dataset), value_sets, states)
        log.info("verified %s: %s", decision.dataset, result.state.value)
        results.append(result)
    return VerificationReport(plan_id=plan.plan_id, checked_at=checked_at or datetime.now(timezone.utc),
                              datasets=tuple(results))


def verify_dataset(plan: DeletionPlan, decision: DatasetDecision, entry: CatalogDataset | None,
                   location: Path | None, value_sets: Mapping[str, list[Any]],
                   states: Mapping[str, str]) -> DatasetVerification:
    """The verdict for one dataset."""
    dataset = decision.dataset
    if entry is None:
        return _not_checked(dataset, "not in the catalog: its format and location are unknown")
    if entry.format in (DatasetFormat.VIEW, DatasetFormat.EXTERNAL):
        owner = f" (owner: {entry.owner})" if entry.owner else ""
        what = "a view stores no rows" if entry.format is DatasetFormat.VIEW else f"an external system{owner}: erased by its owner"
        return _not_checked(dataset, what)
    if location is None:
        return _not_checked(dataset, "no local location in the catalog")
    if not location.exists():
        return _not_checked(dataset, f"location {location} does not exist")

    names = sets_for(plan, decision)
    index = ValueIndex.build({name: value_sets.get(name, []) for name in names})
    scan = scan_location(location, index)
    key = decision.key_column if decision.status is DatasetStatus.ERASE else None
    view, notes = _table_view(entry, location, key, index)
    notes = [*notes, *(f"decoded as raw bytes only: {u}" for u in scan.unreadable)]

    findings: list[Finding] = []
    removers: list[list[Action]] = []
    for hit in scan.hits:
        findings.append(Finding(file=hit.file, where=hit.where, value_set=hit.value_set, kind=hit.kind))
        removers.append(_file_removers(entry, view, hit.file))
    for logical in view.logical:
        where = f"snapshot {logical.version}" if entry.format is DatasetFormat.ICEBERG else f"version {logical.version}"
        where += " (current)" if logical.current else ""
        where += f", retained by {logical.ref}" if logical.ref else ""
        for name in sorted(logical.value_sets):
            findings.append(Finding(file="", where=where, value_set=name, kind="snapshot"))
            removers.append(_logical_removers(entry, logical.current, logical.ref is not None))

    common = dict(dataset=dataset, files_scanned=len(scan.files), snapshots_checked=view.versions_checked,
                  findings=tuple(findings), value_sets=tuple(names), notes=tuple(notes))
    person = _person_step(plan, dataset)
    if decision.status in (DatasetStatus.MANUAL_REVIEW, DatasetStatus.RECOMPUTE):
        must_act = f"a person must act: {person}" if person else "a person must act"
        if findings:
            return DatasetVerification(state=ErasureState.FOUND, reason=f"{decision.status.value}: {must_act}; "
                                       f"{len(findings)} place(s) hold resolved values", **common)
        return DatasetVerification(state=ErasureState.NOT_CHECKED, reason=f"{decision.status.value}: no resolved value "
                                   f"found, but piitracer cannot identify this dataset's rows of the subject: {must_act}", **common)
    if not findings:
        return DatasetVerification(state=ErasureState.ERASED, **common)

    steps = {s.id: s for s in plan.steps if s.dataset == dataset}
    covering: list[str] = []
    uncovered = 0
    for actions in removers:
        open_steps = [s for s in steps.values() if s.action in actions and states.get(s.id, NOT_RUN) != COMMITTED]
        if not open_steps:
            uncovered += 1
        for step in open_steps:
            if step.id not in covering:
                covering.append(step.id)
    if uncovered:
        return DatasetVerification(state=ErasureState.FOUND, reason=f"{uncovered} of {len(findings)} place(s) hold "
                                   "resolved values that no remaining planned step removes", **common)
    ordered = sorted(covering, key=lambda i: steps[i].order)
    until = "; ".join(f"{i} {steps[i].action.value} ({states.get(i, NOT_RUN)})" for i in ordered)
    return DatasetVerification(state=ErasureState.PENDING, pending_until=f"{until}; {_retention_text(decision)}",
                               reason="bytes remain only where a planned step that has not committed will remove them",
                               **common)


def _not_checked(dataset: str, reason: str) -> DatasetVerification:
    return DatasetVerification(dataset=dataset, state=ErasureState.NOT_CHECKED, reason=reason)


def _table_view(entry: CatalogDataset, location: Path, key: str | None, index: ValueIndex) -> tuple[TableView, list[str]]:
    readers = {DatasetFormat.ICEBERG: iceberg_view, DatasetFormat.DELTA: delta_view}
    reader = readers.get(entry.format, parquet_view)
    try:
        view = reader(location, key, index)
    except Exception as error:  # the byte scan still stands; say why the logical check did not
        return TableView(), [f"logical check failed: {type(error).__name__}"]
    return view, list(view.problems)


def _hidden(path: str) -> bool:
    return any(part.startswith(("_", ".")) for part in path.split("/"))


def _file_removers(entry: CatalogDataset, view: TableView, path: str) -> list[Action]:
    """The plan actions that would remove (or rewrite) this file; [] when none would."""
    if entry.format is DatasetFormat.ICEBERG:
        if _hidden(path) or path.startswith("metadata/") and path.endswith((".metadata.json", ".metadata.json.gz", "version-hint.text")):
            # Orphan removal skips hidden paths; metadata files are kept by the metadata log.
            return []
        if path in view.live:
            return [Action.DELETE_ROWS, Action.REWRITE_DATA_FILES]
        if path in view.current_meta:
            return [Action.DELETE_ROWS, Action.REWRITE_MANIFESTS]
        if path in view.retained:
            return [Action.RELEASE_REF, Action.EXPIRE_SNAPSHOTS] if path in view.ref_files else [Action.EXPIRE_SNAPSHOTS]
        return [Action.REMOVE_ORPHAN_FILES]
    if entry.format is DatasetFormat.DELTA:
        if path.startswith("_delta_log/"):
            return [Action.CLEAN_DELTA_LOG]
        if path.startswith("_change_data/"):
            return [Action.VACUUM]
        if _hidden(path):
            return []
        if path in view.live:
            return [Action.DELETE_ROWS, Action.PURGE_DELETION_VECTORS]
        return [Action.VACUUM]
    if _hidden(path):
        return []
    return [Action.REWRITE_FILES, Action.REWRITE_ARCHIVE]


def _logical_removers(entry: CatalogDataset, current: bool, held_by_ref: bool) -> list[Action]:
    if entry.format is DatasetFormat.ICEBERG:
        if current:
            return [Action.DELETE_ROWS]
        return [Action.RELEASE_REF, Action.EXPIRE_SNAPSHOTS] if held_by_ref else [Action.EXPIRE_SNAPSHOTS]
    if entry.format is DatasetFormat.DELTA:
        return [Action.DELETE_ROWS, Action.PURGE_DELETION_VECTORS] if current else [Action.VACUUM, Action.CLEAN_DELTA_LOG]
    return [Action.REWRITE_FILES, Action.REWRITE_ARCHIVE]


def _person_step(plan: DeletionPlan, dataset: str) -> str | None:
    for step in plan.steps:
        if step.dataset == dataset and step.action in (Action.MANUAL_REVIEW, Action.MANUAL, Action.RECOMPUTE):
            return f"step {step.id} {step.action.value}" + (f" ({step.reason})" if step.reason else "")
    return None


def _retention_text(decision: DatasetDecision) -> str:
    deadline = decision.deadline
    if deadline is None:
        return "its own retention: unknown"
    if deadline.natural_completion is not None:
        return f"its own retention would remove them by {deadline.natural_completion:%Y-%m-%d} ({deadline.basis})"
    return f"its own retention never removes them ({deadline.basis})"
