"""One Spark session per process, configured from the workspace: local mode with the Iceberg
runtime jar found inside the installed wheel by default, any master and Maven packages by
configuration; Spark's Hadoop warehouse catalog (``spark.catalog``) and, beside it, the workspace's
Iceberg catalogs (``iceberg.catalogs`` and pyiceberg's configuration) under their own names, from
the same definitions pyiceberg reads (:mod:`piitracer.formats.iceberg_spark`).

Jars: the Iceberg runtime jar, the jars of ``spark.conf['spark.jars']`` (added to it, not instead),
and a JDBC catalog's driver found automatically where the machine has it (Debian's
``libpostgresql-jdbc-java``: ``/usr/share/java/postgresql.jar``) when none of those provides it.
Jars are fixed when the session starts; catalogs are registered when first asked for (Spark loads a
catalog on its first use), so a later caller in the same process may add catalogs. A catalog Spark
cannot be given (its driver or the AWS SDK is not on the classpath, a Python-only type) is left out
and the reason kept in the session's configuration (:data:`UNAVAILABLE`), where the Iceberg steps
find it and say it."""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from piitracer.formats.iceberg_catalogs import IcebergCatalogs
from piitracer.formats.iceberg_spark import UNAVAILABLE, SparkCatalog, SparkCatalogs, spark_catalogs
from piitracer.model.settings import SparkSettings
from piitracer.model.errors import UnavailableError

if TYPE_CHECKING:  # pyspark is imported only when a session is really needed
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

ICEBERG_JAR = "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
# Spark's default redaction (secret|password|token|access[.]key) and an Iceberg catalog's other
# credential keys (a REST catalog's client credential, a header's authorization, an SSE-C key).
REDACTED_KEYS = r"(?i)secret|password|token|access[.]key|credential|authorization|sse[.]key"
_session: "SparkSession | None" = None
_session_key: tuple | None = None
_session_jars: tuple[str, ...] = ()  # what spark.jars held when the session started
_registered: dict[str, dict[str, str]] = {}  # Iceberg catalog name -> the configuration it was registered with


class SparkSetupError(UnavailableError, RuntimeError):
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


def spark_session(settings: SparkSettings, warehouse: Path, catalogs: IcebergCatalogs | None = None) -> "SparkSession":
    """The process's Spark session (started on first use, then reused) with the Iceberg catalog
    ``settings.catalog`` of type hadoop on ``warehouse`` and, beside it, every catalog of
    ``catalogs`` Spark can be given (registered now if the running session lacks them; a catalog
    the session already has with other properties is refused)."""
    global _session, _session_key, _session_jars
    wanted = _wanted(catalogs, settings)
    jars, unavailable = session_jars(settings, wanted)
    # What the running session cannot change: the master, the catalog and where it lives, the jars.
    key = (settings.master, settings.catalog, str(Path(warehouse).absolute()), settings.iceberg_jar, settings.packages)
    if _session is not None:
        if key != _session_key:
            raise SparkSetupError("a Spark session with other settings is already running in this process")
        unavailable.update(_drivers_missing_from(_session_jars, wanted, unavailable))
        _register(_session, wanted, unavailable)
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
        # Catalog credentials live in the session's configuration: Spark's UI and event log show
        # configuration with the values of matching keys redacted (its default misses 'credential').
        .config("spark.redaction.regex", REDACTED_KEYS)
    )
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    if settings.packages:
        builder = builder.config("spark.jars.packages", ",".join(settings.packages))
    conf = {name: value for name, value in settings.conf.items() if name != "spark.jars"}  # merged into jars
    logging_option = f"-Dlog4j2.configurationFile=file:{log4j_configuration(jvm_log_level())}"
    for side in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
        if "log4j2.configurationFile" not in conf.get(side, ""):  # a user's own log4j setting wins
            conf[side] = f"{logging_option} {conf.get(side, '')}".strip()
    for name, value in sorted(conf.items()):
        builder = builder.config(name, value)
    try:
        _session = builder.getOrCreate()
    except Exception as error:  # noqa: BLE001 - pyspark's own error class: only the gateway's exit is ours to name
        if "JAVA_GATEWAY_EXITED" not in str(error):
            raise
        raise SparkSetupError(no_java_message()) from None
    _session.sparkContext.setLogLevel(jvm_log_level())
    _session_key, _session_jars = key, tuple(jars)
    _registered.clear()
    _register(_session, wanted, unavailable)
    return _session


def no_java_message(environ: dict[str, str] | None = None) -> str:
    """Why Spark's JVM did not start, as far as piitracer can tell, and the fix (Spark 3.5 runs on
    Java 17; pyspark's own message, "Java gateway process exited", says neither)."""
    import shutil

    environ = dict(os.environ) if environ is None else environ
    fix = "install Java 17 (Debian: apt-get install -y openjdk-17-jre-headless) or set JAVA_HOME to one"
    if environ.get("JAVA_HOME"):
        return (f"Spark could not start its JVM with JAVA_HOME={environ['JAVA_HOME']}: check it is a Java 17 "
                f"(`$JAVA_HOME/bin/java -version`); or {fix}")
    if shutil.which("java", path=environ.get("PATH")) is None:
        return f"Spark could not start: no Java found (no `java` on the PATH, no JAVA_HOME): {fix}"
    return f"Spark could not start its JVM with the `java` on the PATH: check it is Java 17 (`java -version`); or {fix}"


def session_jars(settings: SparkSettings, catalogs: SparkCatalogs) -> tuple[list[str], dict[str, str]]:
    """(``spark.jars`` for a new session: the Iceberg runtime jar, ``spark.conf['spark.jars']``'s,
    and each JDBC catalog's driver found automatically when none of those provides it; catalog ->
    why Spark cannot be given it, for a JDBC catalog whose driver is nowhere)."""
    jar = iceberg_jar(settings)
    jars = [jar] if jar else []
    jars += [j.strip() for j in settings.conf.get("spark.jars", "").split(",") if j.strip() and j.strip() not in jars]
    packages = [*settings.packages, *settings.conf.get("spark.jars.packages", "").split(",")]
    unavailable = {}
    for name, catalog in sorted(catalogs.catalogs.items()):
        driver = catalog.driver
        if driver is None or _provides(jars, driver.jar_word):
            continue
        if driver.maven and any(p.strip().startswith(driver.maven + ":") for p in packages):
            continue
        if driver.debian_jar and Path(driver.debian_jar).is_file():
            jars.append(driver.debian_jar)
            continue
        unavailable[name] = f"it needs the {driver.database} JDBC driver ({driver.driver_class}) on Spark's classpath: {driver.advice()}"
    return jars, unavailable


def _provides(jars, word: str) -> bool:
    return any(word in Path(jar).name.lower() for jar in jars)


def _wanted(catalogs: IcebergCatalogs | None, settings: SparkSettings) -> SparkCatalogs:
    """The catalogs to give Spark: ``catalogs``' definitions, but Spark's Hadoop warehouse catalog
    ``spark.catalog`` keeps its name (a definition of that name is not given: piitracer reads that
    catalog's tables from the warehouse folder)."""
    if catalogs is None:
        return SparkCatalogs()
    found = spark_catalogs(catalogs.definitions())
    hadoop = settings.catalog.lower()
    if hadoop in found.catalogs:
        kept = {name: catalog for name, catalog in found.catalogs.items() if name != hadoop}
        return SparkCatalogs(kept, {**found.skipped, hadoop: f"{hadoop!r} is spark.catalog, Spark's Hadoop warehouse catalog"})
    return found


def _drivers_missing_from(jars: tuple[str, ...], catalogs: SparkCatalogs, known: dict[str, str]) -> dict[str, str]:
    """Catalog -> why: the JDBC catalogs whose driver the running session was started without."""
    missing = {}
    for name, catalog in catalogs.catalogs.items():
        if catalog.driver is not None and name not in known and not _provides(jars, catalog.driver.jar_word) \
                and name not in _registered:
            missing[name] = (f"the Spark session running in this process was started without the {catalog.driver.database} "
                             f"JDBC driver, and jars cannot be added to a running session: run piitracer in a new process")
    return missing


def _register(spark: "SparkSession", catalogs: SparkCatalogs, unavailable: dict[str, str]) -> None:
    """Give the running session each catalog it lacks (Spark loads a catalog from the session's
    configuration on first use); record why the others are not given (:data:`UNAVAILABLE`).
    Catalog properties go to the driver's memory only; what is logged names no credential."""
    for name, catalog in sorted(catalogs.catalogs.items()):
        conf = catalog.conf()
        if name in _registered:
            if _registered[name] != conf:
                changed = sorted(k for k in {*conf, *_registered[name]} if conf.get(k) != _registered[name].get(k))
                raise SparkSetupError(f"Iceberg catalog {name!r}: the Spark session in this process has it with other "
                                      f"properties ({', '.join(changed)}): a catalog Spark has loaded cannot change; "
                                      "run piitracer in a new process")
            continue
        if spark.conf.get(f"spark.sql.catalog.{name}", None) is not None:
            log.debug("Iceberg catalog %s: spark.conf configures it; its definition is not given to Spark", name)
            continue
        reason = unavailable.get(name) or _classes_missing(spark, catalog)
        if reason:
            _unavailable(spark, name, reason)
            continue
        for key, value in conf.items():
            spark.conf.set(key, value)
        spark.conf.unset(UNAVAILABLE.format(name=name))
        _registered[name] = conf
        log.debug("Iceberg catalog %s given to Spark: %s", name, catalog.shown())
    for name, reason in sorted(catalogs.skipped.items()):
        if name not in _registered and spark.conf.get(f"spark.sql.catalog.{name}", None) is None:
            _unavailable(spark, name, reason)


def _unavailable(spark: "SparkSession", name: str, reason: str) -> None:
    spark.conf.set(UNAVAILABLE.format(name=name), reason)
    log.info("Iceberg catalog %s is not given to Spark: %s", name, reason)


def _classes_missing(spark: "SparkSession", catalog: SparkCatalog) -> str | None:
    """Why the catalog cannot load on this session's classpath (the AWS SDK absent), or None."""
    utils = spark._jvm.org.apache.spark.util.Utils
    missing = [name for name in catalog.needs_classes if not utils.classIsLoadable(name)]
    if not missing:
        return None
    return (f"it needs {missing[0]} (the AWS SDK) on Spark's classpath, which the Iceberg runtime jar does not bring: name "
            "the iceberg-aws-bundle jar in spark.conf['spark.jars'], or add org.apache.iceberg:iceberg-aws-bundle:<version> "
            "to spark.packages where Maven is reachable (or let pyiceberg run the steps: iceberg.engine)")


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
