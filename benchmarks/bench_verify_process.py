"""A ``piitracer verify`` process near a bare read (issue 51): on the 1M-row demo lakehouse (request
open), the verification against a bare pyarrow read of the same Parquet files, in the same run,
runs interleaved so that a change in the machine's load touches every figure alike.

- process: ``piitracer verify plan.json --no-record`` from the interpreter's start (its imports
  included) against ``python -c`` importing pyarrow and reading every file with
  ``pq.read_table``. Target: <= 1.5x.
- warm, one process: ``piitracer.open(lake)`` then ``session.verify(plan, record=False)``, timed
  together, against ``pq.read_table`` of the same files in the same process, after one untimed
  round of each (imports, page cache). Target: <= 1.0x.

The files are every ``*.parquet`` under the locations of the plan's datasets (the files the
verifier lists and proves, besides the table formats' metadata and logs, which the bare read does
not read); their total size is checked against the report's ``bytes_total``. Each verification
must end complete (exit 0): a verification that proves less is refused, not timed. Wall and CPU
seconds (the process's every thread) of each run, medians.

Python's bytecode is cached as an installed package has it: the children run without
``PYTHONDONTWRITEBYTECODE`` and with ``PYTHONPYCACHEPREFIX`` under the temporary folder (nothing is
written into a checkout); ``--no-bytecode-cache`` keeps the environment's setting (with
``PYTHONDONTWRITEBYTECODE=1`` and no ``.pyc`` files every process compiles piitracer's ~160 modules
from source, ~0.4 s).

The demo lakehouse is built once (``piitracer demo --rows N --no-close``, ~4 minutes at 1M rows,
Spark) into ``--demo`` and reused while its ``.built.json`` beside it says the same rows. With
``--compare DIR`` another checkout is timed too (its package first on ``PYTHONPATH``), in the same
run, e.g. the commit before a change: ``git archive REV piitracer | tar -x -C DIR``.

Usage: .venv/bin/python benchmarks/bench_verify_process.py [--demo /tmp/piitracer-bench/demo1m]
       [--rows 1000000] [--runs 5] [--compare DIR] [--rebuild] [--no-bytecode-cache]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
from _common import print_table, write_results  # noqa: E402

BARE_PROCESS = ("import sys, pyarrow.parquet as pq\n"
                "for line in open(sys.argv[1]):\n"
                "    pq.read_table(line.strip())\n")


# ---- the demo lakehouse ---------------------------------------------------------------------------

def demo_keys(folder: Path) -> dict[str, str]:
    """The demo's own keys as the environment gives them to any piitracer process."""
    state = folder / ".piitracer"
    return {"PIITRACER_MASTER_KEY_FILE": str(state / "demo-master.key"),
            "PIITRACER_AUDIT_KEY_FILE": str(state / "demo-audit.key"),
            "PIITRACER_SIGNING_KEY_FILE": str(state / "demo-signing.key")}


def ensure_demo(folder: Path, rows: int, rebuild: bool) -> None:
    """Build the demo lakehouse with this checkout (request left open), unless it is there at ``rows``."""
    marker = folder.parent / f"{folder.name}.built.json"
    if not rebuild and (folder / "plan.json").exists() and marker.exists() and json.loads(marker.read_text())["rows"] == rows:
        print(f"reusing the demo lakehouse {folder} ({rows:,} rows)", flush=True)
        return
    print(f"building the demo lakehouse {folder} ({rows:,} rows, Spark: minutes) ...", flush=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    marker.unlink(missing_ok=True)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "piitracer.cli.main", "demo", "--dir", str(folder), "--rows", str(rows),
                           "--no-close", "--rebuild", "--output", "json"], cwd=REPO, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"the demo failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    marker.write_text(json.dumps({"rows": rows, "built_s": time.perf_counter() - start}) + "\n")


def demo_files(folder: Path) -> list[str]:
    """Every Parquet file under the locations of the demo plan's datasets."""
    import piitracer
    from piitracer.storage.locations import Location

    with piitracer.open(folder) as session:
        plan = session.load_plan(folder / "plan.json")
        workspace = session.workspace
    files = set()
    for decision in plan.datasets:
        entry = workspace.config.catalog.get(decision.dataset)
        if entry is None or not entry.location:
            continue
        location = Location.parse(entry.location, base=workspace.root)
        if location.is_local and Path(location.uri).is_dir():
            files |= {str(p) for p in Path(location.uri).rglob("*.parquet")}
    return sorted(files)


# ---- the warm child: one process, one checkout ------------------------------------------------------

def warm_child(argv: list[str]) -> None:
    """``_warm FOLDER FILES RUNS CODE``: the bare read and open + verify in turn in this process,
    one untimed round each first; prints one JSON line of figures."""
    folder, files_list, runs, code = Path(argv[0]), argv[1], int(argv[2]), argv[3]
    import pyarrow.parquet as pq

    import piitracer

    if not piitracer.__file__.startswith(code):
        raise SystemExit(f"piitracer imported from {piitracer.__file__}, not from {code}")
    files = Path(files_list).read_text().split()

    def bare() -> None:
        for path in files:
            pq.read_table(path)

    def verify():
        with piitracer.open(folder) as session:
            report = session.verify(folder / "plan.json", record=False).report
        if not report.complete:
            raise SystemExit(f"the verification is not complete: {[d.dataset for d in report.open_items()]}")
        return report

    first = {}
    for name, fn in (("bare", bare), ("verify", verify)):
        first[name] = _timed(fn)[0]
    report = None
    times: dict[str, list] = {"bare": [], "verify": []}
    for _ in range(runs):
        times["bare"].append(_timed(bare)[0])
        figures, report = _timed(verify)
        times["verify"].append(figures)
    print(json.dumps({"first": first, "runs": times,
                      "bytes_total": sum(d.chunk_proofs.bytes_total for d in report.datasets),
                      "bytes_read": sum(d.chunk_proofs.bytes_read for d in report.datasets)}))


def _timed(fn) -> tuple[tuple[float, float], object]:
    """((wall, CPU) of one call, its result); CPU of every thread of this process."""
    before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    result = fn()
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF)
    return (wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime), result


# ---- the parent ---------------------------------------------------------------------------------

def process(argv: list[str], checkout: Path, env_extra: dict[str, str], expect_ok: bool) -> tuple[float, float]:
    """(wall, CPU) of one whole process, from the interpreter's start, its output discarded."""
    env = {**os.environ, "PYTHONPATH": str(checkout), **env_extra}
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=tempfile.gettempdir(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    if expect_ok and done.returncode:
        raise SystemExit(f"{' '.join(argv[:5])}... exit {done.returncode} (must be 0: complete):\n{done.stderr[-3000:]}")
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def package_of(checkout: Path) -> str:
    """Where a process with ``checkout`` first on PYTHONPATH imports piitracer from."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    return subprocess.run([sys.executable, "-c", "import piitracer; print(piitracer.__file__)"], env=env,
                          cwd=tempfile.gettempdir(), capture_output=True, text=True, check=True).stdout.strip()


def warm_in_child(checkout: Path, folder: Path, files_list: str, runs: int, env_extra: dict[str, str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout), **env_extra}
    done = subprocess.run([sys.executable, str(HERE), "_warm", str(folder), files_list, str(runs), str(checkout)],
                          env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"the warm child ({checkout}) failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def medians(runs: list) -> dict[str, float]:
    return {"wall_s": statistics.median(w for w, _ in runs), "cpu_s": statistics.median(c for _, c in runs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", type=Path, default=Path(tempfile.gettempdir()) / "piitracer-bench" / "demo1m",
                        help="the demo workspace folder (built there once, then reused)")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each figure (medians)")
    parser.add_argument("--compare", type=Path, help="another checkout of piitracer, timed in the same run")
    parser.add_argument("--rebuild", action="store_true", help="build the demo lakehouse again")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="keep the environment's PYTHONDONTWRITEBYTECODE (no cached .pyc: compile on every start)")
    args = parser.parse_args()
    if not args.no_bytecode_cache:  # every child inherits this process's environment
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "piitracer-bench" / "pycache")
    folder = args.demo.resolve()
    ensure_demo(folder, args.rows, args.rebuild)
    keys = demo_keys(folder)
    os.environ.update(keys)
    files = demo_files(folder)
    size = sum(os.path.getsize(p) for p in files)
    listing = tempfile.NamedTemporaryFile("w", suffix=".txt", prefix="verify-process-", delete=False)
    listing.write("\n".join(files) + "\n")
    listing.close()
    checkouts = {"this checkout": REPO, **({"compare": args.compare.resolve()} if args.compare else {})}
    for label, checkout in checkouts.items():
        where = package_of(checkout)
        if not where.startswith(str(checkout)):
            raise SystemExit(f"{label}: piitracer imported from {where}, not from {checkout}")
    print(f"{len(files)} Parquet files, {size / 1e6:,.1f} MB; {args.runs} runs of each, interleaved; bytecode "
          f"{'cached' if not args.no_bytecode_cache else 'as the environment says'}", flush=True)

    bare_argv = [sys.executable, "-c", BARE_PROCESS, listing.name]
    verify_argv = [sys.executable, "-m", "piitracer.cli.main", "--workspace", str(folder), "verify",
                   str(folder / "plan.json"), "--no-record"]
    jobs = [("bare read", bare_argv, REPO)] + [(f"verify, {label}", verify_argv, checkout) for label, checkout in checkouts.items()]
    for _, argv, checkout in jobs:  # warm the file cache and the bytecode
        process(argv, checkout, keys, expect_ok=True)
    processes: dict[str, list] = {name: [] for name, _, _ in jobs}
    for _ in range(args.runs):
        for name, argv, checkout in jobs:
            processes[name].append(process(argv, checkout, keys, expect_ok=True))
    warm = {label: warm_in_child(checkout, folder, listing.name, args.runs, keys) for label, checkout in checkouts.items()}
    os.unlink(listing.name)
    load = os.getloadavg()[0]

    bare = medians(processes["bare read"])
    rows = [["bare read (python -c, pq.read_table)", bare["wall_s"], bare["cpu_s"], "", ""]]
    figures: dict = {"files": len(files), "bytes": size, "runs": args.runs, "load_average_1m": load,
                     "bytecode_cached": not args.no_bytecode_cache,
                     "process": {"bare read": {**bare, "runs": processes["bare read"]}}, "warm": {}}
    for label in checkouts:
        each = medians(processes[f"verify, {label}"])
        figures["process"][f"verify, {label}"] = {**each, "runs": processes[f"verify, {label}"],
                                                 "ratio_wall": each["wall_s"] / bare["wall_s"]}
        rows.append([f"piitracer verify --no-record, {label}", each["wall_s"], each["cpu_s"],
                     f"{each['wall_s'] / bare['wall_s']:.2f}x", f"{each['cpu_s'] / bare['cpu_s']:.2f}x"])
    print_table(f"Whole processes, medians of {args.runs} (target: verify <= 1.5x the bare read)",
                ["process", "wall s", "CPU s", "wall / bare", "CPU / bare"], rows)

    rows = []
    for label, child in warm.items():
        read, verified = medians(child["runs"]["bare"]), medians(child["runs"]["verify"])
        if child["bytes_total"] != size:
            print(f"note ({label}): the report's Parquet bytes {child['bytes_total']:,} != the bare read's {size:,}")
        figures["warm"][label] = {"bare": read, "verify": verified, "first": child["first"], "runs": child["runs"],
                                  "ratio_wall": verified["wall_s"] / read["wall_s"], "bytes_total": child["bytes_total"],
                                  "bytes_read": child["bytes_read"]}
        rows += [[f"{label}: bare read", read["wall_s"], read["cpu_s"], "", ""],
                 [f"{label}: open + verify(record=False)", verified["wall_s"], verified["cpu_s"],
                  f"{verified['wall_s'] / read['wall_s']:.2f}x", f"{verified['cpu_s'] / read['cpu_s']:.2f}x"]]
    print_table(f"Warm, in one process per checkout, medians of {args.runs} (target: verify <= 1.0x the bare read)",
                ["in process", "wall s", "CPU s", "wall / bare", "CPU / bare"], rows)
    print(f"1-minute load average at the end {load:.2f}")
    write_results("verify_process", figures)


if __name__ == "__main__":
    if sys.argv[1:2] == ["_warm"]:
        warm_child(sys.argv[2:])
    else:
        main()
