"""Notifications by e-mail (``notify:`` in piitracer.yaml): an owner is told when a person step of a
dataset they own awaits their attestation (after ``verify``, and by ``piitracer notify owners``),
and the privacy office gets a digest of the open requests due soon and overdue (``piitracer notify
digest``, run daily by a scheduler).

Messages are built from what the board and the audit log's plan entries hold: request ids,
deadlines, states, step ids, datasets, actions. No subject value is ever read here (the plans'
sealed values are not opened), so none can be in a message. The SMTP password, if any, is read
from ``PIITRACER_SMTP_PASSWORD``, never from the workspace file. An owner is told of a step once
(the request store remembers what was sent).
"""

from __future__ import annotations

import os
import smtplib
from email.message import EmailMessage
from typing import Any, Mapping

from piitracer.model.audit import EntryKind
from piitracer.model.console_settings import NotifySettings
from piitracer.model.errors import InputError, UnavailableError
from piitracer.model.plan import PERSON_ACTIONS
from piitracer.model.requests import RequestState
from piitracer.requests.board import BoardQuery, owner_name

PASSWORD_VARIABLE = "PIITRACER_SMTP_PASSWORD"
PERSON_ACTION_NAMES = frozenset(action.value for action in PERSON_ACTIONS)


class NotifyError(InputError):
    """Notifications asked for but not configured (no ``notify:`` block, no address)."""


def settings_of(session) -> NotifySettings:
    """The workspace's ``notify:`` block.

    Args:
        session: the session.

    Returns:
        The settings.

    Raises:
        NotifyError: the workspace has no ``notify:`` block.
    """
    settings = session.workspace.config.notify
    if settings is None:
        raise NotifyError(f"{session.workspace.root / 'piitracer.yaml'}: no notify: block (notify.smtp, notify.owners, "
                          "notify.privacy_office): nothing to send with")
    return settings


def send(settings: NotifySettings, to: list[str], subject: str, text: str,
         environ: Mapping[str, str] | None = None) -> None:
    """Send one plain-text message through ``notify.smtp``.

    Args:
        settings: the ``notify:`` block.
        to: the recipients.
        subject: the subject line.
        text: the body.
        environ: where the password is read (default: the process's environment).

    Raises:
        UnavailableError: the server refused or could not be reached (named, no password in the message).
    """
    smtp = settings.smtp
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = smtp.sender, ", ".join(to), subject
    message.set_content(text)
    password = (environ if environ is not None else os.environ).get(PASSWORD_VARIABLE)
    try:
        with smtplib.SMTP(smtp.host, smtp.port, timeout=30) as server:
            if smtp.starttls:
                server.starttls()
            if smtp.username:
                server.login(smtp.username, password or "")
            server.send_message(message)
    except (OSError, smtplib.SMTPException) as error:
        raise UnavailableError(f"notify.smtp {smtp.host}:{smtp.port}: the message to {', '.join(to)} was not sent "
                               f"({type(error).__name__}: {str(error)[:200]})") from None


def waiting_steps(session) -> dict[str, list[dict[str, Any]]]:
    """Owner -> the person steps awaiting their attestation (open requests, steps not attested).

    Args:
        session: the session (needs the audit key; no master key: no value is read).

    Returns:
        Per owner the steps, each with its request ids, deadline, plan, step, dataset and action.
    """
    if not session.has_requests() or session.keys.audit is None or not session.has_audit_log():
        return {}
    store, log = session.requests(), session.audit(create=False)
    found: dict[str, list[dict[str, Any]]] = {}
    for plan_id in store.plan_ids(RequestState.AWAITING_ATTESTATION):
        entries = log.entries(plan_id=plan_id)
        plan = next((e.body for e in entries if e.kind is EntryKind.PLAN), None)
        if plan is None:
            continue
        attested = {e.body.get("step_id") for e in entries if e.kind is EntryKind.ATTESTATION}
        requests = [r for r in store.request_ids_of_plan(plan_id)
                    if store.get(r).state is RequestState.AWAITING_ATTESTATION]
        for step in plan["steps"]:
            if step["action"] not in PERSON_ACTION_NAMES or step["step_id"] in attested:
                continue
            entry = session.workspace.config.catalog.get(step["dataset"])
            owner = owner_name(entry.owner if entry is not None else step.get("owner"))
            if owner:
                found.setdefault(owner, []).append({
                    "plan_id": plan_id, "step_id": step["step_id"], "dataset": step["dataset"], "action": step["action"],
                    "requests": requests, "deadline_at": plan.get("deadline_at", "")[:10]})
    return found


def notify_waiting_owners(session, environ: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """E-mail each owner listed under ``notify.owners`` the waiting steps they were not told of.

    Args:
        session: the session.
        environ: where the SMTP password is read (default: the process's environment).

    Returns:
        One record per message sent: to, owner, steps.

    Raises:
        NotifyError: no ``notify:`` block.
        UnavailableError: the SMTP server refused a message (those sent before are remembered).
    """
    settings = settings_of(session)
    sent = []
    for owner, steps in sorted(waiting_steps(session).items()):
        address = settings.owners.get(owner)
        store = session.requests()
        new = [s for s in steps if not store.was_notified(f"{s['plan_id']}|{s['step_id']}|{owner}")]
        if address is None or not new:
            continue
        lines = [f"{len(new)} step(s) of datasets you own await your attestation ({owner}):", ""]
        for step in new:
            link = f"{settings.console_url.rstrip('/')}/console/requests/{step['requests'][0]}" if settings.console_url and step["requests"] else ""
            lines += [f"- step {step['step_id']}: {step['action'].replace('_', ' ')} on {step['dataset']}",
                      f"  request(s) {', '.join(step['requests']) or '(none open)'}, deadline {step['deadline_at']}",
                      *([f"  {link}"] if link else []), ""]
        lines += ["Attest in the console with your token once the work is done (only a hash of your evidence is kept).",
                  "This message holds no personal data of the requests' subjects."]
        send(settings, [address], f"piitracer: {len(new)} step(s) await your attestation", "\n".join(lines), environ)
        for step in new:
            store.mark_notified(f"{step['plan_id']}|{step['step_id']}|{owner}")
        sent.append({"to": address, "owner": owner, "steps": len(new)})
    return sent


def send_digest(session, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """E-mail the privacy office the open requests due within ``notify.digest_days`` and the overdue ones.

    Args:
        session: the session (the board only: no key is needed to read it).
        environ: where the SMTP password is read (default: the process's environment).

    Returns:
        to, due (count), overdue (count), text (the message's body).

    Raises:
        NotifyError: no ``notify:`` block, or no ``notify.privacy_office`` address.
        UnavailableError: the SMTP server refused the message.
    """
    settings = settings_of(session)
    if not settings.privacy_office:
        raise NotifyError("notify.privacy_office lists no address: nobody to send the digest to")
    due = _all(session, BoardQuery(due_within_days=settings.digest_days, per_page=500))
    overdue = _all(session, BoardQuery(overdue=True, per_page=500))
    lines = [f"Requests due within {settings.digest_days} days: {len(due)}; overdue: {len(overdue)}.", ""]
    for title, requests in (("Overdue", overdue), (f"Due within {settings.digest_days} days", due)):
        lines.append(f"{title}:")
        lines += [f"- {r.request_id}: {r.state.value.replace('_', ' ')}, deadline {r.deadline_at:%Y-%m-%d}" for r in requests]
        lines += ["  (none)"] if not requests else []
        lines.append("")
    if settings.console_url:
        lines.append(f"The board: {settings.console_url.rstrip('/')}/console/board?due={settings.digest_days}")
    lines.append("This message holds no personal data of the requests' subjects.")
    text = "\n".join(lines)
    send(settings, list(settings.privacy_office), f"piitracer digest: {len(due)} due within {settings.digest_days} days, "
         f"{len(overdue)} overdue", text, environ)
    return {"to": list(settings.privacy_office), "due": len(due), "overdue": len(overdue), "text": text}


def _all(session, query: BoardQuery) -> list:
    found, page = [], 1
    while True:
        answer = session.board_page(BoardQuery(**{**query.__dict__, "page": page}))
        found += answer.requests
        if page >= answer.pages:
            return found
        page += 1
