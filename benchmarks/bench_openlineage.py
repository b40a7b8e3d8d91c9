"""OpenLineage ingest throughput: events per second on one core, against a bare JSON parse.

What is measured: ``ingest_openlineage_text(text, file="events.jsonl", namer=...)`` — the product's
ingest of one file's text (validation, naming, latest-event-wins, column edges, facts) — over
generated RunEvents written to a ``.jsonl`` file and read back. The generator's time and the file
read are not counted. The baselines, in the same run and on the same text: a bare parse of every
line with the standard library's ``json.loads`` and with ``orjson.loads`` (which the ingest uses
itself). Each figure is the median of ``--runs`` runs, on one pinned core.

The events (seeded, deterministic) are shaped like Spark's: RunEvents with 2-4 inputs named by path
in a ``file`` namespace with a ``symlinks`` facet naming the Hive table and a ``schema`` facet; one
output with schema, symlinks and a ``columnLineage`` facet in the 1-1-0 shape
(``inputFields[].transformations[]``) covering 20-50 output columns, each from 1-3 input fields,
typed DIRECT IDENTITY / TRANSFORMATION (some masked) / AGGREGATION or INDIRECT JOIN / FILTER /
GROUP_BY / WINDOW (~19 KiB per event).

Two streams:

* **realistic** (``--events``, default 100,000): every run emits START then COMPLETE with the
  same facets (as the Spark integration does), and each job runs ``--runs-per-job`` (10) times
  writing the same output — 100k events = 50k runs of 5,000 jobs. Latest-event-wins keeps the
  lineage of each job's last COMPLETE.
* **worst case** (``--worst-events``, default 20,000): every event is the COMPLETE of a distinct
  job, so every event's ~66 column edges survive and become ``ColumnEdge`` objects. Its memory
  grows with the edges (~6.6M edges at 100k events), hence the smaller default.

Targets: >= 20,000 events/s, and <= 3x the bare parse, for 100k events.

    python benchmarks/bench_openlineage.py                        # both streams, median of 3
    python benchmarks/bench_openlineage.py --worst-events 100000   # the worst case at full size
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import tempfile
import uuid
from typing import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median_of, peak_rss_mb, pin_one_core, print_table, write_results  # noqa: E402

from piitracer.ingest.openlineage.events import ingest_openlineage_text  # noqa: E402
from piitracer.model.naming import DatasetNamer  # noqa: E402

SEED = 11
PRODUCER = "https://github.com/OpenLineage/OpenLineage/tree/1.54.0/integration/spark"
SCHEMA_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
FACET_URL = "https://openlineage.io/spec/facets/{}.json#/$defs/{}"
TABLES = 5000
TRANSFORMS = [("DIRECT", "IDENTITY")] * 10 + [("DIRECT", "TRANSFORMATION")] * 5 + [("DIRECT", "AGGREGATION")] * 2 + \
             [("INDIRECT", "JOIN"), ("INDIRECT", "FILTER"), ("INDIRECT", "GROUP_BY"), ("INDIRECT", "WINDOW")]
T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)


def _table(i: int) -> tuple[str, str]:
    db = f"db{i % 40:02d}"
    return db, f"{db}.t{i:05d}"


def _dataset(i: int, columns: int) -> tuple[dict, list[str]]:
    """A dataset as Spark names it: by path, with the Hive table as a symlink, and its schema."""
    db, table = _table(i)
    names = [f"c{k:02d}" for k in range(columns)]
    return {
        "namespace": "file",
        "name": f"/data/lakehouse/{db}/t{i:05d}",
        "facets": {
            "schema": {"_producer": PRODUCER, "_schemaURL": FACET_URL.format("SchemaDatasetFacet-1-1-1", "SchemaDatasetFacet"),
                       "fields": [{"name": n, "type": "string" if k % 3 else "bigint"} for k, n in enumerate(names)]},
            "symlinks": {"_producer": PRODUCER, "_schemaURL": FACET_URL.format("SymlinksDatasetFacet-1-0-1", "SymlinksDatasetFacet"),
                         "identifiers": [{"namespace": "hive://metastore", "name": table, "type": "TABLE"}]},
        },
    }, names


def job_event(job: int, run: int, rng: random.Random) -> dict:
    """One COMPLETE RunEvent of ``job`` (the same structure on every run of the job)."""
    shape = random.Random(job * 7919 + SEED)  # the job's tables and lineage, fixed per job
    picked = shape.sample(range(TABLES), shape.randint(3, 5))
    inputs = [_dataset(i, 20 + i * 37 % 31) for i in picked[1:]]  # 20-50 columns per table
    output, out_columns = _dataset(picked[0], shape.randint(20, 50))
    fields = {}
    for column in out_columns:
        entries = []
        for dataset, columns in shape.sample(inputs, min(len(inputs), shape.randint(1, 3))):
            kind, subtype = shape.choice(TRANSFORMS)
            transformation = {"type": kind, "subtype": subtype, "description": "", "masking": False}
            if subtype == "TRANSFORMATION" and shape.random() < 0.2:
                transformation.update(description="sha2", masking=True)
            entries.append({"namespace": dataset["namespace"], "name": dataset["name"], "field": shape.choice(columns),
                            "transformations": [transformation]})
        fields[column] = {"inputFields": entries}
    output["facets"]["columnLineage"] = {
        "_producer": PRODUCER, "_schemaURL": FACET_URL.format("ColumnLineageDatasetFacet-1-1-0", "ColumnLineageDatasetFacet"),
        "fields": fields,
    }
    time = T0 + timedelta(days=run, seconds=job)
    return {
        "eventType": "COMPLETE",
        "eventTime": time.isoformat().replace("+00:00", "Z"),
        "producer": PRODUCER,
        "schemaURL": SCHEMA_URL,
        "run": {"runId": str(uuid.UUID(int=rng.getrandbits(128), version=4)), "facets": {}},
        "job": {"namespace": "spark", "name": f"etl.job_{job:06d}", "facets": {}},
        "inputs": [d for d, _ in inputs],
        "outputs": [output],
    }


def write_events(path: Path, count: int, runs_per_job: int, start_events: bool) -> None:
    """``count`` events, one JSON object per line; deterministic for a given count.

    With ``start_events`` every run emits a START and then a COMPLETE event with the same
    datasets and facets, as the Spark integration does.
    """
    rng = random.Random(SEED)
    per_run = 2 if start_events else 1
    runs = count // per_run
    jobs = max(1, runs // runs_per_job)
    with path.open("w", encoding="utf-8") as handle:
        for n in range(runs):
            event = job_event(n % jobs, n // jobs, rng)
            if start_events:
                start = dict(event, eventType="START", eventTime=event["eventTime"].replace("Z", "").rsplit(":", 1)[0] + ":00Z")
                handle.write(json.dumps(start, separators=(",", ":")) + "\n")
            handle.write(json.dumps(event, separators=(",", ":")) + "\n")


def bare_parse(loads: Callable[[str], object], text: str) -> int:
    return sum(1 for line in text.split("\n") if line and loads(line) is not None)


def measure(name: str, events: int, runs_per_job: int, start_events: bool, runs: int, namer: DatasetNamer) -> dict:
    """Both baselines and the ingest on one generated stream; prints a table, returns the figures."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.jsonl"
        write_events(path, events, runs_per_job, start_events)
        text = path.read_text(encoding="utf-8")
    events = text.count("\n")
    gc.collect()
    json_s, json_times, _ = median_of(runs, lambda: bare_parse(json.loads, text))
    orjson_s, orjson_times, _ = median_of(runs, lambda: bare_parse(orjson.loads, text))
    gc.collect()
    ingest_s, ingest_times, batch = median_of(runs, lambda: ingest_openlineage_text(text, file="events.jsonl", namer=namer))
    assert batch.units_read == events and not batch.problems, batch.problems[:3]
    rows = [
        ["bare json.loads per line", json_s, events / json_s, 1.0, orjson_s and json_s / orjson_s],
        ["bare orjson.loads per line", orjson_s, events / orjson_s, orjson_s / json_s, 1.0],
        ["piitracer ingest_openlineage_text", ingest_s, events / ingest_s, ingest_s / json_s, ingest_s / orjson_s],
    ]
    print_table(f"{name}: {events:,} events, {len(text) / 2**20:,.0f} MiB ({len(text) / events / 1024:.1f} KiB/event), "
                f"{'START+COMPLETE per run, ' if start_events else ''}{runs_per_job} run(s) per job; one core, median of {runs}",
                ["reader", "seconds", "events/s", "x json.loads", "x orjson.loads"], rows)
    print(f"batch: {len(batch.column_edges):,} column edges, {len(batch.dataset_edges):,} flows, "
          f"{len(batch.datasets):,} datasets; peak RSS so far {peak_rss_mb():,.0f} MB")
    return {
        "events": events, "runs_per_job": runs_per_job, "start_events": start_events, "bytes": len(text.encode()),
        "json_loads_s": json_s, "json_loads_runs_s": json_times, "orjson_loads_s": orjson_s, "orjson_loads_runs_s": orjson_times,
        "ingest_s": ingest_s, "ingest_runs_s": ingest_times, "ingest_events_per_s": events / ingest_s,
        "ratio_to_json_loads": ingest_s / json_s, "ratio_to_orjson_loads": ingest_s / orjson_s,
        "column_edges": len(batch.column_edges), "peak_rss_mb_so_far": peak_rss_mb(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000, help="events of the realistic stream")
    parser.add_argument("--runs-per-job", type=int, default=10, help="runs of each job in the realistic stream")
    parser.add_argument("--worst-events", type=int, default=20_000, help="events of the worst case (0: skip it)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each reader (median)")
    args = parser.parse_args()
    core = pin_one_core()
    namer = DatasetNamer(spark_catalogs=("spark_catalog",))
    figures = {"core": core, "realistic": measure("realistic stream", args.events, args.runs_per_job, True, args.runs, namer)}
    if args.worst_events:
        figures["worst_case"] = measure("worst case: every event a distinct job's COMPLETE", args.worst_events, 1, False, args.runs, namer)
    print()
    for name, f in figures.items():
        if name == "core":
            continue
        rate, ratio = f["ingest_events_per_s"], f["ratio_to_json_loads"]
        print(f"{name}: target >= 20,000 events/s: {rate:,.0f} -> {'holds' if rate >= 20_000 else 'FAILS'}; "
              f"target <= 3x bare parse: {ratio:.1f}x json.loads ({f['ratio_to_orjson_loads']:.1f}x orjson.loads) "
              f"-> {'holds' if ratio <= 3 else 'FAILS'}")
    figures["targets"] = {"events_per_s": 20_000, "ratio_to_bare": 3.0}
    write_results("openlineage", figures)


if __name__ == "__main__":
    main()
