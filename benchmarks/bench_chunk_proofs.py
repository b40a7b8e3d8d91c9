"""Proof at scale: the verifier's Parquet scan with chunk proofs (dictionary, statistics, page
index, Bloom filter, type) against the scan before them (footer min/max of integers and type only)
and against a bare ``pyarrow.parquet.read_table`` of the same files.

Generated (seeded): ``--files`` files of about 1 MB each, written by pyarrow with its defaults
(dictionary encoding, snappy): a bigint id (unique), an email (unique), a name (2,000 distinct),
an amount (double) and a free-text note (half from 300 phrasings, half naming an order number).
Ten subjects' ids and emails are searched; ``--planted`` files hold one of them (the id, the email,
and the email inside a note). Every scan must find the same places. One core, warm file cache,
``--runs`` interleaved rounds (min and median).

    .venv/bin/python benchmarks/bench_chunk_proofs.py [--files 200] [--rows 25000] [--runs 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import pin_one_core, print_table, timed, write_results  # noqa: E402

from piitracer.storage.locations import Location  # noqa: E402
from piitracer.storage.store import Store  # noqa: E402
from piitracer.verify.decoders import scan_location  # noqa: E402
from piitracer.verify.values import ValueIndex  # noqa: E402

BEFORE = "9051fd1"  # the last commit whose verifier proved chunks by integer min/max and type only
WORDS = "order refund delivery late address changed card declined called about the status of their parcel".split()


def generate(folder: Path, files: int, rows: int, planted: int, rng: random.Random) -> dict[str, list]:
    names = [f"{rng.choice(['Ann', 'Bo', 'Cy', 'Dee', 'Eli', 'Fay'])}{n} {rng.choice(['Lee', 'Kim', 'Ray'])}" for n in range(2000)]
    phrasings = [" ".join(rng.choice(WORDS) for _ in range(rng.randrange(5, 14))) for _ in range(300)]
    subjects_id = [7_000_000_000 + n for n in range(10)]
    subjects_email = [f"subject{n}.person@example.org" for n in range(10)]
    next_id = 8_000_000_000
    for number in range(files):
        ids = list(range(next_id, next_id + rows))
        rng.shuffle(ids)
        next_id += rows
        emails = [f"user{i}@mail{i % 97}.example.com" for i in ids]
        notes = [rng.choice(phrasings) if rng.random() < 0.5 else
                 f"{rng.choice(phrasings)} order {rng.randrange(10**9)}" for _ in range(rows)]
        if number < planted:
            ids[0], emails[1] = subjects_id[number % 10], subjects_email[number % 10]
            notes[2] = f"customer {subjects_email[number % 10]} asked for a refund"
        table = pa.table({"user_id": pa.array(ids, pa.int64()), "email": emails,
                          "name": [rng.choice(names) for _ in range(rows)],
                          "amount": [round(rng.random() * 500, 2) for _ in range(rows)], "note": notes})
        pq.write_table(table, folder / f"part-{number:05d}.parquet")
    return {"s.user_id": subjects_id, "s.email": subjects_email}


def old_scanner():
    """``scan_location`` as it was at :data:`BEFORE` (loaded from git, beside today's modules)."""
    source = subprocess.run(["git", "show", f"{BEFORE}:piitracer/verify/decoders.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "decoders_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("decoders_before", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["decoders_before"] = module
    spec.loader.exec_module(module)
    return module.scan_location


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--rows", type=int, default=25000)
    parser.add_argument("--planted", type=int, default=5)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="generate into (and keep) this folder")
    args = parser.parse_args()
    core = pin_one_core()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench_chunk_proofs_"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        value_sets = generate(folder, args.files, args.rows, args.planted, random.Random(29))
        files = sorted(p.name for p in folder.glob("*.parquet"))
        total = sum((folder / f).stat().st_size for f in files)
        index = ValueIndex.build(value_sets)
        root, store = Location.parse(folder), Store()
        before = old_scanner()

        def bare():
            for name in files:
                pq.read_table(folder / name)

        def hits(scan):
            return sorted((h.file, h.where, h.value_set) for h in scan.hits)

        bare()  # warm the file cache
        # Interleaved (bare, before, after) rounds: on a shared machine the load moves between
        # rounds, and each round's three figures see about the same load. Min and median reported.
        times: dict[str, list[float]] = {"bare": [], "before": [], "after": []}
        for _ in range(args.runs):
            for label, fn in (("bare", bare), ("before", lambda: before(root, index, store, files)),
                              ("after", lambda: scan_location(root, index, store, files))):
                elapsed, result = timed(fn)
                times[label].append(elapsed)
                if label == "before":
                    old = result
                elif label == "after":
                    new = result
        assert hits(old) == hits(new), "the scans found different places"
        t_bare, t_old, t_new = (min(times[k]) for k in ("bare", "before", "after"))
        m_bare, m_old, m_new = (statistics.median(times[k]) for k in ("bare", "before", "after"))
        chunks = new.chunks
        rows = [["bare pyarrow read_table", t_bare, 1.0, m_bare, 1.0, "", ""],
                ["scan before (min/max, type)", t_old, t_old / t_bare, m_old, m_old / m_bare, f"{old.chunks.decoded:,}", ""],
                ["scan with chunk proofs", t_new, t_new / t_bare, m_new, m_new / m_bare, f"{chunks.decoded:,}",
                 f"{chunks.bytes_read / total:.0%}"]]
        print_table(f"{len(files)} files, {total / 1e6:,.0f} MB, {args.rows:,} rows each; one core ({core}); "
                    f"{len(hits(new))} places found; {args.runs} interleaved rounds",
                    ["scan", "min s", "x bare", "median s", "x bare", "chunks decoded", "bytes read"], rows)
        print("chunks by method:", dict(sorted(chunks.by_method.items())))
        write_results("chunk_proofs", {
            "files": len(files), "bytes": total, "rows_per_file": args.rows, "runs": args.runs,
            "times_s": times, "bare_s": t_bare, "before_s": t_old, "after_s": t_new, "before_ratio": t_old / t_bare,
            "after_ratio": t_new / t_bare, "median_before_ratio": m_old / m_bare, "median_after_ratio": m_new / m_bare, "by_method": chunks.by_method, "bytes_read": chunks.bytes_read,
            "places": len(hits(new))})
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
