"""The ``columnLineage`` facet of one output, as compact edge rows.

Every published shape is read: 1-0-x ``transformationType`` per field, 1-1-0 per-input
``transformations``, 1-2-0's dataset-level ``dataset`` list. A malformed part is a note (a
WARNING for the caller) and, wherever the flow itself is still known, the flow is kept as an
unknown DIRECT TRANSFORMATION: a privacy tool must over-report rather than drop a flow.

Why rows and not :class:`ColumnEdge` models: an event carries tens of input fields per output,
and building, hashing and sorting a pydantic model for each one cost about 20x the event's JSON
parse (``benchmarks/bench_openlineage.py``). Well-formed parts are checked with plain type tests;
only a part that fails them goes through the pydantic models, which name what is wrong. The
ingest turns the de-duplicated rows into ``ColumnEdge``s once, at the end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict

from piitracer.ingest.pydantic_problems import validate_part
from piitracer.model.lineage import DIRECT_SUBTYPES, EdgeKind, EdgeSubtype


class _Lenient(BaseModel):
    """The spec allows extra fields everywhere; producers add their own."""

    model_config = ConfigDict(extra="allow")


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


class Typing(NamedTuple):
    """How a value flows along one edge."""

    kind: EdgeKind
    subtype: EdgeSubtype | None
    masking: bool
    description: str | None


# One column edge of one output before it becomes a ``ColumnEdge`` (the caller adds target and
# origin): (source dataset, source column, target column or None for a dataset-level edge, index
# into ``ColumnLineageReader.typings``). A plain tuple: built, hashed and sorted by the million.
EdgeRow = tuple[str, str, "str | None", int]


UNKNOWN_DIRECT = Typing(EdgeKind.DIRECT, EdgeSubtype.TRANSFORMATION, False, None)
_DATASET_LEVEL = Typing(EdgeKind.INDIRECT, None, False, None)


@dataclass
class ColumnLineageReader:
    """Reads the ``columnLineage`` facets of one ingest call.

    ``source_id(namespace, name)`` gives the canonical id of an input field's dataset (the event's
    own aliases first). Rows name their typing by index into ``typings``: a few dozen distinct
    typings occur in practice, and rows are hashed and sorted by the million.
    """

    typings: list[Typing]
    _ids: dict[Typing, int]  # typing -> its index in ``typings``
    _by_fields: dict[tuple, int]  # (type, subtype, masking, description) as read -> index, for valid typings

    def __init__(self) -> None:
        self.typings, self._ids, self._by_fields = [], {}, {}

    def typing_id(self, typing: Typing) -> int:
        """The index of ``typing`` in ``typings`` (added when new)."""
        known = self._ids.get(typing)
        if known is None:
            known = self._ids[typing] = len(self.typings)
            self.typings.append(typing)
        return known

    def read(self, facet: Any, path: str, source_id: Callable[[str, str], str], notes: list[str]) -> list[EdgeRow]:
        """Edge rows of one output's facet; ``path`` (e.g. ``outputs[0].facets.columnLineage``)
        prefixes every note."""
        rows: list[EdgeRow] = []
        fields, dataset = _facet_parts(facet, path, notes)
        for column, raw in fields.items():
            entry = _field_lineage(raw, f"{path}.fields.{column}", notes)
            if entry is None:
                continue
            input_fields, legacy_type, legacy_description = entry
            legacy = _legacy_typing(legacy_type, legacy_description) if legacy_type is not None else None
            # A field with no transformation of any kind carries its value in some unknown way.
            default = self.typing_id(legacy or Typing(EdgeKind.DIRECT, EdgeSubtype.TRANSFORMATION, False, legacy_description))
            self._add_inputs(rows, input_fields, column, default, source_id, notes, f"{path}.fields.{column}.inputFields")
        # A dataset-level entry with no transformation only influences rows.
        self._add_inputs(rows, dataset, None, self.typing_id(_DATASET_LEVEL), source_id, notes, f"{path}.dataset")
        return rows

    def _add_inputs(self, rows: list[EdgeRow], input_fields: list[Any], column: str | None, default: int,
                    source_id: Callable[[str, str], str], notes: list[str], path: str) -> None:
        """Rows from a list of input fields (the hot loop: plain type tests, a typing lookup)."""
        by_fields = self._by_fields
        for j, raw in enumerate(input_fields):
            if type(raw) is dict:
                namespace, name, field, transformations = raw.get("namespace"), raw.get("name"), raw.get("field"), raw.get("transformations")
                valid = type(namespace) is str and type(name) is str and type(field) is str and (transformations is None or type(transformations) is list)
            else:
                valid = False
            if not valid:
                model = validate_part(_InputField, raw, f"{path}[{j}]", notes)
                if model is None:
                    continue  # without namespace/name/field there is no source column to point at
                namespace, name, field, transformations = model.namespace, model.name, model.field, model.transformations
            dataset = source_id(namespace, name)
            if not transformations:
                rows.append((dataset, field, column, default))
                continue
            for k, t in enumerate(transformations):  # 1-1-0 and later: one edge per transformation
                typing_id = None
                if type(t) is dict:
                    t_type, subtype, description, masking = t.get("type"), t.get("subtype"), t.get("description"), t.get("masking")
                    if (type(t_type) is str and (subtype is None or type(subtype) is str)
                            and (description is None or type(description) is str) and (masking is None or type(masking) is bool)):
                        typing_id = by_fields.get((t_type, subtype, masking is True, description))
                if typing_id is None:
                    typing_id = self._transformation(t, f"{path}[{j}].transformations[{k}]", notes)
                rows.append((dataset, field, column, typing_id))

    def _transformation(self, raw: Any, where: str, notes: list[str]) -> int:
        if type(raw) is dict:
            t_type, subtype = raw.get("type"), raw.get("subtype")
            description, masking = raw.get("description"), raw.get("masking")
            if (type(t_type) is str and (subtype is None or type(subtype) is str)
                    and (description is None or type(description) is str) and (masking is None or type(masking) is bool)):
                return self._typing(t_type, subtype, bool(masking), description, where, notes)
        model = validate_part(_Transformation, raw, where, notes)
        if model is None:
            return self.typing_id(UNKNOWN_DIRECT)  # the flow is known even if its type is not
        return self._typing(model.type, model.subtype, bool(model.masking), model.description, where, notes)

    def _typing(self, t_type: str, t_subtype: str | None, masking: bool, description: str | None,
                where: str, notes: list[str]) -> int:
        key = (t_type, t_subtype, masking, description)
        known = self._by_fields.get(key)
        if known is not None:
            return known
        typing, problem = _typing_of(t_type, t_subtype, masking, description)
        typing_id = self.typing_id(typing)
        if problem is not None:
            notes.append(f"{where}{problem}; recorded as DIRECT TRANSFORMATION")
        else:  # only problem-free typings are looked up by fields: a problem is noted at every place
            self._by_fields[key] = typing_id
        return typing_id


def _facet_parts(facet: Any, path: str, notes: list[str]) -> tuple[dict[str, Any], list[Any]]:
    if type(facet) is dict:
        fields, dataset = facet.get("fields"), facet.get("dataset")
        if (fields is None or type(fields) is dict) and (dataset is None or type(dataset) is list):
            return fields or {}, dataset or []
    model = validate_part(_ColumnLineageFacet, facet, path, notes)
    return (model.fields or {}, model.dataset or []) if model is not None else ({}, [])


def _field_lineage(raw: Any, path: str, notes: list[str]) -> tuple[list[Any], str | None, str | None] | None:
    """(inputFields, 1-0-x transformationType, transformationDescription) of one output column."""
    if type(raw) is dict:
        inputs, t_type, description = raw.get("inputFields"), raw.get("transformationType"), raw.get("transformationDescription")
        if type(inputs) is list and (t_type is None or type(t_type) is str) and (description is None or type(description) is str):
            return inputs, t_type, description
    model = validate_part(_FieldLineage, raw, path, notes)
    return (model.inputFields, model.transformationType, model.transformationDescription) if model is not None else None


def _typing_of(t_type: str, t_subtype: str | None, masking: bool, description: str | None) -> tuple[Typing, str | None]:
    """The typing of a 1-1-0 transformation and, when it is not a valid one, the problem (the
    typing is then DIRECT TRANSFORMATION: assume the value may be carried)."""
    kind = _enum_value(EdgeKind, t_type)
    subtype = _enum_value(EdgeSubtype, t_subtype) if t_subtype is not None else None
    if kind is None:
        problem = f".type: unknown transformation type {t_type!r}"
    elif t_subtype is not None and subtype is None:
        problem = f".subtype: unknown transformation subtype {t_subtype!r}"
    elif subtype is not None and (kind is EdgeKind.DIRECT) != (subtype in DIRECT_SUBTYPES):
        # e.g. INDIRECT IDENTITY: contradictory, so assume the value may be carried.
        problem = f": subtype {subtype.value} does not belong to type {kind.value}"
    elif subtype is None and kind is EdgeKind.DIRECT:
        # A DIRECT transform without subtype may change the value in any way.
        return Typing(kind, EdgeSubtype.TRANSFORMATION, masking, description), None
    else:
        return Typing(kind, subtype, masking, description), None
    return Typing(EdgeKind.DIRECT, EdgeSubtype.TRANSFORMATION, masking, description), problem


_E = TypeVar("_E", EdgeKind, EdgeSubtype)


def _enum_value(enum: type[_E], value: str) -> _E | None:
    """The member whose value is ``value`` (trimmed, upper-cased), or None."""
    return _BY_VALUE[enum].get(value.strip().upper())  # as enum(value), without Enum.__call__'s cost


_BY_VALUE: dict[type, dict[str, Any]] = {e: {m.value: m for m in e} for e in (EdgeKind, EdgeSubtype)}


def _legacy_typing(transformation_type: str, description: str | None) -> Typing:
    """1-0-x ``transformationType``: IDENTITY, AGGREGATION, MASKED; anything else is a transform."""
    value = transformation_type.strip().upper()
    if value == "IDENTITY":
        return Typing(EdgeKind.DIRECT, EdgeSubtype.IDENTITY, False, description)
    if value == "AGGREGATION":
        return Typing(EdgeKind.DIRECT, EdgeSubtype.AGGREGATION, False, description)
    return Typing(EdgeKind.DIRECT, EdgeSubtype.TRANSFORMATION, value in ("MASKED", "MASK"), description)


__all__ = ["ColumnLineageReader", "EdgeRow", "Typing", "UNKNOWN_DIRECT"]
