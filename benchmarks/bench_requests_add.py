"""How long ``piitracer requests add --source DATASET.COLUMN --requests FILE.csv`` takes for a file
of N requests, each process fresh (``.venv/bin/piitracer`` as a person runs it): N = 1,000 and
10,000 by default.

The workspace is the smallest one that takes requests: a catalog with one Parquet table whose
bigint ``user_id`` is the subject key, an audit key and a master key (files, mode 0600). The CSV
has the columns ``value,request_id,received_at``, one request per line. Every run starts from a
new copy of the workspace (an empty request store and audit log), and is checked afterwards: the
request store holds N requests, N data keys and N history rows, and the audit log N request
entries (plus the workspace's first entry).

Target: 10,000 requests in under 15 s on the 2-core machine. With ``--compare DIR`` the same runs
are made with another checkout's code too (``git worktree add DIR <commit>``: the package of DIR
first on ``PYTHONPATH``), interleaved, in the same run. ``--profile N`` runs one N under
cProfile instead and prints where the time goes (cumulative, then own time).

Usage: .venv/bin/python benchmarks/bench_requests_add.py [--sizes 1000 10000] [--runs 3] [--compare DIR]
       .venv/bin/python benchmarks/bench_requests_add.py --profile 10000
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import write_results

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "support"))  # the lake the request tests use (users_lake.py)
PIITRACER = REPO / ".venv" / "bin" / "piitracer"
SOURCE = "crm.users.user_id"


def make_workspace(folder: Path) -> Path:
    """The workspace (``folder/ws``) and its two keys (``folder/keys``); returns the workspace."""
    from piitracer.audit.keys import write_audit_key
    from piitracer.crypto.envelope import write_master_key
    from users_lake import users_lake

    root = users_lake(folder / "ws")
    keys = folder / "keys"
    keys.mkdir(mode=0o700)
    write_audit_key(keys / "audit.key")
    write_master_key(keys / "master.key")
    return root


def write_csv(path: Path, count: int) -> Path:
    """``count`` requests, one subject each, arriving over the last days (deterministic)."""
    lines = ["value,request_id,received_at"]
    for index in range(count):
        lines.append(f"{7_000_000_000 + index},dsr-{index:06d},2026-11-{1 + index % 28:02d}T{index % 24:02d}:00:00Z")
    path.write_text("\n".join(lines) + "\n")
    return path


def command(folder: Path, workspace: Path, csv: Path) -> list[str]:
    return [str(PIITRACER), "requests", "add", "--source", SOURCE, "--requests", str(csv), "--workspace", str(workspace),
            "--audit-key-file", str(folder / "keys" / "audit.key"),
            "--master-key-file", str(folder / "keys" / "master.key"), "--output", "json"]


def run_once(template: Path, csv: Path, count: int, checkout: Path, scratch: Path) -> float:
    """Wall seconds of one ``requests add`` process on a fresh copy of the workspace (checked)."""
    folder = Path(tempfile.mkdtemp(dir=scratch))
    shutil.copytree(template, folder, dirs_exist_ok=True)
    workspace = folder / "ws"
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    for name in ("PIITRACER_AUDIT_KEY", "PIITRACER_MASTER_KEY", "PIITRACER_AUDIT_KEY_FILE", "PIITRACER_MASTER_KEY_FILE"):
        env.pop(name, None)
    start = time.perf_counter()
    done = subprocess.run(command(folder, workspace, csv), env=env, cwd=folder, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode:
        raise RuntimeError(f"requests add failed ({done.returncode}): {done.stderr[-2000:]}")
    check(workspace, count)
    shutil.rmtree(folder)
    return elapsed


def check(workspace: Path, count: int) -> None:
    """The store holds ``count`` requests with their keys and history; the log a request entry each."""
    state = workspace / ".piitracer"
    with sqlite3.connect(state / "requests.sqlite") as db:
        found = [db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] for table in ("requests", "data_keys", "history")]
    with sqlite3.connect(next(state.glob("audit*.sqlite"))) as db:
        entries = db.execute("SELECT COUNT(*) FROM entries WHERE kind = 'request'").fetchone()[0]
    if found != [count] * 3 or entries != count:
        raise RuntimeError(f"expected {count} requests, keys, history rows and audit entries; found {found}, {entries}")


def profile(count: int, scratch: Path) -> None:
    """One run of ``count`` under cProfile (in a fresh process), its top functions printed."""
    template = scratch / "template"
    make_workspace(template)
    csv = write_csv(scratch / f"requests-{count}.csv", count)
    folder = scratch / "profiled"
    shutil.copytree(template, folder)
    arguments = command(folder, folder / "ws", csv)
    stats = scratch / "profile.pstats"
    subprocess.run([sys.executable, "-m", "cProfile", "-o", str(stats), str(PIITRACER), *arguments[1:]],
                   cwd=folder, stdout=subprocess.DEVNULL, check=True)
    import pstats

    for order in ("cumulative", "tottime"):
        pstats.Stats(str(stats)).sort_stats(order).print_stats(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--compare", type=Path, help="another checkout of piitracer, timed in the same run")
    parser.add_argument("--profile", type=int, metavar="N", help="profile one run of N requests instead")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-requests-add-") as name:
        scratch = Path(name)
        if args.profile:
            profile(args.profile, scratch)
            return
        template = scratch / "template"
        make_workspace(template)
        csvs = {count: write_csv(scratch / f"requests-{count}.csv", count) for count in args.sizes}
        checkouts = {"this checkout": REPO, **({f"compare {args.compare}": args.compare.resolve()} if args.compare else {})}
        for checkout in checkouts.values():  # warm the file cache and the bytecode
            run_once(template, csvs[min(args.sizes)], min(args.sizes), checkout, scratch)
        times: dict[tuple[str, int], list[float]] = {(label, count): [] for label in checkouts for count in args.sizes}
        for _ in range(args.runs):  # interleaved: a change in the machine's load touches every checkout alike
            for count in args.sizes:
                for label, checkout in checkouts.items():
                    times[(label, count)].append(run_once(template, csvs[count], count, checkout, scratch))
    load = os.getloadavg()[0]
    print(f"{args.runs} run(s) each, interleaved; 1-minute load average at the end {load:.2f}")
    print(f"{'checkout':<44} {'N':>7} {'median s':>9} {'min s':>8} {'ms/request':>11}")
    figures = {}
    for (label, count), values in times.items():
        median = statistics.median(values)
        figures[f"{label}: {count}"] = {"requests": count, "median_s": median, "min_s": min(values), "runs": values,
                                        "ms_per_request": 1000 * median / count}
        print(f"{label:<44} {count:>7,} {median:>9.2f} {min(values):>8.2f} {1000 * median / count:>11.2f}")
    write_results("requests_add", {"load_average_1m": load, "figures": figures})


if __name__ == "__main__":
    main()
