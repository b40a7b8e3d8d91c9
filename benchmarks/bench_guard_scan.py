"""The guard scan's cost (issue 52, "erased people stay erased"): an incremental scan of one day's
new data against 100,000 and 1,000,000 suppressed people, against a bare read of the same new
files in the same run, and how much memory the list and the scan take.

The lake (built once per run in a temporary folder, or kept with ``--keep``): a payments table of
``--days`` existing days and one new day appended, ``--rows`` rows a day (default 300,000): user_id
int64 (drawn from 5,000,000 people, so ~97% of a day's ids are distinct), pan (an Indian PAN, 10
characters), phone (+91 and 10 digits, 13 characters), amount double, dt string; every person's pan
and phone follow from their id. ``--format delta`` (delta-rs ``write_deltalake``, one append per
day), ``parquet`` (a plain folder ``dt=DAY/part-K.parquet``, ``--files`` files a day, pyarrow's
defaults) or ``both``.

- **incremental**: ``piitracer.verify.guard_scan.scan_table`` of the table (candidate columns
  user_id, pan, phone) with a positions object whose ``seen()`` holds every file of the existing
  days, as the suppression records keep them after the last scan: only the new day's files are
  read. Against SuppressionLists of ``--sizes`` random hashes (default 100,000 and 1,000,000),
  each with the three identifiers of 10 people in the new day and 5 only in the old days: the
  benchmark checks that exactly the new day's 30 hashes are found, in the new files only.
  **Baseline**: ``pq.read_table`` of each new file, whole (every column), in the same process;
  the same three columns only is printed beside it. Target: the scan <= 2x the bare read.
- **full**: the same scan with ``full=True`` (every file of every day) against ``--full-size``
  (default 100,000) hashes, against ``pq.read_table`` of every file (the synthetic lake; the issue's
  "demo lakehouse" is ``--demo``).
- **--demo** (instead of the above): the full scan of the demo lakehouse, built once with Spark in
  a child process as ``piitracer demo`` builds it (``prepare_workspace``, ``build_lakehouse``;
  ``--demo-rows``, default the demo's 100,000 payments). A real ``SuppressionStore`` in the demo
  workspace under a new master key remembers ``--full-size`` identifiers (the demo subject's
  user_id, card number and phone, found by the scan, and random ints, PAN-shaped texts and phones
  that are in no table); the targets are ``guard_targets`` (the candidate columns; and
  ``all_columns=True``, every text and integer column); timed: ``scan_tables(..., full=True)``
  (listing each table's files with ``data_files_now`` included, each run on a fresh lakehouse).
  **Baseline**: ``pq.read_table`` of every file the scan read (each target's ``data_files_now``),
  every column, interleaved with the scans. Then where the time goes, table by table and column by
  column (each column's matching alone on one thread); ``--profile`` adds cProfile of one scan,
  its own thread and the pool's threads' matchings merged.

Interleaved: each run times every figure once, in an order that turns by one each run, after one
untimed round of each (imports, page cache); ``--runs`` runs (default 5), medians. Building a list
(``SuppressionList(key, hashes)`` from the sorted ``bytes`` the records store gives, and from the
same hashes unsorted) is timed apart: a ``guard scan`` pays it once per command, not per table.

Memory, each in a fresh child process (``_memory``): the peak resident set (Linux ``VmHWM``, reset
through ``/proc/self/clear_refs`` before each step) above the resident set before it, and
tracemalloc's peak (Python objects and NumPy arrays; Arrow's own allocations are not traced) of
building the 1,000,000-hash list from the list of bytes, of one incremental scan against it, and of
the bare read. The first call in a fresh child process (``_first``), untraced, against the next: what
a ``guard scan`` command of one day pays once beyond the medians (an incremental scan, a bare read).

Where the time goes: each part of an incremental scan alone on one thread (reading the candidate
columns, then per column the keyed hashes and the search in the list), printed after the timings;
``--profile`` also prints cProfile's heaviest calls of one incremental scan against the largest list.
``--compare DIR`` times another checkout's incremental scans too (its package first on PYTHONPATH,
in a child process, against a bare read in that process), e.g. the code before a change.

Usage: .venv/bin/python benchmarks/bench_guard_scan.py [--rows 300000] [--days 6] [--files 4]
       [--sizes 100000 1000000] [--full-size 100000] [--runs 5] [--format delta|parquet|both]
       [--keep DIR] [--profile] [--compare DIR]
       .venv/bin/python benchmarks/bench_guard_scan.py --demo [--demo-rows 100000] [--full-size 100000]
       [--runs 5] [--keep DIR] [--profile]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))
from _common import print_table, write_results  # noqa: E402

PEOPLE = 5_000_000
FIRST_ID = 7_000_000_000
COLUMNS = ("user_id", "pan", "phone")
TABLE = "bench.payments"
KEY = bytes(range(32))  # fixed: the lists a child builds are the parent's
NEW_PEOPLE, OLD_PEOPLE = 10, 5


# ---- the lake ---------------------------------------------------------------------------------------

def _ascii(matrix):
    """A string array of fixed-width rows of ASCII bytes (an ``(n, width)`` uint8 matrix)."""
    import numpy as np
    import pyarrow as pa

    rows, width = matrix.shape
    offsets = np.arange(0, (rows + 1) * width, width, dtype=np.int32)
    return pa.StringArray.from_buffers(rows, pa.py_buffer(offsets.tobytes()), pa.py_buffer(np.ascontiguousarray(matrix).tobytes()))


def _digits(values, width: int):
    import numpy as np

    powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
    return ((values[:, None] // powers[None, :]) % 10 + ord("0")).astype(np.uint8)


def person_columns(people):
    """user_id, pan and phone of people (indices in 0..PEOPLE), each a pure function of the index."""
    import numpy as np
    import pyarrow as pa

    people = np.asarray(people, dtype=np.int64)
    mixed = (people * 2_654_435_761 + 12_345) % (26 ** 5)
    letters = ((mixed[:, None] // (26 ** np.arange(5, dtype=np.int64))[None, :]) % 26 + ord("A")).astype(np.uint8)
    pan = np.concatenate([letters, _digits(people % 10_000, 4), (people % 26 + ord("A")).astype(np.uint8)[:, None]], axis=1)
    phone = np.concatenate([np.frombuffer(b"+919", np.uint8)[None, :].repeat(len(people), 0),
                            _digits((people * 40_503 + 777) % 1_000_000_000, 9)], axis=1)
    return pa.array(people + FIRST_ID, pa.int64()), _ascii(pan), _ascii(phone)


def day_table(day: int, rows: int, forced: list[int]):
    """One day's payments; ``forced`` people are among its rows."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(1_000 + day)
    people = rng.integers(0, PEOPLE, rows)
    people[rng.choice(rows, len(forced), replace=False)] = forced
    user_id, pan, phone = person_columns(people)
    return pa.table({"user_id": user_id, "pan": pan, "phone": phone,
                     "amount": pa.array(np.round(rng.gamma(2.0, 40.0, rows), 2)),
                     "dt": pa.array([f"2026-12-{day + 1:02d}"] * rows)})


def chosen_people(days: int) -> tuple[list[int], list[int]]:
    """(people only in the new day, people only in the old days): ids above every random draw."""
    new = [PEOPLE + n for n in range(NEW_PEOPLE)]
    old = [PEOPLE + 100 + n for n in range(OLD_PEOPLE)]
    return new, old


def build_lake(folder: Path, fmt: str, days: int, rows: int, files: int) -> dict:
    """The table with ``days`` days, then the new day appended; returns what the scan must see."""
    import pyarrow.parquet as pq

    from piitracer.formats.table_files_now import data_files_now
    from piitracer.model.workspace import DatasetFormat
    from piitracer.storage.locations import Location
    from piitracer.storage.store import Store

    new_people, old_people = chosen_people(days)
    place = folder / fmt
    marker = folder / f"{fmt}.built.json"
    wanted = {"days": days, "rows": rows, "files": files, "format": fmt}
    location = Location.parse(str(place))
    kind = DatasetFormat.DELTA if fmt == "delta" else DatasetFormat.PARQUET
    if marker.exists() and json.loads(marker.read_text())["wanted"] == wanted:
        return json.loads(marker.read_text())
    shutil.rmtree(place, ignore_errors=True)
    start = time.perf_counter()

    def write(day: int, data) -> None:
        if fmt == "delta":
            from deltalake import write_deltalake

            write_deltalake(str(place), data, mode="append")
        else:
            folder_of_day = place / f"dt=2026-12-{day + 1:02d}"
            folder_of_day.mkdir(parents=True, exist_ok=True)
            per = -(-data.num_rows // files)
            for k in range(files):
                pq.write_table(data.slice(k * per, per), folder_of_day / f"part-{k:05d}.parquet")

    for day in range(days):
        write(day, day_table(day, rows, old_people if day == 0 else []))
    store = Store()
    before = data_files_now(kind, location, store)
    write(days, day_table(days, rows, new_people))
    after = data_files_now(kind, location, store)
    seen = sorted(before.files)
    new = sorted(set(after.files) - set(before.files))
    figures = {"wanted": wanted, "seen": seen, "new": new,
               "new_relative": [after.files[i][0] for i in new],
               "new_paths": [str(place / after.files[i][0]) for i in new],
               "all_paths": [str(place / after.files[i][0]) for i in sorted(after.files)],
               "built_s": time.perf_counter() - start}
    figures["new_bytes"] = sum(os.path.getsize(p) for p in figures["new_paths"])
    figures["all_bytes"] = sum(os.path.getsize(p) for p in figures["all_paths"])
    marker.write_text(json.dumps(figures))
    return figures


# ---- the lists and the scan ---------------------------------------------------------------------------

def expected_hashes(days: int) -> tuple[set[bytes], set[bytes]]:
    """The keyed hashes of the new day's chosen people and of the old days' ones."""
    from piitracer.guard import suppression_hash

    new_people, old_people = chosen_people(days)

    def of(people: list[int]) -> set[bytes]:
        found = set()
        for column in person_columns(people):
            found |= {suppression_hash(KEY, value) for value in column.to_pylist()}
        return found

    return of(new_people), of(old_people)


def numbers_kept() -> bool:
    """Whether the piitracer imported keeps whole numbers' number forms (``number_hash``; a
    ``--compare`` checkout from before does not)."""
    import piitracer.guard

    return hasattr(piitracer.guard, "number_hash")


def list_hashes(size: int, days: int) -> list[bytes]:
    """The hashes a store of ``size`` erased identifiers gives, sorted (as it reads them): the
    chosen people's and random ones; where number forms are kept, also the number form of the
    chosen people's ids and of a third of the random identifiers (taken as ids)."""
    import numpy as np

    new, old = expected_hashes(days)
    real = np.frombuffer(b"".join(sorted(new | old)), dtype="V16")
    count = size - len(real)
    if numbers_kept():
        from piitracer.guard import number_hash

        ids = [value for people in chosen_people(days) for value in person_columns(people)[0].to_pylist()]
        real = np.concatenate([real, np.frombuffer(b"".join(number_hash(KEY, value) for value in ids), dtype="V16")])
        count += size // 3
    noise = np.frombuffer(np.random.default_rng(size).bytes(16 * count), dtype="V16")
    return [bytes(h) for h in np.unique(np.concatenate([real, noise]))]  # made in order, as the store reads them


def new_list(hashes: list[bytes]):
    """The SuppressionList of ``hashes``: by number on integer columns where number forms are kept."""
    from piitracer.guard import SuppressionList

    return SuppressionList(KEY, hashes, numbers=True) if numbers_kept() else SuppressionList(KEY, hashes)


class Positions:
    """Where the last scan got to: every file of the existing days already read."""

    def __init__(self, seen: list[str]) -> None:
        self._seen = set(seen)

    def position(self, dataset: str):
        return None  # no kept marker: the table changed since

    def seen(self, dataset: str) -> set[str]:
        return set(self._seen)


def scanner(fmt: str, folder: Path, lake: dict):
    """A function (suppression, full) -> (TableScan, found) for the lake of format ``fmt``."""
    from piitracer.model.workspace import DatasetFormat
    from piitracer.storage.locations import Location
    from piitracer.storage.store import Store
    from piitracer.verify.guard_scan import ScanTarget, scan_table

    target = ScanTarget(TABLE, DatasetFormat.DELTA if fmt == "delta" else DatasetFormat.PARQUET,
                        Location.parse(str(folder / fmt)), COLUMNS)
    positions = Positions(lake["seen"])

    def scan(suppression, full: bool = False):
        return scan_table(target, suppression, Store(), positions, full=full)

    return scan


def check_scan(scan, found, lake: dict, expected: set[bytes], rows: int, full: bool) -> None:
    """The scan read what it should and found exactly the expected hashes."""
    wanted_files = set(lake["seen"]) | set(lake["new"]) if full else set(lake["new"])
    if set(scan.files_read) != wanted_files or scan.rows_read != rows:
        raise SystemExit(f"the scan read {len(scan.files_read)} files / {scan.rows_read:,} rows; "
                         f"expected {len(wanted_files)} / {rows:,}")
    got = {item.hash for item in found}
    if got != expected:
        raise SystemExit(f"the scan found {len(got)} hashes, expected {len(expected)} ({len(got & expected)} in common)")
    if not full and not {item.file for item in found} <= set(lake["new_relative"]):
        raise SystemExit("a hash was found outside the new files")


def bare_read(paths: list[str], columns=None) -> int:
    import pyarrow.parquet as pq

    return sum(pq.read_table(path, columns=columns).num_rows for path in paths)


# ---- memory, in a child ----------------------------------------------------------------------------

def _vm(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _step(fn) -> dict:
    """Peak resident set above the resident set before ``fn``, and tracemalloc's peak, of one call."""
    import gc
    import tracemalloc

    gc.collect()
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current resident set
        resettable = True
    except OSError:
        resettable = False
    import pyarrow as pa

    pool = pa.default_memory_pool()
    before, pool_before = _vm("VmRSS"), pool.bytes_allocated()
    tracemalloc.start()
    result = fn()
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"peak_rss_above_mb": (_vm("VmHWM") - before) / 1e6, "retained_rss_mb": (_vm("VmRSS") - before) / 1e6,
            "tracemalloc_peak_mb": traced / 1e6, "arrow_pool_peak_mb": (pool.max_memory() - pool_before) / 1e6,
            "arrow_pool_backend": pool.backend_name, "peak_reset": resettable, "result": result}


def memory_child(argv: list[str]) -> None:
    """``_memory WHAT FOLDER FORMAT SIZE DAYS``: one step measured in this fresh process (its first
    call: Arrow's first read sets up its allocator and thread pool, in the bare read and the scan
    alike); one JSON line."""
    what, folder, fmt, size, days = argv[0], Path(argv[1]), argv[2], int(argv[3]), int(argv[4])
    import pyarrow.parquet  # noqa: F401  (imports outside the measured step)

    from piitracer.guard import SuppressionList
    from piitracer.verify import guard_scan  # noqa: F401

    lake = json.loads((folder / f"{fmt}.built.json").read_text())
    if what == "bare":
        print(json.dumps(_step(lambda: bare_read(lake["new_paths"]))))
        return
    hashes = list_hashes(size, days)
    if what == "list":
        kept = []  # the list stays alive while its memory is read
        figures = _step(lambda: kept.append(new_list(hashes)) or len(kept[0]))
        figures["hashes_as_bytes_mb"] = (sys.getsizeof(hashes) + sum(map(sys.getsizeof, hashes))) / 1e6
        print(json.dumps(figures))
        return
    suppression = new_list(hashes)
    del hashes
    scan = scanner(fmt, folder, lake)
    print(json.dumps(_step(lambda: scan(suppression)[0].rows_read)))


def first_call_child(argv: list[str]) -> None:
    """``_first WHAT FOLDER FORMAT SIZE DAYS``: in this fresh process (piitracer.guard and the scan
    imported, the list built, as a ``guard scan`` command has them before its first table), the
    first call of one step and the next, untraced; one JSON line. What a first call costs beyond
    the next (Arrow's allocator and thread pool, the scan's threads, anything loaded on first
    use) is what a nightly ``guard scan`` of one day pays and the medians above do not show."""
    what, folder, fmt, size, days = argv[0], Path(argv[1]), argv[2], int(argv[3]), int(argv[4])
    import pyarrow.parquet  # noqa: F401

    from piitracer.guard import SuppressionList
    from piitracer.verify import guard_scan  # noqa: F401

    lake = json.loads((folder / f"{fmt}.built.json").read_text())
    if what == "bare":
        step = lambda: bare_read(lake["new_paths"])  # noqa: E731
    else:
        suppression, scan = new_list(list_hashes(size, days)), scanner(fmt, folder, lake)
        step = lambda: scan(suppression)  # noqa: E731
    first, after = _time(step), _time(step)
    print(json.dumps({"first_s": first, "next_s": after}))


def step_in_child(child: str, what: str, folder: Path, fmt: str, size: int, days: int) -> dict:
    """Run ``child`` (``_memory`` or ``_first``) for one step in a fresh process; its JSON line."""
    done = subprocess.run([sys.executable, str(HERE), child, what, str(folder), fmt, str(size), str(days)],
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"the {child} child ({what}) failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---- another checkout, in a child ---------------------------------------------------------------------

def compare_child(argv: list[str]) -> None:
    """``_compare FOLDER FORMAT DAYS RUNS SIZE...``: the incremental scans and the bare read, with
    the piitracer this process imports (PYTHONPATH), interleaved; one JSON line."""
    folder, fmt, days, runs, sizes = Path(argv[0]), argv[1], int(argv[2]), int(argv[3]), [int(a) for a in argv[4:]]
    import piitracer
    from piitracer.guard import SuppressionList

    lake = json.loads((folder / f"{fmt}.built.json").read_text())
    lists = {size: new_list(list_hashes(size, days)) for size in sizes}
    scan = scanner(fmt, folder, lake)
    new_expected, _ = expected_hashes(days)
    for size in sizes:
        check_scan(*scan(lists[size]), lake, new_expected, lake["wanted"]["rows"], full=False)
    jobs = {"bare read (whole files)": lambda: bare_read(lake["new_paths"])}
    for size in sizes:
        jobs[f"scan vs {size:,}"] = lambda size=size: scan(lists[size])
    times, cpu = interleaved(jobs, runs)
    print(json.dumps({"package": piitracer.__file__, "times": times, "cpu": cpu}))


def compare_in_child(checkout: Path, folder: Path, fmt: str, days: int, runs: int, sizes: list[int]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run([sys.executable, str(HERE), "_compare", str(folder), fmt, str(days), str(runs), *map(str, sizes)],
                          env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"the compare child ({checkout}) failed:\n{done.stderr[-3000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    if not figures["package"].startswith(str(checkout)):
        raise SystemExit(f"the compare child imported piitracer from {figures['package']}, not from {checkout}")
    return figures


# ---- the demo lakehouse (--demo) -------------------------------------------------------------------

DEMO_KINDS = ("prod.payments.user_id", "prod.payments.pan", "prod.payments.phone")


def demo_build_child(argv: list[str]) -> None:
    """``_build_demo FOLDER ROWS``: the demo's workspace copied into FOLDER and its lakehouse built
    there as ``piitracer demo`` builds it (``prepare_workspace``, ``build_lakehouse``: local Spark,
    started by the build; this process ends with it); reused when built before at ROWS. One JSON line."""
    folder, rows = Path(argv[0]), int(argv[1])
    from piitracer.demo import build_lakehouse
    from piitracer.demo.builder import marker_path
    from piitracer.demo.workspace_files import prepare_workspace
    from piitracer.ingest.workspace.loader import load_workspace

    root = prepare_workspace(folder)
    workspace = load_workspace(root)
    marker = marker_path(workspace)
    rebuild = marker.is_file() and json.loads(marker.read_text())["rows"] != rows
    built = build_lakehouse(workspace, rows=rows, rebuild=rebuild, progress=lambda line: print(line, file=sys.stderr, flush=True))
    print(json.dumps({"root": str(root), "reused": built.reused, "rows": built.rows, "seconds": built.seconds,
                      "anchor": built.anchor}))


def demo_build_in_child(folder: Path, rows: int) -> dict:
    done = subprocess.run([sys.executable, str(HERE), "_build_demo", str(folder), str(rows)], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"building the demo lakehouse failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def demo_identifiers(size: int, subject: list) -> list:
    """``size`` identifiers: the demo subject's own values (``subject``: found by the scan) and
    random ones of the demo's kinds, none in the lake (ints of 11 digits where the demo's user ids
    have 7; texts shaped like an Indian PAN, where the demo's pan is a 16-digit card number; phones
    +91 0... of 13 characters), 40% ints, 30% PAN-shaped texts, 30% phones."""
    import numpy as np

    from piitracer.requests.suppression import Identifier, value_type

    rng = np.random.default_rng(52)
    noise = size - len(subject)
    ints = noise * 4 // 10
    pans = (noise - ints) // 2
    phones = noise - ints - pans
    values: list = [int(v) for v in rng.choice(np.arange(10**10, 10**10 + 50 * size, dtype=np.int64), ints, replace=False)]
    letters = rng.integers(ord("A"), ord("Z") + 1, (pans, 6), dtype=np.uint8)
    digits = rng.integers(ord("0"), ord("9") + 1, (pans, 4), dtype=np.uint8)
    for row in np.concatenate([letters[:, :5], digits, letters[:, 5:]], axis=1):
        values.append(row.tobytes().decode())
    phone_digits = rng.choice(10**9, phones, replace=False)
    values += [f"+910{n:09d}" for n in phone_digits]
    kinds = [DEMO_KINDS[0]] * ints + [DEMO_KINDS[1]] * pans + [DEMO_KINDS[2]] * phones
    chosen = [Identifier(value, kind, value_type(value)) for value, kind in zip(values, kinds)]
    return [Identifier(value, kind, value_type(value)) for value, kind in zip(subject, DEMO_KINDS)] + chosen


def subject_values(workspace, lakehouse) -> list:
    """The demo subject's user_id, PAN and phone as ``prod.payments`` holds them."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from piitracer.demo import SUBJECT_USER_ID
    from piitracer.formats.table_files_now import data_files_now

    entry, location = workspace.config.catalog["prod.payments"], lakehouse.location("prod.payments")
    now = data_files_now(entry.format, location, lakehouse.store)
    for relative, _ in now.files.values():
        table = pq.read_table(location.child(relative).path, columns=["user_id", "pan", "phone"])
        rows = table.filter(pc.equal(table["user_id"], SUBJECT_USER_ID))
        if rows.num_rows:
            row = rows.slice(0, 1).to_pylist()[0]
            return [row["user_id"], row["pan"], row["phone"]]
    raise SystemExit("the demo subject has no row in prod.payments")


def demo_files(targets, lakehouse, scans) -> list[str]:
    """The local paths of the files the scans read (each target's ``data_files_now`` listing);
    checks that the scans read every file the listing holds, once."""
    from piitracer.formats.table_files_now import data_files_now

    paths = []
    for target, scan in zip(targets, scans):
        if scan.dataset != target.dataset:
            raise SystemExit(f"scans out of order: {scan.dataset} against {target.dataset}")
        now = data_files_now(target.format, target.location, lakehouse.store)
        listed = set() if now is None else set(now.files)
        if sorted(scan.files_read) != sorted(listed):
            raise SystemExit(f"{target.dataset}: the scan read {len(scan.files_read)} files, the listing holds {len(listed)}")
        paths += [str(target.location.child(now.files[identity][0]).path) for identity in sorted(scan.files_read)]
    return paths


def demo_columns(targets, listed, lakehouse) -> list[list]:
    """Where the matching's time goes, column by column: each candidate column of every file read
    a row group at a time as the scan reads it (as a dictionary where the scan would), then its
    ``matches`` alone on this thread (median of 3); with how many texts over 15 bytes it holds (each
    distinct one per call goes through the CBC-MAC path, not the one-block path)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from piitracer.formats.table_files_now import data_files_now
    from piitracer.guard.hashing import SHORT_BYTES
    from piitracer.verify import guard_scan

    found: dict[tuple[str, str], list] = {}
    for target in targets:
        now = data_files_now(target.format, target.location, lakehouse.store)
        for relative, _ in ([] if now is None else sorted(now.files.values())):
            path = str(target.location.child(relative).path)
            parquet = pq.ParquetFile(path)
            metadata, schema = parquet.metadata, parquet.schema_arrow
            chosen = guard_scan._candidate_columns(schema, target.columns)
            leaf = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
            for group in range(metadata.num_row_groups):
                widths = {name: guard_scan._bytes_per_value(metadata.row_group(group).column(leaf[name])) for name in chosen}
                text = [n for n in chosen if pa.types.is_string(schema.field(n).type) or pa.types.is_large_string(schema.field(n).type)]
                as_dictionary = [n for n in text if guard_scan._through_dictionary(widths[n], metadata.row_group(group).num_rows)]
                reader = pq.ParquetFile(path, read_dictionary=as_dictionary) if as_dictionary else parquet
                table = reader.read_row_group(group, columns=chosen)
                for name in chosen:
                    column = table.column(name).combine_chunks()
                    distinct = guard_scan._below(widths[name], guard_scan._FEW_DISTINCT)
                    seconds = statistics.median(_time(lambda: listed.matches(column, distinct=distinct)) for _ in range(3))
                    hashed = column.dictionary if pa.types.is_dictionary(column.type) else column
                    long = 0
                    if pa.types.is_string(hashed.type) or pa.types.is_large_string(hashed.type):
                        long = pc.count_distinct(pc.filter(hashed, pc.greater(pc.binary_length(hashed), SHORT_BYTES))).as_py()
                    row = found.setdefault((target.dataset, name), [target.dataset, name, str(schema.field(name).type), 0, 0, 0.0])
                    row[3] += len(column)
                    row[4] += long
                    row[5] += seconds
    return sorted(found.values(), key=lambda row: -row[5])


def profile_demo_scan(targets, key: bytes, hashes: list[bytes], lakehouse, positions) -> None:
    """cProfile of one full scan: the scan's own thread, and each column's matching on the pool's
    threads (a profiler per ``matches`` call, merged: the main thread's profile shows only the
    waiting for them)."""
    import cProfile
    import pstats
    import threading

    from piitracer.guard import SuppressionList
    from piitracer.verify.guard_scan import scan_tables

    profiles, lock = [], threading.Lock()

    class Profiled(SuppressionList):
        def matches(self, array, *, distinct=True):
            profiler = cProfile.Profile()
            profiler.enable()
            try:
                return super().matches(array, distinct=distinct)
            finally:
                profiler.disable()
                with lock:
                    profiles.append(profiler)

    listed = Profiled(key, hashes)
    lakehouse.fresh()
    main = cProfile.Profile()
    main.enable()
    scan_tables(targets, listed, lakehouse.store, positions, full=True)
    main.disable()
    print("\ncProfile of one full scan of the demo lakehouse, candidate columns: the scan's thread (tottime)")
    pstats.Stats(main).sort_stats("tottime").print_stats(12)
    print(f"cProfile of the same scan's {len(profiles)} column matchings on the pool's threads, merged (tottime)")
    merged = pstats.Stats(profiles[0])
    for profiler in profiles[1:]:
        merged.add(profiler)
    merged.sort_stats("tottime").print_stats(15)


def run_demo_lake(args, folder: Path) -> dict:
    """The full scan of the demo lakehouse against ``--full-size`` suppressed hashes (module docstring)."""
    import pyarrow.parquet as pq

    from piitracer.api.guard import guard_targets
    from piitracer.api.lakehouse import Lakehouse
    from piitracer.crypto.envelope import load_master_key, write_master_key
    from piitracer.formats.table_files_now import data_files_now
    from piitracer.guard import SuppressionList, suppression_hash
    from piitracer.ingest.workspace.loader import load_workspace
    from piitracer.requests.suppression import SuppressionStore
    from piitracer.verify.guard_scan import scan_table, scan_tables

    print(f"\n== the demo lakehouse ({args.demo_rows:,} payments): building it with Spark in a child process ...", flush=True)
    built = demo_build_in_child(folder / "demo", args.demo_rows)
    print(f"{'reused' if built['reused'] else 'built'} in {built['seconds']:.1f} s ({built['rows']:,} payments, "
          f"latest date {built['anchor']})", flush=True)
    root = Path(built["root"])
    workspace = load_workspace(root)
    lakehouse = Lakehouse(workspace)

    state = root / ".piitracer"
    state.mkdir(parents=True, exist_ok=True)
    key_file = state / "bench-guard-master.key"
    master = load_master_key(key_file) if key_file.exists() else write_master_key(key_file)
    store_file = state / "bench-guard-suppression.sqlite"
    store_file.unlink(missing_ok=True)
    suppression = SuppressionStore(store_file, master)
    subject = subject_values(workspace, lakehouse)
    identifiers = demo_identifiers(args.full_size, subject)
    start = time.perf_counter()
    for n in range(0, len(identifiers), 1_000):  # a request of 1,000 identifiers each (the scan reads only the hashes)
        suppression.remember(f"bench-{n // 1_000:04d}", identifiers[n:n + 1_000])
    remembered_s = time.perf_counter() - start
    hashes = suppression.hashes()
    records, requests = suppression.count()
    if records != args.full_size or len(hashes) < args.full_size:
        raise SystemExit(f"the suppression store holds {records} records / {len(hashes)} hashes, not {args.full_size:,}")
    key = suppression.key()
    list_s = statistics.median(_time(suppression.suppression_list) for _ in range(3))
    listed = suppression.suppression_list()
    subject_hashes = {suppression_hash(key, value) for value in subject}
    print(f"suppression store: {records:,} records of {requests} requests ({remembered_s:.1f} s to remember), "
          f"{len(hashes):,} hashes (texts' and whole numbers' number forms); the list read and built in "
          f"{list_s * 1000:.0f} ms", flush=True)

    start = time.perf_counter()
    candidates = guard_targets(workspace, lakehouse, suppression, all_columns=False)
    targets_s = time.perf_counter() - start
    start = time.perf_counter()
    every = guard_targets(workspace, lakehouse, suppression, all_columns=True)
    every_targets_s = time.perf_counter() - start
    positions = Positions([])  # saw nothing (a full scan asks it nothing)

    def scan(targets):
        lakehouse.fresh()  # each table loaded again, as a new scan command would
        return scan_tables(targets, listed, lakehouse.store, positions, full=True)

    shapes = {}
    for name, targets in (("candidates", candidates), ("every column", every)):
        scans, found = scan(targets)
        problems = [f"{s.dataset}: {s.problem}" for s in scans if s.problem]
        if problems:
            raise SystemExit("tables the scan could not read: " + "; ".join(problems))
        found_hashes = {item.hash for item in found}
        if not subject_hashes <= found_hashes:
            raise SystemExit(f"{name}: the scan did not find the demo subject's {len(subject_hashes - found_hashes)} hashes")
        paths = demo_files(targets, lakehouse, scans)
        rows = sum(pq.ParquetFile(p).metadata.num_rows for p in paths)
        shapes[name] = {"targets": len(targets), "tables_with_files": sum(1 for s in scans if s.files_read),
                        "files": len(paths), "bytes": sum(os.path.getsize(p) for p in paths), "rows": rows,
                        "rows_read": sum(s.rows_read for s in scans), "paths": paths,
                        "columns_read": sum(len(s.columns) for s in scans), "found": len(found),
                        "found_datasets": sorted({item.dataset for item in found}),
                        "found_outside_subject": len(found_hashes - subject_hashes)}
        if shapes[name]["rows_read"] != rows:
            raise SystemExit(f"{name}: the scan read {shapes[name]['rows_read']:,} rows, its files hold {rows:,}")
        print(f"{name}: {len(targets)} tables ({shapes[name]['tables_with_files']} with data files), {len(paths)} files, "
              f"{shapes[name]['bytes'] / 1e6:.1f} MB, {rows:,} rows, {shapes[name]['columns_read']} columns read "
              f"over the tables; {len(found)} finds of the subject's values in {len(shapes[name]['found_datasets'])} "
              f"tables", flush=True)

    jobs = {"bare read, the files of the candidate scan": lambda: bare_read(shapes["candidates"]["paths"]),
            "full scan, candidate columns": lambda: scan(candidates),
            "bare read, the files of the every-column scan": lambda: bare_read(shapes["every column"]["paths"]),
            "full scan, every text/integer column": lambda: scan(every)}
    times, cpu = interleaved(jobs, args.runs)
    pairs = {"full scan, candidate columns": "bare read, the files of the candidate scan",
             "full scan, every text/integer column": "bare read, the files of the every-column scan"}
    rows_out = []
    for name, t in times.items():
        base = pairs.get(name, name)
        rows_out.append([name, statistics.median(t), min(t), max(t), f"{statistics.median(t) / statistics.median(times[base]):.2f}x",
                         statistics.median(cpu[name]), f"{statistics.median(cpu[name]) / statistics.median(cpu[base]):.2f}x"])
    print_table(f"the demo lakehouse, full scan against {args.full_size:,} suppressed hashes, medians of {args.runs} "
                f"(target: scan <= 2x the bare read)", ["", "median s", "min s", "max s", "/ bare", "CPU s", "CPU / bare"],
                rows_out)
    print(f"(not in the scan's time: the targets {targets_s:.2f} s with the candidates' lineage graph, "
          f"{every_targets_s:.2f} s for every column; the SuppressionList {list_s:.3f} s)")

    # Where the time goes, table by table (one untimed pass first): listing its files
    # (data_files_now), the scan of the table (listing included), a bare read of its files.
    per_table = []
    for target in candidates:
        lakehouse.fresh()
        listing = statistics.median(_time(lambda: data_files_now(target.format, target.location, lakehouse.store))
                                    for _ in range(3))
        lakehouse.fresh()
        scanned = statistics.median(_time(lambda: scan_table(target, listed, lakehouse.store, positions, True))
                                    for _ in range(3))
        one, _ = scan_table(target, listed, lakehouse.store, positions, True)
        now = data_files_now(target.format, target.location, lakehouse.store)
        paths = [str(target.location.child(now.files[i][0]).path) for i in sorted(one.files_read)] if now else []
        bare = statistics.median(_time(lambda: bare_read(paths)) for _ in range(3))
        per_table.append([target.dataset, target.format.value, len(paths), one.rows_read, listing, scanned, bare])
    per_table.sort(key=lambda row: -row[5])
    total = [sum(row[k] for row in per_table) for k in (4, 5, 6)]
    print_table("where the time goes, candidate columns, table by table (medians of 3, each table alone)",
                ["table", "format", "files", "rows", "listing s", "scan s (listing in)", "bare read s"],
                per_table + [["total", "", sum(r[2] for r in per_table), sum(r[3] for r in per_table), *total]])
    columns = demo_columns(candidates, listed, lakehouse)
    print_table("where the matching's time goes, candidate columns, each column's matches alone on one thread "
                "(medians of 3; long texts: distinct texts over 15 bytes, per row group, hashed by CBC-MAC)",
                ["table", "column", "type", "values", "long texts", "matches s"],
                columns[:12] + [["total", f"{len(columns)} columns", "", sum(r[3] for r in columns), sum(r[4] for r in columns),
                                 sum(r[5] for r in columns)]])
    long_columns = [r for r in columns if r[4]]
    print(f"(columns holding texts over 15 bytes: {len(long_columns)}, {sum(r[5] for r in long_columns):.2f} s of the "
          f"{sum(r[5] for r in columns):.2f} s)")
    if args.profile:
        profile_demo_scan(candidates, key, hashes, lakehouse, positions)
    suppression.close()
    return {"rows": args.demo_rows, "build": built, "suppressed": args.full_size, "runs": args.runs,
            "lake": {name: {k: v for k, v in shape.items() if k != "paths"} for name, shape in shapes.items()},
            "times": {name: {"median_s": statistics.median(t), "runs": t, "cpu_s": cpu[name]} for name, t in times.items()},
            "ratios": {name: statistics.median(times[name]) / statistics.median(times[base]) for name, base in pairs.items()},
            "cpu_ratios": {name: statistics.median(cpu[name]) / statistics.median(cpu[base]) for name, base in pairs.items()},
            "targets_s": targets_s, "every_targets_s": every_targets_s, "list_s": list_s,
            "per_table": [dict(zip(["table", "format", "files", "rows", "listing_s", "scan_s", "bare_s"], row)) for row in per_table],
            "per_column": [dict(zip(["table", "column", "type", "values", "long_texts", "matches_s"], row)) for row in columns]}


# ---- the parent -------------------------------------------------------------------------------------

def interleaved(jobs: dict, runs: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Every job once per run, the order turning by one each run, after one untimed round; the
    wall seconds and the CPU seconds (every thread of this process) of each run."""
    names = list(jobs)
    for name in names:
        jobs[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for run in range(runs):
        for name in names[run % len(names):] + names[:run % len(names)]:
            before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            jobs[name]()
            times[name].append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_SELF)
            cpu[name].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return times, cpu


def breakdown(lake: dict, suppression, runs: int) -> list[list]:
    """Where an incremental scan's time goes, each part alone on this thread (medians): reading the
    new files' candidate columns as the scan does (plain: the chunks outgrew their dictionaries),
    then per column the keyed hashes (``hash_array``) and the search (``SuppressionList._found``)."""
    import pyarrow.parquet as pq

    from piitracer.guard.hashing import hash_array

    def read() -> list:
        tables = []
        for path in lake["new_paths"]:
            parquet = pq.ParquetFile(path)
            tables += [parquet.read_row_group(g, columns=list(COLUMNS)) for g in range(parquet.num_row_groups)]
        return tables

    tables = read()
    rows = [["read the candidate columns, row groups as the scan does (Arrow's threads)",
             statistics.median(_time(read) for _ in range(runs))]]
    for name in COLUMNS:
        columns = [table.column(name) for table in tables]
        hashed = [hash_array(KEY, column) for column in columns]
        rows.append([f"{name}: keyed hashes", statistics.median(_time(lambda: [hash_array(KEY, c) for c in columns])
                                                                  for _ in range(runs))])
        rows.append([f"{name}: search in the list", statistics.median(_time(lambda: [suppression._found(h) for h, _ in hashed])
                                                                        for _ in range(runs))])
    return rows


def profile(scan, suppression) -> None:
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    scan(suppression)
    profiler.disable()
    print("\ncProfile of one incremental scan against the largest list (tottime):")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(14)


def run_format(fmt: str, args, folder: Path) -> dict:
    from piitracer.guard import SuppressionList
    from piitracer.verify.guard_scan import column_threads

    print(f"\n== {fmt}: building the lake ({args.days} days + 1 new, {args.rows:,} rows a day) ...", flush=True)
    lake = build_lake(folder, fmt, args.days, args.rows, args.files)
    print(f"new day: {len(lake['new'])} files, {lake['new_bytes'] / 1e6:.1f} MB; whole table "
          f"{len(lake['all_paths'])} files, {lake['all_bytes'] / 1e6:.1f} MB (built in {lake.get('built_s', 0):.1f} s)",
          flush=True)
    new_expected, old_expected = expected_hashes(args.days)
    lists, build_times = {}, {}
    for size in sorted(set(args.sizes) | {args.full_size}):
        hashes = list_hashes(size, args.days)
        shuffled = list(reversed(hashes))
        build_times[size] = {"sorted_s": statistics.median(_time(lambda: new_list(hashes)) for _ in range(3)),
                             "unsorted_s": statistics.median(_time(lambda: new_list(shuffled)) for _ in range(3))}
        lists[size] = new_list(hashes)
        del hashes, shuffled
    scan = scanner(fmt, folder, lake)
    for size in args.sizes:
        check_scan(*scan(lists[size]), lake, new_expected, args.rows, full=False)
    check_scan(*scan(lists[args.full_size], True), lake, new_expected | old_expected, args.rows * (args.days + 1), full=True)

    jobs = {"bare read (whole files)": lambda: bare_read(lake["new_paths"]),
            "bare read (the 3 columns)": lambda: bare_read(lake["new_paths"], list(COLUMNS))}
    for size in args.sizes:
        jobs[f"scan vs {size:,}"] = lambda size=size: scan(lists[size])
    incremental, incremental_cpu = interleaved(jobs, args.runs)
    full_jobs = {"bare read, every file": lambda: bare_read(lake["all_paths"]),
                 f"full scan vs {args.full_size:,}": lambda: scan(lists[args.full_size], True)}
    full, full_cpu = interleaved(full_jobs, args.runs)

    def table(times: dict, cpu: dict, base_name: str) -> list[list]:
        base, base_cpu = statistics.median(times[base_name]), statistics.median(cpu[base_name])
        return [[name, statistics.median(t), min(t), max(t), f"{statistics.median(t) / base:.2f}x",
                 statistics.median(cpu[name]), f"{statistics.median(cpu[name]) / base_cpu:.2f}x"] for name, t in times.items()]

    header = ["", "median s", "min s", "max s", "/ bare", "CPU s", "CPU / bare"]
    print_table(f"{fmt}: incremental, the new day ({args.rows:,} rows, {len(lake['new'])} files), medians of {args.runs} "
                f"(target: scan <= 2x the bare read of the whole files)", header,
                table(incremental, incremental_cpu, "bare read (whole files)"))
    print_table(f"{fmt}: full scan, every file ({args.rows * (args.days + 1):,} rows), medians of {args.runs}", header,
                table(full, full_cpu, "bare read, every file"))
    base = statistics.median(incremental["bare read (whole files)"])
    full_base = statistics.median(full["bare read, every file"])
    parts = breakdown(lake, lists[max(args.sizes)], args.runs)
    print_table(f"where the time goes, each part alone on one thread ({max(args.sizes):,} hashes; the scan runs the "
                f"columns on {column_threads()} threads)", ["part", "median s"], parts)
    print_table("building a SuppressionList (once per scan command), medians of 3", ["hashes", "sorted s", "unsorted s"],
                [[f"{size:,}", t["sorted_s"], t["unsorted_s"]] for size, t in build_times.items()])

    largest = max(args.sizes)
    memory = {"list": step_in_child("_memory", "list", folder, fmt, largest, args.days),
              "scan": step_in_child("_memory", "scan", folder, fmt, largest, args.days),
              "bare": step_in_child("_memory", "bare", folder, fmt, largest, args.days)}
    print_table(f"memory, each step in a fresh process ({largest:,} hashes)",
                ["step", "peak RSS above before, MB", "kept RSS, MB", "tracemalloc peak, MB", "Arrow pool peak, MB"],
                [[name, m["peak_rss_above_mb"], m["retained_rss_mb"], m["tracemalloc_peak_mb"], m["arrow_pool_peak_mb"]]
                 for name, m in memory.items()])
    print(f"(the {largest:,} hashes as the list of bytes the records give: "
          f"{memory['list'].get('hashes_as_bytes_mb', 0):.0f} MB before the list is built)")
    fresh = {what: step_in_child("_first", what, folder, fmt, largest, args.days) for what in ("scan", "bare")}
    print_table(f"a fresh process ({largest:,} hashes): the first call and the next", ["step", "first s", "next s"],
                [[what, f["first_s"], f["next_s"]] for what, f in fresh.items()])
    compared = None
    if args.compare:
        compared = compare_in_child(args.compare.resolve(), folder, fmt, args.days, min(args.runs, 3), args.sizes)
        base_before = statistics.median(compared["times"]["bare read (whole files)"])
        print_table(f"{fmt}: incremental, the other checkout ({args.compare}), in its own process, medians of "
                    f"{min(args.runs, 3)}", ["", "median s", "/ its bare read", "CPU s"],
                    [[name, statistics.median(t), f"{statistics.median(t) / base_before:.2f}x",
                      statistics.median(compared["cpu"][name])] for name, t in compared["times"].items()])
    if args.profile:
        profile(scan, lists[largest])
    return {"lake": {k: v for k, v in lake.items() if k not in ("seen", "new", "new_relative", "new_paths", "all_paths")},
            "new_files": len(lake["new"]), "all_files": len(lake["all_paths"]),
            "incremental": {name: {"median_s": statistics.median(t), "runs": t, "ratio": statistics.median(t) / base,
                                   "cpu_s": incremental_cpu[name]} for name, t in incremental.items()},
            "full": {name: {"median_s": statistics.median(t), "runs": t, "ratio": statistics.median(t) / full_base,
                            "cpu_s": full_cpu[name]} for name, t in full.items()},
            "breakdown": {part: seconds for part, seconds in parts},
            "build_list": {str(k): v for k, v in build_times.items()}, "memory": memory, "fresh_process": fresh,
            "compare": compared}


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=300_000, help="rows a day (the new day's append too)")
    parser.add_argument("--days", type=int, default=6, help="existing days before the new one")
    parser.add_argument("--files", type=int, default=4, help="files a day (plain Parquet)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000], help="hashes on the lists")
    parser.add_argument("--full-size", type=int, default=100_000, help="hashes on the list of the full scan")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--format", choices=("delta", "parquet", "both"), default="both")
    parser.add_argument("--keep", type=Path, help="build the lake here once and reuse it")
    parser.add_argument("--profile", action="store_true", help="cProfile one incremental scan")
    parser.add_argument("--compare", type=Path, help="another checkout of piitracer: its incremental scans timed too "
                                                     "(in a child process, against its own bare read)")
    parser.add_argument("--demo", action="store_true", help="instead of the synthetic lake: the full scan of the demo "
                                                            "lakehouse (built with Spark) against --full-size hashes")
    parser.add_argument("--demo-rows", type=int, default=None, help="the demo's payments (default: the demo's own size)")
    args = parser.parse_args()
    folder = args.keep.resolve() if args.keep else Path(tempfile.mkdtemp(prefix="guard-scan-"))
    folder.mkdir(parents=True, exist_ok=True)
    if args.demo:
        from piitracer.demo import DEFAULT_ROWS

        args.demo_rows = args.demo_rows or DEFAULT_ROWS
        try:
            figures = {"demo": run_demo_lake(args, folder), "load_average_1m": os.getloadavg()[0]}
        finally:
            if not args.keep:
                shutil.rmtree(folder, ignore_errors=True)
        print(f"\n1-minute load average at the end {figures['load_average_1m']:.2f}")
        write_results("guard_scan_demo", figures)
        return
    try:
        formats = ["delta", "parquet"] if args.format == "both" else [args.format]
        figures = {"rows": args.rows, "days": args.days, "sizes": args.sizes, "full_size": args.full_size, "runs": args.runs,
                   "formats": {fmt: run_format(fmt, args, folder) for fmt in formats},
                   "load_average_1m": os.getloadavg()[0]}
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"\n1-minute load average at the end {figures['load_average_1m']:.2f}")
    write_results("guard_scan", figures)


if __name__ == "__main__":
    if sys.argv[1:2] == ["_memory"]:
        memory_child(sys.argv[2:])
    elif sys.argv[1:2] == ["_compare"]:
        compare_child(sys.argv[2:])
    elif sys.argv[1:2] == ["_first"]:
        first_call_child(sys.argv[2:])
    elif sys.argv[1:2] == ["_build_demo"]:
        demo_build_child(sys.argv[2:])
    else:
        main()
