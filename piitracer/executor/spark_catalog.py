"""What a running Spark session's catalogs list (``SHOW NAMESPACES``, ``SHOW TABLES``, ``SHOW
VIEWS``): every table with its location, so discovery also finds a table the catalog keeps outside
the folders it walks; and every view, which stores no files, so no folder walk finds it (a Hive
metastore, the session catalog or a REST catalog keeps its query). A catalog that cannot be listed
is reported with the reason, never a crash; the others are still read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence


@dataclass
class CatalogListing:
    """The views found (dataset id -> columns), the tables (``catalog.namespace.table`` -> the
    location the catalog gives) and, per catalog, why it could not be listed."""

    views: dict[str, tuple[str, ...]] = field(default_factory=dict)
    tables: dict[str, str] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)


def list_catalogs(spark, catalogs: Sequence[str]) -> CatalogListing:
    """Every persistent view and table in ``catalogs``. A view is named ``<namespace>.<view>``
    (the catalog dropped, as lineage names tables), with its columns; a table by its full
    identifier, with its location (``DESCRIBE TABLE EXTENDED``). Temporary views belong to one
    session and are skipped."""
    from pyspark.errors import PySparkException
    from py4j.protocol import Py4JJavaError

    found = CatalogListing()
    for catalog in catalogs:
        try:
            namespaces = [_name(row[0]) for row in spark.sql(f"SHOW NAMESPACES IN {_quoted(catalog)}").collect()]
            for namespace in namespaces:
                place = f"{_quoted(catalog)}.{_quoted(namespace)}"
                views = {row["viewName"] for row in spark.sql(f"SHOW VIEWS IN {place}").collect() if not row["isTemporary"]}
                for view in sorted(views):
                    columns = spark.table(f"{place}.{_quoted(view)}").columns
                    found.views.setdefault(f"{namespace}.{view}".lower(), tuple(c.lower() for c in columns))
                for row in spark.sql(f"SHOW TABLES IN {place}").collect():
                    if row["isTemporary"] or row["tableName"] in views:
                        continue
                    identifier = f"{catalog}.{namespace}.{row['tableName']}".lower()
                    described = spark.sql(f"DESCRIBE TABLE EXTENDED {place}.{_quoted(row['tableName'])}").collect()
                    location = next((r["data_type"] for r in described if r["col_name"] == "Location"), None)
                    if location:
                        found.tables[identifier] = location
        except (PySparkException, Py4JJavaError) as error:
            found.problems[catalog] = f"cannot list it: {_first_line(error)}"
    return found


def _name(text: str) -> str:
    return text.strip("`")


def _quoted(identifier: str) -> str:
    return "`" + identifier.replace("`", "``") + "`"


def _first_line(error: Exception) -> str:
    """The error's own message (PySpark's, without the JVM stack), first line."""
    text = error.getMessage() if hasattr(error, "getMessage") else None
    return (text or str(error)).strip().splitlines()[0][:300]
