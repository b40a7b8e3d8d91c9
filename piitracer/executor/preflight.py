"""Before the first step: is this plan, run in this workspace, exactly what was planned, and does
every place it would touch belong to the datasets it names?

A plan file is an input like any other: it can be edited, come from another workspace, or meet a
lakehouse that changed since planning (a copied folder whose Iceberg metadata still points at the
original). Each check below refuses the run with one line naming the step or dataset and what
was expected, before anything is journaled or recorded:

1. every dataset a step names is in this workspace's catalog with the format, table and location
   it had at planning;
2. every action is one the dataset's format has, and deletes only target datasets the plan erases;
   a crypto-shredding step (``destroy_subject_key``) needs the workspace's key vault there, under
   the warehouse roots and of the master key given (``executor.shred_step``);
3. key columns exist in the live table's schema (they are always quoted as identifiers), value
   sets a step reads are made by the resolve step, and computed keys are plain expressions over
   the source's own columns;
4. the subjects' values still parse strictly as the source key columns' types, and those types
   are still the live ones;
5. the location guard (``storage.guard``): every path the table's metadata names lies under the
   dataset's catalogued location (a shallow clone: or its source's) and the warehouse roots; for
   an Iceberg table in the Hadoop catalog, Spark's own path for the table identifier is that
   location too; for a table whose steps run on another engine (Iceberg through pyiceberg), that
   engine's check (the catalog's table is the one at the catalogued location).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from piitracer.model.outcome import SafetyError
from piitracer.formats import FormatError, key_type_name, support_for, table_schema
from piitracer.formats.iceberg_catalogs import IcebergCatalogs
from piitracer.model.key_values import KeyValueError, parse_key_type, parse_key_value
from piitracer.model.plan import NO_FILE_WORK, PERSON_ACTIONS, Action, DatasetDecision, DatasetStatus, DeletionPlan, Step, ValueKind
from piitracer.model.workspace import CatalogDataset, CloneMode, ReplicaManagement
from piitracer.model.settings import SparkSettings
from piitracer.executor.shred_step import check_destroy_step
from piitracer.shred.place import VaultPlace
from piitracer.storage.guard import Territory, canonical, symlinks_leaving
from piitracer.storage.locations import Location
from piitracer.storage.store import StorageError, Store

log = logging.getLogger(__name__)

KEYED_ACTIONS = {Action.DELETE_ROWS, Action.EQUALITY_DELETE, Action.REWRITE_FILES, Action.REWRITE_ARCHIVE}
MAX_NAMED_PATHS = 3


class PlanRefused(SafetyError):
    """The plan does not match this workspace or would act outside its datasets: nothing ran."""


@dataclass
class Preflight:
    """What the checks learnt, for the run: each touched dataset's live key column type."""

    key_types: dict[tuple[str, str], str] = field(default_factory=dict)


def preflight(plan: DeletionPlan, catalog: Mapping[str, CatalogDataset], locations: Mapping[str, Location],
              spark: SparkSettings, warehouse: Path, roots: tuple[Location, ...] = (), store: Store | None = None,
              *, roots_configured: bool = True, protected: tuple[Location, ...] = (), vault: VaultPlace | None = None,
              master: Any = None) -> Preflight:
    """Run every check of the module docstring; raise :class:`PlanRefused` at the first failure.
    ``roots`` may not be empty (every place a step changes lies inside one); ``roots_configured``
    False says they are the workspace's defaults, so a refusal names the setting to add;
    ``protected`` are piitracer's own files, which no dataset's location may hold; ``vault`` the
    workspace's key vault (``shred.vault``) and ``master`` the master key, for a key destruction."""
    store = store or Store()
    if not roots:
        raise PlanRefused("no warehouse roots: set warehouse_roots in piitracer.yaml (the folders or bucket prefixes "
                          "holding the lakehouse); piitracer changes nothing outside them")
    guard = _Guard(tuple(roots), roots_configured, tuple(protected))
    result = Preflight()
    decisions = {d.dataset: d for d in plan.datasets}
    value_sets = _value_set_names(plan)
    touched = sorted({s.dataset for s in plan.steps if s.action not in NO_FILE_WORK})
    for step in plan.steps:
        _check_step(step, catalog, decisions, value_sets)
    for step in plan.steps:
        if step.action is Action.DESTROY_SUBJECT_KEY:
            refusal = check_destroy_step(step, decisions, vault, locations, tuple(roots), tuple(protected), store, master)
            if refusal is not None:
                raise PlanRefused(refusal)
            if vault is not None and vault.dataset in catalog:  # a catalogued vault: the guard of every dataset
                guard_location(vault.dataset, catalog[vault.dataset], vault.location, catalog, locations, roots, store,
                               roots_configured=roots_configured, protected=protected)
    engines = _engines(plan, catalog)
    for capture in plan.resolve:
        _check_computed(plan, capture)
    schemas = {}
    for dataset in touched:
        try:
            schemas[dataset] = _check_dataset(dataset, catalog, locations, spark, warehouse, guard, store,
                                              engines.get(dataset))
        except StorageError as error:
            raise PlanRefused(f"dataset {dataset}: {error}") from None
    for step in plan.steps:
        if step.action in KEYED_ACTIONS:
            _check_key_column(step, schemas.get(step.dataset), result)
        if step.action is Action.EQUALITY_DELETE:
            _check_unpartitioned(step, catalog[step.dataset], locations[step.dataset], store)
    _check_subjects(plan, schemas, result)
    log.info("preflight: %d steps over %d datasets checked", len(plan.steps), len(touched))
    return result


@dataclass(frozen=True)
class _Guard:
    """The places a run may change (``roots``) and those it never may (``protected``)."""

    roots: tuple[Location, ...]
    configured: bool
    protected: tuple[Location, ...]


def _check_dataset(dataset: str, catalog: Mapping[str, CatalogDataset], locations: Mapping[str, Location],
                   spark: SparkSettings, warehouse: Path, guard: "_Guard", store: Store, engine: str | None = None):
    """The location guard and the live schema of one dataset a step touches (``engine``: the one
    its steps name, when not Spark)."""
    entry = catalog[dataset]
    location = locations.get(dataset)
    support = support_for(entry.format)
    if not support.stores_rows:
        return None
    if location is None:
        raise PlanRefused(f"dataset {dataset}: no location in the catalog: piitracer needs it to find and check its files")
    guard_location(dataset, entry, location, catalog, locations, guard.roots, store,
                   roots_configured=guard.configured, protected=guard.protected)
    if engine in support.engines:
        try:
            support.engines[engine].check(dataset, entry, location, store)
        except (FormatError, SafetyError) as error:
            raise PlanRefused(f"dataset {dataset}: {error}") from None
    elif support.spark_table:
        _check_spark_path(dataset, entry, location, spark, warehouse, store)
    try:
        return table_schema(entry, location, store)
    except FormatError as error:
        raise PlanRefused(f"dataset {dataset}: {error}") from None


# ---- the plan against the catalog -----------------------------------------------------------

def _check_step(step: Step, catalog: Mapping[str, CatalogDataset], decisions: dict[str, DatasetDecision],
                value_sets: set[str]) -> None:
    entry = catalog.get(step.dataset)
    if entry is None:
        raise PlanRefused(f"step {step.id}: dataset {step.dataset} is not in this workspace's catalog "
                          "(a plan made in another workspace, or a catalog changed since planning): re-plan here")
    if step.action is Action.RESOLVE:
        if support_for(entry.format).source_rows is None:
            raise PlanRefused(f"step {step.id}: resolve reads {step.dataset}, a {entry.format.value} dataset with no rows to read")
    else:
        decision = decisions.get(step.dataset)
        if decision is None:
            raise PlanRefused(f"step {step.id}: dataset {step.dataset} has no decision in the plan's datasets")
        _same_catalog_facts(step, entry, decision)
        _check_replica_step(step, entry)
        if step.action not in NO_FILE_WORK:
            if step.action not in support_for(entry.format).actions:
                raise PlanRefused(f"step {step.id}: {step.action.value} is not an action of a {entry.format.value} dataset "
                                  f"({step.dataset}): the plan was altered or made for another format")
            if decision.status is not DatasetStatus.ERASE:
                raise PlanRefused(f"step {step.id}: {step.action.value} on {step.dataset}, which the plan does not erase "
                                  f"(status {decision.status.value})")
        if step.action in KEYED_ACTIONS:
            if not step.key_column or step.key_column != decision.key_column:
                raise PlanRefused(f"step {step.id}: key column {step.key_column!r} is not the plan's key column of "
                                  f"{step.dataset} ({decision.key_column!r})")
            if not step.values_from:
                raise PlanRefused(f"step {step.id}: {step.action.value} on {step.dataset} names no value set to match")
    unknown = sorted({v.name for v in step.values_from} - value_sets)
    if unknown:
        raise PlanRefused(f"step {step.id}: reads value set(s) {', '.join(unknown)} that the resolve step does not make")


def _check_replica_step(step: Step, entry: CatalogDataset) -> None:
    """A replication-managed replica is only waited for and verified, never written: its
    replication would copy the primary over it (or fight the write); anything else is a plan
    altered or made for another catalog."""
    replica = entry.replica_of
    replicated = replica is not None and replica.managed_by is ReplicaManagement.REPLICATION
    if step.action is Action.AWAIT_REPLICATION:
        if not replicated:
            raise PlanRefused(f"step {step.id}: await_replication on {step.dataset}, which the catalog does not "
                              "declare a replication-managed replica: re-plan")
        if step.params.primary != replica.dataset:
            raise PlanRefused(f"step {step.id}: {step.dataset} replicates {replica.dataset}, not {step.params.primary}: re-plan")
    elif replicated and step.action not in PERSON_ACTIONS:
        raise PlanRefused(f"step {step.id}: {step.action.value} on {step.dataset}, a replication-managed replica of "
                          f"{replica.dataset}: piitracer only verifies it (its replication carries the erasure)")


def _same_catalog_facts(step: Step, entry: CatalogDataset, decision: DatasetDecision) -> None:
    changed = []
    if decision.format != entry.format.value:
        changed.append(f"format {decision.format} -> {entry.format.value}")
    if decision.table != entry.table:
        changed.append(f"table {decision.table} -> {entry.table}")
    if decision.location != entry.location:
        changed.append(f"location {decision.location} -> {entry.location}")
    if changed:
        raise PlanRefused(f"dataset {step.dataset} changed in the catalog since planning ({'; '.join(changed)}): re-plan")


def _engines(plan: DeletionPlan, catalog: Mapping[str, CatalogDataset]) -> dict[str, str]:
    """Dataset -> the engine its steps name other than Spark; refused when a step names an engine
    its format does not run on, or one dataset's steps name two (an altered plan)."""
    found: dict[str, set[str]] = {}
    for step in plan.steps:
        if step.engine is None:
            continue
        support = support_for(catalog[step.dataset].format)
        allowed = set(support.engines) | ({"spark"} if support.spark_actions else set())
        if step.engine.value not in allowed:
            raise PlanRefused(f"step {step.id}: engine {step.engine.value!r} does not run a {support.format.value} "
                              f"dataset ({step.dataset}): the plan was altered or made by another piitracer")
        found.setdefault(step.dataset, set()).add(step.engine.value)
    mixed = sorted(d for d, names in found.items() if len(names) > 1)
    if mixed:
        raise PlanRefused(f"dataset {mixed[0]}: its steps name engines {', '.join(sorted(found[mixed[0]]))}: one "
                          "engine runs a dataset's steps (the plan was altered): re-plan")
    return {dataset: names.pop() for dataset, names in found.items() if names != {"spark"}}


def _value_set_names(plan: DeletionPlan) -> set[str]:
    names = set()
    for capture in plan.resolve:
        names |= {f"{capture.dataset}.{c}" for c in (*capture.key_columns, *capture.identifiers)}
        names |= {v.name for v in capture.computed}
    return names


def _check_computed(plan: DeletionPlan, capture) -> None:
    if not capture.computed:
        return  # sqlglot (0.1 s to import) only for a plan with a computed value set
    from piitracer.executor.expressions import ExpressionRefused, check_source_expression

    for value in capture.computed:
        if value.kind is ValueKind.SURROGATE:  # read from its mapping dataset, by value sets the resolve makes
            unknown = sorted(set(value.lookup.key_from if value.lookup else ()) - _value_set_names(plan))
            if value.lookup is None or not value.lookup.key_from or unknown or value.source.dataset != capture.dataset:
                raise PlanRefused(f"resolve of {capture.dataset}: surrogate value set {value.name} names no mapping "
                                  f"the resolve step can read{' (unknown value sets ' + ', '.join(unknown) + ')' if unknown else ''}")
            continue
        if value.kind is not ValueKind.COMPUTED or not value.expression:
            raise PlanRefused(f"resolve of {capture.dataset}: computed value set {value.name} has no expression")
        if value.source.dataset != capture.dataset:
            raise PlanRefused(f"resolve of {capture.dataset}: computed value set {value.name} reads another dataset")
        try:
            check_source_expression(value.expression, value.source.column)
        except ExpressionRefused as error:
            raise PlanRefused(f"resolve of {capture.dataset}: computed value set {value.name}: {error}") from None


# ---- the plan against the live tables ------------------------------------------------------

def _check_unpartitioned(step: Step, entry: CatalogDataset, location: Location, store: Store) -> None:
    """An equality delete without a scan is one file for the whole table: only an unpartitioned
    table takes it (a partitioned one needs a file per partition, found by a scan)."""
    support = support_for(entry.format)
    facts = support.table_facts(location, store) if support.table_facts else None
    if facts is not None and facts.partition_columns:
        raise PlanRefused(f"step {step.id}: delete_mode 'equality' needs an unpartitioned table; {step.dataset} is "
                          f"partitioned by {', '.join(facts.partition_columns)}: set delete_mode 'positional' and re-plan")


def _stored_field(schema, column: str, what: str):
    """The field of ``schema`` that stores ``column``, matched as the engines match names (the exact
    name, else the one name equal ignoring case); None when there is none. Two names equal ignoring
    case are refused: which one a step would act on is ambiguous."""
    if column in schema.names:
        return schema.field(column)
    found = [f for f in schema if f.name.lower() == column.lower()]
    if len(found) > 1:
        raise PlanRefused(f"{what}: the table stores {' and '.join(f.name for f in found)}, which differ only in case: "
                          f"which one is {column} is ambiguous")
    return found[0] if found else None


def _check_key_column(step: Step, schema, result: Preflight) -> None:
    if schema is None:
        return  # a table with no rows yet (an empty folder): nothing can match, nothing to protect
    stored = _stored_field(schema, step.key_column, f"step {step.id}: {step.dataset}")
    if stored is None:
        raise PlanRefused(f"step {step.id}: {step.dataset} has no column {step.key_column!r} "
                          f"(columns: {', '.join(schema.names)})")
    result.key_types[(step.dataset, step.key_column)] = key_type_name(stored.type) or "other"


def _check_subjects(plan: DeletionPlan, schemas: dict, result: Preflight) -> None:
    for capture in plan.resolve:
        schema = schemas.get(capture.dataset)
        for column in capture.key_columns:
            planned = capture.key_types.get(column)
            if planned is None:
                raise PlanRefused(f"resolve of {capture.dataset}: the plan does not say the type of key column {column}")
            key_type = parse_key_type(planned)
            if schema is not None:
                stored = _stored_field(schema, column, f"resolve of {capture.dataset}")
                if stored is None:
                    raise PlanRefused(f"resolve of {capture.dataset}: the table has no key column {column!r}")
                live = key_type_name(stored.type)
                if live is None or parse_key_type(live) != key_type:
                    raise PlanRefused(f"resolve of {capture.dataset}: key column {column} is {live or stored.type} "
                                      f"now, {key_type} at planning: re-plan")
                result.key_types[(capture.dataset, column)] = live
            for number, subject in enumerate(plan.subjects, start=1):
                try:
                    parse_key_value(subject.value, key_type, capture.normalised.get(column, ()))
                except KeyValueError as error:
                    raise PlanRefused(f"subject #{number} (request {subject.request_id}): the value {error} "
                                      f"(key {capture.dataset}.{column} is {key_type}): the plan was altered") from None


# ---- the location guard -----------------------------------------------------------------------

def territory_of(dataset: str, entry: CatalogDataset, location: Location, catalog: Mapping[str, CatalogDataset],
                 locations: Mapping[str, Location], roots: tuple[Location, ...]) -> Territory:
    """Where a dataset's steps may act: its location; a shallow clone also reads its source's files."""
    also: tuple[Location, ...] = ()
    if entry.clone_of is not None and entry.clone_of.mode is CloneMode.SHALLOW:
        source = locations.get(entry.clone_of.dataset)
        if source is not None:
            also = (source,)
    return Territory.of(dataset, location, also, roots)


def guard_location(dataset: str, entry: CatalogDataset, location: Location, catalog: Mapping[str, CatalogDataset],
                   locations: Mapping[str, Location], roots: tuple[Location, ...], store: Store | None = None, *,
                   roots_configured: bool = True, protected: tuple[Location, ...] = ()) -> None:
    """Refuse unless every path the dataset's metadata names lies inside its territory, the
    territory (``..`` and every symlink on its path resolved) inside the roots, and none of
    piitracer's own files (``protected``) inside the territory."""
    store = store or Store()
    if not roots:
        raise PlanRefused(f"dataset {dataset}: no warehouse roots: set warehouse_roots in piitracer.yaml")
    territory = territory_of(dataset, entry, location, catalog, locations, roots)
    outside = territory.outside_roots()
    if outside is not None:
        said = "" if outside == canonical(location) or location.uri == outside.uri else f" (catalogued as {location})"
        fix = ("add its root to warehouse_roots in piitracer.yaml if it truly belongs to this lakehouse" if roots_configured
               else "these are the default roots (the workspace folder and the Spark warehouse): set warehouse_roots in "
                    "piitracer.yaml to the folders or bucket prefixes holding the lakehouse")
        raise PlanRefused(f"dataset {dataset}: {outside}{said} is outside the warehouse roots "
                          f"({', '.join(map(str, territory.roots))}): refusing to touch it; {fix}")
    for own in protected:
        own = canonical(own)
        if any(prefix.contains(own) or own.contains(prefix) for prefix in territory.allowed):
            raise PlanRefused(f"dataset {dataset}: its location {territory.location} holds or lies in piitracer's own "
                              f"{own}: a rewrite or orphan removal there would destroy the audit trail: fix "
                              f"catalog.{dataset}.location")
    if not store.exists(location):
        raise PlanRefused(f"dataset {dataset}: location {location} does not exist: fix catalog.{dataset}.location")
    leaving = symlinks_leaving(location, territory)
    if leaving:
        raise PlanRefused(f"dataset {dataset}: {len(leaving)} symlink(s) under {location} lead outside it "
                          f"(first: {leaving[0]}): refusing to act through them")
    try:
        named = list(support_for(entry.format).referenced_paths(location, store))
    except FormatError as error:
        raise PlanRefused(f"dataset {dataset}: {error}") from None
    strays = [(what, path) for what, path in named if not territory.admits(path, base=location)]
    if strays:
        shown = "; ".join(f"{what} {path}" for what, path in strays[:MAX_NAMED_PATHS])
        more = f" (and {len(strays) - MAX_NAMED_PATHS} more)" if len(strays) > MAX_NAMED_PATHS else ""
        raise PlanRefused(
            f"dataset {dataset}: its metadata points outside its catalogued location {territory.location}: {shown}{more}. "
            "A copied table folder keeps the original's absolute paths, so running here would change the original. "
            "Run on the original workspace, or make a real copy (e.g. Iceberg's register_table after rewriting the "
            "paths, or a deep clone) and catalogue that")


def _check_spark_path(dataset: str, entry: CatalogDataset, location: Location, spark: SparkSettings, warehouse: Path,
                      store: Store | None = None) -> None:
    """A format whose steps reach the table by identifier through Spark's catalog (Iceberg): the
    identifier must be in the configured catalog. In the Hadoop catalog, Spark finds ``cat.db.t``
    at ``<warehouse>/db/t``: that must be the catalogued location, or Spark's steps would act on
    another folder than the one checked. A table of a configured Iceberg catalog that keeps its own
    pointer (``iceberg.catalogs``: jdbc/sql, rest, glue, hive), which Spark gets under the same
    name, is checked by where that catalog keeps it (its metadata is read through the catalog, and
    refused unless the catalog's location is the catalogued one; each Spark step checks the table
    Spark loaded the same way)."""
    if not entry.table:
        raise PlanRefused(f"dataset {dataset}: a {entry.format.value} dataset needs 'table:' (catalog.db.table) in the catalog")
    parts = entry.table.split(".")
    catalogs = getattr(store, "pointers", None)
    if len(parts) == 3 and isinstance(catalogs, IcebergCatalogs) and catalogs.owns(entry.table):
        return
    if len(parts) != 3 or parts[0].lower() != spark.catalog.lower():
        raise PlanRefused(f"dataset {dataset}: table {entry.table!r} is not in the configured Spark catalog "
                          f"{spark.catalog!r} (expected {spark.catalog}.db.table)")
    catalog_type = spark.conf.get(f"spark.sql.catalog.{spark.catalog}.type", "hadoop")
    if catalog_type != "hadoop":
        return  # another catalog finds tables its own way: the steps check the loaded table's location
    spark_path = Location.parse(os.path.join(str(warehouse), parts[1], parts[2]))
    if canonical(location) != canonical(spark_path):
        raise PlanRefused(f"dataset {dataset}: Spark's catalog {spark.catalog} reads {entry.table} from {spark_path}, "
                          f"but the catalog's location is {location}: fix spark.warehouse or catalog.{dataset}.location")
