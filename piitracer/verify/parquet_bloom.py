"""Parquet split-block Bloom filters, for :mod:`~piitracer.verify.parquet_proofs`: the searched
values hashed as the column stores them (xxHash64, seed 0, of their plain encoding), and whether a
chunk's filter may hold any of them (parquet-format BloomFilter.md)."""

from __future__ import annotations

import struct
from typing import Any

import pyarrow as pa

from piitracer.verify.parquet_pages import CountingFile
from piitracer.verify.parquet_thrift import read_struct


HEADER_WINDOW = 256  # bytes read for a Bloom filter header of unknown length


SALT = (0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D, 0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31)


def xxhash64_of(candidates: pa.Array | None, values: list[Any], physical: str, kind: pa.DataType,
            bound_format: str | None, length: int | None) -> list[int] | None:
    """xxHash64 of every candidate's plain encoding, or None when this column's values are not
    hashed here (floats, decimals...: decoded instead)."""
    if candidates is None:
        return None
    if bound_format is not None:
        return [xxh64(struct.pack(bound_format, v)) for v in values]
    if physical == "BYTE_ARRAY" and (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        return [xxh64(v.encode("utf-8")) for v in candidates.to_pylist()]
    if physical == "BYTE_ARRAY" and (pa.types.is_binary(kind) or pa.types.is_large_binary(kind)):
        return [xxh64(v) for v in candidates.to_pylist()]
    if physical == "FIXED_LEN_BYTE_ARRAY" and pa.types.is_fixed_size_binary(kind):
        return [xxh64(v) for v in candidates.to_pylist() if len(v) == length]
    return None


def bloom_may_hold(handle: CountingFile, chunk, hashes: list[int]) -> bool:
    """Whether the chunk's split-block Bloom filter may hold any of ``hashes`` (parquet-format
    BloomFilter.md); a filter of another algorithm, hash or compression raises ValueError."""
    offset, length = chunk.bloom_filter_offset, chunk.bloom_filter_length
    data = handle.read_at(length if length else HEADER_WINDOW, offset)
    header, size = read_struct(data)
    if header.get(2) != {1: {}} or header.get(3) != {1: {}} or header.get(4) != {1: {}}:
        raise ValueError("Bloom filter of an unknown algorithm, hash or compression")
    count = header.get(1, 0)
    if count <= 0 or count % 32:
        raise ValueError("Bloom filter bitset size")
    bitset = data[size:size + count]
    if len(bitset) < count:
        bitset = handle.read_at(count, offset + size)
    if len(bitset) != count:
        raise ValueError("truncated Bloom filter")
    blocks = count // 32
    for value in hashes:
        block = ((value >> 32) * blocks) >> 32
        key = value & 0xFFFFFFFF
        words = struct.unpack_from("<8I", bitset, block * 32)
        if all((word >> (((key * salt) & 0xFFFFFFFF) >> 27)) & 1 for word, salt in zip(words, SALT)):
            return True
    return False


_P1, _P2, _P3, _P4, _P5 = (11400714785074694791, 14029467366897019727, 1609587929392839161,
                           9650029242287828579, 2870177450012600261)
_M = (1 << 64) - 1


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _M, 31) * _P1) & _M


def xxh64(data: bytes, seed: int = 0) -> int:
    """xxHash64 (the Parquet Bloom filter hash); pure Python, as only the few searched values are hashed."""
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + _P1 + _P2) & _M, (seed + _P2) & _M, seed & _M, (seed - _P1) & _M]
        while i + 32 <= n:
            v = [_round(v[k], struct.unpack_from("<Q", data, i + 8 * k)[0]) for k in range(4)]
            i += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M
        for lane in v:
            h = (((h ^ _round(0, lane)) * _P1) + _P4) & _M
    else:
        h = (seed + _P5) & _M
    h = (h + n) & _M
    while i + 8 <= n:
        h ^= _round(0, struct.unpack_from("<Q", data, i)[0])
        h = (_rotl(h, 27) * _P1 + _P4) & _M
        i += 8
    if i + 4 <= n:
        h ^= (struct.unpack_from("<I", data, i)[0] * _P1) & _M
        h = (_rotl(h, 23) * _P2 + _P3) & _M
        i += 4
    while i < n:
        h ^= (data[i] * _P5) & _M
        h = (_rotl(h, 11) * _P1) & _M
        i += 1
    h ^= h >> 33
    h = (h * _P2) & _M
    h ^= h >> 29
    h = (h * _P3) & _M
    return h ^ (h >> 32)
