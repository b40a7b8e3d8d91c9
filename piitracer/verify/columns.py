"""Typed search of one Arrow column: vectorised with ``pyarrow.compute.is_in`` (whole values) and
one RE2 pass (values inside text), never a Python loop over rows. Only the few matching distinct
values are brought back to Python, to name their value sets."""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from piitracer.verify.values import MIN_TEXT_LENGTH, ValueIndex


def leaves(name: str, column: pa.ChunkedArray | pa.Array) -> Iterator[tuple[str, pa.Array]]:
    """(dotted name, flat array) for every primitive leaf: structs, lists and maps unfolded."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    kind = array.type
    if pa.types.is_dictionary(kind):
        array = array.cast(kind.value_type)
        kind = array.type
    if pa.types.is_struct(kind):
        for number in range(kind.num_fields):
            yield from leaves(f"{name}.{kind.field(number).name}", pc.struct_field(array, [number]))
    elif pa.types.is_map(kind):
        yield from leaves(f"{name}.key", array.keys)
        yield from leaves(f"{name}.value", array.items)
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        yield from leaves(f"{name}[]", pc.list_flatten(array))
    else:
        yield name, array


def column_hits(name: str, column: pa.ChunkedArray, index: ValueIndex,
                redact: ValueIndex | None = None) -> Iterator[tuple[str, set[str]]]:
    """(where, value-set names) for one top-level column of a Parquet file: whole values, and
    values inside text unless ``index`` is of whole values only (an identifier column's,
    :mod:`~piitracer.verify.scope`). Column names are redacted with ``redact`` (the dataset's
    whole index) when given, else ``index``."""
    for leaf_name, array in leaves(name, column):
        shown = (redact or index).redact_text(leaf_name)
        exact = exact_hits(array, index)
        if exact:
            yield f"column {shown}", exact
        inside = _inside_text(array, index)
        if inside - exact:
            yield f"column {shown} (inside text)", inside - exact


def plain_type(kind: pa.DataType) -> pa.DataType:
    """``string_view`` as ``string``, ``binary_view`` as ``binary``: the same bytes in a Parquet
    file. delta-rs writes the view types (its MERGE, a table created from a schema): a column of
    one must be searched like any string or binary column, never "proven" by its type."""
    if pa.types.is_string_view(kind):
        return pa.string()
    if pa.types.is_binary_view(kind):
        return pa.binary()
    return kind


def _plain(array: pa.Array) -> pa.Array:
    kind = plain_type(array.type)
    return array if kind is array.type or kind == array.type else array.cast(kind)


def candidates_for(kind: pa.DataType, index: ValueIndex) -> pa.Array | None:
    """The values of ``index`` that can be equal to a value of this Arrow type, as that type (None:
    no value can; the whole-value search of such a column finds nothing)."""
    kind = plain_type(kind)
    try:
        if pa.types.is_integer(kind):
            info = _int_range(kind)
            values = [v for v in index.ints if info[0] <= v <= info[1]]
            return pa.array(values, type=kind) if values else None
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            values = sorted(index.strs | set(index.int_texts))
            return pa.array(values, type=kind) if values else None
        if pa.types.is_floating(kind):
            return pa.array(sorted(index.floats), type=pa.float64()) if index.floats else None
        if pa.types.is_decimal(kind):
            return pa.array(sorted(index.decimals), type=kind) if index.decimals else None
        if pa.types.is_date(kind):
            return pa.array(sorted(index.dates), type=kind) if index.dates else None
        if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind):
            values = sorted(index.bytes_values | {s.encode() for s in index.strs})
            return pa.array(values, type=pa.binary()) if values else None
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return None
    return None  # booleans, times, nulls: never identifiers


def _int_range(kind: pa.DataType) -> tuple[int, int]:
    bits = kind.bit_width
    if pa.types.is_unsigned_integer(kind):
        return 0, 2**bits - 1
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def matching_target(array: pa.Array, index: ValueIndex) -> tuple[pa.Array, pa.Array] | None:
    """(``array`` as the searched values' type, the mask of its elements equal to one of them), or
    None when no element is; one ``is_in`` over the array."""
    array = _plain(array)
    candidates = candidates_for(array.type, index)
    if candidates is None or len(array) == 0:
        return None
    target = array
    if pa.types.is_floating(array.type):
        target = array.cast(pa.float64())
    elif pa.types.is_fixed_size_binary(array.type) or pa.types.is_large_binary(array.type):
        target = array.cast(pa.binary())
    mask = pc.fill_null(pc.is_in(target, value_set=candidates), False)
    if not pc.any(mask).as_py():
        return None
    return target, mask


def exact_hits(array: pa.Array, index: ValueIndex) -> set[str]:
    """Value sets with a value equal (typed) to some element of ``array``; vectorised."""
    found = matching_target(array, index)
    if found is None:
        return set()
    target, mask = found
    names: set[str] = set()
    for value in pc.unique(pc.filter(target, mask)).to_pylist():
        if isinstance(value, bytes) and not index.match(value):
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError:
                pass
        names |= index.match(value)
    return names


def _inside_text(array: pa.Array, index: ValueIndex) -> set[str]:
    array = _plain(array)
    if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)) or len(array) == 0:
        return set()
    pattern = index.re2_pattern()
    if pattern is None:
        return set()
    mask = pc.match_substring_regex(array, pattern)
    if not pc.any(mask).as_py():
        return set()
    names: set[str] = set()
    for value in pc.unique(pc.filter(array, mask)).to_pylist():
        names |= index.search_text(value)  # the exact (Python) rule decides
    return names


__all__ = ["candidates_for", "column_hits", "exact_hits", "leaves", "matching_target", "MIN_TEXT_LENGTH"]
