"""The Avro prefilter (``ValueIndex.may_be_in_avro``, issue 43.2) skips decoding an Iceberg manifest or
manifest list only when decoding it would find nothing: checked against the full decode on the
manifests of real tables (pyiceberg writes them) that hold searched values as column bounds (the
subject is the minimum), as identity partition values (a long, a long string, a date; and with no
bounds kept, as the only form), inside paths, as truncated string bounds, and in none of these."""

from __future__ import annotations

import datetime
import random
from pathlib import Path
from typing import Callable, Iterator

import pyarrow as pa
import pytest

from piitracer.storage.locations import Location
from piitracer.storage.store import Store
from piitracer.verify.decoders import FileSource, _avro
from piitracer.verify.values import ValueIndex

LONG_TEXT = "ZZ-subject-text-that-is-longer-than-sixteen"  # its bounds are truncated to 16 characters


def table_with(folder: Path, partition: str | None, rows: list[tuple], metrics: str | None = None) -> Path:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import DateType, LongType, NestedField, StringType

    catalog = SqlCatalog("c", uri=f"sqlite:///{folder}/c.db", warehouse=f"file://{folder}/wh")
    catalog.create_namespace("ns")
    schema = Schema(NestedField(1, "user_id", LongType()), NestedField(2, "note", StringType()),
                    NestedField(3, "day", DateType()))
    ids = {"user_id": 1, "note": 2, "day": 3}
    spec = PartitionSpec(PartitionField(ids[partition], 1000, IdentityTransform(), partition)) if partition else PartitionSpec()
    properties = {"write.metadata.metrics.default": metrics} if metrics else {}
    table = catalog.create_table("ns.t", schema=schema, partition_spec=spec, properties=properties)
    arrow = pa.schema([pa.field("user_id", pa.int64()), pa.field("note", pa.string()), pa.field("day", pa.date32())])
    for chunk in (rows[: len(rows) // 2], rows[len(rows) // 2:]):
        table.append(pa.table(list(zip(*chunk)), schema=arrow))
    return Path(table.location().removeprefix("file://"))


VALUE_SETS = [
    {"u": [7_000_000_001], "t": [LONG_TEXT]},
    {"u": [42], "short": ["ab"], "day": [datetime.date(2026, 11, 1)]},
    {"f": [2.5], "u": [7_000_000_001]},
    {"none": [123456789], "text": ["nothing-like-this"]},
    {"many": list(range(9_000_000_000, 9_000_000_040)) + [7_000_000_001], "t": [LONG_TEXT]},  # one regular expression
]


@pytest.mark.parametrize("partition, metrics", [(None, None), ("user_id", None), ("note", None), ("day", None),
                                               ("user_id", "none")], ids=["none", "user_id", "note", "day", "user_id-no-bounds"])
def test_the_avro_prefilter_skips_only_files_where_decoding_finds_nothing(tmp_path: Path, partition, metrics) -> None:
    rng = random.Random(hash(partition) % 1000)
    rows = [(rng.randrange(8_000_000_000, 9_000_000_000), f"note {rng.randrange(100)}",
             datetime.date(2026, 10, rng.randrange(1, 28))) for _ in range(40)]
    rows[0] = (7_000_000_001, LONG_TEXT, datetime.date(2026, 11, 1))  # the minimums (bounds) and a partition
    rows[1] = (42, "ab", datetime.date(2026, 10, 2))
    location = table_with(tmp_path, partition, rows, metrics)  # without bounds: partition values only
    store, root = Store(), Location.parse(location)
    avro = [e.relative for e in store.list_files(root) if e.relative.endswith(".avro")]
    assert len(avro) >= 4
    skipped = found = 0
    for sets in VALUE_SETS:
        index = ValueIndex.build(sets)
        walking = ValueIndex.build(sets)
        walking.__dict__["_avro_literals"] = True  # never skip
        for relative in avro:
            source = FileSource(store, root.child(relative), relative)
            walked = sorted((w, tuple(sorted(n)), k) for w, n, k in _avro(source, walking))
            assert sorted((w, tuple(sorted(n)), k) for w, n, k in _avro(source, index)) == walked, (sets, relative)
            found += bool(walked)
            skipped += not walked and not list(_avro(FileSource(store, root.child(relative), relative), index)) \
                and not any(index.may_be_in_avro(b) for b in _blocks(source))
    assert found and skipped  # values are found in some files, and some files are skipped


def test_a_partition_value_that_is_only_a_zigzag_long_is_still_decoded(tmp_path: Path) -> None:
    """A manifest whose paths do not name the partition (rewritten here: Hive-style folders would)
    and which keeps no bounds: the subject's id is only an Avro long of the partition record."""
    rows = [(7_000_000_001, "x", datetime.date(2026, 10, 1)), (8_000_000_002, "y", datetime.date(2026, 10, 2))]
    (tmp_path / "t").mkdir()
    location = table_with(tmp_path / "t", "user_id", rows, "none")
    store, root = Store(), Location.parse(location)
    index, walking = ValueIndex.build({"u": [7_000_000_001]}), ValueIndex.build({"u": [7_000_000_001]})
    walking.__dict__["_avro_literals"] = True
    checked = 0
    for walked in _rewritten_manifests(location, store, root, index, walking, _rename_subject_path):
        checked += any("partition" in where for where, _, _ in walked)
    assert checked  # the partition value alone was found, through the prefilter too


def _rename_subject_path(record: dict) -> None:
    record["data_file"]["file_path"] = record["data_file"]["file_path"].replace("7000000001", "subject")


def _move_partition_value(record: dict) -> None:
    record["data_file"]["partition"]["note"] = "elsewhere"


def _rewritten_manifests(location: Path, store: Store, root: Location, index: ValueIndex, walking: ValueIndex,
                         change: Callable[[dict], None]) -> Iterator[list]:
    """Each manifest of the table rewritten with ``change`` applied to every record (same schema,
    codec and metadata); yields what decoding it finds without the prefilter (``walking``), after
    checking that the prefiltered decode (``index``) finds exactly that."""
    import fastavro

    for path in sorted(location.rglob("*-m0.avro")):
        with open(path, "rb") as handle:
            reader = fastavro.reader(handle)
            schema, metadata = reader.writer_schema, {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
            records = list(reader)
        for record in records:
            change(record)
        with open(path, "wb") as handle:
            fastavro.writer(handle, schema, records, codec="deflate", metadata=metadata)
        relative = str(path.relative_to(location))
        walked = list(_avro(FileSource(store, root.child(relative), relative), walking))
        assert list(_avro(FileSource(store, root.child(relative), relative), index)) == walked
        yield walked


def _blocks(source: FileSource) -> list[bytes]:
    import io

    import fastavro

    return [block.bytes_.getvalue() for block in fastavro.block_reader(io.BytesIO(source.data))]


ESCAPED = "+91 98/x?é"  # pyiceberg's partition folder: note=%2B91+98%2Fx%3F%C3%A9 (quote_plus)


def test_a_value_only_in_an_escaped_partition_path_is_found_through_the_prefilter(tmp_path: Path) -> None:
    """The manifests' partition records are rewritten (the value then sits only in the escaped
    data file path): the decode finds it under both URL decodings ('%XX', and '+' as a space),
    and the prefilter does not skip the manifest that holds it."""
    rows = [(1, ESCAPED, datetime.date(2026, 10, 1)), (2, "other", datetime.date(2026, 10, 2))]
    (tmp_path / "t").mkdir()
    location = table_with(tmp_path / "t", "note", rows, "none")
    store, root = Store(), Location.parse(location)
    index, walking = ValueIndex.build({"t": [ESCAPED]}), ValueIndex.build({"t": [ESCAPED]})
    walking.__dict__["_avro_literals"] = True
    found = 0
    for walked in _rewritten_manifests(location, store, root, index, walking, _move_partition_value):
        found += any(where.endswith("file_path") for where, _, _ in walked)
    assert found == 1  # the one manifest naming the subject's folder


def test_a_bare_percent_byte_is_not_taken_for_an_escaped_value() -> None:
    """Counts and ids put '%' bytes in most blocks of a long history: searched URL-decoded, a block
    is still skipped when no decoding holds a value, and kept when one does."""
    index = ValueIndex.build({"t": [ESCAPED], "u": [7_000_000_001]})
    assert not index.may_be_in_avro(b"\x02%\x9a\x01 counts 100% and +1 file:///wh/data/note=other/f.parquet")
    assert index.may_be_in_avro(b"\x02%\x9a file:///wh/data/note=%2B91+98%2Fx%3F%C3%A9/f.parquet")
    assert index.may_be_in_avro(b"\x02 file:///wh/data/note=%2B91%2098%2Fx%3F%C3%A9/f.parquet")
    assert not index.may_be_in_avro(b"\x02 file:///wh/data/note=%2B91%2099%2Fx%3F%C3%A9/f.parquet")
