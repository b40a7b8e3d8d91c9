"""The demo lakehouse: builds the fixture workspace's tables (``lineage_fixtures/``) on local Spark
with synthetic payments, running the pipelines' own SQL so data and lineage agree. Wiring for
``piitracer demo`` only: it may import model, ingest, graph, planner and executor."""

from piitracer.demo.builder import DEFAULT_ROWS, DEFAULT_SEED, DemoBuild, build_lakehouse, demo_spark, lakehouse_present
from piitracer.demo.iceberg_tables import DemoBuildError
from piitracer.demo.synthetic import SUBJECT_USER_ID
from piitracer.demo.workspace_files import DemoCatalog

__all__ = ["DEFAULT_ROWS", "DEFAULT_SEED", "DemoBuild", "DemoBuildError", "DemoCatalog", "SUBJECT_USER_ID", "build_lakehouse",
           "demo_spark", "lakehouse_present"]
