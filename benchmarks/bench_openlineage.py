"""OpenLineage ingest throughput: events per second on one core, against a bare ``json.loads``.

What is measured: ``ingest_openlineage_text(text, file="events.jsonl", namer=...)`` — the product's
ingest of one file's text (validation, naming, latest-event-wins, column edges, facts) — over
``--events`` generated RunEvents written to a ``.jsonl`` file and read back. The generator's time
and the file read are not counted. The baseline, in the same run and on the same text: a bare
``json.loads`` of every line, i.e. the least any JSON-lines reader must do. Each figure is the
median of ``--runs`` runs, on one pinned core.

The events (seeded, deterministic) are shaped like Spark's: COMPLETE RunEvents, 2-4 inputs named by
path in a ``file`` namespace with a ``symlinks`` facet naming the Hive table and a ``schema``
facet; one output with schema, symlinks and a ``columnLineage`` facet in the 1-1-0 shape
(``inputFields[].transformations[]``) covering 20-50 output columns, each from 1-3 input fields,
typed DIRECT IDENTITY / TRANSFORMATION (some masked) / AGGREGATION or INDIRECT JOIN / FILTER /
GROUP_BY / WINDOW. Every ``--runs-per-job`` events come from the same job writing the same output
(a daily job re-emitting its lineage); the default, 1, makes every event a distinct job so every
event's lineage is built (latest-event-wins discards nothing): the heavier case.

Targets: >= 20,000 events/s, and <= 3x the bare parse, for 100k events. The default is 10k events:
the rate is flat in the event count (the ingest is linear), and one ingest call of 100k such events
holds every event and edge in memory (about 0.4 MB per event measured: ~40 GB) and takes minutes
per run at the measured rate, which does not fit the 10-minute budget of ``run_all.sh``.

    python benchmarks/bench_openlineage.py                   # 10k events, median of 3
    python benchmarks/bench_openlineage.py --events 100000   # the full size (needs the memory)
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import tempfile
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median_of, peak_rss_mb, pin_one_core, print_table, write_results  # noqa: E402

from piitracer.ingest.openlineage import ingest_openlineage_text  # noqa: E402
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


def write_events(path: Path, count: int, runs_per_job: int) -> None:
    """``count`` events, one JSON object per line; deterministic for a given count."""
    rng = random.Random(SEED)
    jobs = max(1, count // runs_per_job)
    with path.open("w", encoding="utf-8") as handle:
        for n in range(count):
            handle.write(json.dumps(job_event(n % jobs, n // jobs, rng), separators=(",", ":")) + "\n")


def bare_parse(text: str) -> int:
    return sum(1 for line in text.split("\n") if line and json.loads(line) is not None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3, help="runs of each side (median)")
    parser.add_argument("--runs-per-job", type=int, default=1, help="events per job (1: every event is its own job)")
    args = parser.parse_args()
    core = pin_one_core()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.jsonl"
        write_events(path, args.events, args.runs_per_job)
        text = path.read_text(encoding="utf-8")
    namer = DatasetNamer(spark_catalogs=("spark_catalog",))
    gc.collect()
    bare_s, bare_times, _ = median_of(args.runs, lambda: bare_parse(text))
    ingest_s, ingest_times, batch = median_of(args.runs, lambda: ingest_openlineage_text(text, file="events.jsonl", namer=namer))
    assert batch.units_read == args.events and not batch.problems, batch.problems[:3]
    rate, ratio = args.events / ingest_s, ingest_s / bare_s
    rows = [
        ["bare json.loads per line", bare_s, args.events / bare_s, 1.0],
        ["piitracer ingest_openlineage_text", ingest_s, rate, ratio],
    ]
    print_table(f"{args.events:,} events, {len(text) / 2**20:,.0f} MiB ({len(text) / args.events / 1024:.1f} KiB/event), "
                f"{args.runs_per_job} run(s) per job, one core, median of {args.runs}",
                ["reader", "seconds", "events/s", "x bare parse"], rows)
    print(f"\nbatch: {len(batch.column_edges):,} column edges, {len(batch.dataset_edges):,} flows, "
          f"{len(batch.datasets):,} datasets; peak RSS {peak_rss_mb():,.0f} MB")
    print(f"target >= 20,000 events/s: {rate:,.0f} -> {'holds' if rate >= 20_000 else 'FAILS'}")
    print(f"target <= 3x bare parse: {ratio:.1f}x -> {'holds' if ratio <= 3 else 'FAILS'}")
    write_results("openlineage", {
        "events": args.events, "runs_per_job": args.runs_per_job, "bytes": len(text.encode()), "core": core,
        "bare_parse_s": bare_s, "bare_parse_runs_s": bare_times, "bare_events_per_s": args.events / bare_s,
        "ingest_s": ingest_s, "ingest_runs_s": ingest_times, "ingest_events_per_s": rate, "ratio_to_bare": ratio,
        "column_edges": len(batch.column_edges), "peak_rss_mb": peak_rss_mb(),
        "targets": {"events_per_s": 20_000, "ratio_to_bare": 3.0},
        "holds": {"events_per_s": rate >= 20_000, "ratio_to_bare": ratio <= 3},
    })


if __name__ == "__main__":
    main()
