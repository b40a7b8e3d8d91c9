"""Which search each column of a dataset gets: whole values of its own value sets, or every
value, whole and inside text (design.md, "Proof at scale"; issue 29).

**The claim.** An *identifier column* of a dataset is proven free of the **whole values of the
value sets it carries**, matched typed (:meth:`~piitracer.verify.values.ValueIndex.match`): not of
other value sets, and not of any value inside its text. **Every other column** — free text,
unclassified, and any column the catalog says nothing about — is searched as before: for every
value set searched in the dataset, whole and inside text. So the default is never weaker than
before: a column gets the narrower search only when the catalog or the plan says what it holds.

A column is an identifier column of dataset D when both hold:

- it is one of D's catalogued ``identifiers`` (a person's classification: identifiers that are
  ``catalog classify``'s unconfirmed proposal, ``classified_by: auto``, do not narrow anything), or
  the plan's key column of D (the column its erasure matches whole values on);
- the value sets it carries are known: ``D.<column>`` when the resolve step captures that column
  itself (D is a source), the value forms lineage says it holds (the plan's ``column_forms``) and,
  for the key column, the value sets the plan's steps match on (``values_from``). A column with
  none of these keeps the full search.

Only top-level, non-nested columns are narrowed, matched by name case-insensitively; a file whose
schema holds two top-level columns with the same lower-case name gets the full search on both.
Places that are not a column's rows (footer statistics, file paths, logs, manifests) are searched
for every value as before.

The rule is the same on every path a chunk can take (statistics, page index, Bloom filter —
hashed with the column's own values only — dictionary, decoded rows), in the driver and in Spark
tasks, so a finding never depends on how a file was encoded. :class:`ColumnScope` is what travels
(column names and value-set names only, never a value); :class:`ScopedIndex` is built from it and
the values where the files are decoded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa

from piitracer.verify.values import ValueIndex

WHOLE_VALUES = "whole values"
INSIDE_TEXT = "inside text"


@dataclass(frozen=True)
class ColumnScope:
    """The identifier columns of one dataset (lower-case top-level names) and the value sets each
    is searched for, whole values only; every column not listed gets the full search."""

    whole: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.whole)

    def as_dict(self) -> dict[str, tuple[str, ...]]:
        return dict(self.whole)


def column_scope(dataset: str, identifiers: Iterable[str], confirmed: bool, searched: Iterable[str],
                 column_forms: Mapping[str, Iterable[str]] | None = None, key_column: str | None = None,
                 key_sets: Iterable[str] = ()) -> ColumnScope:
    """The scope of one dataset (module docstring): ``identifiers`` are its catalogued identifier
    columns (``confirmed``: by a person), ``searched`` the value-set names searched in it,
    ``column_forms`` the lineage's column -> value sets, ``key_column`` the plan's key column and
    ``key_sets`` the value sets its steps match on."""
    searched = set(searched)
    forms = {column.lower(): set(names) for column, names in (column_forms or {}).items()}
    columns = {c.lower() for c in identifiers} if confirmed else set()
    key = key_column.lower() if key_column else None
    if key:
        columns.add(key)
    whole = []
    for column in sorted(columns):
        sets = {f"{dataset}.{column}"} | forms.get(column, set())
        if column == key:
            sets |= set(key_sets)
        sets &= searched
        if sets:
            whole.append((column, tuple(sorted(sets))))
    return ColumnScope(tuple(whole))


@dataclass
class ScopedIndex:
    """Where the files are decoded: the dataset's index (every value set, whole and inside text)
    and one whole-values index per identifier column of ``scope``."""

    index: ValueIndex
    scope: ColumnScope = field(default_factory=ColumnScope)
    columns: dict[str, ValueIndex] = field(default_factory=dict)

    @classmethod
    def build(cls, value_sets: Mapping[str, Sequence[Any]], names: Sequence[str],
              scope: ColumnScope | None = None) -> "ScopedIndex":
        """``names``: the value sets searched in the dataset; ``scope``: its identifier columns."""
        scope = scope or ColumnScope()
        index = ValueIndex.build({name: value_sets.get(name, []) for name in names})
        columns = {column: ValueIndex.build({name: value_sets.get(name, []) for name in sets}, inside_text=False)
                   for column, sets in scope.whole}
        return cls(index, scope, columns)

    def for_schema(self, schema: pa.Schema) -> dict[str, ValueIndex]:
        """Top-level column name (as the file spells it) -> the index it is searched with, for the
        identifier columns of this file's schema; every other column uses :attr:`index`."""
        if not self.columns:
            return {}
        lower = [f.name.lower() for f in schema]
        chosen = {}
        for f in schema:
            name = f.name.lower()
            kind = f.type.value_type if pa.types.is_dictionary(f.type) else f.type
            if name in self.columns and lower.count(name) == 1 and not pa.types.is_nested(kind):
                chosen[f.name] = self.columns[name]
        return chosen


def search_notes(scope: ColumnScope, columns: Iterable[str] = ()) -> list[tuple[str, str, tuple[str, ...]]]:
    """(column, search, value sets) for the report: every identifier column of ``scope`` (whole
    values of its sets), every other catalogued column of ``columns`` (inside text), then ``*``:
    every other column (inside text). Value-set names only."""
    whole = scope.as_dict()
    notes = [(column, WHOLE_VALUES, sets) for column, sets in sorted(whole.items())]
    notes += [(column, INSIDE_TEXT, ()) for column in sorted({c.lower() for c in columns} - set(whole))]
    notes.append(("*", INSIDE_TEXT, ()))
    return notes
