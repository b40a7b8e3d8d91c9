"""The execution journal (SQLite, embedded): every step before and after it runs, so a killed run
resumes where it stopped and a committed step is never applied twice.

The resolved subject values live here too, for resume: the file and its folder are created with
mode 0600/0700. Nothing else of piitracer writes subject values to disk besides the plan file.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

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
CREATE TABLE IF NOT EXISTS value_sets (
    plan_id TEXT NOT NULL, name TEXT NOT NULL, value_type TEXT NOT NULL, value_json TEXT NOT NULL,
    PRIMARY KEY (plan_id, name)
);
"""

RUNNING, COMMITTED, FAILED, BLOCKED, PENDING = "running", "committed", "failed", "blocked", "pending"
# A person's step (manual, manual_review, recompute): open until its owner attests it, then attested.
AWAITING, ATTESTED = "awaiting_attestation", "attested"


@dataclass(frozen=True)
class StepRecord:
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
        self._db.execute("PRAGMA synchronous=FULL")  # a step marked committed survives a kill
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        self._db.close()

    # ---- runs -----------------------------------------------------------------------------

    def start_run(self, run_id: str, plan_id: str, options: dict[str, Any]) -> None:
        self._db.execute("INSERT INTO runs VALUES (?, ?, ?, NULL, 'running', ?)",
                         (run_id, plan_id, now(), json.dumps(options, sort_keys=True)))

    def finish_run(self, run_id: str, status: str) -> None:
        self._db.execute("UPDATE runs SET finished_at = ?, status = ? WHERE run_id = ?", (now(), status, run_id))

    def has_steps(self, plan_id: str) -> bool:
        return self._db.execute("SELECT 1 FROM steps WHERE plan_id = ? LIMIT 1", (plan_id,)).fetchone() is not None

    # ---- steps ----------------------------------------------------------------------------

    def step(self, plan_id: str, step_id: str) -> StepRecord | None:
        row = self._db.execute("SELECT state, outcome, message FROM steps WHERE plan_id = ? AND step_id = ?",
                               (plan_id, step_id)).fetchone()
        if row is None:
            return None
        return StepRecord(step_id, row[0], json.loads(row[1]) if row[1] else None, row[2])

    def steps(self, plan_id: str) -> list[dict[str, Any]]:
        """Every journaled step of a plan, in plan order."""
        rows = self._db.execute(
            "SELECT step_id, step_order, dataset, action, state, started_at, finished_at, outcome, message, run_id "
            "FROM steps WHERE plan_id = ? ORDER BY step_order", (plan_id,)).fetchall()
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

    def save_values(self, plan_id: str, value_sets: dict[str, list[Any]]) -> None:
        with self._db:
            for name, values in sorted(value_sets.items()):
                kind = _type_name(values)
                self._db.execute("INSERT OR REPLACE INTO value_sets VALUES (?, ?, ?, ?)",
                                 (plan_id, name, kind, json.dumps([_jsonable(v) for v in values])))

    def load_values(self, plan_id: str) -> dict[str, list[Any]] | None:
        rows = self._db.execute("SELECT name, value_type, value_json FROM value_sets WHERE plan_id = ?", (plan_id,)).fetchall()
        if not rows:
            return None
        return {name: [_from_json(kind, v) for v in json.loads(text)] for name, kind, text in rows}


def _type_name(values: list[Any]) -> str:
    kinds = {type(v).__name__ for v in values}
    return kinds.pop() if len(kinds) == 1 else "str"


def _jsonable(value: Any) -> Any:
    if isinstance(value, (int, float, str)) or value is None:
        return value
    return str(value)


def _from_json(kind: str, value: Any) -> Any:
    if kind == "Decimal":
        from decimal import Decimal

        return Decimal(value)
    if kind == "date":
        from datetime import date

        return date.fromisoformat(value)
    return value
