"""Verification: prove that no file and no retained snapshot or version of a plan's datasets still
holds a subject value (and, with a sweep, of what the plan does not reach), record it and settle the
plan's requests by it, re-verify the watched requests; attest the steps only a person can do, and
read those attestations back. Rooms: verify, executor (journal, Spark session for the Spark
scanner), crypto (the request store's keys), audit (verifications, attestations), requests."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from piitracer.api.lakehouse import Lakehouse
from piitracer.api.wiring import execution_context, request_store, request_store_path
from piitracer.api.plan import parse_plan, plan_requests
from piitracer.model.progress import Progress, phase
from piitracer.requests.lifecycle import move_request
from piitracer.audit import AuditLog, record_attestation_entry, record_plan_entry
from piitracer.api.audit import attested_steps
from piitracer.crypto.envelope import KeyWrapper, ShreddedError, ValueCipher, has_master_key, load_master_key
from piitracer.executor.journal import Journal
from piitracer.executor.spark_session import spark_session
from piitracer.workspace.model import Workspace
from piitracer.model.audit import AuditEntry, EntryKind
from piitracer.executor.runner import ExecutionContext
from piitracer.model.plan import PERSON_ACTIONS, Action, DeletionPlan
from piitracer.model.requests import RequestState
from piitracer.model.verification import VerificationReport
from piitracer.model.settings import TaskEngine
from piitracer.verify import VerificationError, verify_datasets
from piitracer.verify.engines import FileScanner, ScanPlan, SparkFileScanner, choose_scanner
from piitracer.verify.shred_proof import ShredSetting
from piitracer.verify.sweep import sweep as sweep_beyond
from piitracer.model.errors import InputError


def scanner_choice(workspace: Workspace, engine: TaskEngine | None = None) -> Callable[[ScanPlan], FileScanner]:
    """How ``verify`` picks where to decode a listing of files.

    Args:
        workspace: the loaded workspace (its ``verify`` and Spark settings).
        engine: driver, spark or auto, over the workspace's ``verify.engine``.

    Returns:
        A function from a listing to its scanner: the driver's, or Spark tasks on the workspace's
            Spark session (started only when chosen).
    """
    settings = workspace.config.spark
    warehouse = workspace.resolve(settings.warehouse)
    spark = SparkFileScanner(lambda: spark_session(settings, warehouse).sparkContext)
    return lambda listing: choose_scanner(workspace.config.verify, listing, spark, engine)


def verify_plan(
    workspace: Workspace,
    plan: DeletionPlan,
    value_sets: Mapping[str, list] | None = None,
    step_states: Mapping[str, str] | None = None,
    attested: Mapping[str, str] | None = None,
    sweep: str | None = None,
    cipher: ValueCipher | None = None,
    skip_requests: Sequence[str] = (),
    engine: TaskEngine | None = None,
    explain: Sequence[str] = (),
    progress: Progress | None = None,
    master: KeyWrapper | None = None,
    lakehouse: Lakehouse | None = None,
) -> VerificationReport:
    """Check that no file and no retained snapshot or version of the plan's datasets still holds
    a subject value.

    Every file under each dataset's location is decoded (or proven from its statistics,
    dictionaries, Bloom filters or page index), and every retained snapshot or version read back.
    This verifies only: [`Session.verify`][piitracer.api.session.Session.verify] also
    records the result and moves the plan's requests by it.

    Args:
        workspace: the loaded workspace.
        plan: the plan (it must have run here: its resolve step captured the values to search).
        value_sets: value set name -> values to search; default: what the journal captured.
        step_states: step id -> journal state; default: the journal's.
        attested: person step id -> who attested it and when ([`attested_steps`][piitracer.api.audit.attested_steps]).
        sweep: also decode what the plan does not reach: ``catalog`` or ``roots``.
        cipher: opens the journal's sealed values; default: the request store's keys under the
            master key from the environment, when both exist.
        skip_requests: requests left out (closed ones: their values are shredded).
        engine: driver, spark or auto, over the workspace's ``verify.engine``
            (``piitracer.verify.engines``).
        explain: datasets whose decoded Parquet column chunks are listed with why
            (``verify --explain``).
        progress: told of each file decoded and each dataset checked (and swept)
            ([`Progress`][piitracer.model.progress.Progress]).
        master: the master key, which proves a crypto-shredded dataset (the subjects' entries in
            the key vault are found by a hash keyed from it); default: the environment's, when set.
        lakehouse: the session's lakehouse (its places resolved once); default: a new one.

    Returns:
        The report: per dataset erased, not yet (with the step that will erase it) or found (with
            the file), and how each column chunk was proven.

    Raises:
        VerificationError: the plan never ran here (no journal, or no resolved values).
        ShreddedError: every request of the plan is closed (its values are shredded).
    """
    context = execution_context(workspace, lakehouse=lakehouse)
    if cipher is None and value_sets is None and request_store_path(workspace).exists() and has_master_key():
        with request_store(workspace, load_master_key()) as store:
            cipher = store.cipher(plan_requests(plan))
    if value_sets is None or step_states is None:
        if not context.journal_path.exists():
            raise VerificationError(f"plan {plan.plan_id[:16]} was never executed in this workspace (no journal at "
                                    f"{context.journal_path}): run `piitracer execute` first")
        with Journal(context.journal_path) as journal:
            if value_sets is None:
                resolved = journal.resolved_requests(plan.plan_id)
                if resolved and resolved <= set(skip_requests):
                    raise ShreddedError(f"plan {plan.plan_id[:16]}: every request of it is closed: values shredded "
                                        "at close; the certificate is the proof")
                value_sets = journal.load_values(plan.plan_id, cipher, frozenset(skip_requests))
            if step_states is None:
                step_states = {record["step_id"]: record["state"] for record in journal.steps(plan.plan_id)}
    if not value_sets:
        raise VerificationError(f"plan {plan.plan_id[:16]} has no resolved values in the journal: "
                                "run `piitracer execute` first (its resolve step captures them)")
    choose = scanner_choice(workspace, engine)
    report = verify_datasets(plan, workspace.config.catalog, context.locations, value_sets, step_states,
                             attested=attested, store=context.store, choose_scanner=choose, explain=explain,
                             progress=progress, shred=shred_setting(context, plan, master))
    if sweep is not None:
        # The sweep of roots walks only roots a person named: the default roots are the workspace
        # folder, which also holds piitracer's own state, lineage files and notes.
        swept_roots = context.warehouse_roots if context.roots_configured else ()
        found, swept, files = sweep_beyond(plan, workspace.config.catalog, context.locations, value_sets, sweep,
                                           swept_roots, context.store, choose, progress=progress)
        report = report.model_copy(update={"datasets": report.datasets + tuple(found), "sweep": sweep,
                                           "swept": tuple(swept), "swept_files": files})
    return report


def shred_setting(context: ExecutionContext, plan: DeletionPlan, master: KeyWrapper | None = None) -> ShredSetting:
    """What proves the plan's crypto-shredded datasets: the workspace's key vault, the master key
    (``master``, else the environment's when set), what each committed key destruction journaled
    and what the resolve step checked of each shredded dataset's ciphertext before it."""
    destroyed: dict[str, dict] = {}
    checked: dict[str, dict] = {}
    ids = {s.id for s in plan.steps if s.action is Action.DESTROY_SUBJECT_KEY}
    if ids and context.journal_path.exists():
        with Journal(context.journal_path) as journal:
            for record in journal.steps(plan.plan_id):
                if record["state"] != "committed":
                    continue
                details = (record["outcome"] or {}).get("details", {})
                if record["step_id"] in ids:
                    destroyed[record["step_id"]] = details
                elif record["action"] == Action.RESOLVE.value:
                    checked.update(details.get("ciphertext_checked", {}))
    if master is None and ids and has_master_key():
        master = load_master_key()
    return ShredSetting(context.vault, master, destroyed, checked)


class AttestationError(InputError):
    """An attestation that cannot be recorded (unknown step, not a person's step, unreadable evidence)."""


@dataclass(frozen=True)
class Evidence:
    """What backs an attestation: a file's or a text's SHA-256 (the content is never stored)."""

    sha256: str
    kind: str  # file | text
    name: str | None = None  # the file's name, for the person reading the log

    @classmethod
    def of(cls, given: str) -> "Evidence":
        """The evidence of an attestation, from what a person gave.

        Args:
            given: the path of an existing file (its bytes are hashed), or the evidence text itself.

        Returns:
            The evidence's SHA-256, kind (``file`` or ``text``) and the file's name.

        Raises:
            AttestationError: the file exists but cannot be read.
        """
        path = Path(given)
        if path.exists():
            try:
                data = path.read_bytes()
            except OSError as error:
                raise AttestationError(f"--evidence {given}: cannot read the evidence file: {error.strerror or error}") from None
            return cls(hashlib.sha256(data).hexdigest(), "file", path.name)
        return cls(hashlib.sha256(given.encode("utf-8")).hexdigest(), "text")


def attest_step(log: AuditLog, plan: DeletionPlan, step_id: str, by: Any, evidence: Evidence | None,
                statement: str | None = None, workspace: Workspace | None = None) -> AuditEntry:
    """Record in the audit log that a person did a ``manual``, ``manual_review`` or
    ``recompute`` step of the plan, their signed statement bound to the plan, the step and the
    evidence (the plan itself is recorded first when it is not yet).

    Args:
        log: the workspace's audit log.
        plan: the plan.
        step_id: the person step's id.
        by: who confirms it, proven by their own token (an ``identity.people.ProvenPerson``), in
            the owner role; where the step's dataset names an owner in the catalog, that owner.
        evidence: what backs it (only its SHA-256 is recorded), or None.
        statement: what the person says was done; default: the evidence file's name.
        workspace: the workspace (its catalog names each dataset's owner); None: not checked.

    Returns:
        The attestation's audit entry.

    Raises:
        AttestationError: no such step, a step piitracer performs itself, or a person who is not
            the step's owner.
    """
    from piitracer.identity.people import OWNER
    from piitracer.requests.board import owner_name

    step = next((s for s in plan.steps if s.id == step_id), None)
    if step is None:
        person = ", ".join(f"{s.id} ({s.action.value} {s.dataset})" for s in plan.steps if s.action in PERSON_ACTIONS)
        raise AttestationError(f"--step {step_id}: no such step in plan {plan.plan_id[:16]} (its person steps: {person or 'none'})")
    if step.action not in PERSON_ACTIONS:
        raise AttestationError(f"--step {step_id}: {step.action.value} on {step.dataset} is a step piitracer performs and "
                               "proves itself: only manual, manual_review and recompute steps are attested")
    if by.role != OWNER:
        raise AttestationError(f"{by.name} is {'an' if by.role == 'approver' else 'a'} {by.role}: only an owner (listed "
                               "under owners:) attests a person's step")
    if workspace is not None:
        entry = workspace.config.catalog.get(step.dataset)
        owner = owner_name(entry.owner) if entry is not None else None
        if owner is not None and owner != by.name:
            raise AttestationError(f"--step {step_id}: {step.dataset} belongs to {owner}, not {by.name}: an owner attests "
                                   "only the steps of the datasets they own")
    record_plan_entry(log, plan)
    note = statement if statement is not None else (f"evidence file {evidence.name}" if evidence and evidence.name else None)
    return record_attestation_entry(log, plan, step_id=step.id, dataset=step.dataset, action=step.action.value,
                                    attester=by, evidence_sha256=evidence.sha256 if evidence else None,
                                    evidence_kind=evidence.kind if evidence else None, statement_text=note)


def reverify_requests(workspace: Workspace, store, log: AuditLog, sweep: str | None = "catalog",
                      progress: Progress | None = None) -> list[tuple[str, bool]]:
    """Verify again every watching request's plan (``requests reverify``), sweeping beyond it.

    Each verification is recorded; a finding moves the request back to ``executed`` with the
    reason, while its values still exist.

    Args:
        workspace: the loaded workspace.
        store (RequestStore): the request store, with the master key (it opens the plans' values).
        log: the workspace's audit log.
        sweep: ``catalog`` or ``roots`` (also decode what the plan does not reach), or None.
        progress: told of each plan's files and datasets (``plan 1 of 2: decoding files``).

    Returns:
        (request id, still erased) for every watching request.

    Raises:
        VerificationError: a watched plan cannot be verified here.
    """
    from piitracer.api.audit import record_verification  # the audit trail's use case: only when recording

    results = []
    plans: dict[str, list[str]] = {}
    for request in store.all():
        if request.state is RequestState.WATCHING and request.plan_id:
            plans.setdefault(request.plan_id, []).append(request.request_id)
    for number, (plan_id, request_ids) in enumerate(sorted(plans.items()), start=1):
        text = store.plan_json(plan_id)
        plan = _plan_from_text(text, store)
        closed = {r.request_id for r in store.all() if r.plan_id == plan_id and r.state is RequestState.CLOSED}
        report = verify_plan(workspace, plan, attested=attested_steps(log, plan), sweep=sweep,
                             cipher=store.cipher(plan_requests(plan)), skip_requests=closed,
                             progress=phase(progress, f"plan {number} of {len(plans)}: "))
        record_verification(log, plan, report)
        if not report.complete:
            found = sorted({d.state.value for d in report.open_items()})
            for request_id in request_ids:
                move_request(store, log, request_id, RequestState.EXECUTED, "re-verified: subject data again",
                             plan_id=plan_id, reason=f"{', '.join(found)} in " + ", ".join(d.dataset for d in report.open_items()))
        else:
            for request_id in request_ids:
                store.note(request_id, "re-verified: still erased")
        results += [(request_id, report.complete) for request_id in request_ids]
    return results


def _plan_from_text(text: str, store) -> DeletionPlan:
    return parse_plan(text, "the request store's copy of the plan", store.cipher)
