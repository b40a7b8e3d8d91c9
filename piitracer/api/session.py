"""One session for the erasure lifecycle: the front doors' one way in.

``with piitracer.open(workspace, keys) as session:`` opens the workspace, takes the keys as one
[`Keys`][piitracer.api.keys.Keys] value, and opens the request store and the audit log once, on
first use; the use cases are its methods — [`plan`][piitracer.api.session.Session.plan],
[`execute`][piitracer.api.session.Session.execute], [`verify`][piitracer.api.session.Session.verify],
[`attest`][piitracer.api.session.Session.attest], [`close`][piitracer.api.session.Session.close],
[`certificate`][piitracer.api.session.Session.certificate] and the rest. The CLI, the console, the HTTP endpoint and the demo
parse, call one of them and render; none opens a store itself (tests/unit/architecture).

What each use case checks before it writes anything (a plan's seal and origin, the executor's
preflight) is the same whoever calls it, and so is what it records: a refused run leaves no trace;
a failed run is recorded with its failed step.
"""

# Longer than 600 lines: half of it is the docstrings of the API's way in (Args, Returns and Raises of
# each use case, rendered on the Python API page); its code is under 350 lines.
from __future__ import annotations

import importlib
import os
import sys
import threading
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Callable, Sequence

from piitracer.api.wiring import journal_steps, request_store
from piitracer.api.keys import Keys
from piitracer.workspace.layout import StateLayout
from piitracer.workspace.model import Workspace

if TYPE_CHECKING:
    from piitracer.api.lakehouse import Lakehouse
    from piitracer.api.requests import BatchPlan
    from piitracer.api.people import Credential
    from piitracer.identity.people import PersonRecord, ProvenPerson
    from piitracer.api.verify import Evidence
    from piitracer.audit import AuditLog, VerifyResult
    from piitracer.executor.runner import ExecuteOptions, RunSummary, StepResult
    from piitracer.model.audit import AuditEntry
    from piitracer.model.plan import DeletionPlan, Subject
    from piitracer.model.progress import Progress
    from piitracer.model.requests import ErasureRequest, RequestState
    from piitracer.model.settings import TaskEngine
    from piitracer.model.verification import VerificationReport
    from piitracer.requests.board import BoardPage, BoardQuery
    from piitracer.requests.store import RequestStore
    from piitracer.requests.suppression import SuppressionStore
    from piitracer.api.guard import GuardScan

PlanOrFile = "DeletionPlan | str | os.PathLike[str]"


@dataclass
class Planned:
    """What :meth:`Session.plan` made: the plan (sealed when the session has an audit key) and,
    when it was kept, the plan file's text (every subject value sealed under its request's key)."""

    plan: "DeletionPlan"
    text: str | None = None


@dataclass
class Verified:
    """What :meth:`Session.verify` found: the plan, its verification report, and the plan's
    requests already closed (their values shredded: left out of this verification)."""

    plan: "DeletionPlan"
    report: "VerificationReport"
    closed: list[str]


@dataclass
class BatchWindow:
    """What :meth:`Session.batch_window` did: the requests chosen, whether the estimate is over the
    budget, and the plan file's text (values sealed) when the plan was kept, else None."""

    chosen: "BatchPlan"
    over_budget: bool
    text: str | None = None


def open(workspace: Workspace | str | os.PathLike[str] = ".", keys: Keys | None = None) -> "Session":  # noqa: A001
    """A session on a workspace with a set of keys: the way in to the erasure lifecycle.

    ``with piitracer.open("lake", piitracer.Keys.load()) as session:`` then
    ``session.plan(...)``, ``session.execute(...)``, ``session.verify(...)``.

    Args:
        workspace: the loaded workspace, or the folder holding its ``piitracer.yaml``.
        keys: the audit, master and signing keys; default: every key the environment gives
            ([`Keys.load`][piitracer.api.keys.Keys.load]). An absent key is asked for by the
            use case that needs it.

    Returns:
        The session; use it as a context manager, so its stores are closed.

    Raises:
        WorkspaceError: the workspace cannot be loaded.
        BadKeyError: a key the environment gives is unusable (keys left to the default only).
    """
    if not isinstance(workspace, Workspace):
        from piitracer.ingest.workspace.loader import load_workspace

        workspace = load_workspace(workspace)
    return Session(workspace, keys if keys is not None else Keys.load())


class Session:
    """The erasure lifecycle on one workspace with one set of keys (see the module docstring).
    Not shared between threads: a server opens one per request."""

    def __init__(self, workspace: Workspace, keys: Keys) -> None:
        self.workspace = workspace
        self.keys = keys
        self.layout = StateLayout(workspace.root)
        self._stack = ExitStack()
        self._store: RequestStore | None = None
        self._log: AuditLog | None = None
        self._lakehouse: Lakehouse | None = None
        self._suppression: "SuppressionStore | None" = None

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.end()

    def end(self) -> None:
        """Close the request store and the audit log (a session may be used again: they reopen,
        and the lakehouse's places are resolved afresh)."""
        self._stack.close()
        self._stack = ExitStack()
        self._store, self._log, self._lakehouse, self._suppression = None, None, None, None

    @property
    def lakehouse(self) -> "Lakehouse":
        """The workspace's places, resolved once for the session's use cases
        ([`Lakehouse`][piitracer.api.lakehouse.Lakehouse]): each catalog asked once, each table
        loaded once per command."""
        if self._lakehouse is None:
            from piitracer.api.lakehouse import Lakehouse

            self._lakehouse = Lakehouse(self.workspace)
        return self._lakehouse

    # ---- the stores, opened once ------------------------------------------------------------

    def requests(self) -> "RequestStore":
        """The workspace's request store, opened once (created on first use).

        Returns:
            The store, with the master key when the session has one (needed to add requests and to
                read or seal their values; the board is read without it).
        """
        if self._store is None:
            self._store = self._stack.enter_context(request_store(self.workspace, self.keys.master))
        return self._store

    def has_requests(self) -> bool:
        """Whether the workspace has a request store yet (asking never creates it).

        Returns:
            True when the store is open or its file exists.
        """
        return self._store is not None or self.layout.request_store.exists()

    def audit(self, create: bool = True) -> "AuditLog":
        """The workspace's audit log under the session's audit key, opened once.

        Args:
            create: create the log when the workspace has none yet.

        Returns:
            The audit log.

        Raises:
            AuditKeyError: the session has no audit key.
            AuditError: no log and not ``create``.
        """
        if self._log is None:
            from piitracer.api.audit import audit_log

            self._log = self._stack.enter_context(audit_log(self.workspace, key=self.keys.need_audit(), create=create,
                                                            lakehouse=self.lakehouse))
        return self._log

    def has_audit_log(self) -> bool:
        """Whether the workspace has an audit log yet (asking never creates it).

        Returns:
            True when the log is open or its file exists.
        """
        return self._log is not None or self.layout.audit_log.exists()

    # ---- plans ------------------------------------------------------------------------------

    def load_plan(self, plan: PlanOrFile) -> "DeletionPlan":
        """A plan given as itself or as a plan file, its sealed values opened with the request
        store's keys.

        Args:
            plan: the plan, or its file.

        Returns:
            The plan, its subject values in clear.

        Raises:
            BadPlanFileError: the file is not a piitracer plan, or was edited after planning.
            MasterKeyError: the file holds sealed values and the session has no master key (or
                not the one that sealed them).
        """
        from piitracer.api.plan import load_plan
        from piitracer.model.plan import DeletionPlan

        if isinstance(plan, DeletionPlan):
            return plan
        return load_plan(plan, lambda request_ids: self.requests().cipher(request_ids))

    def plan(self, sources: Sequence[str], subjects: Sequence["Subject"], labels: Sequence[str] = (), *,
             keep: bool = False, action: str = "planned", by: "ProvenPerson | None" = None) -> Planned:
        """Plan the erasure of ``subjects`` from the ``sources`` columns (``piitracer plan``).

        Args:
            sources: source key columns, ``dataset.column``.
            subjects: the subjects, each with its request id and arrival time.
            labels: each subject's position for error messages (``--subject #2``), never its value.
            keep: queue the plan's requests in the request store (planned), record the plan in the
                audit log and return the plan file's text (values sealed): ``plan -o``.
            action: what the request history says of the planning.
            by: who plans, proven by their own token ([`person`][piitracer.api.session.Session.person]):
                their signed statement is recorded with a kept plan, and under
                ``policy.approval: required`` another person approves it. Required there; elsewhere
                the plan entry names the operating system's account, for information only.

        Returns:
            The plan (sealed when the session has an audit key) and, when kept, its file's text.

        Raises:
            PlanningError: a source that is not a key column, a subject value not of its type.
            BadKeyError: ``keep`` without an audit key or a master key.
            IdentityRefusedError: ``by`` is not a proven person (a name), or ``keep`` under
                ``policy.approval: required`` without one.
            RequestRefused: ``keep`` with a request that is closed, or in the store with other values.
        """
        from piitracer.api.plan import plan_erasure

        if keep:  # keys first: a plan that would be kept but cannot be recorded or encrypted is refused before work
            self.keys.need_audit(), self.keys.need_master()
            self._proven(by, "plans", required=self._approval_required())
        plan = plan_erasure(self.workspace, sources, subjects, labels, audit_key=self.keys.audit,
                            lakehouse=self.lakehouse.fresh())
        return Planned(plan, self._keep(plan, action, by) if keep else None)

    def _keep(self, plan: "DeletionPlan", action: str, by: "ProvenPerson | None" = None) -> str:
        from piitracer.api.audit import record_plan
        from piitracer.api.plan import plan_file_text
        from piitracer.requests.approval import this_user
        from piitracer.requests.lifecycle import plan_request_ids

        self._register(plan, action)
        record_plan(self.audit(), plan, planner=by, policy=self._policy(), operator=None if by else this_user())
        return plan_file_text(plan, self.requests().cipher(plan_request_ids(plan)))

    # ---- who acts ---------------------------------------------------------------------------

    def person(self, token: str) -> "ProvenPerson":
        """The person a token belongs to, their own signing key opened: who a rule counts (the
        planner, an approver, an owner who attests, who executes).

        Args:
            token: the person's token (``piitracer owners add NAME`` printed it once).

        Returns:
            The proven person.

        Raises:
            IdentityRefusedError: the token is unknown, wrong, replaced or revoked, or its person is
                no longer listed in the workspace in the role it was made for.
        """
        from piitracer.identity.people import prove_in
        from piitracer.model.errors import IdentityRefusedError

        found = prove_in(self.workspace, token) if token and token.strip() else None
        if found is None:
            raise IdentityRefusedError("the token given is no person's of this workspace (unknown, wrong, replaced or "
                                       "revoked, or its name is no longer listed under owners:, viewers: or approvers:)")
        return found

    def add_person(self, name: str) -> "Credential":
        """Make (or replace) ``name``'s credential (``piitracer owners add NAME``): a token shown
        once and their own signing key, the private half sealed under the token. Needs the audit key
        (the registration is recorded) and the signing key (it signs the registration); the old
        credential's console sessions end.

        Args:
            name: a person listed under ``owners:``, ``viewers:`` or ``approvers:``.

        Returns:
            The token, the person's record and the audit entry that registers their key.

        Raises:
            PersonError: ``name`` is not listed in the workspace.
            BadKeyError: no audit key or no signing key.
        """
        from piitracer.api.people import make_credential

        self.keys.need_audit()
        signing = self.keys.need_signing()
        return make_credential(self.workspace, self.audit(), signing, name)

    def revoke_person(self, name: str) -> "PersonRecord | None":
        """Revoke ``name``'s credential (``piitracer owners revoke NAME``): their token opens nothing,
        their console sessions end, and the audit log records that their key no longer counts.

        Args:
            name: the person.

        Returns:
            The record revoked, or None when ``name`` had none.

        Raises:
            BadKeyError: no audit key or no signing key.
        """
        from piitracer.api.people import revoke_credential

        self.keys.need_audit()
        signing = self.keys.need_signing()
        return revoke_credential(self.workspace, self.audit(), signing, name)

    def _proven(self, by: Any, what: str, required: bool = False) -> "ProvenPerson | None":
        """``by`` when it is a proven person; refused when it is anything else (a typed name), or
        missing where a rule needs it."""
        from piitracer.identity.people import ProvenPerson
        from piitracer.model.errors import IdentityRefusedError

        if by is None and not required:
            return None
        if not isinstance(by, ProvenPerson):
            said = f"a name ({by!r}) is not a proof of who " if by is not None else "nobody proved who "
            raise IdentityRefusedError(f"{said}{what}: the person proves it with their own token "
                                       "(session.person(token); --token-file FILE or $PIITRACER_TOKEN); nothing was changed")
        return by

    def _approval_required(self) -> bool:
        return self.workspace.config.policy.approval == "required"

    def _policy(self) -> dict[str, Any]:
        from piitracer.requests.approval import policy_of

        return policy_of(self.workspace.config.policy.approval, self.workspace.config.approvers)

    def _registrar(self, required: bool = False) -> Any:
        """The workspace signing key's public key, which signs every person's registration (None
        without the signing key, unless ``required``)."""
        if self.keys.signing_key_file is None and not required:
            return None
        return self.keys.need_signing().public_key()

    def _register(self, plan: "DeletionPlan", action: str) -> None:
        """Every request of the plan in the store (a plan made through the API adds its own), then
        planned, the plan kept with its values sealed."""
        from piitracer.api.plan import plan_file_text
        from piitracer.api.requests import add_requests
        from piitracer.requests.lifecycle import mark_planned, plan_request_ids

        store, log = self._sealed_store(), self.audit()
        missing = [s for s in plan.subjects if not store.has(s.request_id)]
        if missing:
            add_requests(self.workspace, store, log, [str(ref) for ref in plan.sources], missing,
                         action=f"{action} (from the plan)", lakehouse=self.lakehouse)
        mark_planned(store, log, plan, lambda: plan_file_text(plan, store.cipher(plan_request_ids(plan))), action)
        store.set_plan_owners(plan.plan_id, _plan_owners(self.workspace, plan))

    # ---- requests -----------------------------------------------------------------------------

    def queue(self, sources: Sequence[str], subjects: Sequence["Subject"], labels: Sequence[str] = ()) -> list["ErasureRequest"]:
        """Queue erasure requests (``requests add``).

        Values are checked strictly against the source key columns' types (as [`Session.plan`][piitracer.api.session.Session.plan] checks
        them), kept only under each request's data key, and each request is recorded in the audit log
        with its deadline.

        Args:
            sources: the source key columns, ``dataset.column``.
            subjects: the subjects; those with the same request id are one request.
            labels: each subject's position for error messages, never its value.

        Returns:
            The requests queued.

        Raises:
            PlanningError: a source not in the catalog, a value not of its key column's type.
            RequestError: a request id already in the store.
            BadKeyError: no master key or no audit key.
        """
        from piitracer.api.requests import add_requests

        return add_requests(self.workspace, self._sealed_store(), self.audit(), sources, subjects, labels,
                            lakehouse=self.lakehouse.fresh())

    def board(self, state: "RequestState | str | None" = None, overdue: bool = False,
              now: datetime | None = None) -> list["ErasureRequest"]:
        """The requests (``piitracer requests``), read without the master key.

        Args:
            state: only the requests in this state (a ``RequestState`` or its name); None: all.
            overdue: only those past their deadline at ``now`` and not yet proven erased.
            now: the time ``overdue`` is judged at; default: now.

        Returns:
            The requests, as the store lists them (none when there is no store yet).
        """
        from piitracer.api.requests import filter_board

        found = self.requests().all() if self.has_requests() else []
        return filter_board(found, state, overdue, now)

    def board_page(self, query: "BoardQuery") -> "BoardPage":
        """One page of the board, asked of the request store in SQL (the console's board).

        Args:
            query: filters, sort and page (a ``piitracer.requests.board.BoardQuery``).

        Returns:
            The page's requests, how many match, and the counts per state.

        Raises:
            BoardQueryError: an unknown sort column or state, a page below 1.
        """
        from piitracer.requests.board import BoardPage

        if not self.has_requests():
            return BoardPage(query.checked(), [], 0, {})
        return self.requests().board_page(query)

    def approve(self, plan: PlanOrFile, by: "ProvenPerson") -> "AuditEntry":
        """Approve a plan as a second person (``piitracer approve``, an approver in the console):
        their signed statement recorded in the audit log, bound to the plan's id and its planner.

        Args:
            plan: the plan, or its file.
            by: the approver, proven by their own token ([`person`][piitracer.api.session.Session.person]),
                listed under ``approvers:`` and not the plan's planner.

        Returns:
            The approval's audit entry (the existing one when ``by`` approved the plan already).

        Raises:
            IdentityRefusedError: ``by`` is a name, not a proven person.
            ApprovalRefused: ``by`` is not an approver, planned the plan, or the plan is not
                recorded here with a proven planner.
            PlanSealError: the plan was altered after it was sealed.
            BadKeyError: no audit key.
        """
        from piitracer.api.plan import check_plan_seal
        from piitracer.requests.approval import approve

        audit_key = self.keys.need_audit()
        person = self._proven(by, "approves", required=True)
        loaded = self.load_plan(plan)
        check_plan_seal(loaded, audit_key, unsealed_ok=True)
        if not self.has_audit_log():
            from piitracer.requests.approval import ApprovalRefused

            raise ApprovalRefused(f"plan {loaded.plan_id[:16]} is not recorded here: this workspace has no audit log yet")
        return approve(self.audit(create=False), loaded, person, self.workspace.config.approvers, self._registrar())

    def request(self, request_id: str) -> "ErasureRequest | None":
        """One request as the store holds it.

        Args:
            request_id: the request.

        Returns:
            The request, or None when there is no such request (or no store yet).
        """
        if not self.has_requests():
            return None
        store = self.requests()
        return store.get(request_id) if store.has(request_id) else None

    def plan_of_request(self, request_id: str) -> "DeletionPlan":
        """The plan the request store keeps for a request, its values opened.

        Args:
            request_id: the request.

        Returns:
            The plan its request was last planned in.

        Raises:
            NotFoundError: no such request, or one never planned.
            MasterKeyError: the session has no master key.
        """
        from piitracer.api.plan import parse_plan
        from piitracer.model.errors import NotFoundError

        request = self.request(request_id)
        if request is None or request.plan_id is None:
            raise NotFoundError(f"request {request_id!r} has no plan in the request store")
        store = self._sealed_store()
        return parse_plan(store.plan_json(request.plan_id), f"the request store's plan {request.plan_id[:16]}", store.cipher)

    def batch_window(self, due_within: timedelta | None, sources: Sequence[str] = (), *, budget: float | None = None,
                     progress: "Progress | None" = None,
                     over_budget_ok: bool = False, by: "ProvenPerson | None" = None) -> BatchWindow:
        """``batch plan``: plan every queued request due within ``due_within`` as one batch,
        estimated from table metadata.

        Unless nothing is due or the estimate is over ``budget`` (and not ``over_budget_ok``), the
        plan is sealed, its requests planned and the plan and its estimate recorded.

        Args:
            due_within: plan the requests whose deadline falls within this from now; None: every
                queued request.
            sources: only the requests of these source columns (requests of different source
                columns are not mixed).
            budget: the most the estimated cost may be.
            progress: told of the planning and of each step estimated
                ([`Progress`][piitracer.model.progress.Progress]).
            over_budget_ok: plan and record it even when the estimate is over ``budget``.
            by: who plans, proven by their own token (required under ``policy.approval: required``).

        Returns:
            The requests chosen (and those that cannot wait for the next window), whether the
                estimate is over budget, and the plan file's text when the plan was kept.

        Raises:
            PlanningError: the due requests name different sources, or cannot be planned.
            BadKeyError: no audit key or no master key.
        """
        from piitracer.api.plan import seal_plan
        from piitracer.api.requests import batch_plan
        from piitracer.audit import record_estimate_entry

        audit_key = self.keys.need_audit()
        self._proven(by, "plans", required=self._approval_required())
        store = self._sealed_store()
        chosen = batch_plan(self.workspace, store, due_within, sources, progress=progress)
        estimate = chosen.estimate
        over = budget is not None and estimate is not None and estimate.cost > budget
        if chosen.plan is None or (over and not over_budget_ok):
            return BatchWindow(chosen, over)
        plan = seal_plan(chosen.plan, audit_key)
        text = self._keep(plan, "planned (batch)", by)
        record_estimate_entry(self.audit(), plan, estimate.as_dict())
        return BatchWindow(chosen, over, text)

    def close(self, request_id: str, now_reason: str | None = None) -> str:
        """Close a request (``requests close``): crypto-shred piitracer's own copies of the person
        (its data key, the journal's resolved values, rejected events holding them), recorded in the
        audit log.

        Args:
            request_id: the request.
            now_reason: close before the watching period ends, saying why (recorded).

        Returns:
            The destroyed data key's fingerprint.

        Raises:
            CloseRefused: the request is already closed, not verified complete and watched, or still
                watched (without ``now_reason``).
            MasterKeyError: the session has no master key.
        """
        from piitracer.api.requests import forget_copies, remember_erased
        from piitracer.requests.lifecycle import close

        store = self._sealed_store()
        remember = None
        if self.workspace.config.policy.suppression == "keep":
            suppression = self.suppression()
            remember = lambda request, pairs: remember_erased(self.workspace, store, suppression, request, pairs)  # noqa: E731
        return close(store, self.audit(), request_id, now_reason,
                     lambda request, pairs: forget_copies(self.workspace, store, request, pairs), remember)

    def suppression(self) -> "SuppressionStore":
        """The workspace's suppression list (issue 52), opened once per session.

        Returns:
            The suppression list (`piitracer.requests.suppression.SuppressionStore`).

        Raises:
            MasterKeyError: the session has no master key (the list's key is wrapped under it).
        """
        if self._suppression is None:
            from piitracer.requests.suppression import SuppressionStore

            self._suppression = self._stack.enter_context(
                SuppressionStore(self.layout.suppression, self.keys.need_master()))
        return self._suppression

    # ---- execute --------------------------------------------------------------------------------

    def execute(self, plan: PlanOrFile, options: "ExecuteOptions | None" = None, *,
                on_start: Callable[["DeletionPlan"], None] | None = None,
                on_step: Callable[["StepResult"], None] | None = None,
                by: "ProvenPerson | None" = None) -> "RunSummary":
        """Run a plan on the lakehouse (``piitracer execute``).

        Everything is checked before the audit log, the request store or the journal is written, so
        a refused run leaves no trace: the plan's seal (``options.unsealed`` accepts none), the plan
        against the workspace and the lakehouse (preflight), then its origin (recorded in this
        workspace's audit log, and what planning it again gives now, unless resumed or re-run). A dry
        run stops there. Otherwise the plan's requests move executing -> executed around the run, and
        every step is recorded in the audit log — a failed run too, before its error is raised.

        Args:
            plan: the plan, or its file.
            options: dry run, resume, rerun, concurrent writers, refs, unsealed.
            on_start: called with the plan once it runs (not for a dry run).
            on_step: called with each step's result (not for a dry run: its summary lists them).
            by: who runs it, proven by their own token (recorded, signed, in the run's ``execution``
                entry): required under ``policy.approval: required``.

        Returns:
            The run's summary (per step: state, rows, files, bytes).

        Raises:
            PlanRefused: the plan does not match the workspace, acts outside its locations, or is
                not one piitracer made here.
            PlanSealError: an altered plan, or an unsealed one without ``options.unsealed``.
            BadKeyError: no audit key or no master key (nor, under ``policy.approval: required``, the
                signing key whose signature vouches for every person's key).
            IdentityRefusedError: ``by`` is a name, or missing where the approval policy needs it.
            PolicyChanged: the approval policy in force is not the one recorded with the plan.
            NeedsApprovalError: ``policy.approval: required`` and no approver other than the planner
                approved the plan with their own signature (a dry run needs no approval).
            ExecutionError: a step failed (the run is recorded first).
        """
        from piitracer.api.audit import record_plan, record_run
        from piitracer.api.execute import prepare_execution, run_execution
        from piitracer.audit import record_execution_entry
        from piitracer.api.plan import check_plan_origin, check_plan_seal
        from piitracer.executor.preflight import PlanRefused
        from piitracer.executor.runner import ExecuteOptions, ExecutionError
        from piitracer.model.requests import RequestState
        from piitracer.requests.lifecycle import move_plan_requests, plan_request_ids

        options = options or ExecuteOptions()
        audit_key = self.keys.need_audit()
        self.keys.need_master()
        required = self._approval_required()
        person = self._proven(by, "executes", required=required and not options.dry_run)
        registrar = self._registrar(required=required and not options.dry_run)
        plan = self.load_plan(plan)
        check_plan_seal(plan, audit_key, unsealed_ok=options.unsealed)
        if not (options.resume or options.rerun):
            # The origin check below plans again: the planner's graph library takes ~0.2-0.6 s to
            # import, which overlaps the preflight's waits on the catalog and the store.
            _import_in_background("networkx")
        # The run's cipher is the plan's requests' keys, asked for when the journal first needs them:
        # by then the requests are registered (a plan made through the API brings its own).
        # A dry run reports through its summary: on_step and on_start are for a run that starts.
        executor = prepare_execution(self.workspace, plan, options, None if options.dry_run else on_step,
                                     attested=self.attested(plan),
                                     cipher=lambda: self.requests().cipher(plan_request_ids(plan)),
                                     master=self.keys.master, lakehouse=self.lakehouse.fresh())
        if not self.has_audit_log():  # opening would create it: a refusal leaves no trace
            raise PlanRefused(f"plan {plan.plan_id[:16]} is not recorded in this workspace's audit log (there is none "
                              "yet): plan again with `piitracer plan -o`")
        log = self.audit(create=False)
        check_plan_origin(self.workspace, log, plan, replan=not (options.resume or options.rerun), lakehouse=self.lakehouse)
        if options.dry_run:
            return executor.run()
        from piitracer.requests.approval import check_policy, require_approval, this_user

        check_policy(log, plan.plan_id, self._policy())  # the policy it was planned under is the one in force
        if required:
            require_approval(log, plan.plan_id, self.workspace.config.approvers, registrar)
        self._register(plan, "planned (execute)")
        record_plan(log, plan, policy=self._policy(), operator=this_user())
        store = self.requests()
        how = "execute" + (" --resume" if options.resume else " --rerun" if options.rerun else "")
        record_execution_entry(log, plan, executor=person, policy=self._policy(), how=how,
                               operator=None if person else this_user())
        move_plan_requests(store, log, plan, RequestState.EXECUTING, how)
        if on_start is not None:
            on_start(plan)
        try:
            summary = run_execution(self.workspace, executor, self.lakehouse)
        except ExecutionError as error:
            record_run(log, plan, journal_steps(self.workspace, plan.plan_id), self.workspace, self.lakehouse)  # the failed step too
            move_plan_requests(store, log, plan, RequestState.EXECUTING, "execute failed", reason=str(error)[:300])
            raise
        record_run(log, plan, summary, self.workspace, self.lakehouse)
        move_plan_requests(store, log, plan, RequestState.EXECUTED, f"executed: {summary.status}")
        return summary

    # ---- verify and attest ------------------------------------------------------------------------

    def attested(self, plan: "DeletionPlan") -> dict[str, str]:
        """The attestations the audit log holds for a plan's person steps: each signed by the
        owner's own registered key (the workspace signing key's signature on their registration
        checked when the session has that key).

        Args:
            plan: the plan.

        Returns:
            Step id -> "by NAME at TIME"; empty without an audit key or an audit log.
        """
        from piitracer.api.audit import attested_steps  # not api.verify: execute would import the verifier

        if self.keys.audit is None or not self.has_audit_log():
            return {}
        return attested_steps(self.audit(create=False), plan, self._registrar())

    def verify(self, plan: PlanOrFile, *, record: bool = True, sweep: str | None = None,
               engine: "TaskEngine | None" = None, explain: str | None = None,
               progress: "Progress | None" = None) -> Verified:
        """Prove the erasure of a plan (``piitracer verify``): decode every file of its datasets and
        read back their retained versions, leaving out its closed requests (their values are
        shredded).

        Args:
            plan: the plan, or its file.
            record: append the result to the audit log and move the plan's requests by it (needs
                the audit key); without it, attestations are read only when a key is there.
            sweep: also decode what the plan does not reach: ``catalog`` or ``roots``.
            engine: where files are decoded (driver, spark, auto); default: ``verify.engine``.
            explain: a dataset of the plan whose decoded Parquet column chunks are listed.
            progress: told of each file decoded and each dataset checked
                ([`Progress`][piitracer.model.progress.Progress]).

        Returns:
            The plan, its verification report and its closed requests.

        Raises:
            VerificationError: the plan never ran here (no resolved values in the journal).
            ShreddedError: every request of the plan is closed.
            InputError: ``explain`` names no dataset of the plan.
            BadKeyError: ``record`` without an audit key.
        """
        from piitracer.api.verify import verify_plan
        from piitracer.model.requests import RequestState
        from piitracer.model.errors import InputError
        from piitracer.requests.lifecycle import plan_request_ids, settle_after_verify

        if record:
            self.keys.need_audit()
        store = self.requests()
        loaded = self.load_plan(plan)
        if explain is not None and explain not in {d.dataset for d in loaded.datasets}:
            raise InputError(f"--explain {explain}: not a dataset of plan {loaded.plan_id[:16]} (expected one of: "
                                + ", ".join(d.dataset for d in loaded.datasets) + ")")
        requests = plan_request_ids(loaded)
        closed = [r for r in requests if store.has(r) and store.get(r).state is RequestState.CLOSED]
        report = verify_plan(self.workspace, loaded, attested=self.attested(loaded), sweep=sweep, progress=progress,
                             cipher=store.cipher(requests), skip_requests=closed, engine=engine,
                             explain=(explain,) if explain else (), master=self.keys.master,
                             lakehouse=self.lakehouse.fresh())
        if record:
            from piitracer.api.audit import record_verification

            log = self.audit()
            record_verification(log, loaded, report)
            if all(store.has(r) for r in requests):
                settle_after_verify(store, log, loaded, report, self.workspace.config.policy.watch)
                self._tell_owners()
        return Verified(loaded, report, closed)

    def reverify(self, sweep: str | None = "catalog", progress: "Progress | None" = None) -> list[tuple[str, bool]]:
        """Verify again every watching request's plan (``requests reverify``), sweeping beyond it: a
        finding moves the request back to executed, while its values still exist.

        Args:
            sweep: ``catalog`` or ``roots`` (also decode what the plan does not reach), or None.
            progress: told of each plan's files and datasets ([`Progress`][piitracer.model.progress.Progress]).

        Returns:
            (request id, still erased) for every watching request.

        Raises:
            BadKeyError: no audit key or no master key.
        """
        from piitracer.api.verify import reverify_requests

        self.keys.need_audit()
        return reverify_requests(self.workspace, self._sealed_store(), self.audit(), sweep, progress)

    # ---- erased people stay erased (issue 52) ------------------------------------------------------

    def guard_scan(self, full: bool = False, all_columns: bool = False, new_tables: bool = True,
                   on_table: Callable[[str], None] | None = None) -> "GuardScan":
        """Read the lakehouse against the suppression list (``guard scan``): only what changed since
        the last scan unless ``full``; anyone found again gets a new request, linked to the earlier
        one and recorded in the audit log (`piitracer.api.guard.run_guard_scan`).

        Args:
            full: read every file, not only what changed since the last scan.
            all_columns: read every column that can hold an identifier, not only the candidates.
            new_tables: also read the tables under the warehouse roots no catalog entry names.
            on_table: told of each table as it is scanned.

        Returns:
            What was read and who came back.

        Raises:
            BadKeyError: no audit key or no master key.
        """
        from piitracer.api.guard import run_guard_scan

        self.keys.need_audit()
        return run_guard_scan(self.workspace, self.lakehouse.fresh(), self.suppression(), self._sealed_store(), self.audit(),
                              full=full, all_columns=all_columns, new_tables=new_tables, on_table=on_table)

    def guard_forget(self, request_id: str | None) -> int:
        """Destroy the suppression records of one closed request (``guard forget REQUEST``), or
        every record and the suppression key (``request_id`` None: ``guard forget --everyone``);
        recorded in the audit log.

        Args:
            request_id: the request whose records to destroy; None: everyone's, and the key.

        Returns:
            How many records were destroyed.

        Raises:
            BadKeyError: no audit key.
            NotFoundError: the list remembers no one for that request.
        """
        from piitracer.audit import record_request_entry
        from piitracer.model.audit import EntryKind
        from piitracer.model.errors import NotFoundError
        from piitracer.requests.suppression import SuppressionStore

        self.keys.need_audit()
        with SuppressionStore(self.layout.suppression) as suppression:
            if request_id is None:
                destroyed = suppression.forget_everyone()
                self.audit().append(EntryKind.REQUEST, "", [("suppression-list", "")], {
                    "request_id": None, "action": "suppression list forgotten: every record and the key destroyed",
                    "records_destroyed": destroyed})
                self._suppression = None
                return destroyed
            if request_id not in suppression.requests():
                raise NotFoundError(f"the suppression list remembers no one for request {request_id!r}")
            destroyed = suppression.forget(request_id)
        record_request_entry(self.audit(), request_id, [(request_id, "")], from_state=None, to_state="closed",
                             action="forgotten: suppression records destroyed", details={"records_destroyed": destroyed})
        return destroyed

    def guard_export(self, path: "str | os.PathLike[str]") -> int:
        """Write the suppression list a pipeline's guard reads (``guard export``; :mod:`piitracer.guard`):
        the suppression key and the keyed hashes, mode 0600 — keep it as secret as a vault key.

        Args:
            path: the file to write.

        Returns:
            How many hashes it holds.

        Raises:
            MasterKeyError: no master key.
        """
        suppression = self.suppression()
        listed = suppression.suppression_list()
        listed.write(path)
        return len(listed)

    def attest(self, plan: PlanOrFile, step_id: str, by: "ProvenPerson", evidence: "Evidence | str | None" = None,
               statement: str | None = None) -> "AuditEntry":
        """Record that a person did a ``manual``, ``manual_review`` or ``recompute`` step of a plan
        (``piitracer attest``, an owner in the console), their signed statement bound to the plan, the
        step and the evidence, noted on the plan's requests the store holds.

        Args:
            plan: the plan, or its file (an unsealed plan is attestable; an altered one is refused).
            step_id: the person step's id.
            by: who confirms it, proven by their own token ([`person`][piitracer.api.session.Session.person]):
                an owner listed under ``owners:`` and, where the step's dataset names an owner in the
                catalog, that owner.
            evidence: a file's path or a text (only its SHA-256 is recorded), or an
                [`Evidence`][piitracer.api.verify.Evidence], or None.
            statement: what the person says was done.

        Returns:
            The attestation's audit entry.

        Raises:
            AttestationError: no such step, not a person's step, unreadable evidence, a person
                who does not own the step's dataset.
            IdentityRefusedError: ``by`` is a name, not a proven person.
            PlanSealError: the plan was altered after it was sealed.
            BadKeyError: no audit key.
        """
        from piitracer.api.plan import check_plan_seal
        from piitracer.api.verify import Evidence, attest_step
        from piitracer.requests.lifecycle import note_on_requests, plan_request_ids

        audit_key = self.keys.need_audit()
        person = self._proven(by, "attests", required=True)
        loaded = self.load_plan(plan)
        check_plan_seal(loaded, audit_key, unsealed_ok=True)
        proof = Evidence.of(evidence) if isinstance(evidence, str) else evidence
        entry = attest_step(self.audit(), loaded, step_id, person, proof, statement=statement, workspace=self.workspace)
        if self.has_requests():
            note_on_requests(self.requests(), plan_request_ids(loaded), f"attested {step_id} by {person.name}")
        return entry

    # ---- the audit trail --------------------------------------------------------------------------

    def check_audit(self, expect_head: str | None = None) -> "VerifyResult":
        """``audit verify``: the existing audit log's chain, seals, anchor and ``expect_head``, and
        the journal cross-check (every executed plan recorded).

        Args:
            expect_head: the head hash the log must have (one kept elsewhere).

        Returns:
            Whether the log holds, its entry count and head, and the first problem, if any.

        Raises:
            AuditError: the workspace has no audit log.
            AuditKeyError: the session has no audit key.
        """
        from piitracer.api.audit import verify_audit

        return verify_audit(self.audit(create=False), self.workspace, expect_head=expect_head, registrar=self._registrar())

    def report(self, request_id: str, fmt: str = "html", graph: Any = None) -> str:
        """The audit report of one request (``audit report``).

        Args:
            request_id: the request.
            fmt: ``html`` (a self-contained page with the lineage diagram) or ``md``.
            graph: the lineage graph; default: the workspace's.

        Returns:
            The report's text.

        Raises:
            NotFoundError: the audit log has no entry for the request.
            AuditError: the workspace has no audit log.
        """
        from piitracer.api.audit import audit_report

        return audit_report(self.workspace, self.audit(create=False), request_id, fmt, graph=graph)

    def trail(self, request_id: str):
        """Everything the audit log holds about one request.

        Args:
            request_id: the request.

        Returns:
            trail (RequestTrail): the request's entries, Merkle root and the chain's state.

        Raises:
            NotFoundError: the audit log has no entry for the request.
        """
        from piitracer.api.audit import request_trail

        return request_trail(self.audit(create=False), request_id)

    def certificate(self, request_id: str, issued_at: datetime | None = None) -> dict[str, Any]:
        """The signed erasure certificate of one request (``audit certificate``).

        Args:
            request_id: the request.
            issued_at: the certificate's time; default: now.

        Returns:
            The certificate document, signed with the session's signing key.

        Raises:
            NotCertifiable: the whole log does not verify, or the request's latest verification is
                not complete.
            SigningKeyError: the session has no signing key.
        """
        from piitracer.api.audit import erasure_certificate

        signing = self.keys.need_signing()
        return erasure_certificate(self.workspace, self.audit(create=False), request_id, signing, issued_at)

    # ---- lineage received over HTTP ---------------------------------------------------------------

    def received_events(self, retention: timedelta | None = None, limits: Any = None):
        """Where the OpenLineage endpoint puts what it receives (``piitracer serve``).

        Args:
            retention: how long a rejected body is kept; default: the endpoint's.
            limits: size limits of a body; default: the endpoint's.

        Returns:
            events (ReceivedEvents): the workspace's received events (its lineage store), a rejected body sealed under the
                master key when the session has one (else only its digest is kept).
        """
        from piitracer.crypto.sealed_body import BodySealer
        from piitracer.ingest.openlineage.received import DEFAULT_RETENTION, Limits, ReceivedEvents

        cipher = BodySealer(self.keys.master) if self.keys.master is not None else None
        return ReceivedEvents(self.workspace.root, cipher=cipher, retention=retention or DEFAULT_RETENTION,
                              limits=limits or Limits())

    # ---- helpers ------------------------------------------------------------------------------------

    def _tell_owners(self) -> None:
        """After a verification: e-mail owners the steps now waiting for them (``notify:``); a mail
        server that fails is a warning, never a failed verification."""
        if self.workspace.config.notify is None:
            return
        import logging

        from piitracer.api.notify import notify_waiting_owners
        from piitracer.model.errors import UnavailableError

        try:
            notify_waiting_owners(self)
        except UnavailableError as error:
            logging.getLogger(__name__).warning("owners not notified: %s (piitracer notify owners sends it later)", error)

    def _sealed_store(self) -> "RequestStore":
        """The request store, with the master key required (its values are sealed under it)."""
        self.keys.need_master()
        return self.requests()


def _import_in_background(module: str) -> threading.Thread | None:
    """Start importing ``module`` on a daemon thread (returned), unless it is imported already. A
    failure is left to the import that needs the module (it raises it then)."""
    if module in sys.modules:
        return None

    def load() -> None:
        try:
            importlib.import_module(module)
        except Exception:  # noqa: BLE001  # raised again, with its traceback, where it is needed
            pass

    thread = threading.Thread(target=load, name=f"piitracer-import-{module}", daemon=True)
    thread.start()
    return thread


def execute_plan(
    workspace: Workspace,
    plan: PlanOrFile,
    options: "ExecuteOptions | None" = None,
    on_step: Callable[["StepResult"], None] | None = None,
    keys: Any = None,
    by: Any = None,
) -> "RunSummary":
    """Run a plan on the workspace's lakehouse exactly as ``piitracer execute`` does: through a
    session ([`Session.execute`][piitracer.api.session.Session.execute]), so its seal, its origin
    in the audit log, the approval policy recorded with it and its approval are checked before the
    first step, and the run is recorded in the audit log. There is no public way to run a plan
    outside those checks.

    Args:
        workspace: the loaded workspace.
        plan: the plan, or its file.
        options: dry run, resume (continue a killed run), rerun, concurrent writers, refs, unsealed.
        on_step: called with each step's result as it finishes.
        keys: the session's keys ([`Keys`][piitracer.api.keys.Keys]); default: the environment's.
        by: who runs it, proven by their own token (``session.person(token)``); required under
            ``policy.approval: required``.

    Returns:
        The run's summary (per step: state, rows, files, bytes).

    Raises:
        PlanRefused: the plan does not match the workspace, acts outside its locations, or is not
            one piitracer made here.
        NeedsApprovalError: ``policy.approval: required`` and no second person approved it.
        ExecutionError: a step failed (the journal says which; ``options.resume`` continues).
    """
    with Session(workspace, keys if keys is not None else Keys.load()) as session:
        return session.execute(plan, options, on_step=on_step, by=by)


def _plan_owners(workspace: Workspace, plan: "DeletionPlan") -> list[str]:
    """The console users who own a dataset the plan reaches (the catalog ``owner:``'s first word)."""
    from piitracer.requests.board import owner_name

    entries = (workspace.config.catalog.get(step.dataset) for step in plan.steps)
    return sorted({name for entry in entries if entry is not None and (name := owner_name(entry.owner))})


__all__ = ["BatchWindow", "Keys", "Planned", "Session", "Verified", "execute_plan", "open"]
