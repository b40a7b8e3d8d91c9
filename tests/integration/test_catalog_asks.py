"""Each catalog asked once, each table loaded once per use case (issue 51): the seed scene's tables
(``fintech.payments`` with a tag, and the derived ``fintech.payments_by_user``) in a catalog that
counts what it is asked (``tests/support/counting_catalog.py``: pyiceberg's own ``sql`` catalog,
loaded by piitracer through ``py-catalog-impl`` as any catalog is), erased through one session with
the pyiceberg engine, no ``location:`` in the workspace (the catalog places each table).

- ``plan`` loads each table once (its place and its stored schema both from that one load);
- ``verify`` loads each table once;
- ``execute`` loads each table once, and each step that removes files asks its table's catalog
  once more just before it removes anything: the files a snapshot references are decided from the
  table's state at that moment (a writer that committed since could reference a file the step
  would otherwise remove). Nothing else asks again;
- the catalog itself is made once for the whole session.

Before issue 51 the same lifecycle loaded each table dozens of times (benchmarks/RESULTS.md)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import yaml
from counting_catalog import CountingSqlCatalog
from people_keys import workspace_keys
from pyiceberg_lakehouse import CTAS, SUBJECT, SUBJECT_VALUES, checksum, create_derived, create_payments, others
from byte_scan import find_values

import piitracer
from piitracer.api.session import Session
from piitracer.executor.runner import ExecuteOptions
from piitracer.model.plan import Action, Subject

TABLES = ("fintech.payments", "fintech.payments_by_user")
REMOVES_FILES = (Action.EXPIRE_SNAPSHOTS, Action.REMOVE_ORPHAN_FILES)


def counting_workspace(tmp_path: Path):
    from pyiceberg.catalog import load_catalog

    properties = {"py-catalog-impl": "counting_catalog.CountingSqlCatalog", "uri": f"sqlite:///{tmp_path}/catalog.db",
                  "warehouse": f"file://{tmp_path}/warehouse"}
    catalog = load_catalog("cnt", **properties)
    create_derived(catalog, create_payments(catalog))
    root = tmp_path / "ws"
    (root / "sql").mkdir(parents=True)
    (root / "sql" / "lineage.sql").write_text(CTAS)
    config = {
        "version": 1, "warehouse_roots": [str(tmp_path / "warehouse")],
        "lineage": {"sql": [{"path": "sql/lineage.sql", "dialect": "spark"}]},
        "iceberg": {"engine": "pyiceberg", "catalogs": {"cnt": properties}},
        "catalog": {
            "fintech.payments": {"format": "iceberg", "table": "cnt.fintech.payments", "subject_key": "user_id",
                                 "identifiers": ["user_id", "pan", "phone", "aadhaar_ref"]},
            "fintech.payments_by_user": {"format": "iceberg", "table": "cnt.fintech.payments_by_user"},
        },
    }
    (root / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return piitracer.load_workspace(root), catalog


def asked() -> Counter:
    loads = Counter({name: count for name, count in CountingSqlCatalog.loads.items() if count})
    CountingSqlCatalog.loads = Counter()
    return loads


def test_one_session_asks_each_catalog_once_and_loads_each_table_once_per_use_case(tmp_path: Path) -> None:
    workspace, catalog = counting_workspace(tmp_path)
    kept = {name: checksum(others(catalog.load_table(name).scan().to_arrow())) for name in TABLES}
    CountingSqlCatalog.reset()
    subjects = [Subject(value=str(SUBJECT["user_id"]), request_id="dsr-1", received_at="2026-11-20T09:00:00Z")]
    with Session(workspace, workspace_keys(tmp_path / "keys")) as session:
        plan = session.plan(["fintech.payments.user_id"], subjects, keep=True).plan
        assert asked() == Counter(dict.fromkeys(TABLES, 1))
        assert {s.dataset for s in plan.steps} == set(TABLES) and {s.engine.value for s in plan.steps if s.engine} == {"pyiceberg"}

        summary = session.execute(plan, ExecuteOptions(no_concurrent_writers=True))
        assert summary.status == "complete"
        removing = Counter(s.dataset for s in plan.steps if s.action in REMOVES_FILES)
        assert asked() == Counter({name: 1 + removing[name] for name in TABLES})

        report = session.verify(plan).report
        assert {d.dataset: d.state.value for d in report.datasets} == dict.fromkeys(TABLES, "erased")
        assert asked() == Counter(dict.fromkeys(TABLES, 1))
    assert CountingSqlCatalog.made == 1

    for name in TABLES:  # the test is of an erasure that happened: the subject gone, the others kept
        rows = catalog.load_table(name).scan().to_arrow()
        assert SUBJECT["user_id"] not in rows["user_id"].to_pylist() and checksum(rows) == kept[name]
    assert find_values(tmp_path / "warehouse", SUBJECT_VALUES) == []
