"""Running the workspace's pipeline SQL for real, so the demo's data agrees with its lineage.

Iceberg targets run in Spark (the ``lake.`` catalog). Spark has no Delta jars here, so a statement
whose target is Delta or plain Parquet is parsed with sqlglot, its SELECT runs on Spark and
delta-rs / pyarrow write the result to the catalog location. Delta and Parquet tables read by a
statement become Spark temp views of their Arrow data (a Delta folder read as Parquet would
include removed files). Table names are resolved with the workspace's naming rule (``USE db``
holds for the rest of its file) and every name is rewritten to what Spark must read."""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

import pyarrow as pa
import pyarrow.parquet as pq
import sqlglot
from sqlglot import exp

from piitracer.demo.arrow_bridge import ArrowBridge, read_delta, read_parquet_folder
from piitracer.demo.iceberg_tables import DemoBuildError, create_table
from piitracer.ingest.source_files import display_path, files_under
from piitracer.workspace.model import Workspace
from piitracer.model.table_properties import delta_properties
from piitracer.model.workspace import DatasetFormat

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_views = itertools.count(1)
PARQUET_ROWS_PER_FILE = 50_000


@dataclass(frozen=True)
class PipelineStatement:
    """One statement of a pipeline file, with the database its unqualified names belong to."""

    origin: str  # file:line-ish label for messages
    node: exp.Expression
    default_database: str
    dialect: str


@dataclass
class PipelineRun:
    """What one pass over the pipelines did: dataset -> how it was written."""

    written: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)


def pipeline_statements(workspace: Workspace) -> list[PipelineStatement]:
    """Every statement of the workspace's SQL sources, in file order (``USE`` applied per file)."""
    statements = []
    for source in workspace.config.lineage.sql:
        for path in files_under([workspace.resolve(source.path)], {".sql"}):
            database = source.default_database
            label = display_path(path, workspace.root)
            for number, node in enumerate(sqlglot.parse(path.read_text(encoding="utf-8"), read=source.dialect), 1):
                if node is None:
                    continue
                if isinstance(node, exp.Use):
                    database = ".".join(p for p in (node.this.catalog, node.this.db, node.this.name) if p)
                    continue
                statements.append(PipelineStatement(f"{label} statement {number}", node, database, source.dialect))
    return statements


class PipelineRunner:
    """Runs pipeline statements against the workspace's lakehouse on one Spark session."""

    def __init__(self, spark: "SparkSession", workspace: Workspace, bridge: ArrowBridge) -> None:
        self.spark, self.workspace, self.bridge = spark, workspace, bridge
        self.catalog = workspace.config.catalog

    def run(self, statements: list[PipelineStatement], include: Callable[[PipelineStatement], bool] = lambda s: True) -> PipelineRun:
        """Run each statement ``include`` accepts; views are skipped (they store nothing, and the
        hadoop catalog has no views)."""
        result = PipelineRun()
        for statement in statements:
            target = self._target(statement)
            if target is None:
                raise DemoBuildError(f"{statement.origin}: the demo runs INSERT, CREATE ... AS and MERGE only")
            entry = self.catalog.get(target)
            if entry is None:
                raise DemoBuildError(f"{statement.origin}: writes {target}, which is not in the catalog")
            if entry.format is DatasetFormat.VIEW:
                result.skipped[target] = "a view stores no rows (and the hadoop catalog has no views)"
                continue
            if not include(statement):
                continue
            result.written[target] = self._run_one(statement, target)
        return result

    # ---- one statement --------------------------------------------------------------------

    def _run_one(self, statement: PipelineStatement, target: str) -> str:
        node = statement.node.copy()
        views = self._rewrite_tables(node, statement, target)
        entry = self.catalog[target]
        try:
            if entry.format is DatasetFormat.ICEBERG:
                if isinstance(node, exp.Insert):
                    self._create_iceberg_target(node, target, statement)
                self.spark.sql(node.sql(dialect="spark"))
                return "iceberg: run in Spark"
            query = node.expression if isinstance(node, (exp.Insert, exp.Create)) else None
            if not isinstance(query, exp.Query):
                raise DemoBuildError(f"{statement.origin}: a {entry.format.value} target needs INSERT ... SELECT or CREATE ... AS SELECT")
            data = self.bridge.to_arrow(self.spark.sql(query.sql(dialect="spark")))
            data = data.rename_columns(list(entry.columns)) if len(entry.columns) == data.num_columns else data
            overwrite = isinstance(node, exp.Create) or bool(node.args.get("overwrite"))
            self._write_files(target, data, overwrite)
            return f"{entry.format.value}: SELECT on Spark, {'overwrite' if overwrite else 'append'} of {data.num_rows} rows"
        finally:
            for view in views:
                self.spark.catalog.dropTempView(view)

    def _target(self, statement: PipelineStatement) -> str | None:
        node = statement.node
        if isinstance(node, (exp.Insert, exp.Create, exp.Merge)):
            table = node.this if isinstance(node.this, exp.Table) else node.this.find(exp.Table)
            if table is not None:
                return self.workspace.namer.from_table_name(_name(table), statement.default_database)
        return None

    def _rewrite_tables(self, node: exp.Expression, statement: PipelineStatement, target: str) -> list[str]:
        """Point every table name at what Spark reads: Iceberg tables by their full ``catalog.db.t``
        name, Delta/Parquet tables through a temp view of their Arrow data. CTE names stay."""
        ctes = {cte.alias_or_name.lower() for cte in node.find_all(exp.CTE)}
        views: list[str] = []
        for table in list(node.find_all(exp.Table)):
            if not table.db and table.name.lower() in ctes:
                continue
            dataset = self.workspace.namer.from_table_name(_name(table), statement.default_database)
            entry = self.catalog.get(dataset)
            if entry is None:
                raise DemoBuildError(f"{statement.origin}: reads {dataset}, which is not in the catalog")
            if entry.format is DatasetFormat.ICEBERG:
                parts = entry.table.split(".")
            elif dataset == target:
                continue  # a Delta/Parquet target is written by this module, not by Spark
            else:
                view = f"demo_input_{next(_views)}"
                self.bridge.to_spark(self._read_files(dataset)).createOrReplaceTempView(view)
                views.append(view)
                parts = [view]
            catalog, db, name = ([None] * (3 - len(parts)) + parts)[-3:]
            table.set("catalog", exp.to_identifier(catalog) if catalog else None)
            table.set("db", exp.to_identifier(db) if db else None)
            table.set("this", exp.to_identifier(name))
        return views

    def _create_iceberg_target(self, node: exp.Insert, target: str, statement: PipelineStatement) -> None:
        """Create the INSERT's target before it runs: types from the SELECT (analysed, not run),
        names from the catalog, identity partitions from ``PARTITION (col)``."""
        table = node.this if isinstance(node.this, exp.Table) else node.this.find(exp.Table)
        partition = table.args.get("partition")
        partitioned_by = [p.name for p in partition.expressions if isinstance(p, exp.Column)] if partition else []
        schema = self.spark.sql(node.expression.sql(dialect="spark")).schema
        create_table(self.spark, self.catalog[target], schema, self.catalog[target].columns, partitioned_by)

    # ---- Delta and Parquet files ----------------------------------------------------------

    def _location(self, dataset: str) -> Path:
        location = self.workspace.location_of(dataset)
        if location is None:
            raise DemoBuildError(f"catalog.{dataset}: needs a 'location' for the demo to write it")
        return location

    def _read_files(self, dataset: str) -> pa.Table:
        entry, location = self.catalog[dataset], self._location(dataset)
        return read_delta(location) if entry.format is DatasetFormat.DELTA else read_parquet_folder(location)

    def _write_files(self, dataset: str, data: pa.Table, overwrite: bool) -> None:
        entry, location = self.catalog[dataset], self._location(dataset)
        if entry.format is DatasetFormat.DELTA:
            write_delta(location, data, overwrite, delta_properties(entry.retention))
        elif entry.format is DatasetFormat.PARQUET:
            write_parquet_files(location, data, overwrite)
        else:
            raise DemoBuildError(f"{dataset}: the demo cannot write a {entry.format.value} dataset")


def write_delta(location: Path, data: pa.Table, overwrite: bool, configuration: Mapping[str, str] | None = None) -> None:
    """One Delta commit: an overwrite (CREATE OR REPLACE, INSERT OVERWRITE) or an append. A new
    table gets ``configuration`` (its catalog entry's retention, ``model.table_properties``)."""
    from deltalake import write_deltalake

    new = not (location / "_delta_log").exists()
    location.mkdir(parents=True, exist_ok=True)
    write_deltalake(str(location), data, mode="overwrite" if overwrite else "append",
                    configuration=dict(configuration) if new and configuration else None)


def write_parquet_files(location: Path, data: pa.Table, overwrite: bool, stem: str | None = None) -> list[Path]:
    """Plain Parquet files of at most :data:`PARQUET_ROWS_PER_FILE` rows; an overwrite first removes
    the folder's Parquet files (plain folders keep no history)."""
    location.mkdir(parents=True, exist_ok=True)
    if overwrite:
        for old in location.rglob("*.parquet"):
            old.unlink()
    stem = stem or f"part-{uuid.uuid4().hex[:12]}"  # appends never overwrite an earlier file
    written = []
    for index, start in enumerate(range(0, max(data.num_rows, 1), PARQUET_ROWS_PER_FILE)):
        path = location / f"{stem}-{index:03d}.parquet"
        pq.write_table(data.slice(start, PARQUET_ROWS_PER_FILE), path)
        written.append(path)
    return written


def _name(table: exp.Table) -> str:
    return ".".join(part for part in (table.catalog, table.db, table.name) if part)
