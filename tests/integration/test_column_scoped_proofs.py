"""Column-scoped search (piitracer.verify.scope): a dataset's identifier columns are proven for the
whole values of their own value sets; every other column for every value, whole and inside text.

The pruned scan (statistics, page index, Bloom filters hashed with a column's own values,
dictionaries, decoded rows) must find exactly what a brute-force decode of every column finds
under the same per-column claim, computed here independently of the verifier's scope code."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from piitracer.storage.locations import Location
from piitracer.storage.store import Store
from piitracer.verify.columns import column_hits
from piitracer.verify.decoders import scan_location
from piitracer.verify.scope import INSIDE_TEXT, WHOLE_VALUES, ColumnScope, ScopedIndex, column_scope, search_notes
from piitracer.verify.values import ValueIndex

SUBJECT_ID = 7_000_000_001
SUBJECT_PAN = "ABCDE1234F"
SUBJECT_PHONE = "+15550100"
VALUE_SETS = {"s.user_id": [SUBJECT_ID], "s.pan": [SUBJECT_PAN], "s.phone": [SUBJECT_PHONE]}
# What the catalog says of dataset s: three identifier columns; note (free text) and contact
# (not catalogued) are searched for every value inside text.
DECLARED = {"user_id": ("s.user_id",), "pan": ("s.pan",), "phone": ("s.phone",)}
SCOPE = column_scope("s", ["user_id", "pan", "phone"], True, VALUE_SETS)
CODECS = ["snappy", "zstd", "gzip", "none"]


def brute_force(folder: Path, files: list[str]) -> set[tuple[str, str, str]]:
    """Every column of every file decoded and searched under the declared claim: a declared
    identifier column for the whole values of its own sets, any other for everything."""
    full = ValueIndex.build(VALUE_SETS)
    found = set()
    for name in files:
        handle = pq.ParquetFile(folder / name)
        for group in range(handle.metadata.num_row_groups):  # each row group whole, as the verifier reads one
            table = handle.read_row_group(group)
            for column in table.column_names:
                sets = DECLARED.get(column.lower())
                index = ValueIndex.build({s: VALUE_SETS[s] for s in sets}, inside_text=False) if sets else full
                for where, names in column_hits(column, table.column(column), index, redact=full):
                    found |= {(name, where, n) for n in names}
    return found


def pruned(folder: Path, files: list[str], scope: ColumnScope = SCOPE):
    scoped = ScopedIndex.build(VALUE_SETS, sorted(VALUE_SETS), scope)
    scan = scan_location(Location.parse(folder), scoped.index, Store(), files, scope=scoped)
    return {(h.file, h.where, h.value_set) for h in scan.hits if h.kind == "data"}, scan


def _strings(rng: random.Random, rows: int, filler, planted: list[str]) -> list[str | None]:
    values = [None if rng.random() < 0.03 else filler(rng) for _ in range(rows)]
    for value in planted:
        if rng.random() < 0.35:
            values[rng.randrange(rows)] = value
    return values


def _pan(rng: random.Random) -> str:
    # Around the subject in byte order: its PAN lies inside most chunks' min/max.
    return f"{rng.choice('AAB')}{rng.choice('BBC')}CDE{rng.randrange(10000):04d}{rng.choice('EFG')}"


def _phone(rng: random.Random) -> str:
    return f"+1555{rng.randrange(10000):04d}"


def random_file(rng: random.Random, path: Path) -> None:
    """Identifier columns (user_id, pan, phone) holding their subject value whole, another set's
    value whole and a value inside text; a free-text note and an uncatalogued contact holding
    values whole and inside text. Random encodings, Bloom filters, page indexes, fallbacks."""
    rows = rng.randrange(1, 300)
    inside = [f"card {SUBJECT_PAN} used", f"call {SUBJECT_PHONE} later", f"user {SUBJECT_ID} closed"]
    ids = [SUBJECT_ID + rng.choice([-1, 1]) * rng.randrange(1, rng.choice([5, 500]) + 2) for _ in range(rows)]
    if rng.random() < 0.35:
        ids[rng.randrange(rows)] = SUBJECT_ID
    columns = {
        "user_id": pa.array(ids, pa.int64()),
        rng.choice(["pan", "PAN"]): _strings(rng, rows, _pan, [SUBJECT_PAN, SUBJECT_PHONE, inside[0]]),
        "phone": _strings(rng, rows, _phone, [SUBJECT_PHONE, SUBJECT_PAN, inside[1], str(SUBJECT_ID)]),
        "note": _strings(rng, rows, lambda r: f"note {r.randrange(50)}", [SUBJECT_PAN, *inside]),
        "contact": _strings(rng, rows, _phone, [SUBJECT_PHONE, inside[0]]),
        "amount": pa.array([rng.random() for _ in range(rows)]),  # no searched value is a double
    }
    chosen = rng.sample(sorted(columns), rng.randrange(2, len(columns) + 1))
    table = pa.table({name: columns[name] for name in chosen})
    options = dict(
        row_group_size=rng.choice([rows, max(1, rows // 3), 7]),
        compression=rng.choice(CODECS),
        use_dictionary=rng.choice([True, False, rng.sample(chosen, rng.randrange(0, len(chosen) + 1))]),
        write_page_index=rng.random() < 0.5,
        data_page_version=rng.choice(["1.0", "2.0"]),
    )
    if rng.random() < 0.4:
        options["dictionary_pagesize_limit"] = rng.choice([16, 64, 256])  # falls back to plain pages
    if rng.random() < 0.7:
        options["bloom_filter_options"] = {name: {"ndv": rng.choice([20, 300]), "fpp": rng.choice([0.01, 0.1])}
                                           for name in rng.sample(chosen, rng.randrange(1, len(chosen) + 1))}
    if rng.random() < 0.3:
        options["max_rows_per_page"] = rng.choice([3, 20])
    pq.write_table(table, path, **options)


def test_scoped_scan_finds_exactly_what_a_full_decode_finds_under_the_same_claim(tmp_path: Path) -> None:
    """300 random files: the pruned scan's data hits equal the brute-force decode under the
    per-column claim; Bloom filters prove string identifier chunks (impossible when every string
    column is searched inside text); the narrowing is real (the full search finds more)."""
    rng = random.Random(2911)
    files = []
    for number in range(300):
        name = f"f{number:03d}.parquet"
        random_file(rng, tmp_path / name)
        files.append(name)
    expected = brute_force(tmp_path, files)
    found, scan = pruned(tmp_path, files)
    assert found == expected
    where = {w for _, w, _ in expected}
    # Identifier columns: their own whole values; free text and uncatalogued: whole and inside text.
    assert {"column user_id", "column pan", "column PAN", "column phone", "column note", "column note (inside text)",
            "column contact", "column contact (inside text)"} <= where
    assert not {w for w in where if w.startswith(("column pan ", "column PAN ", "column phone ", "column user_id "))}
    assert {s for _, w, s in expected if w in ("column pan", "column PAN")} == {"s.pan"}  # the phone planted there: not
    assert {s for _, w, s in expected if w == "column phone"} == {"s.phone"}
    assert set(scan.chunks.by_method) == {"type", "statistics", "page_index", "bloom", "dictionary", "pages", "decoded"}
    # String identifier chunks proven by their Bloom filter: count them from the files themselves.
    bloom_strings = 0
    for name in files:
        metadata = pq.ParquetFile(tmp_path / name).metadata
        for group in range(metadata.num_row_groups):
            for number in range(metadata.num_columns):
                chunk = metadata.row_group(group).column(number)
                if chunk.path_in_schema.lower() in ("pan", "phone") and chunk.bloom_filter_offset is not None:
                    bloom_strings += 1
    assert bloom_strings > 50 and scan.chunks.by_method["bloom"] > 20
    unscoped, _ = pruned(tmp_path, files, ColumnScope())
    assert found < unscoped  # the inside-text and other-set values in identifier columns


def _one(folder: Path, name: str, table: pa.Table, **options):
    pq.write_table(table, folder / name, **options)
    return pruned(folder, [name])


def test_a_subject_in_a_dictionary_a_fallback_chunk_an_indexed_page_and_a_bloom_covered_column_is_found(
        tmp_path: Path) -> None:
    """The acceptance cases, in identifier columns searched for whole values only: each found, each
    chunk decoded for the reason named, and the same files without the subject proven."""
    pans = [f"AB{'CD' if n % 2 else 'ZZ'}E{n:04d}F" for n in range(3000)]  # the subject lies between them

    found, scan = _one(tmp_path, "dict.parquet", pa.table({"pan": pans[:50] + [SUBJECT_PAN] + pans[50:100]}))
    assert found == {("dict.parquet", "column pan", "s.pan")}
    assert [c.why for c in scan.chunks.decoded_chunks] == [
        "min/max admit a searched value, or are not exact; no Bloom filter; its dictionary holds a searched value"]
    found, scan = _one(tmp_path, "dict_clean.parquet", pa.table({"pan": pans[:100] + [f"x {SUBJECT_PAN}"]}))
    assert found == set() and scan.chunks.by_method == {"dictionary": 1}  # inside text: not an identifier's claim

    found, scan = _one(tmp_path, "fallback.parquet", pa.table({"pan": pans[:1500] + [SUBJECT_PAN] + pans[1500:]}),
                       dictionary_pagesize_limit=1024, data_page_size=1024)
    assert "PLAIN" in pq.ParquetFile(tmp_path / "fallback.parquet").metadata.row_group(0).column(0).encodings
    assert found == {("fallback.parquet", "column pan", "s.pan")}
    assert "plain-encoded data pages (dictionary fallback)" in scan.chunks.decoded_chunks[0].why

    ids = list(range(SUBJECT_ID - 5000, SUBJECT_ID - 1000, 2)) + [SUBJECT_ID] + list(range(SUBJECT_ID + 1000, SUBJECT_ID + 5000, 2))
    paged = dict(write_page_index=True, max_rows_per_page=100, use_dictionary=False)
    found, scan = _one(tmp_path, "paged.parquet", pa.table({"user_id": pa.array(ids, pa.int64())}), **paged)
    assert found == {("paged.parquet", "column user_id", "s.user_id")} and scan.chunks.by_method == {"decoded": 1}
    ids.remove(SUBJECT_ID)
    found, scan = _one(tmp_path, "paged_clean.parquet", pa.table({"user_id": pa.array(ids, pa.int64())}), **paged)
    assert found == set() and scan.chunks.by_method == {"page_index": 1}

    bloom = dict(use_dictionary=False, bloom_filter_options={"pan": {"ndv": 5000, "fpp": 0.01}})
    found, scan = _one(tmp_path, "bloom.parquet", pa.table({"pan": pans + [SUBJECT_PAN]}), **bloom)
    assert found == {("bloom.parquet", "column pan", "s.pan")}
    assert "Bloom filter admits a searched value" in scan.chunks.decoded_chunks[0].why
    # Without the subject (and with it inside a longer text, not an identifier's whole value): a
    # string identifier chunk proven by its Bloom filter alone.
    found, scan = _one(tmp_path, "bloom_clean.parquet", pa.table({"pan": pans + [f"{SUBJECT_PAN}X"]}), **bloom)
    assert found == set() and scan.chunks.by_method == {"bloom": 1}
    # The same chunk beside a free-text column holding the subject inside text: found there.
    found, scan = _one(tmp_path, "beside.parquet", pa.table({"pan": pans + ["ZZ"], "note": ["x"] * 3000 + [
        f"paid with {SUBJECT_PAN}."]}), **bloom)
    assert found == {("beside.parquet", "column note (inside text)", "s.pan")}
    assert scan.chunks.by_method == {"bloom": 1, "decoded": 1}


def test_the_scope_comes_only_from_what_the_catalog_or_plan_says() -> None:
    """Identifier columns confirmed by a person and the plan's key column, with known value sets;
    nothing from unconfirmed identifiers, uncatalogued columns or columns with no known set."""
    searched = ["crm.people.user_id", "crm.people.email", "src.users.pan", "src.users.user_id"]
    assert column_scope("crm.people", ["user_id", "email", "nickname"], True, searched).as_dict() == {
        "email": ("crm.people.email",), "user_id": ("crm.people.user_id",)}  # nickname: no set known
    # Classify's unconfirmed proposal narrows nothing; the key column still does (its erasure matches whole values).
    assert column_scope("crm.people", ["user_id", "email"], False, searched).as_dict() == {}
    assert column_scope("mart.orders", [], False, searched, key_column="Cust", key_sets=["src.users.user_id"]).as_dict() \
        == {"cust": ("src.users.user_id",)}
    # Lineage's value forms for a catalogued identifier; sets not searched in the dataset are dropped.
    assert column_scope("mart.orders", ["card"], True, searched, {"card": ["src.users.pan", "other.set"]}).as_dict() \
        == {"card": ("src.users.pan",)}
    notes = search_notes(column_scope("crm.people", ["email"], True, searched), ["email", "note"])
    assert notes == [("email", WHOLE_VALUES, ("crm.people.email",)), ("note", INSIDE_TEXT, ()), ("*", INSIDE_TEXT, ())]


def test_a_schema_with_two_spellings_of_an_identifier_column_gets_the_full_search(tmp_path: Path) -> None:
    """Columns are matched case-insensitively; two top-level columns of the same lower-case name
    cannot both be the identifier: both are searched for everything (never weaker by doubt)."""
    table = pa.table({"pan": [f"x {SUBJECT_PAN}"], "PAN": [SUBJECT_PHONE]})
    found, _ = _one(tmp_path, "twice.parquet", table)
    assert found == {("twice.parquet", "column pan (inside text)", "s.pan"), ("twice.parquet", "column PAN", "s.phone")}
    found, _ = _one(tmp_path, "once.parquet", pa.table({"PAN": [f"x {SUBJECT_PAN}", SUBJECT_PHONE, SUBJECT_PAN]}))
    assert found == {("once.parquet", "column PAN", "s.pan")}


@pytest.mark.slow
def test_spark_tasks_search_each_column_as_the_driver_does(tmp_path: Path, warehouse: Path) -> None:
    """The scope travels with the request to Spark tasks (names only): the same findings and chunk
    counts as the driver."""
    from spark_lakehouse import spark_for

    from piitracer.verify.engines import FileScanner, ScanRequest, SparkFileScanner, list_requests

    rng = random.Random(5)
    for number in range(40):
        random_file(rng, tmp_path / f"f{number:02d}.parquet")
    request = ScanRequest(Location.parse(tmp_path), tuple(sorted(VALUE_SETS)), scope=SCOPE)
    listing = list_requests([request], Store())
    driver = FileScanner().scan(listing, VALUE_SETS, Store())[0]
    # The test session's settings (spark_for): whichever module starts the process's one session
    # gives it its jars, and the JDBC catalog tests later in this worker need the PostgreSQL driver.
    tasks = SparkFileScanner(lambda: spark_for(warehouse).sparkContext).scan(
        listing, VALUE_SETS, Store())[0]
    assert tasks.hits == driver.hits and tasks.chunks.by_method == driver.chunks.by_method
    assert {h.where for h in driver.hits if h.kind == "data"} >= {"column note (inside text)", "column phone"}
    assert driver.hits == pruned_hits(tmp_path, [f"f{n:02d}.parquet" for n in range(40)])


def pruned_hits(folder: Path, files: list[str]):
    return pruned(folder, files)[1].hits


def test_verify_reports_each_columns_search_and_the_sweep_reports_its_chunk_proofs(tmp_path: Path) -> None:
    """End to end through the API: the plan's dataset says per column which search it got (its
    identifiers whole values, a note inside text); the PAN inside the identifier column's text is
    outside the claim, the one in the note is found; the sweep's unplanned dataset carries how its
    chunks were proven (it is read by the same prover)."""
    import yaml

    import piitracer
    from piitracer.api import plan_deletion, verify_plan
    from piitracer.model.plan import Subject

    people, other = tmp_path / "people", tmp_path / "other"
    people.mkdir()
    other.mkdir()
    pq.write_table(pa.table({"user_id": pa.array([SUBJECT_ID + 1, SUBJECT_ID + 2], pa.int64()),
                             "pan": [f"old {SUBJECT_PAN}", "ZZZZZ0000Z"], "note": ["hi", f"card {SUBJECT_PAN}"]}),
                   people / "part-0.parquet")
    pq.write_table(pa.table({"pan": [SUBJECT_PAN, "AAAAA0000A"], "n": pa.array([1.0, 2.0])}), other / "part-0.parquet")
    folder = tmp_path / "ws"
    (folder / "sql").mkdir(parents=True)
    (folder / "sql" / "none.sql").write_text("-- no pipelines\n")
    catalog = {"crm.people": {"format": "parquet", "location": str(people), "columns": ["user_id", "pan", "note"],
                              "identifiers": ["user_id", "pan"], "subject_key": "user_id"},
               "crm.other": {"format": "parquet", "location": str(other), "columns": ["pan", "n"],
                             "identifiers": ["pan"]}}
    (folder / "piitracer.yaml").write_text(yaml.safe_dump({"lineage": {"sql": [{"path": "sql"}]}, "catalog": catalog,
                                                           "warehouse_roots": [str(tmp_path)]}))
    ws = piitracer.load_workspace(folder)
    plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), ["crm.people.user_id"],
                         [Subject(value=str(SUBJECT_ID), request_id="r1", received_at="2026-11-20T09:00:00Z")])
    values = {"crm.people.user_id": [SUBJECT_ID], "crm.people.pan": [SUBJECT_PAN]}
    report = verify_plan(ws, plan, values, {s.id: "committed" for s in plan.steps}, sweep="catalog")
    mine = report.result("crm.people")
    assert [(c.column, c.search, c.value_sets) for c in mine.column_search] == [
        ("pan", "whole values", ("crm.people.pan",)), ("user_id", "whole values", ("crm.people.user_id",)),
        ("note", "inside text", ()), ("*", "inside text", ())]
    assert {(f.where, f.value_set) for f in mine.findings if f.kind == "data"} == {
        ("column note (inside text)", "crm.people.pan")}
    swept = report.result("crm.other")
    assert swept.state.value == "unplanned" and {f.where for f in swept.findings if f.kind == "data"} == {"column pan"}
    assert swept.chunk_proofs.decoded == 1 and swept.chunk_proofs.type == 1  # pan decoded, the double by type
    assert [(c.column, c.search) for c in swept.column_search] == [("*", "inside text")]  # no plan: the full search
    assert swept.chunk_proofs.bytes_total == (other / "part-0.parquet").stat().st_size
    assert "inside text" in mine.model_dump_json() and SUBJECT_PAN not in report.model_dump_json()


def test_identifiers_classify_only_proposed_keep_the_full_search(tmp_path: Path) -> None:
    """``classified_by: auto`` (catalog classify's unconfirmed proposal): its identifiers narrow
    nothing, so a PAN inside the pan column's text is found; the plan's key column still gets whole
    values (its erasure matches whole values)."""
    import yaml

    import piitracer
    from piitracer.api import plan_deletion, verify_plan
    from piitracer.model.plan import Subject

    people = tmp_path / "people"
    people.mkdir()
    pq.write_table(pa.table({"user_id": pa.array([SUBJECT_ID + 1], pa.int64()), "pan": [f"old {SUBJECT_PAN}"]}),
                   people / "part-0.parquet")
    folder = tmp_path / "ws"
    (folder / "sql").mkdir(parents=True)
    (folder / "sql" / "none.sql").write_text("-- no pipelines\n")
    catalog = {"crm.people": {"format": "parquet", "location": str(people), "columns": ["user_id", "pan"],
                              "identifiers": ["user_id", "pan"], "subject_key": "user_id", "classified_by": "auto"}}
    (folder / "piitracer.yaml").write_text(yaml.safe_dump({"lineage": {"sql": [{"path": "sql"}]}, "catalog": catalog}))
    ws = piitracer.load_workspace(folder)
    plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), ["crm.people.user_id"],
                         [Subject(value=str(SUBJECT_ID), request_id="r1", received_at="2026-11-20T09:00:00Z")])
    values = {"crm.people.user_id": [SUBJECT_ID], "crm.people.pan": [SUBJECT_PAN]}
    mine = verify_plan(ws, plan, values, {s.id: "committed" for s in plan.steps}).result("crm.people")
    assert [(c.column, c.search) for c in mine.column_search] == [
        ("user_id", "whole values"), ("pan", "inside text"), ("*", "inside text")]
    assert {(f.where, f.value_set) for f in mine.findings if f.kind == "data"} == {
        ("column pan (inside text)", "crm.people.pan")}
