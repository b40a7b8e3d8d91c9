"""The OpenLineage consumer endpoint (FastAPI): ``POST /api/v1/lineage``, the path Marquez and the
OpenLineage HTTP transport use.

Each POST carries one event (RunEvent, DatasetEvent or JobEvent; JSON, optionally gzip- or
deflate-compressed). A valid one is appended to the workspace's lineage store and answered 201;
a malformed one is answered 400 with every defect found, and kept in the rejected-events file
with that reason (``ingest.received_events``). With a token configured, a request without
``Authorization: Bearer <token>`` is answered 401 and nothing is stored.
"""

from __future__ import annotations

import hmac
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from piitracer.ingest.received_events import ReceivedEvents

LINEAGE_PATH = "/api/v1/lineage"


def create_app(workspace_root: Path, token: str | None = None) -> FastAPI:
    """The endpoint for one workspace; ``token`` (optional) is the bearer token producers send."""
    store = ReceivedEvents(workspace_root)
    app = FastAPI(title="piitracer OpenLineage endpoint", docs_url=None, redoc_url=None, openapi_url=None)

    @app.post(LINEAGE_PATH)
    async def receive(request: Request) -> JSONResponse:
        if token is not None and not _authorised(request.headers.get("authorization"), token):
            return JSONResponse({"error": "missing or wrong bearer token"}, status_code=401,
                                headers={"WWW-Authenticate": "Bearer"})
        body = await request.body()
        received = store.receive(body, request.headers.get("content-encoding"))
        if not received.accepted:
            return JSONResponse({"error": received.reason}, status_code=400)
        return JSONResponse({"stored": received.kind}, status_code=201)

    @app.get("/healthz")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    return app


def _authorised(header: str | None, token: str) -> bool:
    scheme, _, given = (header or "").partition(" ")
    # Constant-time comparison: the answer must not tell how much of a guessed token was right.
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())
