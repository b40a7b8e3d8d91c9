"""Notifications (issue 41.6) through a real SMTP server on 127.0.0.1 (aiosmtpd): an owner is
e-mailed the person steps of datasets they own once their request awaits attestation, once per
step; the privacy office's digest lists the open requests due within 7 days and the overdue ones;
no message holds a subject value (every value of the store is searched for in every byte sent);
the password comes from the environment, never the workspace file."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from aiosmtpd.controller import Controller
from console_site import NEEDLE, OWNER, PLANNED_ID, PLANNED_VALUE, bulk_value, build_site, free_port
from audit_builders import RAW_VALUES
from piitracer.api import open as open_session
from piitracer.api.keys import Keys
from piitracer.model.requests import RequestState

VOLUME = 60


class Inbox:
    def __init__(self) -> None:
        self.messages: list[tuple[list[str], bytes]] = []

    async def handle_DATA(self, server, session, envelope):  # aiosmtpd's handler hook
        self.messages.append((list(envelope.rcpt_tos), envelope.content))
        return "250 OK"


@pytest.fixture
def mail(tmp_path: Path):
    inbox, port = Inbox(), free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    site = build_site(tmp_path / "ws", volume=VOLUME)
    config = site.folder / "piitracer.yaml"
    config.write_text(config.read_text() + f"""
notify:
  smtp: {{host: 127.0.0.1, port: {port}, starttls: false, sender: piitracer@example.org}}
  console_url: https://piitracer.example.org
  owners: {{{OWNER}: streaming@example.org, payments-platform: payments@example.org}}
  privacy_office: [dpo@example.org]
""")
    try:
        yield site, inbox
    finally:
        controller.stop()


def texts(inbox: Inbox) -> bytes:
    return b"\n".join(content for _, content in inbox.messages)


def assert_no_subject_value(sent: bytes) -> None:
    values = [PLANNED_VALUE, *RAW_VALUES, *(bulk_value(i) for i in range(VOLUME))]
    assert [v for v in values if v.encode() in sent] == []


def test_an_owner_is_told_once_of_the_steps_waiting_for_them(mail) -> None:
    import piitracer
    from piitracer.api.notify import notify_waiting_owners

    site, inbox = mail
    with open_session(piitracer.load_workspace(site.folder), site.keys) as session:
        assert notify_waiting_owners(session) == []  # planned, not yet waiting for anyone
        store = session.requests()
        for state in (RequestState.EXECUTING, RequestState.EXECUTED, RequestState.AWAITING_ATTESTATION):
            store.move(PLANNED_ID, state, state.value)
        sent = notify_waiting_owners(session)
        assert notify_waiting_owners(session) == []  # once per step
    assert [(m["to"], m["owner"]) for m in sent] == [("streaming@example.org", OWNER)]
    ((to, content),) = inbox.messages
    text = content.decode()
    assert to == ["streaming@example.org"] and "stream.payments_cdc" in text and PLANNED_ID in text
    assert f"https://piitracer.example.org/console/requests/{PLANNED_ID}" in text
    assert_no_subject_value(content)


def test_the_digest_lists_the_requests_due_within_7_days_and_holds_no_subject_value(mail) -> None:
    import piitracer
    from piitracer.api.notify import send_digest

    site, inbox = mail
    now = datetime.now(timezone.utc)
    with open_session(piitracer.load_workspace(site.folder), Keys()) as session:  # no key: the board only
        sent = send_digest(session)
        due = [r.request_id for r in session.requests().all()
               if r.state is RequestState.QUEUED and now <= r.deadline_at and (r.deadline_at - now).days < 7]
    ((to, content),) = inbox.messages
    text = content.decode()
    assert to == ["dpo@example.org"] and sent["due"] == len(due) > 0
    assert all(request_id in text for request_id in due) and (NEEDLE not in text or int(NEEDLE[4:]) < VOLUME)
    assert "?due=7" in text
    assert_no_subject_value(content)


def test_the_cli_sends_the_digest(mail) -> None:
    from click.testing import CliRunner

    from piitracer.cli.main import cli

    site, inbox = mail
    done = CliRunner().invoke(cli, ["--workspace", str(site.folder), "--master-key-file", str(site.folder.parent / "master.key"),
                                    "notify", "digest"])
    assert done.exit_code == 0, done.output
    assert "digest sent to dpo@example.org" in done.output and len(inbox.messages) == 1


def test_no_notify_block_is_one_clear_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from piitracer.cli.main import cli

    site = build_site(tmp_path / "ws", volume=3)
    done = CliRunner().invoke(cli, ["--workspace", str(site.folder), "notify", "digest"])
    assert done.exit_code == 2 and "no notify: block" in done.output and "Traceback" not in done.output
