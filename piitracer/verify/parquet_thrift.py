"""Thrift compact protocol, just enough of it to read Parquet's page headers, Bloom filter headers,
page indexes and footer, and to write the two structs of a one-page Parquet file
(:func:`piitracer.verify.parquet_pages.decode_dictionary`).

A struct is read generically as ``{field id: value}`` (lists as Python lists, binaries as bytes,
nested structs as dicts): the reader needs no schema, and the caller picks the field ids the
Parquet spec (parquet.thrift) gives. Any malformed input raises :class:`ThriftError`; a caller
that cannot read a header never proves anything from it.
"""

from __future__ import annotations

import struct
from typing import Any

# Compact protocol type codes.
STOP, TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(13)


class ThriftError(ValueError):
    """Bytes that are not a well-formed compact-protocol struct (or run past the buffer)."""


def read_struct(data: bytes | memoryview, pos: int = 0) -> tuple[dict[int, Any], int]:
    """The struct at ``pos`` and the position just after it, read by plain functions over the bytes
    (a footer is tens of thousands of fields: a method call per byte was most of a small file's
    proof)."""
    data = bytes(data) if isinstance(data, memoryview) else data
    try:
        return _struct(data, pos)
    except IndexError:
        raise ThriftError("truncated") from None
    except RecursionError:
        raise ThriftError("nested too deep") from None


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    byte = data[pos]
    if byte < 0x80:
        return byte, pos + 1
    result, shift = byte & 0x7F, 7
    while True:
        pos += 1
        byte = data[pos]
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos + 1
        shift += 7
        if shift > 70:
            raise ThriftError("varint too long")


def _struct(data: bytes, pos: int) -> tuple[dict[int, Any], int]:
    fields: dict[int, Any] = {}
    last = 0
    while True:
        header = data[pos]
        pos += 1
        kind = header & 0x0F
        if kind == STOP:
            return fields, pos
        if header >> 4:
            last += header >> 4
        else:
            last, pos = _read_varint(data, pos)
            last = (last >> 1) ^ -(last & 1)
        fields[last], pos = _value(data, pos, kind)


def _value(data: bytes, pos: int, kind: int) -> tuple[Any, int]:
    if kind in (I16, I32, I64):
        value, pos = _read_varint(data, pos)
        return (value >> 1) ^ -(value & 1), pos
    if kind == BINARY:
        size, pos = _read_varint(data, pos)
        end = pos + size
        if end > len(data):
            raise ThriftError("truncated binary")
        return data[pos:end], end
    if kind == STRUCT:
        return _struct(data, pos)
    if kind == TRUE:
        return True, pos
    if kind == FALSE:
        return False, pos
    if kind in (LIST, SET):
        header = data[pos]
        pos += 1
        size = header >> 4
        if size == 15:
            size, pos = _read_varint(data, pos)
        element = header & 0x0F
        items = []
        if element in (TRUE, FALSE):  # booleans in a container: one byte each, 1 is true
            if pos + size > len(data):
                raise ThriftError("truncated list")
            return [b == TRUE for b in data[pos:pos + size]], pos + size
        for _ in range(size):
            item, pos = _value(data, pos, element)
            items.append(item)
        return items, pos
    if kind == BYTE:
        return struct.unpack("b", bytes([data[pos]]))[0], pos + 1
    if kind == DOUBLE:
        if pos + 8 > len(data):
            raise ThriftError("truncated double")
        return struct.unpack_from("<d", data, pos)[0], pos + 8
    if kind == MAP:
        size, pos = _read_varint(data, pos)
        if not size:
            return {}, pos
        types = data[pos]
        pos += 1
        found = {}
        for _ in range(size):
            key, pos = _value(data, pos, types >> 4)
            found[key], pos = _value(data, pos, types & 0x0F)
        return found, pos
    raise ThriftError(f"unknown compact type {kind}")


# ---- reading only some fields ---------------------------------------------------------------------

def read_selected(data: bytes | memoryview, select: dict[int, Any], pos: int = 0) -> tuple[dict[int, Any], int]:
    """The struct at ``pos`` with only the fields ``select`` names: ``{field id: True}`` reads a
    field whole, ``{field id: {...}}`` reads a struct field (or each struct of a list field) with
    that selection; every other field is skipped without building its value. The same values as
    :func:`read_struct` where selected (a footer's schema and per-column lists are most of its
    fields, and the proofs read a few of them)."""
    data = bytes(data) if isinstance(data, memoryview) else data
    try:
        return _struct_selected(data, pos, select)
    except IndexError:
        raise ThriftError("truncated") from None
    except RecursionError:
        raise ThriftError("nested too deep") from None


def _struct_selected(data: bytes, pos: int, select: dict[int, Any]) -> tuple[dict[int, Any], int]:
    # The field-header framing is _struct's, written out again on purpose: a shared helper would
    # cost a call per field, and a footer is thousands of fields per small file.
    fields: dict[int, Any] = {}
    last = 0
    while True:
        header = data[pos]
        pos += 1
        kind = header & 0x0F
        if kind == STOP:
            return fields, pos
        if header >> 4:
            last += header >> 4
        else:
            last, pos = _read_varint(data, pos)
            last = (last >> 1) ^ -(last & 1)
        wanted = select.get(last)
        if wanted is None:
            if I16 <= kind <= I64 and data[pos] < 0x80:
                pos += 1  # a one-byte integer (most of a column's metadata), without a call
            elif kind == TRUE or kind == FALSE:
                pass
            else:
                pos = _skip_fields(data, pos) if kind == STRUCT else _skip(data, pos, kind)
        elif wanted is True or kind not in (STRUCT, LIST, SET):
            fields[last], pos = _value(data, pos, kind)
        elif kind == STRUCT:
            fields[last], pos = _struct_selected(data, pos, wanted)
        else:
            header = data[pos]
            pos += 1
            size = header >> 4
            if size == 15:
                size, pos = _read_varint(data, pos)
            element = header & 0x0F
            if element != STRUCT:
                raise ThriftError("a selection inside a list of non-structs")
            items = []
            for _ in range(size):
                item, pos = _struct_selected(data, pos, wanted)
                items.append(item)
            fields[last] = items


def _skip_varint(data: bytes, pos: int) -> int:
    start = pos
    while data[pos] & 0x80:
        pos += 1
        if pos - start > 10:
            raise ThriftError("varint too long")
    return pos + 1


def _skip_fields(data: bytes, pos: int) -> int:
    """The position after a struct's fields (up to and with its STOP) at ``pos``, nothing built.
    The kinds a footer is mostly made of (integers, binaries, booleans) are skipped in this loop
    without a call each: skipping the footer's schema and column metadata was most of its parse."""
    size = len(data)
    while True:
        header = data[pos]
        pos += 1
        kind = header & 0x0F
        if kind == STOP:
            return pos
        if header < 0x10:  # a long-form field id: its zigzag varint follows
            pos = _skip_varint(data, pos)
        if I16 <= kind <= I64:
            start = pos
            while data[pos] >= 0x80:
                pos += 1
            pos += 1
            if pos - start > 11:
                raise ThriftError("varint too long")
        elif kind == BINARY:
            length = data[pos]
            if length < 0x80:
                pos += 1
            else:
                length, pos = _read_varint(data, pos)
            pos += length
            if pos > size:
                raise ThriftError("truncated binary")
        elif kind != TRUE and kind != FALSE:
            pos = _skip(data, pos, kind)


def _skip(data: bytes, pos: int, kind: int) -> int:
    """The position after a value of compact type ``kind`` at ``pos``, nothing built."""
    if kind in (I16, I32, I64):
        return _skip_varint(data, pos)
    if kind == BINARY:
        size, pos = _read_varint(data, pos)
        if pos + size > len(data):
            raise ThriftError("truncated binary")
        return pos + size
    if kind == STRUCT:
        return _skip_fields(data, pos)
    if kind in (TRUE, FALSE):
        return pos
    if kind in (LIST, SET):
        header = data[pos]
        pos += 1
        size = header >> 4
        if size == 15:
            size, pos = _read_varint(data, pos)
        element = header & 0x0F
        if element in (TRUE, FALSE):
            if pos + size > len(data):
                raise ThriftError("truncated list")
            return pos + size
        if element == STRUCT:
            for _ in range(size):
                pos = _skip_fields(data, pos)
        elif I16 <= element <= I64:
            for _ in range(size):
                pos = _skip_varint(data, pos)
        else:
            for _ in range(size):
                pos = _skip(data, pos, element)
        return pos
    if kind == BYTE:
        return pos + 1
    if kind == DOUBLE:
        if pos + 8 > len(data):
            raise ThriftError("truncated double")
        return pos + 8
    if kind == MAP:
        size, pos = _read_varint(data, pos)
        if not size:
            return pos
        types = data[pos]
        pos += 1
        for _ in range(size):
            pos = _skip(data, _skip(data, pos, types >> 4), types & 0x0F)
        return pos
    raise ThriftError(f"unknown compact type {kind}")


# ---- writing ------------------------------------------------------------------------------------

def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        if value < 0x80:
            out.append(value)
            return bytes(out)
        out.append((value & 0x7F) | 0x80)
        value >>= 7


def _zigzag(value: int) -> bytes:
    return _varint((value << 1) ^ (value >> 63))


def write_struct(fields: list[tuple[int, int, Any]]) -> bytes:
    """A struct from ``(field id, compact type, value)`` in increasing field id order; a list's
    value is ``(element type, items)``, a struct's value is its own field list."""
    out = bytearray()
    last = 0
    for field_id, kind, value in fields:
        delta = field_id - last
        out += bytes([(delta << 4) | kind]) if 0 < delta <= 15 else bytes([kind]) + _zigzag(field_id)
        last = field_id
        out += _write_value(kind, value)
    out.append(STOP)
    return bytes(out)


def _write_value(kind: int, value: Any) -> bytes:
    if kind in (I16, I32, I64):
        return _zigzag(int(value))
    if kind == BINARY:
        data = value.encode() if isinstance(value, str) else bytes(value)
        return _varint(len(data)) + data
    if kind == STRUCT:
        return write_struct(value)
    if kind == LIST:
        element, items = value
        header = bytes([(len(items) << 4) | element]) if len(items) < 15 else bytes([0xF0 | element]) + _varint(len(items))
        return header + b"".join(_write_value(element, item) for item in items)
    raise ThriftError(f"cannot write compact type {kind}")
