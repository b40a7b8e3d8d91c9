"""``verify.prepare``: every file piitracer rewrites is written so the next verification can prove
absence without decoding rows — Bloom filters on exactly the dataset's identifier and key columns,
dictionary encoding kept, a page index — through each engine's own settings (pyarrow for plain
Parquet and archives, delta-rs ``WriterProperties``, Iceberg table properties for
``rewrite_data_files``, restored after). Read back from the real files' footers; every other row
is still there and the subjects' rows are gone. Without the option the files are written as before."""

from __future__ import annotations

import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import yaml
from byte_scan import find_values
from delta_parquet_lakehouse import SUBJECT_PANS, SUBJECTS, build, workspace
from deltalake import DeltaTable, write_deltalake
from spark_lakehouse import checksum, mor_properties, new_namespace, single_source_plan, spark_for, table_rows

import piitracer
from piitracer.api import plan_deletion
from executor_runs import run_plan
from piitracer.executor.runner import ExecuteOptions
from piitracer.formats import delta as delta_eraser
from piitracer.formats import parquet as parquet_eraser
from piitracer.formats.iceberg_eraser import IcebergEraser
from piitracer.formats.prepare import bloom_filter_bytes
from piitracer.model.errors import PiitracerError
from piitracer.model.outcome import Attempt
from piitracer.model.plan import Action, Subject
from piitracer.model.workspace import WorkspaceConfig
from piitracer.storage.locations import Location
from piitracer.storage.store import Store

STORE = Store()
# Iceberg's own property names (TableProperties, Iceberg 1.10).
BLOOM_ENABLED = "write.parquet.bloom-filter-enabled.column."
BLOOM_MAX_BYTES = "write.parquet.bloom-filter-max-bytes"
RECEIVED = "2026-11-20T09:00:00Z"


# ---- reading a footer -------------------------------------------------------------------------

def footer(path: Path | str) -> dict[str, dict[str, object]]:
    """Per column of a Parquet file: Bloom filter, dictionary page and page index in EVERY row
    group, and the codecs used."""
    metadata = pq.ParquetFile(str(path)).metadata
    found: dict[str, dict[str, object]] = {}
    for group in range(metadata.num_row_groups):
        for leaf in range(metadata.num_columns):
            chunk = metadata.row_group(group).column(leaf)
            facts = found.setdefault(chunk.path_in_schema, {"bloom": True, "dictionary": True, "page_index": True,
                                                            "codecs": set()})
            facts["bloom"] = facts["bloom"] and bool(chunk.bloom_filter_offset) and bool(chunk.bloom_filter_length)
            facts["dictionary"] = facts["dictionary"] and chunk.has_dictionary_page
            facts["page_index"] = facts["page_index"] and chunk.has_column_index and chunk.has_offset_index
            facts["codecs"].add(chunk.compression)
    return found


def bloomed(path: Path | str) -> set[str]:
    """The columns with a Bloom filter in every row group."""
    return {name for name, facts in footer(path).items() if facts["bloom"]}


def any_bloom(path: Path | str) -> bool:
    metadata = pq.ParquetFile(str(path)).metadata
    return any(metadata.row_group(g).column(c).bloom_filter_offset for g in range(metadata.num_row_groups)
               for c in range(metadata.num_columns))


def rows_of(table: pa.Table) -> list[tuple]:
    return [tuple(r.values()) for r in table.to_pylist()]


# ---- the workspace option ---------------------------------------------------------------------

def test_verify_prepare_reaches_every_catalog_entry_unless_the_entry_says_otherwise(tmp_path: Path) -> None:
    catalog = {"a.people": {"format": "parquet", "location": "p", "identifiers": ["user_id"]},
               "a.kept_as_is": {"format": "delta", "location": "d", "prepare_for_proof": False},
               "a.only_this": {"format": "delta", "location": "e", "prepare_for_proof": True}}
    on = WorkspaceConfig.model_validate({"verify": {"prepare": True}, "catalog": catalog})
    off = WorkspaceConfig.model_validate({"catalog": catalog})
    assert on.verify.prepare and not off.verify.prepare
    assert {d: e.prepare_for_proof for d, e in on.catalog.items()} == {"a.people": True, "a.kept_as_is": False, "a.only_this": True}
    assert {d: e.prepare_for_proof for d, e in off.catalog.items()} == {"a.people": False, "a.kept_as_is": False, "a.only_this": True}
    # The verify block keeps its engine settings beside the new key, and a misspelt key is refused.
    assert on.verify.spark_min_files == 2000
    (tmp_path / "piitracer.yaml").write_text(yaml.safe_dump({"verify": {"prepare": "sometimes"}}))
    with pytest.raises(PiitracerError) as error:
        piitracer.load_workspace(tmp_path)
    assert "verify.prepare" in str(error.value) and "piitracer.yaml:" in str(error.value)


# ---- plain Parquet (pyarrow) --------------------------------------------------------------------

def _people(n: int = 20_000) -> pa.Table:
    return pa.table({
        "user_id": pa.array(range(1, n + 1), pa.int64()),
        "Email": [f"user{i}@example.org" for i in range(1, n + 1)],  # a capitalised name: matched case-insensitively
        "amount": [float(i % 997) for i in range(n)],
        "active": [i % 2 == 0 for i in range(n)],  # an identifier of a type that has no Bloom filter
        "city": [f"city{i % 12}" for i in range(n)],
    })


def test_a_prepared_parquet_rewrite_writes_bloom_filters_on_exactly_the_identifier_and_key_columns(tmp_path: Path) -> None:
    folder = tmp_path / "people"
    folder.mkdir()
    table = _people()
    # The original: zstd, dictionary on user_id and city only (amount and Email plain).
    pq.write_table(table.slice(0, 12_000), folder / "part-0.parquet", compression="zstd", use_dictionary=["user_id", "city"])
    pq.write_table(table.slice(12_000), folder / "part-1.parquet", compression="zstd", use_dictionary=["user_id", "city"])
    untouched = (folder / "part-1.parquet").read_bytes()
    subjects = [3, 4_000, 11_999]
    keep = checksum(r for r in rows_of(pq.read_table(folder)) if r[0] not in subjects)

    outcome = parquet_eraser.rewrite_files(Location.parse(folder), STORE, "user_id", subjects,
                                           prepare=("active", "email", "missing_column", "user_id"))

    assert outcome.rows_deleted == 3 and outcome.files_rewritten == 1
    assert outcome.details["prepared_for_proof"] == "active, email, missing_column, user_id"
    facts = footer(folder / "part-0.parquet")
    assert bloomed(folder / "part-0.parquet") == {"user_id", "Email"}
    assert {c for c, f in facts.items() if f["dictionary"]} == {"user_id", "Email", "city"}  # the original's, and the filtered
    assert all(f["page_index"] for f in facts.values())
    assert all(f["codecs"] == {"ZSTD"} for f in facts.values())
    assert (folder / "part-1.parquet").read_bytes() == untouched, "a file without a subject is not rewritten"
    remaining = pq.read_table(folder)
    assert not set(remaining.column("user_id").to_pylist()) & set(subjects)
    assert checksum(rows_of(remaining)) == keep


def test_without_the_option_a_parquet_rewrite_writes_as_before(tmp_path: Path) -> None:
    folder = tmp_path / "people"
    folder.mkdir()
    table = _people(5_000)
    pq.write_table(table, folder / "part-0.parquet", compression="zstd")
    subjects = [3]
    kept = table.filter(pc.invert(pc.is_in(table.column("user_id"), pa.array(subjects, pa.int64()))))

    parquet_eraser.rewrite_files(Location.parse(folder), STORE, "user_id", subjects)

    expected = tmp_path / "expected.parquet"
    pq.write_table(kept, expected, compression="zstd")  # what the rewrite wrote before verify.prepare existed
    assert (folder / "part-0.parquet").read_bytes() == expected.read_bytes()
    assert not any_bloom(folder / "part-0.parquet")


# ---- Delta (delta-rs) -------------------------------------------------------------------------

def test_a_prepared_delta_delete_writes_bloom_filters_and_keeps_the_tables_codec(tmp_path: Path) -> None:
    from deltalake import WriterProperties

    table = _people(8_000).drop_columns(["active"])
    prepared, plain = tmp_path / "prepared", tmp_path / "plain"
    for location in (prepared, plain):
        write_deltalake(str(location), table, writer_properties=WriterProperties(compression="ZSTD"))
    subjects = [5, 7_999]
    keep = checksum(r for r in rows_of(table) if r[0] not in subjects)

    outcome = delta_eraser.delete_rows(Location.parse(prepared), STORE, "user_id", subjects, prepare=("email", "user_id"))
    delta_eraser.delete_rows(Location.parse(plain), STORE, "user_id", subjects)

    assert outcome.rows_deleted == 2 and outcome.details["prepared_for_proof"] == "email, user_id"
    files = DeltaTable(str(prepared)).file_uris()
    assert files
    for uri in files:
        facts = footer(uri)
        assert bloomed(uri) == {"user_id", "Email"}
        assert all(f["dictionary"] and f["page_index"] for f in facts.values())
        assert all(f["codecs"] == {"ZSTD"} for f in facts.values()), "the table's codec, not delta-rs's uncompressed"
    assert not any(any_bloom(uri) for uri in DeltaTable(str(plain)).file_uris()), "without the option: as before"
    for location in (prepared, plain):
        remaining = DeltaTable(str(location)).to_pyarrow_table()
        assert checksum(rows_of(remaining)) == keep


# ---- the whole erasure, through the workspace option ------------------------------------------

def test_verify_prepare_in_the_workspace_prepares_every_file_the_erasure_rewrites(tmp_path: Path, warehouse: Path) -> None:
    """Delta source and copy, a Hive-partitioned Parquet folder and an archive, erased by plan and
    execute with ``verify: {prepare: true}``: every file written by the erasure carries Bloom
    filters on exactly its dataset's identifier and key columns; files it did not rewrite are
    byte for byte the same."""
    locations = build(tmp_path / "lake")
    folder = workspace(tmp_path, warehouse, locations)
    config = yaml.safe_load((folder / "piitracer.yaml").read_text())
    config["verify"] = {"prepare": True}
    (folder / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    ws = piitracer.load_workspace(folder)
    delta_readers = {"crm.people": lambda p: DeltaTable(str(p)).to_pyarrow_table(),
                     "crm.people_copy": lambda p: DeltaTable(str(p)).to_pyarrow_table()}
    readers = {**delta_readers, "crm.cards": lambda p: pq.read_table(str(p)), "archive.people_weekly": lambda p: pq.read_table(str(p))}
    is_subject = lambda row: any(v in SUBJECTS or v in SUBJECT_PANS for v in row)  # noqa: E731
    keep = {name: checksum(r for r in rows_of(read(locations[name])) if not is_subject(r)) for name, read in readers.items()}
    before = {name: {str(p.relative_to(loc)): p.read_bytes() for p in loc.rglob("*.parquet") if "_delta_log" not in p.parts}
              for name, loc in locations.items()}

    plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), ["crm.people.user_id"],
                         [Subject(value=str(v), request_id=f"r{i}", received_at=RECEIVED) for i, v in enumerate(SUBJECTS)])
    summary = run_plan(ws, plan, ExecuteOptions(no_concurrent_writers=True))

    assert summary.status == "complete", [(r.step.id, r.state, r.message) for r in summary.results]
    logical = {r.step.dataset: r.outcome.details.get("prepared_for_proof") for r in summary.results
               if r.step.action in (Action.DELETE_ROWS, Action.REWRITE_FILES, Action.REWRITE_ARCHIVE)}
    # crm.people: its identifiers (user_id, pan); the others: the key column the plan found for them.
    expected = {"crm.people": {"user_id", "pan"}, "crm.people_copy": {"cust"}, "crm.cards": {"pan"},
                "archive.people_weekly": {"user_id"}}
    assert {d: set(c.split(", ")) for d, c in logical.items()} == expected
    for name, location in locations.items():
        now = {str(p.relative_to(location)): p for p in location.rglob("*.parquet") if "_delta_log" not in p.parts}
        if name in delta_readers:
            live = {str(Path(uri).relative_to(location)) for uri in DeltaTable(str(location)).file_uris()}
        else:
            live = set(now)
        written = {f for f in live if before[name].get(f) != now[f].read_bytes()}
        assert written, f"{name}: the erasure rewrote files"
        for relative in written:
            assert bloomed(now[relative]) == expected[name], f"{name}/{relative}"
            facts = footer(now[relative])
            assert all(facts[c]["dictionary"] for c in expected[name]) and all(f["page_index"] for f in facts.values())
        for relative in live - written:
            assert not any_bloom(now[relative]), f"{name}/{relative}: not rewritten, so as it was"
        remaining = rows_of(readers[name](location))
        assert not [r for r in remaining if is_subject(r)], name
        assert checksum(remaining) == keep[name], f"{name}: other rows changed"
        assert find_values(location, SUBJECTS + SUBJECT_PANS) == [], f"{name}: subject bytes remain"


# ---- Iceberg (Spark, the real runtime jar) ------------------------------------------------------

def _data_files(spark, table: str) -> set[str]:
    return {r.file_path.removeprefix("file:") for r in spark.sql(f"SELECT file_path FROM {table}.data_files").collect()}


def _properties(spark, table: str) -> dict[str, str]:
    """The table's own properties (Spark also shows the current snapshot id: not a property)."""
    return {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect() if r.key != "current-snapshot-id"}


def test_iceberg_rewrite_data_files_writes_bloom_filters_then_restores_the_tables_properties(tmp_path: Path,
                                                                                            warehouse: Path) -> None:
    spark = spark_for(warehouse)
    ns = new_namespace("prep")
    table = f"lake.{ns}.src"
    # The owner's own Bloom filter on amount stays; pan and user_id are piitracer's for the rewrite.
    spark.sql(f"CREATE TABLE {table} (user_id BIGINT, pan STRING, amount DOUBLE, dt STRING) USING iceberg "
              f"PARTITIONED BY (dt) TBLPROPERTIES ({mor_properties()}, '{BLOOM_ENABLED}amount'='false')")
    data = [(u, p, 10.5, "2026-11-01") for u, p in zip(SUBJECTS, SUBJECT_PANS)]
    data += [(8_000_000_000 + i, f"4111-0000-{i:05d}-1111", float(i), f"2026-11-0{1 + i % 3}") for i in range(3000)]
    for part in (data[:1500], data[1500:]):
        spark.createDataFrame(part, "user_id BIGINT, pan STRING, amount DOUBLE, dt STRING").writeTo(table).append()
    keep = checksum(r for r in table_rows(spark, table) if r[0] not in SUBJECTS)
    properties_before = _properties(spark, table)
    files_before = _data_files(spark, table)
    # parquet-java (Iceberg's writer) drops a dictionary that does not pay (unique ids): "kept"
    # means the rewritten files use dictionaries where the table's own files do.
    dictionaries = {c for c in footer(next(iter(files_before))) if all(footer(f)[c]["dictionary"] for f in files_before)}
    assert dictionaries == {"dt"}
    ws, plan = single_source_plan(tmp_path, warehouse, table, SUBJECTS, prepare_for_proof=True)

    summary = run_plan(ws, plan, ExecuteOptions(no_concurrent_writers=True))

    assert summary.status == "complete", [(r.step.id, r.state, r.message) for r in summary.results]
    rewrite = next(r for r in summary.results if r.step.action is Action.REWRITE_DATA_FILES)
    assert rewrite.outcome.details["prepared_for_proof"] == "user_id, pan"
    set_names = rewrite.outcome.details["table_properties_set_and_restored"].split(", ")
    assert f"{BLOOM_ENABLED}pan" in set_names and BLOOM_MAX_BYTES in set_names and f"{BLOOM_ENABLED}amount" not in set_names
    assert _properties(spark, table) == properties_before, "the table's properties are as they were"
    written = _data_files(spark, table) - files_before
    assert written, "the rewrite wrote new data files"
    for path in written:
        facts = footer(path)
        assert bloomed(path) == {"user_id", "pan"}, path
        assert {c for c, f in facts.items() if f["dictionary"]} == dictionaries
        assert all(f["page_index"] for f in facts.values())
        rows = pq.ParquetFile(path).metadata
        size = max(rows.row_group(g).column(c).bloom_filter_length or 0 for g in range(rows.num_row_groups)
                   for c in range(rows.num_columns))
        # Sized for the most rows of one partition's rewritten files, not Iceberg's 1 MiB.
        assert 0 < size <= bloom_filter_bytes(1001) + 64
        # parquet-java's filters, read by the verifier's probe: every value the file holds is admitted.
        held = pq.read_table(path, columns=["user_id", "pan"])
        assert all(_admitted(path, "user_id", [struct.pack("<q", v) for v in held.column("user_id").to_pylist()]))
        assert all(_admitted(path, "pan", [v.encode() for v in held.column("pan").to_pylist()]))
    for path in files_before & _data_files(spark, table):
        assert not any_bloom(path), "files the rewrite did not take are as they were"
    remaining = table_rows(spark, table)
    assert not [r for r in remaining if r[0] in SUBJECTS or r[1] in SUBJECT_PANS]
    assert checksum(remaining) == keep
    assert find_values(warehouse / ns / "src", SUBJECTS + SUBJECT_PANS) == []

    # A run killed with the properties set: the resumed attempt restores what the first journaled.
    eraser = IcebergEraser(spark, table, Location.parse(warehouse / ns / "src"))
    eraser._set_properties({f"{BLOOM_ENABLED}pan": "true", BLOOM_MAX_BYTES: "4096"})
    journaled = {"table_properties_before": {f"{BLOOM_ENABLED}pan": None, f"{BLOOM_ENABLED}user_id": None,
                                             BLOOM_MAX_BYTES: None}}
    eraser.rewrite_data_files({"delete-file-threshold": "1"}, Attempt(earlier=journaled), prepare=("pan", "user_id"))
    assert _properties(spark, table) == properties_before


# ---- the filters written are the ones the verifier reads ----------------------------------------

def _admitted(path: str, column: str, encoded: list[bytes]) -> list[bool]:
    """Per value (its plain encoding), whether the verifier's Bloom probe of every row group's
    chunk of ``column`` may hold it."""
    from piitracer.verify.parquet_bloom import bloom_may_hold, xxh64
    from piitracer.verify.parquet_pages import CountingFile

    with pa.OSFile(path, "rb") as raw:
        handle = CountingFile(raw)
        metadata = pq.ParquetFile(path).metadata
        leaf = next(i for i in range(metadata.num_columns) if metadata.schema.column(i).path == column)
        chunks = [metadata.row_group(g).column(leaf) for g in range(metadata.num_row_groups)]
        return [any(bloom_may_hold(handle, chunk, [xxh64(value)]) for chunk in chunks) for value in encoded]


def test_the_bloom_filters_written_hold_every_kept_value_for_the_verifiers_probe(tmp_path: Path) -> None:
    """pyarrow's (Parquet rewrite) and delta-rs's (Delta delete) filters, read by the verifier's
    own split-block probe: every value a kept row holds is admitted (no false negative, or the
    verifier would prove a present value absent), and values never written are refused but for
    about the false-positive rate (1 %)."""
    folder, table_path = tmp_path / "folder", tmp_path / "delta"
    folder.mkdir()
    table = _people(6_000).drop_columns(["active"])
    pq.write_table(table, folder / "part-0.parquet")
    write_deltalake(str(table_path), table)
    subjects = [1, 2, 3]
    parquet_eraser.rewrite_files(Location.parse(folder), STORE, "user_id", subjects, prepare=("email", "user_id"))
    delta_eraser.delete_rows(Location.parse(table_path), STORE, "user_id", subjects, prepare=("email", "user_id"))
    kept_ids = [v for v in table.column("user_id").to_pylist() if v not in subjects]
    kept_emails = [f"user{v}@example.org" for v in kept_ids]
    absent_ids = list(range(10_000_001, 10_002_001))

    for path in [str(folder / "part-0.parquet"), *DeltaTable(str(table_path)).file_uris()]:
        assert all(_admitted(path, "user_id", [struct.pack("<q", v) for v in kept_ids])), path
        assert all(_admitted(path, "Email", [v.encode() for v in kept_emails])), path
        refused = _admitted(path, "user_id", [struct.pack("<q", v) for v in absent_ids]).count(False)
        assert refused >= 0.95 * len(absent_ids), f"{path}: only {refused} of {len(absent_ids)} absent values refused"
