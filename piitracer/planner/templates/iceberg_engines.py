"""Which engine runs an Iceberg dataset's steps, decided at plan time from the workspace alone
(pure: the catalog entry, ``iceberg.engine`` and the ``spark:`` settings; no file, no catalog call).

``iceberg.engine``:

- ``spark``: Spark SQL and Iceberg's Java actions, through the catalog Spark is given;
- ``pyiceberg``: pyiceberg, no JVM (``formats/iceberg_pyiceberg.py``); piitracer removes the files
  expired snapshots leave (and orphans) itself;
- ``auto`` (the default): Spark for a table on a local folder (or HDFS, which Spark's own Hadoop
  client reads); pyiceberg for a table on object storage (``s3://``, ``gs://``, ``abfs(s)://``),
  unless the Spark settings bring that store's connector. pyspark's wheel carries none (no
  ``hadoop-aws``, no AWS SDK, no ``iceberg-aws-bundle``: shared/lakehouse-notes.md), so a connector
  counts only when the workspace names one: a Maven coordinate in ``spark.packages`` or in
  ``spark.conf['spark.jars.packages']``, a jar in ``spark.conf['spark.jars']``, or an Iceberg
  ``io-impl`` / Hadoop ``fs.<scheme>.impl`` class in ``spark.conf`` (:data:`CONNECTORS`).

pyiceberg commits through a catalog that keeps the table's pointer (sql, rest, glue, hive...), never
through Spark's Hadoop folder catalog (pyiceberg has none: its commits would not be seen), and
neither writes nor reads equality deletes: such datasets are refused here, with the reason, before
any plan exists.
"""

from __future__ import annotations

from piitracer.model.plan import StepEngine
from piitracer.model.settings import IcebergEngine, IcebergSettings, SparkSettings
from piitracer.model.workspace import CatalogDataset, DeleteMode, IcebergWriteMode
from piitracer.planner.templates import EngineRefused

# Object-store scheme -> words naming its connector in a Maven coordinate, a jar's name, or a class.
CONNECTORS: dict[str, tuple[str, ...]] = {
    "s3": ("hadoop-aws", "iceberg-aws-bundle", "org.apache.iceberg.aws.s3.S3FileIO", "S3AFileSystem"),
    "gs": ("gcs-connector", "iceberg-gcp-bundle", "org.apache.iceberg.gcp.gcs.GCSFileIO", "GoogleHadoopFileSystem"),
    "abfs": ("hadoop-azure", "iceberg-azure-bundle", "org.apache.iceberg.azure.adlsv2.ADLSFileIO", "AzureBlobFileSystem"),
}
_SCHEMES = {"s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gs", "gcs": "gs", "abfs": "abfs", "abfss": "abfs"}


def object_store(location: str | None) -> str | None:
    """The object store a catalog location lies on (``s3``, ``gs``, ``abfs``), or None for a local
    folder, HDFS or no location."""
    if not location:
        return None
    scheme, separator, _ = location.strip().partition("://")  # not urlparse: ~17 µs a call, 100k datasets a plan
    return _SCHEMES.get(scheme.lower()) if separator else None


def connector_words(spark: SparkSettings) -> str:
    """Everything in the Spark settings that can bring a filesystem connector, as one lower-case
    text: the packages, and the values of the jars, packages, ``io-impl`` and ``fs.*.impl`` keys."""
    found = [*spark.packages]
    for key, value in spark.conf.items():
        name = key.lower()
        if name in ("spark.jars", "spark.jars.packages") or name.endswith(".io-impl") or \
                (name.startswith("spark.hadoop.fs.") and name.endswith(".impl")):
            found.append(value)
    return " ".join(found).lower()


def spark_reaches(store: str, spark: SparkSettings) -> bool:
    """Whether the Spark settings bring the connector of object store ``store``."""
    words = connector_words(spark)
    return any(word.lower() in words for word in CONNECTORS.get(store, ()))


def engine_for(dataset: str, entry: CatalogDataset, iceberg: IcebergSettings, spark: SparkSettings) -> StepEngine:
    """The engine of every step of one Iceberg dataset (see the module docstring); raises
    :class:`EngineRefused` when that engine cannot erase it."""
    store = object_store(entry.location)
    if iceberg.engine is IcebergEngine.SPARK:
        chosen = StepEngine.SPARK
    elif iceberg.engine is IcebergEngine.PYICEBERG:
        chosen = StepEngine.PYICEBERG
    else:
        chosen = StepEngine.PYICEBERG if store is not None and not spark_reaches(store, spark) else StepEngine.SPARK
    if chosen is StepEngine.PYICEBERG:
        _pyiceberg_can_erase(dataset, entry, iceberg, spark, store)
    return chosen


def _pyiceberg_can_erase(dataset: str, entry: CatalogDataset, iceberg: IcebergSettings, spark: SparkSettings,
                         store: str | None) -> None:
    why = (f"iceberg.engine is 'pyiceberg'" if iceberg.engine is IcebergEngine.PYICEBERG else
           f"its location is on {store}:// and the spark settings bring no {store} connector "
           f"({', '.join(CONNECTORS[store][:2])} in spark.packages, or an io-impl in spark.conf)")
    if entry.delete_mode is DeleteMode.EQUALITY and entry.write_mode is not IcebergWriteMode.COPY_ON_WRITE:
        raise EngineRefused(f"dataset {dataset}: delete_mode 'equality' needs Spark (pyiceberg 0.12 neither writes "
                            f"nor reads equality deletes), but pyiceberg would run its steps ({why}): set delete_mode "
                            "'positional', or give Spark the store's connector (or iceberg.engine: spark)")
    parts = (entry.table or "").split(".")
    if len(parts) != 3 or not all(parts):
        raise EngineRefused(f"dataset {dataset}: pyiceberg runs its steps ({why}) and commits through the table's "
                            "catalog: set 'table: <catalog>.<namespace>.<table>' in the catalog entry")
    definition = iceberg.catalogs.get(parts[0].lower(), {})
    if parts[0].lower() == spark.catalog.lower() and parts[0].lower() not in iceberg.catalogs \
            or definition.get("type", "").lower() == "hadoop":
        raise EngineRefused(f"dataset {dataset}: pyiceberg runs its steps ({why}), but table {entry.table} is in "
                            f"Spark's Hadoop folder catalog {parts[0]!r}, which pyiceberg cannot commit to: keep the "
                            "table in a catalog pyiceberg and Spark share (sql/jdbc, rest, glue, hive), or give Spark "
                            "the store's connector")

