"""The audit trail: open the workspace's audit log (its key, anchor and workspace id), record plans,
runs and verifications, verify the log (with the journal cross-check), and make a request's report
and signed erasure certificate. Rooms: audit, render (report, certificate), crypto (signing),
storage (the anchor), executor (the journal), formats (table metadata hashes), lineage."""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

from piitracer.api.lakehouse import Lakehouse, lakehouse_of
from piitracer.api.wiring import audit_log_path, journal_steps
from piitracer.api.lineage import build_lineage_graph
from piitracer.audit import (AnchorFile, AuditError, AuditKey, AuditLog, AuditProblem, VerifyResult, load_audit_key,
                             record_plan_entry, record_step_entries, record_verification_entry)
from piitracer.crypto.signing import check, load_public_key, sign
from piitracer.executor.journal import Journal
from piitracer.executor.runner import RunSummary
from piitracer.formats import support_for
from piitracer.graph.lineage_graph import LineageGraph
from piitracer.workspace.model import Workspace
from piitracer.ingest.workspace.loader import load_workspace
from piitracer.model.audit import AuditEntry, EntryKind, RequestTrail
from piitracer.model.errors import NotFoundError
from piitracer.model.plan import DeletionPlan
from piitracer.model.steps import StepRecord
from piitracer.model.verification import VerificationReport
from piitracer.render.certificate import NotCertifiable, certificate_body
from piitracer.render.report import report_html, report_markdown
from piitracer.storage.guard import is_under
from piitracer.storage.locations import Location
from piitracer.storage.store import store_for
from piitracer.workspace.layout import StateLayout
from piitracer.model.errors import InputError


def audit_log(workspace: Workspace | str | os.PathLike[str], key: str | bytes | AuditKey | None = None,
              key_file: str | os.PathLike[str] | None = None, create: bool = True,
              lakehouse: Lakehouse | None = None) -> AuditLog:
    """Open (or create) the workspace's audit log. There is no default key.

    Args:
        workspace: the loaded workspace, or its folder.
        key: the audit key (the demo passes its demo key here), or its secret.
        key_file: the audit key's file, when no ``key`` is given; with neither,
            ``$PIITRACER_AUDIT_KEY`` or ``$PIITRACER_AUDIT_KEY_FILE``.
        create: create the log when the workspace has none yet.
        lakehouse: the session's lakehouse (the anchor is checked against its places); default: a new one.

    Returns:
        The audit log, with its anchor and the workspace's id; close it (it is a context manager).

    Raises:
        AuditKeyError: no audit key, or one that is unreadable, too short or open to others.
        AuditError: no log and not ``create``; an anchor refused (see [`audit_anchor`][piitracer.api.audit.audit_anchor]).
        WorkspaceError: the folder's ``piitracer.yaml`` cannot be loaded.
    """
    loaded = key if isinstance(key, AuditKey) else load_audit_key(key, key_file)
    if not isinstance(workspace, Workspace):
        workspace = load_workspace(workspace)
    path = audit_log_path(workspace)
    anchor = audit_anchor(workspace, lakehouse)
    if not create and not path.exists():
        raise AuditError(f"{path}: no audit log in this workspace (nothing has been recorded yet)")
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path.parent, 0o700)  # also when the journal created the folder first, or umask widened it
    return AuditLog(path, loaded, anchor=anchor, workspace_id=workspace_identity(workspace))


def workspace_identity(workspace: Workspace) -> str:
    """This workspace's id: created once (a random UUID in the state folder's ``workspace_id``,
    mode 0600) and never changed. The audit log's first entry and its anchor carry it, so
    ``audit verify`` tells this workspace's log from a copy of another's; a lost or replaced id file
    is caught the same way.

    Args:
        workspace: the loaded workspace.

    Returns:
        The id, a UUID's text.

    Raises:
        AuditError: the id file holds something that is not a UUID.
    """
    path = StateLayout(workspace.root).workspace_id
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        text = path.read_text(encoding="utf-8").strip()
        try:
            return str(uuid.UUID(text))
        except ValueError:
            raise AuditError(f"{path}: not a workspace id (expected a UUID, written once by piitracer)") from None
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        identity = str(uuid.uuid4())
        handle.write(identity + "\n")
    return identity


def audit_anchor(workspace: Workspace, lakehouse: Lakehouse | None = None) -> AnchorFile | None:
    """The workspace's ``audit.anchor`` (a relative path against the workspace folder), or None.

    Args:
        workspace: the loaded workspace.
        lakehouse: the session's lakehouse (its datasets' places); default: a new one.

    Returns:
        The anchor file, or None when the workspace names none.

    Raises:
        AuditError: the anchor is inside the workspace (whoever can wipe the log could wipe it
            too), inside a catalogued dataset's location or a warehouse root (every append replaces
            the anchor: it must never land on table files), or where something that is not an
            anchor already lies.
    """
    text = workspace.config.audit.anchor
    if not text:
        return None
    location = Location.parse(text, base=workspace.root)
    if is_under(location, Location.parse(str(workspace.root))):
        raise AuditError(f"audit.anchor: {text} is inside the workspace ({workspace.root}); expected a path or URI "
                         "outside it (a separate mount, a bucket with object lock)")
    places = lakehouse_of(workspace, lakehouse)
    lakehouse_places = [(f"dataset {dataset}'s location", place) for dataset, place in places.locations.items()]
    lakehouse_places += [("warehouse root", root) for root in places.roots]
    for what, place in lakehouse_places:
        if is_under(location, place):
            raise AuditError(f"audit.anchor: {text} is inside {what} ({place}); expected a path or URI outside the "
                             "lakehouse: the anchor is replaced at every append and must never touch table files")
    anchor = AnchorFile(location, store_for(workspace.config.storage))
    if anchor.foreign_object():
        raise AuditError(f"audit.anchor: {text} already holds something that is not a piitracer audit anchor; "
                         "expected a new path (nothing is written over it)")
    return anchor


def record_plan(log: AuditLog, plan: DeletionPlan, planner: Any = None, policy: Mapping[str, Any] | None = None,
                operator: str | None = None) -> AuditEntry:
    """Append the plan entry (id, requests, deadline, per-dataset decisions; no subject values;
    keyed digests of the subjects).

    Args:
        log: the workspace's audit log.
        plan: the plan.
        planner: who made the plan, proven by their own token (an ``identity.people.ProvenPerson``):
            their signed statement is recorded; an approver must be someone else.
        policy: the approval policy in force (``requests.approval.policy_of``), checked at execute.
        operator: the operating system's account, recorded for information when no one is proven.

    Returns:
        The plan's entry (the one already there when it was recorded before).
    """
    return record_plan_entry(log, plan, planner, policy, operator)


def record_run(log: AuditLog, plan: DeletionPlan, run: RunSummary | Sequence[StepRecord],
               workspace: Workspace, lakehouse: Lakehouse | None = None) -> list[AuditEntry]:
    """Append a step entry per step of a run (the plan entry first when it is missing).

    Each entry carries the SHA-256 of the dataset's newest table metadata file at recording time.
    Steps already recorded unchanged are skipped.

    Args:
        log: the workspace's audit log.
        plan: the plan that ran.
        run: the executor's ``piitracer.executor.runner.RunSummary`` (the journal's records
            add start and finish times and original run ids), or the journal's records
            (``piitracer.api.wiring.journal_steps``: a run that stopped with an error).
        workspace: the loaded workspace (the tables' metadata files).
        lakehouse: the session's lakehouse; default: a new one.

    Returns:
        The entries appended.

    Raises:
        ValueError: ``run`` is a dry run's summary (a dry run changes nothing).
    """
    if isinstance(run, RunSummary) and run.status == "dry-run":
        raise ValueError("a dry run changes nothing: there is no run to record")
    record_plan_entry(log, plan)
    recorded = list(run) if not isinstance(run, RunSummary) else journal_steps(workspace, plan.plan_id)
    by_id = {record.step_id: record for record in recorded}
    if isinstance(run, RunSummary):
        for result in run.results:  # a step the journal does not hold (journal missing): the summary's facts
            if result.step.id not in by_id:
                by_id[result.step.id] = StepRecord.of(
                    step_id=result.step.id, order=result.step.order, dataset=result.step.dataset,
                    action=result.step.action.value, state=result.state, run_id=run.run_id,
                    outcome=result.outcome.as_dict() if result.outcome else None, message=result.message)
    fingerprints: dict[str, tuple[str, str] | None] = {}
    records = []
    for record in by_id.values():
        if record.dataset not in fingerprints:
            fingerprints[record.dataset] = table_metadata_hash(workspace, record.dataset, lakehouse)
        metadata_file, metadata_hash = fingerprints[record.dataset] or (None, None)
        records.append(record.model_copy(update={"metadata_file": metadata_file, "metadata_hash": metadata_hash}))
    return record_step_entries(log, plan, records)


def record_verification(log: AuditLog, plan: DeletionPlan, report: VerificationReport) -> AuditEntry:
    """Append the verification entry (the plan entry first when it is missing).

    Args:
        log: the workspace's audit log.
        plan: the plan verified.
        report: the verification report (per dataset state, files scanned, findings without values).

    Returns:
        The verification's entry.
    """
    record_plan_entry(log, plan)
    return record_verification_entry(log, plan, report)


def verify_audit(log: AuditLog, workspace: Workspace | None = None, expect_head: str | None = None,
                 registrar: Any = None) -> VerifyResult:
    """Check the audit log (``audit verify``): recompute the chain, hashes, seals, sequence and
    Merkle roots, the structure, the anchor and ``expect_head`` (see
    ``piitracer.audit.verify_log``).

    Args:
        log: the audit log.
        workspace: also cross-check this workspace's journal: every plan the journal ran was
            recorded in the log before its first step, so a run without an audit entry means
            entries were removed.
        expect_head: the head hash the log must have (one kept elsewhere).
        registrar: the workspace signing key's public key: every person's registration must be
            signed by it (None: not checked).

    Returns:
        Whether the log holds, its entry count and head, and the first problem, if any.
    """
    from piitracer.audit.signatures import signature_problems

    result = log.verify(expect_head=expect_head)
    if not result.ok:
        return result
    entries = log.entries()
    # People's signatures: each signed entry's with the key the log registered for its person then,
    # each registration with the workspace signing key's (when given).
    problems = signature_problems(entries, registrar)
    if problems:
        seq, why = problems[0]
        return VerifyResult(False, result.entries, result.head_hash, AuditProblem(
            seq, f"a signature does not hold: {why}" + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")))
    signed = sum(1 for e in entries if e.kind in (EntryKind.PLAN, EntryKind.APPROVAL, EntryKind.ATTESTATION,
                                                      EntryKind.EXECUTION, EntryKind.PERSON)
                 and any(isinstance(e.body.get(f), dict) for f in ("planner", "approver", "attester", "executor",
                                                                    "registration")))
    result = replace(result, checks=result.checks + (
        f"signatures: {signed} signed entr{'y' if signed == 1 else 'ies'}, each with its person's registered key"
        + ("" if registrar is None else ", every registration by the workspace signing key"),))
    if workspace is None:
        return result
    journal_path = StateLayout(workspace.root).journal
    if not journal_path.exists():
        return result
    with Journal(journal_path) as journal:
        ran = journal.plans_run()
        committed = {(r["step_id"], r["run_id"]): r["plan_id"] for r in _committed_steps(journal)}
    recorded = {entry.plan_id for entry in entries}
    missing = sorted(plan_id for plan_id in ran if plan_id not in recorded)
    if missing:
        return VerifyResult(False, result.entries, result.head_hash, AuditProblem(
            None, f"the journal records {len(missing)} executed plan(s) with no audit entry (first: plan "
                  f"{missing[0][:16]}): entries were removed from the audit log"))
    # Every committed step of every run: a run outside the session (no audit entry for its steps)
    # or step entries removed since.
    stepped = {(e.body.get("step_id"), e.body.get("run_id")) for e in entries
               if e.kind is EntryKind.STEP and e.body.get("state") == "committed"}
    unrecorded = sorted((plan_id, step) for (step, run), plan_id in committed.items() if (step, run) not in stepped)
    if unrecorded:
        plan_id, step = unrecorded[0]
        return VerifyResult(False, result.entries, result.head_hash, AuditProblem(
            None, f"the journal records {len(unrecorded)} committed step(s) with no audit entry (first: step {step} of "
                  f"plan {plan_id[:16]}): a run outside piitracer's session, or entries removed from the audit log"))
    return replace(result, checks=result.checks + (f"journal: {len(ran)} executed plan(s), each recorded, "
                                                   f"{len(committed)} committed step(s), each recorded",))


def _committed_steps(journal: Journal) -> list[dict[str, Any]]:
    """Every step committed by a run that finished, of every plan the journal holds, with its plan
    id (a run killed mid-way is recorded when it is resumed)."""
    finished = journal.finished_runs()
    found = []
    for plan_id in sorted(journal.plans_run()):
        found += [{**r, "plan_id": plan_id} for r in journal.steps(plan_id)
                  if r["state"] == "committed" and r["run_id"] in finished]
    return found


def request_trail(log: AuditLog, request_id: str, verified: VerifyResult | None = None) -> RequestTrail:
    """Everything the log holds about one request, with its Merkle root and the chain's state.

    Args:
        log: the audit log.
        request_id: the request.
        verified: the log's verification already done; else it is done here.

    Returns:
        The request's entries, Merkle root, and whether the chain is intact.

    Raises:
        NotFoundError: the log has no entry for the request.
    """
    entries = log.entries(request_id=request_id)
    if not entries:
        raise NotFoundError(f"the audit log has no entry for request {request_id!r}")
    result = verified if verified is not None else log.verify()
    return RequestTrail(request_id=request_id, entries=tuple(entries), merkle_root=log.request_root(request_id),
                        chain_head=log.head()[1], chain_entries=result.entries, chain_intact=result.ok,
                        chain_problem=str(result.problem) if result.problem else None)


def audit_report(workspace: Workspace, log: AuditLog, request_id: str, fmt: str = "html",
                 graph: LineageGraph | None = None, generated_at: datetime | None = None) -> str:
    """The audit report of one request, made from the audit log and the workspace's lineage.

    Args:
        workspace: the loaded workspace.
        log: the audit log.
        request_id: the request.
        fmt: ``html`` (a self-contained page with the lineage diagram coloured by state) or ``md``
            (Markdown).
        graph: the lineage graph; default: the workspace's.
        generated_at: the time the report says it was made; default: now.

    Returns:
        The report's text.

    Raises:
        NotFoundError: the log has no entry for the request.
        ValueError: ``fmt`` is neither ``html`` nor ``md``.
    """
    trail = request_trail(log, request_id)
    if fmt == "md":
        return report_markdown(trail, generated_at)
    if fmt != "html":
        raise ValueError(f"unknown report format {fmt!r} (html or md)")
    graph = graph if graph is not None else build_lineage_graph(workspace)
    return report_html(trail, graph, generated_at)


def erasure_certificate(workspace: Workspace, log: AuditLog, request_id: str, signing_key,
                        issued_at: datetime | None = None) -> dict[str, Any]:
    """The signed erasure certificate of one request (see ``render.certificate`` and
    ``crypto.signing``).

    Args:
        workspace: the loaded workspace (the journal cross-check).
        log: the audit log.
        request_id: the request.
        signing_key (Ed25519PrivateKey): the certificate signing key (Ed25519, loaded).
        issued_at: the certificate's time; default: now.

    Returns:
        The certificate document, signed.

    Raises:
        NotCertifiable: the whole log does not verify (chain, anchor, journal) or the request's
            latest verification is not complete.
        NotFoundError: the log has no entry for the request.
    """
    from piitracer.audit.signatures import Registry, people_of

    registrar = signing_key.public_key()
    checked = verify_audit(log, workspace, registrar=registrar)
    if not checked.ok:
        raise NotCertifiable(f"request {request_id}: the audit log is not intact ({checked.problem})")
    trail = request_trail(log, request_id, checked)
    issued = (issued_at or datetime.now(timezone.utc)).replace(microsecond=0)
    registrations = log.entries(kinds=(EntryKind.PERSON,))
    people = people_of(trail.entries, Registry(registrations, registrar), [e.body for e in registrations])
    return sign(certificate_body(trail, issued, log.key.key_id, people), signing_key)


def check_certificate(path: Path, public_key_path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """Check a certificate file against the public key of the key that signed it.

    Args:
        path: the certificate file.
        public_key_path: the signing key's public key (PEM).

    Returns:
        (the certificate document, None) when it is signed by that key and unchanged since;
            (the document or None, why not) otherwise.

    Raises:
        InputError: the certificate file cannot be read.
        SigningKeyError: the public key cannot be read.
    """
    public = load_public_key(public_key_path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot read the certificate: {getattr(error, 'strerror', None) or error}") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        return None, f"{path}: not JSON (line {error.lineno}): a certificate changed or truncated"
    from piitracer.identity.statements import people_problem

    problem = check(document, public)
    if problem is None:  # signed and unchanged: then each person's own signature, with public keys alone
        people = people_problem(document["certificate"], public)
        problem = f"people: {people}" if people else None
    return document, problem


def table_metadata_hash(workspace: Workspace, dataset: str, lakehouse: Lakehouse | None = None) -> tuple[str, str] | None:
    """A table's newest metadata file and its SHA-256 (its format's ``newest_metadata``:
    Iceberg's current ``metadata.json``, Delta's last ``_delta_log`` commit).

    Args:
        workspace: the loaded workspace.
        dataset: the catalogued dataset.
        lakehouse: the session's lakehouse; default: a new one.

    Returns:
        (the file relative to the table's location, its SHA-256); None for formats without one or
            when the table is not there.
    """
    entry = workspace.config.catalog.get(dataset)
    places = lakehouse_of(workspace, lakehouse)
    location = places.location(dataset)
    if entry is None or location is None:
        return None
    store = places.store
    newest = support_for(entry.format).newest_metadata(location, store)
    if newest is None:
        return None
    return location.relative(newest), hashlib.sha256(store.read_bytes(newest)).hexdigest()


def attested_steps(log: AuditLog, plan: DeletionPlan, registrar: Any = None) -> dict[str, str]:
    """The attestations the audit log holds for a plan's person steps: only those signed by the
    attesting person's own registered key count (an entry written with the audit key alone, or by
    a revoked key, does not).

    Args:
        log: the workspace's audit log.
        plan: the plan.
        registrar: the workspace signing key's public key, which signed every person's registration
            (None: registrations are taken from the log's integrity alone).

    Returns:
        Step id -> "by NAME at TIME" for every attested person step (manual, manual_review,
            recompute).
    """
    from piitracer.audit.signatures import Registry, signer

    registry = Registry(log.entries(kinds=(EntryKind.PERSON,)), registrar)
    found: dict[str, str] = {}
    for entry in log.entries(plan_id=plan.plan_id, kinds=(EntryKind.ATTESTATION,)):
        body = entry.body
        if signer(entry, registry) == body.get("attested_by"):
            found[str(body.get("step_id"))] = f"by {body.get('attested_by')} at {body.get('attested_at')}"
    return found
