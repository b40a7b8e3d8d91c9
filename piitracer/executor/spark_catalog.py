"""What a running Spark session's catalogs say about views: a view stores no files, so no folder
walk finds it; only the catalog that keeps its query does (a Hive metastore, the session catalog,
a REST catalog). A catalog that keeps no views (Iceberg's Hadoop catalog) or cannot be listed is
reported with the reason, never a crash; the others are still read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence


@dataclass
class CatalogViews:
    """The views found (dataset id -> columns) and, per catalog, why it could not be listed."""

    views: dict[str, tuple[str, ...]] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)


def list_views(spark, catalogs: Sequence[str]) -> CatalogViews:
    """Every persistent view in ``catalogs`` (``SHOW NAMESPACES``, ``SHOW VIEWS``), named
    ``<namespace>.<view>`` (the catalog dropped, as lineage names tables), with its columns.
    Temporary views belong to one session and are skipped."""
    from pyspark.errors import PySparkException
    from py4j.protocol import Py4JJavaError

    found = CatalogViews()
    for catalog in catalogs:
        try:
            namespaces = [_name(row[0]) for row in spark.sql(f"SHOW NAMESPACES IN {_quoted(catalog)}").collect()]
            for namespace in namespaces:
                for row in spark.sql(f"SHOW VIEWS IN {_quoted(catalog)}.{_quoted(namespace)}").collect():
                    if row["isTemporary"]:
                        continue
                    name = f"{namespace}.{row['viewName']}".lower()
                    columns = spark.table(f"{_quoted(catalog)}.{_quoted(namespace)}.{_quoted(row['viewName'])}").columns
                    found.views.setdefault(name, tuple(c.lower() for c in columns))
        except (PySparkException, Py4JJavaError) as error:
            found.problems[catalog] = f"cannot list its views: {_first_line(error)}"
    return found


def _name(text: str) -> str:
    return text.strip("`")


def _quoted(identifier: str) -> str:
    return "`" + identifier.replace("`", "``") + "`"


def _first_line(error: Exception) -> str:
    text = getattr(error, "getMessage", lambda: None)() if hasattr(error, "getMessage") else None
    return (text or str(error)).strip().splitlines()[0][:300]
