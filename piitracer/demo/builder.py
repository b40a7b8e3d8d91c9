"""Builds the demo lakehouse of a workspace (``lineage_fixtures/``) on local Spark, once.

Two daily loads, as a real lakehouse would have seen them: the first load of ``prod.payments``
(every date but the latest) and a run of every pipeline, then the latest date and a second run. So
derived tables have an older snapshot/version holding the subject too (something for the erasure
to expire or vacuum). Append-only statements (``INSERT INTO``) run once, on the second load:
re-running them over the cumulative source would double their rows. After the loads: the dev
clones and the weekly archive exports. A marker file records a finished build; a later call reuses
it unless asked to rebuild."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from piitracer.demo import copies, event_jobs, synthetic
from piitracer.demo.arrow_bridge import ArrowBridge
from piitracer.demo.iceberg_tables import DemoBuildError, check_location, create_table, drop_table, quoted_table
from piitracer.demo.sql_pipelines import PipelineRunner, PipelineStatement, pipeline_statements
from piitracer.executor.spark_session import spark_session
from piitracer.formats.iceberg_catalogs import IcebergCatalogs
from piitracer.workspace.model import Workspace
from piitracer.model.table_properties import delta_properties
from piitracer.model.workspace import CatalogDataset, DatasetFormat
from piitracer.workspace.layout import StateLayout

DEFAULT_ROWS = 100_000
DEFAULT_SEED = 42
MARKER = StateLayout.relative("demo-lakehouse.json")
STAGING = StateLayout.relative("demo-staging")  # Arrow <-> Spark files while building
# A tag on the first load's snapshot of the source, as a finance close would keep one: it retains
# pre-delete files, so the plan rewrites it without the subjects' rows (rewrite_ref) before expiry.
SOURCE_TAG = "month_end_close"
PARTITIONED_BY_DATE = ("prod.payments", "dev.payments_shallow", "dev.payments_deep")
ARCHIVE_EXPORTS = 3
BUILD_SHUFFLE_PARTITIONS = 2  # weekly exports kept in the archive folder


@dataclass
class DemoBuild:
    """What :func:`build_lakehouse` found or made."""

    reused: bool
    rows: int
    seed: int
    anchor: str  # the latest payment date (ISO)
    built_at: str
    seconds: float = 0.0
    written: dict[str, str] = field(default_factory=dict)  # dataset -> how it was written
    skipped: dict[str, str] = field(default_factory=dict)  # dataset -> why nothing was written


def marker_path(workspace: Workspace) -> Path:
    return workspace.root / MARKER


def lakehouse_present(workspace: Workspace) -> bool:
    """A finished build is there: its marker, and a folder at every catalogued location."""
    if not marker_path(workspace).is_file():
        return False
    for dataset, entry in workspace.config.catalog.items():
        location = workspace.location_of(dataset)
        if location is not None and entry.format not in (DatasetFormat.VIEW, DatasetFormat.EXTERNAL) and not location.is_dir():
            return False
    return True


def build_lakehouse(workspace: Workspace, rows: int = DEFAULT_ROWS, seed: int = DEFAULT_SEED, rebuild: bool = False,
                    anchor: date | None = None, progress: Callable[[str], None] | None = None) -> DemoBuild:
    """Build the workspace's demo lakehouse unless a finished build is there (``rebuild`` starts over).

    ``rows`` payments over 8 weekly dates ending at ``anchor`` (default: yesterday, so the
    pipelines' ``current_date()`` windows hold rows). Returns what was built or reused."""
    started = time.monotonic()
    say = progress or (lambda message: None)
    marker = marker_path(workspace)
    if not rebuild and lakehouse_present(workspace):
        recorded = json.loads(marker.read_text(encoding="utf-8"))
        say(f"reusing the demo lakehouse built at {recorded['built_at']} ({recorded['rows']:,} payments)")
        return DemoBuild(reused=True, **{k: recorded[k] for k in ("rows", "seed", "anchor", "built_at")},
                         seconds=time.monotonic() - started)
    if rows < 100:
        raise DemoBuildError(f"--rows {rows}: the demo needs at least 100 payments")
    spark = demo_spark(workspace)
    # Small tables on few cores: one shuffle partition per core keeps jobs and files few.
    shuffle_partitions = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", str(BUILD_SHUFFLE_PARTITIONS))
    marker.unlink(missing_ok=True)
    say("clearing any earlier demo tables")
    clear_lakehouse(spark, workspace)
    _check_iceberg_locations(workspace)

    calendar = synthetic.DemoCalendar(anchor or (datetime.now(timezone.utc).date() - timedelta(days=1)))
    merchants = synthetic.merchants()
    payments = synthetic.payments(rows, calendar, merchants["merchant_id"].to_numpy(), seed)
    build = DemoBuild(reused=False, rows=payments.num_rows, seed=seed, anchor=calendar.anchor.isoformat(),
                      built_at=datetime.now(timezone.utc).replace(microsecond=0).isoformat())
    bridge = ArrowBridge(spark, workspace.root / STAGING)
    try:
        _DemoLoads(spark, workspace, bridge, build, say).run(merchants, payments, calendar)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", shuffle_partitions)
        bridge.close()

    build.seconds = time.monotonic() - started
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps(asdict(build), indent=2) + "\n", encoding="utf-8")
    return build


def demo_spark(workspace: Workspace):
    """The process's Spark session for a demo workspace: Spark's Hadoop warehouse catalog and the
    workspace's Iceberg catalogs (``iceberg.catalogs``: a JDBC catalog the demo's tables may live in,
    :class:`~piitracer.demo.workspace_files.DemoCatalog`), from the same definitions pyiceberg reads."""
    return spark_session(workspace.config.spark, _warehouse(workspace), IcebergCatalogs(workspace.config.iceberg))


def clear_lakehouse(spark, workspace: Workspace) -> None:
    """Drop the catalog's Iceberg tables and delete its other locations (only folders inside the
    workspace or the warehouse: a catalog pointing elsewhere is never deleted by the demo)."""
    catalog = workspace.config.catalog
    for dataset in sorted(catalog, key=lambda d: catalog[d].clone_of is None):  # clones first
        entry, location = catalog[dataset], workspace.location_of(dataset)
        if entry.format is DatasetFormat.ICEBERG and entry.table and location is not None and location.exists():
            drop_table(spark, entry.table)
    roots = [workspace.root.absolute(), _warehouse(workspace).absolute(), *_catalog_warehouses(workspace).values()]
    for dataset, entry in catalog.items():
        location = workspace.location_of(dataset)
        if location is None or not location.exists():
            continue
        if not any(location.absolute().is_relative_to(root) and location.absolute() != root for root in roots):
            raise DemoBuildError(f"catalog.{dataset}.location: {location} is outside the workspace and the warehouse; "
                                 "the demo will not delete it")
        shutil.rmtree(location)


class _DemoLoads:
    """The two loads, the pipeline runs and the copies, on one Spark session."""

    def __init__(self, spark, workspace: Workspace, bridge: ArrowBridge, build: DemoBuild, say: Callable[[str], None]) -> None:
        self.spark, self.workspace, self.bridge, self.build, self.say = spark, workspace, bridge, build, say
        self.catalog = workspace.config.catalog
        self.runner = PipelineRunner(spark, workspace, bridge)
        self.statements = pipeline_statements(workspace)

    def entry(self, dataset: str) -> CatalogDataset:
        if dataset not in self.catalog:
            raise DemoBuildError(f"the demo builds {dataset}, which is not in the workspace catalog")
        return self.catalog[dataset]

    def location(self, dataset: str) -> Path:
        location = self.workspace.location_of(dataset)
        if location is None:
            raise DemoBuildError(f"catalog.{dataset}: needs a 'location' for the demo")
        return location

    def run(self, merchants: pa.Table, payments: pa.Table, calendar: synthetic.DemoCalendar) -> None:
        self.say(f"prod.merchants, prod.payments: {payments.num_rows:,} payments over {len(calendar.dates)} dates")
        self._append("prod.merchants", merchants)
        latest = pa.scalar(calendar.anchor, pa.date32())
        loads = (payments.filter(pc.less(payments["dt"], latest)), payments.filter(pc.equal(payments["dt"], latest)))
        for number, load in enumerate(loads, 1):
            final = number == len(loads)
            self.say(f"load {number}/{len(loads)}: {load.num_rows:,} payments, then the pipelines")
            self._append("prod.payments", load, partitioned_by=("dt",))
            if number == 1:
                self.spark.sql(f"ALTER TABLE {quoted_table(self.entry('prod.payments').table)} CREATE TAG {SOURCE_TAG}")
            run = self.runner.run(self.statements, include=lambda s: final or not _append_only(s))
            self.build.written.update(run.written)
            self.build.skipped.update(run.skipped)
            self._event_jobs(load)
        self.say("dev clones, the DR replica and weekly archive exports")
        self._copies(payments, calendar)

    def _append(self, dataset: str, data: pa.Table, partitioned_by: tuple[str, ...] = ()) -> None:
        entry = self.entry(dataset)
        frame = self.bridge.to_spark(data)
        create_table(self.spark, entry, frame.schema, entry.columns, partitioned_by)
        frame.writeTo(quoted_table(entry.table)).append()
        self.build.written[dataset] = "iceberg: appended synthetic rows"

    def _event_jobs(self, load: pa.Table) -> None:
        payments = self.spark.table(quoted_table(self.entry("prod.payments").table))
        days = sorted(set(load["dt"].to_pylist()))
        event_jobs.payment_features(self.spark, payments, self.entry("ml.payment_features").table,
                                    self.entry("ml.payment_features"), as_of=days[-1])
        event_jobs.phone_directory(self.bridge, payments, self.location("support.phone_directory"),
                                   delta_properties(self.entry("support.phone_directory").retention))
        event_jobs.settlements(self.bridge, payments, self.location("finance.settlements"), days)
        self.build.written.update({
            "ml.payment_features": "iceberg: features appended per run (events/ml_payment_features.json)",
            "support.phone_directory": "delta: overwritten per sync (events/support_phone_directory.jsonl)",
            "finance.settlements": "parquet: one file per settlement day (events/finance_settlements.json)",
        })

    def _copies(self, payments: pa.Table, calendar: synthetic.DemoCalendar) -> None:
        source = self.entry("prod.payments")
        copies.iceberg_shallow_clone(self.spark, source, self.location("prod.payments"),
                                     self.entry("dev.payments_shallow"), partitioned_by=("dt",))
        copies.iceberg_deep_clone(self.spark, source, self.entry("dev.payments_deep"), partitioned_by=("dt",))
        for clone in ("dev.customer_txn_deep", "analytics.customer_txn@dr"):
            copies.delta_deep_clone(self.location("analytics.customer_txn"), self.location(clone),
                                    delta_properties(self.entry(clone).retention))
        exports = calendar.dates[-ARCHIVE_EXPORTS:]
        copies.weekly_exports(payments, self.location("archive.payments_weekly"), exports)
        self.build.written.update({
            "dev.payments_shallow": "iceberg: add_files over prod.payments' data files (shallow clone)",
            "dev.payments_deep": "iceberg: full copy of prod.payments",
            "dev.customer_txn_deep": "delta: full copy of analytics.customer_txn",
            "analytics.customer_txn@dr": "delta: the DR replica of analytics.customer_txn (its pipeline's copy)",
            "archive.payments_weekly": f"parquet: {len(exports)} weekly exports of prod.payments",
        })


def _append_only(statement: PipelineStatement) -> bool:
    return isinstance(statement.node, exp.Insert) and not statement.node.args.get("overwrite")


def _warehouse(workspace: Workspace) -> Path:
    return workspace.resolve(workspace.config.spark.warehouse)


def _catalog_warehouses(workspace: Workspace) -> dict[str, Path]:
    """Catalog name -> the local warehouse folder of each ``iceberg.catalogs`` catalog that has one
    (where Spark creates the demo's tables of that catalog)."""
    found = {}
    for name, properties in workspace.config.iceberg.catalogs.items():
        warehouse = str(properties.get("warehouse", ""))
        if warehouse.startswith(("/", "file:")):
            found[name] = Path(warehouse.removeprefix("file://").removeprefix("file:")).absolute()
    return found


def _check_iceberg_locations(workspace: Workspace) -> None:
    warehouses = {workspace.config.spark.catalog.lower(): _warehouse(workspace), **_catalog_warehouses(workspace)}
    for dataset, entry in workspace.config.catalog.items():
        if entry.format is DatasetFormat.ICEBERG:
            catalog = (entry.table or "").split(".", 1)[0].lower()
            if catalog not in warehouses:
                raise DemoBuildError(f"catalog.{dataset}: the demo creates its Iceberg tables in spark.catalog "
                                     f"({workspace.config.spark.catalog}) or a catalog of iceberg.catalogs with a local "
                                     f"warehouse; {entry.table} is in neither")
            check_location(dataset, entry, workspace.location_of(dataset), warehouses[catalog])
