"""How the guard scan reads a file's candidate columns (issue 52): a text column chunk that is all
dictionary-encoded with few distinct values for its rows is read through its dictionary; one of
mostly distinct values, one that outgrew its dictionary (or has none) as plain values, every value
hashed; either way the scan finds exactly the values a Python set of one-value hashes says, and
nothing else."""

from __future__ import annotations

import random
import secrets
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from piitracer.guard import SuppressionList, suppression_hash
from piitracer.model.workspace import DatasetFormat
from piitracer.storage.locations import Location
from piitracer.storage.store import Store
from piitracer.verify.guard_scan import (_DICTIONARY_ONLY, _FEW_DISTINCT, ScanTarget, _bytes_per_value, _through_dictionary,
                                         scan_table)


class NothingSeen:
    def position(self, dataset: str):
        return None

    def seen(self, dataset: str) -> set[str]:
        return set()


def table(rows: int, seed: int) -> pa.Table:
    rng = random.Random(seed)
    people = [rng.randrange(10**9, 10**10) for _ in range(rows)]
    return pa.table({
        "user_id": pa.array(people, pa.int64()),  # mostly distinct
        "phone": pa.array([f"+91{p % 10**10:010d}" if p % 13 else None for p in people]),  # mostly distinct
        "city": pa.array([rng.choice(["Pune", "Delhi", "Chennai", "", None]) for _ in people]),  # few values
        "segment": pa.array([rng.randrange(5) for _ in people], pa.int32()),  # few values
        "email": pa.array([f"user{p % 50}@example.org" for p in people], pa.large_string()),  # few, over 15 bytes
    })


def test_which_chunks_are_read_through_their_dictionary(tmp_path) -> None:
    data = table(20_000, 1)
    pq.write_table(data, tmp_path / "default.parquet")  # every dictionary fits: ids and phones distinct all the same
    pq.write_table(data, tmp_path / "small-dictionary.parquet", dictionary_pagesize_limit=4_096)  # ids, phones fall back
    pq.write_table(data, tmp_path / "no-dictionary.parquet", use_dictionary=False)

    def widths(name: str) -> dict[str, float | None]:
        group = pq.ParquetFile(tmp_path / name).metadata.row_group(0)
        return {column: _bytes_per_value(group.column(n)) for n, column in enumerate(data.column_names)}

    def below(found: dict, limit: float) -> set[str]:
        return {name for name, width in found.items() if width is not None and width < limit}

    def through_dictionary(found: dict) -> set[str]:
        return {name for name in ("phone", "city", "email") if _through_dictionary(found[name], data.num_rows)}

    default, small, plain = widths("default.parquet"), widths("small-dictionary.parquet"), widths("no-dictionary.parquet")
    assert below(default, _DICTIONARY_ONLY) == set(data.column_names)  # every chunk all dictionary-encoded
    assert through_dictionary(default) == {"city", "email"}  # the phones are mostly distinct: read plain
    assert below(default, _FEW_DISTINCT) == {"city", "segment", "email"}  # dictionary-encoded before hashing
    assert below(small, _DICTIONARY_ONLY) == {"city", "segment", "email"}
    assert through_dictionary(small) == {"city", "email"}
    assert below(small, _FEW_DISTINCT) == {"city", "segment", "email"}
    assert set(plain.values()) == {None} and through_dictionary(plain) == set()


def test_a_chunk_that_outgrew_its_dictionary_near_its_end_is_read_plain_and_matched_the_same(tmp_path, monkeypatch) -> None:
    """75,000 ten-character PANs, all but a few distinct: pyarrow's 1 MiB dictionary holds ~73,000
    of them, so the chunk falls back to plain values only on its last page and its data pages
    look all dictionary-encoded (~2 bytes a value). Read through the dictionary, Arrow encodes
    that last page into it value by value (2-3x the plain read): it is read plain, and the scan
    still finds exactly the PANs on the list."""
    rng = random.Random(5)
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    pans = ["".join(rng.choice(letters) for _ in range(5)) + f"{rng.randrange(10**4):04d}" + rng.choice(letters)
            for _ in range(75_000)]
    folder = tmp_path / "t"
    folder.mkdir()
    pq.write_table(pa.table({"pan": pans}), folder / "part-0.parquet")
    chunk = pq.ParquetFile(folder / "part-0.parquet").metadata.row_group(0).column(0)
    assert _bytes_per_value(chunk) < _DICTIONARY_ONLY  # it looks all dictionary-encoded
    key = secrets.token_bytes(32)
    erased = rng.sample(pans, 6) + ["ZZZZZ0000Z"]
    suppression = SuppressionList(key, [suppression_hash(key, value) for value in erased])
    kinds = []
    real = SuppressionList.matches

    def recording(self, array, *, distinct=True):
        kinds.append(array.type)
        return real(self, array, distinct=distinct)

    monkeypatch.setattr(SuppressionList, "matches", recording)
    target = ScanTarget("t", DatasetFormat.PARQUET, Location.parse(str(folder)), ("pan",))
    scan, found = scan_table(target, suppression, Store(), NothingSeen())
    assert set(kinds) == {pa.string()}  # read plain, not as a dictionary
    assert scan.rows_read == 75_000
    assert {value for item in found for value in item.values} == set(erased[:6])


@pytest.mark.parametrize("how", [{}, {"dictionary_pagesize_limit": 4_096}, {"use_dictionary": False},
                                 {"row_group_size": 3_000, "dictionary_pagesize_limit": 4_096}])
def test_the_scan_finds_what_a_set_of_one_value_hashes_says(tmp_path, how, monkeypatch) -> None:
    data = table(12_000, 2)
    folder = tmp_path / "t"
    folder.mkdir()
    pq.write_table(data, folder / "part-0.parquet", **how)
    key = secrets.token_bytes(32)
    rng = random.Random(3)
    erased = ([rng.choice(data.column("user_id").to_pylist()) for _ in range(5)]
              + [value for value in rng.sample(data.column("phone").to_pylist(), 8) if value]
              + ["Delhi", 3, "user7@example.org", "nobody", 10**12])
    on_list = {suppression_hash(key, value) for value in erased}
    suppression = SuppressionList(key, list(on_list) + [secrets.token_bytes(16) for _ in range(500)])
    calls = []
    real = SuppressionList.matches

    def counting(self, array, *, distinct=True):
        calls.append((array.type, distinct))
        return real(self, array, distinct=distinct)

    monkeypatch.setattr(SuppressionList, "matches", counting)
    target = ScanTarget("t", DatasetFormat.PARQUET, Location.parse(str(folder)), None)
    scan, found = scan_table(target, suppression, Store(), NothingSeen())
    assert scan.problem is None and scan.rows_read == data.num_rows
    assert scan.columns == ("city", "email", "phone", "segment", "user_id")
    expected = {}
    for name in scan.columns:
        for value in data.column(name).to_pylist():
            digest = suppression_hash(key, value)
            if digest in on_list:
                expected.setdefault((name, digest), set()).add(value)
    assert {(item.column, item.hash): item.values for item in found} == expected
    assert {column for column, _ in expected} == {"city", "email", "phone", "segment", "user_id"}
    # every column is read plain or as a dictionary according to its chunk
    dictionaries = [kind for kind, _ in calls if pa.types.is_dictionary(kind)]
    if how.get("use_dictionary") is False:
        assert not dictionaries and not any(distinct for _, distinct in calls)
    else:
        assert dictionaries


def test_a_list_matches_the_same_with_or_without_distinct_values() -> None:
    key = secrets.token_bytes(32)
    suppression = SuppressionList(key, [suppression_hash(key, value) for value in (7, "7", "x" * 20, "Delhi", 12)])
    columns = [pa.array([7, 8, None, 7, 12], pa.int16()), pa.array([7.0, 7.5, None, 12.0]),
               pa.array([Decimal("7.00"), Decimal("1.50")], pa.decimal128(5, 2)),
               pa.array(["x" * 20, "x" * 20, "x" * 21, "", None, "Delhi"]),
               pa.chunked_array([pa.array(["7", None]), pa.array([], pa.string()), pa.array(["8", "x" * 20])]),
               pa.array(["Delhi", "Pune", None]).dictionary_encode(), pa.array([True, False]), pa.array([], pa.int64())]
    for column in columns:
        expected = [suppression_hash(key, value) in {suppression_hash(key, v) for v in (7, "x" * 20, "Delhi", 12)}
                    for value in column.to_pylist()]
        assert suppression.matches(column).to_pylist() == expected
        assert suppression.matches(column, distinct=False).to_pylist() == expected



def test_one_pool_of_threads_matches_every_table_of_a_scan(tmp_path, monkeypatch) -> None:
    """scan_tables starts its matching threads once for all its tables (each table's own pool cost
    ~1 ms a thread), and every table is still read whole and matched exactly."""
    from piitracer.verify import guard_scan

    key = secrets.token_bytes(32)
    data = table(3_000, 4)
    erased = next(phone for phone in data.column("phone").to_pylist()[1_000:2_000] if phone)  # in t0 and t1
    targets = []
    for number in range(3):
        folder = tmp_path / f"t{number}"
        folder.mkdir()
        pq.write_table(data.slice(number * 1_000, 1_000) if number else data, folder / "part-0.parquet")
        targets.append(ScanTarget(f"t{number}", DatasetFormat.PARQUET, Location.parse(str(folder)), ("phone",)))
    pools = []
    real = guard_scan.matching_pool

    def counted():
        pools.append(real())
        return pools[-1]

    monkeypatch.setattr(guard_scan, "matching_pool", counted)
    scans, found = guard_scan.scan_tables(targets, SuppressionList(key, [suppression_hash(key, erased)]), Store(),
                                          NothingSeen())
    assert len(pools) == 1
    assert [(scan.dataset, scan.rows_read, scan.problem) for scan in scans] == [("t0", 3_000, None), ("t1", 1_000, None),
                                                                                ("t2", 1_000, None)]
    assert sorted(item.dataset for item in found) == ["t0", "t1"]


def test_a_column_chunk_that_cannot_be_decoded_fails_its_table_and_the_next_table_is_still_scanned(tmp_path) -> None:
    """A column chunk is read on the pool (its footer was fine): its error reaches the scan, which
    reports the table (every task of it stopped, none left reading its file) and goes on with the
    next table on the same threads."""
    from piitracer.verify import guard_scan

    key = secrets.token_bytes(32)
    data = table(6_000, 6)
    erased = next(phone for phone in data.column("phone").to_pylist() if phone)
    broken, good = tmp_path / "broken", tmp_path / "good"
    for folder in (broken, good):
        folder.mkdir()
        pq.write_table(data, folder / "part-0.parquet", row_group_size=2_000)
    path = broken / "part-0.parquet"
    chunk = pq.ParquetFile(path).metadata.row_group(1).column(data.column_names.index("phone"))
    raw = bytearray(path.read_bytes())
    middle = chunk.data_page_offset + chunk.total_compressed_size // 2
    raw[middle:middle + 64] = b"\xff" * 64  # inside the second row group's phone pages
    path.write_bytes(bytes(raw))
    targets = [ScanTarget(name, DatasetFormat.PARQUET, Location.parse(str(folder)), ("user_id", "phone"))
               for name, folder in (("broken", broken), ("good", good))]
    scans, found = guard_scan.scan_tables(targets, SuppressionList(key, [suppression_hash(key, erased)]), Store(),
                                          NothingSeen())
    assert scans[0].dataset == "broken" and scans[0].problem.startswith("cannot read it: ")
    assert (scans[1].dataset, scans[1].problem, scans[1].rows_read) == ("good", None, 6_000)
    assert [(item.dataset, item.column, item.values) for item in found] == [("good", "phone", {erased})]
