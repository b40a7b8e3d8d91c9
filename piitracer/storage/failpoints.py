"""Failpoints: a TEST-ONLY hook that kills the executor at a named place, so crash recovery can be
tested at exactly the points where a real crash hurts most (after a table commit but before the
journal records it, between a temporary write and its rename, mid-way through a Java action).

Nothing happens unless the environment variable ``PIITRACER_FAILPOINT`` is set; without it a
failpoint costs one dictionary lookup. Never set it in production.

``PIITRACER_FAILPOINT`` holds one spec:

- ``name`` kills the process the first time the point ``name`` is reached;
- ``name@tag`` only where the point is reached with that tag (the runner tags its points with the
  step id: ``executor.after_commit@s004`` kills right after step s004's journal commit);
- ``name~MS`` or ``name@tag~MS`` (for :func:`during` blocks) kills MS milliseconds after the block starts, while the
  work (for instance a Java action in the JVM) is in progress, or at the block's end if it
  finishes sooner: the kill lands somewhere inside the work, always before the journal hears of it;
- ``name!`` or ``name@tag!`` raises :class:`FailpointError` there instead of killing: a step that
  fails (the run goes on to record the failure), where a kill tests a crash.

``PIITRACER_PAUSEPOINT`` (comma-separated ``name`` or ``name@tag``) with ``PIITRACER_PAUSE_DIR``
makes the process wait at those points instead: it creates ``<dir>/<point>.paused`` (holding its
process id) and waits until
``<dir>/<point>.go`` exists. Tests use it to let another writer commit at an exact moment of a run
(after the delete committed, before the expiry) without relying on sleeps.

The kill is SIGKILL, like the OOM killer or a node loss: no ``finally``, no ``atexit``, no JVM
shutdown hook runs. When the process leads its own process group (the CLI started with
``start_new_session``, as the tests do) the whole group dies, the Spark JVM included; otherwise
only this process dies (the JVM exits when its stdin closes) so a test can never kill the shell or
runner that started it.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from contextlib import contextmanager
from typing import Iterator

ENV = "PIITRACER_FAILPOINT"
PAUSE_ENV, PAUSE_DIR_ENV = "PIITRACER_PAUSEPOINT", "PIITRACER_PAUSE_DIR"
PAUSE_LIMIT_SECONDS = 900  # a test that never says go must not hang the run forever


_SPEC = re.compile(r"^(?P<name>[^@~!]+)(?:~(?P<ms>\d+))?(?:@(?P<tag>[^@~!]+))?(?:~(?P<ms2>\d+))?(?P<fail>!)?$")


class FailpointError(RuntimeError):
    """A test-only failure raised at a failpoint (``PIITRACER_FAILPOINT=name!``)."""


def _fails_here(name: str, tag: str | None) -> bool:
    """Whether the failpoint spec asks for a raised failure (``!``) at this point."""
    text = os.environ.get(ENV, "").strip()
    return text.endswith("!") and _matches(_spec(), name, tag)


def _spec() -> tuple[str, str | None, int | None] | None:
    text = os.environ.get(ENV)
    if not text:
        return None
    match = _SPEC.match(text.strip())
    if match is None:
        raise ValueError(f"{ENV}={text!r}: expected name[@tag][~milliseconds][!]")
    millis = match["ms"] or match["ms2"]
    return match["name"], match["tag"], int(millis) if millis else None


def _matches(spec: tuple[str, str | None, int | None], name: str, tag: str | None) -> bool:
    return spec[0] == name and (spec[1] is None or spec[1] == tag)


def kill_now() -> None:
    """SIGKILL this process, and its group when it leads one (see the module docstring)."""
    if os.getpgrp() == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(60)  # the signal is asynchronous: never run on past a failpoint


def failpoint(name: str, tag: str | None = None) -> None:
    """Kill the process here if ``PIITRACER_FAILPOINT`` names this point (and tag); wait here if
    ``PIITRACER_PAUSEPOINT`` does."""
    spec = _spec()
    if spec is not None and spec[2] is None and _matches(spec, name, tag):
        if _fails_here(name, tag):
            raise FailpointError(f"failpoint {name}{'@' + tag if tag else ''}: a test-only failure")
        kill_now()
    pauses = os.environ.get(PAUSE_ENV)
    if pauses:
        for point in pauses.split(","):
            point_name, _, point_tag = point.strip().partition("@")
            if point_name == name and (not point_tag or point_tag == tag):
                _pause(point.strip())


def _pause(point: str) -> None:
    from pathlib import Path

    folder = Path(os.environ[PAUSE_DIR_ENV])
    (folder / f"{point}.paused").write_text(str(os.getpid()))  # which process waits (a Spark task's, say)
    go, deadline = folder / f"{point}.go", time.monotonic() + PAUSE_LIMIT_SECONDS
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


@contextmanager
def during(name: str, tag: str | None = None) -> Iterator[None]:
    """A block of work that ``name~MS`` kills from a timer thread MS ms after it starts (or, if it
    finishes sooner, as it ends: the point always fires). ``name`` without a delay kills at the
    block's end, after the work and before anything records it."""
    spec = _spec()
    if spec is None or not _matches(spec, name, tag):
        yield
        return
    if _fails_here(name, tag):
        raise FailpointError(f"failpoint {name}{'@' + tag if tag else ''}: a test-only failure")
    timer = None
    if spec[2] is not None:
        timer = threading.Timer(spec[2] / 1000, kill_now)
        timer.daemon = True
        timer.start()
    try:
        yield
    finally:  # an error in the work: no kill, and no stray timer firing later
        if timer is not None:
            timer.cancel()
    kill_now()
