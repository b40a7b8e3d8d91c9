"""The guard in a Spark job (issue 52): :func:`~piitracer.guard.arrow.guard_batch` on every Arrow
batch of a DataFrame, through ``DataFrame.mapInArrow``, before the job writes it.

The suppression list is broadcast once (each executor unpickles it once, not once per task) and
the matched rows are counted in an accumulator the driver reads after the write. ``pyspark`` is
imported only inside :func:`guard_dataframe`: the partition function needs nothing but pyarrow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import pyarrow as pa

from piitracer.guard.arrow import DROP, check_mode, guard_batch, resolve_columns
from piitracer.guard.suppression_list import SuppressionList

Batches = Iterator[pa.RecordBatch]


@dataclass(frozen=True)
class GuardedFrame:
    """A guarded DataFrame and the count of the rows it matched.

    Attributes:
        frame: the DataFrame to write (lazy: nothing is guarded until an action runs).
        matched: a Spark accumulator of the rows matched, read with ``matched.value`` on the driver
            after the action. Every evaluation of ``frame`` adds to it (a second action, a retried
            or speculative task, a cache rebuilt): after one write, it is that write's count.
    """

    frame: Any
    matched: Any


def guard_partitions(suppression: Any, columns: Sequence[str], mode: str = DROP,
                     matched: Any = None) -> Callable[[Batches], Batches]:
    """A ``mapInArrow`` function that guards every batch of a partition.

    Args:
        suppression: the :class:`SuppressionList`, or a Spark broadcast of one.
        columns: the guarded columns, as the batches' schema spells them.
        mode: ``"drop"`` or ``"report"``.
        matched: an accumulator the matched rows are added to (None: not counted).

    Returns:
        A function from an iterator of batches to an iterator of guarded batches.
    """
    check_mode(mode)
    names = list(columns)

    def guard(batches: Batches) -> Batches:
        """One task's batches, guarded (the broadcast list read once for the task)."""
        current = suppression if isinstance(suppression, SuppressionList) else suppression.value
        for batch in batches:
            result = guard_batch(batch, current, names, mode=mode)
            if matched is not None and result.rows_matched:
                matched.add(result.rows_matched)
            yield result.batch

    return guard


def guard_dataframe(df: Any, suppression: SuppressionList, columns: Sequence[str], *,
                    mode: str = DROP) -> GuardedFrame:
    """``df`` without (or, in ``"report"`` mode, with) the rows whose guarded values are on the list.

    Args:
        df: a Spark DataFrame (classic Spark: accumulators and broadcasts need a SparkContext).
        suppression: the suppression list, broadcast to the executors.
        columns: the identifier columns to check, matched case-insensitively against ``df``'s schema.
        mode: ``"drop"`` (matched rows removed) or ``"report"`` (every row kept, matches counted).

    Returns:
        The guarded DataFrame (same schema) and the accumulator of matched rows.

    Raises:
        ValueError: a column is absent or the mode unknown (checked here, on the driver, before any task runs).
    """
    check_mode(mode)
    names = resolve_columns(df.schema.fieldNames(), columns)
    context = df.sparkSession.sparkContext
    matched = context.accumulator(0)
    function = guard_partitions(context.broadcast(suppression), names, mode, matched)
    return GuardedFrame(df.mapInArrow(function, df.schema), matched)
