"""Batches of erasure requests from a CSV or JSONL file.

Columns / keys: ``value`` (required: the subject's key value), ``request_id`` (default: the
``--request-id`` given, else ``<file stem>-<line>``), ``received_at`` (ISO 8601 with a time zone;
default: the time given by the caller). A bad line is an error naming ``file:line`` and the field:
a plan must not silently leave a subject out.

Values are taken exactly as written, by one rule for ``--subject``, CSV and JSONL: nothing is
trimmed here (a CSV field ``" 17 "`` stays ``" 17 "``, and the planner refuses it for an integer
key), and a JSON number becomes its JSON text (``4242.0`` stays ``4242.0``: not user 4242). The
strict parse against the key column's type happens when the plan is made (``model.key_values``).
"""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from piitracer.model.plan import Subject
from piitracer.model.errors import InputError


class RequestFileError(InputError, ValueError):
    """A request file that cannot be used; the message names file, line and field."""


def read_requests(path: Path, *, default_request_id: str | None, default_received_at: datetime) -> list[Subject]:
    """Every subject of a ``.csv`` or ``.jsonl``/``.ndjson`` file (one plan covers the batch)."""
    return [subject for _, subject in read_labelled_requests(path, default_request_id=default_request_id,
                                                             default_received_at=default_received_at)]


def read_labelled_requests(path: Path, *, default_request_id: str | None,
                           default_received_at: datetime) -> list[tuple[str, Subject]]:
    """Like :func:`read_requests`, each subject with its ``file:line`` (for messages that must
    name a value's position without showing it)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise RequestFileError(f"{path}: cannot read: {error}") from None
    suffix = path.suffix.lower()
    if suffix == ".csv":
        rows = _csv_rows(path, text)
    elif suffix in (".jsonl", ".ndjson"):
        rows = _jsonl_rows(path, text)
    else:
        raise RequestFileError(f"{path}: expected a .csv or .jsonl file of requests")
    subjects = []
    for line, row in rows:
        subjects.append((f"{path}:{line}", _subject(path, line, row, default_request_id, default_received_at)))
    if not subjects:
        raise RequestFileError(f"{path}: no requests in the file")
    return subjects


def _csv_rows(path: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    reader = csv.DictReader(io.StringIO(text))
    try:
        header = reader.fieldnames
    except csv.Error as error:
        raise RequestFileError(f"{path}:1: not a readable CSV header: {error}") from None
    if header is None or "value" not in [f.strip() for f in header]:
        raise RequestFileError(f"{path}:1: expected a header with a 'value' column (and optionally request_id, received_at)")
    rows = []
    while True:
        previous = reader.line_num
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as error:  # e.g. a field over the csv module's size limit, a stray quote
            line = max(reader.line_num, previous + 1)  # the failing line may not be counted yet
            raise RequestFileError(f"{path}:{line}: not a readable CSV line: {error}") from None
        if None in row:
            raise RequestFileError(f"{path}:{reader.line_num}: more fields than the header names")
        # Header names may be padded; values are kept exactly as written (see the module docstring).
        cleaned = {k.strip(): v for k, v in row.items()}
        if all(v is None or v == "" for v in cleaned.values()):
            continue
        for key in ("request_id", "received_at"):
            if isinstance(cleaned.get(key), str):
                cleaned[key] = cleaned[key].strip()
        rows.append((reader.line_num, cleaned))
    return rows


def _jsonl_rows(path: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    rows = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise RequestFileError(f"{path}:{number}: not valid JSON: {error.msg}") from None
        if not isinstance(row, dict):
            raise RequestFileError(f"{path}:{number}: expected an object with a 'value' key")
        rows.append((number, row))
    return rows


def _subject(path: Path, line: int, row: dict[str, Any], request_id: str | None, received_at: datetime) -> Subject:
    value = row.get("value")
    if value is None or (isinstance(value, str) and not value.strip()):
        raise RequestFileError(f"{path}:{line}: value: required, got nothing")
    if isinstance(value, (dict, list, bool)):
        raise RequestFileError(f"{path}:{line}: value: expected a string or a number")
    if isinstance(value, float):
        # A JSON number with a fraction or an exponent is never an integer id: keep it visibly
        # non-integral (``1e3`` parses to 1000.0, which must not become user 1000).
        value = repr(value)
    try:
        return Subject(
            value=str(value),
            request_id=str(row.get("request_id") or request_id or f"{path.stem}-{line}"),
            received_at=row.get("received_at") or received_at,
        )
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise RequestFileError(f"{path}:{line}: {field}: {first['msg']}") from None
