"""``piitracer demo``'s lakehouse, built small (3,000 payments) on the test session's Spark.

The suite runs one Spark session per process, bound to one Iceberg warehouse (conftest
``warehouse``); the demo workspace is copied with its warehouse moved onto that one
(``prepare_workspace(warehouse=...)``), so the demo's tables live under the fixture's namespaces
(prod, analytics, risk, ml, dev) of the shared warehouse. Other tests use numbered namespaces
(``new_namespace``), never these. In-process rather than a subprocess: no second JVM on 2 cores."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from spark_lakehouse import spark_for

import piitracer
from piitracer.api import plan_deletion, run_demo
from piitracer.demo import SUBJECT_USER_ID, build_lakehouse
from piitracer.demo.workspace_files import prepare_workspace
from piitracer.model.plan import DatasetStatus, Subject
from piitracer.model.workspace import DatasetFormat
from paths import REPO

DEMO_NAMESPACES = ("prod", "analytics", "risk", "ml", "dev")
ROWS = 3000


@pytest.fixture(scope="module")
def demo(tmp_path_factory, warehouse: Path):
    """(workspace, build) of a fresh small demo lakehouse."""
    taken = [ns for ns in DEMO_NAMESPACES if (warehouse / ns).exists()]
    assert taken == [], f"another test wrote the demo's namespaces {taken} in the shared warehouse"
    spark_for(warehouse)  # the suite's session: the demo must reuse it, not start another
    folder = prepare_workspace(tmp_path_factory.mktemp("demo") / "demo", warehouse=warehouse)
    workspace = piitracer.load_workspace(folder)
    built = build_lakehouse(workspace, rows=ROWS)
    keep_for_a_return(workspace, spark_for(warehouse), tmp_path_factory.mktemp("before-the-erasure"))
    return workspace, built


# What a backfill and a restore bring back after the erasure (issue 52): the person's rows as they
# were before it, and copies of the plain-Parquet and archive folders.
BEFORE: dict[str, object] = {}


def keep_for_a_return(workspace, spark, folder: Path) -> None:
    BEFORE["payments"] = spark.table("lake.prod.payments").where(f"user_id = {SUBJECT_USER_ID}").collect()
    txn = DeltaTable(str(workspace.location_of("analytics.customer_txn"))).to_pyarrow_table()
    BEFORE["customer_txn"] = txn.filter(pc.equal(txn["cust"], SUBJECT_USER_ID))
    phones = DeltaTable(str(workspace.location_of("support.phone_directory"))).to_pyarrow_table()
    BEFORE["phone_directory"] = phones.filter(pc.is_in(phones["phone"], pa.array({r["phone"] for r in BEFORE["payments"]})))
    for dataset in ("risk.card_usage", "archive.payments_weekly"):
        shutil.copytree(workspace.location_of(dataset), folder / dataset)
        BEFORE[dataset] = folder / dataset


def read(workspace, dataset: str, spark):
    """A dataset's current rows as Arrow: Iceberg via Spark, Delta via delta-rs, Parquet via pyarrow."""
    entry, location = workspace.config.catalog[dataset], workspace.location_of(dataset)
    if entry.format is DatasetFormat.ICEBERG:
        return pa.Table.from_pandas(spark.table(entry.table).toPandas(), preserve_index=False)
    if entry.format is DatasetFormat.DELTA:
        return DeltaTable(str(location)).to_pyarrow_table()
    return pq.ParquetDataset(sorted(str(p) for p in location.rglob("*.parquet"))).read()


def test_every_located_dataset_exists_in_its_format_with_rows(demo, warehouse: Path) -> None:
    workspace, build = demo
    spark = spark_for(warehouse)
    assert not build.reused and build.rows == ROWS
    for dataset, entry in workspace.config.catalog.items():
        location = workspace.location_of(dataset)
        if location is None:
            continue
        assert location.is_dir(), dataset
        is_delta = (location / "_delta_log").is_dir()
        if entry.format is DatasetFormat.ICEBERG:
            assert (location / "metadata").is_dir() and not is_delta, dataset
            assert location == warehouse / Path(*entry.table.split(".")[1:]), dataset
        elif entry.format is DatasetFormat.DELTA:
            assert is_delta, dataset
        else:  # plain Parquet folders and the archive: files only, no table log
            assert not is_delta and not (location / "metadata").exists(), dataset
            assert list(location.rglob("*.parquet")), dataset
        assert read(workspace, dataset, spark).num_rows > 0, f"{dataset} is empty"
    exports = sorted(p.name for p in workspace.location_of("archive.payments_weekly").iterdir())
    assert len(exports) == 3 and exports == sorted(exports), exports  # one folder per weekly export date


def test_the_subject_has_rows_in_every_dataset_the_plan_erases(demo, warehouse: Path) -> None:
    workspace, _ = demo
    spark = spark_for(warehouse)
    graph = piitracer.build_lineage_graph(workspace)
    subject = Subject(value=str(SUBJECT_USER_ID), request_id="t", received_at="2026-11-20T09:00:00Z")
    plan = plan_deletion(workspace, graph, ["prod.payments.user_id"], [subject])
    payments = read(workspace, "prod.payments", spark)
    own = payments.filter(pc.equal(payments["user_id"], SUBJECT_USER_ID)).to_pylist()
    assert own, "the subject has no payments"
    # Every form a key column may hold the subject in: the id, the PAN, the phone and the hashes the
    # pipelines compute (sha2 of the id, sha2 of the normalised phone).
    forms = {str(SUBJECT_USER_ID), hashlib.sha256(str(SUBJECT_USER_ID).encode()).hexdigest()}
    for row in own:
        forms |= {row["pan"], row["phone"], hashlib.sha256(row["phone"].strip().lower().encode()).hexdigest()}
    erased = [d for d in plan.datasets if d.status is DatasetStatus.ERASE]
    assert len(erased) >= 14
    for decision in erased:
        data = read(workspace, decision.dataset, spark)
        keys = {str(v) for v in data[decision.key_column].to_pylist()}
        assert keys & forms, f"{decision.dataset}.{decision.key_column} holds no value of the subject"


def test_the_shallow_clone_lists_the_sources_own_data_files(demo, warehouse: Path) -> None:
    workspace, _ = demo
    spark = spark_for(warehouse)
    # add_files records 'file:' URIs where Spark's own writes record bare paths: compare the paths.
    files = {name: {r[0].removeprefix("file:") for r in spark.sql(f"SELECT file_path FROM {workspace.config.catalog[name].table}.files").collect()}
             for name in ("prod.payments", "dev.payments_shallow", "dev.payments_deep")}
    source_folder = str(workspace.location_of("prod.payments"))
    assert files["dev.payments_shallow"] == files["prod.payments"]
    assert all(source_folder in path for path in files["dev.payments_shallow"])
    assert not files["dev.payments_deep"] & files["prod.payments"]  # the deep clone has its own
    assert not list(workspace.location_of("dev.payments_shallow").rglob("*.parquet"))


def test_one_iceberg_table_is_format_v3_and_its_deletes_write_deletion_vectors(demo, warehouse: Path) -> None:
    from piitracer.api import discover_catalog

    workspace, _ = demo
    versions = {t.table: t.format_version for t in discover_catalog(workspace).tables if t.table}
    assert versions["lake.analytics.user_monthly_spend"] == 3 and versions["lake.prod.payments"] == 2


def test_the_tables_have_older_snapshots_and_versions(demo, warehouse: Path) -> None:
    workspace, _ = demo
    spark = spark_for(warehouse)
    for name in ("prod.payments", "prod.payments_enriched", "risk.contact_points", "ml.payment_features"):
        snapshots = spark.sql(f"SELECT count(*) FROM {workspace.config.catalog[name].table}.snapshots").first()[0]
        assert 2 <= snapshots <= 4, (name, snapshots)  # two loads; the enrichment also MERGEs per load
    for name in ("analytics.customer_txn", "analytics.last_payments", "support.phone_directory"):
        assert DeltaTable(str(workspace.location_of(name))).version() == 1, name  # two commits


def test_a_second_build_reuses_the_lakehouse(demo, warehouse: Path) -> None:
    workspace, first = demo
    metadata = sorted((workspace.location_of("prod.payments") / "metadata").iterdir())
    again = build_lakehouse(piitracer.load_workspace(workspace.root), rows=ROWS)
    assert again.reused and again.built_at == first.built_at and again.seconds < 2
    assert sorted((workspace.location_of("prod.payments") / "metadata").iterdir()) == metadata


def test_discovery_reproduces_the_fixture_catalog_field_by_field(demo, warehouse: Path) -> None:
    """`catalog discover` on the built demo lakehouse says what the hand-written catalog says, where
    both say something: format (an archive is Parquet to the lakehouse), location, columns, Spark
    identifier, Iceberg write mode, every retention the tables' own properties carry; and it finds
    the shallow clone. Its drift report for the demo's datasets is empty."""
    from piitracer.api import catalog_drift, dataset_locations, discover_catalog
    from piitracer.discover.drift import RETENTION_FIELDS
    from piitracer.storage.guard import canonical

    workspace, _ = demo
    found = discover_catalog(workspace).tables
    tables = {canonical(t.location).uri: t for t in found}
    located = dataset_locations(workspace)
    compared = 0
    for dataset, entry in workspace.config.catalog.items():
        if dataset not in located or not entry.format.stores_rows:
            continue
        table = tables.get(canonical(located[dataset]).uri)
        assert table is not None, f"{dataset}: not discovered at {located[dataset]}"
        assert table.format is (DatasetFormat.PARQUET if entry.format is DatasetFormat.ARCHIVE else entry.format), dataset
        assert table.problems == (), (dataset, table.problems)
        assert table.columns == (entry.columns or table.columns), dataset  # where the catalog lists them
        if entry.format is DatasetFormat.ICEBERG:
            assert (table.table, table.write_mode) == (entry.table, entry.write_mode), dataset
        written = {name: getattr(entry.retention, name) for name in RETENTION_FIELDS if getattr(entry.retention, name) is not None}
        assert table.retention == written, dataset
        compared += 1
    assert compared == 20  # every dataset with files: 11 Iceberg, 5 Delta (a replica too), 3 Parquet, 1 archive
    shallow, deep = (tables[canonical(located[d]).uri] for d in ("dev.payments_shallow", "dev.payments_deep"))
    assert canonical(shallow.shallow_clone_of) == canonical(located["prod.payments"]) and deep.shallow_clone_of is None
    drift = [d for d in catalog_drift(workspace, found) if d.dataset in workspace.config.catalog]
    assert drift == [], drift


def check_workspace(workspace, folder: Path, warehouse: Path) -> Path:
    """The demo's catalog and lineage as a workspace of its own whose discovery roots are only the
    demo's folders (the session's shared warehouse holds other tests' tables)."""
    import yaml

    from piitracer.api import dataset_locations

    config = yaml.safe_load((workspace.root / "piitracer.yaml").read_text())
    discovered = yaml.safe_load((workspace.root / "catalog.discovered.yaml").read_text())
    located = dataset_locations(workspace)
    for document in (config, discovered):
        for dataset, entry in document["catalog"].items():
            if "location" in entry and dataset in located:
                entry["location"] = str(located[dataset])
            for replica in entry.get("replicas", []):
                replica["location"] = str(workspace.root / replica["location"])
    lineage = config["lineage"]
    for kind in ("openlineage", "sql"):
        for source in lineage.get(kind, []):
            source["path"] = str(workspace.root / source["path"])
    lineage["location_roots"] = {remote: str(workspace.root / local) for remote, local in lineage.get("location_roots", {}).items()}
    config["spark"]["warehouse"] = str(warehouse)
    config["warehouse_roots"] = [str(workspace.root), *(str(warehouse / ns) for ns in DEMO_NAMESPACES)]
    folder.mkdir()
    (folder / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (folder / "catalog.discovered.yaml").write_text(yaml.safe_dump(discovered, sort_keys=False))
    return folder


def test_discover_write_on_the_built_demo_writes_the_fixtures_discovered_catalog(demo, warehouse: Path,
                                                                                tmp_path: Path) -> None:
    """lineage_fixtures/catalog.discovered.yaml is what `catalog discover --write` writes for the
    demo lakehouse: every entry and field, locations compared below the workspace or warehouse."""
    import yaml

    from piitracer.api import write_discovered_catalog

    workspace, _ = demo
    folder = check_workspace(workspace, tmp_path / "ws", warehouse)
    (folder / "catalog.discovered.yaml").unlink()  # written from the lakehouse alone
    _, written = write_discovered_catalog(piitracer.load_workspace(folder))

    def below(location: str) -> str:
        for root, name in ((workspace.root, ""), (warehouse, "warehouse/")):
            if location.startswith(f"{root}/"):
                return name + location[len(str(root)) + 1:]
        return location

    entries = {d: {**e, "location": below(e["location"])} if "location" in e else e for d, e in written.entries.items()}
    fixture = REPO / "lineage_fixtures" / "catalog.discovered.yaml"
    assert entries == yaml.safe_load(fixture.read_text())["catalog"]
    assert sorted(written.skipped) == ["analytics.customer_txn@dr", "archive.payments_weekly"]


def test_catalog_check_names_the_table_and_field_after_a_retention_property_changes(demo, warehouse: Path,
                                                                                   tmp_path: Path) -> None:
    from click.testing import CliRunner

    from piitracer.cli.main import cli

    workspace, _ = demo
    spark = spark_for(warehouse)
    base = ["--workspace", str(check_workspace(workspace, tmp_path / "ws", warehouse)), "catalog", "check"]
    agreed = CliRunner().invoke(cli, base)
    assert agreed.exit_code == 0, agreed.output
    assert "0 difference(s) of drift" in agreed.output or "agrees" in agreed.output

    spark.sql("ALTER TABLE lake.prod.payments SET TBLPROPERTIES ('history.expire.max-snapshot-age-ms'='86400000')")
    try:
        drifted = CliRunner().invoke(cli, base)
    finally:
        spark.sql("ALTER TABLE lake.prod.payments SET TBLPROPERTIES ('history.expire.max-snapshot-age-ms'='432000000')")
    assert drifted.exit_code == 1, drifted.output
    rows = [[c.strip() for c in line.strip("│").split("│")] for line in drifted.output.splitlines() if line.startswith("│")]
    assert [row for row in rows if row[-1] == "drift"] == [
        ["prod.payments", "retention.snapshot_max_age", "5d", "1d", "drift"]], drifted.output


def test_classify_finds_the_identifiers_and_every_derived_key_column_and_nothing_numeric(demo, warehouse: Path,
                                                                                       tmp_path: Path) -> None:
    """`catalog classify` on the built demo: the source's four identifiers, the key column of every
    dataset the plan erases (renamed, hashed, copied: found through lineage), and no identifier
    verdict on amounts, merchant ids, dates or the aggregates' numbers."""
    from piitracer.api import classify_catalog

    workspace, _ = demo
    result = classify_catalog(piitracer.load_workspace(check_workspace(workspace, tmp_path / "ws", warehouse)), sample=50)
    assert result.problems == {} and result.without_lineage == []
    kinds = {(v.dataset, v.column): v.kind for v in result.verdicts}
    assert [kinds[("prod.payments", c)] for c in ("user_id", "pan", "phone", "aadhaar_ref")] == \
        ["user_id", "pan", "phone", "aadhaar"]
    graph = piitracer.build_lineage_graph(workspace)
    subject = Subject(value=str(SUBJECT_USER_ID), request_id="t", received_at="2026-11-20T09:00:00Z")
    plan = plan_deletion(workspace, graph, ["prod.payments.user_id"], [subject])
    keys = {(d.dataset, d.key_column) for d in plan.datasets if d.status is DatasetStatus.ERASE}
    assert len(keys) >= 14 and {key: kinds.get(key) for key in keys if not kinds.get(key)} == {}
    numbers = [("prod.payments", c) for c in ("amount", "merchant_id", "dt")]
    numbers += [("analytics.daily_revenue", c) for c in ("dt", "revenue", "active_users")]
    numbers += [("analytics.user_monthly_spend", c) for c in ("month", "spend", "txn_count")]
    numbers += [("risk.card_usage", c) for c in ("txn_count", "total_amount")]
    numbers += [("analytics.repeat_merchants", c) for c in ("merchant_id", "repeat_txns", "repeat_amount")]
    numbers += [("analytics.user_hashes", "total_amount"), ("finance.settlements", "settled_amount")]
    assert {key: kinds[key] for key in numbers if kinds[key]} == {}


PERSON_STEPS = {"ml.payment_features": "manual_review", "stream.payments_cdc": "manual", "analytics.daily_revenue": "recompute"}


CAPTURED: dict[str, list] = {}  # value set -> values of user 8841302, as the first demo run resolved them


def demo_keys(root: Path) -> dict[str, str]:
    """The demo's own audit, master and signing keys, as a user would export them."""
    from piitracer.api import demo_audit_key, demo_master_key, demo_signing_key

    return {"PIITRACER_AUDIT_KEY_FILE": str(demo_audit_key(root)), "PIITRACER_MASTER_KEY_FILE": str(demo_master_key(root)),
            "PIITRACER_SIGNING_KEY_FILE": str(demo_signing_key(root)[0]), "PIITRACER_AUDIT_KEY": "",
            "PIITRACER_MASTER_KEY": "", "PIITRACER_TOKEN": ""}


def resolved_forms(workspace, plan) -> dict[str, list]:
    """The journal's resolved value sets of ``plan`` (identifiers and computed forms), opened with
    the demo's master key."""
    from piitracer.api import demo_master_key, execution_context, plan_requests, request_store
    from piitracer.crypto.envelope import load_master_key
    from piitracer.executor.journal import Journal

    with request_store(workspace, load_master_key(demo_master_key(workspace.root))) as store:
        journal = Journal(execution_context(workspace).journal_path)
        try:
            return journal.load_values(plan.plan_id, store.cipher(plan_requests(plan)))
        finally:
            journal.close()


def test_run_demo_erases_the_subject_end_to_end(demo, warehouse: Path) -> None:
    from click.testing import CliRunner

    from piitracer.cli.main import cli

    workspace, _ = demo
    spark = spark_for(warehouse)
    payments_before = spark.table("lake.prod.payments").count()
    tag_query = "SELECT * FROM lake.prod.payments VERSION AS OF 'month_end_close'"
    tagged_before = spark.sql(f"SELECT snapshot_id FROM lake.prod.payments.refs WHERE name = 'month_end_close'").collect()[0][0]
    tag_rows = spark.sql(tag_query)
    tag_keep = (tag_rows.where(f"user_id != {SUBJECT_USER_ID}").count(), tag_rows.where(f"user_id = {SUBJECT_USER_ID}").count())
    assert tag_keep[1] > 0  # the finance close's tag holds the person before the run
    result = run_demo(workspace.root, warehouse=warehouse, attest=False)
    assert result.build.reused and result.subjects == 1 and result.subject_rows > 0
    assert result.plan_path.stat().st_mode & 0o777 == 0o600 and result.plan.seal is not None
    assert result.totals()["rows_deleted"] >= result.subject_rows
    # The source lost exactly the subject's rows.
    assert spark.table("lake.prod.payments").count() == payments_before - result.subject_rows
    assert spark.table("lake.prod.payments").where(f"user_id = {SUBJECT_USER_ID}").count() == 0
    # Every step piitracer performs committed; the person steps are open, so the run is incomplete...
    assert result.run.status == "incomplete"
    assert {r.step.dataset: r.step.action.value for r in result.run.awaiting()} == PERSON_STEPS
    assert {r.state for r in result.run.results if r.step.action.value not in PERSON_STEPS.values()} <= {"committed"}
    # ...and so is the proof: every dataset erased or needing no action but those three.
    report = result.verification
    assert {d.dataset: d.state.value for d in report.open_items()} == dict.fromkeys(PERSON_STEPS, "awaiting_attestation"), \
        [(d.dataset, d.state.value, d.findings[:2]) for d in report.open_items()]

    # The format v3 table's DELETE wrote deletion vectors, and the rewrite applied them.
    (v3_rewrite,) = [r for r in result.run.results if r.step.dataset == "analytics.user_monthly_spend"
                     and r.step.action.value == "rewrite_data_files"]
    assert v3_rewrite.state == "committed" and v3_rewrite.outcome.details["removed_delete_files_count"] >= 1
    # The month_end_close tag survives without the person (no --drop-refs): rewritten, not dropped.
    (moved,) = [r for r in result.run.results if r.step.action.value == "rewrite_ref"]
    assert (moved.step.params.ref, moved.state) == ("month_end_close", "committed")
    tagged_after = spark.sql(f"SELECT snapshot_id FROM lake.prod.payments.refs WHERE name = 'month_end_close'").collect()[0][0]
    assert tagged_after != tagged_before and moved.outcome.details["ref_snapshot_after"] == str(tagged_after)
    tag_rows = spark.sql(tag_query)
    assert (tag_rows.where(f"user_id != {SUBJECT_USER_ID}").count(), tag_rows.where(f"user_id = {SUBJECT_USER_ID}").count()) == \
        (tag_keep[0], 0)
    # Every form of the person the plan resolved (kept for the last test, which looks for them all).
    CAPTURED.update(resolved_forms(workspace, result.plan))
    assert len(CAPTURED) >= 4 and CAPTURED["prod.payments.user_id"] == [SUBJECT_USER_ID]

    # What a person sees next: verify exits 1 while the steps are open; attest them; verify exits 0.
    runner = CliRunner(env=demo_keys(workspace.root))
    base = ["--workspace", str(workspace.root)]
    assert runner.invoke(cli, [*base, "verify", str(result.plan_path)]).exit_code == 1
    from piitracer.requests.board import owner_name

    tokens: dict[str, Path] = {}
    for step in result.run.awaiting():  # each step's owner, with their own credential (made with the demo's keys)
        owner = owner_name(step.step.owner) or "streaming-team"
        if owner not in tokens:
            made = runner.invoke(cli, [*base, "owners", "add", owner])
            assert made.exit_code == 0, made.output
            tokens[owner] = workspace.root / f"{owner}.token"
            tokens[owner].write_text(made.stdout.strip())
        typed = runner.invoke(cli, [*base, "attest", str(result.plan_path), "--step", step.step.id, "--by", owner,
                                    "--evidence", "confirmed in the test"])
        assert typed.exit_code == 2 and "a name proves nothing" in typed.output  # the owner's name alone: refused
        done = runner.invoke(cli, [*base, "attest", str(result.plan_path), "--step", step.step.id, "--token-file",
                                   str(tokens[owner]), "--evidence", "confirmed in the test"])
        assert done.exit_code == 0, done.output
    final = runner.invoke(cli, [*base, "verify", str(result.plan_path)])
    assert final.exit_code == 0, final.output
    assert runner.invoke(cli, [*base, "audit", "verify"]).exit_code == 0
    assert result.audit_intact is True
    page = result.report_path.read_text(encoding="utf-8")
    assert "<svg" in page and str(SUBJECT_USER_ID) not in page
    refs_table = page.split('<h2 id="refs">Tags and branches</h2>', 1)[1].split("</table>", 1)[0]
    assert all(f"<td>{cell}</td>" in refs_table for cell in ("prod.payments", "month_end_close", "tag", "rewrite_ref",
                                                              "committed", str(tagged_before), str(tagged_after))), refs_table
    # The plan's diagram shows every dataset it reaches, the PAN- and phone-only tables included.
    svg = result.diagram_path.read_text()
    for dataset in ("risk.card_usage", "support.phone_directory", "risk.contact_points"):
        assert f">{dataset}<" in svg or dataset in svg


def test_the_demo_attests_its_simulated_owners_and_ends_complete(demo, warehouse: Path) -> None:
    workspace, _ = demo
    result = run_demo(workspace.root, warehouse=warehouse)  # the subject is already erased: a re-run
    assert result.subject_rows == 0
    assert result.first_verification is not None and not result.first_verification.complete
    assert {(e.body["dataset"], e.body["action"]) for e in result.attestations} == set(PERSON_STEPS.items())
    # Each simulated owner attests with a credential the demo makes with its keys, and says it is simulated.
    assert all("SIMULATED" in e.body["statement"] and e.body["attester"]["statement"]["by"] == e.body["attested_by"]
               for e in result.attestations)
    assert result.verification.complete, [(d.dataset, d.state.value) for d in result.verification.open_items()]
    assert {d.state.value for d in result.verification.datasets} <= {"erased", "attested", "no_action"}
    # the certificate states the attestations and checks with the demo's public key
    from click.testing import CliRunner

    from piitracer.cli.main import cli

    certificate = json.loads(result.certificate_path.read_text(encoding="utf-8"))["certificate"]
    assert sorted(a["step_id"] for a in certificate["attestations"]) == sorted(e.body["step_id"] for e in result.attestations)
    assert {d["dataset"]: d["state"] for d in certificate["datasets"]} == {
        d.dataset: d.state.value for d in result.verification.datasets}
    checked = CliRunner().invoke(cli, ["audit", "check-certificate", str(result.certificate_path),
                                       "--public-key", str(result.public_key_path)])
    assert checked.exit_code == 0, checked.output



def sqlite_cells(path: Path, values: list) -> list[str]:
    """Every cell of every table of a SQLite file equal to a value, or a text holding one (typed:
    the integer id matches integers and its decimal text inside a text cell)."""
    import sqlite3

    texts = [v for v in values if isinstance(v, str) and len(v) >= 4] + [str(v) for v in values if isinstance(v, int)]
    found = []
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            for row in db.execute(f'SELECT * FROM "{table}"'):
                for cell in row:
                    if (isinstance(cell, int) and cell in values) or (
                            isinstance(cell, str) and any(text in cell for text in texts)):
                        found.append(f"{path.name}: table {table}")
    return found


def test_after_the_demo_nothing_of_the_person_is_left_anywhere(demo, warehouse: Path) -> None:
    """Issue 21: after the demo (and closing the request the first test left watching), an
    independent decode of every file under the demo folder and every demo table location — data,
    metadata, the journal, the request store and the audit log (cells and raw pages), the plan
    files, the report, the certificate — finds no form of user 8841302."""
    from click.testing import CliRunner

    from byte_scan import find_values
    from piitracer.cli.main import cli

    workspace, _ = demo
    assert CAPTURED, "the first demo test captures the person's resolved forms"
    runner = CliRunner(env=demo_keys(workspace.root))
    base = ["--workspace", str(workspace.root)]
    board = runner.invoke(cli, [*base, "requests", "--output", "json"])
    assert board.exit_code == 0, board.output
    for request in json.loads(board.stdout):
        if request["state"] != "closed":
            assert request["state"] == "watching", request
            closed = runner.invoke(cli, [*base, "requests", "close", request["request_id"], "--now", "test: end of the demo"])
            assert closed.exit_code == 0, closed.output
    board = json.loads(runner.invoke(cli, [*base, "requests", "--output", "json"]).stdout)
    assert [r["state"] for r in board] == ["closed", "closed"]
    assert runner.invoke(cli, [*base, "audit", "verify"]).exit_code == 0

    values = sorted({v for forms in CAPTURED.values() for v in forms}, key=repr)
    # The detector detects: every value in clear in a JSON file, and in a SQLite table.
    import sqlite3

    control = workspace.root.parent / "control"
    control.mkdir(exist_ok=True)
    (control / "plan.json").write_text(json.dumps({"subjects": [{"value": v} for v in values]}, default=str))
    assert len(find_values(control, values)) == len(values)
    with sqlite3.connect(control / "kept.sqlite") as db:
        db.execute("CREATE TABLE t (v)")
        db.executemany("INSERT INTO t VALUES (?)", [(v,) for v in values])
    assert len(sqlite_cells(control / "kept.sqlite", values)) == len(values)
    locations = {workspace.location_of(d) for d in workspace.config.catalog} - {None}
    folders = [workspace.root] + sorted(p for p in locations if p.exists() and not p.is_relative_to(workspace.root))
    found = []
    for folder in folders:
        found += [f"{folder.name}/{hit}" for hit in find_values(folder, values)]
    texts = [v.encode() for v in values if isinstance(v, str) and len(v) >= 4] + [str(v).encode() for v in values
                                                                                   if isinstance(v, int)]
    for path in sorted(p for p in workspace.root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if data.startswith(b"SQLite format 3"):
            found += sqlite_cells(path, values)
            found += [f"{path.name}: raw page bytes" for text in texts if text in data]
    assert found == []


RETURNED_INTO = ("prod.payments", "analytics.customer_txn", "support.phone_directory", "risk.card_usage",
                 "archive.payments_weekly")


def row_texts(table: pa.Table) -> list[str]:
    return [json.dumps(r, sort_keys=True, default=str) for r in table.to_pylist()]


def checksum(rows: list[str]) -> tuple[int, str]:
    """(rows, an order-independent checksum of them)."""
    return len(rows), hashlib.sha256("\n".join(sorted(rows)).encode()).hexdigest()


def lake_rows(workspace, spark) -> dict[str, list[str]]:
    """The rows of the tables a return is written into."""
    return {dataset: row_texts(read(workspace, dataset, spark)) for dataset in RETURNED_INTO}


def holds(row: str, forms: list) -> bool:
    values = json.loads(row).values()
    return any(v in forms or str(v) in {str(f) for f in forms} for v in values)


def test_erased_people_stay_erased_a_backfill_a_copy_and_a_restore_are_found_and_erased_again(demo, warehouse: Path) -> None:
    """Issue 52's acceptance on the demo: with 8841302 erased and the request closed, a backfill of
    their rows into Iceberg and Delta, their Parquet file copied back and an archive object restored
    are each found by ``guard scan`` (exit 1); a neighbouring id and a phone with the same last four
    digits are not; a second scan reads nothing; the new request's plan, execute and verify erase
    the person again, every other row kept, and nothing of them is left but the keyed records."""
    from click.testing import CliRunner
    from deltalake import write_deltalake

    from byte_scan import find_values
    from piitracer.api import open as open_session
    from piitracer.api.demo import attest_as_simulated_owners, demo_keys as keys_of_demo
    from piitracer.cli.main import cli
    from piitracer.executor.runner import ExecuteOptions

    workspace, _ = demo
    spark = spark_for(warehouse)
    runner = CliRunner(env=demo_keys(workspace.root))
    base = ["--workspace", str(workspace.root)]
    board = json.loads(runner.invoke(cli, [*base, "requests", "--output", "json"]).stdout)
    assert {r["state"] for r in board} == {"closed"}  # the demo's request is closed: only the keyed records are left
    # The records hold no form of the person in clear nor as an unkeyed hash (the file decoded, cells and pages).
    forms = sorted({v for values in CAPTURED.values() for v in values}, key=repr)
    records = workspace.root / ".piitracer" / "suppression.sqlite"
    assert sqlite_cells(records, forms) == []
    texts = [str(v).encode() for v in forms]
    digests = [h for t in texts for a in ("sha256", "sha1", "md5") for h in (hashlib.new(a, t).digest(), hashlib.new(a, t).hexdigest().encode())]
    assert [t for t in texts + digests if t in records.read_bytes()] == []
    import sqlite3

    with sqlite3.connect(records) as db:
        assert db.execute("SELECT count(*), count(DISTINCT request_id) FROM records").fetchone()[1] == len(board)
    first = runner.invoke(cli, [*base, "guard", "scan", "--output", "json"])
    assert first.exit_code == 0 and json.loads(first.stdout)["came_back"] == [], first.output
    clean = lake_rows(workspace, spark)

    # The returns: a backfill (Iceberg through Spark, Delta through delta-rs), a copy, a restore.
    payments = spark.table("lake.prod.payments")
    spark.createDataFrame(BEFORE["payments"], payments.schema).writeTo("lake.prod.payments").append()
    person_phone = BEFORE["payments"][0]["phone"]
    decoys = {"cust": SUBJECT_USER_ID + 1, "phone": "+91" + "1" * (len(person_phone) - 7) + person_phone[-4:]}
    txn = workspace.location_of("analytics.customer_txn")
    decoy_txn = BEFORE["customer_txn"].slice(0, 1).set_column(0, "cust", pa.array([decoys["cust"]], BEFORE["customer_txn"]["cust"].type))
    write_deltalake(str(txn), pa.concat_tables([BEFORE["customer_txn"], decoy_txn]), mode="append")
    phones = workspace.location_of("support.phone_directory")
    decoy_phone = BEFORE["phone_directory"].slice(0, 1).set_column(0, "phone", pa.array([decoys["phone"]]))
    write_deltalake(str(phones), decoy_phone, mode="append")  # a decoy alone: this table must not be flagged
    for dataset in ("risk.card_usage", "archive.payments_weekly"):
        for path in sorted(BEFORE[dataset].rglob("*.parquet")):
            target = workspace.location_of(dataset) / path.relative_to(BEFORE[dataset])
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target.with_name("restored-" + target.name))
    assert find_values(workspace.location_of("archive.payments_weekly"), forms)  # the person is back on disk

    scan = runner.invoke(cli, [*base, "guard", "scan", "--output", "json"])
    assert scan.exit_code == 1, scan.output
    found = json.loads(scan.stdout)
    (back,) = found["came_back"]
    # The person was erased twice (the demo ran twice): one person came back, linked to both requests.
    assert back["earlier_requests"] == sorted(r["request_id"] for r in board) and back["new_request"], back
    assert {p["dataset"] for p in back["found"]} == {"prod.payments", "analytics.customer_txn", "risk.card_usage",
                                                     "archive.payments_weekly"}
    assert {p["column"] for p in back["found"] if p["dataset"] == "prod.payments"} >= {"user_id", "pan", "phone"}
    assert {p["column"] for p in back["found"] if p["dataset"] == "analytics.customer_txn"} == {"cust"}  # through lineage
    assert all(str(SUBJECT_USER_ID) not in json.dumps(p) for p in back["found"])
    again = runner.invoke(cli, [*base, "guard", "scan", "--output", "json"])
    assert again.exit_code == 0 and all(t["unchanged"] and t["files_read"] == 0 for t in json.loads(again.stdout)["tables"])
    assert not [p for p in BEFORE["payments"] if str(p["user_id"]) in scan.output + again.output]

    # The new request erases the person again, as any request.
    plan_path = workspace.root / "plan-back.json"
    planned = runner.invoke(cli, [*base, "batch", "plan", "--all-open", "-o", str(plan_path)])
    assert planned.exit_code == 0, planned.output
    with open_session(workspace, keys_of_demo(workspace.root)) as session:
        run = session.execute(plan_path, ExecuteOptions(no_concurrent_writers=True))
        assert {r.state for r in run.results} <= {"committed", "awaiting_attestation", "skipped"}, run.results
        session.verify(plan_path)
        attest_as_simulated_owners(session, session.load_plan(plan_path), plan_path)
        report = session.verify(plan_path).report
        assert report.complete, [(d.dataset, d.state.value) for d in report.open_items()]
        session.close(back["new_request"], now_reason="test: erased again")
    after = lake_rows(workspace, spark)
    # Nothing of the person is left and every other row is there: the rows before the returns, the
    # decoys (other people), and the other people's rows of the restored files (restored data).
    restored = {d: [r for p in sorted(BEFORE[d].rglob("*.parquet")) for r in row_texts(pq.read_table(p))]
                for d in ("risk.card_usage", "archive.payments_weekly")}
    assert [d for d, rows in after.items() if any(holds(r, forms) for r in rows)] == []
    expected = {"prod.payments": clean["prod.payments"],
                "analytics.customer_txn": clean["analytics.customer_txn"] + row_texts(decoy_txn),
                "support.phone_directory": clean["support.phone_directory"] + row_texts(decoy_phone),
                **{d: clean[d] + [r for r in rows if not holds(r, forms)] for d, rows in restored.items()}}
    assert {d: checksum(rows) for d, rows in after.items()} == {d: checksum(rows) for d, rows in expected.items()}
    locations = {workspace.location_of(d) for d in workspace.config.catalog} - {None}
    left = [f"{folder.name}/{hit}" for folder in [workspace.root, *sorted(locations)] if folder.exists()
            for hit in find_values(folder, forms)]
    assert left == []
    final = runner.invoke(cli, [*base, "guard", "scan", "--full", "--output", "json"])
    assert final.exit_code == 0 and json.loads(final.stdout)["came_back"] == [], final.output


def test_a_demo_run_that_fails_is_recorded_like_an_execute_that_fails(demo, warehouse: Path, monkeypatch) -> None:
    """The demo is a script over the session (issue 39): a step that fails mid-run is journaled
    and recorded in the audit log with its failed state, and the requests stay 'executing' with the
    reason — what `piitracer execute` does. The demo before the session recorded nothing of a
    failed run. (Last in the module: it leaves an open request behind.)"""
    from piitracer.api import Keys, open as open_session
    from piitracer.api.demo import demo_keys as keys_of_demo
    from piitracer.executor.runner import ExecutionError
    from piitracer.model.audit import EntryKind

    workspace, _ = demo
    plan = plan_deletion(workspace, piitracer.build_lineage_graph(workspace), ["prod.payments.user_id"],
                         [Subject(value=str(SUBJECT_USER_ID), request_id="r", received_at="2026-11-20T09:00:00Z")])
    failing = next(s for s in plan.steps if s.action.value == "delete_rows")  # a step piitracer performs
    monkeypatch.setenv("PIITRACER_FAILPOINT", f"executor.perform@{failing.id}!")
    with pytest.raises(ExecutionError):
        run_demo(workspace.root, warehouse=warehouse)
    keys: Keys = keys_of_demo(workspace.root)
    with open_session(workspace, keys) as session:
        (request,) = [r for r in session.board() if r.state.value == "executing"]
        steps = {e.body["step_id"]: e.body["state"] for e in session.audit().entries(plan_id=request.plan_id)
                 if e.kind is EntryKind.STEP}
    assert request.last_action == "execute failed"
    assert steps.get(failing.id) == "failed", steps  # the failed step is in the audit log
