"""File listings of a table location, to report what a physical step removed."""

from __future__ import annotations

from piitracer.storage.locations import Location
from piitracer.storage.store import Store


def removed_between(before: dict[str, int], after: dict[str, int]) -> tuple[int, int]:
    """(files, bytes) present before and gone after."""
    gone = [path for path in before if path not in after]
    return len(gone), sum(before[path] for path in gone)


def removed_since_first_attempt(location: Location, store: Store, attempt) -> dict[str, int]:
    """The listing (relative path -> size) the *first* attempt of a step journaled before it removed
    anything (``Attempt``): a step that deletes files and is killed part-way is run again on resume,
    and without the first listing the files the killed attempt removed would not be counted (the
    audit trail would under-report the erasure)."""
    listing = store.sizes(location)
    first = attempt.start({"files_before": listing}) if attempt is not None else {"files_before": listing}
    return dict(first.get("files_before", listing))
