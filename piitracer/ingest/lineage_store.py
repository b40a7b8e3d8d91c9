"""The workspace's persistent lineage store, ``.piitracer/lineage/store.sqlite`` (SQLite).

Ingesting lineage is the slow part of every command (parsing SQL, validating events); planning
follows only what a subject reaches. So what each lineage *unit* yielded — the OpenLineage event
files together, one SQL file, one dbt project — is kept here with the fingerprint of its input
(the SHA-256 of its files and of everything else its result depends on: the naming rule, the
dialect, the schemas known before it). A unit whose fingerprint is unchanged is not parsed again;
a changed one replaces its rows; a unit the workspace no longer names is dropped.

Planning loads only part of it: the datasets downstream of the plan's sources (a dataset-level
closure over every edge and the catalog's copies, computed in SQLite) and every edge into them —
everything the planner can follow from a source, and every edge that explains how a reached
column got its values. The graph of that part plans exactly as the whole graph would
(tests/unit/ingest/test_lineage_store.py compares the plans byte for byte).

It is a cache: derived only from the workspace's own files, safe to delete; ``piitracer lineage
rebuild`` starts it over, and a store of another schema version is rebuilt on open.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

from piitracer.model.lineage import ColumnEdge, DatasetEdge, DatasetFacts, IngestProblem, LineageBatch
from piitracer.workspace.layout import StateLayout

STORE_FILE = StateLayout.relative("lineage", "store.sqlite")
SCHEMA_VERSION = "2"
# "adjacency" was version 1's copy of the edges' (source, target) pairs: now read from the edges.
_TABLES = ("units", "column_edges", "dataset_edges", "facts", "problems", "adjacency", "workspace_cache", "meta")
_UNIT_TABLES = ("column_edges", "dataset_edges", "facts", "problems")
_CHUNK = 500  # SQLite's host-parameter limit is 32,766: stay far below it


@dataclass(frozen=True)
class StoredUnit:
    """What the store remembers of one unit: its input's fingerprint and the table schemas it
    taught the units after it (a SQL file's ``CREATE TABLE ... AS`` columns)."""

    fingerprint: str
    learned: dict[str, list[str]]


def fingerprint(*parts: object) -> str:
    """A SHA-256 over JSON-able parts (bytes as their own SHA-256)."""
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, (bytes, bytearray)):
            part = hashlib.sha256(part).hexdigest()
        digest.update(json.dumps(part, sort_keys=True, default=str).encode())
        digest.update(b"\x00")
    return digest.hexdigest()


class LineageStore:
    """One workspace's store (open it with :func:`open_store`)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        try:
            self._db = self._connect()
        except sqlite3.DatabaseError:  # not a SQLite file (truncated, overwritten): it is only a cache
            path.unlink(missing_ok=True)
            self._db = self._connect()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID")
        version = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if version is not None and version[0] != SCHEMA_VERSION:
            for table in _TABLES:
                db.execute(f"DROP TABLE IF EXISTS {table}")
            db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID")
        db.executescript("""
            CREATE TABLE IF NOT EXISTS units (name TEXT PRIMARY KEY, position INTEGER, grp TEXT, fingerprint TEXT,
                                              learned TEXT, units_read INTEGER) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS column_edges (unit TEXT, seq INTEGER, source_dataset TEXT,
                                                     target_dataset TEXT, data TEXT);
            CREATE INDEX IF NOT EXISTS column_edges_target ON column_edges (target_dataset);
            CREATE INDEX IF NOT EXISTS column_edges_unit ON column_edges (unit);
            CREATE TABLE IF NOT EXISTS dataset_edges (unit TEXT, seq INTEGER, source TEXT, target TEXT, data TEXT);
            CREATE INDEX IF NOT EXISTS dataset_edges_target ON dataset_edges (target);
            CREATE INDEX IF NOT EXISTS dataset_edges_unit ON dataset_edges (unit);
            CREATE TABLE IF NOT EXISTS facts (unit TEXT, seq INTEGER, dataset TEXT, data TEXT);
            CREATE INDEX IF NOT EXISTS facts_dataset ON facts (dataset);
            CREATE INDEX IF NOT EXISTS facts_unit ON facts (unit);
            CREATE TABLE IF NOT EXISTS problems (unit TEXT, seq INTEGER, data TEXT);
            CREATE INDEX IF NOT EXISTS problems_unit ON problems (unit);
            CREATE INDEX IF NOT EXISTS column_edges_source ON column_edges (source_dataset);
            CREATE INDEX IF NOT EXISTS dataset_edges_source ON dataset_edges (source);
            CREATE TABLE IF NOT EXISTS workspace_cache (key TEXT PRIMARY KEY, payload BLOB);
        """)
        db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
        return db

    def close(self) -> None:
        self._db.close()

    # ---- units --------------------------------------------------------------------------------

    def unit(self, name: str) -> StoredUnit | None:
        """The stored fingerprint and learned schemas of a unit, or None when it was never stored."""
        row = self._db.execute("SELECT fingerprint, learned FROM units WHERE name = ?", (name,)).fetchone()
        return None if row is None else StoredUnit(row[0], json.loads(row[1]))

    def put(self, name: str, position: int, print_: str, batch: LineageBatch,
            learned: Mapping[str, Sequence[str]] | None = None, group: str | None = None) -> None:
        """Replace what a unit yielded (in one transaction: a reader never sees half of it).
        ``group``: units whose batches are sorted together (the files of one SQL source)."""
        with self._transaction():
            self._delete(name)
            self._db.execute("INSERT INTO units VALUES (?, ?, ?, ?, ?, ?)",
                             (name, position, group, print_,
                              json.dumps({k: list(v) for k, v in (learned or {}).items()}), batch.units_read))
            self._db.executemany("INSERT INTO column_edges VALUES (?, ?, ?, ?, ?)", (
                (name, seq, e.source.dataset, e.target_dataset, e.model_dump_json())
                for seq, e in enumerate(batch.column_edges)))
            self._db.executemany("INSERT INTO dataset_edges VALUES (?, ?, ?, ?, ?)", (
                (name, seq, e.source, e.target, e.model_dump_json()) for seq, e in enumerate(batch.dataset_edges)))
            self._db.executemany("INSERT INTO facts VALUES (?, ?, ?, ?)", (
                (name, seq, f.dataset, f.model_dump_json()) for seq, f in enumerate(batch.datasets)))
            self._db.executemany("INSERT INTO problems VALUES (?, ?, ?)", (
                (name, seq, p.model_dump_json()) for seq, p in enumerate(batch.problems)))

    def move(self, name: str, position: int) -> None:
        """A kept unit's place in the workspace's order (a source added before it)."""
        self._db.execute("UPDATE units SET position = ? WHERE name = ?", (position, name))

    def units(self) -> list[tuple[str, str | None]]:
        """(name, group) of every stored unit, in the order they were last ingested."""
        return list(self._db.execute("SELECT name, grp FROM units ORDER BY position, name"))

    def keep_only(self, names: Iterable[str]) -> list[str]:
        """Drop every unit not in ``names`` (a SQL file deleted, a source removed); their names."""
        wanted = set(names)
        gone = [name for (name,) in self._db.execute("SELECT name FROM units") if name not in wanted]
        if gone:
            with self._transaction():
                for name in gone:
                    self._delete(name)
        return sorted(gone)

    def clear(self) -> None:
        """Forget everything (``piitracer lineage rebuild``)."""
        with self._transaction():
            for table in ("units", *_UNIT_TABLES, "workspace_cache"):
                self._db.execute(f"DELETE FROM {table}")

    # ---- the validated workspace (see ``workspace_cache``) ------------------------------------

    def cached_workspace(self, key: str) -> bytes | None:
        """The validated workspace stored under ``key`` (the hash of its files), or None."""
        row = self._db.execute("SELECT payload FROM workspace_cache WHERE key = ?", (key,)).fetchone()
        return None if row is None else bytes(row[0])

    def keep_workspace(self, key: str, payload: bytes) -> None:
        """Store the validated workspace of ``key``, in place of any other: only the files' latest
        state is worth keeping, and an old one must never be served."""
        with self._transaction():
            self._db.execute("DELETE FROM workspace_cache")
            self._db.execute("INSERT INTO workspace_cache VALUES (?, ?)", (key, payload))

    def _delete(self, name: str) -> None:
        self._db.execute("DELETE FROM units WHERE name = ?", (name,))
        for table in _UNIT_TABLES:
            self._db.execute(f"DELETE FROM {table} WHERE unit = ?", (name,))

    # ---- reading ------------------------------------------------------------------------------

    def downstream(self, start: Iterable[str], relations: Mapping[str, Sequence[str]] | None = None) -> set[str]:
        """Every dataset reachable from ``start`` over any stored edge (column or dataset level) and
        the given extra ``relations`` (source -> targets: the catalog's clones, archives, replicas)."""
        relations = relations or {}
        reached = set(start)
        frontier = sorted(reached)
        while frontier:
            found: set[str] = set()
            for chunk in _chunks(frontier):
                marks = ",".join("?" * len(chunk))
                found.update(t for (t,) in self._db.execute(
                    f"SELECT target_dataset FROM column_edges WHERE source_dataset IN ({marks}) "
                    f"UNION SELECT target FROM dataset_edges WHERE source IN ({marks})", chunk + chunk))
            for dataset in frontier:
                found.update(relations.get(dataset, ()))
            frontier = sorted(found - reached)
            reached |= found
        return reached

    def unit_batches(self, datasets: set[str] | None = None) -> dict[str, LineageBatch]:
        """What each unit yielded, in the workspace's unit order: all of it, or (``datasets``)
        only the edges into those datasets and their facts; every problem either way."""
        names = [name for (name,) in self._db.execute("SELECT name FROM units ORDER BY position, name")]
        parts: dict[str, dict[str, list]] = {name: {"c": [], "d": [], "f": [], "p": []} for name in names}
        if datasets is not None:
            self._db.execute("CREATE TEMP TABLE IF NOT EXISTS wanted (dataset TEXT PRIMARY KEY) WITHOUT ROWID")
            self._db.execute("DELETE FROM wanted")
            self._db.executemany("INSERT OR IGNORE INTO wanted VALUES (?)", ((d,) for d in datasets))
        queries = {
            "c": ("column_edges", "target_dataset", ColumnEdge.model_validate_json),
            "d": ("dataset_edges", "target", DatasetEdge.model_validate_json),
            "f": ("facts", "dataset", DatasetFacts.model_validate_json),
            "p": ("problems", None, IngestProblem.model_validate_json),
        }
        for key, (table, column, build) in queries.items():
            # CROSS JOIN: the few wanted datasets drive the index on the target; a plain JOIN let
            # SQLite scan every stored edge (2M at 100k datasets) for the ~1,000 reached.
            source = f"wanted w CROSS JOIN {table} x ON x.{column} = w.dataset" if datasets is not None and column else f"{table} x"
            for unit, data in self._db.execute(f"SELECT x.unit, x.data FROM {source} ORDER BY x.unit, x.seq"):
                parts[unit][key].append(build(data))
        read = dict(self._db.execute("SELECT name, units_read FROM units"))
        return {name: LineageBatch(column_edges=tuple(p["c"]), dataset_edges=tuple(p["d"]), datasets=tuple(p["f"]),
                                   problems=tuple(p["p"]), units_read=read[name] or 0)
                for name, p in parts.items()}

    def facts_of(self, unit: str) -> tuple[DatasetFacts, ...]:
        """The dataset facts one unit yielded (the schemas its successors need)."""
        return tuple(DatasetFacts.model_validate_json(data) for (data,) in
                     self._db.execute("SELECT data FROM facts WHERE unit = ? ORDER BY seq", (unit,)))

    def _transaction(self):
        return _Transaction(self._db)


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind, error, trace) -> None:
        self._db.execute("COMMIT" if kind is None else "ROLLBACK")


def _chunks(items: Sequence[str]) -> Iterator[list[str]]:
    for start in range(0, len(items), _CHUNK):
        yield list(items[start:start + _CHUNK])


def open_store(root: Path) -> LineageStore:
    """The store of the workspace at ``root``."""
    return LineageStore(root / STORE_FILE)
