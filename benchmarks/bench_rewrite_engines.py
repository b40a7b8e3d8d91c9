"""Plain Parquet rewrite (``rewrite_files``): in the driver vs as Spark tasks (local[2] and a
2-worker standalone cluster on 127.0.0.1), against a bare pyarrow read + write of the same files.

One lakehouse is generated (seeded, ``bench_verify_engines.generate``): ``--files`` files of
``--rows`` rows, every file holding one subject's row, so every file is rewritten. Each engine
rewrites its own fresh copy (in its own process: one Spark session per process) and must remove
exactly the planted rows. Measured in one run: the copy is not timed; the rewrite is (both passes:
finding the files, rewriting them).

    .venv/bin/python benchmarks/bench_rewrite_engines.py [--files 1000] [--rows 25000]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from _common import print_table, run_child, timed, write_results  # noqa: E402
from bench_verify_engines import generate  # noqa: E402


def bare_copy(paths: list[Path], target: Path) -> None:
    """Read and write every file again, keeping every row: the floor of a rewrite."""
    for path in paths:
        pq.write_table(pq.read_table(path), target / path.name)


def rewrite(root: Path, subjects: list[int], engine: str, master: str | None) -> dict:
    """``rewrite_files`` with one engine in this process."""
    from piitracer.formats.parquet import rewrite_files
    from piitracer.model.settings import SparkSettings
    from piitracer.storage.file_tasks import FileTasks, SparkFileTasks
    from piitracer.storage.locations import Location
    from piitracer.storage.store import Store

    figures: dict = {}
    if engine == "driver":
        tasks = FileTasks()
    else:
        from piitracer.executor.spark_session import spark_session

        settings = SparkSettings(master=master, driver_memory="2g")
        figures["session_start_s"], session = timed(lambda: spark_session(settings, root.parent / "warehouse"))
        tasks = SparkFileTasks(lambda: session.sparkContext)
    seconds, outcome = timed(lambda: rewrite_files(Location.parse(root), Store(), "user_id", subjects,
                                                   tasks_for=lambda files, size: tasks))
    figures.update(rewrite_s=seconds, rows_deleted=outcome.rows_deleted, files_rewritten=outcome.files_rewritten,
                   ran_in=outcome.details["ran_in"])
    return figures


def in_child(root: Path, subjects: list[int], engine: str, master: str | None = None) -> dict:
    """``rewrite`` in a fresh process (a Spark session per process)."""
    return run_child(__file__, "--child", engine, "--root", str(root), "--subjects", json.dumps(subjects),
                     *(["--master", master] if master else []))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=25000)
    parser.add_argument("--child", choices=["driver", "spark"])
    parser.add_argument("--root", type=Path)
    parser.add_argument("--subjects")
    parser.add_argument("--master")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(rewrite(args.root, json.loads(args.subjects), args.child, args.master)))
        return

    base = Path(tempfile.mkdtemp(prefix="bench-rewrite-"))
    try:
        original = base / "original" / "t"
        seconds, value_sets = timed(lambda: generate(original, args.files, args.rows, planted_every=1))
        paths = sorted(original.rglob("*.parquet"))
        size = sum(p.stat().st_size for p in paths)
        print(f"generated {len(paths)} files, {size / 1e9:.2f} GB in {seconds:.0f} s")
        subjects = value_sets["t.user_id"]

        floor = base / "bare"
        floor.mkdir()
        runs = {"bare read + write, 1 process": {"rewrite_s": timed(lambda: bare_copy(paths, floor))[0]}}
        shutil.rmtree(floor)

        def fresh(name: str) -> Path:
            copy = base / name / "t"
            shutil.copytree(original, copy)
            return copy

        runs["driver"] = in_child(fresh("driver"), subjects, "driver")
        runs["spark local[2]"] = in_child(fresh("local"), subjects, "spark", "local[2]")
        from spark_cluster import start_cluster

        cluster = start_cluster(base / "cluster")
        try:
            runs["spark cluster, 2 workers x 1 core"] = in_child(fresh("cluster"), subjects, "spark", cluster.master_url)
        finally:
            cluster.stop()
        engines = [name for name in runs if "rows_deleted" in runs[name]]
        assert all(runs[name]["rows_deleted"] == len(paths) and runs[name]["files_rewritten"] == len(paths)
                   for name in engines), runs
        floor_s = runs["bare read + write, 1 process"]["rewrite_s"]
        table = [[name, figures.get("session_start_s", 0.0), figures["rewrite_s"], len(paths) / figures["rewrite_s"],
                  size / figures["rewrite_s"] / 1e6, figures["rewrite_s"] / floor_s, figures.get("ran_in", "")]
                 for name, figures in runs.items()]
        print_table(f"rewrite of {len(paths)} files, {size / 1e9:.2f} GB, one subject row in each",
                    ["engine", "session start s", "rewrite s", "files/s", "MB/s", "x bare read+write (1 process)", "ran in"],
                    table)
        write_results("bench_rewrite_engines", {"files": len(paths), "bytes": size, "runs": runs})
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
