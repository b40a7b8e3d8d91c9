"""The one rule that turns any dataset name into a canonical dataset id.

OpenLineage names a dataset by ``(namespace, name)``: Spark emits ``("file", "/wh/prod/payments")``
with a ``symlinks`` facet ``("file:/wh", "prod.payments", TABLE)``; Hive-style producers emit
``("hive://metastore", "prod.payments")``. SQL names tables as ``prod.payments`` or
``lake.prod.payments``. All of them must become one node.

The rule, in order (first match wins):

1. An explicit alias from the catalog (``aliases:`` of a dataset, compared case-insensitively,
   either as ``namespace/name`` or as the bare name) -> that catalog dataset.
2. A location: the name is a path (starts with ``/`` or has a ``scheme://``), or the namespace is
   a storage scheme (``file``, ``s3``, ``gs``, ``abfss``, ``hdfs``...) and the name has a slash.
   The path is normalised (scheme ``file:`` dropped, trailing ``/`` dropped) and re-rooted by
   ``lineage.location_roots`` (longest listed first); equal to a catalog
   dataset's location -> that dataset; otherwise the id is ``location:<normalised uri>``.
3. Another system (a namespace with a scheme that is neither storage nor a metastore, e.g.
   ``kafka://broker:9092``) -> ``<namespace>/<name>`` lower-cased, so it never collides with a table.
4. A table name (the namespace is a metastore/catalog such as ``hive://``, or a storage
   namespace whose name has no slash, as in Spark's TABLE symlinks): unquoted, lower-cased, split
   on dots; a leading part that is a known catalog name (``spark_catalog``, the workspace's Spark
   catalog names and its Iceberg catalogs': ``iceberg.catalogs``, ``.pyiceberg.yaml``,
   ``PYICEBERG_CATALOG__*``) is dropped when three parts remain; a bare ``table`` gets the default
   database. ``db.table`` found in the catalog (by id or
   by its ``table`` identifier) -> that dataset; otherwise ``db.table`` itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

STORAGE_SCHEMES = frozenset(
    {"file", "s3", "s3a", "s3n", "gs", "gcs", "abfs", "abfss", "wasb", "wasbs", "hdfs", "dbfs"}
)
_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*):(//)?", re.IGNORECASE)
DEFAULT_SPARK_CATALOGS = ("spark_catalog",)
# Namespaces whose names are table identifiers (metastores and catalogs).
TABLE_NAMESPACE_SCHEMES = frozenset(
    {"hive", "spark_catalog", "glue", "hms", "iceberg", "unity", "databricks", "thrift", "arn"}
)


def normalise_location(path: str) -> str:
    """Canonical form of a storage location: no ``file:`` scheme, no trailing slash, ``//`` kept
    only after a real scheme.

    Examples:
        >>> normalise_location("file:///wh/prod/payments/")
        '/wh/prod/payments'
        >>> normalise_location("S3://lake//raw/events/")
        's3://lake/raw/events'
    """
    text = path.strip()
    match = _SCHEME.match(text)
    prefix = ""
    if match and match.group(1).lower() != "file":
        prefix = match.group(1).lower() + "://"
    if match:
        text = text[match.end():]
    if not prefix and not text.startswith("/"):
        text = "/" + text
    text = re.sub(r"/{2,}", "/", text)
    if prefix:
        text = text.lstrip("/")
    return (prefix + text).rstrip("/") or "/"


def split_table_name(name: str) -> list[str]:
    """``lake.`prod`.Payments`` -> ``['lake', 'prod', 'payments']``.

    Examples:
        >>> split_table_name("lake.`prod`.Payments")
        ['lake', 'prod', 'payments']
    """
    return [part.strip().strip('`"[]').lower() for part in name.strip().split(".") if part.strip()]


@dataclass
class DatasetNamer:
    """Applies the naming rule against what the workspace catalog knows.

    ``locations`` maps normalised absolute locations to catalog ids; ``tables`` maps Spark table
    identifiers (``db.table`` or ``catalog.db.table``, lower case) to catalog ids; ``aliases``
    maps lower-cased alias strings to catalog ids.

    Examples:
        Every name of one table becomes its catalog id; a name the catalog does not know keeps a
        form of its own that never collides with a table:

        >>> namer = DatasetNamer(catalog_ids=frozenset({"prod.payments"}),
        ...                      locations={"/wh/prod/payments": "prod.payments"},
        ...                      aliases={"payments_v2": "prod.payments"})
        >>> namer.from_table_name("spark_catalog.prod.Payments")  # SQL, with Spark's catalog
        'prod.payments'
        >>> namer.from_openlineage("file", "/wh/prod/payments")  # Spark's OpenLineage event
        'prod.payments'
        >>> namer.from_openlineage("hive://metastore", "payments_v2")  # an alias from the catalog
        'prod.payments'
        >>> namer.from_table_name("orders", default_database="prod")  # not catalogued: db.table
        'prod.orders'
        >>> namer.from_location("s3://lake/other/")
        'location:s3://lake/other'
        >>> namer.from_openlineage("kafka://broker:9092", "Payments-Events")  # another system
        'kafka://broker:9092/payments-events'
    """

    catalog_ids: frozenset[str] = frozenset()
    locations: dict[str, str] = field(default_factory=dict)
    tables: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    spark_catalogs: tuple[str, ...] = DEFAULT_SPARK_CATALOGS
    default_database: str = "default"
    # Prefix rewrites applied to locations before lookup: the cluster that emitted an event may
    # mount the warehouse elsewhere (``/data/lakehouse`` there, the workspace folder here).
    location_roots: tuple[tuple[str, str], ...] = ()

    def from_table_name(self, name: str, default_database: str | None = None) -> str:
        """Canonical id of a table named in SQL (``db.t``, ``catalog.db.t`` or ``t``)."""
        alias = self.aliases.get(name.strip().lower())
        if alias:
            return alias
        parts = split_table_name(name)
        if len(parts) == 1:
            # The default database may itself be qualified by a catalog (``USE lake.analytics``).
            parts = split_table_name(default_database or self.default_database) + parts
        joined = ".".join(parts)
        if joined in self.tables:
            return self.tables[joined]
        if len(parts) >= 3 and parts[0] in self.spark_catalogs:
            parts = parts[1:]
        candidate = ".".join(parts)
        return self.tables.get(candidate, candidate)

    def from_column_name(self, text: str) -> str:
        """``<dataset>.<column>`` as a person names a column (``--source``): a dataset id as it is;
        a table named with its catalog (``prod.fintech.payments.user_id``) or by its ``table:``
        identifier -> the catalog dataset's id (``fintech.payments.user_id``). Anything the
        catalog does not know is returned as given (the caller says what is unknown)."""
        name = text.strip().lower()
        dataset, _, column = name.rpartition(".")
        if not dataset or name in self.catalog_ids or dataset in self.catalog_ids:
            return name
        if self.from_table_name(name) in self.catalog_ids:  # a dataset named with its catalog, no column
            return self.from_table_name(name)
        found = self.from_table_name(dataset)
        return f"{found}.{column}" if found in self.catalog_ids else name

    def from_location(self, location: str) -> str:
        """Canonical id of a dataset named by its storage location."""
        normalised = normalise_location(location)
        for remote, local in self.location_roots:
            if normalised == remote or normalised.startswith(remote + "/"):
                normalised = local + normalised[len(remote):]
                break
        if normalised in self.locations:
            return self.locations[normalised]
        return f"location:{normalised}"

    def from_openlineage(self, namespace: str, name: str) -> str:
        """Canonical id of an OpenLineage dataset ``(namespace, name)``."""
        for key in (f"{namespace.rstrip('/')}/{name}".lower(), name.strip().lower()):
            if key in self.aliases:
                return self.aliases[key]
        scheme_match = _SCHEME.match(namespace)
        scheme = scheme_match.group(1).lower() if scheme_match else namespace.lower()
        if name.startswith("/") or "://" in name:
            return self.from_location(name)
        if scheme in STORAGE_SCHEMES:
            # Spark's symlinks name a table inside a warehouse namespace: no slash in the name.
            if "/" not in name:
                return self.from_table_name(name)
            return self.from_location(f"{namespace.rstrip('/')}/{name}")
        if scheme_match and scheme not in TABLE_NAMESPACE_SCHEMES:
            # Another system (kafka://, postgres://...): keep it apart from lakehouse tables.
            return f"{namespace.rstrip('/')}/{name}".lower()
        return self.from_table_name(name)

    def is_known(self, dataset_id: str) -> bool:
        """Whether the id is a dataset of the catalog."""
        return dataset_id in self.catalog_ids
