"""The workspace's store of OpenLineage events received over HTTP (``piitracer serve``).

Accepted events are appended, one JSON object per line, to ``.piitracer/lineage/events.jsonl``;
the workspace ingest reads that file like any event file (``ingest_workspace``), so a `plan`
after a producer sent its events sees them.

A refused body is never silently dropped, and never kept in clear: it becomes one record (a JSON
file) in ``.piitracer/lineage/rejected/`` with the time, the HTTP status and the defects found;
its body is kept **encrypted** under the master key when the server has one (a
:class:`BodyCipher`, ``crypto.sealed_body``), else only as its SHA-256 digest. A body too large to
read (413) keeps only its size. Records expire after ``retention`` (30 days by default): expired
ones are deleted when the store starts and on a later receive. Closing an erasure request deletes
every record that holds one of its values (:func:`forget_values`).

Limits, all enforced before anything grows past them: the body as sent (``max_body_bytes``, also
checked against ``Content-Length`` by the server before reading), the body once inflated
(gzip/deflate, inflated in bounded steps: ``max_inflated_bytes``), and the JSON nesting depth
(``max_depth``, checked before the parser runs, so it never recurses into a ``RecursionError``).

Events carry lineage (job, dataset and column names), never subject values; a producer that put
a value in a facet of a *valid* event would have it stored in events.jsonl as sent, like any
event file of the workspace.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import threading
import uuid
import zlib
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable, Protocol

from piitracer.storage.locations import Location
from piitracer.storage.store import Store
from piitracer.ingest.openlineage.models import validate_event
from piitracer.model.errors import InputError, PiitracerError
from piitracer.ingest.openlineage.places import EVENTS_FILE, FOLDER

REJECTED_FOLDER = FOLDER / "rejected"
LEGACY_REJECTED_FILE = FOLDER / "rejected.jsonl"  # before 2026-11-26: bodies in clear, converted at start
MAX_BODY_BYTES = 16 * 1024 * 1024  # one event; Spark's largest column-lineage events are well below
MAX_DEPTH = 64  # OpenLineage events nest about 8 levels; facets a few more
DEFAULT_RETENTION = timedelta(days=30)
SCHEMA_VERSION = 1
_STAMP = "%Y%m%dT%H%M%S%fZ"
_RECORD_NAME = re.compile(r"^(\d{8}T\d{12}Z)-[0-9a-f]{32}\.json$")


class EventRejected(InputError, ValueError):
    """A POSTed body that is not one valid OpenLineage event; the message says why (never the body)."""


class BodyTooLarge(EventRejected):
    """A body, as sent or once inflated, over the store's limit (answered 413)."""


class BodyCipher(Protocol):
    """What seals rejected bodies (the master key, ``crypto.sealed_body.BodySealer``)."""

    fingerprint: str

    def seal(self, body: bytes, record_id: str) -> dict[str, str]: ...

    def open(self, sealed: dict[str, str], record_id: str) -> bytes: ...


@dataclass(frozen=True)
class Limits:
    """The receiving limits: bytes as sent, bytes once inflated, JSON nesting depth."""

    max_body_bytes: int = MAX_BODY_BYTES
    max_inflated_bytes: int = MAX_BODY_BYTES
    max_depth: int = MAX_DEPTH


@dataclass(frozen=True)
class Received:
    """What the store did with one body: ``accepted`` and the event's kind, or the reason."""

    accepted: bool
    kind: str | None = None
    reason: str | None = None
    too_large: bool = False

    @property
    def status(self) -> int:
        """The HTTP status that answers it: 201 stored, 413 too large, 400 malformed."""
        return 201 if self.accepted else 413 if self.too_large else 400


@dataclass(frozen=True)
class RejectedEvent:
    """One kept record of a refused body; ``body`` is the body as sent when it was opened."""

    record_id: str
    path: Path
    record: dict[str, Any]
    body: bytes | None = None


@dataclass(frozen=True)
class Forgotten:
    """What :func:`forget_values` did: records checked, deleted because they held a value, deleted
    because they could not be opened (no or another master key)."""

    checked: int
    deleted_holding_values: int
    deleted_unreadable: int


class ReceivedEvents:
    """Appends received events to the workspace's lineage store and keeps refused ones (see the
    module docstring). Thread-safe: the server decodes and stores on a thread pool."""

    def __init__(self, workspace_root: Path, cipher: BodyCipher | None = None,
                 retention: timedelta = DEFAULT_RETENTION, limits: Limits = Limits(), expire: bool = True) -> None:
        self.events_path = workspace_root / EVENTS_FILE
        self.rejected_folder = workspace_root / REJECTED_FOLDER
        self.cipher, self.retention, self.limits = cipher, retention, limits
        self._lock = threading.Lock()
        self._next_expiry: datetime | None = None
        self._convert_legacy(workspace_root / LEGACY_REJECTED_FILE)
        if expire:
            self.expire()

    def receive(self, body: bytes, content_encoding: str | None = None) -> Received:
        """Decode, validate and store one POSTed body (gzip or deflate when the header says so);
        a refused one is kept as a rejected record with its reason (never in clear)."""
        self._expire_due()
        try:
            text = decompressed(body, content_encoding, self.limits)
            event = parse_event(text, self.limits.max_depth)
            kind, reason = validate_event(event)
            if reason:
                raise EventRejected(reason)
            line = _line(event)
        except BodyTooLarge as refused:
            self.keep_rejected(413, str(refused), len(body), None)
            return Received(False, reason=str(refused), too_large=True)
        except EventRejected as refused:
            self.keep_rejected(400, str(refused), len(body), body, content_encoding)
            return Received(False, reason=str(refused))
        except (RecursionError, ValueError, TypeError) as unexpected:  # never a 500 for a body
            reason = f"body could not be read ({type(unexpected).__name__})"
            self.keep_rejected(400, reason, len(body), body, content_encoding)
            return Received(False, reason=reason)
        self._write_line(line)
        return Received(True, kind=kind)

    def too_large(self, reason: str, bytes_read: int) -> Received:
        """Record a body the server stopped reading at the limit (413); only its size is kept."""
        self._expire_due()
        self.keep_rejected(413, reason, bytes_read, None)
        return Received(False, reason=reason, too_large=True)

    def keep_rejected(self, status: int, reason: str, body_bytes: int, body: bytes | None,
                      content_encoding: str | None = None, received_at: datetime | None = None) -> Path:
        """Write one rejected record: the body sealed under the master key, or its digest only, or
        (``body`` None) nothing of it."""
        at = received_at or datetime.now(timezone.utc)
        record_id = f"{at.strftime(_STAMP)}-{uuid.uuid4().hex}"
        record: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "id": record_id,
                                  "received_at": at.isoformat(timespec="milliseconds"), "status": status,
                                  "reason": reason, "body_bytes": body_bytes,
                                  "content_encoding": _encoding_name(content_encoding)}
        if body is None:
            record["kept"] = "nothing"
        elif self.cipher is not None:
            record["kept"] = "encrypted"
            record["body"] = self.cipher.seal(body, record_id)
        else:
            record["kept"] = "digest"
            record["body_sha256"] = hashlib.sha256(body).hexdigest()
        path = self.rejected_folder / f"{record_id}.json"
        _write_file(path, json.dumps(record, sort_keys=True, indent=1).encode() + b"\n")
        with self._lock:
            if self._next_expiry is None or at + self.retention < self._next_expiry:
                self._next_expiry = at + self.retention
        return path

    def expire(self, now: datetime | None = None) -> int:
        """Delete the rejected records older than the retention; returns how many."""
        now = now or datetime.now(timezone.utc)
        deleted, oldest = 0, None
        for path, at in _records(self.rejected_folder):
            if at + self.retention <= now:
                path.unlink(missing_ok=True)
                deleted += 1
            elif oldest is None or at < oldest:
                oldest = at
        with self._lock:
            self._next_expiry = oldest + self.retention if oldest else None
        for partial in self.rejected_folder.glob("*.part"):  # left by a crash mid-write: may hold a body too
            try:
                if datetime.fromtimestamp(partial.stat().st_mtime, timezone.utc) + self.retention <= now:
                    partial.unlink()
                    deleted += 1
            except FileNotFoundError:
                pass
        return deleted

    def _expire_due(self) -> None:
        # Listing the folder on every POST would cost a scan per event: only when a record is due.
        due = self._next_expiry
        if due is not None and datetime.now(timezone.utc) >= due:
            self.expire()

    def _write_line(self, line: str) -> None:
        with self._lock:
            self.events_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            with open(self.events_path, "a", encoding="utf-8") as handle:
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())  # answered 201 means it is on disk

    def _convert_legacy(self, legacy: Path) -> None:
        """Older versions kept rejected bodies in clear in rejected.jsonl: seal (or digest) each
        and delete the file."""
        if not legacy.exists():
            return
        for number, text in enumerate(legacy.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            try:
                old = json.loads(text)
                at = datetime.fromisoformat(old["received_at"])
                at = at if at.tzinfo else at.replace(tzinfo=timezone.utc)
                body = old.get("body")
                self.keep_rejected(400, str(old.get("reason", "")), int(old.get("body_bytes", 0)),
                                   body.encode() if isinstance(body, str) else None, received_at=at)
            except (ValueError, KeyError, TypeError, AttributeError):
                self.keep_rejected(400, f"{LEGACY_REJECTED_FILE} line {number}: unreadable legacy record", 0,
                                   text.encode())
        legacy.unlink()


def kept_rejected(workspace_root: Path, cipher: BodyCipher | None = None) -> list[RejectedEvent]:
    """Every rejected record of the workspace, oldest first; with ``cipher`` the sealed bodies are
    opened (:class:`~piitracer.crypto.envelope.MasterKeyError` when one does not open)."""
    found = []
    for path, _ in sorted(_records(workspace_root / REJECTED_FOLDER)):
        record = json.loads(path.read_text(encoding="utf-8"))
        body = cipher.open(record["body"], record["id"]) if cipher is not None and record.get("kept") == "encrypted" else None
        found.append(RejectedEvent(path.name[:-5], path, record, body))
    return found


def has_rejected(workspace_root: Path) -> bool:
    """Whether the workspace keeps rejected bodies (records, or an older version's rejected.jsonl)."""
    return (workspace_root / REJECTED_FOLDER).exists() or (workspace_root / LEGACY_REJECTED_FILE).exists()


def forget_values(workspace_root: Path, values: Iterable[str], cipher: BodyCipher | None) -> Forgotten:
    """Delete every rejected record that holds one of ``values`` (a closed request's): in its
    reason, in its body opened and inflated, or as the digest of a body that is just the value.
    A sealed body that cannot be opened (``cipher`` None or another master key) is deleted too:
    what cannot be searched cannot be shown not to hold the person. An older version's
    rejected.jsonl (bodies in clear) is converted first; nothing expires here (the server's
    retention is the server's)."""
    ReceivedEvents(workspace_root, cipher=cipher, expire=False)
    wanted = sorted({str(v) for v in values if str(v)})
    digests = {hashlib.sha256(form.encode()).hexdigest() for v in wanted for form in (v, json.dumps(v))}
    checked = holding = unreadable = 0
    for path, _ in sorted(_records(workspace_root / REJECTED_FOLDER)):
        checked += 1
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            path.unlink(missing_ok=True)
            unreadable += 1
            continue
        texts = [str(record.get("reason", ""))]
        if record.get("kept") == "encrypted":
            try:
                body = None if cipher is None else cipher.open(record["body"], record["id"])
            except (PiitracerError, KeyError, TypeError):
                body = None
            if body is None:  # no master key, or not this one: it cannot be searched, so it goes
                path.unlink(missing_ok=True)
                unreadable += 1
                continue
            texts += searchable_texts(body, record.get("content_encoding"))
        if any(v in text for text in texts for v in wanted) or record.get("body_sha256") in digests:
            path.unlink(missing_ok=True)
            holding += 1
    return Forgotten(checked, holding, unreadable)


def searchable_texts(body: bytes, content_encoding: str | None) -> list[str]:
    """The forms a value could take in a kept body: the bytes as text, inflated as far as they
    go (a truncated gzip still holds its first part), and the JSON re-written without escapes."""
    texts = [body.decode("utf-8", "replace")]
    inflated = _inflate_prefix(body, content_encoding)
    if inflated is not None:
        texts.append(inflated.decode("utf-8", "replace"))
    for text in list(texts):
        try:
            texts.append(json.dumps(parse_event(text.encode(), MAX_DEPTH), ensure_ascii=False))
        except (EventRejected, RecursionError, ValueError):
            pass
    return texts


def decompressed(body: bytes, content_encoding: str | None, limits: Limits = Limits()) -> bytes:
    """The body's bytes, inflated as ``Content-Encoding`` says (gzip, deflate — zlib-wrapped or
    raw — or none), never past ``limits.max_inflated_bytes`` (:class:`BodyTooLarge`)."""
    if len(body) > limits.max_body_bytes:
        raise BodyTooLarge(f"body of {len(body)} bytes is larger than the limit of {limits.max_body_bytes} bytes")
    encoding = (content_encoding or "").strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise EventRejected("Content-Encoding is not supported (expected gzip, deflate or none)")
    name = "gzip" if encoding != "deflate" else "deflate"
    out, complete = _inflate(body, name, limits.max_inflated_bytes)
    if not complete and name == "deflate":  # a raw stream whose first bytes look like a zlib header
        out, complete = _inflate(body, "raw", limits.max_inflated_bytes)
    if not complete:
        raise EventRejected(f"body is not complete {name} data (truncated or corrupt)")
    return out


def _inflate(body: bytes, name: str, limit: int) -> tuple[bytes, bool]:
    """Inflate in bounded steps (``max_length``): memory never holds more than ``limit`` + one
    step. Returns (bytes, whether the stream was whole); gzip may hold several members."""
    if name == "gzip":
        wbits = 16 + zlib.MAX_WBITS
    elif name == "raw":
        wbits = -zlib.MAX_WBITS
    else:  # HTTP deflate is zlib-wrapped by the RFC, raw by many clients: the header tells which
        wbits = zlib.MAX_WBITS if len(body) >= 2 and body[0] & 0x0F == 8 and (body[0] << 8 | body[1]) % 31 == 0 \
            else -zlib.MAX_WBITS
    parts: list[bytes] = []
    size, data = 0, body
    step = 64 * 1024
    try:
        while True:
            inflater = zlib.decompressobj(wbits)
            while True:
                chunk = inflater.decompress(data, min(step, limit - size + 1))
                size += len(chunk)
                if size > limit:
                    raise BodyTooLarge(f"body inflates to more than the limit of {limit} bytes")
                parts.append(chunk)
                if inflater.eof:
                    break
                data = inflater.unconsumed_tail
                if not data and not chunk:  # input used up, nothing more comes out: not whole
                    return b"".join(parts), False
            data = inflater.unused_data
            # Only gzip allows a next member; trailing bytes after a deflate stream are a defect.
            if not data or name != "gzip":
                return b"".join(parts), not data
    except zlib.error:
        return b"".join(parts), False


def _inflate_prefix(body: bytes, content_encoding: str | None) -> bytes | None:
    encoding = _encoding_name(content_encoding)
    if encoding not in ("gzip", "deflate"):
        return None
    try:
        return _inflate(body, encoding, MAX_BODY_BYTES)[0]
    except BodyTooLarge:
        return None


_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def nesting_depth(text: bytes, stop_at: int | None = None) -> int:
    """The deepest ``[``/``{`` nesting of a JSON text, strings skipped (stops counting past
    ``stop_at``). Where the text is not JSON the parser fails at the first defect, before it
    could nest deeper than what this counted up to that point."""
    brackets = _STRING.sub(b"", text).translate(None, _NOT_BRACKETS)
    depth = deepest = 0
    for byte in brackets:
        depth += 1 if byte in (0x5B, 0x7B) else -1
        if depth > deepest:
            deepest = depth
            if stop_at is not None and deepest > stop_at:
                break
    return deepest


def parse_event(text: bytes, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of a body (one event object; its validation is ``validate_event``): UTF-8,
    at most ``max_depth`` levels deep, finite numbers only (NaN and Infinity are not JSON)."""
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError as error:
        raise EventRejected(f"body is not UTF-8 text (invalid byte at offset {error.start})") from None
    if nesting_depth(text, max_depth) > max_depth:
        raise EventRejected(f"body is nested more than {max_depth} levels deep")
    try:
        return json.loads(decoded, parse_constant=_not_json, parse_float=_finite)
    except json.JSONDecodeError as error:
        raise EventRejected(f"body is not JSON: {error.msg} at line {error.lineno} column {error.colno}") from None
    except RecursionError:
        raise EventRejected(f"body is nested more than {max_depth} levels deep") from None
    except EventRejected:
        raise
    except ValueError:  # an integer longer than Python converts (4300 digits)
        raise EventRejected("body is not JSON piitracer reads: a number has too many digits") from None


def _not_json(constant: str) -> Any:
    raise EventRejected(f"body is not JSON: {constant} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise EventRejected("body is not JSON piitracer reads: a number is out of the range of a double")
    return value


def _line(event: Any) -> str:
    try:
        text = json.dumps(event, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise EventRejected("body holds a lone UTF-16 surrogate escape (\\ud800-\\udfff): not a character") from None
    return text + "\n"


def _encoding_name(content_encoding: str | None) -> str:
    """The header's value as one of the known names (a header is never kept as sent)."""
    encoding = (content_encoding or "").strip().lower()
    if encoding in ("", "identity"):
        return "identity"
    return {"gzip": "gzip", "x-gzip": "gzip", "deflate": "deflate"}.get(encoding, "unsupported")


def _records(folder: Path) -> list[tuple[Path, datetime]]:
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    found = []
    for name in names:
        match = _RECORD_NAME.match(name)
        if match:
            found.append((folder / name, datetime.strptime(match.group(1), _STAMP).replace(tzinfo=timezone.utc)))
    return found


def _write_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = path.with_suffix(".part")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    # The storage layer puts it in place (atomic for readers, the folder fsynced).
    Store().replace(Location.parse(partial), Location.parse(path))


__all__ = ["EVENTS_FILE", "REJECTED_FOLDER", "BodyCipher", "BodyTooLarge", "EventRejected", "Forgotten", "Limits",
           "Received", "ReceivedEvents", "RejectedEvent", "decompressed", "forget_values", "has_rejected", "kept_rejected",
           "nesting_depth", "parse_event", "searchable_texts"]
