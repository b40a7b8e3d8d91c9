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


class Reader:
    """Reads compact-protocol values from ``data`` starting at ``pos``."""

    def __init__(self, data: bytes | memoryview, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise ThriftError("truncated")
        value = self.data[self.pos]
        self.pos += 1
        return value

    def varint(self) -> int:
        shift = result = 0
        while True:
            byte = self.byte()
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7
            if shift > 70:
                raise ThriftError("varint too long")

    def zigzag(self) -> int:
        value = self.varint()
        return (value >> 1) ^ -(value & 1)

    def binary(self) -> bytes:
        size = self.varint()
        end = self.pos + size
        if end > len(self.data):
            raise ThriftError("truncated binary")
        value = bytes(self.data[self.pos:end])
        self.pos = end
        return value

    def value(self, kind: int) -> Any:
        if kind == TRUE:
            return True
        if kind == FALSE:
            return False
        if kind == BYTE:
            return struct.unpack("b", bytes([self.byte()]))[0]
        if kind in (I16, I32, I64):
            return self.zigzag()
        if kind == DOUBLE:
            if self.pos + 8 > len(self.data):
                raise ThriftError("truncated double")
            value = struct.unpack_from("<d", self.data, self.pos)[0]
            self.pos += 8
            return value
        if kind == BINARY:
            return self.binary()
        if kind in (LIST, SET):
            header = self.byte()
            size = header >> 4
            if size == 15:
                size = self.varint()
            element = header & 0x0F
            if element in (TRUE, FALSE):  # booleans in a container: one byte each, 1 is true
                return [self.byte() == TRUE for _ in range(size)]
            return [self.value(element) for _ in range(size)]
        if kind == MAP:
            size = self.varint()
            if not size:
                return {}
            types = self.byte()
            return {self.value(types >> 4): self.value(types & 0x0F) for _ in range(size)}
        if kind == STRUCT:
            return self.struct()
        raise ThriftError(f"unknown compact type {kind}")

    def struct(self) -> dict[int, Any]:
        fields: dict[int, Any] = {}
        last = 0
        while True:
            header = self.byte()
            kind = header & 0x0F
            if kind == STOP:
                return fields
            delta = header >> 4
            last = last + delta if delta else self.zigzag()
            fields[last] = self.value(kind)


def read_struct(data: bytes | memoryview, pos: int = 0) -> tuple[dict[int, Any], int]:
    """The struct at ``pos`` and the position just after it."""
    reader = Reader(data, pos)
    return reader.struct(), reader.pos


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
