"""`piitracer serve` under hostile input (issue 30, point 4), over real HTTP on 127.0.0.1: a body
over the limit is refused while it streams in (413, reading stops there) or from its
Content-Length; gzip/deflate bodies are inflated in bounded steps (a small bomb is 413, not
200 MiB in memory); deep nesting, invalid UTF-8, huge numbers, NaN, lone surrogates, arrays,
empty bodies, unknown encodings and truncated gzip are 400 and kept, never a 500; a server
reachable from other machines needs a token; rejected bodies are kept sealed under the master key
(or only as a digest), expire, and are deleted by `requests close` when they hold the person; under
concurrent load every event answered 201 is stored."""

from __future__ import annotations

import gzip
import hashlib
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
import zlib
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

import pytest
import uvicorn
from s3_server import free_port
from test_serve import ROOT, post, serving, workspace

import piitracer
from piitracer.api import Keys, open as open_session, request_store
from piitracer.audit import load_audit_key
from piitracer.crypto.envelope import load_master_key
from piitracer.crypto.sealed_body import BodySealer
from piitracer.ingest.openlineage.received import REJECTED_FOLDER, Limits, ReceivedEvents, kept_rejected
from piitracer.model.requests import RequestState
from piitracer.serve.app import create_app, is_loopback

LIMIT = 16 * 1024 * 1024  # the default limit, as sent and once inflated
MARKER = "PERSONAL-DATA-" + uuid.uuid4().hex  # stands for anything personal a producer might send
AUDIT = "serve-limits-audit-key-0123456789abcdef"


def event(**extra) -> dict:
    return {"eventType": "COMPLETE", "eventTime": "2026-11-20T09:00:00Z", "run": {"runId": str(uuid.uuid4())},
            "job": {"namespace": "spark-prod", "name": "crm.sync"}, "producer": "https://example.com/t", **extra}


def lineage(ws: Path) -> Path:
    return ws / ".piitracer" / "lineage"


def stored_events(ws: Path) -> list[dict]:
    path = lineage(ws) / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def every_byte(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def raw_exchange(url: str, head: str, chunks: Iterator[bytes] = iter(()), timeout: float = 20) -> tuple[int, dict]:
    """Send ``head`` and then ``chunks`` on one socket, then read the answer until the server
    closes: (status, JSON body). Times out (a failure) if the server waits for more body."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(head.encode())
        for chunk in chunks:
            sock.sendall(chunk)
        answer = b""
        while b"\r\n\r\n" not in answer or not _complete(answer):
            data = sock.recv(65536)
            if not data:
                break
            answer += data
    head_part, _, body = answer.partition(b"\r\n\r\n")
    return int(head_part.split(b" ", 2)[1]), json.loads(body)


def _complete(answer: bytes) -> bool:
    head, _, body = answer.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":")[1])
    return False


def auth_head(length_header: str, extra: str = "") -> str:
    return (f"POST /api/v1/lineage HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"{length_header}\r\n{extra}\r\n")


@contextmanager
def app_server(app) -> Iterator[str]:
    """A real uvicorn server for ``app`` on a free 127.0.0.1 port, in a thread; stopped on exit."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.05)
    assert server.started
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture()
def served(tmp_path: Path):
    """`piitracer serve` (the CLI, its own process) on a fresh workspace, master key from the
    session's environment (conftest); yields (workspace, url)."""
    ws = workspace(tmp_path / "ws")
    with serving(ws) as url:
        yield ws, url


def test_a_too_large_content_length_is_413_before_any_body_is_sent(served) -> None:
    ws, url = served
    code, answer = raw_exchange(url, auth_head(f"Content-Length: {10 * LIMIT}"), timeout=10)
    assert code == 413 and answer["error"] == f"Content-Length {10 * LIMIT} is larger than the limit of {LIMIT} bytes"
    (record,) = kept_rejected(ws)
    assert (record.record["status"], record.record["kept"], record.record["body_bytes"]) == (413, "nothing", 0)
    assert stored_events(ws) == []


def test_a_streamed_body_is_cut_at_the_limit_with_413_before_it_ends(served) -> None:
    """Chunked, no Content-Length: the server counts while it reads and answers 413 at the limit,
    without waiting for the rest (the client never sends the final chunk)."""
    ws, url = served
    pieces = [b" " * (1024 * 1024)] * (LIMIT // (1024 * 1024)) + [b" "]  # one byte over; the end never comes
    chunks = (f"{len(piece):x}\r\n".encode() + piece + b"\r\n" for piece in pieces)
    code, answer = raw_exchange(url, auth_head("Transfer-Encoding: chunked"), chunks, timeout=20)
    assert code == 413 and answer["error"] == f"body is larger than the limit of {LIMIT} bytes (reading stopped there)"
    (record,) = kept_rejected(ws)
    assert (record.record["kept"], record.record["body_bytes"]) == ("nothing", LIMIT + 1)
    assert urllib_health(url) == 200  # the server goes on


def urllib_health(url: str) -> int:
    import urllib.request

    with urllib.request.urlopen(f"{url}/healthz", timeout=5) as response:
        return response.status


def deflate_raw(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


def test_compressed_bodies_are_inflated_only_up_to_the_limit(served) -> None:
    """A valid event padded with 17 MiB of spaces (valid JSON) packs into ~17 KiB: 413 in gzip,
    zlib-deflate and raw deflate; the same event unpadded is stored in all three."""
    ws, url = served
    good = json.dumps(event()).encode()
    bomb = good + b" " * (LIMIT + 1024 * 1024)
    for name, pack in (("gzip", gzip.compress), ("deflate", zlib.compress), ("deflate", deflate_raw)):
        packed = pack(bomb)
        assert len(packed) < 64 * 1024
        code, answer = post(url, packed, {"Content-Encoding": name})
        assert (code, answer) == (413, {"error": f"body inflates to more than the limit of {LIMIT} bytes"})
        assert post(url, pack(good), {"Content-Encoding": name}) == (201, {"stored": "RunEvent"})
    assert len(stored_events(ws)) == 3
    assert [r.record["status"] for r in kept_rejected(ws)] == [413, 413, 413]
    kept = [lineage(ws) / "events.jsonl", *(ws / REJECTED_FOLDER).iterdir()]
    assert sum(p.stat().st_size for p in kept) < 64 * 1024


HOSTILE = [  # (body, content-encoding, the defect named)
    ((b'{"a": "' + MARKER.encode() + b'", "b": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"), None,
     "body is nested more than 64 levels deep"),
    (b"{" + b'"k":{' * 5000 + b"}" * 5001, None, "body is nested more than 64 levels deep"),
    (b'{"eventType": "\xff\xfe' + MARKER.encode() + b'"}', None, "body is not UTF-8 text (invalid byte at offset 15)"),
    (json.dumps(event()).encode()[:-1] + b', "n": ' + b"9" * 10_000 + b"}", None,
     "body is not JSON piitracer reads: a number has too many digits"),
    (json.dumps(event(extra={"x": float("nan")})).encode(), None, "body is not JSON: NaN is not a JSON number"),
    (json.dumps(event()).encode()[:-1] + b', "big": 1e999}', None,
     "body is not JSON piitracer reads: a number is out of the range of a double"),
    (json.dumps(event()).encode()[:-1] + b', "s": "\\ud800' + MARKER.encode() + b'"}', None,
     "body holds a lone UTF-16 surrogate escape (\\ud800-\\udfff): not a character"),
    (json.dumps([event()]).encode(), None, "expected a JSON object (an OpenLineage event), got an array"),
    (b"", None, "body is not JSON: Expecting value at line 1 column 1"),
    (json.dumps(event()).encode(), "br", "Content-Encoding is not supported (expected gzip, deflate or none)"),
    (gzip.compress(json.dumps(event(note=MARKER)).encode())[:-12], "gzip", "body is not complete gzip data (truncated or corrupt)"),
    (b"\x1f\x8b" + MARKER.encode(), "gzip", "body is not complete gzip data (truncated or corrupt)"),
]


def test_hostile_bodies_are_400_kept_with_the_defect_never_a_500(served) -> None:
    ws, url = served
    for body, encoding, defect in HOSTILE:
        code, answer = post(url, body, {"Content-Encoding": encoding} if encoding else {})
        assert (code, answer) == (400, {"error": defect}), defect
        assert MARKER not in json.dumps(answer)
    assert stored_events(ws) == []
    records = kept_rejected(ws, BodySealer(load_master_key()))
    assert [(r.record["status"], r.record["reason"]) for r in records] == [(400, d) for _, _, d in HOSTILE]
    assert [r.body for r in records] == [b for b, _, _ in HOSTILE]  # each kept as sent, sealed
    assert MARKER.encode() not in every_byte(lineage(ws))
    assert post(url, json.dumps(event()).encode(), {}) == (201, {"stored": "RunEvent"})  # still serving


def test_a_deeply_nested_body_is_refused_before_the_parser_runs(tmp_path: Path) -> None:
    """In-process, no HTTP: the depth is checked before json recurses (no RecursionError even
    with a recursion limit lower than the nesting)."""
    store = ReceivedEvents(tmp_path, limits=Limits(max_depth=8))
    deep = json.dumps(event(facet={"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": 1}}}}}}}})).encode()  # 9 levels
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        received = store.receive(b"[" * 150 + b"]" * 150)
    finally:
        sys.setrecursionlimit(limit)
    assert (received.status, received.reason) == (400, "body is nested more than 8 levels deep")
    assert store.receive(deep).reason == "body is nested more than 8 levels deep"
    assert store.receive(deep.replace(b'{"h": 1}', b"1")).accepted


@pytest.mark.parametrize("host, loopback", [("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("[::1]", True),
                                            ("localhost", True), ("0.0.0.0", False), ("::", False), ("10.1.2.3", False),
                                            ("lakehouse.example.com", False), ("", False)])
def test_which_hosts_are_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_server_reachable_from_other_machines_needs_a_token(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    env = {k: v for k, v in os.environ.items() if k != "PIITRACER_LINEAGE_TOKEN"}
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run([sys.executable, "-m", "piitracer.cli.main", "--workspace", str(ws), "serve", "--host",
                             "0.0.0.0", "--port", str(free_port())], capture_output=True, text=True, env=env, timeout=20)
    assert result.returncode == 2
    assert [line for line in result.stderr.splitlines() if not line.startswith("warning: ")] == [  # the catalog's own
        "error: --host 0.0.0.0 is reachable from other machines: give producers a token with --token-file FILE (or "
        "$PIITRACER_LINEAGE_TOKEN), or listen on 127.0.0.1"]
    assert not (lineage(ws) / "events.jsonl").exists() and not (ws / REJECTED_FOLDER).exists()


def test_without_a_master_key_only_the_digest_of_a_rejected_body_is_kept(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    body = json.dumps(event(eventTime="yesterday", note=MARKER)).encode()
    gone = {"PIITRACER_MASTER_KEY": None, "PIITRACER_MASTER_KEY_FILE": None}
    with serving(ws, env=gone) as url:
        assert post(url, body, {})[0] == 400
    assert MARKER.encode() not in every_byte(lineage(ws))
    (record,) = kept_rejected(ws)
    assert record.record["kept"] == "digest" and record.record["body_sha256"] == hashlib.sha256(body).hexdigest()
    assert "body" not in record.record


def test_rejected_records_expire(tmp_path: Path) -> None:
    """At start: a record older than the retention (30 days) is deleted, a legacy rejected.jsonl
    (bodies in clear) is sealed record by record and removed. While serving: with a 1-second
    retention, the next receive deletes what expired."""
    ws = workspace(tmp_path / "ws")
    folder = ws / REJECTED_FOLDER
    folder.mkdir(parents=True)
    old = datetime.now(timezone.utc) - timedelta(days=31)
    stale = folder / f"{old:%Y%m%dT%H%M%S%f}Z-{uuid.uuid4().hex}.json"
    stale.write_text(json.dumps({"id": stale.stem, "kept": "digest", "reason": "x"}))
    torn = folder / f"{old:%Y%m%dT%H%M%S%f}Z-{uuid.uuid4().hex}.part"  # a write cut by a crash
    torn.write_text('{"kept": "encrypted", "bo')
    os.utime(torn, (old.timestamp(), old.timestamp()))
    legacy = lineage(ws) / "rejected.jsonl"
    legacy.write_text(json.dumps({"received_at": datetime.now(timezone.utc).isoformat(), "reason": "old reason",
                                  "body_bytes": 9, "body": MARKER}) + "\n")
    with serving(ws) as url:
        assert post(url, json.dumps(event()).encode(), {})[0] == 201
    assert not stale.exists() and not torn.exists() and not legacy.exists()
    (converted,) = kept_rejected(ws, BodySealer(load_master_key()))
    assert (converted.record["reason"], converted.body) == ("old reason", MARKER.encode())
    assert MARKER.encode() not in every_byte(lineage(ws))

    app = create_app(ReceivedEvents(ws, cipher=BodySealer(load_master_key()), retention=timedelta(seconds=1)))
    with app_server(app) as url:
        assert kept_rejected(ws) == []  # older than the 1-second retention at start
        assert post(url, b"{", {})[0] == 400
        assert len(kept_rejected(ws)) == 1
        time.sleep(1.2)
        assert post(url, b"[", {})[0] == 400
        assert [r.record["reason"] for r in kept_rejected(ws)] == ["body is not JSON: Expecting value at line 1 column 2"]


def watching_request(ws_root: Path, request_id: str, value: str, resolved: dict[str, list[str]] | None = None):
    """A request in the real request store, walked to `watching`; ``resolved``: the value sets the
    journal keeps for it (sealed under its data key), as an executed plan leaves them."""
    from piitracer.executor.journal import Journal

    ws = piitracer.load_workspace(ws_root)
    store = request_store(ws, load_master_key())
    store.add(request_id, datetime(2026, 11, 20, tzinfo=timezone.utc), datetime(2026, 12, 20, tzinfo=timezone.utc),
              ["crm.people.user_id"], [value])
    plan_id = "p" * 64
    for state in ("planned", "executing", "executed", "verified", "watching"):
        store.move(request_id, RequestState(state), f"test: {state}", plan_id=plan_id)
    if resolved:
        journal = Journal(ws_root / ".piitracer" / "journal.sqlite")
        journal.save_values(plan_id, {request_id: resolved}, cipher=store.cipher([request_id]))
        journal.close()
    return ws, store


def test_close_deletes_every_rejected_body_holding_the_person(tmp_path: Path) -> None:
    """Bodies received over HTTP hold the subject's value in several forms (plain, gzip cut short,
    JSON-escaped, in the defect the answer names) or a value the journal resolved for the request
    (its email); `requests close` deletes exactly those, keeps the other, and no byte of either
    value is left under .piitracer."""
    ws_root = workspace(tmp_path / "ws")
    value, other, email = "7000000001", "8000000002", "jo.person@example.com"
    bodies = [
        (json.dumps(event(eventTime="yesterday", note=f"mail {email}")).encode(), {}),  # a value the plan resolved
        (json.dumps(event(eventTime="yesterday", note=f"user {value}")).encode(), {}),
        (gzip.compress(json.dumps(event(eventTime="y", user=value, pad="x" * 5000)).encode())[:-12], {"Content-Encoding": "gzip"}),
        (json.dumps(event(eventTime="z")).encode()[:-1] + b', "u": "\\u0037' + value[1:].encode() + b'"}', {}),  # escaped
        (json.dumps(event(eventTime=value)).encode(), {}),  # the value in the defect named
        (json.dumps(event(eventTime="yesterday", note=f"user {other}")).encode(), {}),
    ]
    with serving(ws_root) as url:
        for body, headers in bodies:
            assert post(url, body, headers)[0] == 400
    assert len(list((ws_root / REJECTED_FOLDER).iterdir())) == 6

    ws, store = watching_request(ws_root, "dsr-30", value, {"crm.people.email": [email]})
    store.close()
    with open_session(ws, Keys(audit=load_audit_key(AUDIT), master=load_master_key())) as session:
        session.close("dsr-30", now_reason="test")
        entry = session.audit().entries(request_id="dsr-30")[-1]
    kept = kept_rejected(ws_root, BodySealer(load_master_key()))
    assert [r.body for r in kept] == [bodies[-1][0]]
    for form in (value, email):
        assert form.encode() not in every_byte(ws_root / ".piitracer")
    assert (entry.body["rejected_events_checked"], entry.body["rejected_events_deleted_holding_values"],
            entry.body["rejected_events_deleted_unreadable"]) == (6, 5, 0)


def test_close_deletes_rejected_bodies_it_cannot_open_and_says_so(tmp_path: Path) -> None:
    ws_root = workspace(tmp_path / "ws")
    another = BodySealer(load_master_key(environ={"PIITRACER_MASTER_KEY": "another-master-key-" + "z" * 32}))
    ReceivedEvents(ws_root, cipher=another).receive(json.dumps(event(eventTime="late", note="nothing of dsr-31")).encode())
    ReceivedEvents(ws_root, cipher=None).receive(b"{not json")  # a digest, no value: stays
    # An older version's rejected.jsonl, bodies in clear, never seen by a newer server: converted at close.
    (lineage(ws_root) / "rejected.jsonl").write_text("".join(json.dumps(
        {"received_at": "2026-11-25T10:00:00+00:00", "reason": "r", "body_bytes": 20, "body": text}) + "\n"
        for text in ('{"user": "7000000003"}', '{"user": "8000000004"}')))
    ws, store = watching_request(ws_root, "dsr-31", "7000000003")
    store.close()
    with open_session(ws, Keys(audit=load_audit_key(AUDIT), master=load_master_key())) as session:
        session.close("dsr-31", now_reason="test")
        entry = session.audit().entries(request_id="dsr-31")[-1]
    kept = kept_rejected(ws_root, BodySealer(load_master_key()))
    assert [(r.record["kept"], r.body) for r in kept] == [("encrypted", b'{"user": "8000000004"}'), ("digest", None)]
    assert b"7000000003" not in every_byte(ws_root / ".piitracer") and b"8000000004" not in every_byte(lineage(ws_root))
    assert (entry.body["rejected_events_checked"], entry.body["rejected_events_deleted_holding_values"],
            entry.body["rejected_events_deleted_unreadable"]) == (4, 1, 1)


def test_under_concurrent_load_every_event_answered_201_is_stored(served) -> None:
    """300 POSTs from 6 threads over keep-alive connections, valid events mixed with malformed
    ones and gzip bombs: every 201 is one line in events.jsonl (none lost, none twice), every
    400/413 one rejected record, no other answer. Bounded: 300 requests, 60 s at most."""
    ws, url = served
    port = int(url.rsplit(":", 1)[1])
    bomb = gzip.compress(json.dumps(event()).encode() + b" " * (LIMIT + 1))

    def body(i: int) -> tuple[bytes, dict[str, str], str | None]:
        if i % 10 == 3:
            return b'{"eventType": ' + b"[" * 1000, {}, None
        if i % 25 == 7:
            return bomb, {"Content-Encoding": "gzip"}, None
        run = str(uuid.uuid5(uuid.NAMESPACE_URL, f"load-{i}"))
        data = json.dumps({**event(), "run": {"runId": run}}).encode()
        return (gzip.compress(data), {"Content-Encoding": "gzip"}, run) if i % 2 else (data, {}, run)

    def worker(start: int) -> list[tuple[int, str | None]]:
        results = []
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for i in range(start, 300, 6):
            data, headers, run = body(i)
            connection.request("POST", "/api/v1/lineage", body=data, headers={"Content-Type": "application/json", **headers})
            response = connection.getresponse()
            response.read()
            results.append((response.status, run))
            if response.getheader("connection", "").lower() == "close":
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.close()
        return results

    began = time.monotonic()
    with ThreadPoolExecutor(6) as pool:
        results = [r for part in pool.map(worker, range(6)) for r in part]
    assert time.monotonic() - began < 60
    assert len(results) == 300 and {code for code, _ in results} == {201, 400, 413}
    accepted = sorted(run for code, run in results if code == 201)
    assert sorted(e["run"]["runId"] for e in stored_events(ws)) == accepted
    assert accepted == sorted(run for i in range(300) if (run := body(i)[2]))
    rejected = sorted(r.record["status"] for r in kept_rejected(ws))
    assert rejected == sorted(code for code, _ in results if code != 201)
