"""The console for the privacy office and dataset owners, served by ``piitracer serve`` beside the
OpenLineage endpoint (one process, one port): the request board, a page per request, an owner's
waiting steps, and attestation by an owner's own token.

The server holds the audit key (to read the log and append attestations), the master key (to
open a plan's values, only to HMAC an attestation's subjects) and optionally the certificate
signing key; a signed-in user never sees any of them. Pages are rendered on the server; there is
no script. Every response carries a Content-Security-Policy that allows only this server's own
stylesheet and images, and no page shows a subject value.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from piitracer.audit.keys import AuditKey
from piitracer.console import templates
from piitracer.console.sessions import (PRE_SESSION_COOKIE, SESSION_COOKIE, Session, Sessions, SignInLimiter,
                                        same_token)
from piitracer.console.tokens import OWNER, check_token
from piitracer.console.views import ConsoleRefused, attest, board, request_view, waiting_for
from piitracer.workspace.model import Workspace
from piitracer.model.errors import NotFoundError, PiitracerError
from piitracer.model.requests import RequestState

log = logging.getLogger(__name__)
CONSOLE = "/console"
CSP = ("default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; "
       "base-uri 'none'")
MAX_FORM_BYTES = 64 * 1024 * 1024  # an evidence file: a run log, a screenshot, a ticket export


@dataclass
class ConsoleConfig:
    """What the console serves and with which keys (``audit_key`` None: the board only;
    ``master`` None: no attestation; ``signing_key_path`` None: no certificate download)."""

    workspace: Workspace
    audit_key: AuditKey | None = None
    master: Any = None  # piitracer.crypto.envelope.KeyWrapper
    signing_key_path: Path | None = None
    now: Callable[[], datetime] = field(default=lambda: datetime.now(timezone.utc))
    # The command lines the pages suggest, as templates the CLI built from its own commands
    # (piitracer.cli.suggest.console_commands; the console never imports the CLI). None given: the
    # pages name the command without a line to copy.
    commands: Mapping[str, str] = field(default_factory=dict)

    @property
    def keys(self):
        """The server's keys as one value, for the sessions it opens (one per page)."""
        from piitracer.api.keys import Keys

        return Keys(audit=self.audit_key, master=self.master, signing_key_file=self.signing_key_path)


@dataclass(frozen=True)
class CommandLines:
    """The console's suggested command lines (:attr:`ConsoleConfig.commands`), filled in."""

    templates: Mapping[str, str]

    def line(self, name: str, **values: str) -> str | None:
        """The command line ``name`` with ``values`` (shell-quoted) in its placeholders; None when
        the console was given no such line."""
        import shlex

        template = self.templates.get(name)
        return None if template is None else template.format(**{k: shlex.quote(str(v)) for k, v in values.items()})


def create_server(config: ConsoleConfig, lineage_app: FastAPI) -> FastAPI:
    """``lineage_app`` (the OpenLineage endpoint, ``serve.app.create_app``) with the console added."""
    console = _Console(config)
    app = lineage_app

    @app.middleware("http")
    async def security_headers(request: Request, call_next):
        response = await call_next(request)
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        response.headers.setdefault("X-Frame-Options", "DENY")
        if request.url.path.startswith(CONSOLE):
            response.headers.setdefault("Cache-Control", "no-store")
        return response

    @app.get("/", include_in_schema=False)
    async def root() -> Response:
        return RedirectResponse(f"{CONSOLE}/board", status_code=303)

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> Response:
        return Response(status_code=204)  # none: the browser asks anyway

    @app.get(CONSOLE, include_in_schema=False)
    @app.get(f"{CONSOLE}/", include_in_schema=False)
    async def console_root() -> Response:
        return RedirectResponse(f"{CONSOLE}/board", status_code=303)

    @app.get(f"{CONSOLE}/static/console.css")
    async def stylesheet() -> Response:
        return Response(console.css, media_type="text/css")

    @app.get(f"{CONSOLE}/sign-in")
    async def sign_in_page(request: Request) -> Response:
        return console.sign_in_page(request)

    @app.post(f"{CONSOLE}/sign-in")
    async def sign_in(request: Request) -> Response:
        form = await request.form()
        return await run_in_threadpool(console.sign_in, request, str(form.get("token") or ""), form.get("csrf"))

    @app.post(f"{CONSOLE}/sign-out")
    async def sign_out(request: Request) -> Response:
        form = await request.form()
        session = console.session(request)
        if session is None or not same_token(form.get("csrf"), session.csrf):
            return console.refused(request, 403, "the form's CSRF token is missing or wrong")
        console.sessions.end(request.cookies.get(SESSION_COOKIE))
        response = RedirectResponse(f"{CONSOLE}/sign-in", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path=CONSOLE)
        return response

    @app.get(f"{CONSOLE}/board")
    async def board_page(request: Request, state: str | None = None, overdue: str | None = None) -> Response:
        return await console.page(request, console.board_page, state, bool(overdue))

    @app.get(CONSOLE + "/requests/{request_id}")
    async def request_page(request: Request, request_id: str) -> Response:
        return await console.page(request, console.request_page, request_id)

    @app.get(CONSOLE + "/requests/{request_id}/certificate.json")
    async def certificate(request: Request, request_id: str) -> Response:
        return await console.page(request, console.certificate, request_id)

    @app.get(f"{CONSOLE}/signing-key.pub")
    async def public_key(request: Request) -> Response:
        return await console.page(request, console.public_key)

    @app.get(CONSOLE + "/owners/{owner}")
    async def owner_page(request: Request, owner: str) -> Response:
        return await console.page(request, console.owner_page, owner)

    @app.post(CONSOLE + "/requests/{request_id}/attest")
    async def attest_step(request: Request, request_id: str) -> Response:
        session = console.session(request)
        if session is None:
            return RedirectResponse(f"{CONSOLE}/sign-in", status_code=303)
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_FORM_BYTES:
            return console.refused(request, 413, f"the evidence is larger than {MAX_FORM_BYTES // 2**20} MiB", session)
        form = await request.form(max_files=1, max_fields=8)
        if not same_token(form.get("csrf"), session.csrf):
            return console.refused(request, 403, "the form's CSRF token is missing or wrong", session)
        upload = form.get("evidence_file")
        evidence_file = None
        if upload is not None and not isinstance(upload, str) and upload.filename:
            evidence_file = (Path(upload.filename).name, await upload.read())
        return await run_in_threadpool(console.attest, request, session, request_id, str(form.get("step_id") or ""),
                                       str(form.get("evidence_text") or ""), evidence_file)

    app.state.console = console
    return app


class _Console:
    def __init__(self, config: ConsoleConfig) -> None:
        from piitracer.render.lineage_diagram import STATE_FILLS

        self.config = config
        self.workspace = config.workspace
        self.commands = CommandLines(config.commands)
        self.sessions = Sessions()
        self.limiter = SignInLimiter()
        self._graph = None
        # The diagram's fills as classes: the legend matches it without an inline style (CSP).
        self.css = templates.CSS + "".join(f".fill-{state}{{background:{fill}}}\n" for state, fill in STATE_FILLS.items())

    # ---- sessions -----------------------------------------------------------------------------

    def session(self, request: Request) -> Session | None:
        return self.sessions.get(request.cookies.get(SESSION_COOKIE))

    def sign_in_page(self, request: Request, error: str | None = None, status: int = 200) -> Response:
        import secrets

        pre = secrets.token_urlsafe(32)
        response = HTMLResponse(templates.render("sign_in.html", user=None, csrf=pre, error=error,
                                                     commands=self.commands), status_code=status)
        _cookie(response, request, PRE_SESSION_COOKIE, pre, f"{CONSOLE}/sign-in")
        return response

    def sign_in(self, request: Request, token: str, csrf: Any) -> Response:
        client = request.client.host if request.client else "unknown"
        wait = self.limiter.blocked(client)
        if wait:
            response = self.sign_in_page(request, f"too many failed sign-ins from this address: try again in "
                                                  f"{int(wait) + 1} s", 429)
            response.headers["Retry-After"] = str(int(wait) + 1)
            return response
        if not same_token(csrf, request.cookies.get(PRE_SESSION_COOKIE)):
            return self.sign_in_page(request, "the sign-in form's CSRF token is missing or wrong: sign in from this "
                                              "page", 403)
        user = check_token(self.workspace, token) if token else None
        if user is None:
            self.limiter.failed(client)
            log.warning("console: a sign-in with an unknown or wrong token from %s", client)
            return self.sign_in_page(request, "unknown or wrong token", 401)
        session_id, _ = self.sessions.start(user)
        response = RedirectResponse(f"{CONSOLE}/owners/{quote(user.name)}" if user.role == OWNER else f"{CONSOLE}/board",
                                    status_code=303)
        _cookie(response, request, SESSION_COOKIE, session_id, CONSOLE)
        response.delete_cookie(PRE_SESSION_COOKIE, path=f"{CONSOLE}/sign-in")
        return response

    async def page(self, request: Request, handler, *args) -> Response:
        session = self.session(request)
        if session is None:
            return RedirectResponse(f"{CONSOLE}/sign-in", status_code=303)
        try:
            return await run_in_threadpool(handler, request, session, *args)
        except NotFoundError as error:
            return self.refused(request, 404, str(error), session)
        except PiitracerError as error:
            return self.refused(request, 409, str(error), session)

    def refused(self, request: Request, status: int, message: str, session: Session | None = None) -> Response:
        return HTMLResponse(templates.render("error.html", user=session.user if session else None,
                                             csrf=session.csrf if session else "", status=status, error=message,
                                             commands=self.commands),
                            status_code=status)

    # ---- pages --------------------------------------------------------------------------------

    def board_page(self, request: Request, session: Session, state: str | None, overdue: bool) -> Response:
        states = [s.value for s in RequestState]
        with self._open() as lifecycle:
            rows = board(lifecycle.board(), self.config.now(), state if state in states else None, overdue)
        return self._html("board.html", session, rows=rows, states=states, state=state, overdue=overdue)

    def request_page(self, request: Request, session: Session, request_id: str, error: str | None = None,
                     notice: str | None = None, status: int = 200) -> Response:
        from piitracer.render.report_facts import STATE_LABELS, STATES

        now = self.config.now()
        if self.config.audit_key is None:
            error = error or ("this server has no audit key: a request's plan and evidence cannot be read here "
                              "(start piitracer serve with PIITRACER_AUDIT_KEY_FILE or --audit-key-file)")
        elif notice is None and request.query_params.get("attested"):
            notice = f"step {request.query_params['attested']} attested as {session.user.name}"
        with self._open() as lifecycle:
            view = request_view(self.workspace, self._trail_log(lifecycle), lifecycle.request(request_id), request_id, now)
        diagram, problem = None, None
        if view.facts is not None:
            try:
                diagram = self._diagram(view.facts)
            except Exception as error:  # a diagram that cannot be drawn must not hide the evidence
                problem = f"the lineage diagram could not be drawn ({type(error).__name__})"
        public_key = self.config.signing_key_path
        return self._html("request.html", session, status=status, request_id=request_id, view=view, now=now,
                          diagram=diagram, diagram_problem=problem, error=error, notice=notice,
                          legend=[(s, STATE_LABELS[s]) for s in STATES],
                          certificate_available=public_key is not None and self.config.audit_key is not None,
                          public_key_name="signing-key.pub", certificate_file=f"certificate-{_safe_name(request_id)}.json")

    def owner_page(self, request: Request, session: Session, owner: str) -> Response:
        if session.user.role == OWNER and owner != session.user.name:
            return self.refused(request, 403, "an owner sees the steps waiting for them only", session)
        with self._open() as lifecycle:
            waiting = waiting_for(self.workspace, self._trail_log(lifecycle), lifecycle.board(), owner, self.config.now())
        return self._html("owner.html", session, owner=owner, waiting=waiting)

    def certificate(self, request: Request, session: Session, request_id: str) -> Response:
        import json

        if self.config.signing_key_path is None or self.config.audit_key is None:
            return self.refused(request, 404, "this server has no signing key: issue the certificate with "
                                              "piitracer audit certificate", session)
        with self._open() as lifecycle:
            if not lifecycle.has_audit_log():
                raise NotFoundError(f"no request {request_id!r} in the audit log")
            document = lifecycle.certificate(request_id)
        text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        return Response(text, media_type="application/json", headers={
            "Content-Disposition": f'attachment; filename="certificate-{_safe_name(request_id)}.json"'})

    def public_key(self, request: Request, session: Session) -> Response:
        """The certificates' public key (PEM): what an auditor checks a downloaded certificate with."""
        from piitracer.crypto.signing import public_key_path

        if self.config.signing_key_path is None or not public_key_path(self.config.signing_key_path).exists():
            return self.refused(request, 404, "this server has no certificate signing key", session)
        return Response(public_key_path(self.config.signing_key_path).read_bytes(), media_type="application/x-pem-file",
                        headers={"Content-Disposition": 'attachment; filename="signing-key.pub"'})

    def attest(self, request: Request, session: Session, request_id: str, step_id: str, text: str,
               upload: tuple[str, bytes] | None) -> Response:
        if self.config.audit_key is None or self.config.master is None:
            return self.request_page(request, session, request_id, status=503, error=(
                "this server has no " + ("audit key" if self.config.audit_key is None else "master key")
                + ": attestations cannot be recorded here"))
        try:
            with self._open() as lifecycle:
                entry = attest(lifecycle, session.user, request_id, step_id, text, upload)
        except ConsoleRefused as error:
            return self.request_page(request, session, request_id, error=str(error), status=error.status)
        log.info("console: %s attested step %s of request %s (audit entry %d)", session.user.name, step_id,
                 request_id, entry.seq)
        return RedirectResponse(f"{CONSOLE}/requests/{quote(request_id)}?attested={quote(step_id)}", status_code=303)

    # ---- reading ------------------------------------------------------------------------------

    def _html(self, name: str, session: Session, status: int = 200, **context) -> Response:
        return HTMLResponse(templates.render(name, user=session.user, csrf=session.csrf, commands=self.commands,
                                             **context), status_code=status)

    def _open(self):
        """A session (:func:`piitracer.api.session.open`) with the server's keys, for one page: the
        console reads and records through the same use cases as the CLI."""
        from piitracer.api.session import open as open_session

        return open_session(self.workspace, self.config.keys)

    def _trail_log(self, lifecycle):
        """The session's audit log when the server has the audit key and the workspace a log (else None)."""
        if lifecycle.keys.audit is None or not lifecycle.has_audit_log():
            return None
        return lifecycle.audit(create=False)

    def _diagram(self, facts) -> str:
        from piitracer.render.report import lineage_svg

        if self._graph is None:
            from piitracer.api import build_lineage_graph

            self._graph = build_lineage_graph(self.workspace)
        return lineage_svg(self._graph, facts)


def _cookie(response: Response, request: Request, name: str, value: str, path: str) -> None:
    # Secure when the browser reached us over TLS (directly, or through a proxy uvicorn trusts
    # with X-Forwarded-Proto): a plain-http cookie would never be sent back over http otherwise.
    response.set_cookie(name, value, path=path, httponly=True, samesite="strict", secure=request.url.scheme == "https",
                        max_age=None)


def _safe_name(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[:120]



def server_config(workspace: Workspace, master_key_file: Path | None = None, audit_key_file: Path | None = None,
                  signing_key_file: Path | None = None, environ: dict[str, str] | None = None) -> tuple[ConsoleConfig, list[str]]:
    """The console's keys for ``piitracer serve``, loaded as every command loads them
    (:meth:`piitracer.api.keys.Keys.load`: a file given, else the environment). A key given but
    unusable stops the server now (not at a download); one merely absent leaves that part of the
    console off, and the returned lines say which."""
    from piitracer.api.keys import Keys

    keys = Keys.load(audit_key_file, master_key_file, signing_key_file, environ=environ)
    notes: list[str] = []
    if keys.audit is None:
        notes.append("no audit key: the console shows the board only (no plan, evidence or attestation)")
    if keys.signing_key_file is None:
        notes.append("no signing key: certificates are issued with piitracer audit certificate")
    if keys.master is None:
        notes.append("no master key: owners cannot attest here")
    return ConsoleConfig(workspace, audit_key=keys.audit, master=keys.master, signing_key_path=keys.signing_key_file), notes
