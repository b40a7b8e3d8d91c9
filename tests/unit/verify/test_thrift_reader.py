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
        _fails_only_with_thrift_error(read_struct, [bytes(broken)])


def _fails_only_with_thrift_error(read, samples: list[bytes]) -> None:
    """``read`` of each corrupted or cut sample returns or raises ThriftError, nothing else."""
    for sample in samples:
        try:
            read(sample)
        except ThriftError:
            pass


def _project(value, select):
    """What ``read_selected`` must return: the full read, only the selected fields."""
    out = {}
    for field_id, wanted in select.items():
        if field_id not in value:
            continue
        item = value[field_id]
        if wanted is True or not isinstance(item, (dict, list)):
            out[field_id] = item
        elif isinstance(item, dict):
            out[field_id] = _project(item, wanted)
        else:
            out[field_id] = [_project(element, wanted) for element in item]
    return out


def _random_select(rng: random.Random, value: dict) -> dict:
    select = {}
    for field_id, item in value.items():
        if rng.random() < 0.5:
            continue
        select[field_id] = _random_select(rng, item) if isinstance(item, dict) and rng.random() < 0.5 else True
    select[rng.randrange(1, 400)] = True  # a field that may be absent
    return select


@pytest.mark.parametrize("seed", range(5))
def test_read_selected_is_the_full_read_projected_and_fails_only_with_thrift_error(seed: int) -> None:
    from piitracer.verify.parquet_thrift import read_selected

    rng = random.Random(seed)
    for _ in range(200):
        fields, _ = random_fields(rng)
        data = write_struct(fields)
        full, end = read_struct(data)
        select = _random_select(rng, full)
        assert read_selected(data, select) == (_project(full, select), end)
        broken = bytearray(data)
        for _ in range(rng.randrange(1, 4)):
            broken[rng.randrange(len(broken))] = rng.randrange(256)
        _fails_only_with_thrift_error(lambda sample: read_selected(sample, select),
                                      [bytes(broken), data[: rng.randrange(len(data))]])


def test_the_footer_fields_the_proofs_read_are_those_of_the_full_parse(tmp_path) -> None:
    """Real footers (pyarrow: several row groups, statistics, a page index, Bloom filters,
    dictionaries, nested and key-value metadata): the selective parse the proofs use equals the
    full parse restricted to its fields."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from piitracer.verify.parquet_pages import FOOTER_FIELDS, parse_footer

    rng = random.Random(7)
    n = 3000
    table = pa.table({"id": pa.array(range(n), pa.int64()), "name": [f"name {rng.randrange(500)}" for _ in range(n)],
                      "tags": [[f"t{rng.randrange(9)}"] * rng.randrange(3) for _ in range(n)],
                      "amount": [rng.random() for _ in range(n)], "blob": [bytes([rng.randrange(256)]) * 20 for _ in range(n)]},
                     metadata={"owner": "x" * 300})
    checked = 0
    for options in ({}, {"write_page_index": True}, {"bloom_filter_options": {"name": {"ndv": 500}}},
                    {"use_dictionary": False, "write_statistics": ["id"]}, {"compression": "zstd", "write_page_index": True}):
        path = tmp_path / f"f{checked}.parquet"
        try:
            pq.write_table(table, path, row_group_size=700, **options)
        except TypeError:  # an option this pyarrow does not have
            continue
        data = path.read_bytes()
        length = int.from_bytes(data[-8:-4], "little")
        footer = data[-8 - length:-8]
        assert parse_footer(footer) == _project(read_struct(footer)[0], FOOTER_FIELDS)
        assert len(parse_footer(footer)[4]) == 5  # five row groups, each seen
        checked += 1
    assert checked >= 4
