"""Subject values as a typed Arrow array, for the engines that are not Spark (delta-rs, pyarrow).

The journal keeps resolved values as JSON (ints, strings...). Each is cast on its own to the key
column's Arrow type, so one value that does not cast (text in a BIGINT key) matches nothing instead
of failing the whole batch — the same rule the Spark path applies.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

SUBJECT_COLUMN = "__piitracer_subject"


def typed_values(values: list[Any], arrow_type: pa.DataType) -> pa.Array:
    """Distinct ``values`` cast to ``arrow_type``; values that do not cast are dropped."""
    kept: list[Any] = []
    for value in values:
        if value is None:
            continue
        source = pa.array([value]) if not isinstance(value, str) else pa.array([value], pa.string())
        try:
            cast = source.cast(arrow_type, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            continue
        if cast[0].is_valid:
            kept.append(cast[0].as_py())
    unique = sorted(set(kept), key=repr)
    return pa.array(unique, type=arrow_type)
