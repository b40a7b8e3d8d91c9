"""The compact-protocol reader (verify/parquet_thrift.py) reads back what its writer writes, and every
truncated or corrupted input either reads as some struct or raises ThriftError, never another error
(a caller that cannot read a header proves nothing from it)."""

from __future__ import annotations

import random

import pytest

from piitracer.verify.parquet_thrift import BINARY, I32, I64, LIST, STRUCT, ThriftError, read_struct, write_struct


def random_fields(rng: random.Random, depth: int = 0) -> tuple[list, dict]:
    fields, expected, field_id = [], {}, 0
    for _ in range(rng.randrange(1, 6)):
        field_id += rng.choice([1, 2, 15, 16, 300])
        kind = rng.choice([I32, I64, BINARY, LIST] + ([STRUCT] if depth < 3 else []))
        if kind in (I32, I64):
            value = rng.randrange(-2**31, 2**31) if kind == I32 else rng.randrange(-2**63, 2**63)
            fields.append((field_id, kind, value))
            expected[field_id] = value
        elif kind == BINARY:
            value = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40)))
            fields.append((field_id, kind, value))
            expected[field_id] = value
        elif kind == LIST:
            items = [rng.randrange(-1000, 1000) for _ in range(rng.choice([0, 3, 14, 15, 40]))]
            fields.append((field_id, kind, (I64, items)))
            expected[field_id] = items
        else:
            inner, value = random_fields(rng, depth + 1)
            fields.append((field_id, kind, inner))
            expected[field_id] = value
    return fields, expected


@pytest.mark.parametrize("seed", range(5))
def test_read_struct_reads_what_write_struct_wrote_and_fails_only_with_thrift_error(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(200):
        fields, expected = random_fields(rng)
        data = write_struct(fields)
        assert read_struct(data + b"tail") == (expected, len(data))
        broken = bytearray(data[:rng.randrange(len(data))])
        if broken and rng.random() < 0.5:
            broken[rng.randrange(len(broken))] = rng.randrange(256)
        try:
            read_struct(bytes(broken))
        except ThriftError:
            pass
