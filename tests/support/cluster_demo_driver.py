"""The driver program of the cluster test (tests/integration/test_spark_cluster.py), run in its own process
because a process has one Spark session and the test session's is local.

    python cluster_demo_driver.py erase  FOLDER MASTER OUT   # build the demo on MASTER, erase user 8841302
    python cluster_demo_driver.py plant  FOLDER MASTER OUT   # put leftovers back, verify in driver and in tasks

``erase`` copies the demo workspace into FOLDER with ``spark.master: MASTER``, builds the small demo
lakehouse (Iceberg MoR and CoW, Delta, plain Parquet, an archive) on the cluster, writes every
dataset's rows to OUT/before, runs the demo's plan (execute, verify, audit; person steps left open,
the request left open so its values can be read back), writes the rows again to OUT/after, the
resolved value sets to OUT/forms.json and the outcome to OUT/erase.json.

``lose-worker`` verifies in Spark tasks again while the test kills a worker, and
``lose-worker-rewriting`` rewrites risk.card_usage in Spark tasks while the test kills another
(see the tests).

``plant`` inserts one of the subject's rows (saved before the erasure) back into prod.payments
through Spark (a one-row data file: its footer statistics and its manifest's bounds hold the
values), writes the same row as a one-row Parquet file into risk.card_usage's folder, and verifies
the plan twice, decoding in the driver and in Spark tasks, writing both reports to OUT/plant.json.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def use_master(folder: Path, master: str) -> Path:
    from piitracer.demo.workspace_files import prepare_workspace

    root = prepare_workspace(folder)
    config = root / "piitracer.yaml"
    text = config.read_text()
    assert "  master: local[2]\n" in text, "the demo workspace no longer says master: local[2]"
    # The executors are short JVMs on small tables, like the tests' drivers (tests/conftest.py):
    # the C1 compiler alone and the serial collector spend less of the 2 shared cores warming up.
    executors = ('  conf:\n    spark.executor.extraJavaOptions: "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"\n'
                 if "-XX:TieredStopAtLevel=1" in os.environ.get("SPARK_SUBMIT_OPTS", "") else "")
    # Plain Parquet and archive rewrites as Spark tasks too, whatever their size.
    config.write_text(text.replace("  master: local[2]\n", f"  master: {master}\n{executors}")
                      + "\nrewrite:\n  engine: spark\n")
    return root


def rows_of(workspace, dataset: str, spark) -> pa.Table | None:
    from deltalake import DeltaTable

    from piitracer.model.workspace import DatasetFormat

    entry, location = workspace.config.catalog[dataset], workspace.location_of(dataset)
    if location is None or not entry.format.stores_rows:
        return None
    if entry.format is DatasetFormat.ICEBERG:
        return pa.Table.from_pandas(spark.table(entry.table).toPandas(), preserve_index=False)
    if entry.format is DatasetFormat.DELTA:
        return DeltaTable(str(location)).to_pyarrow_table()
    return pq.ParquetDataset(sorted(str(p) for p in Path(location).rglob("*.parquet"))).read()


def save_rows(workspace, spark, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for dataset in workspace.config.catalog:
        table = rows_of(workspace, dataset, spark)
        if table is not None:
            pq.write_table(table, folder / f"{dataset}.parquet")


def erase(folder: Path, master: str, out: Path) -> None:
    import piitracer
    from piitracer.api import demo_master_key, execution_context, plan_requests, request_store, run_demo
    from piitracer.crypto.envelope import load_master_key
    from piitracer.demo import SUBJECT_USER_ID, build_lakehouse
    from piitracer.executor.journal import Journal
    from piitracer.executor.spark_session import spark_session

    root = use_master(folder, master)
    workspace = piitracer.load_workspace(root)
    build_lakehouse(workspace, rows=3000)
    spark = spark_session(workspace.config.spark, workspace.resolve(workspace.config.spark.warehouse))
    subject_rows = spark.table("lake.prod.payments").where(f"user_id = {SUBJECT_USER_ID}").limit(1)
    subject_rows.write.mode("overwrite").parquet(str(out / "subject_row"))
    save_rows(workspace, spark, out / "before")
    result = run_demo(root, attest=False, close=False)
    with request_store(workspace, load_master_key(demo_master_key(root))) as store:
        journal = Journal(execution_context(workspace).journal_path)
        try:
            forms = journal.load_values(result.plan.plan_id, store.cipher(plan_requests(result.plan)))
        finally:
            journal.close()
    save_rows(workspace, spark, out / "after")
    (out / "forms.json").write_text(json.dumps(forms, default=str))
    (out / "erase.json").write_text(json.dumps({
        "master": spark.sparkContext.master,
        "steps": {r.step.id: [r.step.dataset, r.step.action.value, r.state] for r in result.run.results},
        "ran_in": {r.step.id: r.outcome.details.get("ran_in") for r in result.run.results if r.outcome},
        "erased": [d.dataset for d in result.plan.datasets if d.status.value == "erase"],
        "verification": {d.dataset: d.state.value for d in result.verification.datasets},
        "audit_intact": result.audit_intact,
        "plan": str(result.plan_path),
    }))


def plant(folder: Path, master: str, out: Path) -> None:
    import piitracer
    from piitracer.api import demo_master_key, load_plan, plan_requests, request_store, verify_plan
    from piitracer.crypto.envelope import load_master_key
    from piitracer.executor.spark_session import spark_session
    from piitracer.model.settings import TaskEngine
    from piitracer.verify.engines import JOB_GROUP

    workspace = piitracer.load_workspace(folder)
    spark = spark_session(workspace.config.spark, workspace.resolve(workspace.config.spark.warehouse))
    row = spark.read.parquet(str(out / "subject_row"))
    row.coalesce(1).writeTo("lake.prod.payments").append()
    card_usage = pq.read_table(next(Path(workspace.location_of("risk.card_usage")).rglob("*.parquet")))
    # One of the table's own rows with the subject's values in the columns both tables have (pan).
    planted = card_usage.slice(0, 1).to_pylist()[0] | {k: v for k, v in row.first().asDict().items()
                                                        if k in card_usage.column_names}
    pq.write_table(pa.Table.from_pylist([planted], schema=card_usage.schema),
                   Path(workspace.location_of("risk.card_usage")) / "planted-leftover.parquet")
    reports = {}
    with request_store(workspace, load_master_key(demo_master_key(folder))) as store:
        plan = load_plan(folder / "plan.json", store.cipher)
        cipher = store.cipher(plan_requests(plan))
        for engine in (TaskEngine.DRIVER, TaskEngine.SPARK):
            report = verify_plan(workspace, plan, cipher=cipher, engine=engine, sweep="catalog")
            reports[engine.value] = json.loads(report.model_dump_json(exclude={"checked_at"}))
            jobs = spark.sparkContext.statusTracker().getJobIdsForGroup(JOB_GROUP)
            reports[f"{engine.value} decoding jobs"] = len(jobs)
    (out / "plant.json").write_text(json.dumps(reports))


def lose_worker(folder: Path, master: str, out: Path) -> None:
    """Verify in Spark tasks while the test kills the worker running the task that decodes the
    planted file (held at the ``verify.task`` pausepoint, see failpoints.py) and its executor."""
    import piitracer
    from piitracer.api import demo_master_key, load_plan, plan_requests, request_store, verify_plan
    from piitracer.crypto.envelope import load_master_key
    from piitracer.executor.spark_session import spark_session
    from piitracer.model.settings import TaskEngine
    from piitracer.storage.failpoints import PAUSE_DIR_ENV, PAUSE_ENV

    workspace = piitracer.load_workspace(folder)
    held = {f"spark.executorEnv.{PAUSE_ENV}": "verify.task@planted-leftover.parquet",
            f"spark.executorEnv.{PAUSE_DIR_ENV}": str(out / "pause")}
    settings = workspace.config.spark.model_copy(update={"conf": {**workspace.config.spark.conf, **held}})
    spark_session(settings, workspace.resolve(settings.warehouse))  # verify_plan reuses this session
    with request_store(workspace, load_master_key(demo_master_key(folder))) as store:
        plan = load_plan(folder / "plan.json", store.cipher)
        report = verify_plan(workspace, plan, cipher=store.cipher(plan_requests(plan)), engine=TaskEngine.SPARK,
                             sweep="catalog")
    (out / "lost_worker.json").write_text(report.model_dump_json(exclude={"checked_at"}))


def lose_worker_rewriting(folder: Path, master: str, out: Path) -> None:
    """Rewrite risk.card_usage's files (the planted file holds the subject again) in Spark tasks
    while the test kills the worker whose task has written its replacement but not yet put it in
    place (held at the ``parquet.after_temp_write`` pausepoint)."""
    import piitracer
    from piitracer.api import demo_master_key, execution_context, load_plan, plan_requests, request_store
    from piitracer.crypto.envelope import load_master_key
    from piitracer.executor.journal import Journal
    from piitracer.executor.spark_session import spark_session
    from piitracer.formats.parquet import rewrite_files
    from piitracer.storage.failpoints import PAUSE_DIR_ENV, PAUSE_ENV
    from piitracer.storage.file_tasks import SparkFileTasks

    workspace = piitracer.load_workspace(folder)
    held = {f"spark.executorEnv.{PAUSE_ENV}": "parquet.after_temp_write@card_usage",
            f"spark.executorEnv.{PAUSE_DIR_ENV}": str(out / "pause-rewrite")}
    settings = workspace.config.spark.model_copy(update={"conf": {**workspace.config.spark.conf, **held}})
    spark = spark_session(settings, workspace.resolve(settings.warehouse))
    with request_store(workspace, load_master_key(demo_master_key(folder))) as store:
        plan = load_plan(folder / "plan.json", store.cipher)
        journal = Journal(execution_context(workspace).journal_path)
        try:
            values = journal.load_values(plan.plan_id, store.cipher(plan_requests(plan)))
        finally:
            journal.close()
    step = next(s for s in plan.steps if s.dataset == "risk.card_usage" and s.action.value == "rewrite_files")
    subjects = sorted({v for found in step.values_from for v in values.get(found.name, [])}, key=str)
    context = execution_context(workspace)
    outcome = rewrite_files(context.locations["risk.card_usage"], context.store,
                            step.key_column, subjects, tasks_for=lambda files, size: SparkFileTasks(lambda: spark.sparkContext))
    (out / "rewrite.json").write_text(json.dumps({"rows_deleted": outcome.rows_deleted, "files": outcome.files_rewritten,
                                                  "ran_in": outcome.details["ran_in"], "key": step.key_column,
                                                  "values": [str(v) for v in subjects]}))


if __name__ == "__main__":
    phase, folder, master, out = sys.argv[1], Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
    out.mkdir(parents=True, exist_ok=True)
    {"erase": erase, "plant": plant, "lose-worker": lose_worker, "lose-worker-rewriting": lose_worker_rewriting}[phase](
        folder, master, out)
