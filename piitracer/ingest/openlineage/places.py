"""Where OpenLineage events live, without the parsers: the file suffixes read as events and the
workspace's received-events file. The lineage store's freshness check needs only these (it runs
in every plan and execute; the parsers and their models load when a unit is parsed)."""

from __future__ import annotations

from piitracer.workspace.layout import StateLayout

JSON_SUFFIXES = frozenset({".json"})
LINE_SUFFIXES = frozenset({".jsonl", ".ndjson"})
EVENT_SUFFIXES = JSON_SUFFIXES | LINE_SUFFIXES

FOLDER = StateLayout.relative("lineage")
EVENTS_FILE = FOLDER / "events.jsonl"
