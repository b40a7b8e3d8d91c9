"""What every command shares: exit codes, the workspace of ``--workspace``, a session with the keys
of the shared key options (:mod:`piitracer.cli.params`), and subjects read from ``--subject``
values or a requests file (labelled by position, never by value)."""

from __future__ import annotations

import json
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from typing import TYPE_CHECKING

import click

import piitracer
from piitracer.cli import params
from piitracer.model.errors import EXIT_ERROR, EXIT_FOUND, EXIT_OK, InputError  # noqa: F401 (the commands' exit codes)

if TYPE_CHECKING:  # imported where used: a command's --help loads none of them
    from piitracer.model.plan import Subject


def open_session(ctx: click.Context, audit_key_file: Path | None = None, master_key_file: Path | None = None,
                 signing_key_file: Path | None = None):
    """A session (:func:`piitracer.api.session.open`) on the workspace of ``--workspace`` with the
    keys given as files (here, else the shared key options wherever the command line gave them)
    or in the environment (a given key that is unusable stops here); each use case asks for the
    keys it needs."""
    from piitracer.api.keys import Keys
    from piitracer.api.session import open as open_api_session

    given = params.shared(ctx)
    workspace = open_workspace(ctx)
    return open_api_session(workspace, Keys.load(audit_key_file or given.get("audit_key_file"),
                                                 master_key_file or given.get("master_key_file"),
                                                 signing_key_file or given.get("signing_key_file")))


TOKEN_ENV = ("PIITRACER_TOKEN", "PIITRACER_CONSOLE_TOKEN")  # the second: its name before issue 50


def given_token(token_file: Path | None) -> str:
    """The token the command line gives: ``--token-file``'s contents, else ``$PIITRACER_TOKEN``
    (or ``$PIITRACER_CONSOLE_TOKEN``); empty when none."""
    import os

    if token_file is not None:
        return token_file.read_text(encoding="utf-8").strip()
    return next((os.environ[name].strip() for name in TOKEN_ENV if os.environ.get(name, "").strip()), "")


def proven_person(session, token_file: Path | None, by: str | None = None, what: str = "acts"):
    """The person the given token proves (their key opened), or None when no token is given and no
    ``--by`` names anyone; ``--by NAME`` must be the token's person (a typed name proves nothing)."""
    from piitracer.model.errors import IdentityRefusedError

    token = given_token(token_file)
    if not token:
        if by:
            raise IdentityRefusedError(f"--by {by}: a name proves nothing: give {by}'s own token (--token-file FILE or "
                                       f"$PIITRACER_TOKEN) to show who {what}")
        return None
    person = session.person(token)
    if by and by != person.name:
        raise IdentityRefusedError(f"--by {by}: the token given is {person.name}'s, not {by}'s; nothing was changed")
    return person


def open_workspace(ctx: click.Context) -> piitracer.Workspace:
    """The workspace of ``--workspace``; its warnings (missing locations, locations outside the
    warehouse roots) go to stderr once per command."""
    workspace = piitracer.load_workspace(params.shared(ctx).get("workspace", Path(".")))
    as_json = wants_json(ctx)
    for warning in workspace.warnings:  # with --output json, stderr is JSON lines too
        click.echo(json.dumps({"warning": warning}, ensure_ascii=False) if as_json else f"warning: {warning}", err=True)
    return workspace


def wants_json(ctx: click.Context) -> bool:
    """Whether ``--output json`` was given (on the command, its group or the root)."""
    return params.shared(ctx).get("output") == "json"


def echo_json(data) -> None:
    """One JSON document on stdout (what ``--output json`` prints)."""
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def aware(moment: datetime | None) -> datetime:
    if moment is None:
        return datetime.now(timezone.utc).replace(microsecond=0)
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def labelled_subjects(subject_values, requests_file: Path | None, request_id: str | None, arrived: datetime,
                      id_prefix: str, stdin: bool = False) -> tuple[list[str], list[Subject]]:
    """(labels, subjects) from repeated --subject values or a --requests file (with ``stdin``,
    ``-`` reads JSON lines from standard input). A label names each value's position for errors
    (``--subject #2``, ``batch.csv:7``), never the value; --subject values without --request-id
    share one id made of ``id_prefix`` and the arrival time."""
    from piitracer.api import write_private
    from piitracer.ingest.requests import read_labelled_requests

    if requests_file is not None:
        if stdin and str(requests_file) == "-":
            with tempfile.TemporaryDirectory() as folder:  # private: the values never sit in a named file
                path = Path(folder) / "stdin.jsonl"
                write_private(path, sys.stdin.read())
                labelled = read_labelled_requests(path, default_request_id=request_id, default_received_at=arrived)
                labelled = [(label.replace(str(path), "<stdin>"), subject) for label, subject in labelled]
        else:
            labelled = read_labelled_requests(requests_file, default_request_id=request_id, default_received_at=arrived)
        return [label for label, _ in labelled], [subject for _, subject in labelled]
    labels = [f"--subject #{number}" for number in range(1, len(subject_values) + 1)]
    default_id = request_id or f"{id_prefix}-{arrived:%Y%m%dT%H%M%S}"
    return labels, [_subject(value, label, default_id, arrived) for value, label in zip(subject_values, labels)]


def _subject(value: str, label: str, request_id: str, received_at: datetime) -> "Subject":
    from piitracer.model.plan import Subject

    if not value.strip():
        raise InputError(f"{label}: a subject value must not be empty")
    return Subject(value=value, request_id=request_id, received_at=received_at)
