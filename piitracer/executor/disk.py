"""File listings of a table folder, to report what a physical step removed."""

from __future__ import annotations

from pathlib import Path


def files_with_sizes(location: Path) -> dict[str, int]:
    """Every file under ``location`` (hidden and underscore folders too) with its size."""
    if not location.exists():
        return {}
    return {str(p): p.stat().st_size for p in location.rglob("*") if p.is_file()}


def removed_between(before: dict[str, int], after: dict[str, int]) -> tuple[int, int]:
    """(files, bytes) present before and gone after."""
    gone = [path for path in before if path not in after]
    return len(gone), sum(before[path] for path in gone)
