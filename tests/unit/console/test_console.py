"""The console (issues 33 and 50) below the browser: people the workspace names (``owners:``,
``viewers:``), their tokens kept only as scrypt hashes and their own signing keys only sealed under
their tokens in a 0600 file, made only with the workspace's keys and recorded, a token that stops
working when it is replaced or its name leaves the workspace, owners owning the datasets whose
catalog ``owner:`` names them, an evidence file attested as ``piitracer attest`` records one, signed,
the server's keys, ``owners add`` and secure cookies behind TLS. The browser tests are in
test_console_browser.py."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
import yaml

import piitracer
from people_keys import AUDIT_KEY, tokens, workspace_keys
from piitracer.api.people import PersonError
from piitracer.console.tokens import check_token
from piitracer.console.views import dataset_owner, owner_name
from piitracer.identity.people import people_path
from piitracer.workspace.model import WorkspaceError


def add_token(ws, name: str) -> str:
    """``owners add NAME`` through the session, with the workspace's audit and signing keys."""
    return tokens(ws, workspace_keys(ws.root.parent / "keys"), name)[name]


def user_of(ws, token: str):
    found = check_token(ws, token)
    return found[0] if found is not None else None


def workspace(folder: Path, owners=("streaming-team",), viewers=("privacy-office",)):
    folder.mkdir(parents=True, exist_ok=True)
    config = {"catalog": {"stream.cdc": {"format": "external", "owner": "streaming-team (kafka topic cdc)"},
                          "crm.users": {"format": "parquet", "location": "users", "owner": "crm"}},
              **({"owners": list(owners)} if owners else {}), **({"viewers": list(viewers)} if viewers else {})}
    (folder / "users").mkdir(exist_ok=True)
    (folder / "piitracer.yaml").write_text(yaml.safe_dump(config))
    return piitracer.load_workspace(folder)


def test_a_token_is_printed_once_and_kept_only_as_a_slow_hash(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    token = add_token(ws, "streaming-team")
    path = people_path(ws.root)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text()
    secret = token.split(".", 2)[2]
    assert secret not in text and token not in text
    (entry,) = json.loads(text)
    assert entry["name"] == "streaming-team" and entry["role"] == "owner" and len(entry["scrypt"]) == 64
    assert len(entry["public_key"]) == 64 and "sealed_key" in entry  # the private key only sealed under the token
    user, person = check_token(ws, token)
    assert user.name == "streaming-team" and user.can_attest and person.public_key == entry["public_key"]
    viewer = user_of(ws, add_token(ws, "privacy-office"))
    assert viewer is not None and viewer.role == "viewer" and not viewer.can_attest


def test_wrong_replaced_and_revoked_tokens_are_refused(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    first = add_token(ws, "streaming-team")
    assert check_token(ws, first[:-2] + ("xx" if not first.endswith("xx") else "yy")) is None
    assert check_token(ws, "ptc.000000000000.nothing") is None and check_token(ws, "not a token") is None
    second = add_token(ws, "streaming-team")
    assert check_token(ws, first) is None and check_token(ws, second) is not None
    # The name leaves the workspace: its token no longer signs in, though the hash is still on file.
    revoked = workspace(tmp_path / "ws", owners=())
    assert check_token(revoked, second) is None


def test_only_names_the_workspace_lists_get_a_token(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    with pytest.raises(PersonError, match=r"piitracer.yaml: 'mallory' is not listed under owners:, viewers: or approvers:"):
        add_token(ws, "mallory")
    assert not people_path(ws.root).exists()


def test_one_role_per_user_and_names_are_checked(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="listed under both owners and viewers"):
        workspace(tmp_path / "both", owners=("ana",), viewers=("ana",))
    with pytest.raises(WorkspaceError, match="owners"):
        workspace(tmp_path / "bad", owners=("two words",))


def test_an_owner_owns_the_datasets_their_name_begins_the_catalog_owner_of(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    assert owner_name("streaming-team (kafka topic payments-cdc, 7 days retention)") == "streaming-team"
    assert owner_name("  data-science ") == "data-science" and owner_name(None) is None and owner_name("") is None
    assert dataset_owner(ws, "stream.cdc") == "streaming-team" and dataset_owner(ws, "crm.users") == "crm"
    assert dataset_owner(ws, "not.there") is None


def test_the_demo_console_names_the_privacy_office_a_viewer_and_gives_it_a_token(tmp_path: Path) -> None:
    from piitracer.console.demo import DEMO_VIEWER, demo_console

    ws = workspace(tmp_path / "demo", owners=(), viewers=())
    config, token = demo_console(ws.root)
    assert yaml.safe_load((ws.root / "piitracer.yaml").read_text())["viewers"] == [DEMO_VIEWER]
    user = user_of(config.workspace, token)
    assert user is not None and user.name == DEMO_VIEWER and not user.can_attest
    assert config.audit_key is not None and config.master is not None and config.signing_key_path.exists()
    again, _ = demo_console(ws.root)  # a second --serve keeps the one viewers: line
    assert (ws.root / "piitracer.yaml").read_text().count("viewers") == 1


def test_serve_finds_the_consoles_keys_as_the_cli_does_and_says_what_is_off(tmp_path: Path) -> None:
    from piitracer.audit import AuditKeyError
    from piitracer.console.app import server_config
    from piitracer.crypto.signing import generate_signing_key

    ws = workspace(tmp_path / "ws")
    config, notes = server_config(ws, environ={})
    assert config.audit_key is None and config.signing_key_path is None and config.master is None
    assert [n.split(":")[0] for n in notes] == ["no audit key", "no signing key", "no master key"]
    signing = tmp_path / "signing.key"
    generate_signing_key(signing)
    config, notes = server_config(ws, environ={"PIITRACER_AUDIT_KEY": "k" * 32, "PIITRACER_MASTER_KEY": "m" * 64,
                                               "PIITRACER_SIGNING_KEY_FILE": str(signing)})
    assert config.audit_key is not None and config.master is not None and config.signing_key_path == signing
    assert notes == []
    with pytest.raises(AuditKeyError, match="missing.key"):
        server_config(ws, audit_key_file=tmp_path / "missing.key", environ={})


def test_behind_a_tls_proxy_the_cookies_are_secure(tmp_path: Path) -> None:
    """uvicorn trusts X-Forwarded-Proto from 127.0.0.1 (its default forwarded_allow_ips): a proxy
    there that ends TLS makes every console cookie Secure; plain http on loopback does not."""
    import socket
    import threading
    import time

    import requests
    import uvicorn

    from piitracer.console.app import ConsoleConfig, create_server
    from piitracer.ingest.openlineage.received import ReceivedEvents
    from piitracer.serve.app import create_app

    ws = workspace(tmp_path / "ws")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_server(ConsoleConfig(ws), create_app(ReceivedEvents(ws.root))), host="127.0.0.1",
                                           port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port}/console/sign-in"
        proxied = requests.get(url, headers={"X-Forwarded-Proto": "https"}).headers["set-cookie"]
        direct = requests.get(url).headers["set-cookie"]
        assert "Secure" in proxied and "HttpOnly" in proxied
        assert "Secure" not in direct and "HttpOnly" in direct
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_owners_add_needs_the_keys_prints_the_token_once_and_refuses_an_unlisted_name(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from piitracer.cli.main import cli

    ws = workspace(tmp_path / "ws")
    keys = workspace_keys(tmp_path / "keys")
    (tmp_path / "audit.key").write_text(AUDIT_KEY)
    (tmp_path / "audit.key").chmod(0o600)
    runner = CliRunner(env={"PIITRACER_AUDIT_KEY": None, "PIITRACER_AUDIT_KEY_FILE": None, "PIITRACER_SIGNING_KEY_FILE": None})
    # Without the workspace's keys nobody mints a credential.
    bare = runner.invoke(cli, ["--workspace", str(ws.root), "owners", "add", "streaming-team"])
    assert bare.exit_code == 2 and "audit key" in bare.output and not people_path(ws.root).exists()
    with_keys = ["--workspace", str(ws.root), "--audit-key-file", str(tmp_path / "audit.key"),
                 "--signing-key-file", str(keys.signing_key_file)]
    no_signing = runner.invoke(cli, with_keys[:4] + ["owners", "add", "streaming-team"])
    assert no_signing.exit_code == 2 and "signing key" in no_signing.output and not people_path(ws.root).exists()
    done = runner.invoke(cli, with_keys + ["owners", "add", "streaming-team"])
    assert done.exit_code == 0, done.output
    token = done.stdout.strip()
    assert user_of(ws, token).name == "streaming-team" and token not in people_path(ws.root).read_text()
    refused = runner.invoke(cli, with_keys + ["owners", "add", "mallory"])
    assert refused.exit_code == 2 and "Traceback" not in refused.output
    assert refused.output.strip().splitlines() == [
        f"error: {ws.root / 'piitracer.yaml'}: 'mallory' is not listed under owners:, viewers: or approvers: (add it there first: "
        "the workspace says who may act)"]


def test_an_evidence_file_is_attested_as_the_cli_records_one_and_no_evidence_is_refused(tmp_path: Path) -> None:
    import hashlib

    from piitracer.api import open as open_session
    from piitracer.console.tokens import ConsoleUser
    from piitracer.console.views import ConsoleRefused, attest
    from piitracer.model.plan import Subject

    from users_lake import users_lake

    ws = piitracer.load_workspace(users_lake(tmp_path / "ws"))
    keys = workspace_keys(tmp_path / "keys")
    token = tokens(ws, keys, "streaming-team")["streaming-team"]
    with open_session(ws, keys) as session:
        plan = session.plan(["crm.users.user_id"], [Subject(value="7000000001", request_id="r1",
                                                            received_at="2026-11-20T09:00:00Z")], keep=True).plan
        (step,) = [s for s in plan.steps if s.dataset == "stream.cdc"]
        owner, person = ConsoleUser("streaming-team", "owner"), session.person(token)
        with pytest.raises(ConsoleRefused, match="give evidence") as refused:
            attest(session, owner, person, "r1", step.id, "  ", None)
        assert refused.value.status == 400
        entry = attest(session, owner, person, "r1", step.id, "", ("ticket-4411.pdf", b"%PDF the ticket"))
        assert session.request("r1").last_action == f"attested {step.id} by streaming-team"
        assert session.attested(plan) == {step.id: f"by streaming-team at {entry.body['attested_at']}"}
    assert entry.body["evidence_kind"] == "file" and entry.body["statement"] == "evidence file ticket-4411.pdf"
    assert entry.body["evidence_sha256"] == hashlib.sha256(b"%PDF the ticket").hexdigest()
    assert entry.body["attested_by"] == "streaming-team" and entry.request_ids == ("r1",)
