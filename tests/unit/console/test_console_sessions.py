"""Console sessions that survive a restart (issue 41.5): kept as the SHA-256 of the session id
(never the id) with an expiry, so a new server on the same workspace knows a signed-in cookie;
``piitracer owners revoke NAME`` ends NAME's sessions and token at once; a trusted reverse proxy's
header signs a listed person in, from its configured addresses only."""

from __future__ import annotations

import re
import sqlite3
import stat
import threading
import time
from pathlib import Path

import pytest
import requests
import uvicorn
import yaml

import piitracer
from piitracer.console.sessions import Sessions, csrf_of, sessions_path
from piitracer.console.tokens import ConsoleUser, add_token


def workspace(folder: Path, extra: dict | None = None) -> piitracer.Workspace:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "users").mkdir(exist_ok=True)
    (folder / "piitracer.yaml").write_text(yaml.safe_dump({
        "catalog": {"crm.users": {"format": "parquet", "location": "users", "owner": "crm"}},
        "owners": ["crm"], "viewers": ["privacy-office"], "approvers": ["bo"], **(extra or {})}))
    return piitracer.load_workspace(folder)


def test_sessions_are_kept_hashed_expire_and_end_per_user(tmp_path: Path) -> None:
    path = tmp_path / ".piitracer" / "console-sessions.sqlite"
    first = Sessions(path, lifetime=3600)
    session_id, session = first.start(ConsoleUser("crm", "owner"))
    other_id, _ = first.start(ConsoleUser("privacy-office", "viewer"))
    first.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    raw = path.read_bytes()
    assert session_id.encode() not in raw and session.csrf.encode() not in raw  # neither the id nor the CSRF token
    again = Sessions(path, lifetime=3600)  # a restart
    found = again.get(session_id)
    assert found is not None and found.user == ConsoleUser("crm", "owner") and found.csrf == csrf_of(session_id)
    assert again.get("not-a-session") is None and again.get(None) is None
    assert again.end_user("crm") == 1 and again.get(session_id) is None and again.get(other_id) is not None
    short = Sessions(tmp_path / "short.sqlite", lifetime=0.05)
    expiring, _ = short.start(ConsoleUser("crm", "owner"))
    time.sleep(0.1)
    assert short.get(expiring) is None
    (count,) = sqlite3.connect(tmp_path / "short.sqlite").execute("SELECT COUNT(*) FROM sessions").fetchone()
    assert count == 0  # an expired session is deleted when it is next seen


class Server:
    def __init__(self, ws: piitracer.Workspace, port: int) -> None:
        from piitracer.console.app import ConsoleConfig, create_server
        from piitracer.ingest.openlineage.received import ReceivedEvents
        from piitracer.serve.app import create_app

        app = create_server(ConsoleConfig(piitracer.load_workspace(ws.root)), create_app(ReceivedEvents(ws.root)))
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.05)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def sign_in(base: str, token: str) -> requests.Session:
    http = requests.Session()
    form = http.get(f"{base}/console/sign-in").text
    answer = http.post(f"{base}/console/sign-in", data={"token": token, "csrf": re.search(r'name="csrf" value="([^"]+)"', form).group(1)})
    assert answer.status_code == 200
    return http


def test_a_restart_keeps_the_session_and_revoke_ends_it(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from piitracer.cli.main import cli

    ws = workspace(tmp_path / "ws")
    token = add_token(ws, "privacy-office")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = Server(ws, port)
    try:
        http = sign_in(base, token)
        assert http.get(f"{base}/console/board", allow_redirects=False).status_code == 200
    finally:
        server.stop()
    server = Server(ws, port)  # a new process's console on the same workspace
    try:
        page = http.get(f"{base}/console/board", allow_redirects=False)
        assert page.status_code == 200 and 'id="who">privacy-office<' in page.text
        done = CliRunner().invoke(cli, ["--workspace", str(ws.root), "owners", "revoke", "privacy-office"])
        assert done.exit_code == 0 and "token revoked, 1 session(s) ended" in done.output
        gone = http.get(f"{base}/console/board", allow_redirects=False)
        assert gone.status_code == 303 and gone.headers["location"] == "/console/sign-in"
        form = requests.get(f"{base}/console/sign-in")
        refused = requests.post(f"{base}/console/sign-in", data={"token": token, "csrf": re.search(
            r'name="csrf" value="([^"]+)"', form.text).group(1)}, cookies=form.cookies)
        assert refused.status_code == 401
    finally:
        server.stop()
    assert token.split(".")[2] not in sessions_path(ws.root).read_bytes().decode("latin-1")


@pytest.mark.parametrize("trusted, signed_in", [(["127.0.0.1"], True), (["10.9.8.0/24"], False)])
def test_a_trusted_proxy_header_signs_a_listed_person_in(tmp_path: Path, trusted, signed_in) -> None:
    ws = workspace(tmp_path / "ws", {"console": {"proxy_sign_in": {"header": "X-Forwarded-User", "trusted": trusted}}})
    port = free_port()
    server = Server(ws, port)
    try:
        base = f"http://127.0.0.1:{port}"
        page = requests.get(f"{base}/console/approvals", headers={"X-Forwarded-User": "bo"}, allow_redirects=False)
        if signed_in:
            assert page.status_code == 200 and 'id="who">bo<' in page.text and "(approver)" in page.text
            stranger = requests.get(f"{base}/console/board", headers={"X-Forwarded-User": "mallory"}, allow_redirects=False)
            assert stranger.status_code == 303  # not listed in the workspace: not signed in
        else:
            assert page.status_code == 303 and page.headers["location"] == "/console/sign-in"
    finally:
        server.stop()


def test_a_proxy_with_no_trusted_address_is_refused_at_load(tmp_path: Path) -> None:
    from piitracer.workspace.model import WorkspaceError

    with pytest.raises(WorkspaceError, match="name the proxy's address"):
        workspace(tmp_path / "ws", {"console": {"proxy_sign_in": {"header": "X-User", "trusted": []}}})
