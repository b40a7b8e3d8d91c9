"""Shared helpers of the benchmarks: one-core pinning, medians, peak RSS, a printed table and a
JSON file of the figures (``benchmarks/results/<name>.json``, gitignored)."""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Callable

RESULTS = Path(__file__).resolve().parent / "results"


def pin_one_core() -> int | None:
    """Run on one CPU (the figures are "per core"); returns the core, or None where unsupported."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    core = max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {core})
    return core


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    """Wall time of one call (perf_counter) and its result."""
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def median_of(runs: int, fn: Callable[[], object]) -> tuple[float, list[float], object]:
    """Median wall time of ``runs`` calls, every time, and the last result."""
    times, result = [], None
    for _ in range(runs):
        elapsed, result = timed(fn)
        times.append(elapsed)
    return statistics.median(times), times, result


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (``getrusage`` ru_maxrss, KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def environment() -> dict[str, object]:
    versions = {}
    for name in ("pydantic", "networkx", "sqlglot", "sqllineage", "openlineage-python"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_avg_1m": os.getloadavg()[0],
        "versions": versions,
    }


def print_table(title: str, header: list[str], rows: list[list[object]]) -> None:
    cells = [header] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(str(r[i])) for r in cells) for i in range(len(header))]
    print(f"\n{title}")
    for n, row in enumerate(cells):
        print("  ".join(str(c).rjust(w) if n else str(c).ljust(w) for c, w in zip(row, widths)))
        if n == 0:
            print("  ".join("-" * w for w in widths))


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if value < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def run_child(script: str, *arguments: str) -> dict:
    """Run ``script`` again in a fresh Python process (one Spark session per process) and return
    the JSON object it prints on its last line; its stderr tail on failure."""
    import subprocess

    done = subprocess.run([sys.executable, script, *arguments], capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def write_results(name: str, figures: dict[str, object]) -> Path:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"benchmark": name, "environment": environment(), **figures}, indent=2) + "\n")
    print(f"\nfigures written to {path}")
    return path
