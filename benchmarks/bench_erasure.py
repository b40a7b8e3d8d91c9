"""Batch erasure on Spark: one Iceberg merge-on-read table of N rows, K subjects in one plan.

For K = 1, 100, 10,000 (each on a fresh copy of the same table) it times ``execute_plan`` —
resolve, DELETE, rewrite_data_files, rewrite_manifests, expire_snapshots, remove_orphan_files —
and compares the data files the rewrite replaced with the data files that held a subject (from
Iceberg's ``_file`` metadata column before the delete): the target is equal. The per-subject
alternative (one plan per subject) is measured on a few single-subject runs and extrapolated.

Targets (issue 7): 10,000 subjects cost at most 1.5x one subject; files rewritten == files holding
subjects.

    .venv/bin/python benchmarks/bench_erasure.py [--rows 2000000] [--commits 8] [--repeats 3] [--singles 3]

The table is written in ``--commits`` appends, each over all 20 daily partitions, so it has
commits x 20 data files: one subject sits in one file, 10,000 in nearly all of them. Each K runs
``--repeats`` times (interleaved) and its median is reported.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import yaml

import piitracer
from piitracer.api import execute_plan, plan_deletion
from piitracer.executor.runner import ExecuteOptions
from piitracer.executor.spark_session import spark_session
from piitracer.model.plan import Action, Subject
from piitracer.model.settings import SparkSettings

RESULTS = Path(__file__).resolve().parent / "results"
PROPERTIES = ("'format-version'='2', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
              "'write.merge.mode'='merge-on-read'")
DAYS = 20
RECEIVED = datetime(2026, 11, 20, 9, 0, tzinfo=timezone.utc)


def make_base(spark, rows: int, commits: int) -> None:
    """The base table, written in ``commits`` appends that each touch every daily partition (one
    file per partition per commit, as a pipeline appending hourly would leave it)."""
    spark.sql(f"CREATE TABLE lake.bench.base (user_id BIGINT, email STRING, amount DOUBLE, dt STRING) USING iceberg "
              f"PARTITIONED BY (dt) TBLPROPERTIES ({PROPERTIES})")
    chunk = rows // commits
    for part in range(commits):
        spark.range(part * chunk, (part + 1) * chunk).selectExpr(
            "id + 1000000 AS user_id", "concat('user', id, '@example.org') AS email", "CAST(id % 997 AS DOUBLE) AS amount",
            f"concat('2026-10-', lpad(CAST(id % {DAYS} + 1 AS STRING), 2, '0')) AS dt",
        ).writeTo("lake.bench.base").append()


def fresh_copy(spark, name: str, rows: int, commits: int) -> None:
    spark.sql(f"DROP TABLE IF EXISTS lake.bench.{name} PURGE")
    spark.sql(f"CREATE TABLE lake.bench.{name} (user_id BIGINT, email STRING, amount DOUBLE, dt STRING) USING iceberg "
              f"PARTITIONED BY (dt) TBLPROPERTIES ({PROPERTIES})")
    chunk = rows // commits
    for part in range(commits):  # the base's layout: one commit per chunk of users, each over every partition
        low = 1_000_000 + part * chunk
        spark.sql(f"INSERT INTO lake.bench.{name} SELECT * FROM lake.bench.base WHERE user_id >= {low} AND user_id < {low + chunk}")


def workspace(folder: Path, warehouse: Path, name: str) -> piitracer.Workspace:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sql").mkdir(exist_ok=True)
    (folder / "sql" / "none.sql").write_text("-- no pipelines\n")
    config = {
        "lineage": {"sql": [{"path": "sql"}], "spark_catalogs": ["lake"]},
        "spark": {"master": "local[2]", "catalog": "lake", "warehouse": str(warehouse), "driver_memory": "4g"},
        "catalog": {f"bench.{name}": {"format": "iceberg", "write_mode": "merge-on-read", "table": f"lake.bench.{name}",
                                      "location": str(warehouse / "bench" / name), "columns": ["user_id", "email", "amount", "dt"],
                                      "identifiers": ["user_id", "email"], "subject_key": "user_id"}},
    }
    (folder / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return piitracer.load_workspace(folder)


def erase(spark, root: Path, warehouse: Path, name: str, subjects: list[int], rows: int, commits: int) -> dict:
    """Plan and execute the erasure of ``subjects`` from a fresh copy; wall time of the execution."""
    fresh_copy(spark, name, rows, commits)
    table = f"lake.bench.{name}"
    spark.createDataFrame([(s,) for s in subjects], "user_id BIGINT").createOrReplaceTempView("bench_subjects")
    holders = {r[0] for r in spark.sql(f"SELECT DISTINCT _file FROM {table} WHERE user_id IN (SELECT user_id FROM bench_subjects)").collect()}
    files_before = {r[0] for r in spark.sql(f"SELECT file_path FROM {table}.files WHERE content = 0").collect()}
    ws = workspace(root / name, warehouse, name)
    plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), [f"bench.{name}.user_id"],
                         [Subject(value=str(s), request_id=f"r{i}", received_at=RECEIVED) for i, s in enumerate(subjects)])
    started = time.perf_counter()
    summary = execute_plan(ws, plan, ExecuteOptions(no_concurrent_writers=True))
    seconds = time.perf_counter() - started
    assert summary.status == "complete", summary.status
    files_after = {r[0] for r in spark.sql(f"SELECT file_path FROM {table}.files WHERE content = 0").collect()}
    steps = {r.step.action.value: round(r.seconds, 2) for r in summary.results}
    rows = sum(r.outcome.rows_deleted for r in summary.results if r.step.action is Action.DELETE_ROWS and r.outcome)
    spark.sql(f"DROP TABLE lake.bench.{name} PURGE")
    return {"subjects": len(subjects), "seconds": round(seconds, 2), "rows_deleted": rows, "files_total": len(files_before),
            "files_holding_subjects": len(holders), "files_rewritten": len(files_before - files_after),
            "rewritten_equals_holders": (files_before - files_after) == holders, "steps": steps}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--batches", default="1,100,10000")
    parser.add_argument("--singles", type=int, default=3, help="single-subject runs for the per-subject alternative")
    parser.add_argument("--commits", type=int, default=8, help="appends writing the table (files per partition)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each K (median)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="piitracer-bench-"))
    warehouse = root / "warehouse"
    try:
        spark = spark_session(SparkSettings(master="local[2]", catalog="lake", driver_memory="4g",
                                            conf={"spark.ui.showConsoleProgress": "false"}), warehouse)
        started = time.perf_counter()
        make_base(spark, args.rows, args.commits)
        print(f"base table: {args.rows:,} rows in {time.perf_counter() - started:.1f} s")
        rng = random.Random(7)
        population = range(1_000_000, 1_000_000 + (args.rows // args.commits) * args.commits)
        runs = []
        for repeat in range(args.repeats):  # K values interleaved, so a slow spell of the machine hits every K
            for k in (int(x) for x in args.batches.split(",")):
                result = erase(spark, root, warehouse, f"k{k}", rng.sample(population, k), args.rows, args.commits)
                runs.append(result)
                print(f"K={k:>6} (run {repeat + 1}): {result['seconds']:7.1f} s, rows {result['rows_deleted']:,}, files rewritten "
                      f"{result['files_rewritten']}/{result['files_total']} (holding subjects: {result['files_holding_subjects']}, "
                      f"equal: {result['rewritten_equals_holders']}) steps {result['steps']}", flush=True)
        singles = [erase(spark, root, warehouse, f"single{i}", rng.sample(population, 1), args.rows, args.commits)["seconds"]
                   for i in range(args.singles)]
        per_subject = statistics.median(singles)
        by_k = {k: statistics.median(r["seconds"] for r in runs if r["subjects"] == k) for k in {r["subjects"] for r in runs}}
        one, biggest = by_k[min(by_k)], max(by_k)
        figures = {
            "rows": args.rows, "commits": args.commits, "runs": runs, "median_seconds_by_k": by_k,
            "rewritten_equals_holders_every_run": all(r["rewritten_equals_holders"] for r in runs), "single_runs_seconds": singles, "per_subject_seconds_median": per_subject,
            "ratio_biggest_batch_to_one": round(by_k[biggest] / one, 2),
            "per_subject_alternative_seconds_for_biggest": round(per_subject * biggest, 1),
            "speedup_batch_vs_per_subject": round(per_subject * biggest / by_k[biggest], 1),
        }
        print(f"medians: {', '.join(f'K={k}: {v:.1f} s' for k, v in sorted(by_k.items()))}; files rewritten == holders "
              f"in every run: {figures['rewritten_equals_holders_every_run']}")
        print(f"K={biggest} costs {figures['ratio_biggest_batch_to_one']}x K=1 (target <= 1.5x); one plan per subject "
              f"would take ~{figures['per_subject_alternative_seconds_for_biggest']:,} s "
              f"({figures['speedup_batch_vs_per_subject']}x the batch)")
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "erasure.json").write_text(json.dumps(figures, indent=2) + "\n")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
