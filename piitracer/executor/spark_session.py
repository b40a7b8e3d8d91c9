"""One Spark session per process, configured from the workspace: local mode with the Iceberg
runtime jar found inside the installed wheel by default, any master and Maven packages by
configuration."""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from piitracer.model.settings import SparkSettings
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


LOG4J2 = """# piitracer's log4j2 configuration for Spark's JVM (written at start, level from --log-level)
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = console
# Spark takes the level of the class that starts it (PySpark's gateway) as "the shell's" and prints
# "Setting default log level" unless that logger is configured and equal to the root's.
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = {level}
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = {level}
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n%ex
"""


def log4j_configuration(level: str) -> Path:
    """A log4j2 file at ``level`` for the JVM Spark starts: without it Spark prints its own WARN
    lines (hostname, native libraries, "Setting default log level") before piitracer can set a level."""
    import tempfile

    folder = Path(tempfile.gettempdir()) / f"piitracer-{os.getuid() if hasattr(os, 'getuid') else 'user'}"
    folder.mkdir(mode=0o700, exist_ok=True)
    text = LOG4J2.format(level=level.lower())
    path = folder / f"log4j2-{level.lower()}-{hashlib.sha256(text.encode()).hexdigest()[:8]}.properties"
    if not path.exists():
        path.write_text(text)
    return path


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

    check_master_reachable(settings.master)
    os.environ.setdefault("PYSPARK_PYTHON", _python())
    builder = (
        SparkSession.builder.master(settings.master)
        .appName("piitracer")
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config(f"spark.sql.catalog.{settings.catalog}", "org.apache.iceberg.spark.SparkCatalog")
        .config(f"spark.sql.catalog.{settings.catalog}.type", "hadoop")
        .config(f"spark.sql.catalog.{settings.catalog}.warehouse", str(warehouse))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")  # no "[Stage N:>" bars in a person's terminal
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
    conf = dict(settings.conf)
    logging_option = f"-Dlog4j2.configurationFile=file:{log4j_configuration(jvm_log_level())}"
    for side in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
        if "log4j2.configurationFile" not in conf.get(side, ""):  # a user's own log4j setting wins
            conf[side] = f"{logging_option} {conf.get(side, '')}".strip()
    for name, value in sorted(conf.items()):
        builder = builder.config(name, value)
    _session = builder.getOrCreate()
    _session.sparkContext.setLogLevel(jvm_log_level())
    _session_key = key
    return _session


def check_master_reachable(master: str, timeout: float = 5.0) -> None:
    """Refuse a standalone master (``spark://host:port``, or several for HA) that accepts no
    connection: Spark itself would retry for a minute and then fail a job with a stack trace."""
    if not master.startswith("spark://"):
        return  # local[N], yarn, k8s://...: Spark reports those itself
    import socket

    reasons = []
    for address in master.removeprefix("spark://").split(","):
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise SparkSetupError(f"spark.master {master}: expected spark://host:port[,host:port...]")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout):
                return
        except OSError as error:
            reasons.append(f"{address}: {error.strerror or type(error).__name__}")
    raise SparkSetupError(f"spark.master {master}: cannot reach the Spark master ({'; '.join(reasons)}): start it or "
                          "fix spark.master in the workspace")


def _python() -> str:
    import sys

    return sys.executable
