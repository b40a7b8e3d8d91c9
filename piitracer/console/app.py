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
                                        csrf_of, proxy_proves, same_token, sessions_path)
from piitracer.console.tokens import APPROVER, OWNER, ConsoleUser, check_token, role_of
from piitracer.console.views import ConsoleRefused, attest, request_view, waiting_for
from piitracer.workspace.model import Workspace
from piitracer.model.errors import NotFoundError, PiitracerError

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
    async def board_page(request: Request) -> Response:
        return await console.page(request, console.board_page)

    @app.get(f"{CONSOLE}/board.csv")
    async def board_csv(request: Request) -> Response:
        return await console.page(request, console.board_csv)

    @app.get(f"{CONSOLE}/approvals")
    async def approvals_page(request: Request) -> Response:
        return await console.page(request, console.approvals_page)

    @app.get(CONSOLE + "/plans/{plan_id}")
    async def plan_page(request: Request, plan_id: str) -> Response:
        return await console.page(request, console.plan_page, plan_id)

    @app.post(CONSOLE + "/plans/{plan_id}/approve")
    async def approve_plan(request: Request, plan_id: str) -> Response:
        session = console.session(request)
        if session is None:
            return RedirectResponse(f"{CONSOLE}/sign-in", status_code=303)
        form = await request.form(max_fields=4)
        if not same_token(form.get("csrf"), session.csrf):
            return console.refused(request, 403, "the form's CSRF token is missing or wrong", session)
        return await console.page(request, console.approve, plan_id, str(form.get("token") or ""))

    @app.get(CONSOLE + "/requests/{request_id}/report.html")
    async def report_download(request: Request, request_id: str) -> Response:
        return await console.page(request, console.report_download, request_id)

    @app.get(CONSOLE + "/requests/{request_id}/evidence.json")
    async def evidence_download(request: Request, request_id: str) -> Response:
        return await console.page(request, console.evidence_download, request_id)

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
                                       str(form.get("evidence_text") or ""), evidence_file, str(form.get("token") or ""))

    app.state.console = console
    return app


class _Console:
    def __init__(self, config: ConsoleConfig) -> None:
        from piitracer.render.lineage_diagram import STATE_FILLS

        self.config = config
        self.workspace = config.workspace
        self.commands = CommandLines(config.commands)
        self.sessions = Sessions(sessions_path(self.workspace.root), config.workspace.config.console.session_hours * 3600,
                                 people_root=self.workspace.root)
        self.limiter = SignInLimiter()
        self._graph = None
        self._proxy_key = __import__("secrets").token_urlsafe(32)
        # The diagram's fills as classes: the legend matches it without an inline style (CSP).
        self.css = templates.CSS + "".join(f".fill-{state}{{background:{fill}}}\n" for state, fill in STATE_FILLS.items()) \
            + "".join(f".state-{state}{{background:{fill}}}\n" for state, fill in BADGE_FILLS.items())

    # ---- sessions -----------------------------------------------------------------------------

    def session(self, request: Request) -> Session | None:
        """The signed-in session of a request: a trusted proxy's header (when configured), else the
        session cookie; None when the user is not (or no longer) listed in the workspace with the
        role they signed in with."""
        proxy = self.workspace.config.console.proxy_sign_in
        if proxy is not None and request.headers.get(proxy.header):
            client = request.client.host if request.client else None
            # The header is believed only with the secret the proxy alone holds, from the proxy's
            # address: any other process on that address can set a header, not know the secret.
            if proxy.trusts(client) and proxy_proves(proxy, request.headers.get(proxy.secret_header)):
                return self._proxy_session(request.headers[proxy.header].strip())
            log.warning("console: ignored %s from %s (not the trusted proxy: address or shared secret)", proxy.header,
                        client)
        session = self.sessions.get(request.cookies.get(SESSION_COOKIE))
        if session is not None and role_of(self.workspace, session.user.name) != session.user.role:
            return None  # the name left the workspace (or changed role): its sessions end with it
        return session

    def _proxy_session(self, name: str) -> Session | None:
        """A person the proxy authenticated: no cookie; the CSRF token is bound to the name by a
        key this process keeps (forms opened before a restart are refused once, never wrongly taken)."""
        role = role_of(self.workspace, name)
        if role is None:
            log.warning("console: the proxy signed in %r, who is not listed under owners, viewers or approvers", name[:64])
            return None
        return Session(ConsoleUser(name, role), csrf_of(f"{self._proxy_key}|{name}"), 0.0)

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
        found = check_token(self.workspace, token) if token else None
        if found is None:
            self.limiter.failed(client)
            log.warning("console: a sign-in with an unknown or wrong token from %s", client)
            return self.sign_in_page(request, "unknown or wrong token", 401)
        user, person = found
        session_id, _ = self.sessions.start(user, person)
        landing = {OWNER: f"{CONSOLE}/owners/{quote(user.name)}", APPROVER: f"{CONSOLE}/approvals"}
        response = RedirectResponse(landing.get(user.role, f"{CONSOLE}/board"), status_code=303)
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
        except ConsoleRefused as error:
            return self.refused(request, error.status, str(error), session)
        except PiitracerError as error:
            return self.refused(request, 409, str(error), session)

    def refused(self, request: Request, status: int, message: str, session: Session | None = None) -> Response:
        return HTMLResponse(templates.render("error.html", user=session.user if session else None,
                                             csrf=session.csrf if session else "", status=status, error=message,
                                             commands=self.commands),
                            status_code=status)

    # ---- pages --------------------------------------------------------------------------------

    def board_page(self, request: Request, session: Session) -> Response:
        from piitracer.console.board_view import board_context, board_query

        query, problem = board_query(request.query_params, self.config.now())
        with self._open() as lifecycle:
            page = lifecycle.board_page(query)
        return self._html("board.html", session, error=problem, **board_context(page, self.workspace, request.query_params))

    def board_csv(self, request: Request, session: Session) -> Response:
        from piitracer.console.board_view import board_query
        from piitracer.console.exports import board_csv, recorded

        self._need_audit_key("the board's export")
        query, problem = board_query(request.query_params, self.config.now())
        if problem:
            return self.refused(request, 400, problem, session)
        with self._open() as lifecycle:
            text = board_csv(lifecycle, query, self.config.now())
            filters = {k: v for k, v in request.query_params.items() if k in ("q", "state", "owner", "due", "overdue", "sort", "desc")}
            recorded(lifecycle, "board.csv", session.user.name, text.encode(), detail={"filters": filters})
        return Response(text, media_type="text/csv; charset=utf-8",
                        headers={"Content-Disposition": 'attachment; filename="requests.csv"'})

    def approvals_page(self, request: Request, session: Session) -> Response:
        from piitracer.console.approvals import waiting_plans

        config = self.workspace.config
        with self._open() as lifecycle:
            plans = waiting_plans(lifecycle, config.approvers)
        return self._html("approvals.html", session, plans=plans, approvers=config.approvers,
                          required=config.policy.approval == "required")

    def plan_page(self, request: Request, session: Session, plan_id: str, error: str | None = None,
                  status: int = 200) -> Response:
        from piitracer.console.approvals import plan_summary, with_estimate

        self._need_audit_key("a plan")
        with self._open() as lifecycle:
            if not lifecycle.has_audit_log():
                raise NotFoundError(f"no plan {plan_id[:16]}: this workspace has no audit log yet")
            store_ids = lifecycle.requests().request_ids_of_plan(plan_id) if lifecycle.has_requests() else []
            summary = plan_summary(lifecycle.audit(create=False), plan_id, self.workspace.config.approvers,
                                   store_ids or None)
            if store_ids and self.config.master is not None:
                summary = with_estimate(lifecycle, summary)
        notice = f"approved as {session.user.name}" if request.query_params.get("approved") else None
        return self._html("plan.html", session, status=status, plan=summary, error=error, notice=notice)

    def approve(self, request: Request, session: Session, plan_id: str, token: str = "") -> Response:
        from piitracer.model.errors import IdentityRefusedError
        from piitracer.requests.approval import ApprovalRefused

        if not session.user.can_approve:
            return self.plan_page(request, session, plan_id, error=f"{session.user.name} is a{'n' if session.user.role == OWNER else ''} "
                                  f"{session.user.role}: only an approver approves a plan", status=403)
        self._need_audit_key("an approval")
        try:
            with self._open() as lifecycle:
                ids = lifecycle.requests().request_ids_of_plan(plan_id) if lifecycle.has_requests() else []
                if not ids:
                    raise NotFoundError(f"no plan {plan_id[:16]} in the request store")
                person = self._person(lifecycle, session, token)
                entry = lifecycle.approve(lifecycle.plan_of_request(ids[0]), person)
        except (ApprovalRefused, IdentityRefusedError) as error:
            return self.plan_page(request, session, plan_id, error=str(error), status=403)
        log.info("console: %s approved plan %s (audit entry %d)", session.user.name, plan_id[:16], entry.seq)
        return RedirectResponse(f"{CONSOLE}/plans/{plan_id}?approved=1", status_code=303)

    def report_download(self, request: Request, session: Session, request_id: str) -> Response:
        from piitracer.console.exports import recorded

        self._need_audit_key("the audit report")
        with self._open() as lifecycle:
            if not lifecycle.has_audit_log():
                raise NotFoundError(f"no request {request_id!r} in the audit log")
            text = lifecycle.report(request_id, "html", graph=self._lineage_graph())
            recorded(lifecycle, "report.html", session.user.name, text.encode(), request_id)
        return Response(text, media_type="text/html; charset=utf-8", headers={
            "Content-Disposition": f'attachment; filename="report-{_safe_name(request_id)}.html"',
            "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:"})

    def evidence_download(self, request: Request, session: Session, request_id: str) -> Response:
        from piitracer.api import request_trail
        from piitracer.console.exports import as_json, evidence_manifest, recorded
        from piitracer.render.report_facts import report_facts

        self._need_audit_key("the evidence")
        with self._open() as lifecycle:
            if not lifecycle.has_audit_log():
                raise NotFoundError(f"no request {request_id!r} in the audit log")
            facts = report_facts(request_trail(lifecycle.audit(create=False), request_id), self.config.now())
            text = as_json(evidence_manifest(facts, request_id))
            recorded(lifecycle, "evidence.json", session.user.name, text.encode(), request_id)
        return Response(text, media_type="application/json", headers={
            "Content-Disposition": f'attachment; filename="evidence-{_safe_name(request_id)}.json"'})

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
        paging = _paging(request, request_id, "steps", view.steps, STEPS_PER_PAGE) \
            | _paging(request, request_id, "audit", view.entries, AUDIT_PER_PAGE)
        return self._html("request.html", session, status=status, request_id=request_id, view=view, now=now, **paging,
                          diagram=diagram, diagram_problem=problem, error=error, notice=notice,
                          legend=[(s, STATE_LABELS[s]) for s in STATES],
                          certificate_available=public_key is not None and self.config.audit_key is not None,
                          public_key_name="signing-key.pub", certificate_file=f"certificate-{_safe_name(request_id)}.json")

    def _person(self, lifecycle, session: Session, token: str):
        """Who acts, proven by their own key: the one the session's sign-in opened, or, in a session
        a proxy vouched for, the one the token given on the form opens — the signed-in person's."""
        from piitracer.model.errors import IdentityRefusedError

        if session.person is not None:
            return session.person
        person = lifecycle.person(token) if token.strip() else None
        if person is None or person.name != session.user.name:
            raise IdentityRefusedError(f"{session.user.name}: give your own token on the form to sign this (the proxy "
                                       "says who you are; your token proves it and opens your signing key)")
        return person

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
            from piitracer.console.exports import recorded

            recorded(lifecycle, "certificate.json", session.user.name, text.encode(), request_id)
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
               upload: tuple[str, bytes] | None, token: str = "") -> Response:
        from piitracer.model.errors import IdentityRefusedError

        if self.config.audit_key is None or self.config.master is None:
            return self.request_page(request, session, request_id, status=503, error=(
                "this server has no " + ("audit key" if self.config.audit_key is None else "master key")
                + ": attestations cannot be recorded here"))
        try:
            with self._open() as lifecycle:
                person = self._person(lifecycle, session, token) if session.user.can_attest else None
                entry = attest(lifecycle, session.user, person, request_id, step_id, text, upload)
        except ConsoleRefused as error:
            return self.request_page(request, session, request_id, error=str(error), status=error.status)
        except IdentityRefusedError as error:
            return self.request_page(request, session, request_id, error=str(error), status=403)
        log.info("console: %s attested step %s of request %s (audit entry %d)", session.user.name, step_id,
                 request_id, entry.seq)
        return RedirectResponse(f"{CONSOLE}/requests/{quote(request_id)}?attested={quote(step_id)}", status_code=303)

    # ---- reading ------------------------------------------------------------------------------

    def _html(self, name: str, session: Session, status: int = 200, **context) -> Response:
        return HTMLResponse(templates.render(name, user=session.user, csrf=session.csrf, commands=self.commands,
                                             **context), status_code=status)

    def _need_audit_key(self, what: str) -> None:
        if self.config.audit_key is None:
            raise ConsoleRefused(f"this server has no audit key: {what} cannot be read here, nor its download recorded "
                                 "(start piitracer serve with PIITRACER_AUDIT_KEY_FILE or --audit-key-file)", 503)

    def _lineage_graph(self):
        if self._graph is None:
            from piitracer.api import build_lineage_graph

            self._graph = build_lineage_graph(self.workspace)
        return self._graph

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

        return lineage_svg(self._lineage_graph(), facts)


# Badge colours of request and step states (dataset states use the diagram's fills): each light,
# with dark text far above WCAG AA; the badge always says the state in words.
BADGE_FILLS = {"queued": "#e4e4e4", "planned": "#ffe08a", "executing": "#ffc38a", "executed": "#ffc38a",
               "awaiting_attestation": "#ffc38a", "verified": "#b9e4b0", "watching": "#9cd0f5", "closed": "#b9e4b0",
               "committed": "#b9e4b0", "attested": "#9cd0f5", "pending": "#ffe08a", "failed": "#f4a3a3",
               "refused": "#f4a3a3", "not_run": "#e4e4e4"}


STEPS_PER_PAGE, AUDIT_PER_PAGE = 20, 25


def _paging(request: Request, request_id: str, name: str, items: list, per_page: int) -> dict[str, Any]:
    """One page of a request page's list (``?steps=N``, ``?audit=N``), and links to the others
    that keep the other list's page."""
    text = request.query_params.get(name, "1")
    pages = max(1, -(-len(items) // per_page))
    at = min(max(int(text), 1), pages) if text.isdigit() else 1
    others = {k: v for k, v in request.query_params.items() if k in ("steps", "audit") and k != name}

    def link(number: int) -> str:
        query = "&".join(f"{k}={v}" for k, v in sorted({**others, name: str(number)}.items()) if v != "1")
        return f"{CONSOLE}/requests/{quote(request_id)}" + (f"?{query}" if query else "") + f"#{name}-heading"

    chunk = items[(at - 1) * per_page: at * per_page]
    first = (at - 1) * per_page + 1 if chunk else 0
    return {f"{name}_page": chunk, f"{name}_at": at, f"{name}_pages": pages, f"{name}_link": link,
            f"{name}_first": first, f"{name}_last": first + len(chunk) - 1 if chunk else 0}


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
