"""Subject values checked against the source key columns' types before anything is planned.

The planner refuses a plan for a value that is not exactly a value of each source key column's
type (``model.key_values``): a typo must stop the request, not erase somebody else. Where the key
type comes from, in order: the catalog's ``column_types``, else the live table's schema (the API
reads it and passes it in as ``live_types``); both present and different is an error too, since
one of them is wrong.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from piitracer.model.key_values import KeyType, KeyValueError, parse_key_type, parse_key_value
from piitracer.model.lineage import ColumnRef
from piitracer.model.plan import Subject
from piitracer.model.workspace import CatalogDataset


class SubjectValueError(ValueError):
    """A subject value or a key type the plan cannot be made with; the message names the value's
    position (``--subject #2``, ``batch.csv:7``) and the source column, never the value."""


def key_type_of(ref: ColumnRef, entry: CatalogDataset, live_types: Mapping[str, str]) -> KeyType:
    """The type of a source key column: the catalog's declaration, checked against the live table."""
    declared = entry.column_types.get(ref.column)
    live = live_types.get(str(ref))
    if declared and live and parse_key_type(declared) != parse_key_type(live):
        raise SubjectValueError(f"source {ref}: catalog.{ref.dataset}.column_types says {declared} but the table's "
                                f"schema says {live}: fix the catalog")
    text = declared or live
    if not text:
        raise SubjectValueError(
            f"source {ref}: cannot tell the key column's type (the table's schema could not be read and "
            f"catalog.{ref.dataset}.column_types does not declare {ref.column}): subject values are only ever "
            "compared as values of the key's exact type")
    try:
        return parse_key_type(text)
    except KeyValueError as error:
        raise SubjectValueError(f"source {ref}: {error}") from None


def check_subjects(subjects: Sequence[Subject], sources: Sequence[ColumnRef], key_types: Mapping[ColumnRef, KeyType],
                   catalog: Mapping[str, CatalogDataset], labels: Sequence[str] = ()) -> None:
    """Raise :class:`SubjectValueError` for the first subject whose value is not a value of every
    source key column's type. ``labels`` name each subject's position for the message."""
    for index, subject in enumerate(subjects):
        label = labels[index] if index < len(labels) else f"subject #{index + 1} (request {subject.request_id})"
        for ref in sources:
            steps = catalog[ref.dataset].normalised.get(ref.column, ())
            try:
                parse_key_value(subject.value, key_types[ref], steps)
            except KeyValueError as error:
                raise SubjectValueError(f"{label}: the value {error} (source {ref} is {key_types[ref]}); "
                                        "nothing was planned") from None
