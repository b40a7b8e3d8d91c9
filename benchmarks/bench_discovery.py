"""Catalog discovery at scale: ``catalog discover`` and ``catalog classify`` over a lakehouse of
``--tables`` tables (half Iceberg written by pyiceberg, half Delta written by delta-rs, a few rows
each), against a baseline measured in the same run: a bare listing of every file under the root
(the storage layer's walk, which discovery cannot avoid).

    .venv/bin/python benchmarks/bench_discovery.py [--tables 2000] [--sample 20]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import peak_rss_mb, print_table, timed, write_results  # noqa: E402

ROWS = pa.table({"user_id": pa.array([7_000_000_001, 7_000_000_002], pa.int64()),
                 "email": ["a@example.in", "b@example.in"], "amount": [1.5, 2.5]})


def generate(root: Path, tables: int) -> None:
    from deltalake import write_deltalake
    from pyiceberg.catalog.sql import SqlCatalog

    warehouse = root / "warehouse"
    warehouse.mkdir(parents=True)
    catalog = SqlCatalog("lake", uri=f"sqlite:///{root}/catalog.db", warehouse=str(warehouse))
    for namespace in range(10):
        catalog.create_namespace(f"ns{namespace}")
    for number in range(tables // 2):
        table = catalog.create_table(f"ns{number % 10}.t{number:05d}", schema=ROWS.schema, properties={
            "write.delete.mode": "merge-on-read", "history.expire.max-snapshot-age-ms": "432000000"})
        table.append(ROWS)
        write_deltalake(str(root / "delta" / f"ns{number % 10}" / f"d{number:05d}"), ROWS,
                        configuration={"delta.deletedFileRetentionDuration": "interval 7 days"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=2000)
    parser.add_argument("--sample", type=int, default=20)
    args = parser.parse_args()

    import yaml

    import piitracer
    from piitracer.api import classify_catalog, discover_catalog
    from piitracer.storage.locations import Location
    from piitracer.storage.store import Store

    base = Path(tempfile.mkdtemp(prefix="bench-discovery-"))
    try:
        seconds, _ = timed(lambda: generate(base, args.tables))
        print(f"generated {args.tables} tables in {seconds:.0f} s")
        (base / "piitracer.yaml").write_text(yaml.safe_dump({"version": 1, "spark": {"warehouse": "warehouse"}}))
        workspace = piitracer.load_workspace(base)
        listing, files = timed(lambda: Store().list_files(Location.parse(base)))
        discovering, discovery = timed(lambda: discover_catalog(workspace))
        classifying, classified = timed(lambda: classify_catalog(workspace, args.sample))
        assert len(discovery.tables) == args.tables and not discovery.unreadable_roots
        assert not [t for t in discovery.tables if t.problems]
        emails = sum(1 for v in classified.verdicts if v.column == "email" and v.kind == "email")
        assert emails == args.tables, emails  # every table's email column, by name and by values
        rows = [["bare listing of every file", listing, len(files) / listing, 1.0],
                ["catalog discover", discovering, args.tables / discovering, discovering / listing],
                [f"catalog classify (--sample {args.sample})", classifying, args.tables / classifying, classifying / listing]]
        print_table(f"{args.tables} tables ({len(files)} files)", ["what", "seconds", "per second", "x bare listing"], rows)
        print(f"peak RSS {peak_rss_mb():.0f} MB")
        write_results("bench_discovery", {"tables": args.tables, "files": len(files), "listing_s": listing,
                                          "discover_s": discovering, "classify_s": classifying, "peak_rss_mb": peak_rss_mb()})
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
