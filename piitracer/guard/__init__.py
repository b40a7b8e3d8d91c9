"""The pipeline guard (issue 52): a job drops, or only reports, the rows whose identifiers hash onto
the suppression list of erased people, before it writes them, so that a backfill or a replay from
an old source does not bring an erased person back.

- :mod:`piitracer.guard.hashing`: the keyed hash an erased identifier is remembered by, and the
  canonical text it is made from (the id 8841302 and the text "8841302" are one value).
- :mod:`piitracer.guard.suppression_list`: :class:`SuppressionList`, the sorted keyed hashes and
  their key, membership of a whole Arrow column (each distinct value hashed once), the small 0600
  file the list travels in.
- :mod:`piitracer.guard.arrow`: :func:`guard_batch`, one record batch or table guarded: matched rows
  dropped or counted, per column.
- :mod:`piitracer.guard.spark`: :func:`guard_dataframe`, the same over a Spark DataFrame through
  ``mapInArrow``, the list broadcast and the matched rows counted in an accumulator.

The room imports nothing of piitracer above ``piitracer.model`` and the storage layer's private-file
writer, so a pipeline job imports it with no piitracer workspace; importing it does not import ``pyspark`` (the Spark names load on first use).
"""

from __future__ import annotations

from typing import Any

from piitracer.guard.arrow import GuardResult, guard_batch
from piitracer.guard.hashing import canonical_text, number_hash, suppression_hash
from piitracer.guard.suppression_list import SuppressionList

__all__ = ["GuardResult", "GuardedFrame", "SuppressionList", "canonical_text", "guard_batch", "guard_dataframe",
           "number_hash", "suppression_hash"]

_SPARK_NAMES = {"guard_dataframe", "GuardedFrame"}


def __getattr__(name: str) -> Any:
    # The Spark helpers load on first use: a job on another Arrow engine never needs their module.
    if name in _SPARK_NAMES:
        from piitracer.guard import spark

        return getattr(spark, name)
    raise AttributeError(f"module 'piitracer.guard' has no attribute {name!r}")
