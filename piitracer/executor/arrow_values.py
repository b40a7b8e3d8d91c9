"""Subject values as a typed Arrow array, for the engines that are not Spark (delta-rs, pyarrow).

The journal keeps resolved values as JSON (ints, strings...). Only values that are exactly of the
key column's type are kept (``resolve.exact_values``: an int may meet a string key as its decimal
text); nothing is cast leniently, so text never becomes a number and a fraction never an id.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from piitracer.executor.resolve import exact_values
from piitracer.formats import key_type_name
from piitracer.model.key_values import parse_key_type

SUBJECT_COLUMN = "__piitracer_subject"


def typed_values(values: list[Any], arrow_type: pa.DataType) -> pa.Array:
    """Distinct ``values`` that are exactly values of ``arrow_type``, as an array of that type."""
    name = key_type_name(arrow_type)
    kept = exact_values(values, parse_key_type(name) if name else None)
    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    if getattr(pa.types, "is_string_view", lambda t: False)(arrow_type):
        return pa.array(kept, type=pa.string()).cast(arrow_type)
    return pa.array(kept, type=arrow_type)
