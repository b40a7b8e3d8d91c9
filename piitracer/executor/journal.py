"""The execution journal (SQLite, embedded): every step before and after it runs, so a killed run
resumes where it stopped and a committed step is never applied twice.

The resolved subject values live here too, for resume, per request: each request's values are
sealed under that request's own data key (``crypto.envelope``) when the caller gives a
``ValueCipher`` (the CLI always does), and deleted when the request is closed. The file and its
folder are created with mode 0600/0700, and ``secure_delete`` overwrites deleted values in the file.
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from piitracer.model.steps import StepRecord

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, plan_id TEXT NOT NULL, started_at TEXT NOT NULL,
    finished_at TEXT, status TEXT NOT NULL, options TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS steps (
    plan_id TEXT NOT NULL, step_id TEXT NOT NULL, run_id TEXT NOT NULL, step_order INTEGER NOT NULL,
    dataset TEXT NOT NULL, action TEXT NOT NULL, state TEXT NOT NULL,
    started_at TEXT, finished_at TEXT, outcome TEXT, message TEXT,
    PRIMARY KEY (plan_id, step_id)
);
CREATE TABLE IF NOT EXISTS request_values (
    plan_id TEXT NOT NULL, request_id TEXT NOT NULL, name TEXT NOT NULL, value_type TEXT NOT NULL,
    value_json TEXT NOT NULL, PRIMARY KEY (plan_id, request_id, name)
);
"""
CLEAR = "clear"  # value_json is plain JSON (an API caller without a cipher); else it is sealed

RUNNING, COMMITTED, FAILED, BLOCKED, PENDING = "running", "committed", "failed", "blocked", "pending"
# A person's step (manual, manual_review, recompute): open until its owner attests it, then attested.
AWAITING, ATTESTED = "awaiting_attestation", "attested"


@dataclass(frozen=True)
class JournaledStep:
    """A step's row as the executor resumes from it: state, the stored outcome (with an attempt's
    facts while running) and message. What is recorded and reported is a :class:`StepRecord`."""

    step_id: str
    state: str
    outcome: dict[str, Any] | None
    message: str | None


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class Journal:
    """One SQLite file holding the runs of any number of plans."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not self.path.exists():
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600))
        os.chmod(self.path, 0o600)
        self._db = sqlite3.connect(self.path, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=DELETE")  # no -wal side files holding values
        self._db.execute("PRAGMA secure_delete=ON")  # a deleted value is overwritten in the file, not left in a free page
        self._db.execute("PRAGMA synchronous=FULL")  # a step marked committed survives a kill
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ---- runs -----------------------------------------------------------------------------

    def start_run(self, run_id: str, plan_id: str, options: dict[str, Any]) -> None:
        self._db.execute("INSERT INTO runs VALUES (?, ?, ?, NULL, 'running', ?)",
                         (run_id, plan_id, now(), json.dumps(options, sort_keys=True)))

    def finish_run(self, run_id: str, status: str) -> None:
        self._db.execute("UPDATE runs SET finished_at = ?, status = ? WHERE run_id = ?", (now(), status, run_id))

    def plans_run(self) -> set[str]:
        """Every plan id this journal ran (each was recorded in the audit log before its first step)."""
        return {row[0] for row in self._db.execute("SELECT DISTINCT plan_id FROM runs")}

    def finished_runs(self) -> set[str]:
        """Every run that finished (complete, incomplete or failed), not one killed while running."""
        return {row[0] for row in self._db.execute("SELECT run_id FROM runs WHERE finished_at IS NOT NULL")}

    def has_steps(self, plan_id: str) -> bool:
        return self._db.execute("SELECT 1 FROM steps WHERE plan_id = ? LIMIT 1", (plan_id,)).fetchone() is not None

    # ---- steps ----------------------------------------------------------------------------

    def step(self, plan_id: str, step_id: str) -> JournaledStep | None:
        row = self._db.execute("SELECT state, outcome, message FROM steps WHERE plan_id = ? AND step_id = ?",
                               (plan_id, step_id)).fetchone()
        if row is None:
            return None
        return JournaledStep(step_id, row[0], json.loads(row[1]) if row[1] else None, row[2])

    def records(self, plan_id: str | None) -> list[StepRecord]:
        """Every journaled step of a plan (``None``: of every plan) as the audit trail records it,
        in plan order."""
        return [StepRecord.of(step_id=r["step_id"], order=r["order"], dataset=r["dataset"], action=r["action"],
                              state=r["state"], outcome=r["outcome"], run_id=r["run_id"], started_at=r["started_at"],
                              finished_at=r["finished_at"], message=r["message"]) for r in self.steps(plan_id)]

    def steps(self, plan_id: str | None) -> list[dict[str, Any]]:
        """Every journaled step of a plan (``None``: of every plan), in plan order."""
        rows = self._db.execute(
            "SELECT step_id, step_order, dataset, action, state, started_at, finished_at, outcome, message, run_id "
            "FROM steps WHERE ? IS NULL OR plan_id = ? ORDER BY plan_id, step_order", (plan_id, plan_id)).fetchall()
        keys = ("step_id", "order", "dataset", "action", "state", "started_at", "finished_at", "outcome", "message", "run_id")
        records = [dict(zip(keys, row)) for row in rows]
        for record in records:
            record["outcome"] = json.loads(record["outcome"]) if record["outcome"] else None
        return records

    def mark(self, plan_id: str, run_id: str, step, state: str, outcome: dict[str, Any] | None = None,
             message: str | None = None) -> None:
        """Record a step's state (before it runs: ``running``; after: ``committed``/``failed``...)."""
        stamp = now()
        self._db.execute(
            """INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
               ON CONFLICT (plan_id, step_id) DO UPDATE SET run_id = excluded.run_id, state = excluded.state,
                 started_at = CASE WHEN excluded.state = 'running' THEN excluded.started_at ELSE steps.started_at END,
                 finished_at = excluded.finished_at, outcome = excluded.outcome, message = excluded.message""",
            (plan_id, step.id, run_id, step.order, step.dataset, step.action.value, state, stamp,
             None if state == RUNNING else stamp, json.dumps(outcome, sort_keys=True) if outcome else None, message),
        )

    def save_attempt(self, plan_id: str, step_id: str, facts: dict[str, Any]) -> None:
        """Keep what a running step recorded as it started (counts and versions, never values):
        it survives a kill, for the next attempt (see ``outcome.Attempt``)."""
        self._db.execute("UPDATE steps SET outcome = ? WHERE plan_id = ? AND step_id = ? AND state = 'running'",
                         (json.dumps({"attempt": facts}, sort_keys=True), plan_id, step_id))

    # ---- resolved values (sensitive) ------------------------------------------------------

    def save_values(self, plan_id: str, per_request: dict[str, dict[str, list[Any]]], cipher=None) -> None:
        """Keep each request's value sets (sealed under its data key when ``cipher`` is given)."""
        with self._db:
            for request_id, value_sets in sorted(per_request.items()):
                for name, values in sorted(value_sets.items()):
                    kind = _type_name(values)
                    text = json.dumps(_encoded(kind, values))
                    if cipher is not None:
                        text = cipher.seal(request_id, text, f"journal|{plan_id}|{name}")
                    self._db.execute("INSERT OR REPLACE INTO request_values VALUES (?, ?, ?, ?, ?)",
                                     (plan_id, request_id, name, kind if cipher is not None else f"{kind}|{CLEAR}", text))

    def load_request_values(self, plan_id: str, cipher=None) -> dict[str, dict[str, list[Any]]] | None:
        """request id -> value set -> values; None when the plan was never resolved. A request whose
        values cannot be opened (shredded at close) raises ``ShreddedError`` from the cipher."""
        rows = self._db.execute("SELECT request_id, name, value_type, value_json FROM request_values WHERE plan_id = ?",
                                (plan_id,)).fetchall()
        if not rows:
            return None
        found: dict[str, dict[str, list[Any]]] = {}
        for request_id, name, kind, text in rows:
            kind, _, clear = kind.partition("|")
            if not clear:
                if cipher is None:
                    from piitracer.crypto.envelope import MasterKeyError

                    raise MasterKeyError("the journal's values are encrypted: give the master key (--master-key-file)")
                text = cipher.open(request_id, text, f"journal|{plan_id}|{name}")
            found.setdefault(request_id, {})[name] = _decoded(kind, json.loads(text))
        return found

    def load_values(self, plan_id: str, cipher=None, skip: set[str] | frozenset[str] = frozenset()) -> dict[str, list[Any]] | None:
        """The union over the plan's requests (but ``skip``) of each value set; None when never resolved."""
        per_request = self.load_request_values(plan_id, cipher) if not skip else self._readable(plan_id, cipher, skip)
        if per_request is None:
            return None
        union: dict[str, set[Any]] = {}
        for value_sets in per_request.values():
            for name, values in value_sets.items():
                union.setdefault(name, set()).update(values)
        return {name: sorted(values, key=repr) for name, values in sorted(union.items())}

    def _readable(self, plan_id: str, cipher, skip) -> dict[str, dict[str, list[Any]]] | None:
        rows = self._db.execute("SELECT DISTINCT request_id FROM request_values WHERE plan_id = ?", (plan_id,)).fetchall()
        if not rows:
            return None
        kept = {r for (r,) in rows} - set(skip)
        everything = self.load_request_values(plan_id, _Only(cipher, kept)) or {}
        return {rid: sets for rid, sets in everything.items() if rid in kept}

    def resolved_requests(self, plan_id: str) -> set[str]:
        return {r for (r,) in self._db.execute("SELECT DISTINCT request_id FROM request_values WHERE plan_id = ?", (plan_id,))}

    def forget_request(self, request_id: str) -> int:
        """Delete a request's resolved values and computed forms from every plan (close): the rows
        are overwritten in place (secure_delete) and the file rebuilt."""
        with self._db:
            deleted = self._db.execute("DELETE FROM request_values WHERE request_id = ?", (request_id,)).rowcount
        self._db.execute("VACUUM")
        return deleted


class _Only:
    """A cipher view that opens only some requests (the others' rows are skipped, not opened)."""

    def __init__(self, cipher, requests: set[str]) -> None:
        self.cipher, self.requests = cipher, requests

    def open(self, request_id: str, token: str, purpose: str) -> str:
        if request_id not in self.requests:
            return "[]"
        return self.cipher.open(request_id, token, purpose)


MIXED = "mixed"  # a value set whose values are of several types: each value kept with its own


def _type_name(values: list[Any]) -> str:
    kinds = {type(v).__name__ for v in values}
    if len(kinds) > 1:
        return MIXED
    return kinds.pop() if kinds else "str"


def _encoded(kind: str, values: list[Any]) -> list[Any]:
    """The JSON form of a value set's values (each with its type when they are of several types)."""
    if kind == MIXED:
        return [[type(v).__name__, _jsonable(v)] for v in values]
    return [_jsonable(v) for v in values]


def _decoded(kind: str, values: list[Any]) -> list[Any]:
    if kind == MIXED:
        return [_from_json(each, value) for each, value in values]
    return [_from_json(kind, v) for v in values]


def _jsonable(value: Any) -> Any:
    if isinstance(value, (int, float, str)) or value is None:
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def _from_json(kind: str, value: Any) -> Any:
    if kind == "Decimal":
        from decimal import Decimal

        return Decimal(value)
    if kind == "date":
        return date.fromisoformat(value)
    if kind == "datetime":
        return datetime.fromisoformat(value)
    if kind == "bytes":
        return base64.b64decode(value)
    return value
