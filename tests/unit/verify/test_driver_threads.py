"""The driver decodes files on several threads (verify.engines.FileScanner): the same findings,
chunk counts, key rows and progress as file after file, and no value index shared between two
threads (the searches cache what they derive on the index they are given)."""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from piitracer.formats.history import KeyColumn
from piitracer.storage.locations import Location
from piitracer.storage.store import Store
from piitracer.verify import engines
from piitracer.verify.engines import FileScanner, ScanRequest, list_requests
from piitracer.verify.scope import ColumnScope, column_scope

SUBJECTS = [7_000_000_001, 7_000_000_002]
VALUE_SETS = {"s.user_id": SUBJECTS, "s.pan": ["ABCDE1234F", "PQRST9876Z"], "s.phone": ["+15550100", "+15550199"],
              "t.email": ["someone@example.com"]}
SCOPE = column_scope("s", ["user_id", "pan", "phone"], True, VALUE_SETS)


def random_file(rng: random.Random, path: Path) -> None:
    """Rows around the subjects' values, some holding one whole or inside text, in random
    encodings, codecs, row groups, Bloom filters and page indexes."""
    rows = rng.randrange(1, 400)
    user_id = [rng.choice([rng.randrange(7_000_000_000, 7_000_000_100), None]) for _ in range(rows)]
    pan = [f"{rng.choice('AP')}BCDE{rng.randrange(10000):04d}F" for _ in range(rows)]
    note = [rng.choice(["paid", "refund", "call back", ""]) for _ in range(rows)]
    for _ in range(rng.randrange(0, 3)):
        row = rng.randrange(rows)
        which = rng.randrange(4)
        if which == 0:
            user_id[row] = rng.choice(SUBJECTS)
        elif which == 1:
            pan[row] = rng.choice(VALUE_SETS["s.pan"])
        elif which == 2:
            note[row] = f"customer {rng.choice(VALUE_SETS['s.phone'])} wrote from {VALUE_SETS['t.email'][0]}"
        else:
            note[row] = f"user {rng.choice(SUBJECTS)} closed"
    table = pa.table({"user_id": pa.array(user_id, pa.int64()), "pan": pan, "note": note})
    pq.write_table(table, path, compression=rng.choice(["snappy", "zstd", "gzip", "none"]),
                   use_dictionary=rng.random() < 0.7, row_group_size=rng.choice([50, 1000]),
                   write_page_index=rng.random() < 0.5,
                   bloom_filter_options={"user_id": {"ndv": 500}} if rng.random() < 0.3 else None)


def lakehouse(tmp_path: Path) -> tuple[list[ScanRequest], dict]:
    """Two datasets of Parquet files (the first with an identifier scope and key columns asked
    for), a JSON log and a text file among them."""
    rng = random.Random(51)
    requests = []
    for number, (sets, scope) in enumerate(((tuple(sorted(VALUE_SETS)), SCOPE), (("s.user_id", "t.email"), None))):
        root = tmp_path / f"d{number}"
        root.mkdir()
        for file in range(30):
            random_file(rng, root / f"part-{file:03d}.parquet")
        (root / "log.json").write_text(json.dumps({"add": {"path": "part-001.parquet", "note": "user 7000000002"}}))
        (root / "notes.txt").write_text("nothing here\n")
        keys = {f"part-{file:03d}.parquet": KeyColumn("user_id") for file in range(0, 30, 3)} if number == 0 else None
        requests.append(ScanRequest(Location.parse(root), sets, scope=scope or ColumnScope(), keys=keys))
    return requests, VALUE_SETS


def outcome(results) -> list:
    return [(r.files, r.hits, r.unreadable, r.chunks.proven, r.chunks.decoded, r.chunks.by_method, r.chunks.bytes_read,
             r.chunks.bytes_total, r.chunks.decoded_chunks,
             [None if k is None else (k.absent, k.rows, [(names, list(p)) for names, p in k.groups]) for k in r.key_rows])
            for r in results]


def test_threads_find_and_count_what_one_thread_does(tmp_path: Path) -> None:
    requests, value_sets = lakehouse(tmp_path)
    listing = list_requests(requests, Store())
    told: dict[int, list] = {1: [], 4: []}
    found = {threads: outcome(FileScanner(threads).scan(listing, value_sets, Store(),
                                                        progress=lambda *event, t=threads: told[t].append(event)))
             for threads in (1, 4)}
    assert found[4] == found[1]
    assert told[4] == told[1] and len(told[1]) == listing.file_count + 1
    assert any(hit for result in found[1] for hit in result[1])  # the lakehouse holds subjects
    assert any(keys for result in found[1] for keys in result[9])


def test_each_thread_searches_with_its_own_index(tmp_path: Path, monkeypatch) -> None:
    requests, value_sets = lakehouse(tmp_path)
    listing = list_requests(requests, Store())
    used: dict[int, set[str]] = {}  # id of an index -> the threads that searched with it
    real = engines.scan_one_file

    def recorded(root, relative, index, store, scope=None, key=None):
        used.setdefault(id(index), set()).add(threading.current_thread().name)
        time.sleep(0.002)  # every thread gets files
        return real(root, relative, index, store, scope, key)

    monkeypatch.setattr(engines, "scan_one_file", recorded)
    FileScanner(3).scan(listing, value_sets, Store())
    threads = set().union(*used.values())
    assert len(threads) > 1 and threading.current_thread().name not in threads
    assert all(len(names) == 1 for names in used.values())


def test_one_thread_decodes_in_the_caller(tmp_path: Path, monkeypatch) -> None:
    requests, value_sets = lakehouse(tmp_path)
    listing = list_requests(requests[:1], Store())
    seen = set()
    real = engines.scan_one_file
    monkeypatch.setattr(engines, "scan_one_file", lambda *args: seen.add(threading.current_thread().name) or real(*args))
    FileScanner(1).scan(listing, value_sets, Store())
    assert seen == {threading.current_thread().name}
    assert 1 <= engines.decode_threads() <= engines.MAX_DECODE_THREADS
