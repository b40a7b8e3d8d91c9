"""Ingest OpenLineage events (``.json``, ``.jsonl``, ``.ndjson``) into a :class:`LineageBatch`.

What is taken from the events:

* column edges from the ``columnLineage`` facet of outputs, in every published shape
  (1-0-x ``transformationType``, 1-1-0 per-input ``transformations``, 1-2-0 dataset-level
  ``dataset`` list), detected by content because ``_schemaURL`` is often missing or wrong;
* one FLOW dataset edge per (input, output) pair;
* :class:`DatasetFacts` (columns from ``schema``, aliases from ``symlinks``) from every event.

A dataset goes by several names in one event (Spark names a table by its location and adds a
``symlinks`` facet with its table name). The name that is a catalog dataset (by location, table
name or alias) becomes its id — a TABLE symlink first, then the dataset's own name, then other
symlinks; when none is, the TABLE symlink's name (else the dataset's own); the others are kept as
aliases. Two names that are two different catalog datasets are a warning (the first is taken).

Every facet is accounted for, never dropped silently: ``schema``, ``symlinks`` and
``columnLineage`` are read; facets the spec defines as carrying no flow of values (``dataSource``,
``version``, ``storage``, ``catalog``, statistics, ``processing_engine``, ``spark.logicalPlan``...)
are read past on purpose; facets saying lineage may be missing (Spark's ``spark_unknown``, the
spec's ``extractionError``, the explicit ``lineage`` facet piitracer does not read) are a WARNING
per job; any other facet is an INFO line per facet name (where it was first seen, how many times).

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
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from piitracer.ingest.openlineage.columns import ColumnLineageReader, EdgeRow, Typing
from piitracer.ingest.openlineage.facets import (GAP_FACETS, NO_LINEAGE_FACETS, READ_FACETS, schema_columns,
                                                 symlink_names)
from piitracer.ingest.openlineage.models import (DatasetEventModel, DatasetModel, JobEventModel, JobModel,
                                                 RunEventModel, event_model)
from piitracer.ingest.source_files import display_path, files_under
from piitracer.model.gc_pause import cyclic_gc_paused
from piitracer.model.lineage import (
    ColumnEdge,
    ColumnRef,
    DatasetEdge,
    DatasetFacts,
    DatasetRelation,
    IngestProblem,
    LineageBatch,
    Origin,
    OriginKind,
    ProblemSeverity,
)
from piitracer.model.naming import DatasetNamer

from piitracer.ingest.openlineage.places import EVENT_SUFFIXES, JSON_SUFFIXES, LINE_SUFFIXES  # noqa: F401

# Python's json module recurses per nesting level; orjson stops at 1,024 levels.
TOO_DEEP = "invalid JSON: nested deeper than the JSON parser's limit (about 1,000 levels)"

RUN_STATES = ("START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER")


# ---- parsed events -----------------------------------------------------------------------------


@dataclass
class _Event:
    """One valid event with where it was read and its place in reading order."""

    model: RunEventModel | JobEventModel | DatasetEventModel
    origin: Origin  # file and start line (job filled in for run and job events)
    order: int

    @property
    def rank(self) -> tuple[datetime, int]:
        """Latest-wins ordering: eventTime, then reading order on a tie."""
        return (self.model.eventTime, self.order)

    @property
    def contributes_lineage(self) -> bool:
        """COMPLETE run events and job events carry lineage that really happened / is static."""
        if isinstance(self.model, JobEventModel):
            return True
        return isinstance(self.model, RunEventModel) and self.model.eventType == "COMPLETE"


@dataclass
class _Occurrence:
    """One input/output/dataset of an event, resolved to its canonical id."""

    path: str  # e.g. ``outputs[0]``, for problem messages
    dataset: DatasetModel
    canonical: str
    aliases: tuple[str, ...]
    columns: tuple[str, ...] | None  # None: no (usable) schema facet
    symlinks: tuple[tuple[str, str], ...]  # (namespace, name) of every valid symlink


@dataclass
class _Reader:
    """Reads every file of one ingest call: problems here, valid events folded into ``builder``."""

    builder: _Builder
    events_read: int = 0
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
        model, reason = event_model(value)
        if model is None:
            self.problems.append(IngestProblem(origin=origin, reason=reason))
            return
        if not isinstance(model, DatasetEventModel):
            origin = origin.model_copy(update={"job": _job_name(model.job)})
        self.builder.add(_Event(model=model, origin=origin, order=self.events_read))
        self.events_read += 1


# ---- public API --------------------------------------------------------------------------------


def ingest_openlineage_text(text: str, *, file: str, namer: DatasetNamer) -> LineageBatch:
    """Ingest the events of one file's text; ``file`` names it in origins and picks the format.

    ``.json`` holds one event object or a JSON array of events; ``.jsonl``/``.ndjson`` one event
    per line (blank lines ignored). Any other suffix is an ERROR problem and nothing is read.
    """
    reader = _Reader(builder=_Builder(namer=namer))
    with cyclic_gc_paused():
        _read_text(reader, text, file=file)
        return _build_batch(reader)


def ingest_openlineage_paths(
    paths: Sequence[Path], *, namer: DatasetNamer, display_root: Path | None = None
) -> LineageBatch:
    """Ingest event files and folders (every ``*.json``/``*.jsonl``/``*.ndjson`` below a folder,
    sorted by path). ``Origin.file`` is relative to ``display_root`` when given.

    "Latest event wins" is decided across all the files of one call.
    """
    reader = _Reader(builder=_Builder(namer=namer))
    with cyclic_gc_paused():
        _read_paths(reader, paths, display_root)
        return _build_batch(reader)


def _read_paths(reader: _Reader, paths: Sequence[Path], display_root: Path | None) -> None:
    for path in _event_files(paths, reader, display_root):
        shown = display_path(path, display_root)
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            reader.error(shown, None, f"cannot read file: {exc}", counts=False)
            continue
        _read_text(reader, text, file=shown)


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
            value = _loads(line)
        except json.JSONDecodeError as exc:
            reader.error(file, number, f"invalid JSON: {exc.msg} (column {exc.colno})")
            continue
        except RecursionError:
            reader.error(file, number, TOO_DEEP)
            continue
        reader.add_value(value, file=file, line=number)


def _loads(line: str) -> Any:
    """One JSON value: orjson (about 2x faster), and for what orjson refuses but Python's json
    reads (NaN, integers beyond 64 bits, lone surrogates) the json module, so both accept the same
    documents and errors carry json's message and column."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)


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
    except RecursionError:
        reader.error(file, _line_of(text, pos), TOO_DEEP)


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


def _job_name(job: JobModel) -> str:
    return f"{job.namespace}/{job.name}"


def _alias_string(namespace: str, name: str) -> str:
    # The same ``namespace/name`` form the namer looks aliases up by.
    return f"{namespace.rstrip('/')}/{name}"


# ---- from events to a batch --------------------------------------------------------------------
#
# Events are folded into the builder as they are read and then dropped: what is kept is the
# facts per dataset and, per (job, output), the lineage of the latest event so far as compact
# rows. One ingest call of 100k events therefore holds the surviving edges, not the events.


@dataclass
class _OutputLineage:
    """What one output of a lineage-carrying event contributes."""

    index: int  # position in the event's occurrences, to report warnings in reading order
    target: str
    inputs: tuple[str, ...]  # canonical ids of the event's inputs: one FLOW edge each
    rows: list[EdgeRow]
    notes: list[str]  # warnings about the output's columnLineage facet


@dataclass
class _Winner:
    """The latest lineage-carrying event so far for one (job, output) and what it says."""

    rank: tuple[datetime, int]
    origin: Origin
    outputs: list[_OutputLineage]


@dataclass
class _Facts:
    """What the events so far say about one dataset; the latest schema wins, aliases add up."""

    latest: tuple[tuple[datetime, int], str]  # (event rank, occurrence path) of the latest mention
    latest_origin: Origin
    schema: tuple[tuple[datetime, int], str] | None = None  # same, of the latest mention with a schema
    columns: tuple[str, ...] = ()
    schema_origin: Origin | None = None
    aliases: set[str] = field(default_factory=set)


@dataclass
class _Builder:
    namer: DatasetNamer
    columns: ColumnLineageReader = field(default_factory=ColumnLineageReader)
    winners: dict[tuple[str, str], _Winner] = field(default_factory=dict)  # (job, output id) -> latest
    facts: dict[str, _Facts] = field(default_factory=dict)
    warnings: list[IngestProblem] = field(default_factory=list)
    names: dict[tuple[str, str], str] = field(default_factory=dict)  # (namespace, name) -> naive id

    # (place, facet name, job for GAP_FACETS) -> [origin of its first event, events that carry it]
    unread: dict[tuple[str, str, str], list] = field(default_factory=dict)

    def warn(self, origin: Origin, reason: str) -> None:
        self.warnings.append(IngestProblem(severity=ProblemSeverity.WARNING, origin=origin, reason=reason))

    def name_of(self, namespace: str, name: str) -> str:
        """``namer.from_openlineage``, memoised: events name the same datasets over and over."""
        key = (namespace, name)
        known = self.names.get(key)
        if known is None:
            known = self.names[key] = self.namer.from_openlineage(namespace, name)
        return known

    def add(self, event: _Event) -> None:
        """Fold one valid event in."""
        self._note_facets(event)
        occurrences = _resolve_event(self, event)
        for occ in occurrences:
            if occ.columns is not None or occ.symlinks:
                self._note_facts(event, occ)
        if event.contributes_lineage:
            self._note_lineage(event, occurrences)

    def _note_facets(self, event: _Event) -> None:
        """Count every facet piitracer neither reads nor knows to carry no lineage."""
        model = event.model
        if isinstance(model, DatasetEventModel):
            places: list[tuple[str, Any]] = [("dataset", model.dataset.facets)]
        else:
            places = [("job", (model.job.model_extra or {}).get("facets"))]
            if isinstance(model, RunEventModel):
                places.append(("run", (model.run.model_extra or {}).get("facets")))
            for side, datasets in (("input", model.inputs), ("output", model.outputs)):
                for dataset in datasets or ():
                    places.append(("input dataset" if side == "input" else "dataset", dataset.facets))
                    places.append((side, (dataset.model_extra or {}).get(f"{side}Facets")))
        for place, facets in places:
            if type(facets) is not dict:
                continue
            for name in facets:
                # columnLineage is read on outputs only (it says how the output was made)
                if (name in READ_FACETS and (name != "columnLineage" or place != "input dataset")
                        or name in NO_LINEAGE_FACETS):
                    continue
                key = (place, name, event.origin.job or "" if name in GAP_FACETS else "")
                seen = self.unread.get(key)
                if seen is None:
                    self.unread[key] = [event.origin, 1]
                else:
                    seen[1] += 1

    def _note_facts(self, event: _Event, occ: _Occurrence) -> None:
        key = (event.rank, occ.path)
        facts = self.facts.get(occ.canonical)
        if facts is None:
            facts = self.facts[occ.canonical] = _Facts(latest=key, latest_origin=event.origin)
        elif key > facts.latest:
            facts.latest, facts.latest_origin = key, event.origin
        if occ.columns is not None and (facts.schema is None or key > facts.schema):
            facts.schema, facts.columns, facts.schema_origin = key, occ.columns, event.origin
        facts.aliases.update(occ.aliases)

    def _note_lineage(self, event: _Event, occurrences: list[_Occurrence]) -> None:
        """Latest event wins per (job, output), so a job whose SQL changed keeps no old flows.
        Every output of the event with that id counts (two spellings of one table)."""
        outputs: dict[tuple[str, str], list[tuple[int, _Occurrence]]] = {}
        for index, occ in enumerate(occurrences):
            if occ.path.startswith("outputs"):
                outputs.setdefault((event.origin.job or "", occ.canonical), []).append((index, occ))
        aliases: dict[str, str] | None = None
        inputs = tuple(occ.canonical for occ in occurrences if occ.path.startswith("inputs"))
        for key, named in outputs.items():
            current = self.winners.get(key)
            if current is not None and not event.rank > current.rank:
                continue
            if aliases is None:
                aliases = _event_aliases(self, occurrences)
            self.winners[key] = _Winner(event.rank, event.origin, [self._output_lineage(i, occ, inputs, aliases) for i, occ in named])

    def _output_lineage(self, index: int, output: _Occurrence, inputs: tuple[str, ...], aliases: dict[str, str]) -> _OutputLineage:
        lineage = _OutputLineage(index=index, target=output.canonical, inputs=inputs, rows=[], notes=[])
        facets = output.dataset.facets or {}
        if "columnLineage" in facets:
            def source_id(namespace: str, name: str) -> str:
                naive = self.name_of(namespace, name)
                return aliases.get(naive, naive)

            path = f"{output.path}.facets.columnLineage"
            lineage.rows = self.columns.read(facets["columnLineage"], path, source_id, lineage.notes)
        return lineage


def _build_batch(reader: _Reader) -> LineageBatch:
    builder = reader.builder
    outputs = sorted(((w.rank[1], o.index, w.origin, o) for w in builder.winners.values() for o in w.outputs),
                     key=lambda item: item[:2])
    origins: dict[Origin, int] = {}
    flows: set[tuple[str, str, int]] = set()
    rows: set[tuple[str, str, str, str | None, int, int]] = set()  # EdgeRow with the target, then the origin
    lineage_warnings = []
    for _, _, origin, output in outputs:
        origin_id = origins.setdefault(origin, len(origins))
        flows.update((source, output.target, origin_id) for source in output.inputs)
        rows.update((source, column, output.target, target_column, typing, origin_id) for source, column, target_column, typing in output.rows)
        lineage_warnings.extend(IngestProblem(severity=ProblemSeverity.WARNING, origin=origin, reason=note) for note in output.notes)
    by_id = list(origins)
    return LineageBatch(
        column_edges=_column_edges(rows, builder.columns.typings, by_id),
        dataset_edges=tuple(sorted((DatasetEdge(source=s, target=t, relation=DatasetRelation.FLOW, origin=by_id[o])
                                    for s, t, o in flows), key=DatasetEdge.sort_key)),
        datasets=tuple(_dataset_facts(dataset_id, facts) for dataset_id, facts in sorted(builder.facts.items())),
        problems=_in_reading_order(reader.problems + builder.warnings + lineage_warnings + _facet_problems(builder),
                                   reader.files),
        units_read=reader.units_read,
    )


def _facet_problems(builder: _Builder) -> list[IngestProblem]:
    """One line per facet piitracer did not read: a WARNING (per job) where the facet says lineage
    may be missing, an INFO elsewhere."""
    problems = []
    for (place, name, _job), (origin, count) in builder.unread.items():
        times = f"{count} event{'s' if count != 1 else ''}"
        if name in GAP_FACETS:
            problems.append(IngestProblem(severity=ProblemSeverity.WARNING, origin=origin,
                                          reason=f"{place} facet {name!r}: {GAP_FACETS[name]} ({times} of this job)"))
        else:
            problems.append(IngestProblem(severity=ProblemSeverity.INFO, origin=origin, reason=(
                f"{place} facet {name!r} is not read by piitracer ({times} from here on): "
                "any lineage it holds is not in the graph")))
    return problems


def _column_edges(rows: set[tuple[str, str, str, str | None, int, int]], typings: list[Typing],
                  origins: list[Origin]) -> tuple[ColumnEdge, ...]:
    """The de-duplicated rows as ColumnEdges, in the order of ``ColumnEdge.sort_key`` (then
    description and job), one ColumnRef per source column."""
    origin_keys = [(o.file, o.line or 0, o.job or "") for o in origins]
    typing_keys = [(t.kind.value, t.subtype.value if t.subtype else "", t.masking, t.description or "") for t in typings]

    def order(row: tuple) -> tuple:
        typing, origin = typing_keys[row[4]], origin_keys[row[5]]
        return (row[0], row[1], row[2], row[3] or "", typing[0], typing[1], typing[2], "", origin[0], origin[1], typing[3], origin[2])

    refs: dict[tuple[str, str], ColumnRef] = {}
    edges = []
    for source_dataset, source_column, target, target_column, typing_id, origin_id in sorted(rows, key=order):
        typing = typings[typing_id]
        ref = refs.get((source_dataset, source_column))
        if ref is None:
            ref = refs[(source_dataset, source_column)] = ColumnRef(dataset=source_dataset, column=source_column)
        edges.append(ColumnEdge(source=ref, target_dataset=target, target_column=target_column, kind=typing.kind,
                                subtype=typing.subtype, masking=typing.masking, description=typing.description,
                                origin=origins[origin_id]))
    return tuple(edges)


def _resolve_event(builder: _Builder, event: _Event) -> list[_Occurrence]:
    """Every dataset the event names, with canonical ids, aliases and columns."""
    model = event.model
    if isinstance(model, DatasetEventModel):
        named = [("dataset", model.dataset)]
    else:
        named = [(f"inputs[{i}]", d) for i, d in enumerate(model.inputs or [])]
        named += [(f"outputs[{i}]", d) for i, d in enumerate(model.outputs or [])]
    return [_resolve_dataset(builder, event, path, dataset) for path, dataset in named]


def _resolve_dataset(builder: _Builder, event: _Event, path: str, dataset: DatasetModel) -> _Occurrence:
    facets = dataset.facets or {}
    notes: list[str] = []
    columns = schema_columns(facets["schema"], f"{path}.facets.schema", notes) if "schema" in facets else None
    identifiers = symlink_names(facets["symlinks"], f"{path}.facets.symlinks", notes) if "symlinks" in facets else []
    for note in notes:
        builder.warn(event.origin, note)

    # Spark names a table by its location and adds its table name as a TABLE symlink: the name that
    # is a catalog dataset wins (TABLE symlink, own name, other symlinks), else the TABLE symlink.
    names = [(dataset.namespace, dataset.name)] + [(namespace, name) for namespace, name, _ in identifiers]
    table = next((i for i, (_, _, kind) in enumerate(identifiers) if (kind or "").upper() == "TABLE"), None)
    first = [] if table is None else [table + 1]
    preferred = first + [i for i in range(len(names)) if i not in first]
    ids = {i: builder.name_of(*names[i]) for i in preferred}
    known = [i for i in preferred if builder.namer.is_known(ids[i])]
    chosen = known[0] if known else preferred[0]
    canonical = ids[chosen]
    others = sorted({ids[i] for i in known} - {canonical})
    if others:
        builder.warn(event.origin, f"{path}: {_alias_string(*names[chosen])} is catalog dataset {canonical}, but its "
                                   f"other names are {', '.join(others)}: taken as {canonical}")
    aliases = {_alias_string(*n) for i, n in enumerate(names) if i != chosen} - {_alias_string(*names[chosen])}
    return _Occurrence(
        path=path,
        dataset=dataset,
        canonical=canonical,
        aliases=tuple(sorted(aliases)),
        columns=columns,
        symlinks=tuple(names[1:]),
    )


def _event_aliases(builder: _Builder, occurrences: list[_Occurrence]) -> dict[str, str]:
    """Naive id of every name an event's datasets go by -> their canonical id.

    Keyed by the namer's id of each name, so ``("file", "/wh/x")`` and ``("file:/wh", "x")``-style
    spellings of one path meet. The first dataset naming an alias keeps it (deterministic).
    """
    aliases: dict[str, str] = {}
    for occ in occurrences:
        for name in ((occ.dataset.namespace, occ.dataset.name), *occ.symlinks):
            aliases.setdefault(builder.name_of(*name), occ.canonical)
    return aliases


def _dataset_facts(dataset_id: str, facts: _Facts) -> DatasetFacts:
    """One dataset's facts: the latest schema seen (else the latest mention), every alias seen."""
    return DatasetFacts(
        dataset=dataset_id,
        columns=facts.columns,
        aliases=tuple(sorted(facts.aliases)),
        origin=facts.schema_origin or facts.latest_origin,
    )


def _in_reading_order(problems: list[IngestProblem], files: list[str]) -> tuple[IngestProblem, ...]:
    """Errors and warnings together, by file (as read) and line; stable for one place."""
    rank = {name: index for index, name in reversed(list(enumerate(files)))}
    return tuple(sorted(problems, key=lambda p: (rank.get(p.origin.file, -1), p.origin.line or 0)))


__all__ = ["ingest_openlineage_paths", "ingest_openlineage_text"]
