"""The dictionary rule's cost (``piitracer.verify.parquet_proofs``): the verifier's Parquet scan of
1M rows in 100 dictionary-encoded files, the code before a change against the code after it, side
by side on the same files in one run, each in its own child process (the two trees' modules
cannot share one).

Generated (seeded): ``--files`` files of ``--rows`` payments each, written by pyarrow with its
defaults (dictionary encoding, snappy), as the demo's: a bigint ``user_id`` (100,000 users drawn
from 1e6-1e7: every chunk's min/max admits a searched id), 16-digit ``pan``, ``+91`` ``phone``,
12-digit ``aadhaar_ref`` and ``email`` (one each per user), a decimal ``amount``, a ``merchant_id``
(400), a ``merchant`` name (150), a free-text ``note`` naming the merchant and a reference number,
and a date ``dt``. The first ten users' rows are planted in every tenth file; the searched
subjects are the first ``K`` users (``--subjects``, several K in one run), their id, PAN, phone,
Aadhaar number and e-mail: most values searched sit in no file.

Two searches of the same files: ``full`` (no catalog: every column searched for every value,
whole and inside text) and ``scoped`` (``user_id``, ``pan``, ``phone``, ``aadhaar_ref`` and
``email`` are the dataset's identifier columns, searched for the whole values of their own value
set; ``merchant`` and ``note`` for every value). Each child scans the files once to warm up, then
``--repeats`` times, timing the whole scan, the chunk proofs (``ParquetProver.prove``) and, inside
them, the dictionary verdicts (``_dictionary_verdict``: reading the dictionary page, deciding);
wall and CPU (``time.thread_time``) time, min and median of the repeats. Children run in
interleaved rounds (before, after, before, after...) since the machine is shared. Both sides must
find the same places and prove the same chunks by the same rules, or the script fails.

The code before: a checkout of it, e.g. ``git worktree add /tmp/before-proofs HEAD`` before the
change (``git worktree remove /tmp/before-proofs`` afterwards).

    .venv/bin/python benchmarks/bench_dictionary_verdicts.py --before /tmp/before-proofs
        [--after .] [--files 100] [--rows 10000] [--subjects 1 10 100] [--repeats 3] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

IDENTIFIERS = ("aadhaar_ref", "email", "pan", "phone", "user_id")
PLANTED = 10  # the first ten users' rows sit in every tenth file


def generate(folder: Path, files: int, rows: int, seed: int = 5) -> None:
    """The files, and ``users.json``: the first 1,000 users' values per column (the subjects)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    users = 100_000
    ids = rng.choice(np.arange(1_000_000, 10_000_000), users, replace=False)
    pans = np.array([f"{rng.integers(4, 7)}{x:015d}" for x in rng.integers(0, 10**15, users)], dtype=object)
    phones = np.array([f"+91{rng.integers(6, 10)}{x:09d}" for x in rng.integers(0, 10**9, users)], dtype=object)
    aadhaar = np.array([f"{x:012d}" for x in rng.integers(2 * 10**11, 10**12, users)], dtype=object)
    emails = np.array([f"user{i}@mail{i % 97}.example.com" for i in ids], dtype=object)
    merchants = [f"{a} {b}, {c}" for a in ["Sharma", "Gupta", "Patel", "Reddy", "Iyer", "Singh"]
                 for b in ["Kirana Store", "Medicals", "Cafe", "Books", "Mobiles"]
                 for c in ["Mumbai", "Delhi", "Pune", "Kochi", "Indore"]]
    subjects = 1_000  # never drawn as filler: only the planted rows hold the first ten
    for number in range(files):
        who = rng.integers(subjects, users, rows)
        if number % 10 == 0:
            who[:PLANTED] = np.arange(PLANTED)
        notes = [f"paid {merchants[m]} ref {r}"
                 for m, r in zip(rng.integers(0, len(merchants), rows), rng.integers(0, 10**8, rows))]
        table = pa.table({
            "user_id": pa.array(ids[who], pa.int64()),
            "pan": pa.array(pans[who], pa.string()),
            "phone": pa.array(phones[who], pa.string()),
            "aadhaar_ref": pa.array(aadhaar[who], pa.string()),
            "email": pa.array(emails[who], pa.string()),
            "amount": pa.array(rng.integers(100, 10**7, rows).astype("int32")).cast(pa.decimal128(10, 0))
                        .cast(pa.decimal128(12, 2)),
            "merchant_id": pa.array(rng.integers(1001, 1401, rows), pa.int64()),
            "merchant": pa.array([merchants[m] for m in rng.integers(0, len(merchants), rows)], pa.string()),
            "note": pa.array(notes, pa.string()),
            "dt": pa.array(rng.integers(19000, 19056, rows).astype("int32")).cast(pa.date32()),
        })
        pq.write_table(table, folder / f"part-{number:05d}.parquet")
    first = slice(0, subjects)
    (folder / "users.json").write_text(json.dumps({
        "user_id": [int(x) for x in ids[first]], "pan": list(pans[first]), "phone": list(phones[first]),
        "aadhaar_ref": list(aadhaar[first]), "email": list(emails[first])}))


def child(tree: Path, data: Path, mode: str, subjects: int, repeats: int) -> dict:
    """In a child process: the scan of ``tree``'s code over ``data``, timed (module docstring)."""
    sys.path.insert(0, str(tree))
    import piitracer

    assert Path(piitracer.__file__).resolve().is_relative_to(tree.resolve()), piitracer.__file__
    import piitracer.verify.parquet_proofs as proofs
    from piitracer.storage.locations import Location
    from piitracer.storage.store import Store
    from piitracer.verify.decoders import scan_location
    from piitracer.verify.scope import ColumnScope, ScopedIndex

    users = json.loads((data / "users.json").read_text())
    value_sets = {f"t.{column}": values[:subjects] for column, values in users.items()}
    scope = ColumnScope(tuple((column, (f"t.{column}",)) for column in IDENTIFIERS)) if mode == "scoped" else None
    scoped = ScopedIndex.build(value_sets, list(value_sets), scope)
    files = sorted(p.name for p in data.glob("*.parquet"))
    spent = {"prove": [0.0, 0.0], "dictionary": [0.0, 0.0]}

    def timing(owner, name: str, key: str) -> None:
        inner = getattr(owner, name)

        def timed(*args, **kwargs):
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return inner(*args, **kwargs)
            finally:
                spent[key][0] += time.perf_counter() - wall
                spent[key][1] += time.thread_time() - cpu
        setattr(owner, name, timed)

    timing(proofs.ParquetProver, "prove", "prove")
    timing(proofs.ParquetProver, "_dictionary_verdict", "dictionary")
    runs = []
    for _ in range(repeats + 1):  # the first warms the file cache and the index's compiled forms
        for pair in spent.values():
            pair[:] = [0.0, 0.0]
        wall, cpu = time.perf_counter(), time.thread_time()
        scan = scan_location(Location.parse(data), scoped.index, Store(), files, scoped if scope else None)
        runs.append({"scan": [time.perf_counter() - wall, time.thread_time() - cpu],
                     "prove": list(spent["prove"]), "dictionary": list(spent["dictionary"])})
    places = sorted((h.file, h.where, h.value_set) for h in scan.hits)
    return {"runs": runs[1:], "places": places, "by_method": dict(sorted(scan.chunks.by_method.items()))}


def run_child(tree: Path, data: Path, mode: str, subjects: int, repeats: int) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", str(tree), "--data", str(data), "--mode", mode,
                           "--k", str(subjects), "--repeats", str(repeats)], capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="a checkout of the code before the change")
    parser.add_argument("--after", type=Path, default=ROOT)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--subjects", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--modes", nargs="+", default=["full", "scoped"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="generate into (or reuse) this folder")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    parser.add_argument("--k", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.data, args.mode, args.k, args.repeats)))
        return
    if args.before is None:
        parser.error("--before: a checkout of the code before the change (git worktree add PATH COMMIT)")
    from _common import print_table, write_results

    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench_dictionary_verdicts_"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        if not (folder / "users.json").exists():
            generate(folder, args.files, args.rows)
        sides = {"before": args.before, "after": args.after}
        figures: dict[str, dict] = {}
        rows = []
        for mode in args.modes:
            for subjects in args.subjects:
                results: dict[str, list] = {side: [] for side in sides}
                outcome = {}
                for _ in range(args.rounds):
                    for side, tree in sides.items():
                        found = run_child(tree, folder, mode, subjects, args.repeats)
                        results[side] += found["runs"]
                        outcome[side] = (found["places"], found["by_method"])
                if outcome["before"] != outcome["after"]:
                    raise SystemExit(f"{mode}, {subjects} subjects: the two trees found or proved differently")
                key = f"{mode}/{subjects}"
                figures[key] = {"places": len(outcome["after"][0]), "by_method": outcome["after"][1]}
                for side in sides:
                    runs = results[side]
                    summary = {part: {"wall_min": min(r[part][0] for r in runs),
                                      "wall_median": statistics.median(r[part][0] for r in runs),
                                      "cpu_min": min(r[part][1] for r in runs),
                                      "cpu_median": statistics.median(r[part][1] for r in runs)}
                               for part in ("scan", "prove", "dictionary")}
                    figures[key][side] = summary
                    rows.append([mode, subjects, side, summary["scan"]["cpu_min"], summary["prove"]["cpu_min"],
                                 summary["dictionary"]["cpu_min"],
                                 f"{summary['dictionary']['cpu_min'] / summary['prove']['cpu_min']:.0%}",
                                 summary["prove"]["wall_median"], summary["dictionary"]["wall_median"]])
        print_table(f"{args.files} files x {args.rows:,} rows; CPU seconds (min of {args.rounds} x {args.repeats}) "
                    f"and wall (median)",
                    ["search", "subjects", "code", "scan cpu", "proofs cpu", "dictionary cpu", "share",
                     "proofs wall", "dictionary wall"], rows)
        for key, found in figures.items():
            print(f"{key}: {found['places']} places; chunks by method {found['by_method']}")
        write_results("dictionary_verdicts", {"files": args.files, "rows_per_file": args.rows,
                                              "repeats": args.repeats, "rounds": args.rounds, "figures": figures})
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
