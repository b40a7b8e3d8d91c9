"""Real local lakehouses for executor tests: one Spark session (local mode, the real Iceberg jar)
per test process, one shared warehouse, one namespace per test."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path
from typing import Any, Iterable

import yaml

from piitracer.executor.spark_session import spark_session
from piitracer.model.workspace import SparkSettings

_namespaces = itertools.count(1)


def settings() -> SparkSettings:
    return SparkSettings(master="local[2]", catalog="lake", driver_memory="1g",
                         conf={"spark.ui.showConsoleProgress": "false"})


def spark_for(warehouse: Path):
    return spark_session(settings(), warehouse)


def new_namespace(prefix: str = "t") -> str:
    return f"{prefix}{next(_namespaces)}"


def write_workspace(folder: Path, warehouse: Path, catalog: dict[str, dict], sql: str) -> Path:
    """A workspace folder whose Spark settings point at the shared warehouse."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sql").mkdir(exist_ok=True)
    (folder / "sql" / "pipelines.sql").write_text(sql)
    config = {
        "lineage": {"sql": [{"path": "sql"}], "spark_catalogs": ["lake"]},
        "spark": {"master": "local[2]", "catalog": "lake", "warehouse": str(warehouse), "driver_memory": "1g",
                  "conf": {"spark.ui.showConsoleProgress": "false"}},
        "catalog": catalog,
    }
    (folder / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return folder


def checksum(rows: Iterable[tuple[Any, ...]]) -> tuple[int, str]:
    """(count, sha256 over the sorted rows): equal for the same multiset of rows."""
    ordered = sorted(repr(tuple(r)) for r in rows)
    return len(ordered), hashlib.sha256("\n".join(ordered).encode()).hexdigest()


def mor_properties() -> str:
    return ("'format-version'='2', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
            "'write.merge.mode'='merge-on-read'")


def cow_properties() -> str:
    return ("'format-version'='2', 'write.delete.mode'='copy-on-write', 'write.update.mode'='copy-on-write', "
            "'write.merge.mode'='copy-on-write'")
