"""Read ``piitracer.yaml`` into a :class:`Workspace`, with errors that name file, line and field."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import yaml
from pydantic import BaseModel, ValidationError

from piitracer.ingest.pydantic_problems import as_written, in_words, unknown_key
from piitracer.workspace.catalog_layers import DISCOVERED_FILE, CatalogLayers, DiscoveredCatalogFile, merge_discovered, \
    validate_discovered
from piitracer.workspace.model import WORKSPACE_FILE, Workspace, WorkspaceError, absolute_location
from piitracer.ingest.workspace.cache import WorkspaceCache
from piitracer.model.gc_pause import cyclic_gc_paused
from piitracer.model.naming import DEFAULT_SPARK_CATALOGS, DatasetNamer, normalise_location, split_table_name
from piitracer.model.workspace import REPLICA_SEPARATOR, CatalogDataset, WorkspaceConfig
from piitracer.storage.locations import Location, LocationError

# libyaml's loader when PyYAML has it (~10x faster on a catalog of thousands of tables).
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE_TAG = "tag:yaml.org,2002:merge"


class _DuplicateKey(Exception):
    """A mapping that says one key twice (PyYAML and JSON parsers keep the last one silently)."""

    def __init__(self, key: Any, first_line: int | None = None, second_line: int | None = None) -> None:
        super().__init__(key)
        self.key, self.first_line, self.second_line = key, first_line, second_line


def _unique_keys(loader: type) -> type:
    """``loader`` refusing a mapping with a key said twice (``location:`` twice in one entry, one
    dataset twice under ``catalog:``): the second would silently replace the first. Keys merged in
    with ``<<: *anchor`` may be overridden by the mapping's own keys, as YAML means them to."""

    class UniqueKeyLoader(loader):  # type: ignore[misc, valid-type]
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                seen: dict[Any, Any] = {}
                for key_node, _ in node.value:
                    if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
                        continue
                    key = self.construct_object(key_node)  # cached: the mapping's own construction reuses it
                    try:
                        first = seen.setdefault(key, key_node)
                    except TypeError:
                        continue  # not hashable: the constructor's own error names it
                    if first is not key_node:
                        raise _DuplicateKey(key, first.start_mark.line + 1, key_node.start_mark.line + 1)
            return super().construct_mapping(node, deep=deep)

    UniqueKeyLoader.__name__ = f"UniqueKey{loader.__name__}"
    return UniqueKeyLoader


_UNIQUE_LOADER = _unique_keys(_SAFE_LOADER)
_UNIQUE_PURE_LOADER = _unique_keys(yaml.SafeLoader)


def load_workspace(folder: str | os.PathLike[str] = ".") -> Workspace:
    """Load and validate ``<folder>/piitracer.yaml``.

    Raises :class:`WorkspaceError` naming the file, the line, the field path and what was expected.
    A new process that finds the workspace files unchanged takes the validated result kept in the
    lineage store (see ``workspace_cache``); the location warnings are computed live every time.
    """
    root = Path(folder).absolute()
    cache = WorkspaceCache.open(root)
    kept = cache.workspace() if cache is not None else None
    if kept is not None:
        return _with_dbt_types(_with_pyiceberg_catalogs(replace(
            kept, warnings=kept.warnings + workspace_warnings(kept, root / WORKSPACE_FILE, _Lines(cache.text)))))
    return _with_dbt_types(_with_pyiceberg_catalogs(_load_and_validate(root, cache)))


def _with_pyiceberg_catalogs(workspace: Workspace) -> Workspace:
    """The Iceberg catalogs pyiceberg's own configuration names join the namer's catalog names
    (``prod.fintech.payments`` in lineage is the dataset ``fintech.payments``): read on every load,
    outside the kept workspace, since the environment and ``.pyiceberg.yaml`` are not among its files."""
    extra = tuple(name for name in pyiceberg_catalog_names() if name not in workspace.namer.spark_catalogs)
    if not extra:
        return workspace
    return replace(workspace, namer=replace(workspace.namer, spark_catalogs=workspace.namer.spark_catalogs + extra))


def pyiceberg_catalog_names() -> tuple[str, ...]:
    """The catalog names pyiceberg's configuration knows (``PYICEBERG_CATALOG__<NAME>__*``, the
    first ``.pyiceberg.yaml`` of ``$PYICEBERG_HOME``, the home folder, the current folder), lower
    case. pyiceberg's reader (~0.7 s to import) runs only when one of them is there."""
    in_environment = any(key.lower().startswith("pyiceberg_catalog__") for key in os.environ)
    folders = (os.environ.get("PYICEBERG_HOME"), os.path.expanduser("~"), os.getcwd())
    if not in_environment and not any(folder and os.path.isfile(os.path.join(folder, ".pyiceberg.yaml")) for folder in folders):
        return ()
    from pyiceberg.utils.config import Config

    try:
        return tuple(sorted(name.lower() for name in Config().get_known_catalogs()))
    except Exception:  # noqa: BLE001 - a malformed file or variable: the catalogs' first use reports it, naming it
        return ()


def _with_dbt_types(workspace: Workspace) -> Workspace:
    """The key types dbt states laid under the catalog's ``column_types`` (``dbt_types``): read on
    every load, outside the kept workspace, since the dbt artifacts are not among its files."""
    if not workspace.config.lineage.dbt:  # no dbt project: not even its ingest (and SQL parser) imported
        return workspace
    from piitracer.ingest.dbt.types import with_dbt_types  # dbt's lineage ingest is loaded only when used

    config, warnings = with_dbt_types(workspace.config, workspace.root, workspace.namer)
    if config is workspace.config and not warnings:
        return workspace
    return replace(workspace, config=config, warnings=workspace.warnings + tuple(f"{WORKSPACE_FILE}: {w}" for w in warnings))


def _load_and_validate(root: Path, cache: WorkspaceCache | None) -> Workspace:
    """The workspace read and validated from its files (kept in ``cache`` when there is one)."""
    path = root / WORKSPACE_FILE
    if not path.is_file():
        raise WorkspaceError(f"{path}: no workspace file here (expected {WORKSPACE_FILE} in {root})")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise WorkspaceError(f"{path}: cannot read: {error}") from error
    data = _parsed(text, path)
    if data is None or data == {}:  # an empty file, or comments only: nothing a command could work with
        raise WorkspaceError(f"{path}: the workspace file is empty: remove it and run `piitracer init {root} "
                             "--warehouse-root PATH`, or write at least version: 1, warehouse_roots and lineage in it "
                             "(the workspace reference lists every field)")
    if not isinstance(data, dict):
        raise WorkspaceError(f"{path}:1: expected a mapping of keys (lineage, catalog, policy, spark)")
    document = _Lines(text)  # composed once, only if a message needs a line
    _check_names(data, path, document)
    layers = CatalogLayers()
    if (root / DISCOVERED_FILE).is_file():
        data, layers = _with_discovered(data, root)
    data, set_aside, undescribed, problems = _set_aside_undescribed(data, path, document)
    try:
        with cyclic_gc_paused():  # 100k catalog entries: the collector would walk them again and again
            config = WorkspaceConfig.model_validate(data)
    except ValidationError as error:
        raise WorkspaceError(_describe(error, path, document, before=problems)) from None
    if problems:  # every problem at once: those of the entries set aside, here the only ones
        raise WorkspaceError(_listed(problems))
    workspace = Workspace(root=root, config=config, namer=build_namer(config, root), layers=layers, set_aside=set_aside)
    places = _PlacesSaid(workspace, path, document)
    _check_one_place_each(workspace, places)
    workspace = replace(workspace, warnings=layers.warnings + undescribed)
    if cache is not None:
        cache.keep(workspace)  # without the location warnings: every load computes those live
    return replace(workspace, warnings=workspace.warnings + workspace_warnings(workspace, path, document, places))


def _set_aside_undescribed(data: dict[str, Any], path: Path, document: "_Lines") -> tuple[
        dict[str, Any], dict[str, dict[str, Any]], tuple[str, ...], list[tuple[int, str]]]:
    """``data`` without the catalog entries that have no format yet (a person said only what
    they know — an owner, a maintenance cadence — and the lakehouse has not been discovered), with
    a warning for each: they join the catalog once ``catalog discover --write`` describes them.
    Their keys are still checked, so a typo is not silently set aside. An entry naming one of
    them (an archive of a source only discovery will describe) waits with it; a name the file
    does not have at all is an error, as always."""
    catalog = data.get("catalog")
    if not isinstance(catalog, dict):
        return data, {}, (), []
    undescribed = [k for k, v in catalog.items() if isinstance(v, dict) and "format" not in v]
    aside = {str(k).lower() for k in undescribed}
    if not aside:
        return data, {}, (), []
    waiting: dict[str, str] = {}  # entries that refer to a dataset set aside wait with it
    while True:
        more = {k: ref for k, v in catalog.items() if k not in undescribed and k not in waiting
                and (ref := _refers_to(v, aside | {str(w).lower() for w in waiting}))}
        if not more:
            break
        waiting.update(more)
    known = sorted(CatalogDataset.model_fields)
    warnings, problems = [], []
    for dataset in undescribed:
        for key in sorted(str(key) for key in catalog[dataset] if str(key) not in known):
            line = document.line_of(['catalog', dataset, key]) or 1
            problems.append((line, f"{path}:{line}: catalog.{dataset}.{key}: {unknown_key(key, known, 'catalog')}"))
        warnings.append(f"{path}:{document.line_of(['catalog', dataset]) or 1}: catalog.{dataset}: no format yet "
                        "(say it, or run `piitracer catalog discover --write`): left out of the catalog until then")
    for dataset, ref in waiting.items():
        warnings.append(f"{path}:{document.line_of(['catalog', dataset]) or 1}: catalog.{dataset}: refers to {ref}, "
                        "which has no format yet: left out of the catalog until then")
    left_out = set(undescribed) | set(waiting)
    kept = {k: v for k, v in catalog.items() if k not in left_out}
    set_aside = {str(k).lower(): v for k, v in catalog.items() if k not in kept}
    return {**data, "catalog": kept}, set_aside, tuple(warnings), problems


def _refers_to(entry: Any, names: set[str]) -> str | None:
    """The dataset among ``names`` that ``entry``'s clone_of / archive_of names, if any."""
    if not isinstance(entry, dict):
        return None
    for key in ("clone_of", "archive_of"):
        ref = entry.get(key)
        if isinstance(ref, dict) and str(ref.get("dataset", "")).lower() in names:
            return str(ref["dataset"]).lower()
    return None


def _with_discovered(data: dict[str, Any], root: Path) -> tuple[dict[str, Any], CatalogLayers]:
    """``data`` with the discovered catalog layered under its ``catalog:``; an invalid discovered
    file is named with its own line and field."""
    path = root / DISCOVERED_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise WorkspaceError(f"{path}: cannot read: {error}") from error
    discovered = _parsed(text, path)
    _check_names(discovered, path, _Lines(text))
    try:
        validate_discovered(discovered)
    except ValidationError as error:
        raise WorkspaceError(_describe(error, path, _Lines(text), DiscoveredCatalogFile).replace(
            "invalid workspace:", "invalid discovered catalog:", 1)) from None
    except ValueError as error:
        raise WorkspaceError(f"{path}:1: {error}") from None
    return merge_discovered(data, discovered or {}, root, path)


def _parsed(text: str, path: Path) -> Any:
    """The workspace file's data. A file that is one JSON object (valid YAML too: what a tool
    generating a large catalog would write) is read by a JSON parser, ~10x faster than YAML's
    constructor at 100k datasets; anything else, or JSON that does not parse, by YAML."""
    if text.lstrip().startswith("{"):
        try:
            # The standard parser, not orjson: only it lets each object's keys be checked as they
            # come (orjson, like YAML, keeps the last of two equal keys without a word).
            return json.loads(text, object_pairs_hook=_unique_pairs)
        except _DuplicateKey as duplicate:
            _raise_duplicate(text, path, duplicate)  # JSON is YAML: YAML's nodes give the two lines
        except (json.JSONDecodeError, RecursionError):
            pass  # YAML flow style, or broken: YAML reads it or says where it breaks
    try:
        return yaml.load(text, Loader=_UNIQUE_LOADER)
    except _DuplicateKey as duplicate:
        raise WorkspaceError(_duplicate_message(path, duplicate)) from None
    except yaml.YAMLError as fast_error:
        error = fast_error
    try:  # the pure-Python parser names the offending character (libyaml's message does not)
        yaml.load(text, Loader=_UNIQUE_PURE_LOADER)
    except yaml.YAMLError as slow_error:
        error = slow_error
    except _DuplicateKey:
        pass
    raise WorkspaceError(_yaml_error(path, error)) from None


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's dict, refusing a key said twice in it."""
    found = dict(pairs)
    if len(found) != len(pairs):
        keys: set[str] = set()
        raise _DuplicateKey(next(key for key, _ in pairs if key in keys or keys.add(key)))
    return found


def _raise_duplicate(text: str, path: Path, duplicate: _DuplicateKey) -> None:
    """The duplicate key of a JSON workspace file, with its two lines when YAML can read the file."""
    try:
        yaml.load(text, Loader=_UNIQUE_LOADER)
    except _DuplicateKey as located:
        duplicate = located
    except yaml.YAMLError:
        pass  # JSON YAML does not read (a tab between tokens): the key without its lines
    raise WorkspaceError(_duplicate_message(path, duplicate)) from None


def _duplicate_message(path: Path, duplicate: _DuplicateKey) -> str:
    """``file:line: key 'k' is said twice in one mapping (lines a and b): ...``, on one line."""
    if duplicate.second_line is None:
        return (f"{path}: key {duplicate.key!r} is said twice in one object: only one may be given (a parser would keep "
                "the last one silently)")
    return (f"{path}:{duplicate.second_line}: key {duplicate.key!r} is said twice in one mapping (lines "
            f"{duplicate.first_line} and {duplicate.second_line}): keep one (a parser would silently keep the last)")


def where_said(root: Path, loc: list[Any]) -> str:
    """``<root>/piitracer.yaml:<line>: <field>`` for a field of the workspace file (read again: only
    a message needs it)."""
    path = root / WORKSPACE_FILE
    try:
        line = _Lines(path.read_text(encoding="utf-8")).line_of(loc)
    except (OSError, UnicodeDecodeError):
        line = None
    return f"{path}:{line or 1}: {'.'.join(str(part) for part in loc)}"


# Whose files are expected at a location, as a warning says it ("an Iceberg table's").
_FILES_OF = {"iceberg": "an Iceberg table's", "delta": "a Delta table's", "parquet": "a Parquet dataset's",
             "archive": "an archive's"}
_NAMED = 5  # datasets named in a summarised warning; the rest are counted


def workspace_warnings(workspace: Workspace, path: Path, document: "_Lines",
                       places: "_PlacesSaid | None" = None) -> tuple[str, ...]:
    """Catalog locations that do not exist or lie outside the warehouse roots. One location is one
    warning naming its line; several of a kind are one warning naming the first, with a count (20
    repeated lines before an error hide it), and the missing warehouse root they lie under."""
    places = places or _PlacesSaid(workspace, path, document)
    # Folders as prefixes: the same test as Workspace.outside_roots on normalised paths, without a
    # Path per entry (100k entries: most of this function's time went into pathlib).
    roots = [os.path.join(str(root), "") for root in workspace.warehouse_roots()] if workspace.config.warehouse_roots else None
    exists = os.path.exists
    missing: list[tuple[str, str]] = []
    outside: list[tuple[str, str]] = []
    for dataset_id, text in workspace.checked_locations():
        if not exists(text):
            missing.append((dataset_id, text))
        if roots is not None and not any((text + os.sep).startswith(root) for root in roots):
            outside.append((dataset_id, text))
    warnings = []
    if missing:
        dataset_id, text = missing[0]
        expected = _FILES_OF.get(workspace.config.catalog[dataset_id].format.value, "its")
        first = f"{places.where(dataset_id)}: {text} does not exist ({expected} files are expected there)"
        gone = [str(root) for root in workspace.warehouse_roots() if not exists(root)]
        under = [root for root in gone if all((t + os.sep).startswith(os.path.join(root, "")) for _, t in missing)]
        if under:  # they all lie under a root that is not there: that is the one thing to fix
            line = document.line_of(["warehouse_roots"]) or 1
            reason = (f"; warehouse root {under[0]} does not exist ({path}:{line}: warehouse_roots): create it, or fix "
                      "warehouse_roots")
        else:
            reason = (f": fix catalog.{dataset_id}.location" if len(missing) == 1 else ": fix each one's location")
            reason += ", or run `piitracer catalog discover --write`"
        warnings.append(first + _and_more(missing, "does not exist either", "do not exist either") + reason)
    if outside:
        dataset_id, text = outside[0]
        named = ", ".join(str(r) for r in workspace.warehouse_roots())
        warnings.append(f"{places.where(dataset_id)}: {text} is outside the warehouse roots ({named})"
                        + _and_more(outside, "is outside them too", "are outside them too")
                        + ": piitracer will not touch " + ("it" if len(outside) == 1 else "them"))
    return tuple(warnings)


def _and_more(found: list[tuple[str, str]], one: str, many: str) -> str:
    """``, and the location of a.b does not exist either`` for the datasets after the first (the
    first few named, the rest counted)."""
    rest = [dataset_id for dataset_id, _ in found[1:]]
    if not rest:
        return ""
    shown = ", ".join(rest[:_NAMED]) + (f" and {len(rest) - _NAMED} more" if len(rest) > _NAMED else "")
    if len(rest) == 1:
        return f", and the location of {shown} {one}"
    return f", and the locations of {len(rest)} more datasets ({shown}) {many}"


class _PlacesSaid:
    """Where each dataset's location is written: ``file:line: catalog.<id>.location`` (a replica's
    under its primary's ``replicas:``; a location the discovered layer supplied, in that file)."""

    def __init__(self, workspace: Workspace, path: Path, document: "_Lines") -> None:
        self._workspace, self._path, self._document = workspace, path, document
        self._discovered_lines: _Lines | None = None

    def where(self, dataset_id: str) -> str:
        catalog = self._workspace.config.catalog
        entry = catalog[dataset_id]
        field: list[Any] = ["catalog", dataset_id, "location"]
        if entry.replica_of is not None:  # declared under its primary's replicas:
            primary, name = entry.replica_of.dataset, dataset_id.rsplit(REPLICA_SEPARATOR, 1)[1]
            position = next(i for i, r in enumerate(catalog[primary].replicas) if r.name == name)
            field = ["catalog", primary, "replicas", position, "location"]
        said_in, lines = self._path, self._document
        layers = self._workspace.layers
        if "location" in layers.from_discovery.get(dataset_id, ()):  # the discovered file said it
            said_in = layers.discovered_file or self._path
            if self._discovered_lines is None:
                self._discovered_lines = _Lines(said_in.read_text(encoding="utf-8"))
            lines = self._discovered_lines
        return f"{said_in}:{lines.line_of(field) or 1}: {'.'.join(str(part) for part in field)}"


def _check_one_place_each(workspace: Workspace, places: _PlacesSaid) -> None:
    """Refuse two datasets at one location, or one inside the other's (symlinks and ``..``
    resolved, ``s3a://`` as ``s3://``): a delete, a VACUUM or an orphan removal on one would act
    on the other's files. Replicas and archives have locations of their own: no exemption."""
    found: list[tuple[tuple[str, ...], Location, str]] = []
    real, root = _real_path_of(), str(workspace.root)
    for dataset_id, entry in workspace.config.catalog.items():
        if entry.location is None or not entry.format.stores_rows:
            continue  # a view or an external system: piitracer deletes nothing there
        text = entry.location.strip()
        # storage.guard's canonical form; a plain path (nearly every one) without a URI parse each.
        if "://" not in text and not text.startswith("file:"):
            place = Location(real(os.path.normpath(os.path.join(root, text))))
        else:
            try:
                place = Location.parse(text, base=root)
            except LocationError:
                continue  # an unknown scheme: the executor's location check refuses it with its own message
            if place.is_local:
                place = Location(real(place.uri))
        found.append((tuple(place.uri.split("/")), place, dataset_id))
    # Sorted by path segments, a location's sub-folders follow it at once: each needs comparing
    # with the one before it only (no pair before it overlapped, or the check stopped there).
    found.sort()
    for (_, outer, outer_id), (_, place, dataset_id) in zip(found, found[1:]):
        if not outer.contains(place):
            continue
        if place == outer:
            raise WorkspaceError(f"{places.where(dataset_id)}: {place} is also the location of {outer_id} "
                                 f"({places.where(outer_id)}): a delete or an orphan removal on one would act on the "
                                 "other's files; give each dataset its own folder")
        raise WorkspaceError(f"{places.where(dataset_id)}: {place} lies inside the location of {outer_id} "
                             f"({places.where(outer_id)}): a delete or an orphan removal on {outer_id} would act on "
                             f"{dataset_id}'s files; give each dataset its own folder, side by side")


def _real_path_of() -> Callable[[str], str]:
    """``os.path.realpath`` of absolute, normalised paths (what :func:`storage.guard.canonical`
    compares), each folder resolved once: 100k catalog locations share their parent folders, and
    a realpath per location would stat every component of every one of them again."""
    known: dict[str, str] = {}

    def real(path: str) -> str:
        found = known.get(path)
        if found is None:
            parent, leaf = os.path.split(path)
            if not leaf or parent == path:
                found = os.path.realpath(path)
            else:
                candidate = os.path.join(real(parent), leaf)  # its folder resolved: only the last part may be a link
                found = os.path.realpath(candidate) if os.path.islink(candidate) else candidate
            known[path] = found
        return found

    return real


def _check_names(data: Any, path: Path, document: "_Lines") -> None:
    """Refuse a dataset named twice under ``catalog:`` in different letter case (ids are not
    case-sensitive: the second would replace the first). (A replica name said twice is the
    catalog model's own error.)"""
    catalog = data.get("catalog") if isinstance(data, dict) else None
    if not isinstance(catalog, dict):
        return
    seen: dict[str, Any] = {}
    for name in catalog:
        lowered = str(name).lower()
        if lowered in seen:
            lines = dict(document.keys_under(["catalog"]))
            first, second = lines.get(str(seen[lowered])), lines.get(str(name))
            raise WorkspaceError(f"{path}:{second or 1}: catalog: {seen[lowered]!r} (line {first}) and {name!r} (line "
                                 f"{second}) name one dataset (dataset names are not case-sensitive): keep one")
        seen[lowered] = name


def _yaml_error(path: Path, error: yaml.YAMLError) -> str:
    """``file:line:column: not valid YAML: what the parser expected``, on one line."""
    mark = getattr(error, "problem_mark", None)
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
    problem = " ".join(str(part) for part in (getattr(error, "context", None), getattr(error, "problem", None)) if part)
    return f"{where}: not valid YAML: {problem or error}"


def build_namer(config: WorkspaceConfig, root: Path) -> DatasetNamer:
    """The dataset naming rule, loaded with the catalog's ids, tables, locations and aliases."""
    locations: dict[str, str] = {}
    tables: dict[str, str] = {}
    aliases: dict[str, str] = {}
    for dataset_id, entry in config.catalog.items():
        tables[dataset_id] = dataset_id
        if entry.table:
            tables[".".join(split_table_name(entry.table))] = dataset_id
        if entry.location:
            locations[normalise_location(absolute_location(root, entry.location))] = dataset_id
        for alias in entry.aliases:
            aliases[alias.strip().lower()] = dataset_id
    # Iceberg catalogs name tables <catalog>.<namespace>.<table> too: their names are dropped alike.
    catalogs = tuple(dict.fromkeys(DEFAULT_SPARK_CATALOGS + config.lineage.spark_catalogs + (config.spark.catalog,)
                                   + tuple(config.iceberg.catalogs)))
    roots = sorted(
        ((normalise_location(remote), normalise_location(absolute_location(root, local)))
         for remote, local in config.lineage.location_roots.items()),
        key=lambda pair: -len(pair[0]),
    )
    return DatasetNamer(
        catalog_ids=frozenset(config.catalog),
        location_roots=tuple(roots),
        locations=locations,
        tables=tables,
        aliases=aliases,
        spark_catalogs=tuple(c.lower() for c in catalogs),
    )


def _describe(error: ValidationError, path: Path, document: "_Lines", model: type[BaseModel] = WorkspaceConfig,
              before: list[tuple[int, str]] = ()) -> str:
    """Every problem at once, one line each in the file's order: ``file:line: field.path: what was
    expected (got value)``, in the workspace's words (ingest.pydantic_problems.in_words: 'expected a
    list', an unknown key with the nearest key the place takes), with the problems found ``before``."""
    problems = list(before)
    for problem in error.errors():
        loc = tuple(part for part in problem["loc"] if not _is_pydantic_tag(part))
        field_path = ".".join(str(part) for part in loc) or "(top level)"
        line = document.line_of(list(loc))
        where = f"{path}:{line}" if line else str(path)
        got = problem.get("input")
        shown = ("" if isinstance(got, (dict, list)) or problem["type"] in ("missing", "extra_forbidden")
                 else f" (got {as_written(got)})")
        problems.append((line or 0, f"{where}: {field_path}: {in_words(problem, model, loc)}{shown}"))
    return _listed(problems)


def _listed(problems: list[tuple[int, str]]) -> str:
    """``invalid workspace:`` and each (line, problem), in the file's order."""
    return "invalid workspace:\n  " + "\n  ".join(text for _, text in sorted(problems, key=lambda p: p[0]))


def _is_pydantic_tag(part: Any) -> bool:
    # Validators of Annotated/union types add tags such as 'function-before[...]' to the path.
    return isinstance(part, str) and ("[" in part or part in {"function-after", "function-before"})


class _Lines:
    """Line numbers of the workspace file's fields, for messages. The file is composed into YAML
    nodes only when a message needs a line, and each mapping is indexed once (a catalog of 100k
    datasets with a warning each must not scan the catalog once per warning)."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._root: Any = None
        self._composed = False
        self._keys: dict[int, dict[str, tuple[Any, Any]]] = {}

    def line_of(self, loc: list[Any]) -> int | None:
        """Line of the deepest YAML node along ``loc`` (1-based)."""
        if not self._composed:
            self._composed = True
            try:
                self._root = yaml.compose(self._text, Loader=_SAFE_LOADER)
            except yaml.YAMLError:
                self._root = None
        node = self._root
        best = node.start_mark.line + 1 if node is not None else None
        for part in loc:
            child = None
            if isinstance(node, yaml.MappingNode):
                found = self._mapping(node).get(str(part).lower())
                if found is not None:
                    best, child = found[0].start_mark.line + 1, found[1]
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
                child = node.value[part]
                best = child.start_mark.line + 1
            if child is None:
                break
            node = child
        return best

    def keys_under(self, loc: list[Any]) -> list[tuple[str, int]]:
        """(key as written, its line, 1-based) of every key of the mapping at ``loc``."""
        self.line_of(loc)  # composes the document
        node = self._root
        for part in loc:
            if not isinstance(node, yaml.MappingNode):
                return []
            found = self._mapping(node).get(str(part).lower())
            if found is None:
                return []
            node = found[1]
        if not isinstance(node, yaml.MappingNode):
            return []
        return [(str(k.value), k.start_mark.line + 1) for k, _ in node.value]

    def _mapping(self, node: Any) -> dict[str, tuple[Any, Any]]:
        if id(node) not in self._keys:
            index: dict[str, tuple[Any, Any]] = {}
            for key, value in node.value:
                index.setdefault(str(key.value).lower(), (key, value))  # the first key wins, as before
            self._keys[id(node)] = index
        return self._keys[id(node)]
