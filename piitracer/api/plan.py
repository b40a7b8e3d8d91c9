"""Planning: plan the erasure of subjects from their source key columns, read and write plan files
(subject values sealed under their requests' data keys), seal a plan under the audit key, and refuse
a plan piitracer did not make here (its origin in the audit log, and planning it again).
Rooms: planner, formats (live key types, tags and branches), storage, lineage, model."""

from __future__ import annotations

import hmac
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from pydantic import ValidationError

from piitracer.api.lakehouse import Lakehouse, lakehouse_of
from piitracer.api.lineage import lineage_graph_for, parse_column
from piitracer.crypto.envelope import MasterKeyError, ValueCipher, is_sealed
from piitracer.executor.preflight import PlanRefused
from piitracer.formats import FormatError, key_type_name, support_for, table_schema
from piitracer.graph.lineage_graph import LineageGraph
from piitracer.ingest.workspace.loader import where_said
from piitracer.ingest.workspace_ingest import missing_sources
from piitracer.workspace.model import WORKSPACE_FILE, Workspace, WorkspaceError
from piitracer.model.audit import EntryKind
from piitracer.model.lineage import ColumnRef
from piitracer.model.plan import DatasetStatus, DeletionPlan, PlanRequest, PlanSeal, Subject
from piitracer.model.stored import StoredColumn, StoredSchema
from piitracer.model.table_state import TableState
from piitracer.planner.errors import PlanningError
from piitracer.storage.store import StorageError
from piitracer.model.errors import BadPlanFileError, RefusedError

if TYPE_CHECKING:  # the audit log is the caller's: planning does not open it
    from piitracer.audit import AuditKey, AuditLog


def plan_deletion(
    workspace: Workspace,
    graph: LineageGraph,
    sources: Sequence[str],
    subjects: Sequence[Subject],
    table_states: Mapping[str, TableState] | None = None,
    labels: Sequence[str] = (),
    live_types: Mapping[str, str] | None = None,
    lakehouse: Lakehouse | None = None,
) -> DeletionPlan:
    """Plan the erasure of ``subjects`` whose key is in the ``sources`` columns.

    Every subject value is parsed strictly against its source key column's type (the catalog's
    ``column_types``, else the live table's schema): a value that is not exactly a value of that
    type stops the plan, named by its label (its position), never shown. The same inputs give a
    byte-identical plan.

    Args:
        workspace: the loaded workspace (catalog, policy, Iceberg and Spark settings).
        graph: the lineage graph to plan on ([`lineage_graph_for`][piitracer.api.lineage.lineage_graph_for]).
        sources: the source key columns, ``dataset.column`` (a table named with its catalog or by
            its ``table:`` identifier is taken to the catalog dataset's id).
        subjects: the subjects, each with its key value, request id and arrival time.
        table_states: dataset -> its tags and branches; default: what the live Iceberg tables of
            the workspace say ([`live_table_states`][piitracer.api.plan.live_table_states]).
        labels: each subject's position for error messages (``--subject #2``), never its value.
        live_types: ``dataset.column`` -> key type, overriding what the live tables' schemas give
            ([`source_key_types`][piitracer.api.plan.source_key_types]).
        lakehouse: the session's lakehouse (its places resolved once); default: a new one.

    Returns:
        The plan: resolve steps, per-dataset decisions and ordered physical steps, deadlines.

    Raises:
        PlanningError: a source that is not a ``DATASET.COLUMN`` of the catalog and the lineage, a
            subject value not of its key column's type, a table whose state cannot be read.
    """
    refuse_missing_lineage_sources(workspace)
    lakehouse = lakehouse_of(workspace, lakehouse)
    refs = []
    for text in sources:
        try:
            parsed = parse_column(workspace.namer.from_column_name(text), graph)  # prod.fintech.payments.user_id too
        except KeyError as error:
            if not graph.datasets():  # nothing to find it in: say what to add, not that the name is unknown
                raise PlanningError(f"--source {text}: the lineage is empty: add lineage.sql (your pipelines' SQL "
                                    "files), lineage.openlineage (OpenLineage events) or lineage.dbt to "
                                    f"{workspace.root / WORKSPACE_FILE}, and the tables to the catalog "
                                    "(`piitracer catalog discover --write`)") from None
            raise PlanningError(f"--source {text}: {error.args[0]}") from None
        if not isinstance(parsed, ColumnRef):
            raise PlanningError(f"--source {text}: expected DATASET.COLUMN, got a dataset")
        refs.append(parsed)
    from piitracer.planner.build import build_plan  # the planner and its graph and SQL libraries: only to plan

    request = PlanRequest(sources=tuple(refs), subjects=tuple(subjects))
    if table_states is None:
        table_states = live_table_states(workspace, lakehouse)
    if live_types is None:
        live_types = source_key_types(workspace, refs, lakehouse)
    plan = build_plan(graph, workspace.config.catalog, workspace.config.policy, request, table_states,
                      live_types, tuple(labels), iceberg=workspace.config.iceberg, spark=workspace.config.spark)
    shredded = [d.dataset for d in plan.datasets if d.status is DatasetStatus.SHRED]
    if not shredded:
        return plan
    # The lineage and the catalog say where ciphertext should be; the tables say what they store.
    # Planned again with the stored schemas of the datasets it would shred (pure and deterministic).
    return build_plan(graph, workspace.config.catalog, workspace.config.policy, request, table_states,
                      live_types, tuple(labels), iceberg=workspace.config.iceberg, spark=workspace.config.spark,
                      stored=stored_schemas(workspace, shredded, lakehouse))


def stored_schemas(workspace: Workspace, datasets: Sequence[str], lakehouse: Lakehouse | None = None) -> dict[str, StoredSchema]:
    """The columns each of ``datasets`` stores, from its table's own metadata: names as stored,
    types, and whether a type can hold the shred library's ciphertext.

    Args:
        workspace: the loaded workspace.
        datasets: catalog datasets.
        lakehouse: the session's lakehouse; default: a new one.

    Returns:
        dataset -> its stored schema; a dataset with no table there yet is absent.

    Raises:
        PlanningError: a table's metadata or its store cannot be read.
    """
    from piitracer.shred.cipher import holds_ciphertext

    lakehouse = lakehouse_of(workspace, lakehouse)
    locations, store = lakehouse.locations_of(set(datasets)), lakehouse.store
    found = {}
    for dataset in sorted(datasets):
        entry = workspace.config.catalog.get(dataset)
        if entry is None:
            continue
        try:
            schema = table_schema(entry, locations.get(dataset), store)
        except (FormatError, StorageError) as error:
            raise PlanningError(f"dataset {dataset}: its stored schema cannot be read: {error}") from None
        if schema is not None:
            found[dataset] = StoredSchema(columns=tuple(StoredColumn(name=f.name, type=str(f.type),
                                                                     binary=holds_ciphertext(f.type)) for f in schema))
    return found


def refuse_missing_lineage_sources(workspace: Workspace) -> None:
    """Refuse to plan while a lineage source the workspace names (a SQL folder, an events file, a
    dbt artifact) does not exist: the plan would miss every dataset it names. Raises
    :class:`WorkspaceError` naming the file, line and field, the path and the fix."""
    missing = missing_sources(workspace)
    if not missing:
        return
    field_, text = missing[0]
    where = where_said(workspace.root, [int(part) if part.isdigit() else part for part in field_.split(".")])
    more = f" (and {', '.join(f for f, _ in missing[1:])})" if len(missing) > 1 else ""
    raise WorkspaceError(f"{where}: {text!r} does not exist ({workspace.resolve(text)}){more}: create it, or fix the "
                         "path (relative to the workspace folder); a plan without it would miss the datasets it names")


def source_key_types(workspace: Workspace, sources: Sequence[ColumnRef], lakehouse: Lakehouse | None = None) -> dict[str, str]:
    """The key type the live table's own schema gives each source column.

    Args:
        workspace: the loaded workspace.
        sources: the source key columns.
        lakehouse: the session's lakehouse; default: a new one.

    Returns:
        ``dataset.column`` -> key type name (absent when the table is not there yet).

    Raises:
        PlanningError: the table cannot be read, has no such column, or stores it as a type
            piitracer does not compare as a subject key.
    """
    found: dict[str, str] = {}
    # Only the sources' locations: parsing all of a 100k-dataset catalog's cost a cold plan ~0.6 s.
    lakehouse = lakehouse_of(workspace, lakehouse)
    locations = lakehouse.locations_of({ref.dataset for ref in sources})
    store = lakehouse.store
    for ref in sources:
        entry = workspace.config.catalog.get(ref.dataset)
        if entry is None:
            continue
        try:
            schema = table_schema(entry, locations.get(ref.dataset), store)
        except (FormatError, StorageError) as error:
            raise PlanningError(f"source {ref}: dataset {ref.dataset}: {error}") from None
        # Names as the engines match them: lineage lowercases, a table may store `Customer_ID`.
        stored = [f for f in schema if f.name.lower() == ref.column.lower()] if schema is not None else []
        if len(stored) > 1:
            raise PlanningError(f"source {ref}: the table stores {' and '.join(f.name for f in stored)}, which differ only "
                                "in case: which one is the key is ambiguous")
        if stored:
            name = key_type_name(stored[0].type)
            if name is None:
                raise PlanningError(f"source {ref}: the table stores it as {stored[0].type}, "
                                    "which piitracer does not compare as a subject key")
            found[str(ref)] = name
        elif schema is not None:
            raise PlanningError(f"source {ref}: the table's schema has no column {ref.column!r} "
                                f"(columns: {', '.join(schema.names)})")
    return found


def live_table_states(workspace: Workspace, lakehouse: Lakehouse | None = None) -> dict[str, TableState]:
    """Tags and branches of every catalogued table whose format has them (Iceberg) and that
    exists (local or object store).

    Args:
        workspace: the loaded workspace.
        lakehouse: the session's lakehouse; default: a new one.

    Returns:
        dataset -> its table state (refs and the snapshots they hold).

    Raises:
        PlanningError: a table's metadata or its store cannot be read.
    """
    states = {}
    lakehouse = lakehouse_of(workspace, lakehouse)
    locations, store = lakehouse.locations, lakehouse.store
    for dataset, entry in sorted(workspace.config.catalog.items()):
        location, support = locations.get(dataset), support_for(entry.format)
        if location is None or not support.keeps_refs:
            continue
        try:
            if not store.exists(location):
                continue
            state = support.table_state(dataset, location, store)
        except (FormatError, StorageError) as error:
            raise PlanningError(f"dataset {dataset}: {error}") from None
        if state is not None:
            states[dataset] = state
    return states


def load_plan(path: str | os.PathLike[str], cipher_for: Callable[[Sequence[str]], ValueCipher] | None = None) -> DeletionPlan:
    """Read a plan file, refusing one that is not well formed (unknown schema version, duplicate
    step ids, a dependency cycle, parameters of another action...) or whose content no longer
    matches its ``plan_id``.

    Args:
        path: the plan file.
        cipher_for: request ids -> the cipher that opens their sealed subject values (the request
            store's keys); needed only for a plan file the CLI wrote (values sealed).

    Returns:
        The plan, its subject values in clear.

    Raises:
        BadPlanFileError: the file cannot be read, is not JSON, not a valid plan, or was edited
            after planning (its id no longer matches its content).
        MasterKeyError: the values are sealed and no ``cipher_for`` is given, or the key does not
            open them.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise BadPlanFileError(f"{path}: cannot read the plan: {error}") from None
    return parse_plan(text, str(path), cipher_for)


def parse_plan(text: str, path: str, cipher_for: Callable[[Sequence[str]], ValueCipher] | None = None) -> DeletionPlan:
    """A plan from its file's text (see [`load_plan`][piitracer.api.plan.load_plan]).

    Args:
        text: the plan file's text.
        path: the name of the plan in messages.
        cipher_for: request ids -> the cipher that opens their sealed subject values.

    Returns:
        The plan, its subject values in clear.

    Raises:
        BadPlanFileError: not JSON, not a valid plan, or edited after planning.
        MasterKeyError: the values are sealed and no ``cipher_for`` is given.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise BadPlanFileError(f"{path}:{error.lineno}: not a piitracer plan: not valid JSON: {error.msg}") from None
    subjects = data.get("subjects") if isinstance(data, dict) else None
    if isinstance(subjects, list) and any(isinstance(s, dict) and is_sealed(s.get("value", "")) for s in subjects):
        if cipher_for is None:
            raise MasterKeyError(f"{path}: the plan's subject values are encrypted: give the master key (--master-key-file)")
        cipher = cipher_for(sorted({str(s.get("request_id")) for s in subjects if isinstance(s, dict)}))
        for subject in subjects:
            if isinstance(subject, dict) and is_sealed(subject.get("value", "")):
                subject["value"] = cipher.open(str(subject.get("request_id")), subject["value"], "subject")
    try:
        plan = DeletionPlan.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        message = first["msg"].removeprefix("Value error, ")
        raise BadPlanFileError(f"{path}: not a valid piitracer plan: {field or '(top level)'}: {message}") from None
    if plan.plan_id != plan.content_hash():
        raise BadPlanFileError(f"{path}: plan_id does not match the plan's content (edited after planning?): re-plan")
    return plan


def plan_file_text(plan: DeletionPlan, cipher: ValueCipher | None) -> str:
    """The plan as its file holds it: every subject value sealed under its request's data key,
    deterministically (the same plan gives the same bytes).

    Args:
        plan: the plan.
        cipher: the plan's requests' cipher (``RequestStore.cipher``); None keeps the values in
            clear (API callers that keep the plan in memory or in their own vault).

    Returns:
        The plan file's JSON text.
    """
    if cipher is None:
        return plan.to_json()
    data = json.loads(plan.to_json())
    for subject in data["subjects"]:
        subject["value"] = cipher.seal(subject["request_id"], subject["value"], "subject")
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


class PlanSealError(RefusedError):
    """A plan whose seal does not verify, or an unsealed plan run without ``--unsealed``."""


def seal_plan(plan: DeletionPlan, key: AuditKey) -> DeletionPlan:
    """The plan with an HMAC seal over its id under the audit key (see ``model.plan.PlanSeal``).

    Args:
        plan: the plan.
        key: the audit key.

    Returns:
        A copy of the plan carrying the seal (its id is unchanged: the seal is not content).
    """
    return plan.model_copy(update={"seal": PlanSeal(key_id=key.key_id, hmac=key.plan_seal(plan.plan_id))})


def check_plan_seal(plan: DeletionPlan, key: AuditKey | None, unsealed_ok: bool) -> None:
    """Refuse a plan whose seal does not verify, or an unsealed plan the caller did not accept.

    Args:
        plan: the plan.
        key: the audit key; None (a dry run without a key) skips checking the seal.
        unsealed_ok: accept a plan without a seal (``--unsealed``).

    Raises:
        PlanSealError: the seal does not verify, was made with another audit key, or the plan is
            unsealed and ``unsealed_ok`` is false.
    """
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
    if not hmac.compare_digest(plan.seal.hmac, key.plan_seal(plan.plan_id)):
        raise PlanSealError(f"plan {plan.plan_id[:16]}: its seal does not verify: the plan was altered after it was "
                            "sealed: refusing it")


def check_plan_origin(workspace: Workspace, log: AuditLog, plan: DeletionPlan, replan: bool = True,
                      lakehouse: Lakehouse | None = None) -> None:
    """Refuse, before anything is journaled, a plan piitracer did not make here or that this
    workspace would not make now.

    1. The audit log must hold a ``plan`` entry for its id (``plan -o``, ``batch plan`` and the demo
       record one when they write a plan) carrying exactly the keyed digests of its subjects: an
       edited plan has another id (the id is its content's hash), whatever seal it carries.
    2. With ``replan``, the same sources and subjects planned again from the workspace must give
       the same steps (id, order, dataset, action, key column, value sets, dependencies, params,
       owner) and the same resolve captures: a holder of the audit key who records an edited plan
       is still refused, naming the first differing step.

    Args:
        workspace: the loaded workspace.
        log: the workspace's audit log.
        plan: the plan to run.
        replan: plan again and compare; a resumed or re-run plan skips it (its first run was
            checked; its own steps changed the live tables since).
        lakehouse: the session's lakehouse; default: a new one.

    Raises:
        PlanRefused: not recorded here, other subjects than recorded, or planning it again gives
            other steps (one line naming the first difference).
    """
    recorded = [entry for entry in log.entries(plan_id=plan.plan_id) if entry.kind is EntryKind.PLAN]
    short = plan.plan_id[:16]
    if not recorded:
        raise PlanRefused(f"plan {short} is not recorded in this workspace's audit log: piitracer did not write it here "
                          "(an edited plan has another id): plan again with `piitracer plan -o`")
    digests = {(subject.request_id, log.key.subject_hmac(subject.value)) for subject in plan.subjects}
    if digests != {(digest.request_id, digest.hmac) for digest in recorded[0].subjects}:
        raise PlanRefused(f"plan {short}: its subjects are not the ones recorded when it was planned: plan again")
    if replan:
        difference = planning_difference(workspace, plan, lakehouse)
        if difference is not None:
            raise PlanRefused(f"plan {short}: {difference}: the lineage or catalog changed since planning (or the plan "
                              "was altered): plan again")


def planning_difference(workspace: Workspace, plan: DeletionPlan, lakehouse: Lakehouse | None = None) -> str | None:
    """How ``plan`` differs from planning its sources and subjects again now.

    Args:
        workspace: the loaded workspace.
        plan: the plan.
        lakehouse: the session's lakehouse; default: a new one.

    Returns:
        The first differing step, else the first differing resolve capture, in one line; None when
            planning again gives the same steps and captures.
    """
    sources = [f"{ref.dataset}.{ref.column}" for ref in plan.sources]
    try:
        fresh = plan_deletion(workspace, lineage_graph_for(workspace, sources), sources, plan.subjects, lakehouse=lakehouse)
    except PlanningError as error:
        return f"planning its sources and subjects again fails ({error})"
    if fresh.plan_id == plan.plan_id:
        return None
    compared = ("id", "order", "dataset", "action", "group", "key_column", "values_from", "depends_on", "params",
                "blocking", "owner", "engine")
    for number, (old, new) in enumerate(zip(plan.steps, fresh.steps), start=1):
        was, now = old.model_dump(mode="json", include=set(compared)), new.model_dump(mode="json", include=set(compared))
        if was != now:
            field = next(name for name in compared if was.get(name) != now.get(name))
            return (f"step {number} ({old.id} {old.action.value} {old.dataset}) differs in {field} from what planning "
                    f"now gives ({new.id} {new.action.value} {new.dataset})")
    if len(plan.steps) != len(fresh.steps):
        longer = plan.steps if len(plan.steps) > len(fresh.steps) else fresh.steps
        extra = longer[min(len(plan.steps), len(fresh.steps))]
        side = "the plan has" if longer is plan.steps else "planning now gives"
        return (f"the plan has {len(plan.steps)} steps, planning now gives {len(fresh.steps)} ({side} step "
                f"{extra.order} {extra.id} {extra.action.value} {extra.dataset} more)")
    for old, new in zip(plan.resolve, fresh.resolve):
        if old != new:
            return f"the resolve capture of {old.dataset} differs from what planning now gives"
    if len(plan.resolve) != len(fresh.resolve):
        return "the resolve captures differ from what planning now gives"
    return None  # the same steps and captures: decisions, deadlines or warnings moved, nothing it would run


def plan_requests(plan: DeletionPlan) -> list[str]:
    """The plan's request ids.

    Args:
        plan: the plan.

    Returns:
        Its subjects' request ids, sorted, each once.
    """
    return sorted({s.request_id for s in plan.subjects})


def plan_erasure(workspace: Workspace, sources: Sequence[str], subjects: Sequence[Subject], labels: Sequence[str] = (),
                 audit_key: "AuditKey | None" = None, lakehouse: Lakehouse | None = None) -> DeletionPlan:
    """``piitracer plan``: plan the erasure on the part of the lineage the sources reach
    ([`lineage_graph_for`][piitracer.api.lineage.lineage_graph_for]), sealed when an audit key is given.

    Args:
        workspace: the loaded workspace.
        sources: the source key columns, ``dataset.column``.
        subjects: the subjects, each with its key value, request id and arrival time.
        labels: each subject's position for error messages, never its value.
        audit_key: seal the plan under this key (None: unsealed).
        lakehouse: the session's lakehouse; default: a new one.

    Returns:
        The plan, sealed when ``audit_key`` is given.

    Raises:
        PlanningError: see [`plan_deletion`][piitracer.api.plan.plan_deletion].
    """
    plan = plan_deletion(workspace, lineage_graph_for(workspace, sources), sources, subjects, labels=labels,
                         lakehouse=lakehouse)
    return seal_plan(plan, audit_key) if audit_key is not None else plan
