"""Ingest every lineage source a workspace names, unit by unit, fresh or through the lineage store.

A *unit* is the smallest input whose lineage can be kept and reused on its own:

* ``openlineage``: every event file of ``lineage.openlineage`` plus what ``piitracer serve``
  received, together — "latest event wins" is decided across all of them, so a change to any
  event file (a received event appended) reads them all again;
* ``sql/<i>/<file>``: one SQL file of the i-th ``lineage.sql`` source; the files of one source are
  read in path order and each may teach the next the columns of a table it creates;
* ``dbt/<i>``: the i-th dbt project's manifest and catalog;
* ``missing/<field>``: a source path that does not exist (one problem naming the workspace key).

Each unit's result depends on its files' bytes and on what came before it (the naming rule, the
dialect, the schemas known: the catalog's, the events' schema facets, an earlier SQL file's
``CREATE TABLE``). Its fingerprint is a hash of all of that, so the store re-reads a unit exactly
when its result could differ. Fresh (:func:`ingest_workspace`) and stored
(:func:`update_store` + :func:`batch_from_store`) ingest assemble the units the same way and give
the same batch (tests/unit/ingest/test_lineage_store.py).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterator, Sequence

from piitracer.ingest.lineage_store import LineageStore, fingerprint
from piitracer.ingest.source_files import display_path, files_under
from piitracer.workspace.model import WORKSPACE_FILE, Workspace
from piitracer.model.lineage import IngestProblem, LineageBatch, Origin, OriginKind
from piitracer.model.naming import DatasetNamer

OPENLINEAGE_UNIT = "openlineage"
DBT_SEEDS = "dbt:seed files"  # a dbt unit's "learned": the seed files it looked at, not schemas


# The parsers load when a unit is parsed, not with this module: the lineage store's readers (and
# the audit trail and a verification, which import the lineage's wiring) need neither sqlglot nor
# the OpenLineage models. Module-level names, so that a test can replace a parser.

def ingest_sql_file(path: Path, **options) -> LineageBatch:
    """One SQL file's lineage: :func:`piitracer.ingest.sql.lineage.ingest_sql_file`."""
    from piitracer.ingest.sql.lineage import ingest_sql_file as parse

    return parse(path, **options)


def ingest_openlineage_paths(paths: Sequence[Path], **options) -> LineageBatch:
    """Event files' lineage: :func:`piitracer.ingest.openlineage.events.ingest_openlineage_paths`."""
    from piitracer.ingest.openlineage.events import ingest_openlineage_paths as parse

    return parse(paths, **options)


def ingest_dbt_artifacts(manifest: Path, catalog: Path | None, **options) -> LineageBatch:
    """A dbt project's lineage: :func:`piitracer.ingest.dbt.artifacts.ingest_dbt_artifacts`."""
    from piitracer.ingest.dbt.artifacts import ingest_dbt_artifacts as parse

    return parse(manifest, catalog, **options)


@dataclass(frozen=True)
class UnitPlace:
    """One unit of the workspace, in ingest order. ``group``: the SQL source whose files' edges
    are sorted together (as one ``ingest_sql_paths`` call would)."""

    name: str
    group: str | None = None


@dataclass
class StoreUpdate:
    """What one :func:`update_store` did: units parsed again, units reused, units dropped."""

    parsed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


def ingest_workspace(workspace: Workspace) -> LineageBatch:
    """The whole lineage of the workspace, read fresh: OpenLineage events first (their schema
    facets expand ``SELECT *``), then SQL files, then dbt artifacts (their models read tables the
    SQL files may write). A source path that does not exist is reported as a problem naming the
    workspace key; the other sources are still ingested."""
    places: list[UnitPlace] = []
    batches: dict[str, LineageBatch] = {}
    for place, batch in _units(workspace, None, StoreUpdate()):
        places.append(place)
        batches[place.name] = batch
    return assemble(places, batches)


def update_store(workspace: Workspace, store: LineageStore) -> StoreUpdate:
    """Bring the store in line with the workspace: parse each unit whose fingerprint changed,
    reuse the others, drop units the workspace no longer names. Returns what was done."""
    update = StoreUpdate()
    places = [place for place, _ in _units(workspace, store, update)]
    for position, place in enumerate(places):
        store.move(place.name, position)
    update.dropped = store.keep_only(place.name for place in places)
    return update


def batch_from_store(store: LineageStore, datasets: set[str] | None = None) -> LineageBatch:
    """The stored lineage as one batch, assembled as :func:`ingest_workspace` assembles it: all of
    it, or (``datasets``) only the edges into those datasets and their facts, and every problem."""
    places = [UnitPlace(name, group) for name, group in store.units()]
    return assemble(places, store.unit_batches(datasets))


def assemble(places: list[UnitPlace], batches: dict[str, LineageBatch]) -> LineageBatch:
    """Units' batches merged in order; the files of one SQL source merged, then sorted together."""
    from piitracer.ingest.sql.batches import sorted_batch

    batch = LineageBatch()
    index = 0
    while index < len(places):
        group = places[index].group
        if group is None:
            batch = batch.merged(batches[places[index].name])
            index += 1
            continue
        grouped = LineageBatch()
        while index < len(places) and places[index].group == group:
            grouped = grouped.merged(batches[places[index].name])
            index += 1
        batch = batch.merged(sorted_batch(grouped))
    return batch


def missing_sources(workspace: Workspace) -> list[tuple[str, str]]:
    """``(field, path as written)`` of every lineage source path the workspace names that does not
    exist (``lineage.sql.0.path``, ``lineage.openlineage.1.path``, ``lineage.dbt.0.manifest``...), in
    the order of the file: a plan from a lineage without them would miss what they say."""
    sources, found = workspace.config.lineage, []
    for index, source in enumerate(sources.openlineage):
        found.append((f"lineage.openlineage.{index}.path", source.path))
    for index, source in enumerate(sources.sql):
        found.append((f"lineage.sql.{index}.path", source.path))
    for index, source in enumerate(sources.dbt):
        found.append((f"lineage.dbt.{index}.manifest", source.manifest))
        if source.catalog:
            found.append((f"lineage.dbt.{index}.catalog", source.catalog))
    return [(field_, text) for field_, text in found if not workspace.resolve(text).exists()]


# ---- the units ------------------------------------------------------------------------------


def _units(workspace: Workspace, store: LineageStore | None,
           update: StoreUpdate) -> Iterator[tuple[UnitPlace, LineageBatch | None]]:
    """Every unit in order with its batch: parsed when there is no store or its fingerprint
    changed (then stored), None when the store already holds it."""
    from piitracer.ingest.openlineage.places import EVENT_SUFFIXES, EVENTS_FILE
    from piitracer.ingest.sql.batches import copy_schemas

    sources = workspace.config.lineage
    namer_print = namer_fingerprint(workspace.namer)

    def unit(place: UnitPlace, print_: str, parse: Callable[[], tuple[LineageBatch, dict]],
             reprint: Callable[[dict], str] | None = None) -> tuple[LineageBatch | None, dict]:
        """(batch, schemas it taught): parsed, or (None, stored schemas) when the store has it.
        ``reprint(learned)``: the fingerprint to store once parsed, for a unit whose inputs are
        only known by parsing it (a dbt project's seed files)."""
        if store is not None:
            stored = store.unit(place.name)
            if stored is not None and stored.fingerprint == print_:
                update.unchanged.append(place.name)
                return None, stored.learned
        batch, learned = parse()
        if reprint is not None:
            print_ = reprint(learned)
        if store is not None:
            store.put(place.name, 0, print_, batch, learned, place.group)
            update.parsed.append(place.name)
        return batch, learned

    # OpenLineage: the configured paths that exist, then what `serve` received.
    event_paths = []
    for index, source in enumerate(sources.openlineage):
        path = workspace.resolve(source.path)
        if path.exists():
            event_paths.append(path)
        else:
            yield _missing_unit(unit, f"lineage.openlineage.{index}.path", source.path)
    received = workspace.root / EVENTS_FILE
    if received.exists():
        event_paths.append(received)
    event_files = [p for p in files_under(event_paths, EVENT_SUFFIXES) if p.is_file()]
    events_print = fingerprint(OPENLINEAGE_UNIT, namer_print, [p.as_posix() for p in event_paths],
                               [(display_path(p, workspace.root), _file_hash(p)) for p in event_files])
    place = UnitPlace(OPENLINEAGE_UNIT)
    events, events_schemas = unit(place, events_print, lambda: _events_and_schemas(
        ingest_openlineage_paths(event_paths, namer=workspace.namer, display_root=workspace.root)))
    yield place, events

    # The schemas SQL and dbt start from: the catalog's columns, then the events' schema facets.
    base_schemas = {d: list(e.columns) for d, e in sorted(workspace.config.catalog.items()) if e.columns}
    for dataset, columns in events_schemas.items():
        base_schemas.setdefault(dataset, columns)
    schemas_print = fingerprint(base_schemas)

    for index, source in enumerate(sources.sql):
        path = workspace.resolve(source.path)
        if not path.exists():
            yield _missing_unit(unit, f"lineage.sql.{index}.path", source.path)
            continue
        namer = workspace.namer
        if source.default_database != namer.default_database:
            namer = replace(namer, default_database=source.default_database)
        group = f"sql/{index}"
        known: dict[str, list[str]] | None = None  # built when the first file must be parsed
        chain = fingerprint(group, namer_print, source.dialect, source.default_database, schemas_print)
        learned_so_far: list[dict] = []
        for file in files_under([path], [".sql"]):
            shown = display_path(file, workspace.root)
            place = UnitPlace(f"{group}/{shown}", group)
            print_ = fingerprint(chain, shown, _file_hash(file))

            def parse(file=file) -> tuple[LineageBatch, dict]:
                nonlocal known
                if known is None:
                    known = copy_schemas(base_schemas)
                    for delta in learned_so_far:
                        known.update(delta)
                before = dict(known)  # the SQL ingest replaces a table's column list, never edits it
                batch = ingest_sql_file(file, namer=namer, known=known, dialect=source.dialect,
                                        display_root=workspace.root)
                return batch, {k: v for k, v in known.items() if before.get(k) != v}

            batch, delta = unit(place, print_, parse)
            if batch is None and known is not None:  # a reused file's tables, for the next parsed one
                known.update(delta)
            learned_so_far.append(delta)
            chain = fingerprint(chain, delta)
            yield place, batch

    for index, source in enumerate(sources.dbt):
        manifest = workspace.resolve(source.manifest)
        catalog = workspace.resolve(source.catalog) if source.catalog else None
        for key, text, path in (("manifest", source.manifest, manifest), ("catalog", source.catalog, catalog)):
            if path is not None and not path.exists():
                yield _missing_unit(unit, f"lineage.dbt.{index}.{key}", text)
        if not manifest.exists():
            continue
        catalog = catalog if catalog is not None and catalog.exists() else None
        place = UnitPlace(f"dbt/{index}")
        artifacts_print = fingerprint(place.name, namer_print, source.dialect, schemas_print, _file_hash(manifest),
                                      _file_hash(catalog) if catalog else None)
        # The seed files a project's columns come from are named in its manifest: the ones the
        # stored result looked at (kept under DBT_SEEDS) are hashed in, so an edited, added or
        # removed seed file reads the project again (a changed manifest always does).
        stored = store.unit(place.name) if store is not None else None
        seeds_print = _seeds_print(stored.learned.get(DBT_SEEDS, []) if stored is not None else [])

        def parse_dbt(manifest=manifest, catalog=catalog, source=source) -> tuple[LineageBatch, dict]:
            looked_at: list[Path] = []
            batch = ingest_dbt_artifacts(manifest, catalog, namer=workspace.namer, schemas=base_schemas,
                                         dialect=source.dialect, display_root=workspace.root, looked_at=looked_at)
            return batch, {DBT_SEEDS: [path.as_posix() for path in looked_at]}

        yield place, unit(place, fingerprint(artifacts_print, seeds_print), parse_dbt,
                          lambda learned, artifacts_print=artifacts_print: fingerprint(
                              artifacts_print, _seeds_print(learned.get(DBT_SEEDS, []))))[0]


def _seeds_print(paths: list[str]) -> str:
    """A hash of each seed file path with its content's hash (or its absence)."""
    return fingerprint([(path, _file_hash(Path(path)) if Path(path).is_file() else None) for path in paths])


def _events_and_schemas(batch: LineageBatch) -> tuple[LineageBatch, dict[str, list[str]]]:
    """The events' batch and the schemas their facets teach SQL and dbt (first facts win)."""
    schemas: dict[str, list[str]] = {}
    for facts in batch.datasets:
        if facts.columns:
            schemas.setdefault(facts.dataset, list(facts.columns))
    return batch, schemas


def _missing_unit(unit, field_: str, path: str) -> tuple[UnitPlace, LineageBatch | None]:
    problem = IngestProblem(origin=Origin(kind=OriginKind.CATALOG, file=WORKSPACE_FILE),
                            reason=f"{field_}: {path!r} does not exist")
    place = UnitPlace(f"missing/{field_}")
    return place, unit(place, fingerprint(place.name, path), lambda: (LineageBatch(problems=(problem,)), {}))[0]


def namer_fingerprint(namer: DatasetNamer) -> str:
    """A hash of the naming rule (every field sorted: frozensets and dicts have no stable order)."""
    return fingerprint(sorted(namer.catalog_ids), sorted(namer.locations.items()), sorted(namer.tables.items()),
                       sorted(namer.aliases.items()), list(namer.spark_catalogs), namer.default_database,
                       [list(pair) for pair in namer.location_roots])


def _file_hash(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
