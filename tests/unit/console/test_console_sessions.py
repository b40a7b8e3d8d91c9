"""Console sessions that survive a restart (issue 41.5): kept as the SHA-256 of the session id
(never the id) with an expiry, so a new server on the same workspace knows a signed-in cookie;
each bound to the credential it signed in with, the person's key sealed under the id, so
``piitracer owners revoke NAME`` or a new ``owners add NAME`` ends NAME's sessions at once (issue
50); a trusted reverse proxy's header signs a listed person in only from its configured addresses
and with the shared secret only the proxy holds."""

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
from people_keys import AUDIT_KEY, tokens, workspace_keys
from piitracer.console.sessions import Sessions, csrf_of, sessions_path
from piitracer.console.tokens import ConsoleUser, check_token


def add_token(ws, name: str) -> str:
    return tokens(ws, workspace_keys(ws.root.parent / "keys"), name)[name]


def key_options(ws) -> list[str]:
    """The CLI's key options for the workspace's keys (as workspace_keys made them)."""
    keys = workspace_keys(ws.root.parent / "keys")
    audit = ws.root.parent / "keys" / "audit.key"
    audit.write_text(AUDIT_KEY)
    audit.chmod(0o600)
    return ["--audit-key-file", str(audit), "--signing-key-file", str(keys.signing_key_file)]


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


def test_a_session_is_bound_to_its_credential_and_keeps_the_key_only_sealed(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    token = add_token(ws, "bo")
    user, person = check_token(ws, token)
    store = Sessions(sessions_path(ws.root), lifetime=3600, people_root=ws.root)
    session_id, _ = store.start(user, person)
    found = store.get(session_id)
    assert found.person is not None and found.person.public_key == person.public_key  # opened with the cookie only
    assert found.person.sign({"x": 1}) == person.sign({"x": 1})
    raw = sessions_path(ws.root).read_bytes()
    assert session_id.encode() not in raw and token.split(".")[2].encode() not in raw
    add_token(ws, "bo")  # the credential replaced: its sessions end
    assert store.get(session_id) is None


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
        done = CliRunner().invoke(cli, ["--workspace", str(ws.root), *key_options(ws), "owners", "revoke", "privacy-office"])
        assert done.exit_code == 0 and "credential revoked" in done.output, done.output
        gone = http.get(f"{base}/console/board", allow_redirects=False)
        assert gone.status_code == 303 and gone.headers["location"] == "/console/sign-in"
        form = requests.get(f"{base}/console/sign-in")
        refused = requests.post(f"{base}/console/sign-in", data={"token": token, "csrf": re.search(
            r'name="csrf" value="([^"]+)"', form.text).group(1)}, cookies=form.cookies)
        assert refused.status_code == 401
    finally:
        server.stop()
    assert token.split(".")[2] not in sessions_path(ws.root).read_bytes().decode("latin-1")


SECRET = "the-proxy-alone-holds-this-0123456789"


@pytest.mark.parametrize("trusted, secret, signed_in", [
    (["127.0.0.1"], SECRET, True), (["127.0.0.1"], None, False), (["127.0.0.1"], "a-guess-of-the-secret-0123", False),
    (["10.9.8.0/24"], SECRET, False)], ids=["proxy", "address-only", "wrong-secret", "other-address"])
def test_a_proxy_header_signs_in_only_with_the_secret_from_the_proxys_address(tmp_path: Path, monkeypatch, trusted,
                                                                               secret, signed_in) -> None:
    (tmp_path / "proxy.secret").write_text(SECRET + "\n")
    ws = workspace(tmp_path / "ws", {"console": {"proxy_sign_in": {"header": "X-Forwarded-User", "trusted": trusted,
                                                                   "secret_file": str(tmp_path / "proxy.secret")}}})
    port = free_port()
    server = Server(ws, port)
    try:
        base = f"http://127.0.0.1:{port}"
        headers = {"X-Forwarded-User": "bo", **({"X-Piitracer-Proxy-Secret": secret} if secret else {})}
        page = requests.get(f"{base}/console/approvals", headers=headers, allow_redirects=False)
        if signed_in:
            assert page.status_code == 200 and 'id="who">bo<' in page.text and "(approver)" in page.text
            stranger = requests.get(f"{base}/console/board", headers={**headers, "X-Forwarded-User": "mallory"},
                                    allow_redirects=False)
            assert stranger.status_code == 303  # not listed in the workspace: not signed in
        else:
            assert page.status_code == 303 and page.headers["location"] == "/console/sign-in"
    finally:
        server.stop()


def test_without_a_configured_secret_the_proxy_header_is_never_believed(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("PIITRACER_PROXY_SECRET", raising=False)
    ws = workspace(tmp_path / "ws", {"console": {"proxy_sign_in": {"header": "X-Forwarded-User", "trusted": ["127.0.0.1"]}}})
    port = free_port()
    server = Server(ws, port)
    try:
        page = requests.get(f"http://127.0.0.1:{port}/console/approvals", allow_redirects=False,
                            headers={"X-Forwarded-User": "bo", "X-Piitracer-Proxy-Secret": ""})
        assert page.status_code == 303 and page.headers["location"] == "/console/sign-in"
    finally:
        server.stop()


def test_a_proxy_with_no_trusted_address_is_refused_at_load(tmp_path: Path) -> None:
    from piitracer.workspace.model import WorkspaceError

    with pytest.raises(WorkspaceError, match="name the proxy's address"):
        workspace(tmp_path / "ws", {"console": {"proxy_sign_in": {"header": "X-User", "trusted": []}}})
