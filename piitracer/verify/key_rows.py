"""Which rows of a data file hold a subject's key: what the logical check derives every retained
version from (:mod:`~piitracer.formats.history`, :mod:`~piitracer.verify.history_check`).

Read in the same pass that searches the file's bytes (:func:`~piitracer.verify.decoders.scan_one_file`),
so a data file is opened and decoded once however many versions read it: the key column's chunks
are first proven free of every searched value's whole form by the chunk rules
(:class:`~piitracer.verify.parquet_proofs.ParquetProver` with a whole-values index: statistics,
page index, Bloom filter, dictionary), and only the chunks they cannot prove are decoded — reusing
the column when the byte search decoded it already. Matching is :func:`~piitracer.verify.columns.exact_hits`'
(typed, whole values), row by row. What comes back are row positions and value-set names, never a
value: it is what a Spark task returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from piitracer.formats.history import KeyColumn
from piitracer.verify.values import ValueIndex

FIELD_ID = b"PARQUET:field_id"


@dataclass(frozen=True)
class KeyRows:
    """The rows of one data file whose key column holds a searched value: (value-set names,
    ascending row positions) per group of names; ``absent``: the file has no key column;
    ``rows``: its row count."""

    groups: tuple[tuple[tuple[str, ...], Any], ...] = ()
    absent: bool = False
    rows: int = 0

    @property
    def positions(self):
        """Every matching row position, ascending (a NumPy array)."""
        import numpy as np

        if not self.groups:
            return np.zeros(0, dtype=np.int64)
        return np.sort(np.concatenate([positions for _, positions in self.groups]))

    def names_of(self, keep) -> set[str]:
        """The value sets of the rows at the positions ``keep`` (a boolean mask over
        :attr:`positions`) that survive."""
        import numpy as np

        if not self.groups:
            return set()
        survivors = self.positions[keep]
        found: set[str] = set()
        for names, positions in self.groups:
            if np.isin(positions, survivors).any():
                found.update(names)
        return found


def key_column_name(schema, key: KeyColumn) -> str | None:
    """The top-level column of a Parquet file's Arrow schema that is the key: the one with the key's
    field id when the file's columns carry ids, else the one with its name; None: none."""
    ids = {(f.metadata or {}).get(FIELD_ID): f.name for f in schema if (f.metadata or {}).get(FIELD_ID)}
    if ids and key.field_id is not None:
        return ids.get(str(key.field_id).encode())
    return key.name if key.name in schema.names else None


def exact_positions(array, index: ValueIndex) -> list[tuple[tuple[str, ...], Any]]:
    """(value-set names, row numbers) of the elements of ``array`` equal (typed) to a searched
    value: :func:`~piitracer.verify.columns.exact_hits` by row."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from piitracer.verify.columns import matching_target

    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_dictionary(array.type):
        array = array.cast(array.type.value_type)
    found = matching_target(array, index)
    if found is None:
        return []
    target, mask = found
    rows = np.flatnonzero(mask.to_numpy(zero_copy_only=False))
    by_names: dict[tuple[str, ...], list] = {}
    values = target.take(pa.array(rows)).to_pylist()
    names_of: dict[Any, tuple[str, ...]] = {}
    for row, value in zip(rows, values):
        if value not in names_of:
            names = index.match(value)
            if isinstance(value, bytes) and not names:
                try:
                    names = index.match(value.decode("utf-8"))
                except UnicodeDecodeError:
                    pass
            names_of[value] = tuple(sorted(names))
        if names_of[value]:
            by_names.setdefault(names_of[value], []).append(row)
    return [(names, np.asarray(positions, dtype=np.int64)) for names, positions in sorted(by_names.items())]


@dataclass
class KeyRowsReader:
    """Collects one file's :class:`KeyRows`, row group by row group, as the byte search walks them:
    each key chunk is proven with the byte search's own prover (its parsed footer and decoded
    dictionaries are shared) right after the byte search proved it, while its pages are still in
    the file's read cache."""

    handle: Any  # pyarrow.parquet.ParquetFile
    name: str | None  # the key column in this file (None: it has none)
    index: ValueIndex
    whole: ValueIndex
    rows: int
    offsets: list[int] = field(default_factory=list)
    prover: Any = None  # the file's ParquetProver
    decoded: set[int] = field(default_factory=set)  # row groups whose key chunk must be decoded
    proven: set[int] = field(default_factory=set)
    found: dict[tuple[str, ...], list] = field(default_factory=dict)

    @classmethod
    def open(cls, handle, key: KeyColumn, index: ValueIndex, whole: ValueIndex) -> "KeyRowsReader":
        metadata = handle.metadata
        offsets, total = [], 0
        for group in range(metadata.num_row_groups):
            offsets.append(total)
            total += metadata.row_group(group).num_rows
        return cls(handle, key_column_name(handle.schema_arrow, key), index, whole, metadata.num_rows, offsets)

    def prove(self, group: int) -> None:
        """Whether row group ``group``'s key chunk may hold a whole searched value (else: no row)."""
        if self.name is not None and group not in self.proven:
            self.proven.add(group)
            if self.prover.prove(group, self.name, self.whole).method == "decoded":
                self.decoded.add(group)

    def add(self, group: int, part=None) -> None:
        """Row group ``group`` (``part``: its columns the byte search decoded, if any)."""
        if self.name is None:
            return
        self.prove(group)
        if group not in self.decoded:
            return
        if part is not None and self.name in part.column_names:
            column = part.column(self.name)
        else:
            column = self.handle.read_row_group(group, columns=[self.name]).column(0)
        for names, positions in exact_positions(column, self.index):
            self.found.setdefault(names, []).append(positions + self.offsets[group])

    def result(self) -> KeyRows:
        import numpy as np

        if self.name is None:
            return KeyRows(absent=True, rows=self.rows)
        return KeyRows(tuple((names, np.concatenate(parts)) for names, parts in sorted(self.found.items())), rows=self.rows)


def read_key_rows(store, location, key: KeyColumn, index: ValueIndex, whole: ValueIndex) -> KeyRows:
    """A data file's :class:`KeyRows` read on its own (a file the byte search did not decode: it
    lies outside the dataset's location, e.g. a shallow clone's source file)."""
    import pyarrow.parquet as pq

    from piitracer.verify.parquet_pages import CountingFile, read_metadata

    from piitracer.verify.parquet_proofs import ParquetProver

    with CountingFile(store.open_input(location)) as counted:
        metadata, footer = read_metadata(counted)
        handle = pq.ParquetFile(counted, metadata=metadata)
        reader = KeyRowsReader.open(handle, key, index, whole)
        reader.prover = ParquetProver(counted, metadata, handle.schema_arrow, index, footer)
        for group in range(metadata.num_row_groups):
            reader.add(group)
        return reader.result()
