"""The demo's workspace folder: a copy of the fixture workspace's files (``piitracer.yaml``,
``catalog.discovered.yaml``, ``sql/``, ``events/``), made once and never overwritten (a user may
have edited it). The discovered catalog is what ``catalog discover --write`` writes for the built
demo lakehouse; the builder builds the tables it describes (test_demo checks the two agree)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import yaml

from piitracer.demo.iceberg_tables import DemoBuildError
from piitracer.workspace.catalog_layers import DISCOVERED_FILE
from piitracer.workspace.model import WORKSPACE_FILE

WORKSPACE_PARTS = (WORKSPACE_FILE, DISCOVERED_FILE, "sql", "events")


def fixtures_folder() -> Path:
    """``lineage_fixtures/`` of the source checkout this package runs from (an editable install)."""
    return Path(__file__).resolve().parents[2] / "lineage_fixtures"


@dataclass(frozen=True)
class DemoCatalog:
    """An Iceberg catalog the demo keeps its Iceberg tables in, instead of Spark's Hadoop warehouse
    folder: written to the demo's ``iceberg.catalogs`` (pyiceberg's properties, no credential), and
    the one definition both engines use (Spark gets it as ``spark.sql.catalog.<name>``).

    The demo creates its tables through Spark, which puts a new table of ``<name>.<ns>.<table>`` at
    ``<warehouse>/<ns>/<table>`` in a JDBC catalog: the catalogued locations say the same."""

    name: str
    properties: Mapping[str, str] = field(default_factory=dict)  # type, uri, warehouse (a local folder, absolute)

    @classmethod
    def postgresql(cls, uri: str, warehouse: Path, name: str = "pg") -> "DemoCatalog":
        """A JDBC catalog on PostgreSQL: ``uri`` as pyiceberg's ``sql`` catalog takes it
        (``postgresql+psycopg2://user@host:port/database``; the password comes from ``PGPASSWORD``
        or ``PYICEBERG_CATALOG__<NAME>__URI``, never from the workspace), its tables under
        ``warehouse``. Spark reaches it through Debian's ``libpostgresql-jdbc-java`` driver."""
        return cls(name.lower(), {"type": "sql", "uri": uri, "warehouse": str(Path(warehouse).absolute())})

    @property
    def warehouse(self) -> Path:
        return Path(str(self.properties["warehouse"]).removeprefix("file://").removeprefix("file:"))


def prepare_workspace(folder: Path, fixtures: Path | None = None, warehouse: Path | None = None,
                      catalog: DemoCatalog | None = None) -> Path:
    """Copy the fixture workspace files into ``folder`` unless its ``piitracer.yaml`` is there.

    ``warehouse`` moves the Iceberg warehouse out of the workspace (e.g. onto a Spark session's
    warehouse that is already running): ``spark.warehouse``, the Iceberg tables' locations and the
    events' location root for ``/data/lakehouse/warehouse`` are rewritten to point at it.

    ``catalog`` keeps the Iceberg tables in that catalog (e.g. :meth:`DemoCatalog.postgresql`, a
    JDBC catalog on PostgreSQL) instead of Spark's Hadoop warehouse: the workspace gets it under
    ``iceberg.catalogs``, each Iceberg table's ``table:`` names it and its location lies under the
    catalog's warehouse, which becomes a warehouse root; the events' location root follows."""
    folder = Path(folder)
    if (folder / WORKSPACE_FILE).is_file():
        return folder
    source = fixtures or fixtures_folder()
    if not (source / WORKSPACE_FILE).is_file():
        raise DemoBuildError(f"{source}: no {WORKSPACE_FILE} to copy (the demo needs the lineage_fixtures/ folder "
                                "of a source checkout)")
    folder.mkdir(parents=True, exist_ok=True)
    for part in WORKSPACE_PARTS[2:]:
        if (source / part).is_dir():
            shutil.copytree(source / part, folder / part, dirs_exist_ok=True)
    text = (source / WORKSPACE_FILE).read_text(encoding="utf-8")
    discovered = (source / DISCOVERED_FILE).read_text(encoding="utf-8") if (source / DISCOVERED_FILE).is_file() else None
    if warehouse is not None:
        old = str(yaml.safe_load(text).get("spark", {}).get("warehouse", "warehouse")).rstrip("/")
        text = _moved_warehouse(text, Path(warehouse).absolute())
        if discovered is not None:
            discovered = _moved_locations(discovered, old, Path(warehouse).absolute())
    if catalog is not None:
        old = str(yaml.safe_load(text).get("spark", {}).get("warehouse", "warehouse")).rstrip("/")
        hadoop = str(yaml.safe_load(text).get("spark", {}).get("catalog", "lake"))
        text = _in_catalog(text, old, hadoop, catalog, workspace_file=True)
        if discovered is not None:
            discovered = _in_catalog(discovered, old, hadoop, catalog, workspace_file=False)
    if discovered is not None:  # written first: the workspace file's presence marks a finished copy
        (folder / DISCOVERED_FILE).write_text(discovered, encoding="utf-8")
    (folder / WORKSPACE_FILE).write_text(text, encoding="utf-8")
    return folder


def _moved_locations(text: str, old: str, warehouse: Path) -> str:
    """The discovered catalog with its Iceberg tables' locations under ``warehouse`` instead of ``old``."""
    config = yaml.safe_load(text)
    _move_iceberg_locations(config, old, warehouse)
    header = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))
    return header + f"# (the Iceberg warehouse moved to {warehouse})\n" + yaml.safe_dump(config, sort_keys=False)


def _move_iceberg_locations(config: dict, old: str, warehouse: Path) -> None:
    for entry in (config.get("catalog") or {}).values():
        location = str(entry.get("location", ""))
        if entry.get("format") == "iceberg" and (location == old or location.startswith(old + "/")):
            entry["location"] = str(warehouse) + location[len(old):]


def _moved_warehouse(text: str, warehouse: Path) -> str:
    config = yaml.safe_load(text)
    old = str(config.get("spark", {}).get("warehouse", "warehouse")).rstrip("/")
    config.setdefault("spark", {})["warehouse"] = str(warehouse)
    _move_iceberg_locations(config, old, warehouse)
    roots = config.setdefault("lineage", {}).setdefault("location_roots", {})
    for remote, local in list(roots.items()):
        if str(local).rstrip("/") in (".", ""):
            roots[f"{remote.rstrip('/')}/{old}"] = str(warehouse)  # longer prefix: it wins
    # The warehouse root moves with the warehouse: every place the demo may change stays inside a root.
    config["warehouse_roots"] = [str(warehouse) if str(r).rstrip("/") == old else r for r in config.get("warehouse_roots", [])]
    header = "# Copied from lineage_fixtures/piitracer.yaml with the Iceberg warehouse moved to " + str(warehouse) + "\n"
    return header + yaml.safe_dump(config, sort_keys=False)


def _in_catalog(text: str, old: str, hadoop: str, catalog: DemoCatalog, workspace_file: bool) -> str:
    """A workspace or discovered-catalog file with its Iceberg tables in ``catalog``: each Iceberg
    entry located under the Hadoop warehouse ``old`` (a workspace-relative or absolute folder) moves
    under the catalog's warehouse, its ``table:`` from the Hadoop catalog ``hadoop`` to ``catalog``;
    the workspace file also gets the catalog's definition, its name among the SQL's catalog names,
    its warehouse as a root, and the events' location root for the old warehouse."""
    config = yaml.safe_load(text)
    target = catalog.warehouse
    for entry in (config.get("catalog") or {}).values():
        location = str(entry.get("location", ""))
        if entry.get("format") == "iceberg" and (location == old or location.startswith(old + "/")):
            entry["location"] = str(target) + location[len(old):]
        table = str(entry.get("table", ""))
        if entry.get("format") == "iceberg" and table.lower().startswith(hadoop.lower() + "."):
            entry["table"] = f"{catalog.name}.{table.split('.', 1)[1]}"
    if workspace_file:
        config.setdefault("iceberg", {}).setdefault("catalogs", {})[catalog.name] = dict(catalog.properties)
        lineage = config.setdefault("lineage", {})
        lineage["spark_catalogs"] = list(dict.fromkeys([*lineage.get("spark_catalogs", []), catalog.name]))
        roots = lineage.setdefault("location_roots", {})
        for remote, local in list(roots.items()):
            local = str(local).rstrip("/")
            if local == old:  # the events' root of a warehouse moved before (prepare_workspace's warehouse=)
                roots[remote] = str(target)
            elif local in (".", "") and not Path(old).is_absolute():
                roots[f"{remote.rstrip('/')}/{old}"] = str(target)  # longer prefix: it wins
        config["warehouse_roots"] = list(dict.fromkeys([*config.get("warehouse_roots", []), str(target)]))
    header = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))
    return header + f"# (the Iceberg tables in catalog {catalog.name}, under {target})\n" + yaml.safe_dump(config, sort_keys=False)
