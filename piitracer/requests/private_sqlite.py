"""The SQLite files of the requests room (the request store, the suppression list): private to
their owner and leaving no deleted secret behind.

Mode 0600 in a 0700 folder; no ``-wal`` side file keeping old pages; ``secure_delete`` on, so a
deleted key or record is overwritten in the file; full sync. Connections are in autocommit mode,
so a batch of writes is one explicit transaction (:func:`transaction`): one fsync, all or nothing.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def open_private(path: Path) -> sqlite3.Connection:
    """The SQLite file at ``path`` (made 0600 when missing, its folder 0700), opened as the module
    docstring says."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not path.exists():
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    os.chmod(path, 0o600)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=DELETE")  # no -wal side file keeping old pages
    db.execute("PRAGMA secure_delete=ON")  # deleted keys, values and records are overwritten in the file
    db.execute("PRAGMA synchronous=FULL")
    return db


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[None]:
    """One transaction (in autocommit mode ``with connection:`` alone begins none: each statement
    would be its own transaction, and its own fsync)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
