"""Erasing one person from a shredded table as it grows 10x (issue 42, third acceptance point):
the crypto-shredding path (the executor's ``destroy_subject_key`` step: the person's key destroyed
in the key vault, the vault's files rewritten and its old versions removed) against the physical
path on the same table (the plan's Delta steps: ``delete_rows``, ``vacuum``, ``clean_delta_log``).

The table: ``--sizes`` rows (default 100,000 and 1,000,000) of payments, ``user_id`` the subject
key, ``email`` stored as AES-GCM ciphertext under each row's subject key (piitracer.shred.cipher,
keys created in batches of 10,000 as a pipeline would), written to Delta by delta-rs in
``--versions`` appends (history: every append is a version). Two series:

- ``fixed``: ``--subjects`` people (default 10,000) whatever the size: the table grows with their
  rows, the vault does not;
- ``growing``: one person per 10 rows: the vault grows with the table (10,000 then 100,000 keys).

Each erasure runs on a fresh copy of the lakehouse (copied outside the timing), ``--repeats``
times; the figure is the median. The shred path is timed with both vaults (Delta, SQLite: the
same keys). After each run the benchmark checks what it timed: the person's key is gone from the
vault and the table's files are byte-identical (shred), or the person's rows are gone (physical).

    .venv/bin/python benchmarks/bench_shred_erase.py [--sizes 100000 1000000] [--subjects 10000] [--versions 10] [--repeats 3]
"""

from __future__ import annotations

import argparse
import hashlib
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import peak_rss_mb, print_table, write_results  # noqa: E402

SUBJECT = 0  # the person erased: a row in every version


def build(folder: Path, rows: int, subjects: int, versions: int, master) -> None:
    """The payments table (``folder/payments``), its Delta key vault and a SQLite vault of the same keys."""
    import random

    import pyarrow as pa
    from deltalake import write_deltalake

    from piitracer.shred.cipher import ShredColumns, encrypt_batch
    from piitracer.shred.delta_vault import delta_vault
    from piitracer.shred.vault import sqlite_vault

    rng = random.Random(42)
    spec = ShredColumns(key="user_id", randomised=("email",))
    vault = delta_vault(folder / "vault", master)
    per_version = rows // versions
    for version in range(versions):
        users = [SUBJECT] + [rng.randrange(1, subjects) for _ in range(per_version - 1)]
        plain = pa.table({"row": pa.array(range(version * per_version, (version + 1) * per_version), pa.int64()),
                          "user_id": pa.array(users, pa.int64()),
                          "email": [f"user{u}@example.org" for u in users],
                          "amount": pa.array([rng.randrange(100000) for _ in users], pa.int64())})
        batches = [encrypt_batch(b, vault, spec) for b in plain.to_batches(max_chunksize=10_000)]
        write_deltalake(str(folder / "payments"), pa.Table.from_batches(batches), mode="append")
    from deltalake import DeltaTable

    held = DeltaTable(str(folder / "vault")).to_pyarrow_table()  # every key, wrapped: copied into the SQLite vault
    with sqlite_vault(folder / "vault.sqlite", master) as copy:
        copy.backend.insert_missing(dict(zip(held.column("lookup").to_pylist(), held.column("wrapped").to_pylist())))
    vault.close()


def digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()}


def shred_once(lake: Path, kind: str, master) -> tuple[float, dict]:
    from piitracer.executor.shred_step import destroy_subject_keys
    from piitracer.model.outcome import Attempt
    from piitracer.model.plan import Action, DestroySubjectKeyParams, Step, ValueSource
    from piitracer.shred.place import DELTA, SQLITE, VaultPlace, open_existing
    from piitracer.storage.locations import Location
    from piitracer.storage.store import Store

    step = Step(order=2, id="s002", dataset="prod.payments", action=Action.DESTROY_SUBJECT_KEY, key_column="user_id",
                values_from=(ValueSource(name="prod.payments.user_id", kind="identifier",
                                         source={"dataset": "prod.payments", "column": "user_id"}),),
                params=DestroySubjectKeyParams(keys=("prod.payments.user_id",), datasets=("prod.payments",)))
    place = VaultPlace(DELTA, Location.parse(str(lake / "vault")), "prod.key_vault") if kind == "delta" else \
        VaultPlace(SQLITE, Location.parse(str(lake / "vault.sqlite")))
    table_before = digests(lake / "payments")
    started = time.perf_counter()
    outcome = destroy_subject_keys(step, [SUBJECT], place, master, Store(), (Location.parse(str(lake)),), Attempt())
    elapsed = time.perf_counter() - started
    assert outcome.details["keys_destroyed"] == 1
    with open_existing(place, master, Store()) as vault:
        assert vault.fetch([SUBJECT]).get(SUBJECT) is None and vault.fetch([1]).get(1) is not None
    assert digests(lake / "payments") == table_before  # nothing of the table rewritten
    return elapsed, {"vault_files_removed": outcome.details["vault_files_removed"]}


def physical_once(lake: Path) -> tuple[float, dict]:
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    from piitracer.formats import delta
    from piitracer.storage.locations import Location
    from piitracer.storage.store import Store

    where, store = Location.parse(str(lake / "payments")), Store()
    started = time.perf_counter()
    deleted = delta.delete_rows(where, store, "user_id", [SUBJECT])
    removed = delta.vacuum(where, store)
    delta.clean_delta_log(where, store)
    elapsed = time.perf_counter() - started
    left = DeltaTable(str(lake / "payments")).to_pyarrow_table(columns=["user_id"]).column("user_id")
    assert pc.sum(pc.equal(left, SUBJECT)).as_py() in (0, None)
    return elapsed, {"rows_deleted": deleted.rows_deleted, "files_rewritten": deleted.files_rewritten,
                     "files_removed": removed.files_removed}


def measure(source: Path, scratch: Path, repeats: int, run) -> tuple[float, list[float], dict]:
    times, facts = [], {}
    for number in range(repeats):
        lake = scratch / f"run-{number}"
        shutil.copytree(source, lake)
        elapsed, facts = run(lake)
        times.append(elapsed)
        shutil.rmtree(lake)
    return statistics.median(times), times, facts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--subjects", type=int, default=10_000, help="people in the 'fixed' series")
    parser.add_argument("--versions", type=int, default=10, help="appends (versions) per table")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--series", nargs="+", default=["fixed", "growing"], choices=["fixed", "growing"])
    args = parser.parse_args()

    from piitracer.crypto.envelope import MasterKey

    master = MasterKey(secrets.token_hex(32).encode(), "benchmark")
    scratch = Path(tempfile.mkdtemp(prefix="bench-shred-erase-"))
    results, rows = [], []
    try:
        for series in args.series:
            for size in args.sizes:
                subjects = args.subjects if series == "fixed" else size // 10
                source = scratch / f"{series}-{size}"
                started = time.perf_counter()
                build(source, size, subjects, args.versions, master)
                built = time.perf_counter() - started
                table_mb = sum(p.stat().st_size for p in (source / "payments").rglob("*") if p.is_file()) / 1e6
                figures = {"series": series, "rows": size, "subjects": subjects, "versions": args.versions,
                           "table_mb": table_mb, "build_seconds": built}
                for name, run in (("shred_delta_vault", lambda lake: shred_once(lake, "delta", master)),
                                  ("shred_sqlite_vault", lambda lake: shred_once(lake, "sqlite", master)),
                                  ("physical", physical_once)):
                    median, times, facts = measure(source, scratch, args.repeats, run)
                    figures[name] = {"median": median, "runs": times, **facts}
                shutil.rmtree(source)
                results.append(figures)
                rows.append([series, size, subjects, round(table_mb, 1), figures["shred_delta_vault"]["median"],
                             figures["shred_sqlite_vault"]["median"], figures["physical"]["median"],
                             figures["physical"]["files_rewritten"], figures["physical"]["files_removed"]])
                print(f"{series} {size:,} rows: built in {built:.0f} s", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    print_table(f"erase one person, seconds (medians of {args.repeats}); {args.versions} versions per table",
                ["series", "rows", "people", "table MB", "shred (Delta vault)", "shred (SQLite vault)", "physical",
                 "files rewritten", "files removed"], rows)
    for series in args.series:
        mine = [r for r in results if r["series"] == series]
        if len(mine) >= 2:
            first, last = mine[0], mine[-1]
            growth = last["rows"] / first["rows"]
            print(f"{series}: table x{growth:.0f} -> shred (Delta vault) x"
                  f"{last['shred_delta_vault']['median'] / first['shred_delta_vault']['median']:.2f}, shred (SQLite) x"
                  f"{last['shred_sqlite_vault']['median'] / first['shred_sqlite_vault']['median']:.2f}, physical x"
                  f"{last['physical']['median'] / first['physical']['median']:.2f}")
    print(f"peak RSS {peak_rss_mb():.0f} MB")
    write_results("bench_shred_erase", {"sizes": args.sizes, "repeats": args.repeats, "results": results,
                                        "peak_rss_mb": peak_rss_mb()})


if __name__ == "__main__":
    main()
