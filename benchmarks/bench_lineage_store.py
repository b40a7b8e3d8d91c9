"""A cold ``plan`` through the persistent lineage store vs today's path (the whole graph built in
every process), on the synthetic lakehouse of ``bench_planning.py`` (100k datasets by default).

Three fresh processes, one run:

* ``whole``: what every command did before the store — ``LineageGraph.build`` of the whole
  lineage, then one plan. The lineage is generated in memory beforehand and not counted (a real
  command would also parse it: the figure is a lower bound of the old path).
* ``setup``: writes a workspace folder — ``piitracer.yaml`` with the 100k-dataset catalog (as
  JSON, which is YAML too and is read by a JSON parser), an empty folder per location — and
  its lineage store, one unit per domain (what ``update_store`` would hold after ingesting one
  lineage file per domain). Its time is the store's one-off build.
* ``cold``: a new Python process that plans one subject from ``d000_src.payments.user_id``:
  ``load_workspace`` + ``lineage_graph_for(refresh=False)`` (the closure in SQLite, then the graph
  of the reached part) + ``plan_deletion``. Timed from the interpreter's start (imports
  included) and by phase; peak memory is the process's ``ru_maxrss``.

``refresh=False`` because the synthetic store has no lineage files behind it; on a real workspace
a refresh first hashes every lineage file (SHA-256, ~1 GB/s on this machine) and parses only what
changed — the ``hash_s`` column shows that cost for a lineage of the same size on disk (the
store's own rows, as a stand-in of the same byte count).

The cold process runs twice: first with workspace files the store has not seen (the catalog is
validated and the result kept in the store), then again with them unchanged (the validated
catalog is served from the store). ``--baseline REV`` also runs the cold process of the code at
git revision ``REV`` (its own ``piitracer`` and this benchmark, exported with ``git archive``) on
the same workspace and store, before the other two: old and new measured in one run.

    python benchmarks/bench_lineage_store.py                 # 100k datasets
    python benchmarks/bench_lineage_store.py --size 10000
    python benchmarks/bench_lineage_store.py --no-whole --baseline 9051fd1   # old vs new cold plans only
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from enum import Enum
from pathlib import Path

START = time.perf_counter()
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import peak_rss_mb, pin_one_core, print_table, timed, write_results  # noqa: E402

SOURCE = "d000_src.payments.user_id"
SUBJECT_TIME = datetime(2026, 11, 20, 9, tzinfo=timezone.utc)


def whole(size: int) -> dict[str, object]:
    """Today's path: build the whole graph, then plan."""
    from bench_planning import Generator

    from piitracer.graph.lineage_graph import LineageGraph
    from piitracer.model.lineage import ColumnRef
    from piitracer.model.plan import PlanRequest, Subject
    from piitracer.model.workspace import Policy
    from piitracer.planner.build import build_plan

    pin_one_core()
    batch, catalog = Generator(size).run()
    build_s, graph = timed(lambda: LineageGraph.build(batch, catalog))
    request = PlanRequest(sources=(ColumnRef(dataset="d000_src.payments", column="user_id"),),
                          subjects=(Subject(value="8841302", request_id="r", received_at=SUBJECT_TIME),))
    plan_s, plan = timed(lambda: build_plan(graph, catalog, Policy(), request, {}, {SOURCE: "bigint"}))
    return {"build_s": build_s, "plan_s": plan_s, "total_s": build_s + plan_s, "steps": len(plan.steps),
            "column_edges": len(batch.column_edges), "plan_sha256": hashlib.sha256(plan.to_json().encode()).hexdigest(),
            "peak_rss_mb": peak_rss_mb()}


def setup(size: int, folder: Path) -> dict[str, object]:
    """The workspace file and its store, one unit per domain."""
    from bench_planning import Generator

    from piitracer.ingest.lineage_store import fingerprint, open_store
    from piitracer.model.lineage import LineageBatch

    batch, catalog = Generator(size).run()
    entries = {d: _plain(e.model_dump(exclude_defaults=True)) for d, e in sorted(catalog.items())}
    entries["d000_src.payments"]["column_types"] = {"user_id": "bigint"}
    # JSON is YAML too: a catalog this size is generated, not typed (see load_workspace).
    write_s, _ = timed(lambda: (folder / "piitracer.yaml").write_text(json.dumps({"catalog": entries}, sort_keys=True)))
    for entry in catalog.values():  # the tables exist (else every dataset is a warning)
        if entry.location and "://" not in entry.location:
            (folder / entry.location).mkdir(parents=True, exist_ok=True)

    def domain(dataset: str) -> str:
        return dataset.split("_", 1)[0] if dataset.startswith("d") else "other"

    parts: dict[str, dict[str, list]] = defaultdict(lambda: {"c": [], "d": [], "f": []})
    for edge in batch.column_edges:
        parts[domain(edge.target_dataset)]["c"].append(edge)
    for edge in batch.dataset_edges:
        parts[domain(edge.target)]["d"].append(edge)
    for facts in batch.datasets:
        parts[domain(facts.dataset)]["f"].append(facts)

    def build() -> None:
        store = open_store(folder)
        for position, (name, part) in enumerate(sorted(parts.items())):
            unit = LineageBatch(column_edges=tuple(part["c"]), dataset_edges=tuple(part["d"]), datasets=tuple(part["f"]))
            store.put(f"synthetic/{name}", position, fingerprint(name), unit)
        store.close()

    store_s, _ = timed(build)
    store_file = folder / ".piitracer" / "lineage" / "store.sqlite"
    return {"yaml_write_s": write_s, "store_build_s": store_s, "units": len(parts), "column_edges": len(batch.column_edges),
            "store_mb": store_file.stat().st_size / 1e6, "yaml_mb": (folder / "piitracer.yaml").stat().st_size / 1e6}


def _plain(value):
    """A model dump as the workspace file writes it (durations as '5d', enums as their values)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, timedelta):
        minutes = int(value.total_seconds() // 60)
        return f"{minutes // 1440}d" if minutes % 1440 == 0 else f"{minutes // 60}h" if minutes % 60 == 0 else f"{minutes}m"
    if isinstance(value, Enum):
        return value.value
    return value


def cold(folder: Path) -> dict[str, object]:
    """A new process: load the workspace, the reached part of the graph, plan."""
    imported = time.perf_counter()
    # What the CLI does first (piitracer/cli/__init__.py): a process that runs one command.
    from piitracer.model.gc_pause import tune_collector_for_a_command

    tune_collector_for_a_command()
    import piitracer
    from piitracer.api import plan_deletion
    from piitracer.model.plan import Subject

    import_s = time.perf_counter() - imported
    load_s, workspace = timed(lambda: piitracer.load_workspace(folder))
    graph_s, graph = timed(lambda: piitracer.lineage_graph_for(workspace, [SOURCE], refresh=False))
    subject = Subject(value="8841302", request_id="r", received_at=SUBJECT_TIME)
    plan_s, plan = timed(lambda: plan_deletion(workspace, graph, [SOURCE], [subject], table_states={}))
    store_file = folder / ".piitracer" / "lineage" / "store.sqlite"
    hash_s, _ = timed(lambda: hashlib.file_digest(store_file.open("rb"), "sha256"))
    return {"since_start_s": time.perf_counter() - START, "import_s": import_s, "load_workspace_s": load_s,
            "graph_s": graph_s, "plan_s": plan_s, "hash_s": hash_s, "steps": len(plan.steps),
            "graph_column_edges": len(graph.column_edges()),
            "plan_sha256": hashlib.sha256(plan.to_json().encode()).hexdigest(), "peak_rss_mb": peak_rss_mb()}


def _child(*args: str, script: str = __file__) -> dict[str, object]:
    started, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, script, *args], check=True, capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    result["process_wall_s"] = time.perf_counter() - started
    # CPU seconds of the child (user + system): on a shared, loaded machine the wall time grows
    # with the other processes' load, the CPU time much less.
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result["process_cpu_s"] = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--no-whole", action="store_true", help="skip the whole-graph process (~2 min, ~6 GB at 100k)")
    parser.add_argument("--baseline", metavar="REV", help="also run the cold plan of the code at this git revision")
    parser.add_argument("--phase", choices=["whole", "setup", "cold"], help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase == "whole":
        print(json.dumps(whole(args.size)))
        return
    if args.phase == "setup":
        print(json.dumps(setup(args.size, args.folder)))
        return
    if args.phase == "cold":
        print(json.dumps(cold(args.folder)))
        return
    rows, runs = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "ws"
        folder.mkdir()
        if not args.no_whole:
            old = runs["whole"] = _child("--phase", "whole", "--size", str(args.size))
            print(f"whole graph: build {old['build_s']:.1f} s + plan {old['plan_s']:.2f} s, {old['peak_rss_mb']:.0f} MB", flush=True)
            rows.append(["whole graph built in the process", old["process_wall_s"], old["process_cpu_s"], "-", old["build_s"],
                         old["plan_s"], old["peak_rss_mb"], old["steps"]])
        built = _child("--phase", "setup", "--size", str(args.size), "--folder", str(folder))
        print(f"store built in {built['store_build_s']:.1f} s ({built['store_mb']:.0f} MB)", flush=True)
        cold_runs = [("cold, files new to the store (validated, then kept)", "miss"),
                     ("cold, files unchanged (validated catalog from the store)", "hit")]
        if args.baseline:
            code = Path(tmp) / "baseline"
            code.mkdir()
            archive = subprocess.run(["git", "archive", args.baseline, "piitracer", "benchmarks"],  # the repository here
                                     check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(code)], input=archive, check=True)
            # Twice: a baseline that keeps the validated workspace too (since 975dcea) is served
            # from the store the second time, so its best path is compared with the new one.
            cold_runs[:0] = [(f"cold, the code of {args.baseline}", "baseline"),
                             (f"cold, the code of {args.baseline}, again", "baseline_again")]
        for label, name in cold_runs:
            if name.startswith("baseline"):
                result = _child("--phase", "cold", "--folder", str(folder), script=str(code / "benchmarks" / Path(__file__).name))
            else:
                served = _served_from_store(folder)
                result = _child("--phase", "cold", "--folder", str(folder))
                result["served_from_store"] = served
                if served != (name == "hit"):
                    raise SystemExit(f"{name}: the store {'served' if served else 'did not serve'} the workspace")
            runs[name] = result
            print(f"{label}: {result['process_wall_s']:.1f} s ({result['process_cpu_s']:.1f} s CPU), "
                  f"{result['peak_rss_mb']:.0f} MB", flush=True)
            rows.append([label, result["process_wall_s"], result["process_cpu_s"], result["load_workspace_s"], result["graph_s"],
                         result["plan_s"], result["peak_rss_mb"], result["steps"]])
    same = len({r["plan_sha256"] for r in runs.values()}) == 1
    print_table(f"Cold plan of one subject, {args.size:,} datasets ({built['column_edges']:,} column edges)",
                ["path", "process wall s", "process CPU s", "load workspace s", "graph s", "plan s", "peak RSS MB", "steps"], rows)
    new = runs["hit"]
    holds = new["process_wall_s"] < 5 and new["peak_rss_mb"] < 1024
    print(f"\nthe same plan every way: {same}; target < 5 s and < 1 GB (files unchanged): {'holds' if holds else 'FAILS'}")
    write_results("lineage_store", {"size": args.size, **runs, "setup": built, "same_plan": same, "target_holds": holds,
                                    "baseline_revision": args.baseline})


def _served_from_store(folder: Path) -> bool:
    """Whether a load of ``folder`` now would take the validated workspace from the store."""
    from piitracer.ingest.workspace.cache import WorkspaceCache

    cache = WorkspaceCache.open(folder)
    return cache is not None and cache.workspace() is not None


if __name__ == "__main__":
    main()
