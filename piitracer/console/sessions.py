"""Console sessions, CSRF tokens and sign-in rate limiting.

A session is a random id in a cookie (HttpOnly, SameSite=Strict, Secure behind TLS). The server
keeps only the id's SHA-256, with the user, the role and the expiry, in
``.piitracer/console-sessions.sqlite`` (0600): a restart of ``piitracer serve`` keeps everyone
signed in, and a copy of the file signs nobody in (the ids are not in it). A session expires after
``console.session_hours``; it is bound to the credential it signed in with, so replacing or revoking
a person's credential (``piitracer owners add|revoke NAME``) ends its sessions at their next page.
The person's own signing key, which the token opened at sign-in, is kept sealed under a key derived
from the session id: only the holder of the cookie can have the console sign with it. The form's CSRF token is derived from the session id (HMAC-SHA256(id, "csrf")): never
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
from piitracer.identity.people import ProvenPerson, open_sealed
from piitracer.identity.people import person as people_record
from piitracer.workspace.layout import StateLayout

SESSION_COOKIE = "ptc_session"
PRE_SESSION_COOKIE = "ptc_pre"  # the sign-in form's CSRF pair, before there is a session
SESSION_SECONDS = 8 * 3600
SESSIONS_FILE = "console-sessions.sqlite"
SCHEMA = """CREATE TABLE IF NOT EXISTS sessions (
    id_sha256 TEXT PRIMARY KEY, name TEXT NOT NULL, role TEXT NOT NULL, started_at REAL NOT NULL, expires_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_name ON sessions (name);"""
# Added by issue 50: the credential a session signed in with, and the person's key sealed under its id.
COLUMNS = {"credential": "TEXT", "sealed_key": "TEXT"}


@dataclass
class Session:
    user: ConsoleUser
    csrf: str
    expires: float  # seconds since the epoch
    person: ProvenPerson | None = None  # their own key, opened with the cookie (None: a proxy vouched for them)


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

    def __init__(self, path: Path, lifetime: float = SESSION_SECONDS, people_root: Path | None = None) -> None:
        self.path, self.lifetime = Path(path), lifetime
        self.people_root = people_root  # the workspace whose people file a session's credential is checked in
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not self.path.exists():
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600))
        os.chmod(self.path, 0o600)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA secure_delete=ON")
        self._db.executescript(SCHEMA)
        present = {row[1] for row in self._db.execute("PRAGMA table_info(sessions)")}
        for column, kind in COLUMNS.items():
            if column not in present:  # a file from before: its sessions have no credential, and end
                self._db.execute(f"ALTER TABLE sessions ADD COLUMN {column} {kind}")
        self._db.execute("DELETE FROM sessions WHERE expires_at < ?", (time.time(),))

    def close(self) -> None:
        self._db.close()

    def start(self, user: ConsoleUser, person: ProvenPerson | None = None) -> tuple[str, Session]:
        """A new session for ``user``: its id (for the cookie; only its hash is kept) and itself;
        ``person``'s key is kept sealed under the id."""
        session_id = secrets.token_urlsafe(32)
        now = time.time()
        sealed = person.seal(session_id.encode()) if person is not None else None
        with self._lock:
            self._db.execute("INSERT INTO sessions (id_sha256, name, role, started_at, expires_at, credential, sealed_key) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?)",
                             (_digest(session_id), user.name, user.role, now, now + self.lifetime, user.credential, sealed))
        return session_id, Session(user, csrf_of(session_id), now + self.lifetime, person)

    def get(self, session_id: str | None) -> Session | None:
        """The session of a cookie's id (None: unknown, ended, expired, or its credential replaced
        or revoked since it signed in)."""
        if not session_id:
            return None
        with self._lock:
            row = self._db.execute("SELECT name, role, expires_at, credential, sealed_key FROM sessions WHERE id_sha256 = ?",
                                   (_digest(session_id),)).fetchone()
            if row is None:
                return None
            if row[2] < time.time():
                self._db.execute("DELETE FROM sessions WHERE id_sha256 = ?", (_digest(session_id),))
                return None
        name, role, expires, credential, sealed = row
        person = None
        if self.people_root is not None:
            record = people_record(self.people_root, name)
            if credential is None or record is None or record.id != credential:
                self.end(session_id)  # the credential it signed in with is gone: so is the session
                return None
            person = open_sealed(record, session_id.encode(), sealed) if sealed else None
        return Session(ConsoleUser(name, role, credential), csrf_of(session_id), expires, person)

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


MIN_PROXY_SECRET = 16  # characters: a shared secret shorter than this is taken for none


def proxy_secret(proxy) -> str | None:
    """The proxy's shared secret (``console.proxy_sign_in.secret_file``, else
    ``$PIITRACER_PROXY_SECRET``), or None when none (or one too short to be a secret) is given."""
    import os

    if proxy.secret_file:
        try:
            text = Path(proxy.secret_file).read_text(encoding="utf-8").strip()
        except OSError:
            return None
    else:
        text = os.environ.get("PIITRACER_PROXY_SECRET", "").strip()
    return text if len(text) >= MIN_PROXY_SECRET else None


def proxy_proves(proxy, given: str | None) -> bool:
    """Whether ``given`` (the secret header's value) is the proxy's shared secret: False when none is
    configured, whatever is given (the address alone never signs anyone in)."""
    import hmac

    expected = proxy_secret(proxy)
    return bool(expected) and bool(given) and hmac.compare_digest(str(given).strip().encode(), expected.encode())
