"""A console at volume for tests, without Spark: the fixture workspace (lineage only, no table), a
plan of 65 steps recorded through the session by one approver (``ana``), 10,000 more requests
queued in bulk through the request store, users of every role with tokens, and ``piitracer
serve``'s app on 127.0.0.1 in a thread (stopped and started again on the same port to show a
restart keeps sessions)."""

from __future__ import annotations

import re
import shutil
import socket
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import uvicorn

import piitracer
from audit_builders import FIXTURES, KEY, RAW_VALUES
from piitracer.api import Keys, open as open_session
from piitracer.audit import load_audit_key
from piitracer.console.app import ConsoleConfig, create_server
from piitracer.crypto.envelope import write_master_key
from piitracer.ingest.openlineage.received import ReceivedEvents
from piitracer.model.plan import Subject
from piitracer.serve.app import create_app

PLANNER, APPROVER, VIEWER, OWNER = "ana", "bo", "privacy-office", "streaming-team"
PLANNED_ID = "dsr-planned"
NEEDLE = "dsr-07431"  # one request among 10,000, the only one due within 3 days
VOLUME = 10_000
# The subjects of the bulk requests are made from their index; the planned one is a hostile string.
PLANNED_VALUE = RAW_VALUES[1]


def bulk_value(index: int) -> str:
    return f"77{index:09d}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class ConsoleSite:
    folder: Path
    workspace: piitracer.Workspace
    keys: Keys
    tokens: dict[str, str]
    plan_id: str
    port: int = field(default_factory=free_port)
    server: uvicorn.Server | None = None
    thread: threading.Thread | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        config = ConsoleConfig(piitracer.load_workspace(self.folder), audit_key=self.keys.audit, master=self.keys.master)
        app = create_server(config, create_app(ReceivedEvents(self.folder)))
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        assert self.server.started

    def stop(self) -> None:
        if self.server is not None:
            self.server.should_exit = True
            self.thread.join(timeout=15)
            self.server = None

    def audit_entries(self, kind) -> list:
        with open_session(piitracer.load_workspace(self.folder), self.keys) as session:
            return [e for e in session.audit(create=False).entries() if e.kind is kind]


def build_site(folder: Path, volume: int = VOLUME, now: datetime | None = None) -> ConsoleSite:
    """The workspace, its requests, plan and tokens (the server is started by :meth:`ConsoleSite.start`)."""
    now = now or datetime.now(timezone.utc)
    shutil.copytree(FIXTURES, folder)
    config = folder / "piitracer.yaml"
    text = config.read_text().replace("column_types: {user_id: bigint,", "column_types: {user_id: string,")
    text = text.replace("policy:\n  deadline: 30d\n", "policy:\n  deadline: 30d\n  approval: required\n")
    assert "approval: required" in text
    text = re.sub(r"(?m)^owners: .*$", "", text)  # the fixture's owners: this site's own below
    config.write_text(text + f"\nowners: [{OWNER}, payments-platform]\nviewers: [{VIEWER}]\napprovers: [{PLANNER}, {APPROVER}]\n")
    workspace = piitracer.load_workspace(folder)
    keys = Keys(audit=load_audit_key(KEY), master=write_master_key(folder.parent / "master.key"),
                signing_key_file=_signing_key(folder.parent / "signing.key"))
    with open_session(workspace, keys) as session:  # each person's credential, made with the keys and recorded
        tokens = {name: session.add_person(name).token for name in (PLANNER, APPROVER, VIEWER, OWNER)}
        planned = session.plan(["prod.payments.user_id"], [Subject(value=PLANNED_VALUE, request_id=PLANNED_ID,
                                                                   received_at=now - timedelta(days=20))],
                               keep=True, by=session.person(tokens[PLANNER]))
        (folder / "plan.json").write_text(planned.text)
        # 10,000 queued requests, their deadlines 4 to 29 days away except the needle's (2 days).
        rows = []
        for index in range(volume):
            request_id = f"dsr-{index:05d}"
            received = now - timedelta(days=(index % 26), hours=1) if request_id != NEEDLE else now - timedelta(days=28)
            rows.append((request_id, received, received + timedelta(days=30), ["prod.payments.user_id"], [bulk_value(index)]))
        session.requests().add_many(rows, action="imported")
    return ConsoleSite(folder, workspace, keys, tokens, planned.plan.plan_id)


def _signing_key(path: Path) -> Path:
    from piitracer.crypto.signing import generate_signing_key

    if not path.exists():
        generate_signing_key(path)
    return path
