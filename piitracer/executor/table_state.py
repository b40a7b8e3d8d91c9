"""Read a live Iceberg table's state (current snapshot, tags and branches) without Spark.

The planner is pure; this is how it learns that a tag retains a pre-delete snapshot. pyiceberg's
``StaticTable`` reads the metadata file directly (~0.1 s), whichever engine wrote the table.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping

from pyiceberg.table import StaticTable
from pyiceberg.table.refs import SnapshotRefType

from piitracer.model.table_state import RefType, TableRef, TableState
from piitracer.model.workspace import CatalogDataset, DatasetFormat
from piitracer.model.errors import PiitracerError

_METADATA_VERSION = re.compile(r"^v?(\d+)[.-]")


class TableStateError(PiitracerError):
    """A table's metadata exists but cannot be read; the message names the file."""


def latest_metadata_file(location: Path) -> Path | None:
    """The current ``*.metadata.json`` of an Iceberg table folder: ``version-hint.text`` (Hadoop
    catalog) when present, else the highest numbered file (``v3.metadata.json`` or ``00003-uuid...``)."""
    metadata = location / "metadata"
    hint = metadata / "version-hint.text"
    if hint.is_file():
        candidate = metadata / f"v{hint.read_text().strip()}.metadata.json"
        if candidate.is_file():
            return candidate
    numbered = []
    for path in metadata.glob("*.metadata.json"):
        match = _METADATA_VERSION.match(path.name)
        if match:
            numbered.append((int(match.group(1)), path.name, path))
    return max(numbered)[2] if numbered else None


def read_iceberg_state(dataset: str, location: Path) -> TableState | None:
    """The table's state, or ``None`` when there is no table at ``location`` yet."""
    metadata_file = latest_metadata_file(location)
    if metadata_file is None:
        return None
    try:
        metadata = StaticTable.from_metadata(str(metadata_file)).metadata
    except Exception as error:  # pyiceberg raises many types for a corrupt file
        raise TableStateError(f"{metadata_file}: cannot read Iceberg metadata: {error}") from error
    refs = []
    for name, ref in sorted(metadata.refs.items()):
        if name == "main":
            continue
        snapshot = metadata.snapshot_by_id(ref.snapshot_id)
        refs.append(TableRef(
            name=name,
            type=RefType.TAG if ref.snapshot_ref_type is SnapshotRefType.TAG else RefType.BRANCH,
            snapshot_id=ref.snapshot_id,
            snapshot_timestamp=datetime.fromtimestamp(snapshot.timestamp_ms / 1000, timezone.utc) if snapshot else None,
        ))
    return TableState(dataset=dataset, current_snapshot_id=metadata.current_snapshot_id, refs=tuple(refs))


def read_table_states(catalog: Mapping[str, CatalogDataset], locations: Mapping[str, Path]) -> dict[str, TableState]:
    """States of every catalogued Iceberg table that exists on the local filesystem."""
    states = {}
    for dataset, entry in sorted(catalog.items()):
        location = locations.get(dataset)
        if entry.format is DatasetFormat.ICEBERG and location is not None and location.is_dir():
            state = read_iceberg_state(dataset, location)
            if state is not None:
                states[dataset] = state
    return states
