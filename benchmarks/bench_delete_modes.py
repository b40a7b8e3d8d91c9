"""Where the batch-erasure limit is: the cheapest way to remove K subjects' rows from the bytes.

Same table as ``bench_erasure.py`` (Iceberg, 2,000,000 rows, 20 daily partitions, 8 appends: 160
data files). For K = 1 and K = 10,000 random subjects, each on a fresh copy, it times the two ways
Iceberg can make the rows physically gone:

* merge-on-read (what the plan does today): ``DELETE`` writes position-delete files, then
  ``rewrite_data_files`` (the plan's options) rewrites the files that have them;
* copy-on-write: the same ``DELETE`` with ``write.delete.mode=copy-on-write`` rewrites each file
  holding a subject at once (the following ``rewrite_data_files`` finds nothing to do).

Only those two statements are timed (no resolve, counts, expiry or orphan removal), median of
``--repeats``. If even the cheaper way costs more than 1.5x at K = 10,000, the batch-erasure target
is bound by the data the subjects sit in, not by how piitracer batches them.

    .venv/bin/python benchmarks/bench_delete_modes.py [--rows 2000000] [--commits 8] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import bench_erasure as erasure

from piitracer.executor.spark_session import spark_session
from piitracer.model.workspace import SparkSettings
from piitracer.planner.templates.iceberg import REWRITE_OPTIONS


def timed_sql(spark, statement: str) -> float:
    started = time.perf_counter()
    spark.sql(statement).collect()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--commits", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="piitracer-bench-"))
    try:
        spark = spark_session(SparkSettings(master="local[2]", catalog="lake", driver_memory="4g",
                                            conf={"spark.ui.showConsoleProgress": "false"}), root / "warehouse")
        erasure.make_base(spark, args.rows, args.commits)
        rng = random.Random(7)
        population = range(1_000_000, 1_000_000 + args.rows)
        options = ", ".join(f"'{k}', '{v}'" for k, v in sorted(REWRITE_OPTIONS.items()))
        runs: dict[str, list[dict[str, float]]] = {}
        for repeat in range(args.repeats):
            for k in (1, 10_000):
                for mode in ("merge-on-read", "copy-on-write"):
                    name = f"k{k}_{mode.replace('-', '_')}"
                    erasure.fresh_copy(spark, name, args.rows, args.commits)
                    spark.sql(f"ALTER TABLE lake.bench.{name} SET TBLPROPERTIES ('write.delete.mode'='{mode}')")
                    # The values as a temp view, as the executor binds them: data, never SQL text.
                    spark.createDataFrame([(s,) for s in rng.sample(population, k)], "v BIGINT").createOrReplaceTempView("subjects")
                    delete = timed_sql(spark, f"DELETE FROM lake.bench.{name} WHERE user_id IN (SELECT v FROM subjects)")
                    rewrite = timed_sql(spark, f"CALL lake.system.rewrite_data_files(table => 'bench.{name}', options => map({options}))")
                    runs.setdefault(f"{k}/{mode}", []).append({"delete_s": round(delete, 2), "rewrite_s": round(rewrite, 2)})
                    print(f"run {repeat + 1} K={k:>6} {mode:>13}: delete {delete:5.2f} s + rewrite {rewrite:5.2f} s", flush=True)
                    spark.sql(f"DROP TABLE lake.bench.{name} PURGE")
        medians = {key: statistics.median(r["delete_s"] + r["rewrite_s"] for r in rs) for key, rs in runs.items()}
        for mode in ("merge-on-read", "copy-on-write"):
            one, batch = medians[f"1/{mode}"], medians[f"10000/{mode}"]
            print(f"{mode}: K=1 {one:.2f} s, K=10,000 {batch:.2f} s: {batch / one:.2f}x")
        erasure.RESULTS.mkdir(exist_ok=True)
        (erasure.RESULTS / "delete_modes.json").write_text(json.dumps({"rows": args.rows, "runs": runs, "medians_s": medians}, indent=2) + "\n")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
