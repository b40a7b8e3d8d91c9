"""The seed scene's erasure: ``piitracer execute`` against the same erasure written by hand with
pyiceberg, on the same tables, in one run (issue 51).

The scene: Iceberg ``fintech.payments`` (7,503 rows, partitioned by day, four commits, a tag on an
old snapshot holding the subject's rows) and ``fintech.payments_by_user`` (the rows a CTAS over it
writes), in the Iceberg JDBC catalog's tables in PostgreSQL (pyiceberg's ``sql`` catalog), data on
an S3 server (moto on 127.0.0.1), configured only by ``PYICEBERG_CATALOG__PROD__*``. Each measured
run gets a fresh scene (its own database and S3 prefix), built the same way.

- **piitracer**: ``piitracer execute plan.json --no-concurrent-writers`` as a process (the plan made
  beforehand by ``init``, ``catalog discover --write`` and ``plan -o``, not timed): resolve, delete,
  manifests rewritten, the tag's snapshot rewritten, expiry, the files no snapshot references removed,
  on both tables; the journal, the audit log and the request store written.
- **by hand**: a Python process (``--by-hand``) doing with pyiceberg what a careful engineer would:
  delete the subject's rows from both tables; re-point the tag at a rewritten snapshot (a branch at
  the tag's snapshot, the delete on it, the tag moved there with its max-ref-age, the branch
  dropped); expire every snapshot no ref holds; remove the files no snapshot references.

Both include the interpreter's start and their imports. Python's bytecode is cached as an installed
package has it (no ``PYTHONDONTWRITEBYTECODE``, ``PYTHONPYCACHEPREFIX`` under the temporary folder,
warmed once before the runs; ``--no-bytecode-cache`` keeps the environment's setting). Runs are
interleaved, the order alternating; medians. ``--compare DIR`` also times ``execute`` from another checkout (``git worktree add DIR
<commit>``), e.g. the code before a change, on its own fresh scenes in the same run.

Usage: .venv/bin/python benchmarks/bench_seed_erasure.py [--runs 3] [--compare DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import print_table, write_results

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests" / "support"), str(REPO)]

BUCKET = "seed-lake"
SUBJECT = 7_000_000_001
TAG = "q1-close"
CTAS = "CREATE TABLE fintech.payments_by_user AS\nSELECT user_id, pan, amount, dt FROM fintech.payments;\n"


def catalog_environment(s3, uri: str, prefix: str, home: Path) -> dict[str, str]:
    return {"PYICEBERG_HOME": str(home), "PYICEBERG_CATALOG__PROD__TYPE": "sql", "PYICEBERG_CATALOG__PROD__URI": uri,
            "PYICEBERG_CATALOG__PROD__WAREHOUSE": f"s3://{BUCKET}/{prefix}",
            "PYICEBERG_CATALOG__PROD__S3__ENDPOINT": s3.endpoint, "PYICEBERG_CATALOG__PROD__S3__REGION": "us-east-1",
            "PYICEBERG_CATALOG__PROD__S3__ACCESS_KEY_ID": s3.env["AWS_ACCESS_KEY_ID"],
            "PYICEBERG_CATALOG__PROD__S3__SECRET_ACCESS_KEY": s3.env["AWS_SECRET_ACCESS_KEY"]}


def properties_of(environment: dict[str, str]) -> dict[str, str]:
    prefix = "PYICEBERG_CATALOG__PROD__"
    return {k.removeprefix(prefix).lower().replace("__", ".").replace("_", "-"): v
            for k, v in environment.items() if k.startswith(prefix)}


def build_scene(properties: dict[str, str]) -> None:
    """``fintech.payments`` (7,503 rows in four commits, the tag on the second) and its CTAS."""
    from pyiceberg.catalog import load_catalog
    from pyiceberg_lakehouse import create_derived, create_payments

    catalog = load_catalog("prod", **properties)
    create_derived(catalog, create_payments(catalog, commits=(3000, 1500, 2000, 1000)))


def erase_by_hand(properties: dict[str, str]) -> None:
    """The erasure written by hand with pyiceberg (module docstring)."""
    from pyarrow import fs
    from pyiceberg.catalog import load_catalog
    from pyiceberg.expressions import EqualTo

    catalog = load_catalog("prod", **properties)
    subject = EqualTo("user_id", SUBJECT)
    s3 = fs.S3FileSystem(endpoint_override=properties["s3.endpoint"], region=properties["s3.region"],
                         access_key=properties["s3.access-key-id"], secret_key=properties["s3.secret-access-key"])
    for name in ("fintech.payments", "fintech.payments_by_user"):
        table = catalog.load_table(name)
        table.delete(subject)
        for ref_name, ref in list(table.metadata.refs.items()):
            if ref.snapshot_ref_type.value != "tag":
                continue
            table.manage_snapshots().create_branch(ref.snapshot_id, "rewrite").commit()
            table.delete(subject, branch="rewrite")
            head = table.metadata.refs["rewrite"].snapshot_id
            (table.manage_snapshots().remove_tag(ref_name).create_tag(head, ref_name, max_ref_age_ms=ref.max_ref_age_ms)
             .remove_branch("rewrite").commit())
        held = {ref.snapshot_id for ref in table.metadata.refs.values()}
        unheld = [s.snapshot_id for s in table.metadata.snapshots if s.snapshot_id not in held]
        if unheld:
            table.maintenance.expire_snapshots().by_ids(unheld).commit()
        referenced = {table.metadata_location, *(entry.metadata_file for entry in table.metadata.metadata_log)}
        for snapshot in table.metadata.snapshots:
            referenced.add(snapshot.manifest_list)
            for manifest in snapshot.manifests(table.io):
                referenced.add(manifest.manifest_path)
                # a DELETED entry references no file any more (the file is gone from that snapshot)
                referenced.update(entry.data_file.file_path for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True))
        location = table.location().removeprefix("s3://")
        for info in s3.get_file_info(fs.FileSelector(location, recursive=True)):
            if info.type == fs.FileType.File and f"s3://{info.path}" not in referenced:
                s3.delete_file(info.path)


def cli(checkout: Path, env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "piitracer.cli.main", *args], capture_output=True, text=True,
                          env={**env, "PYTHONPATH": str(checkout)}, cwd=cwd, timeout=1800)
    if done.returncode:
        raise RuntimeError(f"piitracer {' '.join(args[:3])}: exit {done.returncode}\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done


def prepared_plan(checkout: Path, env: dict[str, str], folder: Path) -> tuple[Path, dict[str, str]]:
    """A new user's workspace and plan for the scene (init, discover, identifiers, plan -o)."""
    ws = folder / "ws"
    made = cli(checkout, env, "init", str(ws), "--warehouse-root", f"s3://{BUCKET}/{folder.name}/", "--keys-dir", str(folder / "keys"),
               cwd=folder)
    exports = dict(line.removeprefix("export ").split("=", 1) for line in made.stdout.splitlines() if line.startswith("export "))
    env = {**env, **{key: value.strip("'\"") for key, value in exports.items()}}
    (ws / "lineage.sql").write_text(CTAS)
    config = (ws / "piitracer.yaml").read_text().replace("  sql: []", "  sql: [{path: lineage.sql, dialect: spark}]")
    (ws / "piitracer.yaml").write_text(config)
    cli(checkout, env, "--workspace", str(ws), "catalog", "discover", "--write", cwd=folder)
    with (ws / "piitracer.yaml").open("a") as handle:
        handle.write("catalog:\n  fintech.payments:\n    identifiers: [user_id, pan, phone, aadhaar_ref]\n"
                     "    subject_key: user_id\n")
    plan = folder / "plan.json"
    cli(checkout, env, "--workspace", str(ws), "plan", "--source", "fintech.payments.user_id", "--subject", str(SUBJECT),
        "--request-id", "dsr-2026-0419", "--received-at", "2026-11-20T09:00:00Z", "-o", str(plan), cwd=folder)
    return plan, {**env, "PIITRACER_WORKSPACE": str(ws)}


def one_run(kind: str, checkout: Path, s3, postgres, number: int, base_env: dict[str, str], scratch: Path) -> float:
    """Seconds of one measured erasure on a fresh scene."""
    folder = scratch / f"{kind.replace(' ', '-')}-{number}"
    folder.mkdir()
    (folder / "home").mkdir()
    database = postgres.create_database(f"seed_{number}_{abs(hash(kind)) % 10_000}")
    environment = catalog_environment(s3, postgres.sqlalchemy_uri(database), folder.name, folder / "home")
    build_scene(properties_of(environment))
    env = {**base_env, **environment}
    if kind == "by hand":
        start = time.perf_counter()
        done = subprocess.run([sys.executable, __file__, "--by-hand"], env=env, capture_output=True, text=True, timeout=1800)
        elapsed = time.perf_counter() - start
        if done.returncode:
            raise RuntimeError(done.stderr[-3000:])
        return elapsed
    plan, env = prepared_plan(checkout, env, folder)
    start = time.perf_counter()
    cli(checkout, env, "--workspace", env["PIITRACER_WORKSPACE"], "execute", str(plan), "--no-concurrent-writers", cwd=folder)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--compare", type=Path, help="another checkout of piitracer whose execute is timed too")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="keep the environment's PYTHONDONTWRITEBYTECODE (no cached .pyc: compile on every start)")
    parser.add_argument("--by-hand", action="store_true", help=argparse.SUPPRESS)  # the child process
    args = parser.parse_args()
    if args.by_hand:
        erase_by_hand(properties_of(dict(os.environ)))
        return
    if not args.no_bytecode_cache:  # every child inherits this process's environment
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "piitracer-bench" / "pycache")
    from postgres_server import postgres_server
    from s3_server import s3_server

    kinds = {"piitracer execute": REPO, "by hand": REPO}
    if args.compare:
        kinds[f"execute at {args.compare.name}"] = args.compare.resolve()
    base_env = {k: v for k, v in os.environ.items() if not k.upper().startswith(("PYICEBERG_", "AWS_"))}
    times: dict[str, list[float]] = {kind: [] for kind in kinds}
    warm = ("import piitracer.cli.main, piitracer.cli.erasure, piitracer.api.session, piitracer.api.execute, "
            "piitracer.api.audit, piitracer.formats.iceberg_pyiceberg, piitracer.executor.runner, "
            "pyiceberg.catalog.sql, pyiceberg.table, pyarrow.fs, sqlalchemy.dialects.postgresql")
    for checkout in set(kinds.values()):  # the bytecode cached once (not timed)
        subprocess.run([sys.executable, "-c", warm], env={**os.environ, "PYTHONPATH": str(checkout)}, check=True)
    with s3_server(bucket=BUCKET, authenticated=True) as s3, postgres_server() as postgres, \
            tempfile.TemporaryDirectory(prefix="seed-bench-") as scratch:
        for number in range(args.runs):
            order = list(kinds) if number % 2 == 0 else list(reversed(kinds))
            for kind in order:
                times[kind].append(one_run(kind, kinds[kind], s3, postgres, number, base_env, Path(scratch)))
                print(f"run {number + 1}: {kind}: {times[kind][-1]:.2f} s", flush=True)
    medians = {kind: statistics.median(values) for kind, values in times.items()}
    baseline = medians["by hand"]
    print_table(f"The seed scene's erasure (medians of {args.runs}, load {os.getloadavg()[0]:.1f})",
                ["erasure", "median s", "runs s", "x by hand"],
                [[kind, medians[kind], " ".join(f"{t:.2f}" for t in times[kind]), medians[kind] / baseline] for kind in kinds])
    write_results("seed_erasure", {"runs": args.runs, "seconds": times, "medians": medians,
                                   "ratio_to_by_hand": {kind: medians[kind] / baseline for kind in kinds}})
    print(json.dumps({"ratio": medians["piitracer execute"] / baseline}))


if __name__ == "__main__":
    main()
