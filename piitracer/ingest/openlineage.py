"""Ingest OpenLineage events (``.json``, ``.jsonl``, ``.ndjson``) into a :class:`LineageBatch`.

What is taken from the events:

* column edges from the ``columnLineage`` facet of outputs, in every published shape
  (1-0-x ``transformationType``, 1-1-0 per-input ``transformations``, 1-2-0 dataset-level
  ``dataset`` list), detected by content because ``_schemaURL`` is often missing or wrong;
* one FLOW dataset edge per (input, output) pair;
* :class:`DatasetFacts` (columns from ``schema``, aliases from ``symlinks``) from every event.

Only COMPLETE run events and job events (static lineage) contribute edges: a START or RUNNING
event describes a plan that may still change, a FAIL/ABORT event a write that may not have
happened. When one job emits lineage for the same output several times, the event with the
latest ``eventTime`` wins, so a job whose SQL changed does not keep its old flows.

Events are validated with lenient pydantic models (unknown fields allowed, as in the spec). A
broken event is an ERROR problem with its file and start line and is skipped; a malformed part of
a facet is a WARNING and, wherever the flow itself is still known, the flow is kept as an
unknown DIRECT TRANSFORMATION: a privacy tool must over-report rather than drop a flow.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from piitracer.ingest.source_files import display_path, files_under
from piitracer.model.lineage import (
    DIRECT_SUBTYPES,
    ColumnEdge,
    ColumnRef,
    DatasetEdge,
    DatasetFacts,
    DatasetRelation,
    EdgeKind,
    EdgeSubtype,
    IngestProblem,
    LineageBatch,
    Origin,
    OriginKind,
    ProblemSeverity,
)
from piitracer.model.naming import DatasetNamer

JSON_SUFFIXES = frozenset({".json"})
LINE_SUFFIXES = frozenset({".jsonl", ".ndjson"})
EVENT_SUFFIXES = JSON_SUFFIXES | LINE_SUFFIXES

RUN_STATES = ("START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER")


# ---- event models ------------------------------------------------------------------------------


class _Lenient(BaseModel):
    """The spec allows extra fields everywhere; producers add their own."""

    model_config = ConfigDict(extra="allow")


class _JobModel(_Lenient):
    namespace: str
    name: str


class _RunModel(_Lenient):
    runId: str  # noqa: N815 (spec field name)


class _DatasetModel(_Lenient):
    namespace: str
    name: str
    # Facets are free-form; the ones used are validated by their own models below.
    facets: dict[str, Any] | None = None


class _EventModel(_Lenient):
    eventTime: datetime  # noqa: N815

    @field_validator("eventTime", mode="before")
    @classmethod
    def _parse_time(cls, value: Any) -> datetime:
        if not isinstance(value, str):
            raise ValueError("expected a string")
        try:
            parsed = datetime.fromisoformat(value.strip().replace("z", "Z"))
        except ValueError:
            raise ValueError(f"expected an ISO 8601 date-time, got {value!r}") from None
        # A time without offset is taken as UTC so that every eventTime can be compared.
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


class _RunEventModel(_EventModel):
    run: _RunModel
    job: _JobModel
    # Optional in the spec; an event without it is not a COMPLETE, so it only yields facts.
    eventType: Literal["START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER"] | None = None  # noqa: N815
    inputs: list[_DatasetModel] | None = None
    outputs: list[_DatasetModel] | None = None


class _JobEventModel(_EventModel):
    job: _JobModel
    inputs: list[_DatasetModel] | None = None
    outputs: list[_DatasetModel] | None = None


class _DatasetEventModel(_EventModel):
    dataset: _DatasetModel


# ---- facet models ------------------------------------------------------------------------------


class _SchemaField(_Lenient):
    name: str
    fields: list[Any] | None = None  # nested struct fields: not columns of the dataset


class _SchemaFacet(_Lenient):
    fields: list[_SchemaField] | None = None


class _Identifier(_Lenient):
    namespace: str
    name: str
    type: str | None = None


class _SymlinksFacet(_Lenient):
    identifiers: list[_Identifier] | None = None


class _ColumnLineageFacet(_Lenient):
    # Entries are validated one by one so that one bad entry does not hide the others.
    fields: dict[str, Any] | None = None
    dataset: list[Any] | None = None


class _FieldLineage(_Lenient):
    inputFields: list[Any]  # noqa: N815
    transformationDescription: str | None = None  # noqa: N815 (1-0-x)
    transformationType: str | None = None  # noqa: N815 (1-0-x)


class _InputField(_Lenient):
    namespace: str
    name: str
    field: str
    transformations: list[Any] | None = None  # 1-1-0 and later


class _Transformation(_Lenient):
    type: str
    subtype: str | None = None
    description: str | None = None
    masking: bool | None = None


# ---- parsed events -----------------------------------------------------------------------------


@dataclass
class _Event:
    """One valid event with where it was read and its place in reading order."""

    model: _RunEventModel | _JobEventModel | _DatasetEventModel
    origin: Origin  # file and start line (job filled in for run and job events)
    order: int

    @property
    def rank(self) -> tuple[datetime, int]:
        """Latest-wins ordering: eventTime, then reading order on a tie."""
        return (self.model.eventTime, self.order)

    @property
    def contributes_lineage(self) -> bool:
        """COMPLETE run events and job events carry lineage that really happened / is static."""
        if isinstance(self.model, _JobEventModel):
            return True
        return isinstance(self.model, _RunEventModel) and self.model.eventType == "COMPLETE"


@dataclass
class _Occurrence:
    """One input/output/dataset of an event, resolved to its canonical id."""

    path: str  # e.g. ``outputs[0]``, for problem messages
    dataset: _DatasetModel
    canonical: str
    aliases: tuple[str, ...]
    columns: tuple[str, ...] | None  # None: no (usable) schema facet
    symlinks: tuple[tuple[str, str], ...]  # (namespace, name) of every valid symlink


@dataclass
class _Reader:
    """Accumulates events and problems across every file of one ingest call."""

    events: list[_Event] = field(default_factory=list)
    problems: list[IngestProblem] = field(default_factory=list)
    units_read: int = 0
    files: list[str] = field(default_factory=list)  # in reading order, to list problems by place

    def error(self, file: str, line: int | None, reason: str, *, counts: bool = True) -> None:
        """A skipped event (``counts``) or an unreadable file."""
        origin = Origin(kind=OriginKind.OPENLINEAGE, file=file, line=line)
        self.problems.append(IngestProblem(origin=origin, reason=reason))
        if counts:
            self.units_read += 1

    def add_value(self, value: Any, *, file: str, line: int) -> None:
        """Validate one decoded JSON value as an event; keep it or report why not."""
        self.units_read += 1
        origin = Origin(kind=OriginKind.OPENLINEAGE, file=file, line=line)
        model, reason = _validate_event(value)
        if model is None:
            self.problems.append(IngestProblem(origin=origin, reason=reason))
            return
        if not isinstance(model, _DatasetEventModel):
            origin = origin.model_copy(update={"job": _job_name(model.job)})
        self.events.append(_Event(model=model, origin=origin, order=len(self.events)))


# ---- public API --------------------------------------------------------------------------------


def ingest_openlineage_text(text: str, *, file: str, namer: DatasetNamer) -> LineageBatch:
    """Ingest the events of one file's text; ``file`` names it in origins and picks the format.

    ``.json`` holds one event object or a JSON array of events; ``.jsonl``/``.ndjson`` one event
    per line (blank lines ignored). Any other suffix is an ERROR problem and nothing is read.
    """
    reader = _Reader()
    _read_text(reader, text, file=file)
    return _build_batch(reader, namer)


def ingest_openlineage_paths(
    paths: Sequence[Path], *, namer: DatasetNamer, display_root: Path | None = None
) -> LineageBatch:
    """Ingest event files and folders (every ``*.json``/``*.jsonl``/``*.ndjson`` below a folder,
    sorted by path). ``Origin.file`` is relative to ``display_root`` when given.

    "Latest event wins" is decided across all the files of one call.
    """
    reader = _Reader()
    for path in _event_files(paths, reader, display_root):
        shown = display_path(path, display_root)
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            reader.error(shown, None, f"cannot read file: {exc}", counts=False)
            continue
        _read_text(reader, text, file=shown)
    return _build_batch(reader, namer)


# ---- files and JSON decoding -------------------------------------------------------------------


def _event_files(paths: Sequence[Path], reader: _Reader, display_root: Path | None) -> Iterator[Path]:
    for path in files_under(paths, EVENT_SUFFIXES):
        if path.is_file():
            yield path
        else:
            reader.error(display_path(path, display_root), None, "path does not exist", counts=False)


def _read_text(reader: _Reader, text: str, *, file: str) -> None:
    reader.files.append(file)
    suffix = Path(file).suffix.lower()
    text = text.removeprefix("\ufeff")
    if suffix in LINE_SUFFIXES:
        _read_lines(reader, text, file=file)
    elif suffix in JSON_SUFFIXES:
        _read_json(reader, text, file=file)
    else:
        reason = f"unsupported file type {suffix or '(none)'!r}: expected .json, .jsonl or .ndjson"
        reader.error(file, None, reason, counts=False)


def _read_lines(reader: _Reader, text: str, *, file: str) -> None:
    # Split on "\n" only: str.splitlines() would also split on U+2028 inside JSON strings.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            reader.error(file, number, f"invalid JSON: {exc.msg} (column {exc.colno})")
            continue
        reader.add_value(value, file=file, line=number)


def _read_json(reader: _Reader, text: str, *, file: str) -> None:
    """One event, an array of events (or, leniently, several of those one after another).

    Array elements are decoded one by one so each event knows its start line, and a broken array
    still yields the events before the break.
    """
    decoder = json.JSONDecoder()
    pos = _skip_space(text, 0)
    if pos == len(text):
        return
    try:
        while pos < len(text):
            if text[pos] == "[":
                pos = _read_array(reader, decoder, text, pos, file=file)
            else:
                value, end = decoder.raw_decode(text, pos)
                reader.add_value(value, file=file, line=_line_of(text, pos))
                pos = end
            pos = _skip_space(text, pos)
    except json.JSONDecodeError as exc:
        # The rest of the document cannot be resynchronised: report where it broke and stop.
        reader.error(file, exc.lineno, f"invalid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})")


def _read_array(reader: _Reader, decoder: json.JSONDecoder, text: str, pos: int, *, file: str) -> int:
    """Decode the array starting at ``text[pos] == '['``; return the position after it."""
    pos = _skip_space(text, pos + 1)
    if text.startswith("]", pos):
        return pos + 1
    while True:
        value, end = decoder.raw_decode(text, pos)
        reader.add_value(value, file=file, line=_line_of(text, pos))
        pos = _skip_space(text, end)
        if text.startswith("]", pos):
            return pos + 1
        if not text.startswith(",", pos):
            raise json.JSONDecodeError("Expecting ',' delimiter or ']'", text, pos)
        pos = _skip_space(text, pos + 1)


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


# ---- validation --------------------------------------------------------------------------------

_EXPECTED = {
    "string_type": "expected a string",
    "list_type": "expected a list",
    "dict_type": "expected an object",
    "model_type": "expected an object",
    "model_attributes_type": "expected an object",
    "bool_type": "expected a boolean",
    "bool_parsing": "expected a boolean",
}

_M = TypeVar("_M", bound=BaseModel)


def _validate_event(value: Any) -> tuple[BaseModel | None, str]:
    """The event model for ``value``, or ``None`` and the reason it is not a valid event."""
    if not isinstance(value, dict):
        return None, f"expected a JSON object (an OpenLineage event), got {_json_type(value)}"
    # The kind is read from the content: producers' schemaURL is not reliable.
    if "run" in value or "eventType" in value:
        model_type: type[BaseModel] = _RunEventModel
    elif "dataset" in value and "job" not in value:
        model_type = _DatasetEventModel
    elif "job" in value:
        model_type = _JobEventModel
    else:
        return None, (
            "not an OpenLineage event: expected the fields of a RunEvent (run, job), "
            "JobEvent (job) or DatasetEvent (dataset)"
        )
    try:
        return model_type.model_validate(value), ""
    except ValidationError as exc:
        return None, _describe(exc)


def _validate(model_type: type[_M], value: Any, path: str, problems: list[str]) -> _M | None:
    """Validate a facet part; on failure note why (prefixed by ``path``) and return None."""
    try:
        return model_type.model_validate(value)
    except ValidationError as exc:
        problems.append(_describe(exc, prefix=path))
        return None


def _describe(exc: ValidationError, prefix: str = "") -> str:
    """``run.runId: Field required; inputs: expected a list`` from pydantic's errors."""
    reasons = []
    for error in exc.errors():
        where = _join_path(prefix, error["loc"])
        kind = error["type"]
        if kind in _EXPECTED:
            what = _EXPECTED[kind]
        elif kind == "literal_error":
            what = f"expected one of {error['ctx']['expected']}, got {error['input']!r}"
        elif kind == "value_error":
            what = str(error["ctx"]["error"])
        else:
            what = error["msg"]
        reasons.append(f"{where}: {what}" if where else what)
    return "; ".join(reasons)


def _join_path(prefix: str, loc: tuple[int | str, ...]) -> str:
    path = prefix
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def _json_type(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _job_name(job: _JobModel) -> str:
    return f"{job.namespace}/{job.name}"


def _alias_string(namespace: str, name: str) -> str:
    # The same ``namespace/name`` form the namer looks aliases up by.
    return f"{namespace.rstrip('/')}/{name}"


# ---- from events to a batch --------------------------------------------------------------------


@dataclass
class _Builder:
    namer: DatasetNamer
    column_edges: set[ColumnEdge] = field(default_factory=set)
    dataset_edges: set[DatasetEdge] = field(default_factory=set)
    facts: list[tuple[_Event, _Occurrence]] = field(default_factory=list)
    warnings: list[IngestProblem] = field(default_factory=list)
    names: dict[tuple[str, str], str] = field(default_factory=dict)  # (namespace, name) -> naive id

    def warn(self, origin: Origin, reason: str) -> None:
        self.warnings.append(IngestProblem(severity=ProblemSeverity.WARNING, origin=origin, reason=reason))

    def name_of(self, namespace: str, name: str) -> str:
        """``namer.from_openlineage``, memoised: an event names the same few datasets many times."""
        key = (namespace, name)
        if key not in self.names:
            self.names[key] = self.namer.from_openlineage(namespace, name)
        return self.names[key]


def _build_batch(reader: _Reader, namer: DatasetNamer) -> LineageBatch:
    builder = _Builder(namer=namer)
    resolved = [(event, _resolve_event(builder, event)) for event in reader.events]
    for event, occurrences in resolved:
        builder.facts.extend((event, occ) for occ in occurrences if occ.columns is not None or occ.symlinks)

    # Latest event wins per (job, output): pick the winner before reading any column lineage.
    winners: dict[tuple[str, str], _Event] = {}
    for event, occurrences in resolved:
        if not event.contributes_lineage:
            continue
        for occ in occurrences:
            key = (event.origin.job or "", occ.canonical)
            if occ.path.startswith("outputs") and (key not in winners or event.rank > winners[key].rank):
                winners[key] = event

    for event, occurrences in resolved:
        for occ in occurrences:
            # Every output of the winning event with that id (two spellings of one table both count).
            if occ.path.startswith("outputs") and winners.get((event.origin.job or "", occ.canonical)) is event:
                _add_output_lineage(builder, event, occ, occurrences)

    return LineageBatch(
        column_edges=tuple(sorted(builder.column_edges, key=_column_edge_key)),
        dataset_edges=tuple(sorted(builder.dataset_edges, key=DatasetEdge.sort_key)),
        datasets=_merge_facts(builder.facts),
        problems=_in_reading_order(reader.problems + builder.warnings, reader.files),
        units_read=reader.units_read,
    )


def _resolve_event(builder: _Builder, event: _Event) -> list[_Occurrence]:
    """Every dataset the event names, with canonical ids, aliases and columns."""
    model = event.model
    if isinstance(model, _DatasetEventModel):
        named = [("dataset", model.dataset)]
    else:
        named = [(f"inputs[{i}]", d) for i, d in enumerate(model.inputs or [])]
        named += [(f"outputs[{i}]", d) for i, d in enumerate(model.outputs or [])]
    return [_resolve_dataset(builder, event, path, dataset) for path, dataset in named]


def _resolve_dataset(builder: _Builder, event: _Event, path: str, dataset: _DatasetModel) -> _Occurrence:
    facets = dataset.facets or {}
    notes: list[str] = []
    columns = None
    if "schema" in facets:
        schema = _validate(_SchemaFacet, facets["schema"], f"{path}.facets.schema", notes)
        if schema is not None:
            columns = tuple(f.name for f in schema.fields or [])
    identifiers: list[_Identifier] = []
    if "symlinks" in facets:
        symlinks = _validate(_SymlinksFacet, facets["symlinks"], f"{path}.facets.symlinks", notes)
        if symlinks is not None:
            identifiers = list(symlinks.identifiers or [])
    for note in notes:
        builder.warn(event.origin, note)

    # The first TABLE symlink names the dataset: Spark names tables by path, the symlink by table.
    names = [(dataset.namespace, dataset.name)] + [(s.namespace, s.name) for s in identifiers]
    table = next((i for i, s in enumerate(identifiers) if (s.type or "").upper() == "TABLE"), None)
    chosen = 0 if table is None else table + 1
    canonical = builder.namer.from_openlineage(*names[chosen])
    aliases = {_alias_string(*n) for i, n in enumerate(names) if i != chosen} - {_alias_string(*names[chosen])}
    return _Occurrence(
        path=path,
        dataset=dataset,
        canonical=canonical,
        aliases=tuple(sorted(aliases)),
        columns=columns,
        symlinks=tuple(names[1:]),
    )


def _event_aliases(namer: DatasetNamer, occurrences: list[_Occurrence]) -> dict[str, str]:
    """Naive id of every name an event's datasets go by -> their canonical id.

    Keyed by the namer's id of each name, so ``("file", "/wh/x")`` and ``("file:/wh", "x")``-style
    spellings of one path meet. The first dataset naming an alias keeps it (deterministic).
    """
    aliases: dict[str, str] = {}
    for occ in occurrences:
        for name in ((occ.dataset.namespace, occ.dataset.name), *occ.symlinks):
            aliases.setdefault(namer.from_openlineage(*name), occ.canonical)
    return aliases


def _add_output_lineage(builder: _Builder, event: _Event, output: _Occurrence, occurrences: list[_Occurrence]) -> None:
    """FLOW edges into ``output`` and its column edges, from the winning event."""
    origin = event.origin
    for occ in occurrences:
        if occ.path.startswith("inputs"):
            builder.dataset_edges.add(
                DatasetEdge(source=occ.canonical, target=output.canonical, relation=DatasetRelation.FLOW, origin=origin)
            )
    facets = output.dataset.facets or {}
    if "columnLineage" not in facets:
        return
    path = f"{output.path}.facets.columnLineage"
    notes: list[str] = []
    facet = _validate(_ColumnLineageFacet, facets["columnLineage"], path, notes)
    aliases = _event_aliases(builder.namer, occurrences)
    sink = _EdgeSink(builder=builder, origin=origin, target=output.canonical, aliases=aliases, notes=notes)
    if facet is not None:
        for column, raw in (facet.fields or {}).items():
            entry = _validate(_FieldLineage, raw, f"{path}.fields.{column}", notes)
            if entry is None:
                continue
            for j, raw_input in enumerate(entry.inputFields):
                sink.add_input(raw_input, f"{path}.fields.{column}.inputFields[{j}]", column, entry)
        for j, raw_input in enumerate(facet.dataset or []):
            sink.add_input(raw_input, f"{path}.dataset[{j}]", None, None)
    for note in notes:
        builder.warn(origin, note)


@dataclass
class _EdgeSink:
    """Turns the input fields of one output's columnLineage facet into column edges."""

    builder: _Builder
    origin: Origin
    target: str
    aliases: dict[str, str]
    notes: list[str]

    def add_input(self, raw: Any, path: str, column: str | None, entry: _FieldLineage | None) -> None:
        """Edges from one input field to ``column`` (``None``: the whole output dataset)."""
        source = _validate(_InputField, raw, path, self.notes)
        if source is None:
            return  # without namespace/name/field there is no source column to point at
        naive = self.builder.name_of(source.namespace, source.name)
        ref = ColumnRef(dataset=self.aliases.get(naive, naive), column=source.field)
        for kind, subtype, masking, description in self._typings(source, path, column, entry):
            self.builder.column_edges.add(
                ColumnEdge(
                    source=ref,
                    target_dataset=self.target,
                    target_column=column,
                    kind=kind,
                    subtype=subtype,
                    masking=masking,
                    description=description,
                    origin=self.origin,
                )
            )

    def _typings(
        self, source: _InputField, path: str, column: str | None, entry: _FieldLineage | None
    ) -> list[tuple[EdgeKind, EdgeSubtype | None, bool, str | None]]:
        if source.transformations:  # 1-1-0 and later: one edge per transformation
            typings = []
            for k, raw in enumerate(source.transformations):
                where = f"{path}.transformations[{k}]"
                transformation = _validate(_Transformation, raw, where, self.notes)
                if transformation is None:
                    typings.append(_UNKNOWN_DIRECT)  # the flow is known even if its type is not
                else:
                    typings.append(self._typing(transformation, where))
            return typings
        if entry is not None and entry.transformationType is not None:  # 1-0-x
            return [_legacy_typing(entry.transformationType, entry.transformationDescription)]
        if column is None:  # a dataset-level entry with no transformation only influences rows
            return [(EdgeKind.INDIRECT, None, False, None)]
        description = entry.transformationDescription if entry is not None else None
        return [(EdgeKind.DIRECT, EdgeSubtype.TRANSFORMATION, False, description)]

    def _typing(self, t: _Transformation, where: str) -> tuple[EdgeKind, EdgeSubtype | None, bool, str | None]:
        masking = bool(t.masking)
        kind = _enum_value(EdgeKind, t.type)
        subtype = _enum_value(EdgeSubtype, t.subtype) if t.subtype is not None else None
        if kind is None:
            problem = f"{where}.type: unknown transformation type {t.type!r}"
        elif t.subtype is not None and subtype is None:
            problem = f"{where}.subtype: unknown transformation subtype {t.subtype!r}"
        elif subtype is not None and (kind is EdgeKind.DIRECT) != (subtype in DIRECT_SUBTYPES):
            # e.g. INDIRECT IDENTITY: contradictory, so assume the value may be carried.
            problem = f"{where}: subtype {subtype.value} does not belong to type {kind.value}"
        elif subtype is None and kind is EdgeKind.DIRECT:
            # A DIRECT transform without subtype may change the value in any way.
            return (kind, EdgeSubtype.TRANSFORMATION, masking, t.description)
        else:
            return (kind, subtype, masking, t.description)
        self.notes.append(f"{problem}; recorded as DIRECT TRANSFORMATION")
        return (EdgeKind.DIRECT, EdgeSubtype.TRANSFORMATION, masking, t.description)


_UNKNOWN_DIRECT: tuple[EdgeKind, EdgeSubtype | None, bool, str | None] = (
    EdgeKind.DIRECT,
    EdgeSubtype.TRANSFORMATION,
    False,
    None,
)

_E = TypeVar("_E", EdgeKind, EdgeSubtype)


def _enum_value(enum: type[_E], value: str) -> _E | None:
    """The member whose value is ``value`` (trimmed, upper-cased), or None."""
    return _BY_VALUE[enum].get(value.strip().upper())  # as enum(value), without Enum.__call__'s cost


_BY_VALUE: dict[type, dict[str, Any]] = {e: {m.value: m for m in e} for e in (EdgeKind, EdgeSubtype)}


def _legacy_typing(transformation_type: str, description: str | None) -> tuple[EdgeKind, EdgeSubtype, bool, str | None]:
    """1-0-x ``transformationType``: IDENTITY, AGGREGATION, MASKED; anything else is a transform."""
    value = transformation_type.strip().upper()
    if value == "IDENTITY":
        return (EdgeKind.DIRECT, EdgeSubtype.IDENTITY, False, description)
    if value == "AGGREGATION":
        return (EdgeKind.DIRECT, EdgeSubtype.AGGREGATION, False, description)
    return (EdgeKind.DIRECT, EdgeSubtype.TRANSFORMATION, value in ("MASKED", "MASK"), description)


def _merge_facts(found: list[tuple[_Event, _Occurrence]]) -> tuple[DatasetFacts, ...]:
    """One DatasetFacts per dataset: the latest schema seen, every alias seen (sorted)."""
    by_dataset: dict[str, list[tuple[_Event, _Occurrence]]] = {}
    for event, occ in found:
        by_dataset.setdefault(occ.canonical, []).append((event, occ))
    merged = []
    for dataset_id, seen in sorted(by_dataset.items()):
        ranked = sorted(seen, key=lambda pair: (pair[0].rank, pair[1].path))
        with_schema = [pair for pair in ranked if pair[1].columns is not None]
        event, occ = (with_schema or ranked)[-1]
        aliases = sorted({alias for _, o in seen for alias in o.aliases})
        merged.append(
            DatasetFacts(
                dataset=dataset_id,
                columns=occ.columns or (),
                aliases=tuple(aliases),
                origin=event.origin,
            )
        )
    return tuple(merged)


def _in_reading_order(problems: list[IngestProblem], files: list[str]) -> tuple[IngestProblem, ...]:
    """Errors and warnings together, by file (as read) and line; stable for one place."""
    rank = {name: index for index, name in reversed(list(enumerate(files)))}
    return tuple(sorted(problems, key=lambda p: (rank.get(p.origin.file, -1), p.origin.line or 0)))


def _column_edge_key(edge: ColumnEdge) -> tuple:
    return (*edge.sort_key(), edge.description or "", edge.origin.job or "")




__all__ = ["ingest_openlineage_paths", "ingest_openlineage_text"]
