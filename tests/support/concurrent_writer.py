"""Another job writing to the lakehouse while piitracer erases (run as its own process by
tests/integration/test_concurrent_writer.py): its own SparkSession on the same Hadoop-catalog warehouse for
Iceberg, delta-rs for Delta.

It follows the executor through pause points (``piitracer.storage.failpoints``): the executor
waits at ``<control>/<point>.paused`` until ``<point>.go`` exists, so each write lands at an exact
moment of the run, never by sleep-based luck:

1. executor paused after the Delta source's delete committed: append rows to the Delta table;
2. executor paused after the Iceberg source's delete committed: append rows to the Iceberg table
   (committed), and write a second batch of data files under the table's data folder without
   committing them: a writer in flight while the executor expires snapshots;
3. once ``<control>/commit-staged.go`` exists (the executor has finished): commit the staged files
   (``add_files`` registers them in place), as the in-flight writer would.

Each batch holds other users' rows and late rows of a subject (a new PAN of theirs too).

    python concurrent_writer.py WAREHOUSE NAMESPACE DELTA_LOCATION CONTROL_DIR BATCHES_JSON
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

SCHEMA = "user_id BIGINT, pan STRING, amount DOUBLE, dt STRING"


def wait_for(path: Path, limit: float = 900) -> None:
    deadline = time.monotonic() + limit
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {path.name}")
        time.sleep(0.05)


def main(warehouse: str, ns: str, delta_location: str, control: str, batches_file: str) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake
    from spark_lakehouse import spark_for

    folder = Path(control)
    batches = json.loads(Path(batches_file).read_text())
    spark = spark_for(Path(warehouse))  # started before the executor reaches the pause points
    (folder / "writer.ready").touch()

    wait_for(folder / "executor.after_commit@s003.paused")
    rows = batches["delta"]
    write_deltalake(delta_location, pa.Table.from_pylist(
        [dict(zip(("user_id", "pan", "amount", "dt"), r)) for r in rows],
        pa.schema([("user_id", pa.int64()), ("pan", pa.string()), ("amount", pa.float64()), ("dt", pa.string())])), mode="append")
    (folder / "executor.after_commit@s003.go").touch()

    wait_for(folder / "executor.after_commit@s013.paused")
    table = f"lake.{ns}.src"
    spark.createDataFrame([tuple(r) for r in batches["iceberg"]], SCHEMA).writeTo(table).append()
    staged = Path(warehouse) / ns / "src" / "data" / "inflight-batch"
    # Laid out as the table's partitions (dt=...), as an Iceberg writer of this table would.
    spark.createDataFrame([tuple(r) for r in batches["staged"]], SCHEMA).coalesce(1).write.partitionBy("dt").parquet(str(staged))
    for marker in staged.rglob("_*"):  # Spark's _SUCCESS: not a data file
        marker.unlink()
    (folder / "staged.done").touch()
    (folder / "executor.after_commit@s013.go").touch()

    wait_for(folder / "commit-staged.go")
    spark.sql(f"REFRESH TABLE {table}")  # the executor committed since this session last read it
    spark.sql(f"CALL lake.system.add_files(table => '{ns}.src', source_table => '`parquet`.`{staged}`')")
    (folder / "writer.done").touch()
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:6])
