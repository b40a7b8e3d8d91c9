"""The demo's workspace folder: a copy of the fixture workspace's files (``piitracer.yaml``,
``catalog.discovered.yaml``, ``sql/``, ``events/``), made once and never overwritten (a user may
have edited it). The discovered catalog is what ``catalog discover --write`` writes for the built
demo lakehouse; the builder builds the tables it describes (test_demo checks the two agree)."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from piitracer.demo.iceberg_tables import DemoBuildError
from piitracer.workspace.catalog_layers import DISCOVERED_FILE
from piitracer.workspace.model import WORKSPACE_FILE

WORKSPACE_PARTS = (WORKSPACE_FILE, DISCOVERED_FILE, "sql", "events")


def fixtures_folder() -> Path:
    """``lineage_fixtures/`` of the source checkout this package runs from (an editable install)."""
    return Path(__file__).resolve().parents[2] / "lineage_fixtures"


def prepare_workspace(folder: Path, fixtures: Path | None = None, warehouse: Path | None = None) -> Path:
    """Copy the fixture workspace files into ``folder`` unless its ``piitracer.yaml`` is there.

    ``warehouse`` moves the Iceberg warehouse out of the workspace (e.g. onto a Spark session's
    warehouse that is already running): ``spark.warehouse``, the Iceberg tables' locations and the
    events' location root for ``/data/lakehouse/warehouse`` are rewritten to point at it."""
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
