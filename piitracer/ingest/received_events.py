"""The workspace's store of OpenLineage events received over HTTP (``piitracer serve``).

Accepted events are appended, one JSON object per line, to ``.piitracer/lineage/events.jsonl``;
the workspace ingest reads that file like any event file (``ingest_workspace``), so a `plan`
after a producer sent its events sees them. A malformed event is never dropped: its body (or as
much of it as was readable) goes to ``.piitracer/lineage/rejected.jsonl`` with the reason and the
time, for a person to look at; the producer gets the same reason in the 400 answer.

Events carry lineage (job, dataset and column names), never subject values; a producer that put
a value in a facet would have it stored here as sent, like any event file of the workspace.
"""

from __future__ import annotations

import gzip
import json
import os
import threading
import zlib
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from piitracer.ingest.openlineage import validate_event
from piitracer.model.errors import PiitracerError

FOLDER = Path(".piitracer") / "lineage"
EVENTS_FILE = FOLDER / "events.jsonl"
REJECTED_FILE = FOLDER / "rejected.jsonl"
MAX_BODY_BYTES = 16 * 1024 * 1024  # one event; Spark's largest column-lineage events are well below


class EventRejected(PiitracerError, ValueError):
    """A POSTed body that is not one valid OpenLineage event; the message says why."""


@dataclass(frozen=True)
class Received:
    """What the store did with one body: ``accepted`` and the event's kind, or the reason."""

    accepted: bool
    kind: str | None = None
    reason: str | None = None


class ReceivedEvents:
    """Appends received events to the workspace's lineage store (thread-safe: the server runs
    requests on a thread pool)."""

    def __init__(self, workspace_root: Path) -> None:
        self.events_path = workspace_root / EVENTS_FILE
        self.rejected_path = workspace_root / REJECTED_FILE
        self._lock = threading.Lock()

    def receive(self, body: bytes, content_encoding: str | None = None) -> Received:
        """Decode, validate and store one POSTed body (gzip or deflate when the header says so);
        a malformed one is kept in the rejected file with its reason."""
        text: bytes | None = None
        try:
            text = decompressed(body, content_encoding)
            event = parse_event(text)
            kind, reason = validate_event(event)
            if reason:
                raise EventRejected(reason)
        except EventRejected as rejected:
            self._append(self.rejected_path, {
                "received_at": _now(), "reason": str(rejected), "body_bytes": len(body),
                "body": text.decode("utf-8", "replace") if text is not None else None,
            })
            return Received(False, reason=str(rejected))
        self._append(self.events_path, event)
        return Received(True, kind=kind)

    def _append(self, path: Path, record: dict[str, Any]) -> None:
        line = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
        with self._lock:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())  # answered 201 means it is on disk


def decompressed(body: bytes, content_encoding: str | None) -> bytes:
    """The body's bytes, decompressed as ``Content-Encoding`` says (gzip, deflate or none)."""
    if len(body) > MAX_BODY_BYTES:
        raise EventRejected(f"body of {len(body)} bytes is larger than {MAX_BODY_BYTES} bytes")
    encoding = (content_encoding or "").strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "deflate"):
        raise EventRejected(f"Content-Encoding {encoding!r} is not supported (expected gzip, deflate or none)")
    try:
        return gzip.decompress(body) if encoding == "gzip" else zlib.decompress(body)
    except (OSError, EOFError, zlib.error):
        raise EventRejected(f"body is not valid {encoding} data") from None


def parse_event(text: bytes) -> Any:
    """The JSON value of a body (one event object; its validation is ``validate_event``)."""
    try:
        return json.loads(text)
    except UnicodeDecodeError:
        raise EventRejected("body is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise EventRejected(f"body is not JSON: {error.msg} at line {error.lineno} column {error.colno}") from None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


__all__ = ["EVENTS_FILE", "REJECTED_FILE", "EventRejected", "Received", "ReceivedEvents", "decompressed", "parse_event"]
