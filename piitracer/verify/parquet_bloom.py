"""Parquet split-block Bloom filters, for :mod:`~piitracer.verify.parquet_proofs`: the searched
values hashed as the column stores them (xxHash64, seed 0, of their plain encoding), and whether a
chunk's filter may hold any of them (parquet-format BloomFilter.md)."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pyarrow as pa

from piitracer.verify.parquet_pages import CountingFile
from piitracer.verify.parquet_thrift import read_struct


HEADER_WINDOW = 256  # bytes read for a Bloom filter header of unknown length


SALT = (0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D, 0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31)
_SALTS = np.array(SALT, dtype=np.uint64)


def xxhash64_of(candidates: pa.Array | None, values: list[Any], physical: str, kind: pa.DataType,
            bound_format: str | None, length: int | None):
    """xxHash64 of every candidate's plain encoding (a NumPy uint64 array), or None when this
    column's values are not hashed here (floats, decimals...: decoded instead). Integers are hashed
    all at once (:func:`xxh64_fixed`); strings and bytes one by one (once per verification)."""
    if candidates is None:
        return None
    if bound_format is not None:
        lanes = np.asarray(values, dtype=np.dtype(bound_format))
        return xxh64_fixed(lanes.view(np.uint64) if lanes.dtype.itemsize == 8 else
                           lanes.view(np.uint32).astype(np.uint64), lanes.dtype.itemsize)
    if physical == "BYTE_ARRAY" and (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        found = [xxh64(v.encode("utf-8")) for v in candidates.to_pylist()]
    elif physical == "BYTE_ARRAY" and (pa.types.is_binary(kind) or pa.types.is_large_binary(kind)):
        found = [xxh64(v) for v in candidates.to_pylist()]
    elif physical == "FIXED_LEN_BYTE_ARRAY" and pa.types.is_fixed_size_binary(kind):
        found = [xxh64(v) for v in candidates.to_pylist() if len(v) == length]
    else:
        return None
    return np.array(found, dtype=np.uint64)


def bloom_may_hold(handle: CountingFile, chunk, hashes) -> bool:
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
    # Every searched value at once (BloomFilter.md, split block): its block, then the eight bits
    # its key sets in that block's eight words; a value may be there when all eight are set.
    hashes = np.asarray(hashes, dtype=np.uint64)
    if not len(hashes):
        return False
    u64 = np.uint64
    words = np.frombuffer(bitset, dtype="<u4").reshape(count // 32, 8)
    block = ((hashes >> u64(32)) * u64(count // 32)) >> u64(32)
    key = hashes & u64(0xFFFFFFFF)
    bits = ((key[:, None] * _SALTS[None, :]) & u64(0xFFFFFFFF)) >> u64(27)
    chosen = words[block.astype(np.intp)].astype(np.uint64)
    return bool(((chosen >> bits) & u64(1)).all(axis=1).any())


_P1, _P2, _P3, _P4, _P5 = (11400714785074694791, 14029467366897019727, 1609587929392839161,
                           9650029242287828579, 2870177450012600261)
_M = (1 << 64) - 1


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _M, 31) * _P1) & _M


def xxh64_fixed(lanes, width: int):
    """xxHash64 (seed 0) of many values' ``width``-byte little-endian encodings (4 or 8) at once:
    ``lanes`` holds each encoding read as an unsigned integer (NumPy uint64); the arithmetic wraps
    modulo 2**64 as the hash's does. Equal to :func:`xxh64` of each (tests/unit/verify/test_chunk_proofs.py)."""
    p1, p2, p3, p4 = (np.uint64(p) for p in (_P1, _P2, _P3, _P4))
    u64 = np.uint64

    def rotl(x, r: int):
        return (x << u64(r)) | (x >> u64(64 - r))

    with np.errstate(over="ignore"):
        h = np.full(len(lanes), (_P5 + width) & _M, dtype=np.uint64)
        if width == 8:
            h ^= rotl(lanes * p2, 31) * p1
            h = rotl(h, 27) * p1 + p4
        elif width == 4:
            h ^= lanes * p1
            h = rotl(h, 23) * p2 + p3
        else:
            raise ValueError(f"xxh64_fixed: {width}-byte values")
        h ^= h >> u64(33)
        h *= p2
        h ^= h >> u64(29)
        h *= p3
        return h ^ (h >> u64(32))


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
