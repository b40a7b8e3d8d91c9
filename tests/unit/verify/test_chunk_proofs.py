"""Proof at scale: Parquet column chunks proven without decoding their rows (statistics, page
index, Bloom filter, dictionary, type) never hide a value a brute-force decode finds.

Every file here is written by pyarrow with real encodings: dictionary on and off, a dictionary that
falls back to plain pages (a tiny ``dictionary_pagesize_limit``), Bloom filters, page indexes, data
page v1 and v2, several codecs, nulls, values planted whole and inside longer text."""

from __future__ import annotations

import random
from datetime import date, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from piitracer.storage.locations import Location
from piitracer.storage.store import Store
from piitracer.verify.columns import column_hits
from piitracer.verify.decoders import scan_location
from piitracer.verify.values import ValueIndex

SUBJECT_ID = 7_000_000_001
SUBJECT_SMALL = 424_242  # fits an int32
SUBJECT_EMAIL = "jane.roe@example.org"
SUBJECT_DAY = date(1987, 6, 5)
VALUE_SETS = {"s.user_id": [SUBJECT_ID, SUBJECT_SMALL], "s.email": [SUBJECT_EMAIL], "s.birthday": [SUBJECT_DAY]}
CODECS = ["snappy", "zstd", "gzip", "none", "lz4", "brotli"]


def brute_force(folder: Path, files: list[str], index: ValueIndex) -> set[tuple[str, str, str]]:
    """(file, where, value set) of every data place, by decoding every column of every file."""
    found = set()
    for name in files:
        table = pq.read_table(folder / name)
        for column in table.column_names:
            for where, names in column_hits(column, table.column(column), index):
                found |= {(name, where, n) for n in names}
    return found


def pruned(folder: Path, files: list[str], index: ValueIndex):
    scan = scan_location(Location.parse(folder), index, Store(), files)
    return {(h.file, h.where, h.value_set) for h in scan.hits if h.kind == "data"}, scan


def _column(rng: random.Random, kind: str, rows: int, plant: bool) -> pa.Array:
    """A column of ``kind`` with, when ``plant``, one subject value somewhere (whole or in text)."""
    null = rng.random() < 0.3
    spread = rng.choice([5, 50, 5000])  # few distinct values (dictionary) to many (fallback)

    def maybe_none(value):
        return None if null and rng.random() < 0.1 else value

    if kind in ("int64", "int32", "uint32"):
        base = {"int64": SUBJECT_ID, "int32": SUBJECT_SMALL, "uint32": SUBJECT_SMALL}[kind]
        # Around the subject: its value is inside the chunk's min/max often, equal to it only when planted.
        values = [maybe_none(base + rng.choice([-1, 1]) * rng.randrange(1, spread + 2)) for _ in range(rows)]
        if plant:
            values[rng.randrange(rows)] = base
        return pa.array(values, getattr(pa, kind)())
    if kind == "date32":
        values = [maybe_none(SUBJECT_DAY + timedelta(days=rng.choice([-1, 1]) * rng.randrange(1, spread + 2)))
                  for _ in range(rows)]
        if plant:
            values[rng.randrange(rows)] = SUBJECT_DAY
        return pa.array(values, pa.date32())
    if kind in ("string", "large_string", "binary"):
        values = [maybe_none(f"user{rng.randrange(spread)}@example.org") for _ in range(rows)]
        if plant:
            where = rng.randrange(rows)
            values[where] = rng.choice([SUBJECT_EMAIL, f"note: wrote to {SUBJECT_EMAIL} twice",
                                        f"ticket for user {SUBJECT_ID} closed"])
        if kind == "binary":
            return pa.array([v.encode() if v is not None else None for v in values], pa.binary())
        return pa.array(values, getattr(pa, kind)())
    if kind == "float64":
        return pa.array([maybe_none(rng.random() * spread) for _ in range(rows)], pa.float64())
    raise AssertionError(kind)


KINDS = ["int64", "int32", "uint32", "date32", "string", "large_string", "binary", "float64"]


def random_file(rng: random.Random, path: Path) -> None:
    rows = rng.randrange(1, 400)
    kinds = rng.sample(KINDS, rng.randrange(1, 5))
    table = pa.table({f"c{n}_{kind}": _column(rng, kind, rows, rng.random() < 0.4) for n, kind in enumerate(kinds)})
    names = table.column_names
    options = dict(
        row_group_size=rng.choice([rows, max(1, rows // 3), 7]),
        compression=rng.choice(CODECS),
        use_dictionary=rng.choice([True, False, rng.sample(names, rng.randrange(0, len(names) + 1))]),
        write_page_index=rng.random() < 0.5,
        data_page_version=rng.choice(["1.0", "2.0"]),
        data_page_size=rng.choice([None, 64, 512]),
    )
    if rng.random() < 0.4:
        options["dictionary_pagesize_limit"] = rng.choice([16, 64, 256])  # falls back to plain pages
    if rng.random() < 0.5:
        options["bloom_filter_options"] = {name: {"ndv": rng.choice([8, 100, 1000]), "fpp": rng.choice([0.01, 0.2])}
                                           for name in rng.sample(names, rng.randrange(1, len(names) + 1))}
    if rng.random() < 0.3:
        options["max_rows_per_page"] = rng.choice([3, 20])
    pq.write_table(table, path, **options)


def test_pruned_scan_finds_exactly_what_a_full_decode_finds(tmp_path: Path) -> None:
    """400 random files: the pruned scan's data hits equal a full decode's, and every rule (and
    decoding) is exercised, so the equality is not vacuous."""
    index = ValueIndex.build(VALUE_SETS)
    rng = random.Random(29)
    files = []
    for number in range(400):
        name = f"f{number:03d}.parquet"
        random_file(rng, tmp_path / name)
        files.append(name)
    expected = brute_force(tmp_path, files, index)
    found, scan = pruned(tmp_path, files, index)
    assert found == expected
    assert len(expected) > 50  # planted values were found
    assert set(scan.chunks.by_method) == {"type", "statistics", "page_index", "bloom", "dictionary", "pages", "decoded"}
    assert scan.chunks.proven + scan.chunks.decoded == sum(scan.chunks.by_method.values())
    assert scan.chunks.bytes_total == sum((tmp_path / name).stat().st_size for name in files)
    assert scan.chunks.bytes_read > 0  # tiny files: footer and header reads overlap, so no ratio here


def test_a_batch_of_many_searched_values_finds_exactly_what_a_full_decode_finds(tmp_path: Path) -> None:
    """A batch of subjects (issue 43.3): ~400 values per kind, many inside the chunks' min/max and
    some in the files, checked all at once by every rule (one binary search over the sorted values,
    the Bloom filter probed with every hash in one NumPy pass, the page index's pages at once)."""
    batch = {"s.user_id": [SUBJECT_ID + d for d in range(-1200, 1200, 6)] + [SUBJECT_SMALL + d for d in range(-600, 600, 7)],
             "s.email": [SUBJECT_EMAIL] + [f"user{n}@example.org" for n in range(3, 4000, 37)],
             "s.birthday": [SUBJECT_DAY + timedelta(days=d) for d in range(-300, 300, 4)]}
    index = ValueIndex.build(batch)
    rng = random.Random(43)
    files = []
    for number in range(150):
        name = f"b{number:03d}.parquet"
        random_file(rng, tmp_path / name)
        files.append(name)
    expected = brute_force(tmp_path, files, index)
    found, scan = pruned(tmp_path, files, index)

    def places(hits):  # a set found whole in one row group and inside text in another: labelled per group
        return {(name, where.removesuffix(" (inside text)"), value_set) for name, where, value_set in hits}

    assert places(found) == places(expected) and len(expected) > 50
    assert {"statistics", "page_index", "bloom", "dictionary"} <= set(scan.chunks.by_method)


def test_whole_values_only_index_lets_bloom_and_statistics_prove_short_strings(tmp_path: Path) -> None:
    """Short values (under the inside-text length) are searched whole only: string chunks can then
    be proven by their exact min/max or their Bloom filter; checked against the full decode over
    150 random files."""
    index = ValueIndex.build({"s.code": ["ab1", "zz9"], "s.n": [77]})
    rng = random.Random(3)
    files = []
    for number in range(150):
        rows = rng.randrange(1, 200)
        # Filler codes from "a0" to "z9": "ab1" often lies between a chunk's bounds, "zz9" never.
        codes = [rng.choice(["ab0", "ab2", "zz8", "qq1", "ab1", "zz9"]) if rng.random() < 0.02
                 else f"{rng.choice('abz')}{rng.randrange(10)}" for _ in range(rows)]
        table = pa.table({"code": codes, "n": pa.array([rng.randrange(60, 90) for _ in range(rows)], pa.int16())})
        name = f"g{number:03d}.parquet"
        pq.write_table(table, tmp_path / name, use_dictionary=rng.random() < 0.5,
                       bloom_filter_options={"code": {"ndv": 64, "fpp": 0.05}, "n": {"ndv": 32, "fpp": 0.05}},
                       row_group_size=rng.choice([rows, 13]))
        files.append(name)
    expected = brute_force(tmp_path, files, index)
    found, scan = pruned(tmp_path, files, index)
    assert found == expected and expected
    assert scan.chunks.by_method.get("bloom", 0) > 0 and scan.chunks.by_method.get("statistics", 0) > 0


def _write(path: Path, table: pa.Table, **options) -> None:
    pq.write_table(table, path, **options)


def _scan_one(folder: Path, name: str, index: ValueIndex):
    found, scan = pruned(folder, [name], index)
    return found, scan


def test_named_cases_each_found(tmp_path: Path) -> None:
    """The subject in a dictionary, in a plain-encoded fallback chunk, in a page the page index
    covers and in a Bloom-covered column: each found, and each chunk decoded for the right reason."""
    index = ValueIndex.build(VALUE_SETS)
    emails = [f"user{n}@example.org" for n in range(3000)]

    # In a dictionary: the dictionary holds it, so the chunk is decoded and the row found.
    _write(tmp_path / "dict.parquet", pa.table({"email": ["a@b.co"] * 50 + [SUBJECT_EMAIL] + ["c@d.co"] * 50}))
    found, scan = _scan_one(tmp_path, "dict.parquet", index)
    assert found == {("dict.parquet", "column email", "s.email")}
    assert [c.why for c in scan.chunks.decoded_chunks] == ["values may sit inside text; its dictionary holds a searched value"]

    # In a chunk whose dictionary fell back to plain pages: never proven from the dictionary page.
    _write(tmp_path / "fallback.parquet", pa.table({"email": emails[:1500] + [SUBJECT_EMAIL] + emails[1500:]}),
           dictionary_pagesize_limit=1024, data_page_size=1024)
    assert "PLAIN" in pq.ParquetFile(tmp_path / "fallback.parquet").metadata.row_group(0).column(0).encodings
    found, scan = _scan_one(tmp_path, "fallback.parquet", index)
    assert found == {("fallback.parquet", "column email", "s.email")}
    assert "plain-encoded data pages (dictionary fallback)" in scan.chunks.decoded_chunks[0].why

    assert "a page holds a searched value's text" in scan.chunks.decoded_chunks[0].why
    # The same fallback without the subject: its dictionary and plain pages, decompressed, hold no
    # searched text: proven by its pages, nothing decoded to rows.
    _write(tmp_path / "fallback_clean.parquet", pa.table({"email": emails}), dictionary_pagesize_limit=1024,
           data_page_size=1024)
    found, scan = _scan_one(tmp_path, "fallback_clean.parquet", index)
    assert found == set() and scan.chunks.by_method == {"pages": 1}

    # In a page the page index covers: sorted ids, pages of 100 rows; the subject's page admits it.
    ids = list(range(SUBJECT_ID - 5000, SUBJECT_ID - 1000, 2)) + [SUBJECT_ID] + list(range(SUBJECT_ID + 1000, SUBJECT_ID + 5000, 2))
    _write(tmp_path / "paged.parquet", pa.table({"id": pa.array(ids, pa.int64())}), write_page_index=True,
           max_rows_per_page=100, use_dictionary=False)
    found, scan = _scan_one(tmp_path, "paged.parquet", index)
    assert found == {("paged.parquet", "column id", "s.user_id")}
    assert scan.chunks.by_method == {"decoded": 1}
    # Without the subject, the gap around it lies between pages: proven by the page index alone.
    ids.remove(SUBJECT_ID)
    _write(tmp_path / "paged_clean.parquet", pa.table({"id": pa.array(ids, pa.int64())}), write_page_index=True,
           max_rows_per_page=100, use_dictionary=False)
    found, scan = _scan_one(tmp_path, "paged_clean.parquet", index)
    assert found == set() and scan.chunks.by_method == {"page_index": 1}

    # In a Bloom-covered column: the filter admits it, so the chunk is decoded and the row found.
    numbers = [SUBJECT_ID + 2 * n + 1 for n in range(-2000, 2000)]
    _write(tmp_path / "bloom.parquet", pa.table({"id": pa.array(numbers + [SUBJECT_ID], pa.int64())}),
           use_dictionary=False, bloom_filter_options={"id": {"ndv": 5000, "fpp": 0.01}})
    found, scan = _scan_one(tmp_path, "bloom.parquet", index)
    assert found == {("bloom.parquet", "column id", "s.user_id")}
    assert "Bloom filter admits a searched value" in scan.chunks.decoded_chunks[0].why
    _write(tmp_path / "bloom_clean.parquet", pa.table({"id": pa.array(numbers, pa.int64())}),
           use_dictionary=False, bloom_filter_options={"id": {"ndv": 5000, "fpp": 0.01}})
    found, scan = _scan_one(tmp_path, "bloom_clean.parquet", index)
    assert found == set() and scan.chunks.by_method == {"bloom": 1}


def test_bloom_filter_of_every_written_value_admits_it(tmp_path: Path) -> None:
    """The filter reader and the pure-Python xxHash64 agree with pyarrow's writer on every value
    written (a Bloom filter has no false negatives), for int32, int64 and strings of every length
    around xxHash's 4, 8 and 32-byte lanes."""
    from piitracer.verify.parquet_bloom import bloom_may_hold, xxh64
    from piitracer.verify.parquet_pages import CountingFile

    rng = random.Random(1)
    strings = ["".join(rng.choice("abcxyz@.") for _ in range(length)) for length in range(0, 70)]
    table = pa.table({"s": strings, "i": pa.array(range(-35, 35), pa.int32()),
                      "l": pa.array([rng.randrange(-2**62, 2**62) for _ in range(70)], pa.int64())})
    _write(tmp_path / "b.parquet", table, bloom_filter_options={c: {"ndv": 70, "fpp": 0.001} for c in "sil"})
    handle = CountingFile(pa.OSFile(str(tmp_path / "b.parquet")))
    chunks = pq.ParquetFile(tmp_path / "b.parquet").metadata.row_group(0)
    import struct
    for number, (column, encode) in enumerate([("s", str.encode), ("i", lambda v: struct.pack("<i", v)),
                                               ("l", lambda v: struct.pack("<q", v))]):
        for value in table.column(column).to_pylist():
            assert bloom_may_hold(handle, chunks.column(number), [xxh64(encode(value))]), (column, value)
    absent = sum(bloom_may_hold(handle, chunks.column(0), [xxh64(f"absent{n}".encode())]) for n in range(200))
    assert absent < 20  # and it does say "absent" (fpp 0.001)
    assert xxh64(b"") == 0xEF46DB3751D8E999 and xxh64(b"a") == 0xD24EC4F1A98C6E5B
    # Integers are hashed all at once (issue 43.3): the same hashes, and one probe with every one of them.
    import numpy as np

    from piitracer.verify.parquet_bloom import xxh64_fixed

    ints, longs = table.column("i").to_pylist(), table.column("l").to_pylist()
    assert list(xxh64_fixed(np.array(ints, np.int32).view(np.uint32).astype(np.uint64), 4)) == \
        [xxh64(struct.pack("<i", v)) for v in ints]
    assert list(xxh64_fixed(np.array(longs, np.int64).view(np.uint64), 8)) == [xxh64(struct.pack("<q", v)) for v in longs]
    assert bloom_may_hold(handle, chunks.column(2), xxh64_fixed(np.array(longs[:1] + [12345], np.int64).view(np.uint64), 8))
    assert not bloom_may_hold(handle, chunks.column(1), np.array([], np.uint64))


# ---- verify --explain, JSON and the report ---------------------------------------------------------

def _workspace(tmp_path: Path, location: Path):
    import yaml

    import piitracer

    folder = tmp_path / "ws"
    (folder / "sql").mkdir(parents=True)
    (folder / "sql" / "none.sql").write_text("-- no pipelines\n")
    config = {"lineage": {"sql": [{"path": "sql"}]},
              "catalog": {"crm.people": {"format": "parquet", "location": str(location),
                                         "columns": ["user_id", "email", "note"], "identifiers": ["user_id", "email"],
                                         "subject_key": "user_id"}}}
    (folder / "piitracer.yaml").write_text(yaml.safe_dump(config))
    return piitracer.load_workspace(folder)


def test_cli_explain_json_and_report_say_how_chunks_were_proven_without_a_value(tmp_path: Path) -> None:
    """`verify --explain DATASET` lists each decoded chunk and why; --output json carries the
    per-method counts and bytes; the audit report has the per-dataset proof table; no output holds
    a subject value; an unknown dataset is one line and exit 2."""
    import json
    import os
    import subprocess
    import sys

    import piitracer
    from piitracer.api import plan_deletion, write_private
    from piitracer.executor.journal import COMMITTED, Journal
    from piitracer.model.plan import Subject

    location = tmp_path / "people"
    location.mkdir()
    rows = 3000
    people = pa.table({"user_id": pa.array([8_000_000_000 + n for n in range(rows)], pa.int64()),
                       "email": [f"user{n}@example.org" for n in range(rows)],
                       "note": [f"note {n % 7}" for n in range(rows)]})
    pq.write_table(people, location / "clean.parquet", row_group_size=1000)  # every chunk proven
    # The subject's email inside a note of every row group, in chunks whose dictionary fell back to
    # plain pages (their pages hold its text: decoded).
    notes = [f"free text {n}" if n % 1000 != 999 else f"mail to {SUBJECT_EMAIL} bounced" for n in range(rows)]
    pq.write_table(people.set_column(2, "note", pa.array(notes)), location / "leak.parquet", dictionary_pagesize_limit=256,
                   row_group_size=1000, write_batch_size=64)
    ws = _workspace(tmp_path, location)
    plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), ["crm.people.user_id"],
                         [Subject(value=str(SUBJECT_ID), request_id="r1", received_at="2026-11-20T09:00:00Z")])
    plan_file = tmp_path / "plan.json"
    write_private(plan_file, plan.to_json())
    journal = Journal(ws.root / ".piitracer" / "journal.sqlite")
    journal.save_values(plan.plan_id, {"r1": {"crm.people.user_id": [SUBJECT_ID], "crm.people.email": [SUBJECT_EMAIL]}})
    journal.start_run("run1", plan.plan_id, {})
    for step in plan.steps:
        journal.mark(plan.plan_id, "run1", step, COMMITTED)
    journal.close()
    key = "chunk-proof-test-audit-key-0123456789"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PIITRACER_AUDIT")}, "PIITRACER_AUDIT_KEY": key}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "piitracer.cli.main", "--workspace", str(ws.root), *args],
                              capture_output=True, text=True, timeout=120, env=env)

    text = run("verify", str(plan_file), "--explain", "crm.people")
    assert text.returncode == 1, text.stderr
    # user_id and email are identifier columns (whole values of their own value sets: exact min/max
    # prove them in both files); note is free text: by its dictionary in clean.parquet, decoded in
    # leak.parquet (fell back to plain pages). Three row groups each.
    assert "Parquet column chunks: 3 decoded, 15 proven without decoding (dictionary 3, statistics 12)" in text.stdout
    explained = [line.strip() for line in text.stdout.splitlines() if line.startswith("  leak.parquet row group")]
    assert explained == [f"leak.parquet row group {g} column note: values may sit inside text; plain-encoded data "
                         "pages (dictionary fallback); a page holds a searched value's text" for g in range(3)], text.stdout
    assert "crm.people: 3 Parquet column chunk(s) decoded" in text.stdout
    searched = [line.strip() for line in text.stdout.splitlines() if "searched for" in line]
    assert searched == ["column email: searched for whole values of crm.people.email",
                        "column user_id: searched for whole values of crm.people.user_id",
                        "column note: searched for inside text", "every other column: searched for inside text"]

    document = json.loads(run("verify", str(plan_file), "--output", "json", "--no-record").stdout)
    proofs = document["datasets"][0]["chunk_proofs"]
    assert {k: proofs[k] for k in ("dictionary", "type", "decoded", "statistics", "bloom", "page_index", "pages")} == \
        {"dictionary": 3, "type": 0, "decoded": 3, "statistics": 12, "bloom": 0, "page_index": 0, "pages": 0}
    assert document["datasets"][0]["column_search"] == [
        {"column": "email", "search": "whole values", "value_sets": ["crm.people.email"]},
        {"column": "user_id", "search": "whole values", "value_sets": ["crm.people.user_id"]},
        {"column": "note", "search": "inside text", "value_sets": []},
        {"column": "*", "search": "inside text", "value_sets": []}]
    total = sum(p.stat().st_size for p in location.iterdir())
    assert proofs["bytes_total"] == total and 0 < proofs["bytes_read"] < total
    assert document["datasets"][0]["decoded_chunks"] == []  # only with --explain

    # The audit log records the claim with the counts: which search each column got.
    from piitracer.api import audit_log
    from piitracer.model.audit import EntryKind

    recorded = [e for e in audit_log(ws.root, key).entries() if e.kind is EntryKind.VERIFICATION]
    assert recorded and recorded[-1].body["datasets"][0]["column_search"] == document["datasets"][0]["column_search"]

    report = run("audit", "report", "--request", "r1", "--format", "html")
    assert report.returncode == 0, report.stderr
    assert "How Parquet column chunks were proven" in report.stdout
    table = report.stdout[report.stdout.index("How Parquet column chunks were proven"):]
    assert "<td>crm.people</td>" + "".join(f'<td class="num"><!--num-->{n}</td>' for n in (3, 12, 0, 0, 0, 0, 3)) in table
    markdown = run("audit", "report", "--request", "r1", "--format", "md").stdout
    assert "| crm.people | 3 | 12 | 0 | 0 | 0 | 0 | 3 |" in markdown

    unknown = run("verify", str(plan_file), "--explain", "crm.nope", "--no-record")
    assert unknown.returncode == 2 and len(unknown.stderr.strip().splitlines()) == 1
    assert "--explain crm.nope: not a dataset of plan" in unknown.stderr and "Traceback" not in unknown.stderr
    for output in (text.stdout, text.stderr, report.stdout, markdown):
        assert str(SUBJECT_ID) not in output and SUBJECT_EMAIL not in output


def test_a_short_whole_value_in_a_dictionary_beside_long_values_is_found(tmp_path: Path) -> None:
    """A string dictionary is first searched as raw bytes for every searched string: the short
    values (searched whole only) as well as those searched inside text."""
    index = ValueIndex.build({"s.code": ["ab1"], "s.email": [SUBJECT_EMAIL]})
    _write(tmp_path / "short.parquet", pa.table({"code": ["zz0", "ab1", "qq2"] * 30}))
    _write(tmp_path / "clean.parquet", pa.table({"code": ["zz0", "ab2", "qq2"] * 30}))
    found, scan = _scan_one(tmp_path, "short.parquet", index)
    assert found == {("short.parquet", "column code", "s.code")}
    found, scan = _scan_one(tmp_path, "clean.parquet", index)
    assert found == set() and scan.chunks.by_method == {"dictionary": 1}


def test_page_headers_longer_than_one_read_are_read_whole(tmp_path: Path) -> None:
    """Data page headers carrying 4 KB min/max statistics (texts of 4,096 characters) exceed one
    read-ahead of page headers: they are read whole, and the chunk is proven by its dictionary, or
    decoded when the subject sits in one of the texts."""
    index = ValueIndex.build(VALUE_SETS)
    texts = [(chr(ord("a") + n % 26) * 4096) for n in range(40)]
    _write(tmp_path / "long.parquet", pa.table({"text": texts * 3}), data_page_size=1000)
    found, scan = _scan_one(tmp_path, "long.parquet", index)
    assert found == set() and scan.chunks.by_method == {"dictionary": 1}
    planted = texts[:5] + ["b" * 2000 + f" {SUBJECT_EMAIL} " + "b" * 2000] + texts[5:]
    _write(tmp_path / "long_subject.parquet", pa.table({"text": planted * 3}), data_page_size=1000)
    found, scan = _scan_one(tmp_path, "long_subject.parquet", index)
    assert found == {("long_subject.parquet", "column text (inside text)", "s.email")}
    assert found == brute_force(tmp_path, ["long_subject.parquet"], index)
    assert "its dictionary holds a searched value" in scan.chunks.decoded_chunks[0].why


def test_a_default_encoded_file_is_proven_reading_a_part_of_its_bytes(tmp_path: Path) -> None:
    """A 1 MB file as pyarrow writes it by default (dictionary pages, snappy), no subject in it:
    every chunk proven (ids by min/max, texts by their dictionaries, amounts by type), reading the
    footer, the page headers and the dictionaries only: the name column's data pages are not read."""
    rng = random.Random(7)
    rows = 25_000
    names = [f"name{n}" for n in range(500)]
    table = pa.table({"user_id": pa.array(range(8_000_000_000, 8_000_000_000 + rows), pa.int64()),
                      "email": [f"user{n}@example.com" for n in range(rows)],
                      "name": [rng.choice(names) for _ in range(rows)],
                      "amount": [rng.random() for _ in range(rows)]})
    _write(tmp_path / "big.parquet", table)
    found, scan = _scan_one(tmp_path, "big.parquet", ValueIndex.build(VALUE_SETS))
    assert found == set()
    assert scan.chunks.by_method == {"statistics": 1, "dictionary": 2, "type": 1}
    name_data = pq.ParquetFile(tmp_path / "big.parquet").metadata.row_group(0).column(2).total_compressed_size
    assert scan.chunks.bytes_read < scan.chunks.bytes_total * 0.6
    assert scan.chunks.bytes_total == (tmp_path / "big.parquet").stat().st_size and name_data > 10_000


def test_decoded_chunks_are_all_counted_and_the_first_ten_thousand_listed() -> None:
    """A scan of many files keeps a bounded list of decoded chunks (what --explain prints) and
    counts every one."""
    from piitracer.verify.decoders import DECODED_LISTED, ChunkCounts, DecodedChunk

    total = ChunkCounts()
    for number in range(3):
        part = ChunkCounts()
        for group in range(DECODED_LISTED // 2 + 1):
            part.count("decoded", DecodedChunk(f"f{number}.parquet", group, "note", "plain-encoded: no dictionary page"))
        part.count("dictionary")
        total.add(part)
    assert total.decoded == total.by_method["decoded"] == 3 * (DECODED_LISTED // 2 + 1)
    assert total.proven == total.by_method["dictionary"] == 3
    assert len(total.decoded_chunks) == DECODED_LISTED and total.decoded_chunks[0].file == "f0.parquet"


def test_the_reports_proof_table_has_a_column_per_rule_pages_included() -> None:
    """Every rule the verifier counts (model.verification.ChunkProofs) has its column in the
    report's proof table, in the order of its headers."""
    from piitracer.model.verification import ChunkProofs
    from piitracer.render.report_facts import PROOF_HEADERS, PROOF_METHODS, proof_rows

    counted = set(ChunkProofs.model_fields) - {"bytes_read", "bytes_total"}
    assert counted == set(PROOF_METHODS)
    proofs = {method: position + 1 for position, method in enumerate(PROOF_METHODS)}
    rows = proof_rows({"datasets": [{"dataset": "crm.people", "chunk_proofs": {**proofs, "bytes_read": 7, "bytes_total": 70}}]})
    assert rows == [["crm.people", *range(1, len(PROOF_METHODS) + 1), 7, 70]]
    assert PROOF_HEADERS[PROOF_METHODS.index("pages") + 1] == "pages" and len(PROOF_HEADERS) == len(rows[0])
