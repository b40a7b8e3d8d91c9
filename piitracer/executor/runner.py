"""Run a deletion plan: resolve once, then every step in plan order, each journaled before and
after it runs. A killed run resumes (``resume=True``) where it stopped: committed steps are not
applied again, and every step is idempotent, so one that was running when the process died is
simply run again (a delete with nothing left to match commits nothing)."""

from __future__ import annotations

import logging
import time
import uuid
from datetime import datetime, timedelta, timezone
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from piitracer.formats import Shown, StepWork, support_for
from piitracer.storage.failpoints import during, failpoint
from piitracer.executor.journal import ATTESTED, AWAITING, BLOCKED, COMMITTED, FAILED, PENDING, RUNNING, Journal, JournaledStep
from piitracer.model.outcome import Attempt, SafetyError, StepOutcome
from piitracer.executor.preflight import Preflight, preflight
from piitracer.executor.resolve import resolve_values, spark_needed, union_of, values_for
from piitracer.executor.shred_check import check_ciphertext
from piitracer.executor.shred_step import destroy_subject_keys
from piitracer.shred.place import VaultPlace
from piitracer.executor.spark_session import spark_session
from piitracer.formats.iceberg_catalogs import IcebergCatalogs
from piitracer.model.plan import PERSON_ACTIONS, Action, DeletionPlan, Step
from piitracer.model.workspace import CatalogDataset
from piitracer.model.settings import FileWorkSettings, SparkSettings
from piitracer.storage.file_tasks import FileTasks, SparkFileTasks, choose_file_tasks
from piitracer.storage.locations import Location
from piitracer.storage.store import Store
from piitracer.model.errors import StepFailedError

# Logs name steps, datasets and counts; never a subject value (tests/integration/test_no_leaks.py).
log = logging.getLogger(__name__)

class ExecutionError(StepFailedError, RuntimeError):
    """The run stopped; the message names the step and why (never a subject value)."""


@dataclass(frozen=True)
class ExecuteOptions:
    dry_run: bool = False
    resume: bool = False
    no_concurrent_writers: bool = False  # allows remove_orphan_files
    drop_refs: bool = False  # allows release_ref to drop the tag/branch
    # A new run of a plan that already ran: every step runs again, committed ones included, and
    # resolve re-reads the sources (see PlanExecutor._resolve). For a subject's rows written after
    # the first run (a concurrent writer, a late pipeline run) that the verifier reports as found.
    rerun: bool = False
    # The plan carries no seal (no audit key at planning): the caller accepted that (--unsealed).
    unsealed: bool = False


@dataclass
class StepResult:
    step: Step
    state: str
    outcome: StepOutcome | None = None
    message: str | None = None
    seconds: float = 0.0


@dataclass
class RunSummary:
    run_id: str
    plan_id: str
    status: str  # complete | incomplete (blocked, pending or awaiting-attestation steps) | failed | dry-run
    results: list[StepResult] = field(default_factory=list)
    seconds: float = 0.0

    def awaiting(self) -> list[StepResult]:
        """A person's steps still to be attested (``piitracer attest``)."""
        return [r for r in self.results if r.state == AWAITING]

    def by_dataset(self) -> dict[str, dict[str, int]]:
        """Rows deleted, files rewritten/removed and bytes removed per dataset."""
        totals: dict[str, dict[str, int]] = {}
        for result in self.results:
            row = totals.setdefault(result.step.dataset, {"rows_deleted": 0, "files_rewritten": 0, "files_removed": 0, "bytes_removed": 0})
            if result.outcome:
                for key in row:
                    row[key] += getattr(result.outcome, key)
        return totals


@dataclass
class ExecutionContext:
    """Where things are: built by the API from the workspace (the executor imports no ingest code)."""

    catalog: Mapping[str, CatalogDataset]
    locations: Mapping[str, Location]
    spark: SparkSettings
    warehouse: Path
    journal_path: Path
    # Every location touched must be under one of these; none: nothing is touched (the API always
    # gives some: the workspace's warehouse_roots, else its folder and Spark warehouse).
    warehouse_roots: tuple[Location, ...] = ()
    roots_configured: bool = True  # False: the roots are the defaults (refusals say to set warehouse_roots)
    protected: tuple[Location, ...] = ()  # piitracer's own files: no dataset location may hold them
    attested: frozenset[str] = frozenset()  # ids of person steps their owners attested (from the audit log)
    store: Store = field(default_factory=Store)  # files at the locations (local, s3://, gs://...)
    rewrite: FileWorkSettings = FileWorkSettings()  # where plain Parquet and archive files are rewritten
    # Seals the values the journal keeps under each request's data key (None: kept in clear, for
    # API callers without a request store; the CLI always gives one): a ValueCipher, or a function
    # that gives one when the journal first needs it (the session's requests are registered by then).
    cipher: Any = None
    # Crypto-shredding: the workspace's key vault (``shred.vault``; None: none) and the master key
    # (a MasterKey, or a function that gives it when a key destruction first needs it).
    vault: VaultPlace | None = None
    master: Any = None

    def master_key(self) -> Any:
        """The master key (called only when a key destruction runs)."""
        return self.master() if callable(self.master) else self.master

    def values_cipher(self) -> Any:
        """The cipher of the journal's values (called only when values are read or written)."""
        return self.cipher() if callable(self.cipher) else self.cipher


class PlanExecutor:
    """Executes one plan against one lakehouse."""

    def __init__(self, plan: DeletionPlan, context: ExecutionContext, options: ExecuteOptions = ExecuteOptions(),
                 on_step: Callable[[StepResult], None] | None = None) -> None:
        self.plan, self.context, self.options = plan, context, options
        self.on_step = on_step or (lambda result: None)
        self._spark = None
        self._value_sets: dict[str, list[Any]] | None = None
        self._resolved_now = False
        self._ciphertext: dict[str, dict[str, Any]] = {}
        self._checked: Preflight | None = None
        self._present: set[str] = set()  # locations an earlier step of this run found there

    # ---- running --------------------------------------------------------------------------

    def preflight(self) -> Preflight:
        """Check the plan against this workspace and every place it would touch (see
        ``executor.preflight``); raises ``PlanRefused`` before anything is journaled. ``run``
        calls it first unless it already passed."""
        if self._checked is None:
            context = self.context
            self._checked = preflight(self.plan, context.catalog, context.locations, context.spark, context.warehouse,
                                      context.warehouse_roots, context.store, roots_configured=context.roots_configured,
                                      protected=context.protected, vault=context.vault,
                                      master=None if callable(context.master) else context.master)
        return self._checked

    def run(self) -> RunSummary:
        """Run (or with ``dry_run`` describe) every step; raises ExecutionError when a step fails."""
        started = time.monotonic()
        self.preflight()
        if self.options.dry_run:
            results = [StepResult(step, "dry-run", message=describe(step, self.context.catalog, self.plan))
                       for step in self.plan.steps]
            for result in results:
                self.on_step(result)
            return RunSummary("dry-run", self.plan.plan_id, "dry-run", results, time.monotonic() - started)
        with Journal(self.context.journal_path) as journal:
            return self._run(journal, started)

    def _run(self, journal: Journal, started: float) -> RunSummary:
        plan_id = self.plan.plan_id
        if self.options.resume and self.options.rerun:
            raise ExecutionError("--resume continues a stopped run, --rerun starts a new one: choose one")
        if journal.has_steps(plan_id) and not (self.options.resume or self.options.rerun):
            raise ExecutionError(f"plan {plan_id[:16]} has already run (journal {self.context.journal_path}): "
                                 "use --resume to continue it, or --rerun to run every step again "
                                 "(erases the subjects' rows written since)")
        run_id = uuid.uuid4().hex
        journal.start_run(run_id, plan_id, self.options.__dict__)
        summary = RunSummary(run_id, plan_id, "complete")
        states: dict[str, str] = {}
        for step in self.plan.steps:
            record = journal.step(plan_id, step.id)
            if record is not None and record.state == COMMITTED and not self.options.rerun:
                states[step.id] = COMMITTED
                result = StepResult(step, COMMITTED, StepOutcome(**record.outcome) if record.outcome else None,
                                    "already committed in an earlier run")
            else:
                result = self._run_step(journal, run_id, step, states, record)
            states[step.id] = result.state
            summary.results.append(result)
            self.on_step(result)
            if result.state == FAILED:
                summary.status = "failed"
                journal.finish_run(run_id, "failed")
                summary.seconds = time.monotonic() - started
                raise ExecutionError(f"step {step.id} ({step.action.value} on {step.dataset}) failed: {result.message}")
            if result.state in (BLOCKED, PENDING, AWAITING):
                summary.status = "incomplete"
        journal.finish_run(run_id, summary.status)
        summary.seconds = time.monotonic() - started
        return summary

    def _run_step(self, journal: Journal, run_id: str, step: Step, states: dict[str, str],
                  record: JournaledStep | None = None) -> StepResult:
        waiting = [d for d in step.depends_on if states.get(d) in (BLOCKED, FAILED) or
                   (states.get(d) == PENDING and self._gates(d))]
        if waiting:
            message = f"waits for {', '.join(waiting)}"
            journal.mark(self.plan.plan_id, run_id, step, BLOCKED, message=message)
            return StepResult(step, BLOCKED, message=message)
        refusal = self._refusal(step) or self._replication_due(journal, step)
        if refusal is not None:
            state, message = refusal
            journal.mark(self.plan.plan_id, run_id, step, state, message=message)
            return StepResult(step, state, message=message)
        # An earlier attempt that was killed (or failed) after it started work left its starting
        # facts in the journal: carry them into this attempt (outcome.Attempt says why).
        earlier = (record.outcome or {}).get("attempt") if record is not None and record.state in (RUNNING, FAILED) else None
        attempt = Attempt(earlier, lambda facts: journal.save_attempt(self.plan.plan_id, step.id, facts))
        kept = {"attempt": earlier} if earlier else None
        journal.mark(self.plan.plan_id, run_id, step, RUNNING, kept)
        log.info("step %s: %s on %s", step.id, step.action.value, step.dataset)
        failpoint("executor.before_perform", step.id)
        began = time.monotonic()
        try:
            entry = self.context.catalog.get(step.dataset)
            if entry is not None and support_for(entry.format).runs_on_spark(step):
                self.spark()  # start the session before the step's failpoint timer (test-only) starts
            with during("executor.perform", step.id):  # test-only: a kill mid-step or just before the commit below
                outcome = self._perform(journal, step, attempt)
        except Exception as error:  # journal every failure, then stop the run
            message = _one_line(error)
            kept = {"attempt": attempt.earlier} if attempt.earlier else None
            journal.mark(self.plan.plan_id, run_id, step, FAILED, kept, message=message)
            log.warning("step %s failed: %s", step.id, message)
            return StepResult(step, FAILED, message=message, seconds=time.monotonic() - began)
        journal.mark(self.plan.plan_id, run_id, step, COMMITTED, outcome.as_dict())
        if entry is not None and support_for(entry.format).runs_on_spark(step) and step.dataset in self.context.locations:
            self.context.store.committed(self.context.locations[step.dataset])  # Spark changed it: ask its catalog again
        log.info("step %s committed in %.1f s", step.id, time.monotonic() - began)
        log.debug("step %s outcome: %s", step.id, outcome.as_dict())
        failpoint("executor.after_commit", step.id)
        return StepResult(step, COMMITTED, outcome, seconds=time.monotonic() - began)

    def _gates(self, step_id: str) -> bool:
        """A step piitracer leaves to a person (manual, recompute) does not hold back others: the
        rest of the erasure goes on; only refused physical steps (orphans, refs) do."""
        step = next(s for s in self.plan.steps if s.id == step_id)
        return step.action not in PERSON_ACTIONS

    def _refusal(self, step: Step) -> tuple[str, str] | None:
        if step.action in PERSON_ACTIONS:
            if step.id in self.context.attested:
                return ATTESTED, "attested by its owner (see the audit log)"
            who = f" by {step.owner}" if step.owner else ""
            return AWAITING, f"awaiting attestation: to be done{who}: {step.reason or step.action.value}"
        if step.action is Action.REMOVE_ORPHAN_FILES and not self.options.no_concurrent_writers:
            return PENDING, "orphan removal needs --no-concurrent-writers (a writer's uncommitted files look like orphans)"
        if step.action is Action.RELEASE_REF and not self.options.drop_refs:
            ref = step.params
            return BLOCKED, f"{ref.ref_type} {ref.ref!r} retains a pre-delete snapshot: {ref.fix} (or run with --drop-refs)"
        return None

    def _replication_due(self, journal: Journal, step: Step) -> tuple[str, str] | None:
        """An ``await_replication`` step stays pending until its propagation wait has passed since
        the primary's last step committed (its ``depends_on``): only then does a subject row in
        the replica mean the replication failed rather than lags."""
        if step.action is not Action.AWAIT_REPLICATION:
            return None
        finished = [r.finished_at for r in journal.records(self.plan.plan_id)
                    if r.step_id in step.depends_on and r.state == COMMITTED and r.finished_at]
        if len(finished) < len(step.depends_on):  # cannot happen after the dependency check above
            return PENDING, f"waits for the erasure of {step.params.primary} to commit"
        due = max(datetime.fromisoformat(f) for f in finished) + timedelta(seconds=step.params.propagation_seconds)
        if datetime.now(timezone.utc) < due:
            return PENDING, (f"the replication of {step.params.primary} has until {due:%Y-%m-%d %H:%M:%S} UTC "
                             f"({step.params.propagation_wait} after its erasure) to carry it: run execute --resume then")
        return None

    # ---- one step -------------------------------------------------------------------------

    def _perform(self, journal: Journal, step: Step, attempt: Attempt) -> StepOutcome:
        if step.action is Action.RESOLVE:
            return self._resolve(journal)
        if step.action is Action.AWAIT_REPLICATION:  # nothing to write: the verifier looks at the replica
            return StepOutcome(details={"primary": step.params.primary, "propagation_wait": step.params.propagation_wait})
        if step.action is Action.DESTROY_SUBJECT_KEY:  # the vault's files only: nothing of step.dataset is touched
            values = values_for(step.values_from, self._values(journal))
            return destroy_subject_keys(step, values, self.context.vault, self.context.master_key(), self.context.store,
                                        self.context.warehouse_roots, attempt)
        entry = self.context.catalog.get(step.dataset)
        if entry is None:
            raise SafetyError(f"{step.dataset} is not in the catalog")
        location = self.context.locations.get(step.dataset)
        if location is None:
            raise SafetyError(f"{step.dataset}: no location in the catalog")
        check_location(step, location, self.context.warehouse_roots, self.context.store,
                       known_present=location.uri in self._present)
        self._present.add(location.uri)
        values = values_for(step.values_from, self._values(journal)) if step.values_from else []
        perform = support_for(entry.format).perform.get(step.action)
        if perform is None:
            raise SafetyError(f"no way to run {step.action.value} on a {entry.format.value} dataset")
        return perform(StepWork(step, entry, location, values, attempt, self.context.store, self.spark, self.file_tasks,
                                self.context.warehouse_roots))

    # ---- resolve and values ---------------------------------------------------------------

    def _resolve(self, journal: Journal) -> StepOutcome:
        cipher = self.context.values_cipher()
        saved = journal.load_request_values(self.plan.plan_id, cipher)
        if saved is None or (self.options.rerun and not self._resolved_now):
            # A rerun reads the sources again: a subject's late rows may hold identifier values
            # the first run never saw. The first run's values stay (their rows are gone from the
            # sources, but a copy downstream may still hold them).
            found = resolve_values(self.plan, self._subject_rows, self.spark, self._source_frame)
            # Before any key is destroyed: the shredded datasets' ciphertext opens under the subjects'
            # keys, and its plaintext joins their values (executor/shred_check.py).
            self._ciphertext = self._check_ciphertext(journal, found)
            for request_id, value_sets in (saved or {}).items():
                for name, values in value_sets.items():
                    mine = found.setdefault(request_id, {})
                    mine[name] = sorted(set(mine.get(name, [])) | set(values), key=repr)
            saved = {rid: {name: sorted(set(values), key=repr) for name, values in sets.items()} for rid, sets in found.items()}
            journal.save_values(self.plan.plan_id, saved, cipher)
            self._resolved_now = True  # one read of the sources per run, however many resolve steps
        self._value_sets = union_of(saved)
        counts = {name: len(values) for name, values in sorted(self._value_sets.items())}
        log.debug("value sets resolved: %s", counts)
        details: dict[str, Any] = {"value_sets": counts}
        if self._ciphertext:
            details["ciphertext_checked"] = self._ciphertext
        return StepOutcome(details=details)

    def _check_ciphertext(self, journal: Journal, found: dict[str, dict[str, list[Any]]]) -> dict[str, dict[str, Any]]:
        """The shredded datasets' ciphertext checked (nothing is changed yet); on a rerun after the
        keys were destroyed, a value whose key is gone is counted, not refused (the first run opened it)."""
        destroys = [s for s in self.plan.steps if s.action is Action.DESTROY_SUBJECT_KEY]
        if not destroys:
            return {}
        after = any(record is not None and record.state == COMMITTED
                    for record in (journal.step(self.plan.plan_id, s.id) for s in destroys))
        context = self.context
        return check_ciphertext(self.plan, found, context.vault, context.master_key(), context.store, context.catalog,
                                context.locations, destroyed_before=after)

    def _values(self, journal: Journal) -> dict[str, list[Any]]:
        if self._value_sets is None:
            self._value_sets = journal.load_values(self.plan.plan_id, self.context.values_cipher())
            if self._value_sets is None:
                raise SafetyError("the subjects' values were never resolved: run the resolve step first")
        return self._value_sets

    def _subject_rows(self, dataset: str, key: str, values: list[Any], columns: list[str]):
        """A source's rows of ``values`` in its ``key`` column, read by the dataset's own engine
        (no Spark: ``formats/subject_rows.py``)."""
        from piitracer.formats.subject_rows import subject_rows

        entry = self.context.catalog[dataset]
        location = self.context.locations.get(dataset)
        if location is None:
            raise SafetyError(f"cannot read source {dataset}: no location in the catalog")
        return subject_rows(entry, location, self.context.store, key, values, columns)

    def _source_frame(self, dataset: str):
        entry = self.context.catalog[dataset]
        location = self.context.locations.get(dataset)
        support = support_for(entry.format)
        # The engine the plan chose for the dataset (Iceberg on object storage: pyiceberg reads it).
        engine = next((s.engine.value for s in self.plan.steps if s.dataset == dataset and s.engine), None)
        read = support.engines[engine].source_rows if engine in support.engines else support.source_rows
        if location is None or read is None:
            raise SafetyError(f"cannot read source {dataset}: no location in the catalog, or a "
                              f"{entry.format.value} dataset stores no rows to read")
        return read(self.spark(), entry, location, self.context.store)

    def spark(self):
        if self._spark is None:
            pointers = self.context.store.pointers  # the workspace's Iceberg catalogs: Spark gets them too
            self._spark = spark_session(self.context.spark, self.context.warehouse,
                                        pointers if isinstance(pointers, IcebergCatalogs) else None)
        return self._spark

    def file_tasks(self, files: int, size: int) -> FileTasks:
        """Where a step's per-file work runs (``rewrite:`` settings): Spark tasks on this run's
        session, or this process."""
        return choose_file_tasks(self.context.rewrite, files, size, SparkFileTasks(lambda: self.spark().sparkContext))


def describe(step: Step, catalog: Mapping[str, CatalogDataset], plan: DeletionPlan | None = None) -> str:
    """What a step would do, with subject values redacted (for --dry-run): a lookup by the
    dataset's format and the step's action, like the performers (``plan``: says whether the resolve
    step starts Spark)."""
    entry = catalog.get(step.dataset)
    table = entry.table if entry and entry.table else step.dataset
    shown = Shown(step, table, _quoted(step.key_column), " + ".join(f"<{v.name}>" for v in step.values_from) or "<no values>")
    if step.action is Action.AWAIT_REPLICATION:
        return (f"touch nothing in {table}: wait {step.params.propagation_wait} after {step.params.primary}'s erasure "
                "commits, for its replication to carry it; verify then checks the replica")
    if step.action is Action.DESTROY_SUBJECT_KEY:
        return (f"destroy the keys of the subjects in {shown.values} in the key vault (its files rewritten, its old "
                f"versions removed); nothing of {', '.join(step.params.datasets)} is rewritten")
    if step.action is Action.RESOLVE:
        if plan is not None and step.dataset in spark_needed(plan):
            return (f"[spark] capture identifiers and computed keys of the subjects' rows in {table} (starts Spark: a "
                    "computed key is evaluated by Spark's own functions; values bound as a broadcast view)")
        said = (f"capture the identifiers of the subjects' rows in {table}, read by its own engine with no Spark "
                "(values bound as typed data)")
        return f"[{step.engine.value}] {said}" if step.engine else said
    if step.action in PERSON_ACTIONS:
        return f"{step.action.value}: {step.reason or ''}".strip()
    text = support_for(entry.format).describe.get(step.action) if entry else None
    said = text(shown) if text else f"{step.action.value} on {table}"
    return f"[{step.engine.value}] {said}" if step.engine else said


def check_location(step: Step, location: Location, roots: tuple[Location, ...], store: Store | None = None,
                   known_present: bool = False) -> None:
    """Refuse to act on a location that is not there or not under the warehouse roots: a
    mistyped catalog location would otherwise erase nothing (or rewrite files elsewhere) and the
    verifier would find nothing to look at. ``known_present``: an earlier step of this run found
    it (one round trip to the store per dataset, not per step; the roots are checked each time)."""
    from piitracer.storage.guard import is_under

    if not roots:
        raise SafetyError(f"{step.dataset}: no warehouse roots: set warehouse_roots in piitracer.yaml; piitracer "
                          "changes nothing outside them")
    if not any(is_under(location, root) for root in roots):
        raise SafetyError(f"{step.dataset}: location {location} is outside the warehouse roots "
                          f"({', '.join(map(str, roots))}): refusing to touch it")
    if not known_present and not (store or Store()).exists(location):
        raise SafetyError(f"{step.dataset}: location {location} does not exist: fix catalog.{step.dataset}.location")


def _quoted(name: str | None) -> str:
    return "<none>" if name is None else "`" + name.replace("`", "``") + "`"


def _one_line(error: BaseException) -> str:
    """What went wrong, on one line a person can act on. A Java failure (py4j) shows its deepest
    cause's class and message (``FileNotFoundException: .../snap-123.avro``), not py4j's
    "An error occurred while calling o123.sql"; the whole stack goes to the DEBUG log only."""
    cause = _java_root_cause(error)
    if cause is not None:
        log.debug("Java failure", exc_info=error)
        return cause[:500]
    text = f"{type(error).__name__}: {error}".strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return text[:500]


def _java_root_cause(error: BaseException) -> str | None:
    throwable = getattr(error, "java_exception", None)  # py4j.protocol.Py4JJavaError
    if throwable is None:
        throwable = getattr(error, "_origin", None)  # pyspark's captured exceptions keep the Java one
    if throwable is None:
        return None
    try:
        seen = 0
        while throwable.getCause() is not None and seen < 50:
            throwable, seen = throwable.getCause(), seen + 1
        name = throwable.getClass().getSimpleName()
        message = throwable.getMessage()
    except Exception:  # the JVM is gone (a kill): fall back to Python's text
        return None
    first = str(message).strip().splitlines()[0] if message else ""
    return f"{name}: {first}" if first else name
