"""Delta tables read with delta-rs (no Delta jars in Spark here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from piitracer.formats import FormatError


def arrow_schema(location: Path):
    """The table's current schema as Arrow, or None when the folder is not a Delta table."""
    from deltalake import DeltaTable

    if not DeltaTable.is_deltatable(str(location)):
        return None
    try:
        import pyarrow as pa

        return pa.schema(DeltaTable(str(location)).schema().to_arrow())
    except Exception as error:  # delta-rs raises its own error types for a broken log
        raise FormatError(f"{location}: cannot read the Delta log: {type(error).__name__}: {error}") from error


def referenced_paths(location: Path) -> Iterator[tuple[str, str]]:
    """(what, path) for every file path a commit in ``_delta_log`` names (add, remove, cdc; a
    shallow clone's adds are absolute paths into another table) — vacuum deletes removed paths,
    so each must lie where piitracer may act. Relative paths are under the table root."""
    log = Path(location) / "_delta_log"
    for commit in sorted(log.glob("*.json")):
        if not commit.name.split(".")[0].isdigit():
            continue
        for number, line in enumerate(commit.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                action = json.loads(line)
            except json.JSONDecodeError:
                raise FormatError(f"{commit}:{number}: not a JSON line of a Delta commit") from None
            for kind in ("add", "remove", "cdc"):
                path = (action.get(kind) or {}).get("path") if isinstance(action, dict) else None
                if path:
                    yield f"{commit.name} {kind}", path
