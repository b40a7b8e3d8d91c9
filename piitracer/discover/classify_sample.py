"""The values ``catalog classify`` validates: a sample that holds on real tables, never shown or kept.

The format's own reader gives the first rows (current rows only: deletes applied). A table is seldom
uniform — the first file is one day, one region, one source — so when the table has more rows than
that, the sample is instead read across the table's current data files (up to ``MAX_FILES`` spread
over the list) and across each file's row groups (evenly spaced rows of up to ``GROUPS_PER_FILE``
spread row groups). Those are read from the Parquet files as written (an Iceberg or Delta row
deleted but not yet rewritten may be among them: it is classified like any other; nothing is
kept). A column with fewer than ``min_values`` non-null values gets a second, ten times wider
spread (at most ``SPARSE_ROWS`` rows); one that still falls short is reported too sparse to judge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_FILES = 8
GROUPS_PER_FILE = 2
SPARSE_ROWS = 5000  # rows read at most for a table with a sparse column


def _non_null(column: list) -> int:
    return sum(1 for value in column if value is not None)


@dataclass
class Sample:
    """Sampled values per column (lower-case name) and how many rows they came from."""

    values: dict[str, list[Any]]
    rows: int
    files: int = 0  # data files read beyond the format reader's first rows
    names: dict[str, str] = field(default_factory=dict)  # lower case -> the name as the table writes it


def _spread(items: list, count: int) -> list:
    """``count`` items evenly spread over ``items`` (first and last included), in order."""
    if len(items) <= count:
        return list(items)
    if count == 1:
        return [items[0]]
    step = (len(items) - 1) / (count - 1)
    return [items[round(i * step)] for i in range(count)]


def sample_table(table, store, rows: int, min_values: int) -> Sample | None:
    """About ``rows`` rows of a discovered table (at least ``min_values``): the format reader's
    first rows when that is the whole table, else rows spread over its files and row groups. None
    when the table has no rows to read."""
    from piitracer.discover.lakehouse import sample_rows

    first = sample_rows(table, store, rows)
    if first is None:
        return None
    values = {name.lower(): first.column(name).to_pylist() for name in first.column_names}
    names = {name.lower(): name for name in first.column_names}
    if first.num_rows < rows:
        return Sample(values, first.num_rows, names=names)  # the whole table: nothing more to spread over
    spread = _spread_rows(table, store, max(rows, min_values), set(values))
    if spread is None or spread.rows == 0:
        return Sample(values, first.num_rows, names=names)
    if any(_non_null(column) < min_values for column in spread.values.values()):
        # A sparse column: once more with ten times the rows (bounded), to reach min_values if the
        # table has them; what still falls short is reported too sparse to judge.
        wider = _spread_rows(table, store, min(10 * max(rows, min_values), SPARSE_ROWS), set(values))
        if wider is not None and wider.rows > spread.rows:
            spread = wider
    spread.names = names
    # The spread replaces the first rows (no row counted twice); a column no file had (renamed in
    # the table's schema since) keeps the reader's values.
    for name, column in values.items():
        spread.values.setdefault(name, column)
    return spread


def _spread_rows(table, store, rows: int, wanted: set[str]) -> Sample | None:
    import pyarrow.parquet as pq

    from piitracer.formats import support_for

    try:
        live = sorted(p for p in support_for(table.format).files(table.location, store).live if p.endswith(".parquet"))
    except Exception:  # a table whose file list cannot be read keeps its first rows
        return
    chosen = _spread(live, MAX_FILES)
    if not chosen:
        return None
    sample = Sample({}, 0)
    per_file = max(1, rows // len(chosen))
    for path in chosen:
        try:
            with store.open_input(table.location.child(path)) as handle:
                parquet = pq.ParquetFile(handle)
                names = [n for n in parquet.schema_arrow.names if n.lower() in wanted]
                if not names or parquet.metadata.num_row_groups == 0:
                    continue  # a delete file, or a file of another schema
                groups = _spread(list(range(parquet.metadata.num_row_groups)), GROUPS_PER_FILE)
                per_group = max(1, per_file // len(groups))
                for group in groups:
                    read = parquet.read_row_group(group, columns=names)
                    picks = _spread(list(range(read.num_rows)), per_group)
                    if not picks:
                        continue
                    taken = read.take(picks)
                    for name in names:
                        sample.values.setdefault(name.lower(), []).extend(taken.column(name).to_pylist())
                    sample.rows += taken.num_rows
        except Exception:  # one unreadable file does not stop the sample
            continue
        sample.files += 1
    return sample


KEY_ROWS = 200_000  # a subject key's values read to recognise its foreign keys elsewhere


def key_values(table, store, column: str, limit: int = KEY_ROWS) -> frozenset[str]:
    """The values (as text) of a catalogued subject key column, up to ``limit`` rows: a column
    elsewhere whose sampled values are among them is a foreign key to a person. Kept in memory
    for the run only."""
    from piitracer.discover.lakehouse import sample_rows

    rows = sample_rows(table, store, limit)
    if rows is None:
        return frozenset()
    name = next((n for n in rows.column_names if n.lower() == column.lower()), None)
    return frozenset() if name is None else frozenset(str(v) for v in rows.column(name).to_pylist() if v is not None)
