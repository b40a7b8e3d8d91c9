"""The proof's cost follows files, not history (issue 43): the verifier against the bare pyarrow read
of the same Parquet files and against the code before (``--baseline REV``: that revision's
``piitracer``, exported with ``git archive`` and run in a child process), side by side in one run.

Every figure is measured in fresh child processes, in turn (bare read, new code, old code), median
of ``--repeats``, with wall time and CPU seconds (``RUSAGE_CHILDREN``: every thread; the machine is
shared). "Warm" runs ``verify_datasets`` again in a process that already ran it once (imports,
page cache); "process" is a whole ``piitracer verify --no-record`` from the interpreter's start,
against a whole process reading the same files. The findings of old and new code must be equal
(the script fails otherwise); only the chunk counters' bytes-read may differ.

Subcommands:

- ``demo --demo DIR [--demo DIR...]``: a lakehouse ``piitracer demo --rows N --no-close`` built
  (after execute, request open): the plan's datasets, the value sets and step states of its journal.
- ``commits --demo DIR --commits 40``: the same, then 40 one-row commits to ``prod.payments``
  through the demo's Spark settings (Spark's Hadoop catalog), then the same again. **Changes the
  demo lakehouse** (its table gains the snapshots; say ``--commits 0`` to only measure).
- ``snapshots --keep DIR``: one Iceberg table (pyiceberg, a sql catalog) of 120 data files (ten
  120,000-row commits) and 10, 50 or 200 snapshots (the rest one-row commits): the same bytes,
  history growing.
- ``probes --keep DIR``: the byte search alone over the same Parquet files (pyarrow's defaults, and
  with Bloom filters and the page index), 10, 1,000 and 10,000 searched values per identifier.
- ``floor --keep DIR``: on the 10- and 200-snapshot tables ``snapshots`` wrote, what one commit's
  four files cost the verifier (its scan of each file by kind, measured by timing the scans one
  verification runs, then the history read) beside the cheapest pyarrow reads of the same one-row
  data files: the floor under "200 snapshots < 2x of 10".
- ``tables --keep DIR --tables 100 500 2000 --snapshots 50``: many small tables (each snapshot one
  200-row file), cloned from a pyiceberg-written template (paths rewritten in the metadata.json,
  manifest lists and manifests; data files hard-linked); the subject's row in every
  ``--subject-every``-th table. A source table and every other one derived from it by lineage
  (``INSERT INTO t_i SELECT * FROM t_0``): one plan erasing the subject from all of them.

    .venv/bin/python benchmarks/bench_verify_history.py demo --demo /tmp/demo1m --baseline 9e2eb06
    .venv/bin/python benchmarks/bench_verify_history.py snapshots --keep /tmp/hist --baseline 9e2eb06
    .venv/bin/python benchmarks/bench_verify_history.py tables --keep /tmp/many --tables 100 500 2000 --baseline 9e2eb06
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
from _common import environment, print_table, write_results  # noqa: E402

SUBJECT = 7_000_000_001


# ---- the child: one code version, one measurement ------------------------------------------------

def _verifier(job: dict):
    """(run, workspace, store): ``run()`` verifies the job's plan once and returns its datasets'
    findings; the code is whichever piitracer the process imports (``job['code']``: must be it)."""
    import piitracer

    if job.get("code") and not piitracer.__file__.startswith(job["code"]):
        raise SystemExit(f"piitracer imported from {piitracer.__file__}, not from {job['code']}")
    from piitracer.model.plan import DeletionPlan
    from piitracer.storage.locations import Location
    from piitracer.verify import verify_datasets

    try:
        from piitracer.api.wiring import workspace_store
    except ImportError:
        from piitracer.api._wiring import workspace_store
    workspace = piitracer.load_workspace(job["workspace"])
    plan = DeletionPlan.model_validate_json(job["plan"])
    locations = {name: Location.parse(entry.location, base=workspace.root)
                 for name, entry in workspace.config.catalog.items() if entry.location}
    store = workspace_store(workspace)

    def run():
        report = verify_datasets(plan, workspace.config.catalog, locations, job["values"], job["states"], store=store)
        return [(d.dataset, d.state.value, d.snapshots_checked, [(f.file, f.where, f.value_set, f.kind) for f in d.findings],
                 list(d.notes)) for d in report.datasets]
    return run, workspace, store


def child_main(argv: list[str]) -> None:
    """``_child verify|bare|process`` with the job on stdin (JSON: workspace, plan, values, states,
    files); prints one JSON line of figures. Uses only what every version of piitracer has."""
    what, repeats = argv[0], int(argv[1])
    job = json.loads(sys.stdin.read())
    started = time.perf_counter()
    if what == "bare":
        import pyarrow.parquet as pq

        def run():
            for path in job["files"]:
                pq.read_table(path)
            return None
    elif what == "scan":  # the byte search alone (verify.decoders.scan_location), with the catalog's column scope
        from piitracer.storage.locations import Location
        from piitracer.storage.store import Store
        from piitracer.verify.decoders import scan_location
        from piitracer.verify.scope import ColumnScope, ScopedIndex

        root, store = Location.parse(job["root"]), Store()
        relative = [str(Path(f).relative_to(job["root"])) for f in job["files"]]
        scope = ColumnScope(tuple((column, tuple(sets)) for column, sets in job["scope"]))

        def run():
            scoped = ScopedIndex.build(job["values"], sorted(job["values"]), scope)
            found = scan_location(root, scoped.index, store, relative, scoped)
            return [[sorted({(h.file, h.where, h.value_set) for h in found.hits})], found.chunks.by_method]
    else:
        run = _verifier(job)[0]
    first = time.perf_counter() - started
    runs, result = [], None
    for number in range(repeats + 1):
        usage = resource.getrusage(resource.RUSAGE_SELF)
        wall = time.perf_counter()
        result = run()
        after = resource.getrusage(resource.RUSAGE_SELF)
        runs.append((time.perf_counter() - wall, after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime))
        if number == 0:
            first += runs[0][0]
    warm = runs[1:]
    print(json.dumps({"first_s": first, "warm_wall_s": statistics.median(w for w, _ in warm),
                      "warm_cpu_s": statistics.median(c for _, c in warm), "runs": warm, "result": result}))


def in_child(code: Path | None, what: str, job: dict, repeats: int) -> dict:
    """Run :func:`child_main` under ``code`` (a piitracer tree; None: this checkout)."""
    env = dict(os.environ, PYTHONPATH=str(code or ROOT))
    job = dict(job, code=str(code or ROOT))
    out = subprocess.run([sys.executable, str(HERE), "_child", what, str(repeats)], input=json.dumps(job),
                         capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
    if out.returncode:
        raise SystemExit(f"child ({code or 'new'}, {what}) failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def whole_process(code: Path | None, argv: list[str], env_extra: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) of one whole process from the interpreter's start (CPU of the child: RUSAGE_CHILDREN)."""
    env = dict(os.environ, PYTHONPATH=str(code or ROOT), **env_extra)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv[:4])}... failed:\n{out.stderr[-3000:]}")
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def legacy_key_file(path: str) -> str:
    """A copy of a key file without its kind line (``piitracer-master-key v1``, issue 40.3): the
    code before the kind markers reads the whole file as the secret. Same secret, same key."""
    lines = Path(path).read_text().splitlines()
    copy = Path(tempfile.gettempdir()) / f"legacy-{Path(path).parent.parent.name}-{Path(path).name}"
    copy.write_text(lines[-1] if lines and lines[0].startswith("piitracer-") else "\n".join(lines))
    copy.chmod(0o600)
    return str(copy)


def baseline_tree(revision: str | None, folder: Path, repo: Path = ROOT) -> Path | None:
    """``piitracer`` of ``revision`` in the git repository ``repo``, exported with ``git archive``."""
    if not revision:
        return None
    code = folder / f"baseline-{revision}"
    if not (code / "piitracer" / "__init__.py").exists():
        partial = folder / f"partial-{revision}"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        archive = subprocess.run(["git", "archive", revision, "piitracer"], cwd=repo, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(partial)], input=archive, check=True)
        shutil.rmtree(code, ignore_errors=True)
        partial.rename(code)
    return code


def findings_equal(new: list, old: list) -> bool:
    """Same datasets, states, snapshots checked and findings (notes may differ: old problems texts)."""
    return [row[:4] for row in new] == [row[:4] for row in old]


# ---- a workspace's job ----------------------------------------------------------------------------

def demo_job(folder: Path) -> dict:
    """The demo's plan (its values opened with the demo's master key), value sets and step states
    from its journal, and every Parquet file under the plan's datasets' locations."""
    import piitracer
    from piitracer.api.plan import load_plan, plan_requests
    from piitracer.crypto.envelope import load_master_key
    from piitracer.executor.journal import Journal
    from piitracer.requests.store import RequestStore
    from piitracer.storage.locations import Location
    from piitracer.workspace.layout import StateLayout

    layout = StateLayout(folder)
    master = load_master_key(folder / ".piitracer" / "demo-master.key")
    with RequestStore(layout.request_store, master) as store:
        plan = load_plan(folder / "plan.json", store.cipher)
        cipher = store.cipher(plan_requests(plan))
        with Journal(layout.journal) as journal:
            values = journal.load_values(plan.plan_id, cipher)
            states = {r["step_id"]: r["state"] for r in journal.steps(plan.plan_id)}
    workspace = piitracer.load_workspace(folder)
    files = set()
    for decision in plan.datasets:
        entry = workspace.config.catalog.get(decision.dataset)
        if entry is None or not entry.location:
            continue
        location = Location.parse(entry.location, base=workspace.root)
        if location.is_local and Path(location.uri).is_dir():
            files |= {str(p) for p in Path(location.uri).rglob("*.parquet")}
    return {"workspace": str(folder), "plan": plan.model_dump_json(), "values": values, "states": states,
            "files": sorted(files), "master_key": str(folder / ".piitracer" / "demo-master.key")}


def measure(label: str, job: dict, baseline: Path | None, repeats: int, processes: bool) -> dict:
    """Bare read, new code and old code on one job, in turn; warm and (``processes``) whole process."""
    figures: dict = {"label": label, "files": len(job["files"]),
                     "bytes": sum(os.path.getsize(p) for p in job["files"])}
    bare = in_child(None, "bare", job, repeats)
    new = in_child(None, "verify", job, repeats)
    figures |= {"bare": _short(bare), "new": _short(new)}
    if baseline is not None:
        old = in_child(baseline, "verify", job, repeats)
        figures["old"] = _short(old)
        figures["same_findings"] = findings_equal(new["result"], old["result"])
        if not figures["same_findings"]:
            raise SystemExit(f"{label}: the old and new code disagree:\n{new['result']}\n{old['result']}")
    figures["states"] = sorted({(row[0], row[1]) for row in new["result"]})
    if processes:
        env = {"PIITRACER_MASTER_KEY_FILE": job["master_key"]}
        files = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False)
        files.write("\n".join(job["files"]))
        files.close()
        bare_argv = [sys.executable, "-c", "import sys, pyarrow.parquet as pq\n"
                     "for line in open(sys.argv[1]): pq.read_table(line.strip())", files.name]
        verify_argv = [sys.executable, "-m", "piitracer.cli.main", "--workspace", job["workspace"], "verify",
                       str(Path(job["workspace"]) / "plan.json"), "--no-record"]
        runs: dict[str, list] = {"bare": [], "new": [], "old": []}
        for _ in range(repeats):  # in turn, so load changes hit all three alike
            runs["bare"].append(whole_process(None, bare_argv, {}))
            runs["new"].append(whole_process(None, verify_argv, env))
            if baseline is not None:
                runs["old"].append(whole_process(baseline, verify_argv, {"PIITRACER_MASTER_KEY_FILE": legacy_key_file(job["master_key"])}))
        os.unlink(files.name)
        figures["process"] = {k: {"wall_s": statistics.median(w for w, _ in v), "cpu_s": statistics.median(c for _, c in v),
                                  "runs": v} for k, v in runs.items() if v}
    return figures


def _short(child: dict) -> dict:
    return {k: v for k, v in child.items() if k != "result"}


def ratio_rows(results: list[dict]) -> list[list]:
    rows = []
    for r in results:
        bare = r["bare"]
        row = [r["label"], r["files"], round(r["bytes"] / 1e6, 1), bare["warm_wall_s"], bare["warm_cpu_s"],
               r["new"]["warm_wall_s"], r["new"]["warm_cpu_s"],
               f"{r['new']['warm_wall_s'] / bare['warm_wall_s']:.2f}x / {r['new']['warm_cpu_s'] / bare['warm_cpu_s']:.2f}x"]
        if all("old" in each for each in results):
            row += [r["old"]["warm_wall_s"], r["old"]["warm_cpu_s"],
                    f"{r['old']['warm_wall_s'] / bare['warm_wall_s']:.2f}x / {r['old']['warm_cpu_s'] / bare['warm_cpu_s']:.2f}x"]
        rows.append(row)
    return rows


HEADER = ["lakehouse", "files", "MB", "bare wall s", "bare CPU s", "new wall s", "new CPU s", "new / bare (wall / CPU)",
          "old wall s", "old CPU s", "old / bare (wall / CPU)"]


def _header(results: list[dict]) -> list[str]:
    return HEADER if all("old" in r for r in results) else HEADER[:8]


def print_processes(results: list[dict]) -> None:
    rows = []
    for r in results:
        if "process" not in r:
            continue
        p = r["process"]
        row = [r["label"], p["bare"]["wall_s"], p["bare"]["cpu_s"], p["new"]["wall_s"], p["new"]["cpu_s"],
               f"{p['new']['wall_s'] / p['bare']['wall_s']:.2f}x / {p['new']['cpu_s'] / p['bare']['cpu_s']:.2f}x"]
        if "old" in p:
            row += [p["old"]["wall_s"], p["old"]["cpu_s"],
                    f"{p['old']['wall_s'] / p['bare']['wall_s']:.2f}x / {p['old']['cpu_s'] / p['bare']['cpu_s']:.2f}x"]
        rows.append(row)
    print_table("Whole processes (piitracer verify --no-record vs a process reading the same files)",
                ["lakehouse", "bare wall s", "bare CPU s", "new wall s", "new CPU s", "new / bare",
                 "old wall s", "old CPU s", "old / bare"][:len(rows[0]) if rows else 9], rows)


# ---- demo, and commits to one of its tables ----------------------------------------------------------

def cmd_demo(args) -> list[dict]:
    baseline = baseline_tree(args.baseline, Path(args.work), Path(args.repo))
    results = []
    for folder in args.demo:
        print(f"demo {folder} ...", flush=True)
        results.append(measure(Path(folder).name, demo_job(Path(folder)), baseline, args.repeats, processes=True))
    print_table("Warm verification in one process", _header(results), ratio_rows(results))
    print_processes(results)
    return results


def add_commits(folder: Path, table: str, commits: int) -> None:
    """``commits`` one-row commits to ``table`` through the demo workspace's Spark settings (one
    other person's row each: 9,999,990,000 + n, nobody the plan erases)."""
    import piitracer
    from piitracer.executor.spark_session import spark_session

    workspace = piitracer.load_workspace(folder)
    settings = workspace.config.spark
    spark = spark_session(settings, workspace.resolve(settings.warehouse))
    columns = spark.table(f"{settings.catalog}.{table}").limit(1)
    for number in range(commits):
        row = columns.withColumn("user_id", __import__("pyspark.sql.functions", fromlist=["lit"]).lit(9_999_990_000 + number)
                                 .cast(columns.schema["user_id"].dataType))
        row.writeTo(f"{settings.catalog}.{table}").append()


def cmd_commits(args) -> list[dict]:
    baseline = baseline_tree(args.baseline, Path(args.work), Path(args.repo))
    folder = Path(args.demo[0])
    results = [measure(f"{folder.name}, before", demo_job(folder), baseline, args.repeats, processes=False)]
    if args.commits:
        print(f"adding {args.commits} one-row commits to {args.table} ...", flush=True)
        add_commits(folder, args.table, args.commits)
    results.append(measure(f"{folder.name}, +{args.commits} commits to {args.table}", demo_job(folder), baseline,
                           args.repeats, processes=False))
    print_table("Warm verification before and after the commits", _header(results), ratio_rows(results))
    before, after = results
    print(f"\nafter / before: new {after['new']['warm_wall_s'] / before['new']['warm_wall_s']:.2f}x wall, "
          f"{after['new']['warm_cpu_s'] / before['new']['warm_cpu_s']:.2f}x CPU"
          + (f"; old {after['old']['warm_wall_s'] / before['old']['warm_wall_s']:.2f}x wall, "
             f"{after['old']['warm_cpu_s'] / before['old']['warm_cpu_s']:.2f}x CPU" if "old" in after else ""))
    return results


# ---- synthetic Iceberg tables (pyiceberg) ------------------------------------------------------------

def synthetic_workspace(folder: Path, tables: dict[str, Path]) -> Path:
    """A workspace whose catalog holds ``tables`` (name -> location): ``t_0`` the source (user_id,
    pan, phone identifiers), every other one derived from it in SQL lineage."""
    import yaml

    (folder / "sql").mkdir(parents=True, exist_ok=True)
    names = sorted(tables)
    source = names[0]
    (folder / "sql" / "lineage.sql").write_text("".join(
        f"INSERT INTO lake.{name} SELECT user_id, pan, phone, merchant, amount FROM lake.{source};\n" for name in names[1:]))
    columns = ["user_id", "pan", "phone", "merchant", "amount"]
    catalog = {name: {"format": "iceberg", "location": str(location), "table": f"lake.{name}", "columns": columns,
                      "identifiers": ["user_id", "pan", "phone"], **({"subject_key": "user_id"} if name == source else {})}
               for name, location in tables.items()}
    config = {"lineage": {"sql": [{"path": "sql"}], "spark_catalogs": ["lake"]}, "catalog": catalog,
              "warehouse_roots": [str(folder)]}
    (folder / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return folder


def synthetic_job(workspace: Path, subject_pan: str, subject_phone: str) -> dict:
    """A plan erasing the subject from every table, its value sets (as a resolve would capture them)
    and every step committed (the tables hold what they hold: the check is what is measured)."""
    import piitracer
    from piitracer.api import plan_deletion
    from piitracer.model.plan import Subject

    ws = piitracer.load_workspace(workspace)
    source = sorted(ws.config.catalog)[0]
    plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), [f"{source}.user_id"],
                         [Subject(value=str(SUBJECT), request_id="r1", received_at="2026-11-27T00:00:00Z")])
    values = {f"{source}.user_id": [SUBJECT], f"{source}.pan": [subject_pan], f"{source}.phone": [subject_phone]}
    files = sorted(str(p) for entry in ws.config.catalog.values() for p in Path(entry.location).rglob("*.parquet"))
    return {"workspace": str(workspace), "plan": plan.model_dump_json(), "values": values,
            "states": {s.id: "committed" for s in plan.steps}, "files": files}


def pyiceberg_table(folder: Path, commits: list[int], subject: bool, big_file_bytes: int | None = None) -> Path:
    """An Iceberg table written by pyiceberg (sql catalog in ``folder``), one append per entry of
    ``commits`` (its row count); the subject's row in the first commit when ``subject``."""
    import random

    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog

    folder.mkdir(parents=True, exist_ok=True)
    catalog = SqlCatalog("c", uri=f"sqlite:///{folder}/catalog.db", warehouse=f"file://{folder}/wh")
    catalog.create_namespace("ns")
    schema = pa.schema([pa.field("user_id", pa.int64()), pa.field("pan", pa.string()), pa.field("phone", pa.string()),
                        pa.field("merchant", pa.string()), pa.field("amount", pa.float64())])
    properties = {"write.target-file-size-bytes": str(big_file_bytes)} if big_file_bytes else {}
    table = catalog.create_table("ns.t", schema=schema, properties=properties)
    rng = random.Random(len(commits))
    merchants = [f"merchant {i} {rng.choice(['cafe', 'books', 'fuel', 'grocer'])}" for i in range(500)]
    start = 8_000_000_000
    for number, count in enumerate(commits):
        ids = list(range(start, start + count))
        start += count
        if subject and number == 0:
            ids[0] = SUBJECT
        table.append(pa.table({"user_id": pa.array(ids, pa.int64()), "pan": [_pan(x) for x in ids],
                               "phone": [_phone(x) for x in ids], "merchant": [rng.choice(merchants) for _ in ids],
                               "amount": [rng.random() * 100 for _ in ids]}, schema=schema))
    return Path(catalog.load_table("ns.t").location().removeprefix("file://"))


def _pan(user: int) -> str:
    return f"AB{user % 10**8:08d}X"


def _phone(user: int) -> str:
    return f"+9198{user % 10**8:08d}"


def clone_table(template: Path, target: Path) -> None:
    """A copy of an Iceberg table at ``target`` whose metadata names its own files: metadata.json
    rewritten as text, manifest lists and manifests rewritten record by record (fastavro, same
    schema, codec and metadata), data files hard-linked."""
    import fastavro

    old, new = str(template), str(target)
    (target / "metadata").mkdir(parents=True)
    for path in template.rglob("*"):
        if path.is_dir():
            continue
        relative = path.relative_to(template)
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".avro":
            with open(path, "rb") as handle:
                reader = fastavro.reader(handle)
                schema, codec = reader.writer_schema, reader.codec
                metadata = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
                records = [_replaced(r, old, new) for r in reader]
            with open(destination, "wb") as handle:
                fastavro.writer(handle, schema, records, codec=codec, metadata=metadata)
        elif path.name.endswith(".json"):
            destination.write_text(path.read_text().replace(old, new))
        else:
            os.link(path, destination)


def _replaced(value, old: str, new: str):
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {k: _replaced(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v, old, new) for v in value]
    return value


def probe_files(folder: Path, files: int, rows: int, prepared: bool) -> list[str]:
    """``files`` Parquet files of ``rows`` rows as pyarrow writes them (dictionary encoding; with
    ``prepared``, what ``verify.prepare`` writes too: Bloom filters on the identifiers, the page
    index): even user ids, PANs and phones of even numbers, a free-text merchant; the subject's
    row (7,000,000,001) in the first file."""
    import random

    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(files)
    merchants = [f"merchant {i} {rng.choice(['cafe', 'books', 'fuel', 'grocer'])}" for i in range(500)]
    paths = []
    for number in range(files):
        ids = [8_000_000_000 + 2 * (number * rows + n) for n in range(rows)]
        rng.shuffle(ids)
        if number == 0:
            ids[0] = SUBJECT
        table = pa.table({"user_id": pa.array(ids, pa.int64()), "pan": [_pan(x) for x in ids], "phone": [_phone(x) for x in ids],
                          "merchant": [rng.choice(merchants) for _ in ids], "amount": [rng.random() for _ in ids]})
        options = {}
        if prepared:
            options = dict(write_page_index=True,
                           bloom_filter_options={c: {"ndv": rows, "fpp": 0.01} for c in ("user_id", "pan", "phone")})
        path = folder / f"part-{number:05d}.parquet"
        pq.write_table(table, path, **options)
        paths.append(str(path))
    return paths


def cmd_probes(args) -> list[dict]:
    """The byte search of the same files with 10 to 10,000 searched values per identifier (a batch
    of subjects: odd ids and the PANs and phones of odd numbers inside every chunk's min/max, never
    in a file), new code against the code before and the bare read."""
    keep = Path(args.keep)
    baseline = baseline_tree(args.baseline, Path(args.work), Path(args.repo))
    results = []
    for variant in ("default", "prepared"):
        folder = keep / f"probes-{variant}"
        files = sorted(str(p) for p in folder.glob("*.parquet")) if folder.exists() else []
        if len(files) != args.files:
            shutil.rmtree(folder, ignore_errors=True)
            print(f"writing {args.files} {variant} files ...", flush=True)
            files = probe_files(folder, args.files, args.rows, variant == "prepared")
        for count in args.values:
            ids = [SUBJECT] + [8_000_000_001 + 2 * n * 997 for n in range(count - 1)]
            values = {"t.user_id": ids, "t.pan": [_pan(x) for x in ids], "t.phone": [_phone(x) for x in ids]}
            job = {"root": str(folder), "files": files, "values": values,
                   "scope": [["pan", ["t.pan"]], ["phone", ["t.phone"]], ["user_id", ["t.user_id"]]]}
            figures = {"label": f"{variant}, {count:,} values per set", "files": len(files),
                       "bytes": sum(os.path.getsize(p) for p in files)}
            figures["bare"] = _short(in_child(None, "bare", job, args.repeats))
            new = in_child(None, "scan", job, args.repeats)
            figures["new"] = _short(new)
            figures["chunks_new"] = new["result"][1]
            if baseline is not None:
                old = in_child(baseline, "scan", job, args.repeats)
                figures["old"] = _short(old)
                figures["chunks_old"] = old["result"][1]
                if new["result"][0] != old["result"][0]:
                    raise SystemExit(f"{figures['label']}: the old and new code find different places")
            results.append(figures)
            print(f"  {figures['label']}: new {new['warm_cpu_s']:.2f} s CPU"
                  + (f", old {figures['old']['warm_cpu_s']:.2f} s" if "old" in figures else ""), flush=True)
    print_table("The byte search with a batch of values: warm, in one process", _header(results), ratio_rows(results))
    return results


def cmd_snapshots(args) -> list[dict]:
    keep = Path(args.keep)
    baseline = baseline_tree(args.baseline, Path(args.work), Path(args.repo))
    results = []
    for snapshots in args.snapshots:
        folder = keep / f"snapshots-{snapshots}"
        if not (folder / "piitracer.yaml").exists():
            print(f"writing the table with {snapshots} snapshots ...", flush=True)
            shutil.rmtree(folder, ignore_errors=True)
            location = pyiceberg_table(folder / "lake", [120_000] * 10 + [1] * (snapshots - 10), subject=True,
                                       big_file_bytes=700_000)
            synthetic_workspace(folder, {"t_0": location})
        job = synthetic_job(folder, _pan(SUBJECT), _phone(SUBJECT))
        results.append(measure(f"{snapshots} snapshots", job, baseline, args.repeats, processes=False))
    print_table("One table, the same bytes, 10 to 200 snapshots: warm verification", _header(results), ratio_rows(results))
    first = results[0]["new"]["warm_wall_s"], results[0]["new"]["warm_cpu_s"]
    for r in results[1:]:
        print(f"{r['label']} / {results[0]['label']}: new {r['new']['warm_wall_s'] / first[0]:.2f}x wall, "
              f"{r['new']['warm_cpu_s'] / first[1]:.2f}x CPU"
              + (f"; old {r['old']['warm_wall_s'] / results[0]['old']['warm_wall_s']:.2f}x wall" if "old" in r else ""))
    return results


ONE_ROW_FILE_BYTES = 64 * 1024  # a data file under this is a one-row commit's (the base files: ~700 KB)


def _file_kind(relative: str, size: int) -> str:
    name = relative.rsplit("/", 1)[-1]
    if name.endswith(".parquet"):
        return "data file (one row)" if size < ONE_ROW_FILE_BYTES else "data file (base)"
    if name.endswith(".metadata.json"):
        return "metadata.json"
    if name.endswith(".avro"):
        return "manifest list" if name.startswith("snap-") else "manifest"
    return "other"


def _per_file(calls, repeats: int) -> float:
    """Seconds per call, the best of ``repeats`` passes over ``calls``."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for call in calls:
            call()
        best = min(best, time.perf_counter() - started)
    return best / max(1, len(calls))


def floor_child(folder: str, repeats: int) -> dict:
    """The per-file figures of :func:`cmd_floor` for one table (run in a child process)."""
    import collections

    import pyarrow as pa
    import pyarrow.parquet as pq

    import piitracer.verify.engines as engines
    from piitracer.formats import iceberg
    from piitracer.storage.locations import Location

    job = synthetic_job(Path(folder), _pan(SUBJECT), _phone(SUBJECT))
    scans: dict[str, list] = collections.defaultdict(list)
    scan_one_file = engines.scan_one_file

    def recorded(root, relative, *args, **kwargs):  # what the verification scans, by kind of file
        size = os.stat(root.child(relative).uri).st_size
        scans[_file_kind(relative, size)].append(lambda: scan_one_file(root, relative, *args, **kwargs))
        return scan_one_file(root, relative, *args, **kwargs)

    run, workspace, store = _verifier(job)
    engines.scan_one_file = recorded
    try:
        run()
    finally:
        engines.scan_one_file = scan_one_file
    location = Location.parse(workspace.config.catalog["t_0"].location)
    history = [lambda: iceberg.table_history(location, store, "user_id")]
    figures = {kind: {"files": len(calls), "us_per_file": _per_file(calls, repeats) * 1e6} for kind, calls in scans.items()}
    figures["history read (whole table)"] = {"files": 1, "us_per_file": _per_file(history, repeats) * 1e6}
    tiny = [path for path in job["files"] if os.path.getsize(path) < ONE_ROW_FILE_BYTES]
    if tiny:
        blobs = [Path(path).read_bytes() for path in tiny]
        figures["pyarrow: read the file's bytes"] = {"files": len(tiny), "us_per_file": _per_file(
            [lambda p=p: Path(p).read_bytes() for p in tiny], repeats) * 1e6}
        figures["pyarrow: footer from memory"] = {"files": len(tiny), "us_per_file": _per_file(
            [lambda b=b: pq.read_metadata(pa.BufferReader(b)) for b in blobs], repeats) * 1e6}
        figures["pyarrow: whole file from memory"] = {"files": len(tiny), "us_per_file": _per_file(
            [lambda b=b: pq.ParquetFile(pa.BufferReader(b)).read() for b in blobs], repeats) * 1e6}
        figures["pyarrow: read_table(path) (the bare read)"] = {"files": len(tiny), "us_per_file": _per_file(
            [lambda p=p: pq.read_table(p) for p in tiny], repeats) * 1e6}
    return figures


def cmd_floor(args) -> list[dict]:
    keep = Path(args.keep)
    results = []
    for snapshots in (10, 200):
        folder = keep / f"snapshots-{snapshots}"
        if not (folder / "piitracer.yaml").exists():
            raise SystemExit(f"{folder}: not written yet (run the 'snapshots' command with --keep {keep} first)")
        done = subprocess.run([sys.executable, str(HERE), "_floor", str(folder), str(args.repeats)],
                              capture_output=True, text=True, check=True)
        results.append({"snapshots": snapshots, "figures": json.loads(done.stdout.splitlines()[-1])})
    kinds = list(dict.fromkeys(kind for r in results for kind in r["figures"]))
    rows = [[kind, *(f"{r['figures'][kind]['files']} x {r['figures'][kind]['us_per_file']:.0f} us"
                     if kind in r["figures"] else "-" for r in results)] for kind in kinds]
    print_table("What one table's files cost: per file, best of the repeats",
                ["file", *(f"{r['snapshots']} snapshots" for r in results)], rows)
    big = results[1]["figures"]
    commit = sum(big[kind]["us_per_file"] for kind in ("data file (one row)", "manifest", "manifest list", "metadata.json")
                 if kind in big)
    print(f"one one-row commit's four files at 200 snapshots: {commit:.0f} us")
    return results


def cmd_tables(args) -> list[dict]:
    keep = Path(args.keep)
    baseline = baseline_tree(args.baseline, Path(args.work), Path(args.repo))
    results = []
    for snapshots in args.snapshots:
        templates = keep / f"templates-{snapshots}"
        if not templates.exists():
            print(f"templates of {snapshots} snapshots ...", flush=True)
            plain = pyiceberg_table(templates / "plain", [200] * snapshots, subject=False)
            held = pyiceberg_table(templates / "held", [200] * snapshots, subject=True)
            (templates / "paths.json").write_text(json.dumps({"plain": str(plain), "held": str(held)}))
        paths = json.loads((templates / "paths.json").read_text())
        for count in args.tables:
            folder = keep / f"tables-{count}-snapshots-{snapshots}"
            if not (folder / "piitracer.yaml").exists():
                print(f"cloning {count} tables of {snapshots} snapshots ...", flush=True)
                shutil.rmtree(folder, ignore_errors=True)
                tables = {}
                for number in range(count):
                    held = number % args.subject_every == 0
                    target = folder / "lake" / f"t_{number:05d}"
                    clone_table(Path(paths["held" if held else "plain"]), target)
                    tables[f"t_{number:05d}"] = target
                synthetic_workspace(folder, tables)
            job = synthetic_job(folder, _pan(SUBJECT), _phone(SUBJECT))
            use_baseline = baseline if count <= args.baseline_max_tables else None
            result = measure(f"{count} tables x {snapshots} snapshots", job, use_baseline, args.repeats, processes=False)
            result |= {"tables": count, "snapshots": snapshots}
            results.append(result)
            print(f"  {result['label']}: new {result['new']['warm_wall_s']:.2f} s wall, {result['new']['warm_cpu_s']:.2f} s CPU; "
                  f"bare {result['bare']['warm_wall_s']:.2f} s", flush=True)
    print_table("Many small tables: warm verification", _header(results), ratio_rows(results))
    _fixed_costs(results)
    return results


def _fixed_costs(results: list[dict]) -> None:
    """Least squares of CPU seconds over tables and tables x snapshots: a fixed cost per table and
    per snapshot (what each adds, whatever its bytes)."""
    import numpy as np

    if len(results) < 3:
        return
    design = np.array([[1.0, r["tables"], r["tables"] * r["snapshots"]] for r in results])
    for code in ("new", "old"):
        rows = [(d, r[code]["warm_cpu_s"]) for d, r in zip(design, results) if code in r]
        if len(rows) < 3:
            continue
        a = np.array([d for d, _ in rows])
        b = np.array([c for _, c in rows])
        (fixed, per_table, per_snapshot), *_ = np.linalg.lstsq(a, b, rcond=None)
        print(f"{code}: {fixed:.3f} s + {per_table * 1000:.1f} ms per table + {per_snapshot * 1000:.2f} ms per table-snapshot (CPU)")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_child":
        child_main(sys.argv[2:])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "_floor":
        print(json.dumps(floor_child(sys.argv[2], int(sys.argv[3]))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["demo", "commits", "snapshots", "tables", "probes", "floor"])
    parser.add_argument("--demo", action="append", default=[], help="a demo workspace folder (built with --no-close)")
    parser.add_argument("--commits", type=int, default=40)
    parser.add_argument("--table", default="prod.payments")
    parser.add_argument("--keep", default=str(Path(tempfile.gettempdir()) / "bench-verify-history"))
    parser.add_argument("--snapshots", type=int, nargs="+", default=None)
    parser.add_argument("--tables", type=int, nargs="+", default=[100, 500, 2000])
    parser.add_argument("--subject-every", type=int, default=500)
    parser.add_argument("--baseline", metavar="REV", help="also run the code of this git revision")
    parser.add_argument("--baseline-max-tables", type=int, default=100, help="the old code only up to this many tables")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--files", type=int, default=100, help="probes: files per variant")
    parser.add_argument("--rows", type=int, default=50_000, help="probes: rows per file")
    parser.add_argument("--values", type=int, nargs="+", default=[10, 1000, 10000], help="probes: values per set")
    parser.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "bench-verify-history-code"))
    parser.add_argument("--repo", default=str(ROOT), help="the git repository --baseline is read from")
    args = parser.parse_args()
    if args.snapshots is None:
        args.snapshots = [10, 50, 200] if args.command == "snapshots" else [50]
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    results = {"demo": cmd_demo, "commits": cmd_commits, "snapshots": cmd_snapshots, "tables": cmd_tables,
               "probes": cmd_probes, "floor": cmd_floor}[args.command](args)
    write_results(f"verify_history_{args.command}", {"results": results, "baseline": args.baseline,
                                                    "environment": environment(), "args": vars(args)})


if __name__ == "__main__":
    main()
