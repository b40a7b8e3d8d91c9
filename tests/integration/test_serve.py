"""`piitracer serve`: the OpenLineage consumer endpoint, run as the CLI runs it (a uvicorn
process on 127.0.0.1), fed by the real openlineage-python client's HTTP transport (gzip, bearer
token), then `plan` using what it received. A malformed POST gets 400 with every defect and is
kept with its reason (its body sealed); a wrong token gets 401 and nothing is stored. Limits,
hostile bodies, expiry and close: test_serve_limits.py."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import pytest
import yaml
from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import column_lineage_dataset, schema_dataset
from openlineage.client.transport.http import ApiKeyTokenProvider, HttpCompression, HttpConfig, HttpTransport
from s3_server import free_port

import piitracer
from piitracer.api import plan_deletion
from piitracer.crypto.envelope import load_master_key
from piitracer.crypto.sealed_body import BodySealer
from piitracer.ingest.openlineage.received import kept_rejected
from piitracer.model.plan import Subject
from paths import REPO

ROOT = REPO
TOKEN = "serve-test-token-" + uuid.uuid4().hex


def workspace(folder: Path) -> Path:
    """Two tables and no lineage file: only the events a producer sends link them."""
    folder.mkdir(parents=True)
    catalog = {
        "crm.people": {"format": "parquet", "location": "lake/people", "columns": ["user_id", "email"],
                       "identifiers": ["user_id", "email"], "subject_key": "user_id", "column_types": {"user_id": "bigint"}},
        "mart.contacts": {"format": "parquet", "location": "lake/contacts", "columns": ["cust", "email_address"]},
    }
    (folder / "piitracer.yaml").write_text(yaml.safe_dump({"catalog": catalog}, sort_keys=False))
    return folder


@contextmanager
def serving(ws: Path, token_file: Path | None = None, env: dict[str, str | None] | None = None) -> Iterator[str]:
    """`piitracer serve` for ``ws`` as its own process, as a user runs it; yields its URL. ``env``
    changes its environment (None removes a variable); the session's master key is inherited."""
    port = free_port()
    changed = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    environment = {name: value for name, value in changed.items() if value is not None}
    token = ["--token-file", str(token_file)] if token_file else []
    process = subprocess.Popen([sys.executable, "-m", "piitracer.cli.main", "--workspace", str(ws), "serve",
                                "--port", str(port), *token], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=environment)
    url = f"http://127.0.0.1:{port}"
    try:
        # Up within a minute: CI runs the other integration tests beside it on two cores.
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/healthz", timeout=1).read()
                break
            except OSError:
                if process.poll() is not None:
                    raise AssertionError(process.stderr.read().decode())
                if time.monotonic() > deadline:
                    raise AssertionError(f"piitracer serve did not answer /healthz within 60 s on {url}")
                time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture()
def server(tmp_path: Path):
    ws = workspace(tmp_path / "ws")
    (tmp_path / "token").write_text(TOKEN + "\n")
    with serving(ws, tmp_path / "token") as url:
        yield ws, url


def sync_event() -> RunEvent:
    """What a Spark job would send: crm.people -> mart.contacts, with column lineage."""
    lineage = column_lineage_dataset.ColumnLineageDatasetFacet(fields={
        "cust": column_lineage_dataset.Fields(inputFields=[column_lineage_dataset.InputField(
            namespace="hive", name="crm.people", field="user_id")], transformationType="IDENTITY", transformationDescription=""),
        "email_address": column_lineage_dataset.Fields(inputFields=[column_lineage_dataset.InputField(
            namespace="hive", name="crm.people", field="email")], transformationType="IDENTITY", transformationDescription=""),
    })
    schema = schema_dataset.SchemaDatasetFacet(fields=[schema_dataset.SchemaDatasetFacetFields(name="cust", type="long"),
                                                       schema_dataset.SchemaDatasetFacetFields(name="email_address", type="string")])
    return RunEvent(eventType=RunState.COMPLETE, eventTime=datetime.now(timezone.utc).isoformat(),
                    run=Run(runId=str(uuid.uuid4())), job=Job(namespace="spark-prod", name="crm.sync_contacts"),
                    producer="https://example.com/piitracer-tests",
                    inputs=[InputDataset(namespace="hive", name="crm.people")],
                    outputs=[OutputDataset(namespace="hive", name="mart.contacts",
                                           facets={"columnLineage": lineage, "schema": schema})])


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict]:
    request = urllib.request.Request(f"{url}/api/v1/lineage", data=body, method="POST",
                                     headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_the_openlineage_client_sends_events_that_plan_then_uses(server) -> None:
    ws, url = server
    people = piitracer.load_workspace(ws)
    subject = [Subject(value="7000000001", request_id="r1", received_at="2026-11-20T09:00:00Z")]
    before = plan_deletion(people, piitracer.build_lineage_graph(people), ["crm.people.user_id"], subject)
    assert [d.dataset for d in before.datasets] == ["crm.people"]  # the test can fail: no lineage yet

    client = OpenLineageClient(transport=HttpTransport(HttpConfig(
        url=url, endpoint="api/v1/lineage", auth=ApiKeyTokenProvider({"apiKey": TOKEN}), compression=HttpCompression.GZIP)))
    client.emit(sync_event())

    stored = (ws / ".piitracer" / "lineage" / "events.jsonl").read_text().splitlines()
    assert len(stored) == 1 and json.loads(stored[0])["job"]["name"] == "crm.sync_contacts"
    ws_now = piitracer.load_workspace(ws)
    graph = piitracer.build_lineage_graph(ws_now)
    plan = plan_deletion(ws_now, graph, ["crm.people.user_id"], subject)
    contacts = plan.decision("mart.contacts")
    assert (contacts.status.value, contacts.key_column) == ("erase", "cust")
    assert contacts.column_forms == {"cust": ("crm.people.user_id",), "email_address": ("crm.people.email",)}
    assert graph.problems == []


def test_a_malformed_event_is_400_with_every_defect_and_kept_with_its_reason(server) -> None:
    ws, url = server
    bad = {"eventType": "COMPLETE", "eventTime": "yesterday", "run": {}, "job": {"namespace": "spark-prod"}}
    code, answer = post(url, gzip.compress(json.dumps(bad).encode()),
                        {"Authorization": f"Bearer {TOKEN}", "Content-Encoding": "gzip"})
    assert code == 400
    assert answer["error"] == ("eventTime: expected an ISO 8601 date-time, got 'yesterday'; run.runId: Field required; "
                               "job.name: Field required")
    code, answer = post(url, b'{"eventType": "COMPLETE",', {"Authorization": f"Bearer {TOKEN}"})
    assert code == 400 and answer["error"].startswith("body is not JSON: ")
    # Kept with the reason, the body sealed under the master key (the session's, from the environment).
    rejected = kept_rejected(ws, BodySealer(load_master_key()))
    assert [r.record["reason"] for r in rejected] == [
        "eventTime: expected an ISO 8601 date-time, got 'yesterday'; run.runId: Field required; job.name: Field required",
        answer["error"]]
    assert json.loads(gzip.decompress(rejected[0].body)) == bad and rejected[1].body == b'{"eventType": "COMPLETE",'
    assert b'"spark-prod"' not in b"".join(r.path.read_bytes() for r in rejected)  # not in clear
    assert not (ws / ".piitracer" / "lineage" / "events.jsonl").exists()


def test_without_the_token_nothing_is_stored(server) -> None:
    ws, url = server
    body = json.dumps({"eventType": "COMPLETE", "eventTime": "2026-11-20T09:00:00Z", "run": {"runId": str(uuid.uuid4())},
                       "job": {"namespace": "n", "name": "j"}}).encode()
    assert post(url, body, {})[0] == 401
    assert post(url, body, {"Authorization": "Bearer " + TOKEN[:-1] + "x"})[0] == 401
    assert not (ws / ".piitracer" / "lineage" / "events.jsonl").exists() and kept_rejected(ws) == []
    assert post(url, body, {"Authorization": f"Bearer {TOKEN}"}) == (201, {"stored": "RunEvent"})
    assert len((ws / ".piitracer" / "lineage" / "events.jsonl").read_text().splitlines()) == 1


def test_piitracer_reports_its_own_runs_as_openlineage_jobs(tmp_path: Path, warehouse: Path) -> None:
    """An erasure with an `openlineage:` block: START, then COMPLETE with the datasets it changed,
    received by an OpenLineage consumer (here `piitracer serve` of another workspace); no subject
    value and no request id in what was sent. An unreachable consumer does not stop an erasure."""
    from byte_scan import find_values
    from delta_parquet_lakehouse import SUBJECT_PANS, SUBJECTS, build
    from delta_parquet_lakehouse import workspace as lake_workspace

    from executor_runs import run_plan
    from piitracer.executor.runner import ExecuteOptions

    receiver = workspace(tmp_path / "receiver")
    locations = build(tmp_path / "lake")
    folder = lake_workspace(tmp_path, warehouse, locations)
    config = yaml.safe_load((folder / "piitracer.yaml").read_text())
    with serving(receiver) as url:
        config["openlineage"] = {"transport": {"type": "http", "url": url, "endpoint": "api/v1/lineage"}, "namespace": "lake-ops"}
        (folder / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        ws = piitracer.load_workspace(folder)
        subjects = [Subject(value=str(v), request_id=f"dsr-{i}", received_at="2026-11-20T09:00:00Z") for i, v in enumerate(SUBJECTS)]
        plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), ["crm.people.user_id"], subjects)
        summary = run_plan(ws, plan, ExecuteOptions(no_concurrent_writers=True))
    assert summary.status == "complete"
    events = [json.loads(line) for line in (receiver / ".piitracer" / "lineage" / "events.jsonl").read_text().splitlines()]
    assert [e["eventType"] for e in events] == ["START", "COMPLETE"]
    assert events[0]["run"]["runId"] == events[1]["run"]["runId"]
    assert {(e["job"]["namespace"], e["job"]["name"]) for e in events} == {("lake-ops", f"piitracer.erase.{plan.plan_id[:16]}")}
    assert events[0]["outputs"] == []
    outputs = {(o["namespace"], o["name"], o["facets"]["symlinks"]["identifiers"][0]["name"]) for o in events[1]["outputs"]}
    assert outputs == {("file", str(path), name) for name, path in locations.items()}
    text = (receiver / ".piitracer" / "lineage" / "events.jsonl").read_text()
    assert find_values(receiver / ".piitracer" / "lineage", SUBJECTS + SUBJECT_PANS) == [] and "dsr-" not in text

    # The consumer is gone: the erasure still runs (a warning is logged, nothing fails).
    config["openlineage"]["transport"]["url"] = f"http://127.0.0.1:{free_port()}"
    config["openlineage"]["transport"]["retry"] = {"total": 0}
    (folder / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    ws = piitracer.load_workspace(folder)
    assert run_plan(ws, plan, ExecuteOptions(rerun=True, no_concurrent_writers=True)).status == "complete"


def test_credentials_in_the_openlineage_block_are_refused(tmp_path: Path) -> None:
    folder = workspace(tmp_path / "ws")
    config = yaml.safe_load((folder / "piitracer.yaml").read_text())
    config["openlineage"] = {"transport": {"type": "http", "url": "http://x", "auth": {"type": "api_key", "apiKey": "k"}}}
    (folder / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    with pytest.raises(piitracer.WorkspaceError, match=r"openlineage\.transport: .*auth\.apiKey.*api_key_env"):
        piitracer.load_workspace(folder)
