"""Before the first step, the preflight checks a dataset the way the engine its steps name will
reach it: Spark's catalog path for Spark, the pyiceberg catalog's table at the catalogued location
for pyiceberg (Spark's checks would refuse a catalog table Spark is not given, and are not what
pyiceberg changes); a plan whose steps name an engine their format does not run on, or two engines
for one dataset, is refused as altered."""

from __future__ import annotations

from pathlib import Path

import pytest
from lineage_builders import A, edge
from pyiceberg_lakehouse import LocalLake

from piitracer.executor.preflight import PlanRefused, preflight
from piitracer.graph.lineage_graph import LineageGraph
from piitracer.model.lineage import LineageBatch
from piitracer.model.plan import Action, PlanRequest, StepEngine, Subject
from piitracer.model.settings import IcebergSettings, SparkSettings
from piitracer.model.workspace import CatalogDataset, Policy
from piitracer.planner.build import build_plan
from piitracer.storage.locations import Location
from piitracer.storage.store import Store
from lineage_builders import RECEIVED, col


@pytest.fixture
def lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalLake:
    import os

    for key in list(os.environ):
        if key.upper().startswith("PYICEBERG_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))
    return LocalLake(tmp_path / "lake")


def plan_and_context(lake: LocalLake, engine: str):
    source = lake.entry.model_copy(update={"identifiers": ("user_id", "pan"), "subject_key": "user_id",
                                           "column_types": {"user_id": "bigint"}})
    catalog = {"fintech.payments": source, "x.y": CatalogDataset(format="iceberg", location="nowhere")}
    batch = LineageBatch(column_edges=(edge("fintech.payments.amount", "x.y.total", A),))
    request = PlanRequest(sources=(col("fintech.payments.user_id"),),
                          subjects=(Subject(value="7000000001", request_id="r1", received_at=RECEIVED),))
    plan = build_plan(LineageGraph.build(batch, catalog), catalog, Policy(), request,
                      iceberg=IcebergSettings(engine=engine), spark=SparkSettings())
    return plan, catalog, {"fintech.payments": lake.location}


def check(lake: LocalLake, plan, catalog, locations, store: Store | None = None):
    return preflight(plan, catalog, locations, SparkSettings(), lake.folder / "spark-warehouse", lake.roots,
                     store or lake.store)


def test_a_pyiceberg_plan_is_checked_through_its_catalog_not_spark(lake: LocalLake) -> None:
    plan, catalog, locations = plan_and_context(lake, "pyiceberg")
    assert {s.engine for s in plan.steps if s.dataset == "fintech.payments"} == {StepEngine.PYICEBERG}
    assert check(lake, plan, catalog, locations).key_types[("fintech.payments", "user_id")] == "bigint"
    with pytest.raises(PlanRefused, match="no configured pyiceberg catalog keeps it"):
        check(lake, plan, catalog, locations, Store())
    spark_plan, _, _ = plan_and_context(lake, "spark")  # Spark's check: by Spark's catalogs
    with pytest.raises(PlanRefused, match="is not in the configured Spark catalog 'lake'"):
        check(lake, spark_plan, catalog, locations, Store())


def test_a_catalog_table_elsewhere_is_refused_before_the_first_step(lake: LocalLake) -> None:
    plan, catalog, locations = plan_and_context(lake, "pyiceberg")
    copy = Path(lake.location.uri).parent / "payments_copy"
    copy.mkdir()
    moved = catalog["fintech.payments"].model_copy(update={"location": str(copy)})
    catalog = {**catalog, "fintech.payments": moved}
    plan = plan.model_copy(update={"datasets": tuple(d.model_copy(update={"location": str(copy)})
                                                     if d.dataset == "fintech.payments" else d for d in plan.datasets)})
    store = Store(pointers=type(lake.store.pointers)(lake.store.pointers.settings,
                                                    {Location.parse(copy): "prod.fintech.payments"}))
    with pytest.raises(PlanRefused, match="its catalog keeps (it|the table) at .*payments, (the workspace catalogues it|not) at"):
        check(lake, plan, catalog, {"fintech.payments": Location.parse(copy)}, store)


def test_an_altered_engine_is_refused(lake: LocalLake) -> None:
    plan, catalog, locations = plan_and_context(lake, "pyiceberg")
    steps = list(plan.steps)
    expire = next(i for i, s in enumerate(steps) if s.action is Action.EXPIRE_SNAPSHOTS)
    steps[expire] = steps[expire].model_copy(update={"engine": StepEngine.SPARK})
    with pytest.raises(PlanRefused, match="dataset fintech.payments: its steps name engines pyiceberg, spark"):
        check(lake, plan.model_copy(update={"steps": tuple(steps)}), catalog, locations)
