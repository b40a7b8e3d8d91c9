"""Planning at lakehouse scale: synthetic lineage graphs of 1k, 10k and 100k datasets.

What is measured, per size (each size in its own fresh process, pinned to one core, so that the
peak memory is that size's alone):

* ``build_s``: ``LineageGraph.build(batch, catalog)`` once (the batch is generated beforehand; the
  generator's time is reported apart and not counted);
* ``plan_s``: ``build_plan`` of one subject from the first domain's ``payments.user_id`` on the
  loaded graph, median of ``--runs`` calls (the first call is reported apart: it warms sqlglot);
* ``peak_rss_mb``: ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` of the size's process at the
  end, i.e. peak resident memory including the interpreter and the imports (``base_rss_mb``);
* how each grows: ratios between consecutive sizes.

The target: one plan in under 1 s at 100k datasets once the graph is loaded. A plan should cost
what the subject reaches, not what the lakehouse holds; the reached datasets and the plan's steps
are printed beside the time so the growth can be read against them.

The shape (seeded, deterministic): the lakehouse is split into domains of ~1,000 datasets. Each
domain has three sources (one ``payments`` table with four identifiers, subject key ``user_id``,
two reference tables without PII), five layers of derived tables with 1-3 parents each (mostly the
previous layer, 2% from another domain), ~20 columns each. A derived table keeps an upstream
identifier half the time (IDENTITY, sometimes renamed; a SQL-known ``sha2`` TRANSFORMATION; an
AGGREGATION; rarely a masked transform with no expression) and fills its other columns from
upstream non-PII columns (IDENTITY / TRANSFORMATION / AGGREGATION); 1-2 INDIRECT edges (JOIN,
FILTER) per table. The catalog adds shallow and deep clones (2%), a weekly archive of each source
and a Kafka topic per domain fed by a job flow without column lineage. Formats: Iceberg MoR/CoW,
Delta, Parquet, views.

    python benchmarks/bench_planning.py                      # 1k, 10k, 100k
    python benchmarks/bench_planning.py --sizes 1000 10000   # smaller
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median_of, peak_rss_mb, pin_one_core, print_table, timed, write_results  # noqa: E402

from piitracer.graph.lineage_graph import LineageGraph  # noqa: E402
from piitracer.model.lineage import (  # noqa: E402
    ColumnEdge,
    ColumnRef,
    DatasetEdge,
    DatasetRelation,
    EdgeKind,
    EdgeSubtype,
    LineageBatch,
    Origin,
    OriginKind,
)
from piitracer.model.plan import PlanRequest, Subject  # noqa: E402
from piitracer.model.workspace import CatalogDataset, Policy  # noqa: E402
from piitracer.planner.build import build_plan  # noqa: E402

SEED = 7
DOMAIN_SIZE = 1000
LAYERS = 5
COLUMNS = 20
PII = {"user_id": "key", "pan": "pan", "phone": "phone", "email": "email"}
RENAMES = {"key": ["user_id", "customer_id", "cust"], "pan": ["pan", "card_pan"], "phone": ["phone"], "email": ["email"]}
FORMATS = [("iceberg", "merge-on-read")] * 8 + [("iceberg", "copy-on-write")] * 4 + [("delta", None)] * 5 + \
          [("parquet", None)] * 2 + [("view", None)]
RETENTION = {"snapshot_max_age": "5d", "maintenance_every": "1d"}


class Generator:
    """Builds the LineageBatch and the catalog of ``size`` datasets (see the module docstring)."""

    def __init__(self, size: int, seed: int = SEED) -> None:
        self.rng = random.Random(seed)
        self.size = size
        self.edges: list[ColumnEdge] = []
        self.flows: list[DatasetEdge] = []
        self.catalog: dict[str, CatalogDataset] = {}
        self.pii: dict[str, dict[str, str]] = {}  # dataset -> {column: pii kind}
        self.columns: dict[str, list[str]] = {}
        self.layers: list[list[list[str]]] = []  # domain -> layer -> datasets

    def run(self) -> tuple[LineageBatch, dict[str, CatalogDataset]]:
        domains = max(1, self.size // DOMAIN_SIZE)
        extras_per_domain = 2 + 1  # archive + kafka topic (+ clones, added below)
        derived_per_domain = (self.size // domains) - 3 - extras_per_domain
        derived_per_domain -= derived_per_domain // 50  # room for the 2% clones
        for d in range(domains):
            self.layers.append([self._sources(d)])
        for layer in range(1, LAYERS + 1):
            count = derived_per_domain // LAYERS + (derived_per_domain % LAYERS if layer == LAYERS else 0)
            for d in range(domains):
                self.layers[d].append([self._derived(d, layer, i) for i in range(count)])
        self._clones_archives_topics(domains)
        batch = LineageBatch(column_edges=tuple(self.edges), dataset_edges=tuple(self.flows))
        return batch, self.catalog

    def _sources(self, d: int) -> list[str]:
        pay = f"d{d:03d}_src.payments"
        cols = list(PII) + ["amount", "merchant_id", "dt"] + [f"attr_{i:02d}" for i in range(COLUMNS - 7)]
        self._table(pay, cols, ("iceberg", "merge-on-read"), identifiers=tuple(PII), subject_key="user_id")
        self.pii[pay] = dict(PII)
        refs = []
        for name in ("merchants", "calendar"):
            ref = f"d{d:03d}_src.{name}"
            self._table(ref, ["merchant_id" if name == "merchants" else "dt"] + [f"ref_{i:02d}" for i in range(COLUMNS - 1)],
                        ("iceberg", "copy-on-write"))
            self.pii[ref] = {}
            refs.append(ref)
        return [pay, *refs]

    def _table(self, dataset: str, cols: list[str], fmt, **kw) -> None:
        self.columns[dataset] = cols
        form, mode = fmt
        extra = {"location": f"warehouse/{dataset.replace('.', '/')}"} if form != "view" else {}
        if form == "iceberg":
            extra.update(write_mode=mode, retention=RETENTION)
        self.catalog[dataset] = CatalogDataset(format=form, columns=tuple(cols), **extra, **kw)

    def _parents(self, d: int, layer: int) -> list[str]:
        rng, picked = self.rng, []
        for _ in range(rng.choice((1, 2, 2, 3))):
            domain = d if rng.random() > 0.02 else rng.randrange(len(self.layers))
            from_layer = layer - 1 if rng.random() < 0.7 else rng.randrange(layer)
            candidates = self.layers[domain][from_layer]
            if candidates:
                picked.append(rng.choice(candidates))
        return sorted(set(picked)) or [self.layers[d][0][0]]

    def _derived(self, d: int, layer: int, i: int) -> str:
        rng = self.rng
        dataset = f"d{d:03d}_l{layer}.t{i:05d}"
        origin = Origin(kind=OriginKind.SQL, file=f"jobs/d{d:03d}_l{layer}.sql", line=i + 1)
        parents = self._parents(d, layer)
        cols: list[str] = []
        pii: dict[str, str] = {}

        def add(source: str, column: str, target: str, subtype: EdgeSubtype, **kw) -> None:
            cols.append(target)
            self.edges.append(ColumnEdge(source=ColumnRef(dataset=source, column=column), target_dataset=dataset,
                                         target_column=target, kind=EdgeKind.DIRECT, subtype=subtype, origin=origin, **kw))

        for parent in parents:  # identifiers carried (or not) from each parent
            for column, kind in sorted(self.pii[parent].items()):
                if rng.random() >= 0.5 or any(k == kind for k in pii.values()):
                    continue
                roll = rng.random()
                if roll < 0.65:
                    target = rng.choice(RENAMES[kind])
                    if target in cols:
                        continue
                    add(parent, column, target, EdgeSubtype.IDENTITY)
                    pii[target] = kind
                elif roll < 0.85:
                    add(parent, column, f"{kind}_hash", EdgeSubtype.TRANSFORMATION, expression=f"SHA2(CAST({column} AS STRING), 256)")
                elif roll < 0.97:
                    add(parent, column, f"{kind}_count", EdgeSubtype.AGGREGATION)
                else:
                    add(parent, column, f"{kind}_token", EdgeSubtype.TRANSFORMATION, masking=True, description="tokenised")
        n = 0
        while len(cols) < COLUMNS:  # other columns from upstream non-PII columns
            parent = rng.choice(parents)
            plain = [c for c in self.columns[parent] if c not in self.pii[parent]]
            column = rng.choice(plain)
            target, n = f"m{n:02d}", n + 1
            roll = rng.random()
            if roll < 0.6:
                add(parent, column, target, EdgeSubtype.IDENTITY)
            elif roll < 0.85:
                add(parent, column, target, EdgeSubtype.TRANSFORMATION, expression=f"ROUND({column}, 2)")
            else:
                add(parent, column, target, EdgeSubtype.AGGREGATION)
        for subtype in rng.sample((EdgeSubtype.JOIN, EdgeSubtype.FILTER), rng.choice((1, 2))):
            parent = rng.choice(parents)
            keys = sorted(self.pii[parent]) or self.columns[parent][:1]
            self.edges.append(ColumnEdge(source=ColumnRef(dataset=parent, column=rng.choice(keys)), target_dataset=dataset,
                                         target_column=None, kind=EdgeKind.INDIRECT, subtype=subtype, origin=origin))
        self._table(dataset, cols, rng.choice(FORMATS))
        self.pii[dataset] = pii
        return dataset

    def _clones_archives_topics(self, domains: int) -> None:
        rng = self.rng
        derived = sorted(d for d in self.catalog if "_l" in d and self.catalog[d].format.value != "view")
        for n, source in enumerate(sorted(rng.sample(derived, len(derived) // 50))):
            mode = "shallow" if n % 2 else "deep"
            fmt = self.catalog[source].format.value
            extra = {"write_mode": self.catalog[source].write_mode} if fmt == "iceberg" else {}
            self.catalog[f"dev.clone_{n:05d}"] = CatalogDataset(
                format=fmt, location=f"dev/clone_{n:05d}", clone_of={"dataset": source, "mode": mode}, **extra)
        for d in range(domains):
            pay = f"d{d:03d}_src.payments"
            self.catalog[f"archive.d{d:03d}_payments_weekly"] = CatalogDataset(
                format="archive", location=f"archive/d{d:03d}", archive_of={"dataset": pay, "schedule": "7d", "retention": "90d"})
            topic = f"kafka://broker:9092/d{d:03d}.payments_cdc"
            self.catalog[topic] = CatalogDataset(format="external", owner="streaming-team")
            self.flows.append(DatasetEdge(source=pay, target=topic, relation=DatasetRelation.FLOW,
                                          origin=Origin(kind=OriginKind.OPENLINEAGE, file="events/cdc.jsonl", line=d + 1)))


def measure(size: int, runs: int) -> dict[str, object]:
    """One size, in this process: generate, build, plan (see the module docstring)."""
    core = pin_one_core()
    base_rss = peak_rss_mb()
    gen_s, (batch, catalog) = timed(lambda: Generator(size).run())
    build_s, graph = timed(lambda: LineageGraph.build(batch, catalog))
    stats = {"datasets": len(graph.datasets()), "column_edges": len(batch.column_edges)}
    source = ColumnRef(dataset="d000_src.payments", column="user_id")
    request = PlanRequest(sources=(source,), subjects=(
        Subject(value="8841302", request_id="dsr-1", received_at=datetime(2026, 11, 20, 9, tzinfo=timezone.utc)),))
    first_s, plan = timed(lambda: build_plan(graph, catalog, Policy(), request, {}, {"d000_src.payments.user_id": "bigint"}))
    plan_s, times, plan = median_of(runs, lambda: build_plan(graph, catalog, Policy(), request, {}, {"d000_src.payments.user_id": "bigint"}))
    statuses: dict[str, int] = {}
    for decision in plan.datasets:
        statuses[decision.status.value] = statuses.get(decision.status.value, 0) + 1
    return {
        "size": size, "core": core, **stats, "generate_s": gen_s, "build_s": build_s,
        "first_plan_s": first_s, "plan_s": plan_s, "plan_runs_s": times,
        "reached_datasets": len(plan.datasets), "steps": len(plan.steps), "statuses": statuses,
        "base_rss_mb": base_rss, "peak_rss_mb": peak_rss_mb(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--runs", type=int, default=5, help="plans per size (median)")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: measure one size here
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.runs)))
        return
    results = []
    for size in args.sizes:  # a fresh process per size: its peak RSS is its own
        out = subprocess.run([sys.executable, __file__, "--one", str(size), "--runs", str(args.runs)],
                             check=True, capture_output=True, text=True).stdout
        results.append(json.loads(out.strip().splitlines()[-1]))
        r = results[-1]
        print(f"{size:>7,} datasets: build {r['build_s']:.2f} s, plan {r['plan_s']:.3f} s", flush=True)
    rows = [[r["size"], r["column_edges"], r["build_s"], r["plan_s"], r["first_plan_s"], r["reached_datasets"],
             r["steps"], r["peak_rss_mb"]] for r in results]
    print_table("Planning one subject (plan: median; build: once; peak RSS: ru_maxrss of the size's process)",
                ["datasets", "column edges", "build s", "plan s", "1st plan s", "reached", "steps", "peak RSS MB"], rows)
    growth = []
    for a, b in zip(results, results[1:]):
        growth.append({"from": a["size"], "to": b["size"], "build": b["build_s"] / a["build_s"],
                       "plan": b["plan_s"] / a["plan_s"], "reached": b["reached_datasets"] / a["reached_datasets"],
                       "peak_rss": b["peak_rss_mb"] / a["peak_rss_mb"]})
    print_table("Growth between sizes (ratios)", ["from -> to", "build", "plan", "reached", "peak RSS"],
                [[f"{g['from']:,} -> {g['to']:,}", g["build"], g["plan"], g["reached"], g["peak_rss"]] for g in growth])
    largest = results[-1]
    holds = largest["plan_s"] < 1.0
    print(f"\ntarget: one plan < 1 s at {largest['size']:,} datasets: {largest['plan_s']:.3f} s -> {'holds' if holds else 'FAILS'}")
    write_results("planning", {"sizes": results, "growth": growth, "target_plan_s": 1.0, "target_holds": holds,
                               "memory_measure": "resource.getrusage ru_maxrss (peak RSS of the size's own process)"})


if __name__ == "__main__":
    main()
