"""One Spark session per process, configured from the workspace: local mode with the Iceberg
runtime jar found inside the installed wheel by default, any master and Maven packages by
configuration."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from piitracer.model.workspace import SparkSettings
from piitracer.model.errors import PiitracerError

if TYPE_CHECKING:  # pyspark is imported only when a session is really needed
    from pyspark.sql import SparkSession

ICEBERG_JAR = "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
_session: "SparkSession | None" = None
_session_key: tuple | None = None


class SparkSetupError(PiitracerError, RuntimeError):
    """Spark cannot be started as configured; the message says what is missing."""


def iceberg_jar(settings: SparkSettings) -> str | None:
    """The Iceberg runtime jar: ``spark.iceberg_jar`` if set, none when ``spark.packages`` asks
    Maven for it, else the jar shipped in the ``snowpark-connect-deps-iceberg`` wheel (1.0.2: the
    1.0.3 jar is stripped of shaded classes)."""
    if settings.iceberg_jar:
        if not Path(settings.iceberg_jar).is_file():
            raise SparkSetupError(f"spark.iceberg_jar: {settings.iceberg_jar} does not exist")
        return settings.iceberg_jar
    if settings.packages:
        return None
    try:
        from snowpark_connect_deps_iceberg import get_jar_path
    except ImportError as error:
        raise SparkSetupError("no Iceberg jar: install snowpark-connect-deps-iceberg==1.0.2 or set spark.iceberg_jar") from error
    return str(get_jar_path(ICEBERG_JAR))


def jvm_log_level() -> str:
    """Spark's (log4j) level follows piitracer's: DEBUG and INFO pass through (``--log-level``),
    anything quieter is ERROR, since Spark's warnings are noise to a piitracer user."""
    level = logging.getLogger("piitracer").getEffectiveLevel()
    return "DEBUG" if level <= logging.DEBUG else "INFO" if level <= logging.INFO else "ERROR"


def spark_session(settings: SparkSettings, warehouse: Path) -> "SparkSession":
    """The process's Spark session (started on first use, then reused) with the Iceberg catalog
    ``settings.catalog`` of type hadoop on ``warehouse``."""
    global _session, _session_key
    # What the running session cannot change: the master, the catalog and where it lives, the jars.
    key = (settings.master, settings.catalog, str(Path(warehouse).absolute()), settings.iceberg_jar, settings.packages)
    if _session is not None:
        if key != _session_key:
            raise SparkSetupError("a Spark session with other settings is already running in this process")
        return _session
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", _python())
    builder = (
        SparkSession.builder.master(settings.master)
        .appName("piitracer")
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config(f"spark.sql.catalog.{settings.catalog}", "org.apache.iceberg.spark.SparkCatalog")
        .config(f"spark.sql.catalog.{settings.catalog}.type", "hadoop")
        .config(f"spark.sql.catalog.{settings.catalog}.warehouse", str(warehouse))
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", settings.driver_memory)
        .config("spark.sql.session.timeZone", "UTC")
        # Subject values are broadcast to every task: one small table, joined once per dataset.
        .config("spark.sql.autoBroadcastJoinThreshold", str(64 * 1024 * 1024))
    )
    jar = iceberg_jar(settings)
    if jar:
        builder = builder.config("spark.jars", jar)
    if settings.packages:
        builder = builder.config("spark.jars.packages", ",".join(settings.packages))
    for name, value in sorted(settings.conf.items()):
        builder = builder.config(name, value)
    _session = builder.getOrCreate()
    _session.sparkContext.setLogLevel(jvm_log_level())
    _session_key = key
    return _session


def _python() -> str:
    import sys

    return sys.executable
