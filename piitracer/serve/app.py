"""The OpenLineage consumer endpoint (FastAPI): ``POST /api/v1/lineage``, the path Marquez and the
OpenLineage HTTP transport use.

Each POST carries one event (RunEvent, DatasetEvent or JobEvent; JSON, optionally gzip- or
deflate-compressed). A valid one is appended to the workspace's lineage store and answered 201;
a malformed one is answered 400 with every defect found and kept as a rejected record (its body
encrypted under the master key, or only its digest: ``ingest.openlineage.received``); a body over the
size limit — as sent (``Content-Length`` or counted while it streams in: reading stops at the
limit) or once inflated — is answered 413. With a token configured, a request without
``Authorization: Bearer <token>`` is answered 401 and nothing is read or stored. Answers and logs
name defects, never the body.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from piitracer.ingest.openlineage.received import ReceivedEvents

LINEAGE_PATH = "/api/v1/lineage"
log = logging.getLogger(__name__)


def create_app(received: ReceivedEvents, token: str | None = None) -> FastAPI:
    """The endpoint for one workspace's lineage store. ``received``: where events go (the session
    gives it: :meth:`piitracer.api.session.Session.received_events`, rejected bodies sealed under
    the master key when there is one, kept for its retention, bodies within its limits);
    ``token``: the bearer token producers send (required by the CLI unless the server listens on
    loopback only)."""
    store, limits = received, received.limits
    app = FastAPI(title="piitracer OpenLineage endpoint", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.received = store

    @app.post(LINEAGE_PATH)
    async def receive(request: Request) -> JSONResponse:
        if token is not None and not _authorised(request.headers.get("authorization"), token):
            return JSONResponse({"error": "missing or wrong bearer token"}, status_code=401,
                                headers={"WWW-Authenticate": "Bearer"})
        declared = request.headers.get("content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > limits.max_body_bytes:
            # Refused before a byte of the body is read.
            received = await run_in_threadpool(store.too_large, f"Content-Length {int(declared)} is larger than the "
                                               f"limit of {limits.max_body_bytes} bytes", 0)
            return _answer(received)
        chunks, size = [], 0
        try:
            async for chunk in request.stream():
                size += len(chunk)
                if size > limits.max_body_bytes:
                    received = await run_in_threadpool(store.too_large, f"body is larger than the limit of "
                                                       f"{limits.max_body_bytes} bytes (reading stopped there)", size)
                    return _answer(received)
                chunks.append(chunk)
        except ClientDisconnect:
            return JSONResponse({"error": "the client went away before the body ended"}, status_code=400)
        try:
            received = await run_in_threadpool(store.receive, b"".join(chunks), request.headers.get("content-encoding"))
        except OSError as error:  # the disk, not the body: the producer may retry
            log.error("could not store a received event: %s", type(error).__name__)
            return JSONResponse({"error": "the event could not be stored; retry later"}, status_code=503)
        return _answer(received)

    @app.get("/healthz")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    return app


def _answer(received) -> JSONResponse:
    if received.accepted:
        return JSONResponse({"stored": received.kind}, status_code=201)
    # A refused body is not read further: the connection is not reused.
    headers = {"Connection": "close"} if received.too_large else None
    return JSONResponse({"error": received.reason}, status_code=received.status, headers=headers)


def is_loopback(host: str) -> bool:
    """True when ``host`` (as given to ``--host``) listens on this machine only: 127.0.0.0/8,
    ::1 or ``localhost``; every other address or name may be reached from elsewhere."""
    name = host.strip().strip("[]").lower()
    if name in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _authorised(header: str | None, token: str) -> bool:
    scheme, _, given = (header or "").partition(" ")
    # Constant-time comparison: the answer must not tell how much of a guessed token was right.
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())
