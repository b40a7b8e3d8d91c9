"""How often one session asks the Iceberg catalog, per use case (issue 51): the seed scene's two
tables in a catalog that counts (``tests/support/counting_catalog.py``: pyiceberg's ``sql`` catalog
loaded through ``py-catalog-impl``), erased through one ``piitracer.open`` session with the pyiceberg
engine, no ``location:`` in the workspace. Counted: catalogs made, tables loaded (per use case and
table), commits (the ``sql`` catalog reads the table inside a commit: counted with the commit).
On a Glue or REST catalog each load is a network round trip.

With ``--compare DIR`` the same session runs from another checkout (``git worktree add DIR
<commit>``), e.g. the code before a change, beside this one. Counts, not times: one run each.

Usage: .venv/bin/python benchmarks/bench_catalog_asks.py [--compare DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import print_table, write_results

REPO = Path(__file__).resolve().parents[1]
TABLES = ("fintech.payments", "fintech.payments_by_user")


def count_one_session(folder: Path) -> dict:
    """The child: build the scene, run plan, execute and verify in one session, count each."""
    sys.path[:0] = [str(REPO / "tests" / "support"), str(REPO / "tests" / "integration")]
    from counting_catalog import CountingSqlCatalog
    from people_keys import workspace_keys
    from pyiceberg_lakehouse import SUBJECT
    from test_catalog_asks import counting_workspace

    from piitracer.api.session import Session
    from piitracer.executor.runner import ExecuteOptions
    from piitracer.model.plan import Subject

    workspace, _ = counting_workspace(folder)
    CountingSqlCatalog.reset()
    figures: dict[str, dict] = {}

    def counted(use_case: str) -> None:
        figures[use_case] = {"loads": dict(CountingSqlCatalog.loads), "commits": dict(CountingSqlCatalog.commits)}
        CountingSqlCatalog.loads.clear()
        CountingSqlCatalog.commits.clear()

    subjects = [Subject(value=str(SUBJECT["user_id"]), request_id="dsr-1", received_at="2026-11-20T09:00:00Z")]
    with Session(workspace, workspace_keys(folder / "keys")) as session:
        plan = session.plan(["fintech.payments.user_id"], subjects, keep=True).plan
        counted("plan")
        session.execute(plan, ExecuteOptions(no_concurrent_writers=True))
        counted("execute")
        session.verify(plan)
        counted("verify")
    figures["catalogs made"] = CountingSqlCatalog.made
    return figures


def run_checkout(checkout: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="catalog-asks-") as folder:
        done = subprocess.run([sys.executable, __file__, "--child", folder], capture_output=True, text=True, timeout=900,
                              env={**os.environ, "PYTHONPATH": str(checkout)}, cwd=checkout)
    if done.returncode:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", type=Path, help="another checkout of piitracer, counted in the same run")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(count_one_session(args.child)))
        return
    checkouts = {"this checkout": REPO, **({f"at {args.compare.name}": args.compare.resolve()} if args.compare else {})}
    found = {label: run_checkout(checkout) for label, checkout in checkouts.items()}
    rows = []
    for use_case in ("plan", "execute", "verify"):
        for table in TABLES:
            rows.append([use_case, table] + [f"{found[label][use_case]['loads'].get(table, 0)} loads, "
                                             f"{found[label][use_case]['commits'].get(table, 0)} commits" for label in checkouts])
    rows.append(["the session", "catalogs made"] + [str(found[label]["catalogs made"]) for label in checkouts])
    print_table("Catalog asks of one session (plan, execute, verify)", ["use case", "table", *checkouts], rows)
    write_results("catalog_asks", {"counts": found})


if __name__ == "__main__":
    main()
