"""The persistent lineage store (.piitracer/lineage/store.sqlite): what it holds equals a fresh
ingest, only changed units are parsed again, and a plan over the part of the graph a source
reaches is byte-identical to the plan over the whole graph."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

import piitracer
from piitracer.api import plan_deletion, stored_graph_for
from piitracer.cli.main import cli
from piitracer.graph.lineage_graph import LineageGraph
from piitracer.ingest import workspace_ingest
from piitracer.ingest.lineage_store import STORE_FILE, fingerprint, open_store
from piitracer.ingest.openlineage.received import EVENTS_FILE
from piitracer.ingest.workspace_ingest import batch_from_store, ingest_workspace, update_store
from piitracer.model.plan import PlanRequest, Subject
from piitracer.model.workspace import Policy
from piitracer.planner.build import build_plan

from paths import REPO  # noqa: E402

ROOT = REPO
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_planning import Generator  # noqa: E402

SUBJECT = Subject(value="8841302", request_id="dsr-1", received_at=datetime(2026, 11, 20, 9, tzinfo=timezone.utc))


def digest(batch) -> str:
    return hashlib.sha256(batch.model_dump_json().encode()).hexdigest()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The fixture workspace (events + SQL files), plus a second SQL source whose second file
    reads a table the first one creates with SELECT * (its columns are learned, not declared)."""
    root = tmp_path / "ws"
    shutil.copytree(ROOT / "lineage_fixtures", root, ignore=shutil.ignore_patterns(".piitracer"))
    (root / "sql2").mkdir()
    (root / "sql2" / "a.sql").write_text(
        "CREATE TABLE scratch.a AS SELECT user_id, amount FROM prod.payments;\n")
    (root / "sql2" / "b.sql").write_text(
        "CREATE TABLE scratch.b AS SELECT * FROM scratch.a;\n")
    # Read from a catalogued clone: reached only through the catalog's clone_of, not a lineage edge.
    (root / "sql2" / "c.sql").write_text(
        "CREATE TABLE scratch.from_clone AS SELECT cust, amount FROM dev.customer_txn_deep;\n")
    text = (root / "piitracer.yaml").read_text().replace(
        "      default_database: default\n",
        "      default_database: default\n    - path: sql2\n      dialect: spark\n", 1)
    (root / "piitracer.yaml").write_text(text)
    return root


def stored(root: Path):
    ws = piitracer.load_workspace(root)
    store = open_store(root)
    update = update_store(ws, store)
    batch = batch_from_store(store)
    store.close()
    return update, batch, ingest_workspace(ws)


def test_the_store_holds_what_a_fresh_ingest_yields_and_an_unchanged_workspace_parses_nothing(workspace: Path) -> None:
    first, batch, fresh = stored(workspace)
    assert digest(batch) == digest(fresh)
    assert "openlineage" in first.parsed and "sql/1/sql2/b.sql" in first.parsed and not first.unchanged
    # The learned schema reached b.sql: scratch.b has a user_id column edge from scratch.a.
    assert any(e.target_dataset == "scratch.b" and e.target_column == "user_id" for e in batch.column_edges)
    again, batch_again, _ = stored(workspace)
    assert again.parsed == [] and again.dropped == []
    assert sorted(again.unchanged) == sorted(first.parsed)
    assert digest(batch_again) == digest(fresh)


def test_an_unchanged_workspace_plans_without_parsing(workspace: Path, monkeypatch) -> None:
    ws = piitracer.load_workspace(workspace)
    expected = plan_deletion(ws, piitracer.build_lineage_graph(ws), ["prod.payments.user_id"], [SUBJECT]).to_json()

    def no_parsing(*args, **kwargs):
        raise AssertionError("a unit was parsed again")

    for name in ("ingest_sql_file", "ingest_openlineage_paths", "ingest_dbt_artifacts"):
        monkeypatch.setattr(workspace_ingest, name, no_parsing)
    graph = piitracer.lineage_graph_for(ws, ["prod.payments.user_id"])
    assert plan_deletion(ws, graph, ["prod.payments.user_id"], [SUBJECT]).to_json() == expected


def test_a_changed_file_is_parsed_again_alone_unless_what_it_teaches_changed(workspace: Path) -> None:
    stored(workspace)
    late = workspace / "sql" / "10_last_payments.sql"
    late.write_text(late.read_text() + "\n-- reviewed\n")
    update, batch, fresh = stored(workspace)
    assert update.parsed == ["sql/0/sql/10_last_payments.sql"]
    assert digest(batch) == digest(fresh)
    # a.sql now creates scratch.a with another column: b.sql (SELECT * FROM scratch.a) must be re-read,
    # and so is every later file of that source (what they were taught changed).
    (workspace / "sql2" / "a.sql").write_text(
        "CREATE TABLE scratch.a AS SELECT user_id, amount, merchant_id FROM prod.payments;\n")
    update, batch, fresh = stored(workspace)
    assert update.parsed == ["sql/1/sql2/a.sql", "sql/1/sql2/b.sql", "sql/1/sql2/c.sql"]
    assert digest(batch) == digest(fresh)
    assert any(e.target_dataset == "scratch.b" and e.target_column == "merchant_id" for e in batch.column_edges)


def test_a_deleted_file_is_dropped_with_its_edges(workspace: Path) -> None:
    stored(workspace)
    (workspace / "sql2" / "b.sql").unlink()
    update, batch, fresh = stored(workspace)
    assert update.dropped == ["sql/1/sql2/b.sql"] and update.parsed == ["sql/1/sql2/c.sql"]  # b taught c
    assert digest(batch) == digest(fresh)
    assert not any(e.target_dataset == "scratch.b" for e in batch.column_edges)
    # ... and scratch.b is no longer reachable through the stored edges.
    store = open_store(workspace)
    assert "scratch.b" not in store.downstream({"prod.payments"})
    assert "scratch.a" in store.downstream({"prod.payments"})
    store.close()


def test_a_received_event_re_reads_the_events_and_nothing_else(workspace: Path) -> None:
    stored(workspace)
    event = json.loads((workspace / "events" / "finance_settlements.json").read_text())
    event = event[0] if isinstance(event, list) else event
    event["job"]["name"] = "received.copy"
    event["outputs"][0]["name"] = event["outputs"][0]["name"] + "_copy"
    for dataset in event["inputs"] + event["outputs"]:  # no schema the SQL files could depend on
        dataset.get("facets", {}).pop("schema", None)
    received = workspace / EVENTS_FILE
    received.parent.mkdir(parents=True, exist_ok=True)
    received.write_text(json.dumps(event) + "\n")
    update, batch, fresh = stored(workspace)
    assert update.parsed == ["openlineage"]
    assert digest(batch) == digest(fresh)


def test_a_missing_source_path_is_a_stored_problem_that_goes_when_the_path_comes(workspace: Path) -> None:
    shutil.move(workspace / "sql2", workspace / "elsewhere")
    update, batch, fresh = stored(workspace)
    assert [p.reason for p in batch.problems if "does not exist" in p.reason] == ["lineage.sql.1.path: 'sql2' does not exist"]
    assert digest(batch) == digest(fresh)
    shutil.move(workspace / "elsewhere", workspace / "sql2")
    update, batch, fresh = stored(workspace)
    assert update.dropped == ["missing/lineage.sql.1.path"]
    assert not [p for p in batch.problems if "does not exist" in p.reason]


def test_a_corrupt_or_foreign_version_store_is_rebuilt(workspace: Path) -> None:
    _, before, _ = stored(workspace)
    path = workspace / STORE_FILE
    path.write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    update, batch, _ = stored(workspace)
    assert "openlineage" in update.parsed and digest(batch) == digest(before)
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    update, batch, _ = stored(workspace)
    assert "openlineage" in update.parsed and digest(batch) == digest(before)


def test_lineage_rebuild_reads_every_unit_again(workspace: Path) -> None:
    stored(workspace)
    result = CliRunner().invoke(cli, ["-w", str(workspace), "lineage", "rebuild"])
    assert result.exit_code == 0, result.output
    units = 1 + len(list((workspace / "sql").glob("*.sql"))) + 3
    assert result.output.strip().splitlines()[-1] == f"lineage store rebuilt: {units} units read"


def test_plan_through_the_stored_part_equals_the_plan_through_the_whole_graph(workspace: Path) -> None:
    ws = piitracer.load_workspace(workspace)
    whole = LineageGraph.build(ingest_workspace(ws), ws.config.catalog)
    part = piitracer.lineage_graph_for(ws, ["prod.payments.user_id"])
    assert len(part.datasets()) == len(whole.datasets())  # prod.payments reaches all of this small fixture
    phone = Subject(value="+919800000001", request_id="r", received_at=SUBJECT.received_at)
    for source, subject in (("prod.payments.user_id", SUBJECT), ("prod.payments.phone", phone)):
        full = plan_deletion(ws, whole, [source], [subject])
        partial = plan_deletion(ws, piitracer.lineage_graph_for(ws, [source]), [source], [subject])
        assert partial.to_json() == full.to_json()
        assert "scratch.from_clone" in {d.dataset for d in full.datasets}


@pytest.mark.parametrize("domain", [0, 1, 2])
def test_plan_through_the_stored_part_of_a_synthetic_lakehouse_equals_the_whole(tmp_path: Path, domain: int) -> None:
    """3,000 synthetic datasets (clones, archives, cross-domain parents, job flows): the plan from
    each domain's payments table over the stored part is byte-identical to the whole graph's."""
    batch, catalog = Generator(3000).run()
    store = open_store(tmp_path)
    store.put("synthetic", 0, fingerprint("synthetic"), batch)
    source = f"d{domain:03d}_src.payments"
    part = stored_graph_for(store, catalog, {source})
    store.close()
    whole = LineageGraph.build(batch, catalog)
    assert len(part.datasets()) < len(whole.datasets()) / 2  # the reached part only
    assert len(part.column_edges()) < len(whole.column_edges()) / 2
    request = PlanRequest(sources=(piitracer.ColumnRef(dataset=source, column="user_id"),), subjects=(
        Subject(value="100001", request_id="r", received_at=SUBJECT.received_at),))
    key_type = {f"{source}.user_id": "bigint"}
    full = build_plan(whole, catalog, Policy(), request, {}, key_type)
    assert len(full.steps) > 10
    assert build_plan(part, catalog, Policy(), request, {}, key_type).to_json() == full.to_json()


def test_a_job_writing_into_a_clone_whose_source_is_not_reached_plans_as_the_whole_graph(workspace: Path) -> None:
    """The clone's columns come from its (unreached) source: the part must not drop them."""
    (workspace / "sql2" / "d.sql").write_text(
        "INSERT INTO dev.customer_txn_deep (cust) SELECT phone FROM support.phone_directory;\n")
    ws = piitracer.load_workspace(workspace)
    source = "support.phone_directory.phone"
    subject = [Subject(value="+919800000001", request_id="r", received_at=SUBJECT.received_at)]
    kwargs = dict(table_states={}, live_types={source: "string"})
    whole = LineageGraph.build(ingest_workspace(ws), ws.config.catalog)
    full = plan_deletion(ws, whole, [source], subject, **kwargs)
    assert "dev.customer_txn_deep" in {d.dataset for d in full.datasets}
    assert "analytics.customer_txn" not in {d.dataset for d in full.datasets}
    part = piitracer.lineage_graph_for(ws, [source])
    assert part.dataset("dev.customer_txn_deep").columns == whole.dataset("dev.customer_txn_deep").columns
    assert plan_deletion(ws, part, [source], subject, **kwargs).to_json() == full.to_json()
