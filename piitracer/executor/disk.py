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


def relative_listing(location: Path) -> dict[str, int]:
    """Every file under ``location`` by its path relative to it (what an attempt journals)."""
    return {str(Path(path).relative_to(location)): size for path, size in files_with_sizes(location).items()}


def removed_since_first_attempt(location: Path, attempt, before_action: dict[str, int] | None = None) -> dict[str, int]:
    """The listing the *first* attempt of a step journaled before it removed anything (``Attempt``):
    a step that deletes files and is killed part-way is run again on resume, and without the
    first listing the files the killed attempt removed would not be counted (the audit trail
    would under-report the erasure)."""
    listing = relative_listing(location) if before_action is None else before_action
    first = attempt.start({"files_before": listing}) if attempt is not None else {"files_before": listing}
    return dict(first.get("files_before", listing))
