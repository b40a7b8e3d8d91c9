"""The verdict per dataset of a plan: erased, pending (bytes remain only where a planned step
that has not committed yet will remove them), found, or not checked.

Which values are searched in a dataset: every identifier value set of the plan (an identifier —
a PAN, a phone number — can leak into any table, whatever lineage says) and the plaintext the
subjects' shredded ciphertext opened to before their keys were destroyed, the value sets its own
steps match on, and every value form the lineage says one of its columns holds (``column_forms``:
a computed key such as ``LOWER(TRIM(email))`` or a hash, a value equal through a join) — wherever
that column lives, not only where a step keys on it. A computed form is not searched where no
column of the dataset holds it: a hash of a user id in an unrelated table would be a coincidence
to chase, not evidence.

How each column is searched (:mod:`~piitracer.verify.scope`): a dataset's identifier columns (its
catalogued identifiers, confirmed by a person, and the plan's key column) are proven free of the
whole values of the value sets they carry only; every other column, and any column the catalog
says nothing about, for every value set, whole and inside text. ``column_search`` in the result
says which search each column got.

A person's step (``manual``, ``manual_review``, ``recompute``) is open until its owner attests it
(``piitracer attest``): such a dataset is ``awaiting_attestation``, then ``attested`` — and
``found`` whenever its files still hold a resolved value, attested or not.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from typing import Any, Callable, Collection, Mapping

from piitracer.model.plan import PERSON_ACTIONS, Action, DatasetDecision, DatasetStatus, DeletionPlan, ValueKind
from piitracer.model.progress import Progress, report
from piitracer.model.verification import ColumnSearch, DatasetVerification, ErasureState, Finding, VerificationReport
from piitracer.model.workspace import CatalogDataset, DatasetFormat, ReplicaManagement, duration_text
from piitracer.storage.locations import Location
from piitracer.storage.store import Store
from piitracer.verify.decoders import PUFFIN_NOTE, ScanResult, chunk_facts, scan_location
from piitracer.verify.engines import FileScanner, ScanPlan, ScanRequest, list_requests
from piitracer.formats import FormatError, FormatSupport, TableFiles, support_for
from piitracer.verify.history_check import HistoryRead, LogicalHit, TableView, read_history, table_view
from piitracer.verify.scope import ColumnScope, ScopedIndex, column_scope, search_notes
from piitracer.verify.shred_proof import ShredCheck, ShredSetting
from piitracer.verify.values import ValueIndex
from piitracer.model.errors import CannotVerifyError

log = logging.getLogger(__name__)  # datasets and states only, never a value
COMMITTED = "committed"
NOT_RUN = "not run"


class VerificationError(CannotVerifyError, RuntimeError):
    """Verification cannot start (no resolved values, unreadable plan); never names a value."""


class _PlanSets:
    """What :func:`sets_for` and the verdicts read of a plan, indexed once per plan: asked per
    dataset, walking every step of a plan of thousands of datasets was quadratic (benchmarks:
    500 tables took 8x what 100 did)."""

    def __init__(self, plan: DeletionPlan) -> None:
        self.plan = plan
        names = {f"{c.dataset}.{column}" for c in plan.resolve for column in (*c.key_columns, *c.identifiers)}
        self.steps_of: dict[str, list] = {}
        for step in plan.steps:
            names |= {v.name for v in step.values_from if v.kind is ValueKind.IDENTIFIER}
            if step.action is Action.DESTROY_SUBJECT_KEY:  # the plaintext the subjects' ciphertext opened to
                names |= {c.plaintext for held in step.params.ciphertext for c in held.columns}
            self.steps_of.setdefault(step.dataset, []).append(step)
        self.identifiers = frozenset(names)


_last_plan: list[_PlanSets] = []  # the plan being verified (one entry: a verification reads one plan)


def _plan_sets(plan: DeletionPlan) -> _PlanSets:
    found = _last_plan[0] if _last_plan else None
    if found is None or found.plan is not plan:  # identity: the same object, not an equal one
        found = _PlanSets(plan)
        _last_plan[:] = [found]
    return found


def identifier_sets(plan: DeletionPlan) -> set[str]:
    """Names of every identifier value set the plan's resolve step captures."""
    return set(_plan_sets(plan).identifiers)


def sets_for(plan: DeletionPlan, decision: DatasetDecision) -> list[str]:
    """The value sets searched in one dataset (see the module docstring)."""
    indexed = _plan_sets(plan)
    names = set(indexed.identifiers) | {v.name for v in decision.values_from}
    names |= {name for forms in decision.column_forms.values() for name in forms}
    for step in indexed.steps_of.get(decision.dataset, ()):
        names |= {v.name for v in step.values_from}
    return sorted(names)


def scope_for(plan: DeletionPlan, decision: DatasetDecision, entry: CatalogDataset | None) -> ColumnScope:
    """The identifier columns of one dataset, each searched for whole values of the value sets it
    carries only (:mod:`~piitracer.verify.scope`): its catalogued identifiers (confirmed by a
    person) and the plan's key column, where the plan names what they hold."""
    from piitracer.model.workspace import ClassifiedBy

    key = decision.key_column
    key_sets = {v.name for v in decision.values_from}
    key_sets |= {v.name for step in _plan_sets(plan).steps_of.get(decision.dataset, ()) if step.key_column
                 and key and step.key_column.lower() == key.lower() for v in step.values_from}
    return column_scope(decision.dataset, entry.identifiers if entry is not None else (),
                        entry is not None and entry.classified_by is not ClassifiedBy.AUTO,
                        sets_for(plan, decision), decision.column_forms, key, key_sets)


def verify_datasets(
    plan: DeletionPlan,
    catalog: Mapping[str, CatalogDataset],
    locations: Mapping[str, Location],
    value_sets: Mapping[str, list[Any]],
    step_states: Mapping[str, str] | None = None,
    checked_at: datetime | None = None,
    attested: Mapping[str, str] | None = None,
    store: Store | None = None,
    choose_scanner: Callable[[ScanPlan], FileScanner] | None = None,
    explain: Collection[str] = (),
    progress: Progress | None = None,
    shred: ShredSetting | None = None,
) -> VerificationReport:
    """Check every dataset of ``plan``: decode every file under its location and read back every
    retained snapshot/version. ``step_states`` maps step id -> journal state (missing: not run);
    ``attested`` maps the id of a person's step to who attested it and when. ``choose_scanner``
    picks where the files are decoded once they are listed (default: in this process); for the
    datasets named in ``explain`` the result lists every Parquet chunk decoded and why.
    ``progress`` hears of each file decoded, then of each dataset checked. ``shred``: the key vault
    and master key that prove a dataset planned ``shred`` (:mod:`~piitracer.verify.shred_proof`)."""
    if not value_sets:
        raise VerificationError("no resolved values for this plan: run `piitracer execute` first")
    states = dict(step_states or {})
    store = store or Store()
    # Every table's metadata is read first (its files, and which data files its retained
    # versions read), then every dataset's files are listed and decoded in one go (one Spark job
    # on a cluster), data files' key rows with them; the logical checks and verdicts follow.
    scanned = [d for d in plan.datasets if _stores_files(catalog.get(d.dataset), locations.get(d.dataset), store)]
    histories = {d.dataset: read_history(support_for(catalog[d.dataset].format), locations[d.dataset], store,
                                         _key_of(d)) for d in scanned}
    requests = [ScanRequest(locations[d.dataset], tuple(sets_for(plan, d)), scope=scope_for(plan, d, catalog.get(d.dataset)),
                            keys=histories[d.dataset].scan_keys()) for d in scanned]
    listing = list_requests(requests, store)
    scanner = choose_scanner(listing) if choose_scanner else FileScanner()
    log.info("decoding %d files (%d bytes) of %d datasets with the %s engine", listing.file_count,
             listing.byte_count, len(scanned), scanner.name)
    scans = dict(zip((d.dataset for d in scanned), scanner.scan(listing, value_sets, store, progress=progress)))
    rows = {d.dataset: _rows_by_path(entries, scans[d.dataset]) for d, entries in zip(scanned, listing.listings)}
    results = []
    shredding = ShredCheck(plan, shred, value_sets, store, catalog, locations)
    try:
        for number, decision in enumerate(plan.datasets):
            report(progress, "checking datasets", number, len(plan.datasets))
            found = decision.dataset
            result = verify_dataset(plan, decision, catalog.get(found), locations.get(found), value_sets, states,
                                    attested or {}, store, scans.get(found), found in explain, histories.get(found),
                                    rows.get(found), shredding)
            log.info("verified %s: %s", decision.dataset, result.state.value)
            results.append(result)
    finally:
        shredding.close()
    report(progress, "checking datasets", len(plan.datasets), len(plan.datasets))
    return VerificationReport(plan_id=plan.plan_id, checked_at=checked_at or datetime.now(timezone.utc),
                              datasets=tuple(results))


def _key_of(decision: DatasetDecision) -> str | None:
    """The key column the logical check reads (an erased dataset's), or None."""
    return decision.key_column if decision.status is DatasetStatus.ERASE and decision.key_column else None


def _rows_by_path(entries, scan: ScanResult) -> dict[str, Any]:
    """Relative path -> the key rows the byte search read (None: not asked, or not decoded as Parquet)."""
    return {entry.relative: rows for entry, rows in zip(entries, scan.key_rows)}


def _stores_files(entry: CatalogDataset | None, location: Location | None, store: Store) -> bool:
    """Whether :func:`verify_dataset` decodes files for this dataset (the cases it does not are
    answered without reading any)."""
    return (entry is not None and location is not None and entry.format not in (DatasetFormat.VIEW, DatasetFormat.EXTERNAL)
            and store.exists(location))


def verify_dataset(plan: DeletionPlan, decision: DatasetDecision, entry: CatalogDataset | None,
                   location: Location | None, value_sets: Mapping[str, list[Any]],
                   states: Mapping[str, str], attested: Mapping[str, str] | None = None,
                   store: Store | None = None, scan: ScanResult | None = None, explain: bool = False,
                   history: HistoryRead | None = None, key_rows: Mapping[str, Any] | None = None,
                   shredding: ShredCheck | None = None) -> DatasetVerification:
    """The verdict for one dataset; ``scan`` is its files' decoding when already done, with the
    table's ``history`` read before it and the data files' ``key_rows`` it read (else all of it is
    done here, in this process); ``shredding`` proves a dataset planned ``shred``."""
    dataset = decision.dataset
    attested = attested or {}
    store = store or Store()
    person = _person_steps(plan, dataset)
    if entry is None or entry.format in (DatasetFormat.VIEW, DatasetFormat.EXTERNAL) or location is None:
        if entry is not None and entry.format is DatasetFormat.VIEW:
            return DatasetVerification(dataset=dataset, state=ErasureState.NO_ACTION, reason="a view stores no rows")
        if person:
            owner = f" (owner: {entry.owner})" if entry is not None and entry.owner else ""
            what = (f"an external system{owner}" if entry is not None and entry.format is DatasetFormat.EXTERNAL
                    else "not checkable by piitracer (no catalogued location)")
            return _by_attestation(dataset, person, attested, f"{what}: its owner erases it")
        if decision.status is DatasetStatus.NO_ACTION:
            return DatasetVerification(dataset=dataset, state=ErasureState.NO_ACTION, reason=decision.reason)
        return _not_checked(dataset, "not in the catalog: its format and location are unknown" if entry is None
                            else "no location in the catalog")
    if scan is None and not store.exists(location):  # a scan given: its location was listed
        return _not_checked(dataset, f"location {location} does not exist")
    try:  # a table a catalog keeps: the catalog must name its state here, or what is scanned proves nothing
        if store.current_metadata(location) is not None and support_for(entry.format).newest_metadata is not None:
            support_for(entry.format).newest_metadata(location, store)
    except FormatError as error:
        return _not_checked(dataset, str(error))

    names = sets_for(plan, decision)
    scope = scope_for(plan, decision, entry)
    scoped = ScopedIndex.build(value_sets, names, scope)
    index = scoped.index
    key = decision.key_column if decision.status is DatasetStatus.ERASE else None
    support = support_for(entry.format)
    if history is None:
        history = read_history(support, location, store, key)
    if scan is None:
        listed = [f.relative for f in store.list_files(location)]
        scan = scan_location(location, index, store, listed, scoped, history.scan_keys())
        key_rows = dict(zip(listed, scan.key_rows))
    view = table_view(support, location, store, key, index, history, key_rows or {})
    notes = [*view.problems, *(f"decoded as raw bytes only: {u}" for u in scan.unreadable)]
    if any(f.endswith(".puffin") for f in scan.files):
        notes.append(PUFFIN_NOTE)

    findings: list[Finding] = []
    removers: list[list[Action]] = []
    for hit in scan.hits:
        findings.append(Finding(file=hit.file, where=hit.where, value_set=hit.value_set, kind=hit.kind))
        removers.append(support.file_removers(view.files, hit.file))
    for logical in view.logical:
        where = f"{support.version_word} {logical.version}"
        where += " (current)" if logical.current else ""
        where += f", retained by {logical.ref}" if logical.ref else ""
        for name in sorted(logical.value_sets):
            findings.append(Finding(file="", where=where, value_set=name, kind="snapshot"))
            removers.append(support.logical_removers(logical.current, logical.ref is not None))

    replicated = entry.replica_of is not None and entry.replica_of.managed_by is ReplicaManagement.REPLICATION
    if replicated:  # piitracer writes nothing here: only the replication removes a leftover
        removers = [[Action.AWAIT_REPLICATION] for _ in findings]
    common = dict(dataset=dataset, files_scanned=len(scan.files), snapshots_checked=view.versions_checked,
                  findings=tuple(findings), value_sets=tuple(names), notes=tuple(notes),
                  column_search=tuple(ColumnSearch(column=c, search=how, value_sets=sets)
                                      for c, how, sets in search_notes(scope, entry.columns)),
                  **chunk_facts(scan.chunks, explain))
    if decision.status is DatasetStatus.SHRED and not person:
        shredding = shredding or ShredCheck(plan, None, value_sets, store)
        return shredding.verdict(decision, entry, location, findings, common, states)
    if person:
        steps_text = ", ".join(f"{s.id} {s.action.value}" for s in person)
        if findings:
            return DatasetVerification(state=ErasureState.FOUND, reason=f"{decision.status.value}: a person must act "
                                       f"({steps_text}); {len(findings)} place(s) still hold resolved values", **common)
        verdict = _by_attestation(dataset, person, attested, "piitracer cannot identify this dataset's rows of the subjects; "
                                  "no resolved value was found in its files")
        return verdict.model_copy(update={k: v for k, v in common.items() if k != "dataset"})
    if not findings:
        if decision.status is DatasetStatus.NO_ACTION:
            return DatasetVerification(state=ErasureState.NO_ACTION, reason=decision.reason, **common)
        return DatasetVerification(state=ErasureState.ERASED, **common)

    steps = {s.id: s for s in _plan_sets(plan).steps_of.get(dataset, ())}
    covering: list[str] = []
    uncovered = 0
    for actions in removers:
        open_steps = [s for s in steps.values() if s.action in actions and states.get(s.id, NOT_RUN) != COMMITTED]
        if not open_steps:
            uncovered += 1
        for step in open_steps:
            if step.id not in covering:
                covering.append(step.id)
    if uncovered and replicated:
        wait = duration_text(entry.replica_of.propagation_wait)
        return DatasetVerification(state=ErasureState.FOUND, reason=(
            f"replication failure: {uncovered} place(s) of this replica of {entry.replica_of.dataset} still hold "
            f"resolved values after the propagation wait ({wait}) since the primary's erasure: the replication did "
            "not carry it (check the replication job, then re-sync the replica or erase it by hand)"), **common)
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


def _by_attestation(dataset: str, person: list, attested: Mapping[str, str], why: str) -> DatasetVerification:
    """A person's steps: attested when every one is, else awaiting attestation (naming the open ones)."""
    open_steps = [s for s in person if s.id not in attested]
    if open_steps:
        listed = ", ".join(f"{s.id} {s.action.value}" + (f" (owner {s.owner})" if s.owner else "") for s in open_steps)
        return DatasetVerification(dataset=dataset, state=ErasureState.AWAITING_ATTESTATION,
                                   reason=f"{why}: awaiting attestation of {listed} (piitracer attest)")
    confirmed = "; ".join(f"{s.id} attested {attested[s.id]}" for s in person)
    return DatasetVerification(dataset=dataset, state=ErasureState.ATTESTED, reason=f"{why}: {confirmed}")


def _person_steps(plan: DeletionPlan, dataset: str) -> list:
    """The steps of a dataset that a person does (and attests)."""
    return [step for step in _plan_sets(plan).steps_of.get(dataset, ()) if step.action in PERSON_ACTIONS]


def _retention_text(decision: DatasetDecision) -> str:
    deadline = decision.deadline
    if deadline is None:
        return "its own retention: unknown"
    if deadline.natural_completion is not None:
        return f"its own retention would remove them by {deadline.natural_completion:%Y-%m-%d} ({deadline.basis})"
    return f"its own retention never removes them ({deadline.basis})"
