"""What piitracer knows about each table format, one module per format (``iceberg``, ``delta``,
``parquet``, ``archive``, ``view``, ``external``), below the executor and the verifier.

Each module ends with ``SUPPORT = FormatSupport(...)``: the erasers of its actions, their dry-run
text, its newest metadata file, its schema, the paths its metadata names (the location guard), the
files and versions the verifier looks at and which planned action removes each leftover. The
registry below finds every module of this package that has a ``SUPPORT`` (``model.registry``), so the
executor, the preflight, the estimate, the verifier and the API look a format up instead of
branching on it. Adding a format is one module here plus one step template in
``piitracer/planner/templates/`` (README, "Adding a format").

Modules here may read and write files; they import only ``model`` and ``storage``. Matching the
subjects' values stays in ``verify``: a format hands over files and key columns, never a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Iterator, Mapping

from piitracer.formats.values import key_type_name
from piitracer.model.errors import UnavailableError
from piitracer.model.registry import discover
from piitracer.model.outcome import Attempt, StepOutcome
from piitracer.model.plan import Action, Step
from piitracer.model.workspace import CatalogDataset, DatasetFormat
from piitracer.storage.file_tasks import FileTasks, in_this_process
from piitracer.storage.locations import Location, LocationError
from piitracer.storage.store import Store

__all__ = ["FormatError", "FormatSupport", "OtherEngine", "StepWork", "Shown", "TableFacts", "TableFiles", "VersionRows", "key_type_name",
           "support_for", "table_schema", "relative_to", "hidden"]


class FormatError(UnavailableError):
    """A table's metadata cannot be read or does not say what piitracer needs; names the file."""


@dataclass(frozen=True)
class StepWork:
    """What one step acts on: the step, its catalog entry, its location (already checked by the
    location guard), the values it matches (typed by its key column later), the attempt record
    that survives a kill, the store, the Spark session (started on first call), and where
    per-file work runs."""

    step: Step
    entry: CatalogDataset
    location: Location
    values: list[Any]
    attempt: Attempt
    store: Store
    spark: Callable[[], Any]
    # Where per-file work runs, given the number and bytes of files (in this process by default).
    file_tasks: Callable[[int, int], FileTasks] = in_this_process
    # The warehouse roots (canonical or not): a step that deletes files it lists itself checks each
    # one against them and its location (``storage.guard``).
    roots: tuple[Location, ...] = ()


@dataclass(frozen=True)
class Shown:
    """What a dry-run line may show of a step: never a value, only value-set names."""

    step: Step
    table: str
    key: str
    values: str


@dataclass
class TableFiles:
    """One table's files, as its own metadata says (paths relative to its location)."""

    live: set[str] = field(default_factory=set)  # data/delete files of the current snapshot/version
    current_meta: set[str] = field(default_factory=set)  # manifests + manifest list of the current snapshot
    retained: set[str] = field(default_factory=set)  # files only older retained snapshots use
    ref_files: dict[str, str] = field(default_factory=dict)  # file -> tag/branch whose snapshot uses it
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class TableFacts:
    """What one table's own metadata says, in catalog terms (never a row's value)."""

    columns: tuple[str, ...] = ()
    write_mode: Any = None  # IcebergWriteMode, for formats that have one
    retention: dict[str, Any] = field(default_factory=dict)  # catalog retention fields its properties set
    format_version: int | None = None
    refs: tuple[str, ...] = ()  # 'tag month_end_close (max-ref-age 90d)'
    partition_columns: tuple[str, ...] = ()
    features: tuple[str, ...] = ()  # 'change data feed', 'deletion vectors', 'stats columns: a, b'
    data_folders: tuple[str, ...] = ()  # where its current data files live (shallow clones: elsewhere)
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class VersionRows:
    """One retained snapshot or version read back: its key column (an Arrow array), or why it
    could not be read (``problem``), or ``gone`` when its files were removed (not retained)."""

    version: str
    current: bool
    keys: Any = None
    ref: str | None = None  # an Iceberg tag/branch (other than main) that retains it
    problem: str | None = None
    gone: bool = False


@dataclass(frozen=True)
class OtherEngine:
    """A way to run a format's steps other than Spark (Iceberg through pyiceberg), named by the
    plan's steps (``Step.engine``): what the layers above need of it besides the performers."""

    # The rows of a source as a Spark DataFrame, read without Spark's catalog (for resolve).
    source_rows: Callable[[Any, CatalogDataset, Location, Store], Any]
    # Before the first step: the table this engine would change is the one catalogued at the
    # location (raises FormatError or SafetyError with the reason).
    check: Callable[[str, CatalogDataset, Location, Store], None]


Performer = Callable[[StepWork], StepOutcome]
Describer = Callable[[Shown], str]


def _no_paths(location: Location, store: Store) -> Iterator[tuple[str, str]]:
    return iter(())


def _nothing(*args: Any) -> None:
    return None


def _no_files(location: Location, store: Store) -> TableFiles:
    return TableFiles()


def _no_versions(location: Location, store: Store, key_column: str) -> Iterator[VersionRows]:
    return iter(())


@dataclass(frozen=True)
class FormatSupport:
    """Everything the layers above need of one format; the defaults are a format that stores no
    rows (a view, an external system)."""

    format: DatasetFormat
    perform: Mapping[Action, Performer] = field(default_factory=dict)  # the eraser of each action
    describe: Mapping[Action, Describer] = field(default_factory=dict)  # the dry-run text of each action
    spark_actions: frozenset[Action] = frozenset()  # actions that run through Spark (unless a step names another engine)
    spark_table: bool = False  # its steps reach the table by identifier through Spark's catalog
    schema: Callable[[Location, Store], Any] = _nothing  # Arrow schema, None when no table is there
    newest_metadata: Callable[[Location, Store], Location | None] = _nothing  # the file a fingerprint hashes
    referenced_paths: Callable[[Location, Store], Iterator[tuple[str, str]]] = _no_paths  # for the guard
    keeps_refs: bool = False  # tags and branches that retain snapshots (the planner plans for them)
    table_state: Callable[[str, Location, Store], Any] = _nothing  # those refs, read live
    source_rows: Callable[[Any, CatalogDataset, Location, Store], Any] | None = None  # Spark DataFrame of its rows
    files: Callable[[Location, Store], TableFiles] = _no_files
    versions: Callable[[Location, Store, str], Iterator[VersionRows]] = _no_versions
    # Files and retained versions from the metadata, read once (formats.history): the logical
    # check at the cost of files; None (or None for a table): every version read back (``versions``).
    history: Callable[[Location, Store, str | None], Any] | None = None
    version_word: str = "version"  # what a finding calls a version ("snapshot" for Iceberg)
    file_removers: Callable[[TableFiles, str], list[Action]] = lambda files, path: []
    logical_removers: Callable[[bool, bool], list[Action]] = lambda current, held_by_ref: []
    candidate_files: Callable[[Location, Store, str | None, list[Any] | None], list[tuple[str, int]]] = \
        lambda location, store, key, values: []
    estimate_basis: str = "no files"
    # Catalog discovery: the table folder a file marks (its path split in parts; None: not a
    # marker), what the table's own metadata says (``TableFacts``), a few of its rows for the
    # classifier; ``loose_files``: the format of visible files in no table (plain Parquet);
    # ``stored_as``: the format the lakehouse shows for this one (an archive is plain Parquet).
    table_folder: Callable[[tuple[str, ...]], str | None] = lambda parts: None
    table_facts: Callable[[Location, Store], "TableFacts"] | None = None
    sample_rows: Callable[[Location, Store, int], Any] = lambda location, store, limit: None
    loose_files: bool = False
    stored_as: DatasetFormat | None = None
    # Engines other than Spark a step of this format may name (``Step.engine``), by name.
    engines: Mapping[str, OtherEngine] = field(default_factory=dict)

    def runs_on_spark(self, step: Step) -> bool:
        """Whether ``step`` runs through Spark: a Spark action of this format whose step names no
        other engine."""
        return step.action in self.spark_actions and (step.engine is None or step.engine.value not in self.engines)

    @property
    def stores_rows(self) -> bool:
        """Files at a location that piitracer erases, scans and verifies (``DatasetFormat.stores_rows``)."""
        return self.format.stores_rows

    @property
    def actions(self) -> frozenset[Action]:
        """The actions a step on this format may have."""
        return frozenset(self.perform)


@lru_cache(maxsize=1)
def _registry() -> dict[DatasetFormat, FormatSupport]:
    return discover(__name__, __path__, "SUPPORT", FormatSupport)


def support_for(fmt: DatasetFormat) -> FormatSupport:
    """The support of a catalog format (every format has one: tests/unit/formats/test_formats_registry.py)."""
    return _registry()[fmt]


def supported_formats() -> list[DatasetFormat]:
    """Every format a module of this package supports."""
    return sorted(_registry(), key=lambda f: f.value)


def table_schema(entry: CatalogDataset, location: Location | None, store: Store):
    """The Arrow schema of a catalogued table as its own metadata says, or None when the table is
    not there (or the format stores no rows). Raises :class:`FormatError` for unreadable metadata."""
    if location is None or not store.exists(location):
        return None
    return support_for(entry.format).schema(location, store)


def relative_to(root: Location, uri: str) -> str | None:
    """A path a table's metadata names (a URI, an absolute path or one relative to ``root``) as a
    path relative to ``root``; None when it lies outside."""
    from piitracer.storage.guard import canonical

    try:
        return canonical(root).relative(canonical(root.resolve_reference(uri)))
    except LocationError:
        return None


def hidden(path: str) -> bool:
    """Whether a relative path has a ``.`` or ``_`` name in it: readers and orphan removal skip those."""
    return any(part.startswith(("_", ".")) for part in path.split("/"))


def may_hold(low: Any, high: Any, values: list[Any] | None) -> bool:
    """Whether min/max statistics admit one of ``values`` (True when anything is unknown)."""
    if values is None or low is None or high is None:
        return True
    try:
        return any(low <= value <= high for value in values)
    except TypeError:  # statistics of another type than the key's values: cannot exclude
        return True
