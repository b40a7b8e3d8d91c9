"""Console sessions, CSRF tokens and sign-in rate limiting (in memory: a restart signs everyone out).

A session is a random id in a cookie (HttpOnly, SameSite=Strict, Secure behind TLS) mapped to the
signed-in user and the session's CSRF token; every form carries that token and every POST is
refused without it. Sign-in failures are counted per client address: past the limit the client
waits for the window to pass, so a token cannot be guessed by trying.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass, field

from piitracer.console.tokens import ConsoleUser

SESSION_COOKIE = "ptc_session"
PRE_SESSION_COOKIE = "ptc_pre"  # the sign-in form's CSRF pair, before there is a session
SESSION_SECONDS = 8 * 3600


@dataclass
class Session:
    user: ConsoleUser
    csrf: str
    expires: float


@dataclass
class Sessions:
    """Signed-in sessions by id; ``lifetime`` seconds each."""

    lifetime: float = SESSION_SECONDS
    _by_id: dict[str, Session] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self, user: ConsoleUser) -> tuple[str, Session]:
        session_id = secrets.token_urlsafe(32)
        session = Session(user, secrets.token_urlsafe(32), time.monotonic() + self.lifetime)
        with self._lock:
            self._by_id[session_id] = session
        return session_id, session

    def get(self, session_id: str | None) -> Session | None:
        if not session_id:
            return None
        with self._lock:
            session = self._by_id.get(session_id)
            if session is not None and session.expires < time.monotonic():
                del self._by_id[session_id]
                return None
            return session

    def end(self, session_id: str | None) -> None:
        with self._lock:
            self._by_id.pop(session_id or "", None)


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
