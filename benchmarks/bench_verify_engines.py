"""Verification decode: in the driver vs as Spark tasks (local[2] and a 2-worker standalone
cluster on 127.0.0.1), against the physical floor of a bare pyarrow read of the same files.

One plain Parquet lakehouse is generated (seeded): ``--files`` files of ``--rows`` rows each
(a bigint user id, a PAN, a phone, an amount, a merchant), spread over partition folders, with
10 subjects' rows in a few files. Every engine decodes the same listing for the same value sets
(the subjects' ids, PANs and phones) and must find the same places. Measured in one run:

- listing (the driver, through the storage layer);
- bare read: ``pyarrow.parquet.read_table`` of every file (data and footer), in one process and
  in two processes (the floor on this machine's two cores);
- the driver engine (``verify.engine: driver``);
- Spark ``local[2]`` and the standalone cluster (``verify.engine: spark``), each in its own
  process (one Spark session per process): session start, then the decoding job.

    .venv/bin/python benchmarks/bench_verify_engines.py [--files 2000] [--rows 25000] [--keep FOLDER]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from _common import print_table, run_child, timed, write_results  # noqa: E402

SUBJECTS = 10
PLANTED_FILES = 5


def generate(root: Path, files: int, rows: int, seed: int = 7, planted_every: int | None = None) -> dict[str, list]:
    """The lakehouse; returns the value sets searched (the subjects' ids, PANs, phones). One file in
    ``planted_every`` holds a subject's row (default: ``PLANTED_FILES`` files in all)."""
    rng = np.random.default_rng(seed)
    subject_ids = [9_000_000_000 + n for n in range(SUBJECTS)]
    subject_pans = [f"ZZPAN{n:05d}Q" for n in range(SUBJECTS)]
    subject_phones = [f"+91999{n:07d}" for n in range(SUBJECTS)]
    for number in range(files):
        ids = rng.integers(7_000_000_000, 8_000_000_000, rows)
        pans = np.char.add("AB", rng.integers(10**7, 10**8, rows).astype(str))
        phones = np.char.add("+9198", rng.integers(10**7, 10**8, rows).astype(str))
        table = pa.table({"user_id": pa.array(ids, pa.int64()), "pan": pa.array(pans.tolist()),
                          "phone": pa.array(phones.tolist()), "amount": pa.array(rng.random(rows) * 1000),
                          "merchant": pa.array(rng.integers(0, 5000, rows).astype(str).tolist())})
        if number % (planted_every or max(1, files // PLANTED_FILES)) == 0:  # a few files hold a subject's row
            k = number % SUBJECTS
            table = pa.concat_tables([table, pa.table({
                "user_id": pa.array([subject_ids[k]], pa.int64()), "pan": [subject_pans[k]], "phone": [subject_phones[k]],
                "amount": pa.array([1.0]), "merchant": ["m"]})])
        folder = root / f"dt={number % 30:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, folder / f"part-{number:05d}.parquet")
    return {"t.user_id": subject_ids, "t.pan": subject_pans, "t.phone": subject_phones}


def _read(paths: list[str]) -> int:
    rows = 0
    for path in paths:
        rows += pq.read_table(path).num_rows
    return rows


def bare_read(paths: list[str], processes: int) -> float:
    if processes == 1:
        return timed(lambda: _read(paths))[0]
    shares = [paths[n::processes] for n in range(processes)]
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        pool.map(_read, [[]] * processes)  # the processes are up before the clock starts
        start = time.perf_counter()
        pool.map(_read, shares)
        return time.perf_counter() - start


def scan(root: Path, value_sets: dict, engine: str, master: str | None = None) -> dict:
    """Decode with one engine in this process; the findings and the timings."""
    from piitracer.model.settings import SparkSettings
    from piitracer.storage.locations import Location
    from piitracer.storage.store import Store
    from piitracer.verify.engines import FileScanner, ScanRequest, SparkFileScanner, list_requests

    store = Store()
    listed, listing = timed(lambda: list_requests([ScanRequest(Location.parse(root), tuple(sorted(value_sets)))], store))
    figures = {"listing_s": listed}
    if engine == "driver":
        scanner = FileScanner()
    else:
        from piitracer.executor.spark_session import spark_session

        settings = SparkSettings(master=master, driver_memory="2g")
        started, session = timed(lambda: spark_session(settings, root.parent / "warehouse"))
        figures["session_start_s"] = started
        scanner = SparkFileScanner(lambda: session.sparkContext)
    decoded, results = timed(lambda: scanner.scan(listing, value_sets, store))
    figures["decode_s"] = decoded
    figures["findings"] = sorted(f"{h.file}|{h.where}|{h.value_set}|{h.kind}" for r in results for h in r.hits)
    return figures


def in_child(root: Path, value_sets: dict, engine: str, master: str | None = None) -> dict:
    """``scan`` in a fresh process (a Spark session per process)."""
    return run_child(__file__, "--child", engine, "--root", str(root), "--values", json.dumps(value_sets),
                     *(["--master", master] if master else []))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--rows", type=int, default=25000, help="rows per file (25,000: about 1 MB)")
    parser.add_argument("--child", choices=["driver", "spark"])
    parser.add_argument("--root", type=Path)
    parser.add_argument("--values")
    parser.add_argument("--master")
    parser.add_argument("--keep", type=Path, help="generate into (or reuse) this folder")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(scan(args.root, json.loads(args.values), args.child, args.master)))
        return

    base = args.keep or Path(tempfile.mkdtemp(prefix="bench-verify-"))
    root = base / "lake" / "t"
    marker = base / "values.json"
    if marker.exists():
        value_sets = json.loads(marker.read_text())
    else:
        seconds, value_sets = timed(lambda: generate(root, args.files, args.rows))
        marker.write_text(json.dumps(value_sets))
        print(f"generated {args.files} files in {seconds:.0f} s")
    paths = sorted(str(p) for p in root.rglob("*.parquet"))
    size = sum(Path(p).stat().st_size for p in paths)
    print(f"{len(paths)} files, {size / 1e9:.2f} GB")

    from spark_cluster import start_cluster

    runs = {"bare read, 1 process": {"decode_s": bare_read(paths, 1)},
            "bare read, 2 processes": {"decode_s": bare_read(paths, 2)},
            "driver": in_child(root, value_sets, "driver"),
            "spark local[2]": in_child(root, value_sets, "spark", "local[2]")}
    cluster = start_cluster(base / "cluster")
    try:
        runs["spark cluster, 2 workers x 1 core"] = in_child(root, value_sets, "spark", cluster.master_url)
    finally:
        cluster.stop()
    engines = [name for name in runs if "findings" in runs[name]]
    same = all(runs[name]["findings"] == runs["driver"]["findings"] for name in engines)
    assert same and runs["driver"]["findings"], "the engines disagree, or found nothing planted"
    floor_1, floor_2 = runs["bare read, 1 process"]["decode_s"], runs["bare read, 2 processes"]["decode_s"]
    table = []
    for name, figures in runs.items():
        decode = figures["decode_s"]
        floor = floor_1 if name in ("driver", "bare read, 1 process") else floor_2
        table.append([name, figures.get("listing_s", 0.0), figures.get("session_start_s", 0.0), decode,
                      size / decode / 1e6, len(paths) / decode, decode / floor])
    print_table(f"verify decode of {len(paths)} files, {size / 1e9:.2f} GB ({len(runs['driver']['findings'])} places "
                "found, the same for every engine)",
                ["engine", "listing s", "session start s", "decode s", "MB/s", "files/s", "x bare read (same cores)"], table)
    write_results("bench_verify_engines", {"files": len(paths), "bytes": size, "runs": {
        name: {k: v for k, v in figures.items() if k != "findings"} for name, figures in runs.items()},
        "findings": len(runs["driver"]["findings"])})
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
