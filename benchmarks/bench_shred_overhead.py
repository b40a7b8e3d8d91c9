"""What crypto-shredding costs a pipeline's write (issue 42 point 2): a Delta table of N rows
written by delta-rs with its personal columns in plaintext, against the same rows with those
columns encrypted under each row's subject key (piitracer.shred.cipher: e-mail by AES-SIV as a join
key, phone and name by AES-GCM), in the same run. The encrypted write goes the way a Spark task
does: Arrow batches of 10,000 rows (Spark's ``arrow.maxRecordsPerBatch``), the keys of each
batch's subjects fetched from the key vault (SQLite) in one call, the batch encrypted, then the
same delta-rs write. The first encrypted run creates the subjects' keys (a pipeline's first day);
the later runs find them (every day after).

    .venv/bin/python benchmarks/bench_shred_overhead.py [--rows 1000000] [--subjects 100000] [--batch 10000] [--repeats 3]

Prints the time of each phase (key fetch, encryption, write), the ratio encrypted / plaintext
(medians of ``--repeats``) and the bytes written; one process, one core's worth of Python.
"""

from __future__ import annotations

import argparse
import random
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import peak_rss_mb, print_table, write_results  # noqa: E402


def table(rows: int, subjects: int, seed: int = 42):
    """N rows of a contacts table: ``row`` (an id), ``user_id`` (the subject key), e-mail, phone, name, amount."""
    import pyarrow as pa

    rng = random.Random(seed)
    users = [rng.randrange(subjects) for _ in range(rows)]
    return pa.table({
        "row": pa.array(range(rows), pa.int64()),
        "user_id": pa.array(users, pa.int64()),
        "email": pa.array([f"user{u}@example.org" for u in users], pa.string()),
        "phone": pa.array([f"+44 7700 {u % 1000000:06d}" for u in users], pa.string()),
        "name": pa.array([f"Person {u} Surname{u % 977}" for u in users], pa.string()),
        "amount": pa.array([rng.randrange(100000) for _ in range(rows)], pa.int64()),
    })


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def write_plain(data, where: Path) -> dict[str, float]:
    from deltalake import write_deltalake

    started, cpu = time.perf_counter(), time.process_time()
    write_deltalake(str(where), data)
    return {"total": time.perf_counter() - started, "cpu": time.process_time() - cpu}


def write_encrypted(data, where: Path, vault, spec, batch_rows: int) -> dict[str, float]:
    import pyarrow as pa
    import pyarrow.compute as pc
    from deltalake import write_deltalake

    from piitracer.shred.cipher import encrypt_array

    fetch = encrypt = 0.0
    started, cpu = time.perf_counter(), time.process_time()
    batches = []
    for batch in data.to_batches(max_chunksize=batch_rows):
        # encrypt_batch's steps, timed apart: the batch's keys in one vault call, then the columns.
        t0 = time.perf_counter()
        subjects = batch.column(spec.key)
        keys = vault.keys_for(pc.unique(subjects).to_pylist())
        t1 = time.perf_counter()
        arrays = {name: encrypt_array(batch.column(name), subjects, keys, name in spec.deterministic, spec.context, name)
                  for name in spec.columns}
        fields = [field.with_type(arrays[field.name].type) if field.name in arrays else field for field in batch.schema]
        batches.append(pa.RecordBatch.from_arrays([arrays.get(f.name, batch.column(f.name)) for f in batch.schema],
                                                  schema=pa.schema(fields)))
        t2 = time.perf_counter()
        fetch, encrypt = fetch + t1 - t0, encrypt + t2 - t1
    before_write = time.perf_counter()
    write_deltalake(str(where), pa.Table.from_batches(batches))
    done = time.perf_counter()
    return {"total": done - started, "keys": fetch, "encrypt": encrypt, "write": done - before_write,
            "cpu": time.process_time() - cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--subjects", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=10_000, help="rows per Arrow batch (Spark's default)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from piitracer.crypto.envelope import MasterKey
    from piitracer.shred.cipher import ShredColumns, decrypt_batch
    from piitracer.shred.vault import sqlite_vault

    data = table(args.rows, args.subjects)
    spec = ShredColumns(key="user_id", deterministic=("email",), randomised=("phone", "name"))
    scratch = Path(tempfile.mkdtemp(prefix="bench-shred-"))
    try:
        vault = sqlite_vault(scratch / "vault.sqlite", MasterKey(secrets.token_hex(32).encode(), "benchmark"))
        plain_runs, cold, warm = [], None, []
        sizes = {}
        for run in range(args.repeats + 1):
            target = scratch / f"plain-{run}"
            plain_runs.append(write_plain(data, target))
            sizes["plain"] = folder_bytes(target)
            shutil.rmtree(target)
            target = scratch / f"encrypted-{run}"
            figures = write_encrypted(data, target, vault, spec, args.batch)
            sizes["encrypted"] = folder_bytes(target)
            if run == 0:
                cold = figures  # the subjects' keys created
            else:
                warm.append(figures)
            if run == args.repeats:  # the last table read back and decrypted: the benchmark wrote what it says
                from deltalake import DeltaTable

                stored = DeltaTable(str(target)).to_pyarrow_table().sort_by("row").slice(0, 1000)
                back = decrypt_batch(stored, vault, spec)
                assert back.to_pydict()["email"] == data.slice(0, 1000).column("email").to_pylist()
            shutil.rmtree(target)
        keys_held = vault.backend.count()
        vault.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    # The first plaintext write warms the process, like the first encrypted one.
    plain = statistics.median(run["total"] for run in plain_runs[1:])
    plain_cpu = statistics.median(run["cpu"] for run in plain_runs[1:])
    median = {part: statistics.median(run[part] for run in warm) for part in ("total", "keys", "encrypt", "write", "cpu")}
    print(f"{args.rows:,} rows, {args.subjects:,} subjects ({keys_held:,} keys in the vault), batches of {args.batch:,}; "
          f"3 columns encrypted (email AES-SIV; phone, name AES-GCM); medians of {args.repeats}")
    # CPU seconds beside wall: on a shared machine the wall clock measures the neighbours too
    # (delta-rs writes on several threads, so its CPU may exceed its wall).
    rows = [["plaintext write (delta-rs)", "", "", plain, plain, 1.0, plain_cpu, 1.0],
            ["encrypted, keys created (first run)", cold["keys"], cold["encrypt"], cold["write"], cold["total"],
             cold["total"] / plain, cold["cpu"], cold["cpu"] / plain_cpu],
            ["encrypted, keys found", median["keys"], median["encrypt"], median["write"], median["total"],
             median["total"] / plain, median["cpu"], median["cpu"] / plain_cpu]]
    print_table("seconds (wall, then CPU)", ["write", "keys", "encrypt", "write", "total", "x plaintext", "CPU",
                                             "CPU x plaintext"], rows)
    per_value = median["encrypt"] / (args.rows * len(spec.columns)) * 1e6
    print(f"encryption {per_value:.2f} µs per value; table {sizes['plain'] / 1e6:.1f} MB plaintext, "
          f"{sizes['encrypted'] / 1e6:.1f} MB encrypted ({sizes['encrypted'] / sizes['plain']:.2f}x); "
          f"peak RSS {peak_rss_mb():.0f} MB")
    write_results("bench_shred_overhead", {
        "rows": args.rows, "subjects": args.subjects, "batch": args.batch, "repeats": args.repeats,
        "plaintext_seconds": plain_runs, "cold": cold, "warm": warm, "median": median,
        "ratio_cold": cold["total"] / plain, "ratio_warm": median["total"] / plain,
        "cpu_ratio_cold": cold["cpu"] / plain_cpu, "cpu_ratio_warm": median["cpu"] / plain_cpu,
        "microseconds_per_value": per_value, "bytes": sizes, "peak_rss_mb": peak_rss_mb(),
    })


if __name__ == "__main__":
    main()
