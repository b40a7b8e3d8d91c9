"""The guard on one Arrow batch (issue 52): the rows whose guarded identifiers hash onto the
suppression list, dropped before the job writes them or only counted.

A row matches when any guarded column's value is on the list: an erased person's row is caught by
whichever identifier the batch has (the user id in one table, only the PAN in another).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, Union

import numpy as np
import pyarrow as pa

from piitracer.guard.suppression_list import SuppressionList

DROP, REPORT = "drop", "report"
MODES = (DROP, REPORT)
Batch = Union[pa.RecordBatch, pa.Table]


@dataclass(frozen=True)
class GuardResult:
    """What the guard did to one batch.

    Attributes:
        batch: the batch without the matched rows (``"drop"``), or unchanged (``"report"``).
        rows_matched: rows with at least one guarded value on the list.
        matches_by_column: each guarded column (as the schema spells it) and how many of its values
            are on the list, sorted by column; a row matching in two columns counts in both.
    """

    batch: Batch
    rows_matched: int
    matches_by_column: dict[str, int]


def check_mode(mode: str) -> str:
    """``mode`` if it is ``"drop"`` or ``"report"``.

    Raises:
        ValueError: any other mode.
    """
    if mode not in MODES:
        raise ValueError(f"the guard's mode is 'drop' or 'report', not {mode!r}")
    return mode


def resolve_columns(names: Sequence[str], columns: Sequence[str] | str) -> list[str]:
    """The schema's spelling of each guarded column, matched case-insensitively (an exact match first).

    Args:
        names: the columns the batch or DataFrame has.
        columns: the columns to guard (one name alone is one column).

    Raises:
        ValueError: no column is named, or a named column is absent or ambiguous.
    """
    wanted = [columns] if isinstance(columns, str) else list(columns)
    if not wanted:
        raise ValueError("name at least one column to guard")
    resolved = []
    for name in wanted:
        if name in names:
            resolved.append(name)
            continue
        folded = [have for have in names if have.casefold() == name.casefold()]
        if len(folded) != 1:
            what = "no column" if not folded else f"{len(folded)} columns ({', '.join(folded)}) for"
            raise ValueError(f"the data has {what} {name!r} to guard (columns: {', '.join(names)})")
        resolved.append(folded[0])
    return list(dict.fromkeys(resolved))  # a column named twice is guarded once


def guard_batch(batch: Batch, suppression: SuppressionList, columns: Sequence[str], *, mode: str = DROP) -> GuardResult:
    """Drop (or only count) the rows of ``batch`` whose guarded values are on the suppression list.

    Args:
        batch: a record batch or a table.
        suppression: the suppression list (its key hashes the batch's values).
        columns: the identifier columns to check, matched case-insensitively.
        mode: ``"drop"`` (the result's batch lacks the matched rows) or ``"report"`` (unchanged).

    Returns:
        The batch to write and what was matched.

    Raises:
        ValueError: a column is absent, or the mode is neither ``"drop"`` nor ``"report"``.
    """
    check_mode(mode)
    names = resolve_columns(batch.schema.names, columns)
    matched = np.zeros(batch.num_rows, dtype=bool)
    by_column = {}
    for name in names:
        flags = suppression.matches(batch.column(name)).to_numpy(zero_copy_only=False)
        by_column[name] = int(flags.sum())
        matched |= flags
    rows = int(matched.sum())
    if mode == DROP and rows:
        batch = batch.filter(pa.array(~matched))
    return GuardResult(batch, rows, dict(sorted(by_column.items())))

