"""The public API's wiring of the layers: workspace -> ingest -> graph -> plan -> execute -> verify
-> audit -> report, plus the demo flow. Only this module and ``cli`` import across layers."""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from pydantic import ValidationError

from piitracer.audit import (AuditError, AuditKey, AuditLog, StepEvidence, VerifyResult, load_audit_key,
                             record_attestation_entry, record_plan_entry, record_step_entries, record_verification_entry)
from piitracer.executor.journal import Journal
from piitracer.executor.runner import ExecuteOptions, ExecutionContext, PlanExecutor, RunSummary, StepResult
from piitracer.graph.lineage_graph import LineageGraph
from piitracer.ingest.workspace_ingest import ingest_workspace
from piitracer.ingest.workspace_loader import Workspace, WorkspaceError, load_workspace
from piitracer.model.audit import AuditEntry, EntryKind, RequestTrail
from piitracer.model.errors import NotFoundError
from piitracer.model.lineage import ColumnRef
from piitracer.model.plan import DeletionPlan, PlanRequest, Subject
from piitracer.model.table_state import TableState
from piitracer.model.verification import VerificationReport
from piitracer.model.workspace import DatasetFormat
from piitracer.storage.locations import Location, LocationError
from piitracer.storage.store import StorageError, Store
from piitracer.planner.build import PlanningError, build_plan
from piitracer.render.report import report_html, report_markdown
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
            raise NotFoundError(f"dataset {dataset!r} has no column {column!r} (columns: {known})")
        return ref
    raise NotFoundError(f"{text!r} is neither a dataset nor a dataset.column of the lineage graph")


def plan_deletion(
    workspace: Workspace,
    graph: LineageGraph,
    sources: Sequence[str],
    subjects: Sequence[Subject],
    table_states: Mapping[str, TableState] | None = None,
    labels: Sequence[str] = (),
    live_types: Mapping[str, str] | None = None,
) -> DeletionPlan:
    """Plan the erasure of ``subjects`` whose key is in the ``sources`` columns (``db.table.column``).

    ``table_states`` defaults to what the live Iceberg tables of the workspace say (tags, branches).
    Every subject value is parsed strictly against its source key column's type (the catalog's
    ``column_types``, else the live table's schema, ``live_types`` to override): a value that is not
    exactly a value of that type stops the plan, named by ``labels`` (its position), never shown.
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
    if live_types is None:
        live_types = source_key_types(workspace, refs)
    return build_plan(graph, workspace.config.catalog, workspace.config.policy, request, table_states,
                      live_types, tuple(labels))


def source_key_types(workspace: Workspace, sources: Sequence[ColumnRef]) -> dict[str, str]:
    """``dataset.column`` -> the key type the live table's own schema gives each source column
    (absent when the table is not there, or the column's type is not a key type)."""
    from piitracer.formats import FormatError, key_type_name, table_schema

    found: dict[str, str] = {}
    locations, store = dataset_locations(workspace), workspace_store(workspace)
    for ref in sources:
        entry = workspace.config.catalog.get(ref.dataset)
        if entry is None:
            continue
        try:
            schema = table_schema(entry, locations.get(ref.dataset), store)
        except (FormatError, StorageError) as error:
            raise PlanningError(f"source {ref}: dataset {ref.dataset}: {error}") from None
        if schema is not None and ref.column in schema.names:
            name = key_type_name(schema.field(ref.column).type)
            if name is None:
                raise PlanningError(f"source {ref}: the table stores it as {schema.field(ref.column).type}, "
                                    "which piitracer does not compare as a subject key")
            found[str(ref)] = name
        elif schema is not None:
            raise PlanningError(f"source {ref}: the table's schema has no column {ref.column!r} "
                                f"(columns: {', '.join(schema.names)})")
    return found


def live_table_states(workspace: Workspace) -> dict[str, TableState]:
    """Tags and branches of every catalogued Iceberg table that exists (local or object store)."""
    from piitracer.formats import FormatError, iceberg

    states = {}
    locations, store = dataset_locations(workspace), workspace_store(workspace)
    for dataset, entry in sorted(workspace.config.catalog.items()):
        location = locations.get(dataset)
        if entry.format is not DatasetFormat.ICEBERG or location is None:
            continue
        try:
            if not store.exists(location):
                continue
            state = iceberg.table_state(dataset, location, store)
        except (FormatError, StorageError) as error:
            raise PlanningError(f"dataset {dataset}: {error}") from None
        if state is not None:
            states[dataset] = state
    return states


def workspace_store(workspace: Workspace) -> Store:
    """The files of a workspace's datasets, through its ``storage:`` settings."""
    return Store(workspace.config.storage)


def dataset_locations(workspace: Workspace) -> dict[str, Location]:
    """Every catalogued dataset's location as a :class:`Location` (relative paths under the
    workspace; ``s3://...`` and other URIs as they are). A location that is not a usable place is
    a workspace error naming the dataset."""
    found = {}
    for dataset, entry in workspace.config.catalog.items():
        if entry.location is None:
            continue
        try:
            found[dataset] = Location.parse(entry.location, workspace.root)
        except LocationError as error:
            raise WorkspaceError(f"{workspace.root / 'piitracer.yaml'}: catalog.{dataset}.location: {error}") from None
    return found


def warehouse_roots(workspace: Workspace) -> tuple[Location, ...]:
    """The ``warehouse_roots`` as locations (empty: no restriction)."""
    return tuple(Location.parse(root, workspace.root) for root in workspace.config.warehouse_roots)


def write_private(path: str | os.PathLike[str], text: str) -> None:
    """Write a file only its owner can read (mode 0600): plans and journals hold subject values."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # also when the file existed with a wider mode
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def load_plan(path: str | os.PathLike[str]) -> DeletionPlan:
    """Read a plan file, refusing one that is not well formed (unknown schema version, duplicate
    step ids, a dependency cycle, parameters of another action...) or whose content no longer
    matches its ``plan_id``."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise PlanningError(f"{path}: cannot read the plan: {error}") from None
    try:
        plan = DeletionPlan.model_validate_json(text)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        message = first["msg"].removeprefix("Value error, ")
        raise PlanningError(f"{path}: not a valid piitracer plan: {field or '(top level)'}: {message}") from None
    if plan.plan_id != plan.content_hash():
        raise PlanningError(f"{path}: plan_id does not match the plan's content (edited after planning?): re-plan")
    return plan


class PlanSealError(PlanningError):
    """A plan whose seal does not verify, or an unsealed plan run without ``--unsealed``."""


def seal_plan(plan: DeletionPlan, key: AuditKey) -> DeletionPlan:
    """The plan with an HMAC seal over its id under the audit key (see ``model.plan.PlanSeal``)."""
    from piitracer.model.plan import PlanSeal

    return plan.model_copy(update={"seal": PlanSeal(key_id=key.key_id, hmac=key.plan_seal(plan.plan_id))})


def check_plan_seal(plan: DeletionPlan, key: AuditKey | None, unsealed_ok: bool) -> None:
    """Refuse a plan whose seal does not verify under ``key``; refuse an unsealed plan unless the
    caller accepted it (``--unsealed``). ``key`` None (a dry run without a key) skips the seal."""
    import hmac as _hmac

    if plan.seal is None:
        if not unsealed_ok:
            raise PlanSealError(f"plan {plan.plan_id[:16]} is not sealed (no audit key when it was planned): "
                                "re-plan with an audit key, or pass --unsealed to run it anyway (recorded in the audit log)")
        return
    if key is None:
        return
    if plan.seal.key_id != key.key_id:
        raise PlanSealError(f"plan {plan.plan_id[:16]} was sealed with another audit key (key id {plan.seal.key_id}, "
                            f"this one is {key.key_id}): refusing it")
    if not _hmac.compare_digest(plan.seal.hmac, key.plan_seal(plan.plan_id)):
        raise PlanSealError(f"plan {plan.plan_id[:16]}: its seal does not verify: the plan was altered after it was "
                            "sealed: refusing it")


def execution_context(workspace: Workspace, attested: Sequence[str] = ()) -> ExecutionContext:
    """Where the executor finds tables, Spark settings and its journal, for one workspace
    (``attested``: ids of person steps their owners attested)."""
    return ExecutionContext(
        catalog=workspace.config.catalog,
        locations=dataset_locations(workspace),
        spark=workspace.config.spark,
        warehouse=workspace.resolve(workspace.config.spark.warehouse),
        journal_path=workspace.root / ".piitracer" / "journal.sqlite",
        warehouse_roots=warehouse_roots(workspace),
        attested=frozenset(attested),
        store=workspace_store(workspace),
    )


def execute_plan(
    workspace: Workspace,
    plan: DeletionPlan,
    options: ExecuteOptions = ExecuteOptions(),
    on_step: Callable[[StepResult], None] | None = None,
    attested: Sequence[str] = (),
) -> RunSummary:
    """Run a plan on the workspace's lakehouse (journaled; ``options.resume`` continues a killed run).
    The executor's preflight refuses a plan that does not match the workspace or would act outside
    its datasets' locations before anything is journaled. Person steps are ``awaiting_attestation``
    unless their ids are in ``attested``."""
    return PlanExecutor(plan, execution_context(workspace, attested), options, on_step).run()


def prepare_execution(
    workspace: Workspace,
    plan: DeletionPlan,
    options: ExecuteOptions = ExecuteOptions(),
    on_step: Callable[[StepResult], None] | None = None,
    attested: Sequence[str] = (),
) -> PlanExecutor:
    """An executor whose preflight already passed (``PlanRefused`` otherwise): the CLI checks
    everything before it records anything in the audit log, then calls ``run()``."""
    executor = PlanExecutor(plan, execution_context(workspace, attested), options, on_step)
    executor.preflight()
    return executor


# ---- audit trail ----------------------------------------------------------------------------


def audit_log_path(workspace: Workspace) -> Path:
    """``<workspace>/.piitracer/audit.sqlite``."""
    return workspace.root / ".piitracer" / "audit.sqlite"


def audit_log(workspace: Workspace | str | os.PathLike[str], key: str | bytes | AuditKey | None = None,
              key_file: str | os.PathLike[str] | None = None, create: bool = True) -> AuditLog:
    """Open (or, with ``create``, create) the workspace's audit log. The key is ``key`` (the demo
    passes its demo key here), else ``key_file``, else ``$PIITRACER_AUDIT_KEY`` /
    ``$PIITRACER_AUDIT_KEY_FILE``; with none, :class:`piitracer.audit.AuditKeyError`. There is no
    default key. A missing log with ``create=False`` is an :class:`piitracer.audit.AuditError`."""
    loaded = key if isinstance(key, AuditKey) else load_audit_key(key, key_file)
    if not isinstance(workspace, Workspace):
        workspace = load_workspace(workspace)
    path = audit_log_path(workspace)
    if not create and not path.exists():
        raise AuditError(f"{path}: no audit log in this workspace (nothing has been recorded yet)")
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path.parent, 0o700)  # also when the journal created the folder first, or umask widened it
    return AuditLog(path, loaded)


def record_plan(log: AuditLog, plan: DeletionPlan) -> AuditEntry:
    """Append the plan entry (id, requests, deadline, per-dataset decisions; no subject values)."""
    return record_plan_entry(log, plan)


def record_run(log: AuditLog, plan: DeletionPlan, run: RunSummary | Sequence[Mapping[str, Any]],
               workspace: Workspace) -> list[AuditEntry]:
    """Append a step entry per step of a run: ``run`` is the executor's :class:`RunSummary` (the
    journal adds start/finish times and original run ids) or ``Journal.steps(plan_id)``. Each entry
    carries the SHA-256 of the dataset's newest table metadata file at recording time. Steps already
    recorded unchanged are skipped; the plan entry is added first if missing."""
    if isinstance(run, RunSummary) and run.status == "dry-run":
        raise ValueError("a dry run changes nothing: there is no run to record")
    record_plan_entry(log, plan)
    recorded = list(run) if not isinstance(run, RunSummary) else journal_steps(workspace, plan.plan_id)
    by_id = {record["step_id"]: record for record in recorded}
    if isinstance(run, RunSummary):
        for result in run.results:  # a step the journal does not hold (journal missing): the summary's facts
            if result.step.id not in by_id:
                by_id[result.step.id] = {
                    "step_id": result.step.id, "order": result.step.order, "dataset": result.step.dataset,
                    "action": result.step.action.value, "state": result.state, "run_id": run.run_id,
                    "outcome": result.outcome.as_dict() if result.outcome else None, "message": result.message}
    fingerprints: dict[str, tuple[str, str] | None] = {}
    evidence = []
    for record in by_id.values():
        dataset = record["dataset"]
        if dataset not in fingerprints:
            fingerprints[dataset] = table_metadata_hash(workspace, dataset)
        outcome = record.get("outcome") or {}
        metadata_file, metadata_hash = fingerprints[dataset] or (None, None)
        evidence.append(StepEvidence(
            step_id=record["step_id"], order=int(record["order"]), dataset=dataset, action=record["action"],
            state=record["state"], run_id=record.get("run_id"), started_at=record.get("started_at"),
            finished_at=record.get("finished_at"), version_before=_text(outcome.get("version_before")),
            version_after=_text(outcome.get("version_after")), metadata_file=metadata_file, metadata_hash=metadata_hash,
            rows_deleted=int(outcome.get("rows_deleted") or 0), files_rewritten=int(outcome.get("files_rewritten") or 0),
            files_removed=int(outcome.get("files_removed") or 0), bytes_removed=int(outcome.get("bytes_removed") or 0),
            message=record.get("message"), details=outcome.get("details") or {}))
    return record_step_entries(log, plan, evidence)


def record_verification(log: AuditLog, plan: DeletionPlan, report: VerificationReport) -> AuditEntry:
    """Append the verification entry (per dataset state, files scanned, findings without values)."""
    record_plan_entry(log, plan)
    return record_verification_entry(log, plan, report)


def verify_audit(log: AuditLog) -> VerifyResult:
    """Recompute the chain, hashes, seals, sequence and Merkle roots; the first problem if any."""
    return log.verify()


def request_trail(log: AuditLog, request_id: str) -> RequestTrail:
    """Everything the log holds about one request, with its Merkle root and the chain's state;
    KeyError when the log has no entry for it."""
    entries = log.entries(request_id=request_id)
    if not entries:
        raise NotFoundError(f"the audit log has no entry for request {request_id!r}")
    result = log.verify()
    return RequestTrail(request_id=request_id, entries=tuple(entries), merkle_root=log.request_root(request_id),
                        chain_head=log.head()[1], chain_entries=result.entries, chain_intact=result.ok,
                        chain_problem=str(result.problem) if result.problem else None)


def audit_report(workspace: Workspace, log: AuditLog, request_id: str, fmt: str = "html",
                 graph: LineageGraph | None = None, generated_at: datetime | None = None) -> str:
    """The audit report of one request (``html``: self-contained page with the lineage diagram
    coloured by state; ``md``: Markdown), made from the audit log and the workspace's lineage."""
    trail = request_trail(log, request_id)
    if fmt == "md":
        return report_markdown(trail, generated_at)
    if fmt != "html":
        raise ValueError(f"unknown report format {fmt!r} (html or md)")
    graph = graph if graph is not None else build_lineage_graph(workspace)
    return report_html(trail, graph, generated_at)


def table_metadata_hash(workspace: Workspace, dataset: str) -> tuple[str, str] | None:
    """(file relative to the location, SHA-256) of a table's newest metadata: Iceberg's current
    ``metadata.json``, Delta's last ``_delta_log`` commit; None for other formats or when the table
    is not there."""
    from piitracer.formats import delta, iceberg

    entry = workspace.config.catalog.get(dataset)
    location = dataset_locations(workspace).get(dataset)
    if entry is None or location is None:
        return None
    store = workspace_store(workspace)
    if entry.format is DatasetFormat.ICEBERG:
        newest = iceberg.newest_metadata_file(location, store)
    elif entry.format is DatasetFormat.DELTA:
        newest = delta.newest_commit(location, store)
    else:
        return None
    if newest is None:
        return None
    return location.relative(newest), hashlib.sha256(store.read_bytes(newest)).hexdigest()


def journal_steps(workspace: Workspace, plan_id: str) -> list[dict[str, Any]]:
    """Every journaled step of a plan (empty when it never ran): what :func:`record_run` records
    when a run stopped with an error instead of returning its summary."""
    path = execution_context(workspace).journal_path
    if not path.exists():
        return []
    journal = Journal(path)
    try:
        return journal.steps(plan_id)
    finally:
        journal.close()


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
def verify_plan(
    workspace: Workspace,
    plan: DeletionPlan,
    value_sets: Mapping[str, list] | None = None,
    step_states: Mapping[str, str] | None = None,
    attested: Mapping[str, str] | None = None,
    sweep: str | None = None,
) -> VerificationReport:
    """Check that no file and no retained snapshot/version of the plan's datasets still holds a
    subject value. ``value_sets`` and ``step_states`` (step id -> journal state) default to what
    the workspace journal recorded for this plan; a plan never resolved raises
    :class:`~piitracer.verify.VerificationError` (run ``piitracer execute`` first). ``attested``
    maps the ids of the plan's person steps their owners attested (:func:`attested_steps`) to who
    and when. ``sweep`` (``catalog`` or ``roots``) also decodes what the plan does not reach."""
    from piitracer.executor.journal import Journal
    from piitracer.verify.sweep import sweep as sweep_beyond

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
    report = verify_datasets(plan, workspace.config.catalog, context.locations, value_sets, step_states,
                             attested=attested, store=context.store)
    if sweep is not None:
        found, swept, files = sweep_beyond(plan, workspace.config.catalog, context.locations, value_sets, sweep,
                                           context.warehouse_roots, context.store)
        report = report.model_copy(update={"datasets": report.datasets + tuple(found), "sweep": sweep,
                                           "swept": tuple(swept), "swept_files": files})
    return report


PERSON_ACTIONS = ("manual", "manual_review", "recompute")


class AttestationError(PlanningError):
    """An attestation that cannot be recorded (unknown step, not a person's step, unreadable evidence)."""


@dataclass(frozen=True)
class Evidence:
    """What backs an attestation: a file's or a text's SHA-256 (the content is never stored)."""

    sha256: str
    kind: str  # file | text
    name: str | None = None  # the file's name, for the person reading the log

    @classmethod
    def of(cls, given: str) -> "Evidence":
        """``given`` names an existing file (its bytes are hashed) or is the evidence text itself."""
        path = Path(given)
        if path.exists():
            try:
                data = path.read_bytes()
            except OSError as error:
                raise AttestationError(f"--evidence {given}: cannot read the evidence file: {error.strerror or error}") from None
            return cls(hashlib.sha256(data).hexdigest(), "file", path.name)
        return cls(hashlib.sha256(given.encode("utf-8")).hexdigest(), "text")


def attest_step(log: AuditLog, plan: DeletionPlan, step_id: str, attested_by: str, evidence: Evidence | None,
                statement: str | None = None) -> AuditEntry:
    """Record that a person did a ``manual``/``manual_review``/``recompute`` step of the plan."""
    step = next((s for s in plan.steps if s.id == step_id), None)
    if step is None:
        person = ", ".join(f"{s.id} ({s.action.value} {s.dataset})" for s in plan.steps if s.action.value in PERSON_ACTIONS)
        raise AttestationError(f"--step {step_id}: no such step in plan {plan.plan_id[:16]} (its person steps: {person or 'none'})")
    if step.action.value not in PERSON_ACTIONS:
        raise AttestationError(f"--step {step_id}: {step.action.value} on {step.dataset} is a step piitracer performs and "
                               "proves itself: only manual, manual_review and recompute steps are attested")
    if not attested_by.strip():
        raise AttestationError("--by: say who confirms the step (a name or a team)")
    record_plan_entry(log, plan)
    note = statement if statement is not None else (f"evidence file {evidence.name}" if evidence and evidence.name else None)
    return record_attestation_entry(log, plan, step_id=step.id, dataset=step.dataset, action=step.action.value,
                                    attested_by=attested_by.strip(), evidence_sha256=evidence.sha256 if evidence else None,
                                    evidence_kind=evidence.kind if evidence else None, statement=note)


def recorded_attestations(workspace: Workspace, key: AuditKey, plan: DeletionPlan) -> dict[str, str]:
    """:func:`attested_steps` of the workspace's audit log, without creating a log (none yet: {})."""
    if not audit_log_path(workspace).exists():
        return {}
    with audit_log(workspace, key=key, create=False) as log:
        return attested_steps(log, plan)


def attested_steps(log: AuditLog, plan: DeletionPlan) -> dict[str, str]:
    """Step id -> "by NAME at TIME" for every attestation the audit log holds for the plan's
    person steps (manual, manual_review, recompute)."""
    found: dict[str, str] = {}
    for entry in log.entries(plan_id=plan.plan_id):
        if entry.kind is EntryKind.ATTESTATION:
            body = entry.body
            found[str(body.get("step_id"))] = f"by {body.get('attested_by')} at {body.get('attested_at')}"
    return found


# ---- the demo: build the fixture lakehouse, plan, execute (verify and audit slot in) ------------

DEMO_SOURCE = "prod.payments.user_id"


@dataclass
class DemoResult:
    """What :func:`run_demo` did, phase by phase (``seconds``: phase -> wall time)."""

    folder: Path
    build: Any  # piitracer.demo.DemoBuild
    subjects: int
    subject_rows: int  # the subjects' rows in the source before the erasure (0: already erased)
    plan: DeletionPlan
    plan_path: Path
    diagram_path: Path
    run: RunSummary | None = None
    # The verification right after execute: the person steps still open (verify exits 1 then).
    first_verification: VerificationReport | None = None
    attestations: list[AuditEntry] = field(default_factory=list)  # the simulated owners' attestations
    verification: VerificationReport | None = None  # the final one
    report_path: Path | None = None  # the audit report (HTML) of the batch's first request
    audit_intact: bool | None = None  # the audit log verified after recording this run
    seconds: dict[str, float] = field(default_factory=dict)

    def totals(self) -> dict[str, int]:
        """Datasets erased (a delete or rewrite committed), rows removed, files rewritten, bytes removed."""
        totals = {"datasets_erased": 0, "rows_deleted": 0, "files_rewritten": 0, "files_removed": 0, "bytes_removed": 0}
        if self.run is None:
            return totals
        for dataset, row in self.run.by_dataset().items():
            for key in ("rows_deleted", "files_rewritten", "files_removed", "bytes_removed"):
                totals[key] += row[key]
            if any(r.step.dataset == dataset and r.state == "committed" and r.step.action.value in ("delete_rows", "rewrite_files", "rewrite_archive")
                   for r in self.run.results):
                totals["datasets_erased"] += 1
        return totals


def run_demo(
    folder: str | os.PathLike[str] = "demo",
    subjects: int | None = None,
    rows: int | None = None,
    rebuild: bool = False,
    warehouse: str | os.PathLike[str] | None = None,
    progress: Callable[[str], None] | None = None,
    attest: bool = True,
) -> DemoResult:
    """The whole demo in ``folder``: copy the fixture workspace there (once), build its lakehouse
    (or reuse it; ``rebuild`` starts over), plan the erasure of user 8841302 — or of ``subjects``
    random users that have rows, as one batch — from ``prod.payments.user_id``, write ``plan.json``
    (0600) and ``lineage.svg``, and execute the plan (it is the demo's own lakehouse: no concurrent
    writers, tags may be dropped). Then it verifies — the person steps (a Kafka topic, a masked token
    table, an aggregate) are still awaiting attestation, so this first verification is not complete —
    and, unless ``attest`` is False, attests each as its simulated owner (the evidence says it is
    simulated), verifies again and writes the audit report. ``warehouse`` puts the Iceberg warehouse
    elsewhere (tests point it at their running Spark session's). ``progress`` gets one line per phase."""
    from piitracer.demo import DEFAULT_ROWS, DEFAULT_SEED, SUBJECT_USER_ID, build_lakehouse
    from piitracer.demo.subjects import existing_subjects, subject_rows
    from piitracer.demo.workspace_files import prepare_workspace
    from piitracer.executor.spark_session import spark_session
    from piitracer.render.lineage_diagram import render_lineage

    say = progress or (lambda message: None)
    seconds: dict[str, float] = {}
    clock = time.monotonic()

    def phase(name: str) -> None:
        nonlocal clock
        now = time.monotonic()
        seconds[name] = now - clock
        clock = now

    root = prepare_workspace(Path(folder), warehouse=Path(warehouse) if warehouse else None)
    workspace = load_workspace(root)
    built = build_lakehouse(workspace, rows=rows or DEFAULT_ROWS, rebuild=rebuild, progress=say)
    phase("build")
    say(f"lakehouse {'reused' if built.reused else 'built'} in {seconds['build']:.1f} s")

    graph = build_lineage_graph(workspace)
    source = _demo_source(workspace)
    spark = spark_session(workspace.config.spark, workspace.resolve(workspace.config.spark.warehouse))
    values = existing_subjects(spark, source.table, "user_id", subjects, DEFAULT_SEED) if subjects else [str(SUBJECT_USER_ID)]
    found = subject_rows(spark, source.table, "user_id", values)
    received = datetime.now(timezone.utc).replace(microsecond=0)
    batch = [Subject(value=v, request_id=f"demo-{received:%Y%m%dT%H%M%S}-{i + 1}", received_at=received) for i, v in enumerate(values)]
    key = load_audit_key(key_file=demo_audit_key(root))
    plan = seal_plan(plan_deletion(workspace, graph, [DEMO_SOURCE], batch), key)
    plan_path, diagram_path = root / "plan.json", root / "lineage.svg"
    write_private(plan_path, plan.to_json())
    diagram_path.write_bytes(render_lineage(plan_diagram(graph, plan), "svg"))
    phase("plan")
    say(f"planned {len(plan.steps)} steps for {len(batch)} subject(s) ({found} source rows): {plan_path}")

    result = DemoResult(folder=root, build=built, subjects=len(batch), subject_rows=found, plan=plan,
                        plan_path=plan_path, diagram_path=diagram_path, seconds=seconds)
    options = ExecuteOptions(no_concurrent_writers=True, drop_refs=True)
    log = audit_log(workspace, key=key)
    try:
        record_plan(log, plan)
        result.run = execute_plan(workspace, plan, options, attested=attested_steps(log, plan),
                                  on_step=lambda r: say(f"  {r.step.id} {r.step.action.value} {r.step.dataset}: {r.state}"))
        record_run(log, plan, result.run, workspace)
        awaiting = result.run.awaiting()
        say(f"executed: {result.run.status}" + (f": {len(awaiting)} step(s) awaiting attestation: " + ", ".join(
            f"{r.step.id} {r.step.action.value} {r.step.dataset}" for r in awaiting) if awaiting else ""))
        phase("execute")

        result.first_verification = result.verification = verify_plan(workspace, plan, attested=attested_steps(log, plan))
        record_verification(log, plan, result.verification)
        say("verified: " + ("complete" if result.verification.complete else
                            f"not complete (verify exits 1): {_open_summary(result.verification)}"))
        if attest and not result.verification.complete:
            for step in (s for s in plan.steps if s.action.value in PERSON_ACTIONS):
                if step.id in attested_steps(log, plan):
                    continue
                owner = step.owner or _DEMO_OWNERS.get(step.action.value, "data-platform on-call")
                statement = (f"SIMULATED by piitracer demo: no person did this; {owner} would confirm "
                             f"{step.action.value} of {step.dataset} here")
                result.attestations.append(attest_step(log, plan, step.id, f"{owner} (simulated)", Evidence.of(statement),
                                                       statement=statement))
                say(f"  attested {step.id} {step.action.value} {step.dataset} as {owner} (simulated)")
            result.verification = verify_plan(workspace, plan, attested=attested_steps(log, plan))
            record_verification(log, plan, result.verification)
            say("verified again: " + ("complete" if result.verification.complete else _open_summary(result.verification)))
        phase("verify")
        result.audit_intact = log.verify().ok
        result.report_path = root / "report.html"
        result.report_path.write_text(audit_report(workspace, log, batch[0].request_id, graph=graph), encoding="utf-8")
    finally:
        log.close()
    phase("audit")
    say(f"audit trail recorded; report: {result.report_path}")
    return result


# Who the demo's simulated attestations name when a step has no owner in the catalog.
_DEMO_OWNERS = {"manual_review": "ml-platform", "recompute": "analytics-eng", "manual": "streaming-team"}


def _open_summary(report: VerificationReport) -> str:
    counts: dict[str, int] = {}
    for item in report.open_items():
        counts[item.state.value] = counts.get(item.state.value, 0) + 1
    return ", ".join(f"{n} {state}" for state, n in sorted(counts.items())) or "nothing open"


def plan_diagram(graph: LineageGraph, plan: DeletionPlan):
    """The lineage diagram of a plan's datasets, reached through every identifier of its sources
    (the resolve step captures them all: a PAN-only table is the subject's too); the source key
    column is highlighted first."""
    from piitracer.render.lineage_diagram import lineage_diagram

    starts: list[ColumnRef] = []
    for capture in plan.resolve:
        for column in (*capture.key_columns, *capture.identifiers):
            ref = ColumnRef(dataset=capture.dataset, column=column)
            if graph.has_column(ref) and ref not in starts:
                starts.append(ref)
    return lineage_diagram(graph, starts or None, datasets=[d.dataset for d in plan.datasets])


def demo_audit_key(folder: Path) -> Path:
    """The demo's own audit key: random, made once per demo folder, in a 0600 file beside its
    journal. (Outside the demo the key comes from the environment or a key file the user keeps
    secret; piitracer has no key of its own.)"""
    path = Path(folder) / ".piitracer" / "demo-audit.key"
    if not path.exists():
        import secrets

        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_private(path, secrets.token_hex(32))
    return path


def _demo_source(workspace: Workspace):
    """The demo's source dataset entry (``prod.payments``) of the workspace catalog."""
    dataset = DEMO_SOURCE.rsplit(".", 1)[0]
    entry = workspace.config.catalog.get(dataset)
    if entry is None or not entry.table:
        raise PlanningError(f"the demo workspace's catalog has no Iceberg table {dataset}")
    return entry
