"""The Avro container reader (formats/avro_container.py) reads the records fastavro reads, and the
manifest lists of a history reused from their parent (formats/iceberg_history.py) are the lists
decoded whole: on the manifests and lists of real pyiceberg tables (appends, a delete that rewrites
manifests, an overwrite, a partitioned table), on fastavro-written files of several blocks and
codecs, and on corrupted bytes (an AvroContainerError, never another error)."""

from __future__ import annotations

import io
import random
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest

from piitracer.formats.avro_container import AvroContainerError, read_container
from piitracer.formats.iceberg_history import _Reader, read_metadata
from piitracer.storage.locations import Location
from piitracer.storage.store import Store


def iceberg_table(folder: Path, partitioned: bool) -> Path:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.expressions import EqualTo
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    catalog = SqlCatalog("c", uri=f"sqlite:///{folder}/c.db", warehouse=f"file://{folder}/wh")
    catalog.create_namespace("ns")
    schema = Schema(NestedField(1, "user_id", LongType()), NestedField(2, "region", StringType()))
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "region")) if partitioned else PartitionSpec()
    table = catalog.create_table("ns.t", schema=schema, partition_spec=spec)
    arrow = pa.schema([pa.field("user_id", pa.int64()), pa.field("region", pa.string())])
    rng = random.Random(3)
    for commit in range(12):
        table.append(pa.table({"user_id": [commit * 100 + i for i in range(5)],
                               "region": [rng.choice(["eu", "in", "us"]) for _ in range(5)]}, schema=arrow))
        if commit == 6:
            table.delete(EqualTo("user_id", 301))  # rewrites a data file and its manifests
        if commit == 9:
            table.overwrite(pa.table({"user_id": [1, 2], "region": ["eu", "in"]}, schema=arrow))
    return Path(table.location().removeprefix("file://"))


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> list[Path]:
    return [iceberg_table(tmp_path_factory.mktemp(f"t{p}"), p) for p in (False, True)]


def test_manifests_and_lists_read_as_fastavro_reads_them(tables: list[Path]) -> None:
    checked = 0
    for location in tables:
        for path in sorted(location.rglob("*.avro")):
            raw = path.read_bytes()
            reader = fastavro.reader(io.BytesIO(raw))
            container = read_container(raw)
            assert container.metadata == reader.metadata
            assert container.records() == list(reader)
            checked += 1
    assert checked > 40


@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_files_of_many_blocks_read_as_fastavro_reads_them(codec: str) -> None:
    schema = {"type": "record", "name": "r", "fields": [{"name": "a", "type": "long"}, {"name": "s", "type": "string"},
                                                        {"name": "m", "type": ["null", {"type": "map", "values": "bytes"}]}]}
    rng = random.Random(5)
    rows = [{"a": rng.randrange(-2**62, 2**62), "s": "é" * rng.randrange(30),
             "m": {"k": bytes(rng.randrange(256) for _ in range(5))} if rng.random() < 0.5 else None} for _ in range(500)]
    out = io.BytesIO()
    fastavro.writer(out, schema, rows, codec=codec, sync_interval=200, metadata={"format-version": "2"})
    raw = out.getvalue()
    container = read_container(raw)
    assert len(container.blocks) > 5
    assert container.records() == list(fastavro.reader(io.BytesIO(raw))) == rows


def test_a_codec_not_read_here_is_left_to_fastavro() -> None:
    out = io.BytesIO()
    fastavro.writer(out, {"type": "record", "name": "r", "fields": [{"name": "a", "type": "long"}]}, [{"a": 1}], codec="bzip2")
    assert read_container(out.getvalue()) is None


CORRUPT = """
import random, resource, sys
from pathlib import Path
from piitracer.formats.avro_container import AvroContainerError, read_container
resource.setrlimit(resource.RLIMIT_AS, (768 * 2**20, resource.getrlimit(resource.RLIMIT_AS)[1]))
rng = random.Random(int(sys.argv[1]))
files = sorted(Path(sys.argv[2]).rglob("*.avro")) + sorted(Path(sys.argv[3]).rglob("*.avro"))
for path in rng.sample(files, 10):
    raw = path.read_bytes()
    for _ in range(20):
        broken = bytearray(raw)
        for _ in range(rng.randrange(1, 4)):
            broken[rng.randrange(len(broken))] = rng.randrange(256)
        for sample in (bytes(broken), raw[: rng.randrange(len(raw))]):
            try:
                container = read_container(sample)
                if container is not None:
                    container.records()
            except AvroContainerError:
                pass
print("ok")
"""


@pytest.mark.parametrize("seed", range(2))
def test_corrupted_files_raise_only_avro_container_errors(tables: list[Path], seed: int) -> None:
    """In a child process whose memory is capped (fastavro allocates the length a corrupted
    record claims before reading it: a MemoryError is an AvroContainerError too)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", CORRUPT, str(seed), *map(str, tables)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_each_snapshots_list_read_from_its_parent_is_the_list_decoded_whole(tables: list[Path]) -> None:
    reused = 0
    for location in tables:
        root, store = Location.parse(location), Store()
        _, metadata = read_metadata(root, store)
        reader = _Reader(root, store, metadata)
        snapshots = metadata["snapshots"]
        by_id = {s["snapshot-id"]: s for s in snapshots}
        for snapshot in snapshots:
            parent = by_id.get(snapshot.get("parent-snapshot-id"))
            parent_rows = reader.lists.get((parent or {}).get("manifest-list"), (None, None, []))[2]
            listed = reader.manifest_list(snapshot, parent)
            whole = list(fastavro.reader(io.BytesIO(Path(snapshot["manifest-list"].removeprefix("file://")).read_bytes())))
            assert reader.lists[snapshot["manifest-list"]][2] == whole
            assert listed == [(r["manifest_path"], int(r.get("content") or 0)) for r in whole]
            reused += bool(parent_rows) and whole[-len(parent_rows):] == parent_rows
    assert reused >= 10  # the appends were read from their parents' lists
