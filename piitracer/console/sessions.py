"""Console sessions, CSRF tokens and sign-in rate limiting.

A session is a random id in a cookie (HttpOnly, SameSite=Strict, Secure behind TLS). The server
keeps only the id's SHA-256, with the user, the role and the expiry, in
``.piitracer/console-sessions.sqlite`` (0600): a restart of ``piitracer serve`` keeps everyone
signed in, and a copy of the file signs nobody in (the ids are not in it). A session expires after
``console.session_hours``; ``piitracer owners revoke NAME`` ends every session of NAME (and its
token). The form's CSRF token is derived from the session id (HMAC-SHA256(id, "csrf")): never
stored, known only to the holder of the cookie, and the same after a restart. Every POST is
refused without it.

Sign-in failures are counted per client address, in memory: past the limit the client waits for
the window to pass, so a token cannot be guessed by trying.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import sqlite3
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from piitracer.console.tokens import ConsoleUser
from piitracer.workspace.layout import StateLayout

SESSION_COOKIE = "ptc_session"
PRE_SESSION_COOKIE = "ptc_pre"  # the sign-in form's CSRF pair, before there is a session
SESSION_SECONDS = 8 * 3600
SESSIONS_FILE = "console-sessions.sqlite"
SCHEMA = """CREATE TABLE IF NOT EXISTS sessions (
    id_sha256 TEXT PRIMARY KEY, name TEXT NOT NULL, role TEXT NOT NULL, started_at REAL NOT NULL, expires_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_name ON sessions (name);"""


@dataclass
class Session:
    user: ConsoleUser
    csrf: str
    expires: float  # seconds since the epoch


def sessions_path(workspace_root: Path) -> Path:
    """Where a workspace's console sessions are kept."""
    return StateLayout(Path(workspace_root)).path(SESSIONS_FILE)


def csrf_of(session_id: str) -> str:
    """A session's CSRF token: derived from its id, so it is never stored."""
    return hmac.new(session_id.encode(), b"csrf", hashlib.sha256).hexdigest()


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


class Sessions:
    """Signed-in sessions of one workspace, kept hashed on disk; ``lifetime`` seconds each."""

    def __init__(self, path: Path, lifetime: float = SESSION_SECONDS) -> None:
        self.path, self.lifetime = Path(path), lifetime
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not self.path.exists():
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600))
        os.chmod(self.path, 0o600)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA secure_delete=ON")
        self._db.executescript(SCHEMA)
        self._db.execute("DELETE FROM sessions WHERE expires_at < ?", (time.time(),))

    def close(self) -> None:
        self._db.close()

    def start(self, user: ConsoleUser) -> tuple[str, Session]:
        """A new session for ``user``: its id (for the cookie; only its hash is kept) and itself."""
        session_id = secrets.token_urlsafe(32)
        now = time.time()
        with self._lock:
            self._db.execute("INSERT INTO sessions VALUES (?, ?, ?, ?, ?)",
                             (_digest(session_id), user.name, user.role, now, now + self.lifetime))
        return session_id, Session(user, csrf_of(session_id), now + self.lifetime)

    def get(self, session_id: str | None) -> Session | None:
        """The session of a cookie's id (None: unknown, ended or expired)."""
        if not session_id:
            return None
        with self._lock:
            row = self._db.execute("SELECT name, role, expires_at FROM sessions WHERE id_sha256 = ?",
                                   (_digest(session_id),)).fetchone()
            if row is None:
                return None
            if row[2] < time.time():
                self._db.execute("DELETE FROM sessions WHERE id_sha256 = ?", (_digest(session_id),))
                return None
        return Session(ConsoleUser(row[0], row[1]), csrf_of(session_id), row[2])

    def end(self, session_id: str | None) -> None:
        """Sign a session out."""
        with self._lock:
            self._db.execute("DELETE FROM sessions WHERE id_sha256 = ?", (_digest(session_id or ""),))

    def end_user(self, name: str) -> int:
        """End every session of ``name``; returns how many there were."""
        with self._lock:
            return self._db.execute("DELETE FROM sessions WHERE name = ?", (name,)).rowcount


def same_token(given: str | None, expected: str | None) -> bool:
    """Constant-time comparison of two CSRF tokens; a missing one never matches."""
    return bool(given) and bool(expected) and hmac.compare_digest(str(given).encode(), str(expected).encode())


@dataclass
class SignInLimiter:
    """At most ``failures`` failed sign-ins per client in ``window`` seconds."""

    failures: int = 5
    window: float = 300.0
    _seen: dict[str, deque] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def blocked(self, client: str) -> float:
        """Seconds the client must still wait (0: it may try)."""
        now = time.monotonic()
        with self._lock:
            times = self._seen.get(client)
            if not times:
                return 0.0
            while times and times[0] < now - self.window:
                times.popleft()
            return times[0] + self.window - now if len(times) >= self.failures else 0.0

    def failed(self, client: str) -> None:
        with self._lock:
            self._seen.setdefault(client, deque()).append(time.monotonic())
