"""What ``verify.prepare`` costs on write: the same erasure with and without it, on plain Parquet
(``rewrite_files``, pyarrow), Delta (``delete_rows``, delta-rs) and, with ``--iceberg``, Iceberg
(``rewrite_data_files`` on Spark local[2]).

One lakehouse is generated (seeded, ``bench_verify_engines.generate``): ``--files`` files of
``--rows`` rows (about 2 MB each at the defaults), every file holding one subject's row, so every
file is rewritten. Each run rewrites its own fresh copy (the copy is not timed); the rewrite is
timed, and the bytes of the files it wrote are summed. Prepared runs put Bloom filters on the
identifier columns user_id, pan and phone. Medians of ``--repeats`` runs, pinned to one core
(but Iceberg, which is Spark's).

    .venv/bin/python benchmarks/bench_prepare_write.py [--files 50] [--rows 50000] [--repeats 3] [--iceberg]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from _common import pin_one_core, print_table, run_child, timed, write_results  # noqa: E402
from bench_verify_engines import generate  # noqa: E402

PREPARE = ("pan", "phone", "user_id")


def _size(paths) -> int:
    return sum(Path(p).stat().st_size for p in paths)


def _bloom_bytes(paths) -> int:
    total = 0
    for path in paths:
        metadata = pq.ParquetFile(str(path)).metadata
        total += sum(metadata.row_group(g).column(c).bloom_filter_length or 0
                     for g in range(metadata.num_row_groups) for c in range(metadata.num_columns))
    return total


def parquet_run(source: Path, work: Path, subjects: list[int], prepare: tuple[str, ...]) -> dict:
    from piitracer.formats.parquet import rewrite_files
    from piitracer.storage.locations import Location
    from piitracer.storage.store import Store

    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(source, work)
    seconds, outcome = timed(lambda: rewrite_files(Location.parse(work), Store(), "user_id", subjects, prepare=prepare))
    files = sorted(work.rglob("*.parquet"))
    return {"seconds": seconds, "files_rewritten": outcome.files_rewritten, "rows_deleted": outcome.rows_deleted,
            "bytes": _size(files), "bloom_bytes": _bloom_bytes(files)}


def delta_run(source: Path, work: Path, subjects: list[int], prepare: tuple[str, ...]) -> dict:
    from deltalake import DeltaTable

    from piitracer.formats.delta import delete_rows
    from piitracer.storage.locations import Location
    from piitracer.storage.store import Store

    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(source, work)
    before = set(DeltaTable(str(work)).file_uris())
    seconds, outcome = timed(lambda: delete_rows(Location.parse(work), Store(), "user_id", subjects, prepare=prepare))
    files = sorted(set(DeltaTable(str(work)).file_uris()) - before)
    return {"seconds": seconds, "files_rewritten": outcome.files_rewritten, "rows_deleted": outcome.rows_deleted,
            "bytes": _size(files), "bloom_bytes": _bloom_bytes(files)}


def build_delta(source: Path, target: Path) -> None:
    """The same files as one Delta table (one add per file, delta-rs's default codec)."""
    from deltalake import write_deltalake

    for path in sorted(source.rglob("*.parquet")):
        write_deltalake(str(target), pq.read_table(path).drop_columns([c for c in ("dt",) if c in pq.read_schema(path).names]),
                        mode="append")


def iceberg_child(source: str, warehouse: str, repeats: int, subjects: list[int]) -> dict:
    """In a fresh process (one Spark session): per repeat and mode, a merge-on-read table of the
    files, the subjects deleted, then the timed ``rewrite_data_files``."""
    from piitracer.executor.spark_session import spark_session
    from piitracer.formats.iceberg_eraser import IcebergEraser
    from piitracer.model.settings import SparkSettings
    from piitracer.planner.templates.iceberg import REWRITE_OPTIONS
    from piitracer.storage.locations import Location

    spark = spark_session(SparkSettings(master="local[2]", driver_memory="2g",
                                        conf={"spark.ui.showConsoleProgress": "false"}), Path(warehouse))
    frame = spark.read.parquet(*[str(p) for p in sorted(Path(source).rglob("*.parquet"))]).drop("dt")
    figures: dict[str, list[dict]] = {"plain": [], "prepared": []}
    for repeat in range(repeats):
        for mode, prepare in (("plain", ()), ("prepared", PREPARE)):
            table = f"lake.bench.t_{mode}_{repeat}"
            spark.sql(f"CREATE TABLE {table} (user_id BIGINT, pan STRING, phone STRING, amount DOUBLE, merchant STRING) "
                      "USING iceberg TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read', "
                      "'write.target-file-size-bytes'='2097152')")
            frame.repartition(len(list(Path(source).rglob("*.parquet")))).writeTo(table).append()
            spark.sql(f"DELETE FROM {table} WHERE user_id IN ({', '.join(str(s) for s in subjects)})")
            before = {r.file_path for r in spark.sql(f"SELECT file_path FROM {table}.data_files").collect()}
            eraser = IcebergEraser(spark, table, Location.parse(Path(warehouse) / "bench" / f"t_{mode}_{repeat}"))
            seconds, outcome = timed(lambda: eraser.rewrite_data_files(dict(REWRITE_OPTIONS), prepare=prepare))
            files = [p.removeprefix("file:") for p in
                     {r.file_path for r in spark.sql(f"SELECT file_path FROM {table}.data_files").collect()} - before]
            figures[mode].append({"seconds": seconds, "files_rewritten": outcome.files_rewritten,
                                  "bytes": _size(files), "bloom_bytes": _bloom_bytes(files)})
    return figures


def median(runs: list[dict]) -> dict:
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--iceberg", action="store_true", help="also Iceberg rewrite_data_files on Spark local[2]")
    parser.add_argument("--iceberg-child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.iceberg_child:
        source, warehouse, subjects = args.iceberg_child
        print(json.dumps(iceberg_child(source, warehouse, args.repeats, json.loads(subjects))))
        return
    core = pin_one_core()
    with tempfile.TemporaryDirectory(prefix="bench-prepare-") as scratch:
        root = Path(scratch)
        values = generate(root / "source", args.files, args.rows, planted_every=1)
        subjects = values["t.user_id"]
        source_bytes = _size(sorted((root / "source").rglob("*.parquet")))
        build_delta(root / "source", root / "delta")
        results: dict[str, dict[str, dict]] = {}
        for name, run, source in (("parquet", parquet_run, root / "source"), ("delta", delta_run, root / "delta")):
            runs = {"plain": [], "prepared": []}
            for _ in range(args.repeats):
                for mode, prepare in (("plain", ()), ("prepared", PREPARE)):
                    runs[mode].append(run(source, root / f"work-{name}-{mode}", subjects, prepare))
            results[name] = {mode: median(r) for mode, r in runs.items()}
        if args.iceberg:
            figures = run_child(__file__, "--repeats", str(args.repeats), "--iceberg-child", str(root / "source"),
                                str(root / "warehouse"), json.dumps(subjects))
            results["iceberg"] = {mode: median(r) for mode, r in figures.items()}
    rows = []
    for name, modes in results.items():
        plain, prepared = modes["plain"], modes["prepared"]
        rows.append([name, int(plain["files_rewritten"]), plain["seconds"], prepared["seconds"],
                     prepared["seconds"] / plain["seconds"], plain["bytes"] / 1e6, prepared["bytes"] / 1e6,
                     prepared["bytes"] / plain["bytes"], prepared["bloom_bytes"] / 1e6])
    print_table(f"verify.prepare write cost: {args.files} files x {args.rows} rows ({source_bytes / 1e6:.0f} MB), "
                f"Bloom filters on {', '.join(PREPARE)}; medians of {args.repeats}",
                ["engine", "files", "plain s", "prepared s", "time x", "plain MB", "prepared MB", "bytes x", "bloom MB"], rows)
    write_results("prepare_write", {"files": args.files, "rows": args.rows, "source_bytes": source_bytes,
                                    "repeats": args.repeats, "core": core, "results": results})


if __name__ == "__main__":
    main()
