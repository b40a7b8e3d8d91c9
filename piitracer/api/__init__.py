"""The public API's wiring of the layers: workspace -> ingest -> graph -> plan -> execute -> verify
-> audit -> report, plus the demo flow. Only this module and ``cli`` import across layers."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Collection, Iterator, Mapping, Sequence

import yaml
from pydantic import ValidationError

from piitracer.crypto.envelope import (KeyWrapper, MasterKeyError, ShreddedError, ValueCipher, has_master_key,
                                       is_sealed, load_master_key)
from piitracer.audit import (AnchorFile, AuditError, AuditKey, AuditLog, AuditProblem, VerifyResult, load_audit_key,
                             record_attestation_entry, record_plan_entry, record_step_entries, record_verification_entry)
from piitracer.executor.journal import Journal
from piitracer.executor.preflight import PlanRefused
from piitracer.executor.runner import ExecuteOptions, ExecutionContext, PlanExecutor, RunSummary, StepResult
from piitracer.graph.lineage_graph import LineageGraph
from piitracer.ingest.catalog_layers import DISCOVERED_FILE, DISCOVERED_HEADER
from piitracer.ingest.lineage_store import STORE_FILE, LineageStore, open_store
from piitracer.ingest.workspace_ingest import StoreUpdate, batch_from_store, ingest_workspace, update_store
from piitracer.ingest.workspace_loader import Workspace, WorkspaceError, load_workspace
from piitracer.model.audit import AuditEntry, EntryKind, RequestTrail
from piitracer.model.errors import NotFoundError, PiitracerError
from piitracer.model.lineage import ColumnRef
from piitracer.model.plan import NO_FILE_WORK, PERSON_ACTIONS, DeletionPlan, PlanRequest, Subject
from piitracer.model.requests import ErasureRequest, RequestState
from piitracer.model.steps import StepRecord
from piitracer.model.workspace import CatalogDataset, DatasetFormat, TaskEngine
from piitracer.model.table_state import TableState
from piitracer.model.verification import VerificationReport
from piitracer.storage.locations import Location, LocationError
from piitracer.storage.store import StorageError, Store, store_for
from piitracer.planner.build import PlanningError, build_plan
from piitracer.render.report import report_html, report_markdown
from piitracer.verify import VerificationError, verify_datasets
from piitracer.discover.catalog_file import DiscoveredCatalog, catalog_entries, kept_identifiers, with_identifiers
from piitracer.discover.classify import ColumnVerdict
from piitracer.discover.drift import Difference, compare
from piitracer.discover.lakehouse import DiscoveredTable, Discovery, discover_tables
from piitracer.verify.engines import FileScanner, ScanPlan, SparkFileScanner, choose_scanner


def build_lineage_graph(workspace: Workspace | str | os.PathLike[str]) -> LineageGraph:
    """The workspace's whole lineage graph with its catalog's relations. Read through the
    workspace's lineage store: only sources changed since the last call are parsed."""
    if not isinstance(workspace, Workspace):
        workspace = load_workspace(workspace)
    with _lineage_store(workspace) as store:
        if store is not None:
            update_store(workspace, store)
            return LineageGraph.build(batch_from_store(store), workspace.config.catalog)
    return LineageGraph.build(ingest_workspace(workspace), workspace.config.catalog)


def lineage_graph_for(workspace: Workspace, sources: Sequence[str], refresh: bool = True) -> LineageGraph:
    """The part of the lineage graph a plan from ``sources`` (``db.table.column``) can follow:
    every dataset downstream of a source over any edge or catalog copy, with every edge into
    them. It plans exactly as the whole graph would, and costs what the sources reach, not what
    the lakehouse holds. ``refresh``: bring the store up to date first (parse what changed).
    Falls back to the whole graph when a source names no catalogued dataset (so the planner
    reports it) or the store cannot be used."""
    catalog = workspace.config.catalog
    starts = {text.rsplit(".", 1)[0].lower() for text in sources if "." in text}
    with _lineage_store(workspace) as store:
        if store is not None and starts and starts <= set(catalog):
            if refresh:
                update_store(workspace, store)
            return stored_graph_for(store, catalog, starts)
    return build_lineage_graph(workspace)


def stored_graph_for(store: LineageStore, catalog: Mapping[str, CatalogDataset], starts: set[str]) -> LineageGraph:
    """The graph of what the store holds downstream of the ``starts`` datasets (over any edge and
    the catalog's replicas, clones and archives) and every edge into it, with those datasets'
    catalog entries (all of them when a reached copy's source was not reached)."""
    copies: dict[str, list[str]] = {}
    copied_from: dict[str, str] = {}
    for dataset_id, entry in catalog.items():  # unsorted: only sets are made of it (100k entries)
        for ref in (entry.replica_of, entry.clone_of, entry.archive_of):
            if ref is not None:
                copies.setdefault(ref.dataset, []).append(dataset_id)
                copied_from[dataset_id] = ref.dataset
    reached = store.downstream(starts, copies)
    batch = batch_from_store(store, reached)
    # Only the reached datasets' catalog entries go into the graph: an unreached dataset cannot
    # change a reached one's columns or edges. Unless a reached copy's source was not reached (a
    # job writes into a clone): its columns come from that source, so take the whole catalog.
    if all(copied_from.get(d, d) in reached for d in reached):
        return LineageGraph.build(batch, {d: catalog[d] for d in sorted(reached) if d in catalog})
    return LineageGraph.build(batch, catalog)


def rebuild_lineage_store(workspace: Workspace) -> StoreUpdate:
    """Forget the stored lineage and read every source again (``piitracer lineage rebuild``)."""
    with _lineage_store(workspace, required=True) as store:
        store.clear()
        return update_store(workspace, store)


@contextmanager
def _lineage_store(workspace: Workspace, required: bool = False) -> Iterator[LineageStore | None]:
    """The workspace's lineage store, or None when it cannot be opened (a read-only workspace):
    the lineage is then read fresh, as if there were no store."""
    try:
        store = open_store(workspace.root)
    except (OSError, sqlite3.Error) as error:
        if required:
            raise PiitracerError(f"{workspace.root / STORE_FILE}: cannot open the lineage store: {error}") from None
        yield None
        return
    try:
        yield store
    finally:
        store.close()


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
    # Only the sources' locations: parsing all of a 100k-dataset catalog's cost a cold plan ~0.6 s.
    locations = dataset_locations(workspace, {ref.dataset for ref in sources})
    store = workspace_store(workspace)
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
    """Tags and branches of every catalogued table whose format has them (Iceberg) and that
    exists (local or object store)."""
    from piitracer.formats import FormatError, support_for

    states = {}
    locations, store = dataset_locations(workspace), workspace_store(workspace)
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


def workspace_store(workspace: Workspace) -> Store:
    """The files of a workspace's datasets, through its ``storage:`` settings."""
    return Store(workspace.config.storage)


def dataset_locations(workspace: Workspace, datasets: Collection[str] | None = None) -> dict[str, Location]:
    """Every catalogued dataset's location (or only those of ``datasets``) as a :class:`Location`
    (relative paths under the workspace; ``s3://...`` and other URIs as they are). A location that
    is not a usable place is a workspace error naming the dataset."""
    found = {}
    catalog = workspace.config.catalog
    entries = catalog.items() if datasets is None else ((d, catalog[d]) for d in sorted(datasets) if d in catalog)
    for dataset, entry in entries:
        if entry.location is None:
            continue
        try:
            found[dataset] = Location.parse(entry.location, workspace.root)
        except LocationError as error:
            raise WorkspaceError(f"{workspace.root / 'piitracer.yaml'}: catalog.{dataset}.location: {error}") from None
    return found


def warehouse_roots(workspace: Workspace) -> tuple[Location, ...]:
    """Every place piitracer may change lies inside one of these roots; never empty.

    The workspace's ``warehouse_roots`` when it sets them; otherwise the workspace folder and the
    Spark warehouse folder (the places ``catalog discover`` looks), derived from the workspace file
    alone, so they never widen without an edit to it. A catalog location anywhere else (``..``
    out of the workspace, a symlink to another folder, an object store) is refused before the
    first step until ``warehouse_roots`` names its root."""
    configured = tuple(Location.parse(root, workspace.root) for root in workspace.config.warehouse_roots)
    if configured:
        return configured
    return tuple(dict.fromkeys((Location.parse(workspace.root), Location.parse(workspace.resolve(workspace.config.spark.warehouse)))))


def protected_places(workspace: Workspace) -> tuple[Location, ...]:
    """piitracer's own files in a workspace (its state folder and workspace files): no dataset's
    location may hold them, or an orphan removal or a rewrite there would destroy the audit log,
    the journal or the request store."""
    names = (".piitracer", "piitracer.yaml", "catalog.discovered.yaml")
    return tuple(Location.parse(workspace.root / name) for name in names)


def discover_catalog(workspace: Workspace, progress: Callable[[str], None] | None = None,
                     spark_views: bool = False) -> Discovery:
    """Every table the lakehouse has under the discovery roots, as its own metadata describes it,
    and the roots that could not be listed (:mod:`piitracer.discover.lakehouse`). With
    ``spark_views``, also what the workspace's Spark catalogs list (this starts Spark): their
    views, and their tables the walk did not find (described when inside a root, else listed
    with the reason)."""
    warehouse = Location.parse(workspace.resolve(workspace.config.spark.warehouse))
    found = discover_tables(warehouse_roots(workspace), workspace_store(workspace), warehouse, workspace.config.spark.catalog,
                            progress)
    if spark_views:
        from piitracer.discover.lakehouse import describe_catalog_tables
        from piitracer.executor.spark_catalog import list_catalogs
        from piitracer.executor.spark_session import spark_session

        if progress:
            progress("the Spark catalogs")
        settings = workspace.config.spark
        catalogs = tuple(dict.fromkeys(("spark_catalog", *workspace.config.lineage.spark_catalogs, settings.catalog)))
        listed = list_catalogs(spark_session(settings, workspace.resolve(settings.warehouse)), catalogs)
        found.views, found.unreadable_catalogs = listed.views, listed.problems
        found.tables = sorted([*found.tables, *describe_catalog_tables(listed.tables, found, workspace_store(workspace),
                                                                       warehouse_roots(workspace))],
                              key=lambda table: table.location.uri)
    return found


def discovered_name(workspace: Workspace) -> Callable[[DiscoveredTable], str]:
    """A discovered table's dataset id: the catalog's for a catalogued location, else its own name."""
    from piitracer.storage.guard import canonical

    names = {canonical(location).uri: dataset for dataset, location in dataset_locations(workspace).items()}
    return lambda table: names.get(canonical(table.location).uri, table.name)


def lineage_only_datasets(workspace: Workspace, discovery: Discovery) -> list[str]:
    """Datasets the lineage names that neither the catalog nor the lakehouse has: seen in
    lineage, not found in storage (a table since dropped, a name the events spell otherwise, a
    system outside the roots)."""
    name_of = discovered_name(workspace)
    found = {name_of(t) for t in discovery.tables}
    graph = build_lineage_graph(workspace)
    return sorted(d for d in graph.datasets() if d not in workspace.config.catalog and d not in found)


def catalog_drift(workspace: Workspace, tables: Sequence[DiscoveredTable] | None = None) -> list[Difference]:
    """Where the workspace's catalog and the lakehouse disagree (:mod:`piitracer.discover.drift`)."""
    found = discover_catalog(workspace).tables if tables is None else tables
    return compare(workspace.config.catalog, dataset_locations(workspace), found, workspace.layers.overrides)


def write_discovered_catalog(workspace: Workspace, discovery: Discovery | None = None,
                             classification: "Classification | None" = None) -> tuple[Path, DiscoveredCatalog]:
    """Write ``catalog.discovered.yaml``: an entry per discovered table (and per view the lineage
    creates), under the person's ``piitracer.yaml`` (:mod:`piitracer.ingest.catalog_layers`).
    With ``classification``, its identifier columns are added as ``classified_by: auto``; without,
    the identifiers an earlier classification proposed are kept where their columns still exist."""
    if discovery is None:
        discovery = classification.discovery if classification is not None else None
    found = discover_catalog(workspace) if discovery is None else discovery
    supplied = workspace.layers.from_discovery
    declared = {d: location for d, location in dataset_locations(workspace).items() if "location" not in supplied.get(d, ())}
    formats = {d: entry.format for d, entry in workspace.config.catalog.items() if "format" not in supplied.get(d, ())}
    for dataset, raw in workspace.set_aside.items():  # what the person says of tables not yet described
        declared.update(_said_locations(workspace, dataset, raw))
        if raw.get("format"):
            formats[dataset] = DatasetFormat(str(raw["format"]).lower())
    root = Location.parse(workspace.root)

    def place_text(location: Location) -> str:
        inside = root.relative(location)
        return inside if inside else str(location)

    graph = build_lineage_graph(workspace)
    name_of = discovered_name(workspace)  # built once: it canonicalises every catalogued location
    stored = {name_of(t) for t in found.tables}
    views = {d: tuple(graph.dataset(d).columns) for d in graph.datasets() if graph.dataset(d).view and d not in stored}
    views.update({d: columns for d, columns in found.views.items() if d not in stored})  # what the catalog keeps wins
    written = catalog_entries(found.tables, declared, formats, place_text, views)
    path = workspace.root / DISCOVERED_FILE
    if classification is not None:
        with_identifiers(written, classification.verdicts)
    elif path.is_file():
        previous = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        kept_identifiers(written, (previous.get("catalog") or {}) if isinstance(previous, dict) else {})
    path.write_text(written.to_yaml(DISCOVERED_HEADER), encoding="utf-8")
    return path, written


def _said_locations(workspace: Workspace, dataset: str, raw: Mapping[str, Any]) -> dict[str, Location]:
    """The locations a catalog entry set aside at load names: its own and its replicas'
    (``<dataset>@<name>``), so discovery names those tables after it."""
    from piitracer.model.workspace import REPLICA_SEPARATOR

    said = {}
    try:
        if raw.get("location"):
            said[dataset] = Location.parse(str(raw["location"]), workspace.root)
        for replica in raw.get("replicas") or []:
            if isinstance(replica, dict) and replica.get("location") and replica.get("name"):
                said[f"{dataset}{REPLICA_SEPARATOR}{str(replica['name']).lower()}"] = Location.parse(str(replica["location"]),
                                                                                                     workspace.root)
    except LocationError as error:
        raise WorkspaceError(f"{workspace.root / 'piitracer.yaml'}: catalog.{dataset}: {error}") from None
    return said


@dataclass
class Classification:
    """``catalog classify``: a verdict per column of every discovered table, and per table what
    could not be read (named, never a value)."""

    verdicts: list[ColumnVerdict]
    problems: dict[str, str]
    discovery: Discovery | None = None  # the tables classified
    lineage_checked: bool = True  # False before the catalog has an identifier: no "PII without lineage" yet

    @property
    def without_lineage(self) -> list[ColumnVerdict]:
        """Columns that look like PII by their values and that no catalogued identifier reaches."""
        return [v for v in self.verdicts if v.pii_without_lineage]


def classify_catalog(workspace: Workspace, sample: int = 50) -> Classification:
    """Classify every column of every discovered table (:mod:`piitracer.discover.classify`): by
    name, by ``sample`` sampled rows per table validated with python-stdnum, phonenumbers and
    email-validator, and by lineage from the catalog's identifiers."""
    from piitracer.discover.classify import ClassifyOptions, classify_columns, inherited
    from piitracer.discover.classify_sample import key_values as read_key_values
    from piitracer.discover.classify_sample import sample_table
    from piitracer.formats import FormatError

    settings = workspace.config.classify
    options = ClassifyOptions(countries=tuple(settings.countries), phone_regions=tuple(settings.phone_regions),
                              min_values=settings.min_values)

    store = workspace_store(workspace)
    catalog = workspace.config.catalog
    name_of = discovered_name(workspace)
    graph = build_lineage_graph(workspace)
    seeds = [ColumnRef(dataset=d, column=c) for d, entry in catalog.items() for c in entry.identifiers]
    lineage = inherited(graph, seeds)
    keys = {ColumnRef(dataset=d, column=entry.subject_key) for d, entry in catalog.items() if entry.subject_key}
    # "PII without lineage" only once a person has confirmed identifiers: before, every column would be.
    reviewed = any(entry.identifiers and entry.classified_by.value != "auto" for entry in catalog.values())
    samples: dict[str, tuple[Any, Any]] = {}
    verdicts: list[ColumnVerdict] = []
    problems: dict[str, str] = {}
    discovery = discover_catalog(workspace)
    problems.update({root: f"cannot list it: {why}" for root, why in discovery.unreadable_roots.items()})
    for table in discovery.tables:
        dataset = name_of(table)
        if table.problems:
            problems[dataset] = "; ".join(table.problems)
            continue
        taken = None
        try:
            taken = sample_table(table, store, sample, options.min_values) if sample else None
        except (FormatError, OSError, ValueError) as error:
            problems[dataset] = f"cannot sample its rows: {type(error).__name__}"
        samples[dataset] = (table, taken)
    # A column holding a catalogued subject key's values is a foreign key to a person.
    key_values = {}
    for ref in sorted(keys, key=str):
        if samples.get(ref.dataset, (None, None))[1] is not None:
            try:
                key_values[f"{ref.dataset}.{ref.column}"] = read_key_values(samples[ref.dataset][0], store, ref.column)
            except (FormatError, OSError, ValueError) as error:
                problems[ref.dataset] = f"cannot read its subject key's values: {type(error).__name__}"
    for dataset, (table, taken) in samples.items():
        entry = catalog.get(dataset)
        own = {k: v for k, v in key_values.items() if not k.startswith(f"{dataset}.")}
        verdicts += classify_columns(dataset, table.columns, taken.values if taken else None,
                                     entry.identifiers if entry else (), lineage, options,
                                     rows_sampled=taken.rows if taken else None, key_values=own,
                                     lineage_checked=reviewed, names_in_table=taken.names if taken else None)
    return Classification(verdicts, problems, discovery, lineage_checked=reviewed)


def write_private(path: str | os.PathLike[str], text: str) -> None:
    """Write a file only its owner can read (mode 0600): plans and journals hold subject values."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # also when the file existed with a wider mode
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def load_plan(path: str | os.PathLike[str], cipher_for: Callable[[Sequence[str]], ValueCipher] | None = None) -> DeletionPlan:
    """Read a plan file, refusing one that is not well formed (unknown schema version, duplicate
    step ids, a dependency cycle, parameters of another action...) or whose content no longer
    matches its ``plan_id``. Subject values sealed under their requests' data keys (a plan file
    the CLI wrote) are opened with ``cipher_for(request ids)`` (the request store's keys)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise PlanningError(f"{path}: cannot read the plan: {error}") from None
    return parse_plan(text, str(path), cipher_for)


def parse_plan(text: str, path: str, cipher_for: Callable[[Sequence[str]], ValueCipher] | None = None) -> DeletionPlan:
    """A plan from its file's text (see :func:`load_plan`); ``path`` names it in messages."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise PlanningError(f"{path}:{error.lineno}: not a piitracer plan: not valid JSON: {error.msg}") from None
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
        raise PlanningError(f"{path}: not a valid piitracer plan: {field or '(top level)'}: {message}") from None
    if plan.plan_id != plan.content_hash():
        raise PlanningError(f"{path}: plan_id does not match the plan's content (edited after planning?): re-plan")
    return plan


def plan_file_text(plan: DeletionPlan, cipher: ValueCipher | None) -> str:
    """The plan as its file holds it: every subject value sealed under its request's data key
    (deterministically: the same plan gives the same bytes). ``cipher`` None: values in clear
    (API callers that keep the plan in memory or their own vault)."""
    if cipher is None:
        return plan.to_json()
    data = json.loads(plan.to_json())
    for subject in data["subjects"]:
        subject["value"] = cipher.seal(subject["request_id"], subject["value"], "subject")
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


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


def check_plan_origin(workspace: Workspace, log: AuditLog, plan: DeletionPlan, replan: bool = True) -> None:
    """Refuse, before anything is journaled, a plan piitracer did not make here or that this
    workspace would not make now (``PlanRefused``, one line):

    1. the audit log must hold a ``plan`` entry for its id (``plan -o``, ``batch plan`` and the demo
       record one when they write a plan) carrying exactly the keyed digests of its subjects: an
       edited plan has another id (the id is its content's hash), whatever seal it carries;
    2. with ``replan``, the same sources and subjects planned again from the workspace must give
       the same steps (id, order, dataset, action, key column, value sets, dependencies, params,
       owner) and the same resolve captures: a holder of the audit key who records an edited plan
       is still refused, naming the first differing step. A resumed or re-run plan skips this
       (its first run was checked; its own steps changed the live tables since)."""
    recorded = [entry for entry in log.entries(plan_id=plan.plan_id) if entry.kind is EntryKind.PLAN]
    short = plan.plan_id[:16]
    if not recorded:
        raise PlanRefused(f"plan {short} is not recorded in this workspace's audit log: piitracer did not write it here "
                          "(an edited plan has another id): plan again with `piitracer plan -o`")
    digests = {(subject.request_id, log.key.subject_hmac(subject.value)) for subject in plan.subjects}
    if digests != {(digest.request_id, digest.hmac) for digest in recorded[0].subjects}:
        raise PlanRefused(f"plan {short}: its subjects are not the ones recorded when it was planned: plan again")
    if replan:
        difference = planning_difference(workspace, plan)
        if difference is not None:
            raise PlanRefused(f"plan {short}: {difference}: the lineage or catalog changed since planning (or the plan "
                              "was altered): plan again")


def planning_difference(workspace: Workspace, plan: DeletionPlan) -> str | None:
    """How ``plan`` differs from planning its sources and subjects again now (None: it does not):
    the first differing step, else the first differing resolve capture."""
    sources = [f"{ref.dataset}.{ref.column}" for ref in plan.sources]
    try:
        fresh = plan_deletion(workspace, lineage_graph_for(workspace, sources), sources, plan.subjects)
    except PlanningError as error:
        return f"planning its sources and subjects again fails ({error})"
    if fresh.plan_id == plan.plan_id:
        return None
    compared = ("id", "order", "dataset", "action", "group", "key_column", "values_from", "depends_on", "params",
                "blocking", "owner")
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


def execution_context(workspace: Workspace, attested: Sequence[str] = (), cipher: ValueCipher | None = None) -> ExecutionContext:
    """Where the executor finds tables, Spark settings and its journal, for one workspace
    (``attested``: ids of person steps their owners attested; ``cipher``: seals the values the
    journal keeps under each request's data key)."""
    return ExecutionContext(
        catalog=workspace.config.catalog,
        locations=dataset_locations(workspace),
        spark=workspace.config.spark,
        warehouse=workspace.resolve(workspace.config.spark.warehouse),
        journal_path=workspace.root / ".piitracer" / "journal.sqlite",
        warehouse_roots=warehouse_roots(workspace),
        roots_configured=bool(workspace.config.warehouse_roots),
        protected=protected_places(workspace),
        attested=frozenset(attested),
        store=workspace_store(workspace),
        rewrite=workspace.config.rewrite,
        cipher=cipher,
    )


def execute_plan(
    workspace: Workspace,
    plan: DeletionPlan,
    options: ExecuteOptions = ExecuteOptions(),
    on_step: Callable[[StepResult], None] | None = None,
    attested: Sequence[str] = (),
    cipher: ValueCipher | None = None,
) -> RunSummary:
    """Run a plan on the workspace's lakehouse (journaled; ``options.resume`` continues a killed run).
    The executor's preflight refuses a plan that does not match the workspace or would act outside
    its datasets' locations before anything is journaled. Person steps are ``awaiting_attestation``
    unless their ids are in ``attested``."""
    return run_execution(workspace, prepare_execution(workspace, plan, options, on_step, attested, cipher))


def run_execution(workspace: Workspace, executor: PlanExecutor) -> RunSummary:
    """``executor.run()``, reported as an OpenLineage job when the workspace has an
    ``openlineage:`` block: START before, COMPLETE (the datasets changed as outputs) or FAIL after.
    A dry run is not reported."""
    settings = workspace.config.openlineage
    if settings is None or executor.options.dry_run:
        return executor.run()
    from piitracer.executor.runner import ExecutionError
    from piitracer.serve.emit import emit_run_event, run_uuid

    plan_id = executor.plan.plan_id
    run = run_uuid(plan_id, datetime.now(timezone.utc).isoformat())
    emit_run_event(settings, "START", run, plan_id)
    try:
        summary = executor.run()
    except ExecutionError as error:
        changed = _changed_datasets(workspace, [(r.dataset, r.action, r.state) for r in journal_steps(workspace, plan_id)])
        emit_run_event(settings, "FAIL", run, plan_id, changed, error=str(error))
        raise
    changed = _changed_datasets(workspace, [(r.step.dataset, r.step.action.value, r.state) for r in summary.results])
    emit_run_event(settings, "COMPLETE", run, plan_id, changed)
    return summary


def _changed_datasets(workspace: Workspace, states: Sequence[tuple[str, str, str]]):
    """The datasets a run wrote: a committed step that rewrites, deletes or expires something."""
    from piitracer.model.plan import Action
    from piitracer.serve.emit import ChangedDataset

    touching_nothing = {action.value for action in NO_FILE_WORK | {Action.RESOLVE}}  # resolve only reads
    locations = dataset_locations(workspace)
    names = sorted({dataset for dataset, action, state in states if state == "committed" and action not in touching_nothing})
    return [ChangedDataset(name, str(locations[name]) if name in locations else None) for name in names]


def prepare_execution(
    workspace: Workspace,
    plan: DeletionPlan,
    options: ExecuteOptions = ExecuteOptions(),
    on_step: Callable[[StepResult], None] | None = None,
    attested: Sequence[str] = (),
    cipher: ValueCipher | None = None,
) -> PlanExecutor:
    """An executor whose preflight already passed (``PlanRefused`` otherwise): the CLI checks
    everything before it records anything in the audit log, then calls ``run()``."""
    executor = PlanExecutor(plan, execution_context(workspace, attested, cipher), options, on_step)
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
    anchor = audit_anchor(workspace)
    if not create and not path.exists():
        raise AuditError(f"{path}: no audit log in this workspace (nothing has been recorded yet)")
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path.parent, 0o700)  # also when the journal created the folder first, or umask widened it
    return AuditLog(path, loaded, anchor=anchor, workspace_id=workspace_identity(workspace))


def workspace_identity(workspace: Workspace) -> str:
    """This workspace's id: created once (a random UUID in ``.piitracer/workspace_id``, mode 0600)
    and never changed. The audit log's first entry and its anchor carry it, so ``audit verify``
    tells this workspace's log from a copy of another's; a lost or replaced id file is caught the
    same way."""
    import uuid

    path = workspace.root / ".piitracer" / "workspace_id"
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


def audit_anchor(workspace: Workspace) -> AnchorFile | None:
    """The workspace's ``audit.anchor`` (relative paths against the workspace folder), or None.
    Refused inside the workspace (whoever can wipe the workspace's log could wipe it too), inside
    a catalogued dataset's location or a warehouse root (every append replaces the anchor: it must
    never land on table files), and where something that is not an anchor already lies."""
    from piitracer.storage.guard import is_under

    text = workspace.config.audit.anchor
    if not text:
        return None
    location = Location.parse(text, base=workspace.root)
    if is_under(location, Location.parse(str(workspace.root))):
        raise AuditError(f"audit.anchor: {text} is inside the workspace ({workspace.root}); expected a path or URI "
                         "outside it (a separate mount, a bucket with object lock)")
    lakehouse = [(f"dataset {dataset}'s location", place) for dataset, place in sorted(dataset_locations(workspace).items())]
    lakehouse += [("warehouse root", root) for root in warehouse_roots(workspace)]
    for what, place in lakehouse:
        if is_under(location, place):
            raise AuditError(f"audit.anchor: {text} is inside {what} ({place}); expected a path or URI outside the "
                             "lakehouse: the anchor is replaced at every append and must never touch table files")
    anchor = AnchorFile(location, store_for(workspace.config.storage))
    if anchor.foreign_object():
        raise AuditError(f"audit.anchor: {text} already holds something that is not a piitracer audit anchor; "
                         "expected a new path (nothing is written over it)")
    return anchor


def record_plan(log: AuditLog, plan: DeletionPlan) -> AuditEntry:
    """Append the plan entry (id, requests, deadline, per-dataset decisions; no subject values)."""
    return record_plan_entry(log, plan)


def record_run(log: AuditLog, plan: DeletionPlan, run: RunSummary | Sequence[StepRecord],
               workspace: Workspace) -> list[AuditEntry]:
    """Append a step entry per step of a run: ``run`` is the executor's :class:`RunSummary` (the
    journal's records add start/finish times and original run ids) or the journal's records
    (:func:`journal_steps`). Each entry carries the SHA-256 of the dataset's newest table metadata
    file at recording time. Steps already recorded unchanged are skipped; the plan entry is added
    first if missing."""
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
            fingerprints[record.dataset] = table_metadata_hash(workspace, record.dataset)
        metadata_file, metadata_hash = fingerprints[record.dataset] or (None, None)
        records.append(record.model_copy(update={"metadata_file": metadata_file, "metadata_hash": metadata_hash}))
    return record_step_entries(log, plan, records)


def record_verification(log: AuditLog, plan: DeletionPlan, report: VerificationReport) -> AuditEntry:
    """Append the verification entry (per dataset state, files scanned, findings without values)."""
    record_plan_entry(log, plan)
    return record_verification_entry(log, plan, report)


def verify_audit(log: AuditLog, workspace: Workspace | None = None, expect_head: str | None = None) -> VerifyResult:
    """Recompute the chain, hashes, seals, sequence and Merkle roots, the structure, the anchor and
    ``expect_head`` (see :func:`piitracer.audit.verify_log`); with ``workspace``, also cross-check
    its journal: every plan the journal ran was recorded in the log before its first step, so a
    run without an audit entry means entries were removed. The first problem, if any."""
    result = log.verify(expect_head=expect_head)
    if not result.ok or workspace is None:
        return result
    journal_path = execution_context(workspace).journal_path
    if not journal_path.exists():
        return result
    journal = Journal(journal_path)
    try:
        ran = journal.plans_run()
    finally:
        journal.close()
    recorded = {entry.plan_id for entry in log.entries()}
    missing = sorted(plan_id for plan_id in ran if plan_id not in recorded)
    if missing:
        return VerifyResult(False, result.entries, result.head_hash, AuditProblem(
            None, f"the journal records {len(missing)} executed plan(s) with no audit entry (first: plan "
                  f"{missing[0][:16]}): entries were removed from the audit log"))
    return replace(result, checks=result.checks + (f"journal: {len(ran)} executed plan(s), each recorded",))


def request_trail(log: AuditLog, request_id: str, verified: VerifyResult | None = None) -> RequestTrail:
    """Everything the log holds about one request, with its Merkle root and the chain's state
    (``verified``: the log's verification already done, else it is done here); NotFoundError when
    the log has no entry for it."""
    entries = log.entries(request_id=request_id)
    if not entries:
        raise NotFoundError(f"the audit log has no entry for request {request_id!r}")
    result = verified if verified is not None else log.verify()
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


def erasure_certificate(workspace: Workspace, log: AuditLog, request_id: str, signing_key,
                        issued_at: datetime | None = None) -> dict[str, Any]:
    """The signed erasure certificate of one request (see ``render.certificate`` and
    ``crypto.signing``): refused (:class:`~piitracer.render.certificate.NotCertifiable`) unless the
    whole log verifies — chain, anchor, journal — and the request's latest verification is complete."""
    from piitracer.crypto.signing import sign
    from piitracer.render.certificate import NotCertifiable, certificate_body

    checked = verify_audit(log, workspace)
    if not checked.ok:
        raise NotCertifiable(f"request {request_id}: the audit log is not intact ({checked.problem})")
    trail = request_trail(log, request_id, checked)
    issued = (issued_at or datetime.now(timezone.utc)).replace(microsecond=0)
    return sign(certificate_body(trail, issued, log.key.key_id), signing_key)


def check_certificate(path: Path, public_key_path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(the certificate document, None) when ``path`` holds a certificate signed by the key at
    ``public_key_path`` and unchanged since; (document or None, why not) otherwise. An unreadable
    file or key is a :class:`~piitracer.model.errors.PiitracerError`."""
    from piitracer.crypto.signing import check, load_public_key

    public = load_public_key(public_key_path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise PlanningError(f"{path}: cannot read the certificate: {getattr(error, 'strerror', None) or error}") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        return None, f"{path}: not JSON (line {error.lineno}): a certificate changed or truncated"
    return document, check(document, public)


def table_metadata_hash(workspace: Workspace, dataset: str) -> tuple[str, str] | None:
    """(file relative to the location, SHA-256) of a table's newest metadata (its format's
    ``newest_metadata``: Iceberg's current ``metadata.json``, Delta's last ``_delta_log`` commit);
    None for formats without one or when the table is not there."""
    from piitracer.formats import support_for

    entry = workspace.config.catalog.get(dataset)
    location = dataset_locations(workspace).get(dataset)
    if entry is None or location is None:
        return None
    store = workspace_store(workspace)
    newest = support_for(entry.format).newest_metadata(location, store)
    if newest is None:
        return None
    return location.relative(newest), hashlib.sha256(store.read_bytes(newest)).hexdigest()


def journal_steps(workspace: Workspace, plan_id: str) -> list[StepRecord]:
    """Every journaled step of a plan (empty when it never ran): what :func:`record_run` records
    when a run stopped with an error instead of returning its summary."""
    path = execution_context(workspace).journal_path
    if not path.exists():
        return []
    journal = Journal(path)
    try:
        return journal.records(plan_id)
    finally:
        journal.close()


def scanner_choice(workspace: Workspace, engine: TaskEngine | None = None) -> Callable[[ScanPlan], FileScanner]:
    """How ``verify`` picks where to decode a listing: the workspace's ``verify`` settings (or
    ``engine``), Spark tasks on the workspace's Spark session (started only if chosen)."""
    from piitracer.executor.spark_session import spark_session

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
) -> VerificationReport:
    """Check that no file and no retained snapshot/version of the plan's datasets still holds a
    subject value. ``value_sets`` and ``step_states`` (step id -> journal state) default to what
    the workspace journal recorded for this plan; a plan never resolved raises
    :class:`~piitracer.verify.VerificationError` (run ``piitracer execute`` first). ``attested``
    maps the ids of the plan's person steps their owners attested (:func:`attested_steps`) to who
    and when. ``sweep`` (``catalog`` or ``roots``) also decodes what the plan does not reach.
    ``cipher`` opens the journal's sealed values (default: the request store's keys under the
    master key from the environment, when both exist); ``skip_requests`` (closed ones: their values
    are shredded) are left out, and a plan whose every request is closed is refused. ``engine``
    overrides the workspace's ``verify.engine`` (driver, spark or auto: see
    :mod:`piitracer.verify.engines`). For each dataset named in ``explain``, the result lists the
    Parquet column chunks that had to be decoded and why (``verify --explain``)."""
    from piitracer.executor.journal import Journal
    from piitracer.verify.sweep import sweep as sweep_beyond

    context = execution_context(workspace)
    if cipher is None and value_sets is None and request_store_path(workspace).exists() and has_master_key():
        with request_store(workspace, load_master_key()) as store:
            cipher = store.cipher(plan_requests(plan))
    if value_sets is None or step_states is None:
        if not context.journal_path.exists():
            raise VerificationError(f"plan {plan.plan_id[:16]} was never executed in this workspace (no journal at "
                                    f"{context.journal_path}): run `piitracer execute` first")
        journal = Journal(context.journal_path)
        try:
            if value_sets is None:
                resolved = journal.resolved_requests(plan.plan_id)
                if resolved and resolved <= set(skip_requests):
                    raise ShreddedError(f"plan {plan.plan_id[:16]}: every request of it is closed: values shredded "
                                        "at close; the certificate is the proof")
                value_sets = journal.load_values(plan.plan_id, cipher, frozenset(skip_requests))
            if step_states is None:
                step_states = {record["step_id"]: record["state"] for record in journal.steps(plan.plan_id)}
        finally:
            journal.close()
    if not value_sets:
        raise VerificationError(f"plan {plan.plan_id[:16]} has no resolved values in the journal: "
                                "run `piitracer execute` first (its resolve step captures them)")
    choose = scanner_choice(workspace, engine)
    report = verify_datasets(plan, workspace.config.catalog, context.locations, value_sets, step_states,
                             attested=attested, store=context.store, choose_scanner=choose, explain=explain)
    if sweep is not None:
        # The sweep of roots walks only roots a person named: the default roots are the workspace
        # folder, which also holds piitracer's own state, lineage files and notes.
        swept_roots = context.warehouse_roots if context.roots_configured else ()
        found, swept, files = sweep_beyond(plan, workspace.config.catalog, context.locations, value_sets, sweep,
                                           swept_roots, context.store, choose)
        report = report.model_copy(update={"datasets": report.datasets + tuple(found), "sweep": sweep,
                                           "swept": tuple(swept), "swept_files": files})
    return report




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
        person = ", ".join(f"{s.id} ({s.action.value} {s.dataset})" for s in plan.steps if s.action in PERSON_ACTIONS)
        raise AttestationError(f"--step {step_id}: no such step in plan {plan.plan_id[:16]} (its person steps: {person or 'none'})")
    if step.action not in PERSON_ACTIONS:
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
    certificate_path: Path | None = None  # its signed erasure certificate (when verification completed)
    public_key_path: Path | None = None  # the demo signing key's public half, to check the certificate
    closed: list[str] = field(default_factory=list)  # the requests closed (values shredded) at the end
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
    close: bool = True,
) -> DemoResult:
    """The whole demo in ``folder``: copy the fixture workspace there (once), build its lakehouse
    (or reuse it; ``rebuild`` starts over), plan the erasure of user 8841302 — or of ``subjects``
    random users that have rows, as one batch — from ``prod.payments.user_id``, write ``plan.json``
    (0600) and ``lineage.svg``, and execute the plan (it is the demo's own lakehouse: no concurrent
    writers, tags may be dropped). Then it verifies — the person steps (a Kafka topic, a masked token
    table, an aggregate) are still awaiting attestation, so this first verification is not complete —
    and, unless ``attest`` is False, attests each as its simulated owner (the evidence says it is
    simulated), verifies again and writes the audit report. ``warehouse`` puts the Iceberg warehouse
    elsewhere (tests point it at their running Spark session's). ``progress`` gets one line per phase.
    The subjects live only under their requests' data keys (the demo's own master key), and a
    complete erasure ends by closing the requests (their values shredded) unless ``close`` is False."""
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
    # The demo keeps the person only as piitracer would in production: under the request's data key
    # (wrapped by the demo's own master key), shredded at close.
    store = request_store(workspace, load_master_key(demo_master_key(root)))
    log = audit_log(workspace, key=key)
    plan_path, diagram_path = root / "plan.json", root / "lineage.svg"
    try:
        register_plan_requests(workspace, store, log, plan, "planned (demo)")
        cipher = store.cipher(plan_requests(plan))
        write_private(plan_path, plan_file_text(plan, cipher))
        diagram_path.write_bytes(render_lineage(plan_diagram(graph, plan), "svg"))
        phase("plan")
        say(f"planned {len(plan.steps)} steps for {len(batch)} subject(s) ({found} source rows): {plan_path}")

        result = DemoResult(folder=root, build=built, subjects=len(batch), subject_rows=found, plan=plan,
                            plan_path=plan_path, diagram_path=diagram_path, seconds=seconds)
        # No --drop-refs: the demo's month_end_close tag is rewritten (rewrite_ref), not dropped.
        options = ExecuteOptions(no_concurrent_writers=True)
        record_plan(log, plan)
        check_plan_origin(workspace, log, plan)  # the checks execute makes: recorded, and what planning gives now
        move_plan_requests(store, log, plan, RequestState.EXECUTING, "execute (demo)")
        result.run = execute_plan(workspace, plan, options, attested=attested_steps(log, plan), cipher=cipher,
                                  on_step=lambda r: say(f"  {r.step.id} {r.step.action.value} {r.step.dataset}: {r.state}"))
        record_run(log, plan, result.run, workspace)
        move_plan_requests(store, log, plan, RequestState.EXECUTED, f"executed: {result.run.status}")
        awaiting = result.run.awaiting()
        say(f"executed: {result.run.status}" + (f": {len(awaiting)} step(s) awaiting attestation: " + ", ".join(
            f"{r.step.id} {r.step.action.value} {r.step.dataset}" for r in awaiting) if awaiting else ""))
        phase("execute")

        result.first_verification = result.verification = verify_plan(workspace, plan, attested=attested_steps(log, plan),
                                                                      cipher=cipher)
        record_verification(log, plan, result.verification)
        settle_after_verify(store, log, plan, result.verification, workspace.config.policy.watch)
        say("verified: " + ("complete" if result.verification.complete else
                            f"not complete (verify exits 1): {_open_summary(result.verification)}"))
        if attest and not result.verification.complete:
            for step in (s for s in plan.steps if s.action in PERSON_ACTIONS):
                if step.id in attested_steps(log, plan):
                    continue
                owner = step.owner or _DEMO_OWNERS.get(step.action.value, "data-platform on-call")
                statement = (f"SIMULATED by piitracer demo: no person did this; {owner} would confirm "
                             f"{step.action.value} of {step.dataset} here")
                result.attestations.append(attest_step(log, plan, step.id, f"{owner} (simulated)", Evidence.of(statement),
                                                       statement=statement))
                say(f"  attested {step.id} {step.action.value} {step.dataset} as {owner} (simulated)")
            result.verification = verify_plan(workspace, plan, attested=attested_steps(log, plan), cipher=cipher)
            record_verification(log, plan, result.verification)
            settle_after_verify(store, log, plan, result.verification, workspace.config.policy.watch)
            say("verified again: " + ("complete" if result.verification.complete else _open_summary(result.verification)))
        phase("verify")
        if close and result.verification.complete:
            for request_id in plan_requests(plan):
                close_request(workspace, store, log, request_id, now_reason="demo: closed at once, no watching period")
                result.closed.append(request_id)
            say(f"closed {len(result.closed)} request(s): piitracer's own copies of the subject(s) shredded")
        result.audit_intact = verify_audit(log, workspace).ok
        result.report_path = root / "report.html"
        result.report_path.write_text(audit_report(workspace, log, batch[0].request_id, graph=graph), encoding="utf-8")
        if result.verification.complete:
            from piitracer.crypto.signing import load_signing_key

            signing_key, result.public_key_path = demo_signing_key(root)
            document = erasure_certificate(workspace, log, batch[0].request_id, load_signing_key(signing_key))
            result.certificate_path = root / "certificate.json"
            result.certificate_path.write_text(json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
                                               encoding="utf-8")
    finally:
        log.close()
        store.close()
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


def demo_master_key(folder: Path) -> Path:
    """The demo's own master key (0600, made once per demo folder); outside the demo it comes from
    ``--master-key-file`` or the environment."""
    from piitracer.crypto.envelope import write_master_key

    path = Path(folder) / ".piitracer" / "demo-master.key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_master_key(path)
    return path


def demo_signing_key(folder: Path) -> tuple[Path, Path]:
    """The demo's own certificate signing key (private, 0600) and its public key, made once per
    demo folder. Outside the demo: `piitracer audit keygen PATH`, the private key kept secret."""
    from piitracer.crypto.signing import generate_signing_key, public_key_path

    path = Path(folder) / ".piitracer" / "demo-signing.key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        generate_signing_key(path)
    return path, public_key_path(path)


def _demo_source(workspace: Workspace):
    """The demo's source dataset entry (``prod.payments``) of the workspace catalog."""
    dataset = DEMO_SOURCE.rsplit(".", 1)[0]
    entry = workspace.config.catalog.get(dataset)
    if entry is None or not entry.table:
        raise PlanningError(f"the demo workspace's catalog has no Iceberg table {dataset}")
    return entry


# ---- requests: the queue, their states, close = crypto-shred ------------------------------------

def request_store_path(workspace: Workspace) -> Path:
    """``<workspace>/.piitracer/requests.sqlite``."""
    return workspace.root / ".piitracer" / "requests.sqlite"


def request_store(workspace: Workspace, master: KeyWrapper | None = None):
    """The workspace's request store (created on first use). ``master`` (the master key, or a KMS
    wrapper) is needed to add requests and to read or seal their values."""
    from piitracer.requests.store import RequestStore

    return RequestStore(request_store_path(workspace), master)


def _subject_pairs(store, request_id: str) -> list[tuple[str, str]]:
    """(request id, value) pairs for the audit entry's HMACs (none once shredded)."""
    from piitracer.crypto.envelope import ShreddedError

    try:
        return [(request_id, value) for value in store.values(request_id)]
    except ShreddedError:
        return []


def move_request(store, log: AuditLog, request_id: str, to: RequestState, action: str, *, plan_id: str | None = None,
                 reason: str | None = None, watch_until: datetime | None = None):
    """Change one request's state and record the change in the audit log."""
    from piitracer.audit import record_request_entry

    before, now = store.move(request_id, to, action, plan_id=plan_id, reason=reason, watch_until=watch_until)
    record_request_entry(log, request_id, _subject_pairs(store, request_id), from_state=before.value, to_state=to.value,
                         action=action, plan_id=plan_id, reason=reason)
    return now


@dataclass
class BatchPlan:
    """What :func:`batch_plan` chose: the plan (None when no request is due), the requests in it,
    the queued requests left out that are due before the next window, and the estimate."""

    plan: DeletionPlan | None
    requests: list[ErasureRequest]
    cannot_wait: list[ErasureRequest]
    estimate: Any = None  # executor.estimate.PlanEstimate


def batch_plan(workspace: Workspace, store, due_within: timedelta | None, sources: Sequence[str] = (),
               now: datetime | None = None) -> BatchPlan:
    """Plan every queued request (of ``sources`` when given) whose deadline falls within
    ``due_within`` from ``now`` (None: every queued request) as one batch, and estimate it from
    table metadata. Requests left out but due before the next window (``policy.batch_every``) are
    returned as ``cannot_wait``. Requests of different source columns are not mixed: say which
    with ``sources``."""
    now = now or datetime.now(timezone.utc)
    wanted = {text.strip().lower() for text in sources}
    queued = [r for r in store.all() if r.state is RequestState.QUEUED
              and (not wanted or set(r.sources) <= wanted)]
    chosen = [r for r in queued if due_within is None or r.deadline_at <= now + due_within]
    next_window = now + workspace.config.policy.batch_every
    cannot_wait = [r for r in queued if r not in chosen and r.deadline_at < next_window]
    if not chosen:
        return BatchPlan(None, [], cannot_wait)
    kinds = sorted({r.sources for r in chosen})
    if len(kinds) > 1:
        raise PlanningError("the due requests name different sources (" + "; ".join(", ".join(k) for k in kinds)
                            + "): plan one batch per source with --source DATASET.COLUMN")
    subjects = [Subject(value=value, request_id=r.request_id, received_at=r.received_at)
                for r in chosen for value in store.values(r.request_id)]
    plan = plan_deletion(workspace, lineage_graph_for(workspace, list(kinds[0])), list(kinds[0]), subjects)
    return BatchPlan(plan, chosen, cannot_wait, estimate_plan_cost(workspace, plan))


def estimate_plan_cost(workspace: Workspace, plan: DeletionPlan):
    """What ``plan`` will rewrite and cost (``executor.estimate``), with the throughput measured on
    this workspace's journal."""
    from piitracer.executor.estimate import estimate_plan

    context = execution_context(workspace)
    journal = Journal(context.journal_path) if context.journal_path.exists() else None
    try:
        return estimate_plan(plan, workspace.config.catalog, context.locations, context.store,
                             workspace.config.pricing, journal)
    finally:
        if journal is not None:
            journal.close()


def add_requests(workspace: Workspace, store, log: AuditLog, sources: Sequence[str], subjects: Sequence[Subject],
                 labels: Sequence[str] = (), action: str = "added") -> list[ErasureRequest]:
    """Queue requests (grouped by request id), their values checked strictly against the source key
    columns' types exactly as ``plan`` checks them, and recorded in the audit log."""
    from piitracer.audit import record_request_entry
    from piitracer.planner.subjects import SubjectValueError, check_subjects, key_type_of

    refs = []
    for text in sources:
        dataset, _, column = text.strip().lower().rpartition(".")
        if dataset not in workspace.config.catalog:
            raise PlanningError(f"--source {text}: dataset {dataset!r} is not in the catalog")
        refs.append(ColumnRef(dataset=dataset, column=column))
    live = source_key_types(workspace, refs)
    try:
        types = {ref: key_type_of(ref, workspace.config.catalog[ref.dataset], live) for ref in refs}
        check_subjects(subjects, refs, types, workspace.config.catalog, labels)
    except SubjectValueError as error:
        raise PlanningError(str(error)) from None
    grouped: dict[str, list[Subject]] = {}
    for subject in subjects:
        grouped.setdefault(subject.request_id, []).append(subject)
    added = []
    for request_id, members in sorted(grouped.items()):
        received = min(s.received_at for s in members)
        request = store.add(request_id, received, received + workspace.config.policy.deadline, [str(r) for r in refs],
                            [s.value for s in members], action=action)
        record_request_entry(log, request_id, [(request_id, s.value) for s in members], from_state=None,
                             to_state=request.state.value, action=action, details={"deadline_at": request.deadline_at.isoformat(),
                                                                                   "subjects": len(members)})
        added.append(request)
    return added


def register_plan_requests(workspace: Workspace, store, log: AuditLog, plan: DeletionPlan, action: str) -> None:
    """Make sure every request of a plan is in the store (a plan made through the API, or before
    the store existed, adds its requests from its own values), then mark them planned."""
    from piitracer.model.requests import RequestState

    missing = [s for s in plan.subjects if not store.has(s.request_id)]
    if missing:
        add_requests(workspace, store, log, [str(ref) for ref in plan.sources], missing, action=f"{action} (from the plan)")
    for request_id in plan_requests(plan):
        stored = store.get(request_id)
        if stored.state is RequestState.CLOSED:
            raise PlanningError(f"request {request_id} is closed (its values were shredded at {stored.closed_at}): "
                                "a new erasure needs a new request id")
        if sorted(store.values(request_id)) != sorted(s.value for s in plan.subjects if s.request_id == request_id):
            raise PlanningError(f"request {request_id} is in the request store with other subject values: "
                                "use another request id")
    store.keep_plan(plan.plan_id, plan_file_text(plan, store.cipher(plan_requests(plan))))
    for request_id in plan_requests(plan):
        stored = store.get(request_id)
        if stored.state is RequestState.QUEUED or stored.plan_id != plan.plan_id:
            move_request(store, log, request_id, RequestState.PLANNED, action, plan_id=plan.plan_id)


def plan_requests(plan: DeletionPlan) -> list[str]:
    return sorted({s.request_id for s in plan.subjects})


def move_plan_requests(store, log: AuditLog, plan: DeletionPlan, to: RequestState, action: str, *,
                       reason: str | None = None, watch_until: datetime | None = None) -> None:
    """Move every open request of a plan (closed ones stay closed)."""
    from piitracer.model.requests import TRANSITIONS

    for request_id in plan_requests(plan):
        if not store.has(request_id):
            continue
        current = store.get(request_id).state
        if to in TRANSITIONS[current]:
            move_request(store, log, request_id, to, action, plan_id=plan.plan_id, reason=reason, watch_until=watch_until)


def settle_after_verify(store, log: AuditLog, plan: DeletionPlan, report: VerificationReport, watch: timedelta) -> None:
    """Move a plan's requests by what verification found: complete -> verified -> watching (until
    ``watch`` from now); only person steps open -> awaiting_attestation; anything found -> executed."""
    from piitracer.model.requests import RequestState

    if report.complete:
        move_plan_requests(store, log, plan, RequestState.VERIFIED, "verified complete")
        move_plan_requests(store, log, plan, RequestState.WATCHING, "watching for resurrected rows",
                           watch_until=datetime.now(timezone.utc) + watch)
        return
    states = {d.state.value for d in report.open_items()}
    if states == {"awaiting_attestation"}:
        move_plan_requests(store, log, plan, RequestState.AWAITING_ATTESTATION, "verified: person steps open")
    else:
        move_plan_requests(store, log, plan, RequestState.EXECUTED, "verified: not complete",
                           reason=", ".join(sorted(states)))


class CloseRefused(PlanningError):
    """A request that may not be closed yet; the message says why."""


def close_request(workspace: Workspace, store, log: AuditLog, request_id: str, now_reason: str | None = None) -> str:
    """Close a request: refused unless it is watching (verified complete, every person step
    attested) and its watching period is over, or ``now_reason`` says why not to wait. Destroys its
    data key and its sealed values, deletes its resolved values and computed forms from the journal,
    forgets kept plans that held only closed requests, and records the close (the key's
    fingerprint, never the key) in the audit log. Returns the fingerprint."""
    from piitracer.audit import record_request_entry
    from piitracer.executor.journal import Journal
    from piitracer.model.requests import RequestState

    request = store.get(request_id)
    if request.state is RequestState.CLOSED:
        raise CloseRefused(f"request {request_id} is already closed (at {request.closed_at})")
    if request.state is not RequestState.WATCHING:
        raise CloseRefused(f"request {request_id} is {request.state.value}: only a request verified complete (every "
                           "person step attested) and watched can be closed")
    now = datetime.now(timezone.utc)
    if request.watch_until and now < request.watch_until and not now_reason:
        raise CloseRefused(f"request {request_id} is watched until {request.watch_until:%Y-%m-%d %H:%M} UTC (rows "
                           "resurrected by a late pipeline run are caught meanwhile): wait, or pass --now REASON")
    pairs = _subject_pairs(store, request_id)
    rejected = _forget_rejected_events(workspace, store, request, pairs)  # while the values can still be read
    fingerprint = store.shred(request_id, "closed: values shredded", now_reason)
    journal_path = execution_context(workspace).journal_path
    forgotten = 0
    if journal_path.exists():
        journal = Journal(journal_path)
        try:
            forgotten = journal.forget_request(request_id)
        finally:
            journal.close()
    if request.plan_id and all(r.state is RequestState.CLOSED for r in store.all() if r.plan_id == request.plan_id):
        store.forget_plan(request.plan_id)
    record_request_entry(log, request_id, pairs, from_state=request.state.value, to_state=RequestState.CLOSED.value,
                         action="closed: data key destroyed, values shredded", plan_id=request.plan_id, reason=now_reason,
                         details={"key_fingerprint": fingerprint, "journal_value_sets_deleted": forgotten,
                                  "shredded_at": now.isoformat(), **rejected})
    return fingerprint


def _forget_rejected_events(workspace: Workspace, store, request, pairs: list[tuple[str, str]]) -> dict[str, int]:
    """Delete the rejected OpenLineage bodies (``piitracer serve``) that hold one of the request's
    values: its subject values and the values and computed forms the journal resolved for it. A
    sealed body the master key cannot open is deleted too, and counted apart in the audit entry."""
    from piitracer.crypto.sealed_body import BodySealer
    from piitracer.executor.journal import Journal
    from piitracer.ingest.received_events import forget_values, has_rejected

    if not has_rejected(workspace.root):
        return {}
    values = {value for _, value in pairs}
    journal_path = execution_context(workspace).journal_path
    if request.plan_id and journal_path.exists() and pairs:
        journal = Journal(journal_path)
        try:
            others = journal.resolved_requests(request.plan_id) - {request.request_id}
            sets = journal.load_values(request.plan_id, store.cipher([request.request_id]), skip=others) or {}
        finally:
            journal.close()
        values |= {str(v) for found in sets.values() for v in found if isinstance(v, (str, int)) and not isinstance(v, bool)}
    done = forget_values(workspace.root, values, BodySealer(store.wrapper) if store.wrapper is not None else None)
    return {"rejected_events_checked": done.checked, "rejected_events_deleted_holding_values": done.deleted_holding_values,
            "rejected_events_deleted_unreadable": done.deleted_unreadable}


def reverify_requests(workspace: Workspace, store, log: AuditLog, sweep: str | None = "catalog") -> list[tuple[str, bool]]:
    """Verify again every watching request's plan (and sweep beyond it): a finding moves the request
    back to ``executed`` with the reason, while its values still exist. Returns (request, complete)."""
    from piitracer.model.requests import RequestState

    results = []
    plans: dict[str, list[str]] = {}
    for request in store.all():
        if request.state is RequestState.WATCHING and request.plan_id:
            plans.setdefault(request.plan_id, []).append(request.request_id)
    for plan_id, request_ids in sorted(plans.items()):
        text = store.plan_json(plan_id)
        plan = _plan_from_text(text, store)
        closed = {r.request_id for r in store.all() if r.plan_id == plan_id and r.state is RequestState.CLOSED}
        report = verify_plan(workspace, plan, attested=attested_steps(log, plan), sweep=sweep,
                             cipher=store.cipher(plan_requests(plan)), skip_requests=closed)
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
