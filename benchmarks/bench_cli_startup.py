"""How long the CLI takes to answer before it does any work: ``piitracer --help`` and ``piitracer
plan --help`` against ``python -c pass`` (the interpreter's own start), in the same run, runs
interleaved so that a change in the machine's load touches every command alike.

Target (issue 40): ``piitracer --help`` under 0.4 s on a quiet machine. With ``--compare DIR`` the
same commands are timed from another checkout too (``git worktree add DIR <commit>``), e.g. the
commit before a change, in the same run. hyperfine (Debian's package), when installed, times the
same commands as a cross-check (``--hyperfine``).

Usage: .venv/bin/python benchmarks/bench_cli_startup.py [--runs 30] [--compare DIR] [--hyperfine]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import write_results

REPO = Path(__file__).resolve().parents[1]


def commands(checkout: Path) -> dict[str, list[str]]:
    main = [sys.executable, "-m", "piitracer.cli.main"]
    return {"python -c pass": [sys.executable, "-c", "pass"],
            "piitracer --help": [*main, "--help"],
            "piitracer plan --help": [*main, "plan", "--help"]} if checkout == REPO else {
            "piitracer --help": [*main, "--help"], "piitracer plan --help": [*main, "plan", "--help"]}


def run_once(command: list[str], checkout: Path) -> float:
    """Wall seconds of one run, its output discarded; the checkout's package first on the path."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "COLUMNS": "100"}
    start = time.perf_counter()
    subprocess.run(command, env=env, cwd=checkout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--compare", type=Path, help="another checkout of piitracer, timed in the same run")
    parser.add_argument("--hyperfine", action="store_true", help="also time the commands with hyperfine")
    args = parser.parse_args()
    checkouts = {"this checkout": REPO, **({f"compare {args.compare}": args.compare.resolve()} if args.compare else {})}
    jobs = [(label, name, command, checkout) for label, checkout in checkouts.items()
            for name, command in commands(checkout).items()]
    for _, _, command, checkout in jobs:  # warm the file cache and the bytecode
        run_once(command, checkout)
    times: dict[tuple[str, str], list[float]] = {(label, name): [] for label, name, _, _ in jobs}
    for _ in range(args.runs):
        for label, name, command, checkout in jobs:
            times[(label, name)].append(run_once(command, checkout))
    load = os.getloadavg()[0]
    baseline = statistics.median(times[("this checkout", "python -c pass")])
    rows = {}
    print(f"{args.runs} runs each, interleaved; 1-minute load average at the end {load:.2f}")
    print(f"{'checkout':<40} {'command':<24} {'median s':>9} {'min s':>7} {'- python s':>10}")
    for (label, name), values in times.items():
        median = statistics.median(values)
        rows[f"{label}: {name}"] = {"median_s": median, "min_s": min(values), "over_python_s": median - baseline,
                                    "runs": values}
        print(f"{label:<40} {name:<24} {median:>9.3f} {min(values):>7.3f} {median - baseline:>10.3f}")
    if args.hyperfine and shutil.which("hyperfine"):
        env_path = f"PYTHONPATH={REPO}"
        subprocess.run(["hyperfine", "--warmup", "3", "--runs", str(args.runs), "-N",
                        *(f"env {env_path} {' '.join(command)}" for _, _, command, checkout in jobs if checkout == REPO)],
                       check=True)
    write_results("cli_startup", {"load_average_1m": load, "figures": rows})


if __name__ == "__main__":
    main()
