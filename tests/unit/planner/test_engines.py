"""Which engine runs each Iceberg step is decided at plan time from the workspace alone: Spark for a
table on a local folder, pyiceberg for one on object storage unless the Spark settings bring that
store's connector; ``iceberg.engine`` forces either. The plan names the engine on every Iceberg
step (and an Iceberg source's resolve), never on another format's; what pyiceberg cannot do
(equality deletes, Spark's Hadoop folder catalog) is refused before any plan exists."""

from __future__ import annotations

import json

import pytest
from lineage_builders import SOURCE, I, edge, graph_of, request, table

from piitracer.model.plan import Action, StepEngine
from piitracer.model.settings import IcebergSettings, SparkSettings
from piitracer.model.workspace import CatalogDataset, DeleteMode, Policy
from piitracer.planner.build import PlanningError, build_plan
from piitracer.planner.templates import EngineRefused
from piitracer.planner.templates.iceberg_engines import engine_for
from piitracer.render.plan_text import plan_tables

S3_TABLE = SOURCE.model_copy(update={"location": "s3://prod-lake/fintech/payments", "table": "prod.fintech.payments"})
AUTO, FORCE_SPARK, FORCE_PY = (IcebergSettings(engine=e) for e in ("auto", "spark", "pyiceberg"))


def entry(location: str, **kw) -> CatalogDataset:
    return CatalogDataset(format="iceberg", location=location, table=kw.pop("table", "prod.fintech.payments"), **kw)


@pytest.mark.parametrize("location, spark, expected", [
    ("warehouse/fintech/payments", SparkSettings(), StepEngine.SPARK),
    ("/lake/fintech/payments", SparkSettings(), StepEngine.SPARK),
    ("file:///lake/fintech/payments", SparkSettings(), StepEngine.SPARK),
    ("hdfs://nn/lake/payments", SparkSettings(), StepEngine.SPARK),  # pyspark's own Hadoop client reads HDFS
    ("s3://prod-lake/fintech/payments", SparkSettings(), StepEngine.PYICEBERG),
    ("s3a://prod-lake/fintech/payments", SparkSettings(), StepEngine.PYICEBERG),
    ("gs://prod-lake/fintech/payments", SparkSettings(), StepEngine.PYICEBERG),
    ("abfss://c@acct.dfs.core.windows.net/p", SparkSettings(), StepEngine.PYICEBERG),
    # A connector the workspace brings: a Maven coordinate, a jar, an Iceberg io-impl, a Hadoop fs impl.
    ("s3://prod-lake/fintech/payments", SparkSettings(packages=("org.apache.hadoop:hadoop-aws:3.3.4",)), StepEngine.SPARK),
    ("s3://prod-lake/fintech/payments", SparkSettings(conf={"spark.jars": "/jars/iceberg-aws-bundle-1.10.0.jar"}), StepEngine.SPARK),
    ("s3://prod-lake/fintech/payments", SparkSettings(conf={"spark.sql.catalog.prod.io-impl": "org.apache.iceberg.aws.s3.S3FileIO"}),
     StepEngine.SPARK),
    ("s3://prod-lake/fintech/payments", SparkSettings(conf={"spark.hadoop.fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem"}),
     StepEngine.SPARK),
    # Another store's connector does not reach this one; an unrelated setting naming the word neither.
    ("gs://prod-lake/fintech/payments", SparkSettings(packages=("org.apache.hadoop:hadoop-aws:3.3.4",)), StepEngine.PYICEBERG),
    ("s3://prod-lake/fintech/payments", SparkSettings(conf={"spark.app.name": "hadoop-aws"}), StepEngine.PYICEBERG),
])
def test_auto_runs_spark_where_it_reaches_the_files_and_pyiceberg_elsewhere(location, spark, expected) -> None:
    assert engine_for("fintech.payments", entry(location), AUTO, spark) is expected


def test_the_workspace_forces_either_engine() -> None:
    assert engine_for("d", entry("s3://lake/t"), FORCE_SPARK, SparkSettings()) is StepEngine.SPARK
    assert engine_for("d", entry("/lake/t"), FORCE_PY, SparkSettings()) is StepEngine.PYICEBERG


def test_what_pyiceberg_cannot_do_is_refused_with_the_reason() -> None:
    equality = entry("s3://lake/t", delete_mode="equality")
    with pytest.raises(EngineRefused, match="delete_mode 'equality' needs Spark .*pyiceberg 0.12 neither writes nor reads "
                                            "equality deletes.*on s3:// and the spark settings bring no s3 connector"):
        engine_for("d", equality, AUTO, SparkSettings())
    assert engine_for("d", equality, FORCE_SPARK, SparkSettings()) is StepEngine.SPARK
    with pytest.raises(EngineRefused, match="delete_mode 'equality' needs Spark.*iceberg.engine is 'pyiceberg'"):
        engine_for("d", entry("/lake/t", delete_mode="equality"), FORCE_PY, SparkSettings())
    with pytest.raises(EngineRefused, match="set 'table: <catalog>.<namespace>.<table>'"):
        engine_for("d", CatalogDataset(format="iceberg", location="s3://lake/t"), AUTO, SparkSettings())
    with pytest.raises(EngineRefused, match="Spark's Hadoop folder catalog 'lake', which pyiceberg cannot commit to"):
        engine_for("d", entry("s3://lake/t", table="lake.db.t"), AUTO, SparkSettings())
    hadoop = IcebergSettings(catalogs={"prod": {"type": "hadoop", "warehouse": "s3://lake"}})
    with pytest.raises(EngineRefused, match="Hadoop folder catalog 'prod'"):
        engine_for("d", entry("s3://lake/t"), hadoop, SparkSettings())


def plan_for(source: CatalogDataset, iceberg: IcebergSettings = AUTO, spark: SparkSettings = SparkSettings()):
    derived = table(location="s3://prod-lake/fintech/by_user", table="prod.fintech.by_user", columns=("user_id", "amount"))
    copy = table("delta", location="s3://prod-lake/delta/copy", columns=("user_id",))
    graph, catalog = graph_of(edge("src.pay.user_id", "fintech.by_user.user_id", I), edge("src.pay.user_id", "d.copy.user_id", I),
                              catalog={"src.pay": source, "fintech.by_user": derived, "d.copy": copy})
    return build_plan(graph, catalog, Policy(), request(), iceberg=iceberg, spark=spark)


def test_the_plan_names_the_engine_of_every_iceberg_step_and_only_those() -> None:
    plan = plan_for(S3_TABLE)
    engines = {(s.dataset, s.action): s.engine for s in plan.steps}
    assert engines[("src.pay", Action.RESOLVE)] is StepEngine.PYICEBERG
    assert {e for (d, a), e in engines.items() if d in ("src.pay", "fintech.by_user")} == {StepEngine.PYICEBERG}
    assert {e for (d, a), e in engines.items() if d == "d.copy"} == {None}
    steps = json.loads(plan.to_json())["steps"]
    assert all(("engine" in s) == (s["dataset"] != "d.copy") for s in steps)
    # pyiceberg's rewrite of data files carrying delete files takes only those that may hold a subject.
    rewrite = next(s for s in plan.steps if s.dataset == "src.pay" and s.action is Action.REWRITE_DATA_FILES)
    assert rewrite.key_column == "user_id" and [v.name for v in rewrite.values_from] == ["src.pay.user_id"]
    shown = "\n".join(line for line in _text(plan).splitlines() if "rewrite_manifests" in line)
    assert "pyiceberg" in shown
    local = plan_for(SOURCE.model_copy(update={"table": "lake.src.pay"}))
    assert {s.engine for s in local.steps if s.dataset == "src.pay"} == {StepEngine.SPARK}
    spark_rewrite = next(s for s in local.steps if s.dataset == "src.pay" and s.action is Action.REWRITE_DATA_FILES)
    assert spark_rewrite.key_column is None and spark_rewrite.values_from == ()
    with_connector = plan_for(S3_TABLE, spark=SparkSettings(packages=("org.apache.hadoop:hadoop-aws:3.3.4",)))
    assert {s.engine for s in with_connector.steps if s.dataset == "src.pay"} == {StepEngine.SPARK}


def test_planning_is_refused_when_pyiceberg_would_run_what_it_cannot() -> None:
    with pytest.raises(PlanningError, match="dataset src.pay: delete_mode 'equality' needs Spark"):
        plan_for(S3_TABLE.model_copy(update={"delete_mode": DeleteMode.EQUALITY}))
    assert plan_for(S3_TABLE, iceberg=FORCE_SPARK).steps  # forced to Spark: planned (Spark must then reach it)


def _text(plan) -> str:
    from rich.console import Console

    console = Console(width=400, record=True, file=open("/dev/null", "w"))
    console.print(plan_tables(plan))
    return console.export_text()
