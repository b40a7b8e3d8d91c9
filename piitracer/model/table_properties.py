"""The table properties that carry what the catalog's ``retention`` and ``write_mode`` say, in the
formats' own words: Iceberg's ``history.expire.max-snapshot-age-ms`` /
``history.expire.min-snapshots-to-keep`` / ``write.delete.mode``, Delta's
``delta.deletedFileRetentionDuration`` / ``delta.logRetentionDuration`` (``interval 7 days``).

Both directions live here: the demo builder writes a catalog entry's settings onto its tables, and
discovery reads a table's properties back into catalog terms. ``maintenance_every`` (how often
expiry or VACUUM really runs) is no table property: only a person knows it.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Mapping

from piitracer.model.workspace import IcebergWriteMode, Retention

ICEBERG_MAX_SNAPSHOT_AGE = "history.expire.max-snapshot-age-ms"
ICEBERG_MIN_SNAPSHOTS = "history.expire.min-snapshots-to-keep"
ICEBERG_DELETE_MODE = "write.delete.mode"
ICEBERG_MODES = (ICEBERG_DELETE_MODE, "write.update.mode", "write.merge.mode")
DELTA_DELETED_FILE_RETENTION = "delta.deletedFileRetentionDuration"
DELTA_LOG_RETENTION = "delta.logRetentionDuration"

_INTERVAL = re.compile(r"^\s*interval\s+(\d+)\s+(second|minute|hour|day|week)s?\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800}


def iceberg_properties(retention: Retention, write_mode: IcebergWriteMode | None) -> dict[str, str]:
    """The Iceberg properties for a catalog entry's retention and write mode (only those it sets)."""
    found: dict[str, str] = {}
    if write_mode is not None:
        found.update(dict.fromkeys(ICEBERG_MODES, write_mode.value))
    if retention.snapshot_max_age is not None:
        found[ICEBERG_MAX_SNAPSHOT_AGE] = str(int(retention.snapshot_max_age.total_seconds() * 1000))
    if retention.min_snapshots_to_keep is not None:
        found[ICEBERG_MIN_SNAPSHOTS] = str(retention.min_snapshots_to_keep)
    return found


def delta_properties(retention: Retention) -> dict[str, str]:
    """The Delta table configuration for a catalog entry's retention (only what it sets)."""
    found: dict[str, str] = {}
    if retention.deleted_file_retention is not None:
        found[DELTA_DELETED_FILE_RETENTION] = delta_interval(retention.deleted_file_retention)
    if retention.log_retention is not None:
        found[DELTA_LOG_RETENTION] = delta_interval(retention.log_retention)
    return found


def delta_interval(value: timedelta) -> str:
    """``7 days`` -> ``interval 7 days`` (the largest whole unit, as Delta writes it)."""
    seconds = int(value.total_seconds())
    for unit in ("week", "day", "hour", "minute"):
        size = _UNIT_SECONDS[unit]
        if seconds and seconds % size == 0:
            return f"interval {seconds // size} {unit}s"
    return f"interval {seconds} seconds"


def parse_delta_interval(text: str) -> timedelta | None:
    """``interval 7 days`` -> 7 days; None for what is not such an interval (reported, not guessed)."""
    match = _INTERVAL.match(text or "")
    if match is None:
        return None
    return timedelta(seconds=int(match[1]) * _UNIT_SECONDS[match[2].lower()])


def iceberg_retention(properties: Mapping[str, str]) -> tuple[dict[str, object], list[str]]:
    """(the catalog's retention fields an Iceberg table's properties set, problems) — a property
    that is not a number is a problem, never a guess."""
    fields: dict[str, object] = {}
    problems = []
    for prop, name, convert in ((ICEBERG_MAX_SNAPSHOT_AGE, "snapshot_max_age", lambda n: timedelta(milliseconds=n)),
                                (ICEBERG_MIN_SNAPSHOTS, "min_snapshots_to_keep", lambda n: n)):
        if prop in properties:
            try:
                fields[name] = convert(int(properties[prop]))
            except ValueError:
                problems.append(f"{prop} is not a whole number")
    return fields, problems


def delta_retention(configuration: Mapping[str, str]) -> tuple[dict[str, object], list[str]]:
    """(the catalog's retention fields a Delta table's configuration sets, problems)."""
    fields: dict[str, object] = {}
    problems = []
    for prop, name in ((DELTA_DELETED_FILE_RETENTION, "deleted_file_retention"), (DELTA_LOG_RETENTION, "log_retention")):
        if prop in configuration:
            parsed = parse_delta_interval(configuration[prop])
            if parsed is None:
                problems.append(f"{prop} is not an 'interval N unit' duration")
            else:
                fields[name] = parsed
    return fields, problems
