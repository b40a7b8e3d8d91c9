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

Then the three logical-delete modes the plan can run, on an unpartitioned table (``--eq-rows``
rows in ``--eq-files`` files; equality deletes without a scan need an unpartitioned table): the
positional DELETE (merge-on-read), one equality-delete file (``delete_mode: equality``) and the
copy-on-write DELETE, at K = 1 and K = 10,000, each on a fresh copy. Timed: piitracer's own
logical step (the ``IcebergEraser`` method the plan runs, its row counts included), then the
``rewrite_data_files`` step that applies the deletes (copy-on-write needs none). The baseline, in
the same run, is one full read of the table (a Spark aggregate over every value: ``count`` alone
is answered from the manifests).

    .venv/bin/python benchmarks/bench_delete_modes.py [--rows 2000000] [--commits 8] [--repeats 2]
        [--eq-rows 1000000] [--eq-files 8] [--only-modes]
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
from piitracer.model.settings import SparkSettings
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
    parser.add_argument("--eq-rows", type=int, default=1_000_000)
    parser.add_argument("--eq-files", type=int, default=8)
    parser.add_argument("--only-modes", action="store_true", help="only the three logical-delete modes")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="piitracer-bench-"))
    try:
        spark = spark_session(SparkSettings(master="local[2]", catalog="lake", driver_memory="4g",
                                            conf={"spark.ui.showConsoleProgress": "false"}), root / "warehouse")
        logical_modes(spark, root / "warehouse", args.eq_rows, args.eq_files)
        if args.only_modes:
            return
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


LOGICAL_MODES = ("positional", "equality", "copy-on-write")


def logical_modes(spark, warehouse: Path, rows: int, files: int) -> None:
    """The plan's three logical-delete modes at K = 1 and 10,000 (see the module docstring)."""
    from piitracer.formats.iceberg_eraser import IcebergEraser
    from piitracer.storage.locations import Location

    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.modes")
    source = warehouse / "modes-source.parquet"
    (spark.range(rows).selectExpr("id AS user_id", "concat('4111-', cast(id AS string)) AS pan",
                                  "cast(id % 1000 AS double) AS amount")
     .repartition(files).write.parquet(str(source)))
    frame = spark.read.parquet(str(source))
    figures, number = [], 0
    # A first round (discarded) warms the JVM and the code paths of every mode: the timed round
    # compares the modes, not who ran first.
    for warm, k in ((True, 1), (False, 1), (False, 10_000)):
        subjects = list(range(0, rows, max(rows // k, 1)))[:k]  # spread over every file
        baseline = None
        for mode in ("baseline", *LOGICAL_MODES):
            number += 1
            table = f"lake.modes.t{number}"
            write_mode = "copy-on-write" if mode == "copy-on-write" else "merge-on-read"
            spark.sql(f"CREATE TABLE {table} (user_id BIGINT, pan STRING, amount DOUBLE) USING iceberg TBLPROPERTIES "
                      f"('format-version'='2', 'write.delete.mode'='{write_mode}')")
            frame.writeTo(table).append()
            if mode == "baseline":
                reads = []
                for _ in range(3):
                    started = time.perf_counter()
                    spark.table(table).selectExpr("sum(hash(user_id, pan, amount))").collect()  # every value read
                    reads.append(time.perf_counter() - started)
                baseline = statistics.median(reads)
                continue
            eraser = IcebergEraser(spark, table, Location.parse(warehouse / "modes" / f"t{number}"))
            delete = eraser.equality_delete if mode == "equality" else eraser.delete_rows
            started = time.perf_counter()
            outcome = delete("user_id", subjects)
            logical = time.perf_counter() - started
            assert outcome.rows_deleted == len(subjects), (mode, k, outcome.rows_deleted)
            rewrite = 0.0
            if mode != "copy-on-write":
                started = time.perf_counter()
                eraser.rewrite_data_files(dict(REWRITE_OPTIONS))
                rewrite = time.perf_counter() - started
            left = spark.table(table).count()
            assert left == rows - len(subjects), (mode, k, left)
            total = logical + rewrite
            if warm:
                continue
            figures.append({"k": k, "mode": mode, "logical_s": round(logical, 3), "rewrite_s": round(rewrite, 3),
                            "total_s": round(total, 3), "x_full_read": round(total / baseline, 2),
                            "full_read_s": round(baseline, 3)})
            print(f"K={k:>6} {mode:>13}: logical {logical:6.2f} s + rewrite {rewrite:6.2f} s = {total / baseline:5.1f}x "
                  "a full read", flush=True)
    erasure.RESULTS.mkdir(exist_ok=True)
    (erasure.RESULTS / "delete_modes_logical.json").write_text(json.dumps(
        {"rows": rows, "files": files, "figures": figures}, indent=2) + "\n")


if __name__ == "__main__":
    main()
