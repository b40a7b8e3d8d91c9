"""piitracer on an S3 lakehouse (a real S3 endpoint on 127.0.0.1: moto's server mode).

A Delta source with several versions, a Delta copy with the key renamed, a Hive-partitioned Parquet
folder keyed by PAN and an archive of weekly Parquet exports live in a bucket. Plan, execute,
verify and audit run against ``s3://`` locations with nothing but the standard AWS_* variables
set; then an independent decode of every object in the bucket finds no subject value, and every
other row is intact. A rewrite killed between writing its replacement and putting it in place
loses and duplicates nothing. Bad locations (an unknown scheme, a missing bucket, an unreachable
endpoint) are one clear error naming the dataset and the location, exit 2, nothing committed."""

from __future__ import annotations


import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from byte_scan import find_values
from deltalake import DeltaTable, write_deltalake
from s3_server import s3_server
from spark_lakehouse import SUBJECT_PANS, SUBJECTS, checksum, rows

import piitracer
from spark_lakehouse import record_made_plan

from piitracer.api import plan_deletion, seal_plan, write_private
from piitracer.audit import load_audit_key
from piitracer.model.plan import Subject
from paths import REPO

ROOT = REPO
CLI = [sys.executable, "-m", "piitracer.cli.main"]
KEY = "object-storage-test-key-0123456789"
SCHEMA = pa.schema([("user_id", pa.int64()), ("pan", pa.string()), ("amount", pa.float64()), ("dt", pa.string())])
WEEKS = ["2026-10-25", "2026-11-01"]


@pytest.fixture(scope="module")
def s3():
    with s3_server() as server:
        yield server


def build(s3) -> dict[str, str]:
    table = pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows(1200)], SCHEMA)
    uris = {name: s3.uri(name.replace(".", "/")) for name in ("crm.people", "crm.people_copy", "crm.cards", "archive.people_weekly")}
    uris["crm.people@dr"] = s3.uri("dr-region/crm/people")  # its DR copy, written by a pipeline
    for part in (table.slice(0, 500), table.slice(500, 400), table.slice(900)):
        write_deltalake(uris["crm.people"], part, mode="append")
    write_deltalake(uris["crm.people@dr"], table)
    copy = table.select(["user_id", "pan", "amount"]).rename_columns(["cust", "pan", "amount"])
    write_deltalake(uris["crm.people_copy"], copy)
    fs = s3.filesystem()
    cards = table.group_by(["pan", "dt"]).aggregate([("amount", "count")]).rename_columns(["pan", "dt", "n"])
    pq.write_to_dataset(cards, f"{s3.bucket}/crm/cards", partition_cols=["dt"], filesystem=fs,
                        basename_template="part-{i}.parquet")
    for week in WEEKS:
        for number, part in enumerate((table.slice(0, 600), table.slice(600))):
            pq.write_table(part, f"{s3.bucket}/archive/people_weekly/snapshot={week}/part-{number}.parquet", filesystem=fs)
    return uris


def workspace(folder: Path, uris: dict[str, str], extra: dict | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sql").mkdir(exist_ok=True)
    (folder / "sql" / "p.sql").write_text(
        "INSERT INTO crm.people_copy SELECT user_id AS cust, pan, amount FROM crm.people;\n"
        "INSERT INTO crm.cards SELECT pan, count(*) AS n, dt FROM crm.people GROUP BY pan, dt;\n")
    catalog = {
        "crm.people": {"format": "delta", "location": uris["crm.people"], "columns": SCHEMA.names,
                       "identifiers": ["user_id", "pan"], "subject_key": "user_id"},
        "crm.people_copy": {"format": "delta", "location": uris["crm.people_copy"], "columns": ["cust", "pan", "amount"]},
        "crm.cards": {"format": "parquet", "location": uris["crm.cards"], "columns": ["pan", "n", "dt"]},
        "archive.people_weekly": {"format": "archive", "location": uris["archive.people_weekly"], "columns": SCHEMA.names,
                                  "archive_of": {"dataset": "crm.people", "schedule": "7d", "retention": "90d"}},
    }
    if "crm.people@dr" in uris:
        catalog["crm.people"]["replicas"] = [{"name": "dr", "location": uris["crm.people@dr"], "managed_by": "pipeline"}]
    config = {"lineage": {"sql": [{"path": "sql"}]}, "catalog": catalog,
              "spark": {"master": "local[1]", "driver_memory": "1g", "conf": {"spark.ui.showConsoleProgress": "false"}},
              "warehouse_roots": [f"s3://{uris['crm.people'].split('/')[2]}/"], **(extra or {})}
    (folder / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return folder


def cli(ws: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PIITRACER_AUDIT_KEY": KEY, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([*CLI, "--workspace", str(ws), *args], capture_output=True, text=True, env=environment, timeout=900)


def table_rows(uri: str, delta: bool, s3) -> list[tuple]:
    if delta:
        return [tuple(r.values()) for r in DeltaTable(uri).to_pyarrow_table().to_pylist()]
    import pyarrow.dataset as ds

    path = uri.removeprefix("s3://")
    data = ds.dataset(path, filesystem=s3.filesystem(), format="parquet", partitioning="hive").to_table()
    return [tuple(r.values()) for r in data.to_pylist()]


def is_subject(row: tuple) -> bool:
    return any(v in SUBJECTS or v in SUBJECT_PANS for v in row)


def test_plan_execute_verify_audit_on_s3(s3, tmp_path: Path) -> None:
    uris = build(s3)
    ws = workspace(tmp_path / "ws", uris)
    deltas = {"crm.people", "crm.people_copy", "crm.people@dr"}
    keep = {name: checksum(r for r in table_rows(uri, name in deltas, s3) if not is_subject(r)) for name, uri in uris.items()}
    assert find_values(s3.download(tmp_path / "before"), SUBJECTS + SUBJECT_PANS)  # the test can fail

    workspace_ = piitracer.load_workspace(ws)
    subjects = [Subject(value=str(u), request_id=f"r{u}", received_at="2026-11-20T09:00:00Z") for u in SUBJECTS]
    plan = plan_deletion(workspace_, piitracer.build_lineage_graph(workspace_), ["crm.people.user_id"], subjects)
    assert plan.resolve[0].key_types == {"user_id": "bigint"}  # read from the Delta log on S3
    sealed = seal_plan(plan, load_audit_key(KEY))
    write_private(tmp_path / "plan.json", sealed.to_json())
    record_made_plan(workspace_, sealed, KEY)

    ran = cli(ws, "execute", str(tmp_path / "plan.json"), "--no-concurrent-writers")
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-3000:]
    assert "complete" in ran.stdout
    for name, uri in uris.items():
        assert checksum(r for r in table_rows(uri, name in deltas, s3) if not is_subject(r)) == keep[name], name
        assert not [r for r in table_rows(uri, name in deltas, s3) if is_subject(r)], name
    # An independent decode of every object in the bucket: no value of any subject, in any file.
    assert find_values(s3.download(tmp_path / "after"), SUBJECTS + SUBJECT_PANS) == []

    verified = cli(ws, "verify", str(tmp_path / "plan.json"))
    assert verified.returncode == 0, verified.stdout[-3000:] + verified.stderr[-2000:]
    states = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in verified.stdout.splitlines()
              if line.startswith("│") and line.count("│") > 3}
    assert states == dict.fromkeys(uris, "erased")
    assert cli(ws, "audit", "verify").returncode == 0
    secrets = ("test",)  # the credentials never reach the journal, the audit log or the plan
    for path in (ws / ".piitracer" / "journal.sqlite", ws / ".piitracer" / "audit.sqlite"):
        assert b"AWS_SECRET" not in path.read_bytes() and all(s.encode() + b'"' not in path.read_bytes() for s in secrets)


def test_a_rewrite_killed_before_its_replacement_is_in_place_on_s3(s3, tmp_path: Path) -> None:
    fs = s3.filesystem()
    table = pa.table({"pan": [f"{i:04d}" for i in range(1000)], "n": list(range(1000))})
    for number in range(3):
        pq.write_table(table.slice(number * 300, 300 if number < 2 else 400), f"{s3.bucket}/kill/cards/part-{number}.parquet", filesystem=fs)
    from piitracer.formats import parquet as parquet_eraser
    from piitracer.storage.locations import Location
    from piitracer.storage.store import Store

    location, store = Location.parse(s3.uri("kill/cards")), Store()
    code = ("import sys; from piitracer.formats import parquet as parquet_eraser; from piitracer.storage.locations import Location;"
            "from piitracer.storage.store import Store;"
            f"parquet_eraser.rewrite_files(Location.parse({location.uri!r}), Store(), 'pan', ['0003', '0500', '0950'])")
    killed = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT),
                            "PIITRACER_FAILPOINT": "parquet.after_temp_write"}, capture_output=True, text=True, timeout=120)
    assert killed.returncode == -9, killed.stderr[-2000:]
    keys = sorted(k for k in s3.keys() if k.startswith("kill/"))
    assert any(k.endswith(parquet_eraser.TEMP_SUFFIX) for k in keys)  # killed with its replacement written
    assert pq.read_table(f"{s3.bucket}/kill/cards", filesystem=fs).num_rows == 1000  # readers see the originals only

    resumed = parquet_eraser.rewrite_files(location, store, "pan", ["0003", "0500", "0950"])
    assert resumed.rows_deleted == 3 and resumed.details["stale_temporaries_removed"] == 1
    assert sorted(k for k in s3.keys() if k.startswith("kill/")) == [f"kill/cards/part-{n}.parquet" for n in range(3)]
    remaining = pq.read_table(f"{s3.bucket}/kill/cards", filesystem=fs)
    assert remaining.num_rows == 997 and not {"0003", "0500", "0950"} & set(remaining.column("pan").to_pylist())


@pytest.mark.parametrize(("location", "message"), [
    ("ftp://lake/crm/people", "unknown storage scheme 'ftp'"),
    ("s3://no-such-bucket/crm/people", "s3://no-such-bucket/crm/people"),
])
def test_bad_locations_are_one_clear_error(s3, tmp_path: Path, location: str, message: str) -> None:
    uris = build(s3) if not s3.keys() else {name: s3.uri(name.replace(".", "/")) for name in
                                              ("crm.people", "crm.people_copy", "crm.cards", "archive.people_weekly")}
    uris = {**uris, "crm.cards": location}
    bucket = next(uri for uri in uris.values() if uri.startswith("s3://") and "no-such-bucket" not in uri).split("/")[2]
    ws = workspace(tmp_path / "ws", uris, {"warehouse_roots": [f"s3://{bucket}/", "s3://no-such-bucket/"]})
    planned = cli(ws, "plan", "--source", "crm.people.user_id", "--subject", str(SUBJECTS[0]), "-o", str(tmp_path / "p.json"))
    if planned.returncode == 0:
        done = cli(ws, "execute", str(tmp_path / "p.json"), "--no-concurrent-writers")
        output = done.stderr
        assert done.returncode == 2, done.stdout + done.stderr
    else:
        output = planned.stderr
        assert planned.returncode == 2
    line = output.strip().splitlines()[-1]
    assert line.startswith("error: ") and message in line and "crm.cards" in line and "Traceback" not in output
    journal = ws / ".piitracer" / "journal.sqlite"
    if journal.exists():
        committed = sqlite3.connect(journal).execute("SELECT count(*) FROM steps WHERE state = 'committed'").fetchone()[0]
        assert committed == 0


def test_an_unreachable_endpoint_is_one_clear_error(tmp_path: Path) -> None:
    from s3_server import free_port

    uris = {name: f"s3://lake/{name.replace('.', '/')}" for name in ("crm.people", "crm.people_copy", "crm.cards", "archive.people_weekly")}
    ws = workspace(tmp_path / "ws", uris)
    env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y",
           "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true", "AWS_EC2_METADATA_DISABLED": "true"}
    planned = cli(ws, "plan", "--source", "crm.people.user_id", "--subject", str(SUBJECTS[0]), env=env)
    assert planned.returncode == 2
    line = planned.stderr.strip().splitlines()[-1]
    assert line.startswith("error: ") and "crm.people" in line and "s3://lake/crm/people" in line and "Traceback" not in planned.stderr



def test_the_verifier_reads_an_iceberg_table_on_s3(s3, tmp_path: Path) -> None:
    """Spark here has no S3 connector (no Maven for hadoop-aws or iceberg-aws-bundle), so an Iceberg
    table on S3 is written with pyiceberg, and only the verifier runs on it: the logical read of
    every retained snapshot and the decode of every manifest and data file go through S3."""
    from pyiceberg.catalog.sql import SqlCatalog

    from piitracer.model.verification import ErasureState
    from piitracer.verify import verify_datasets
    from piitracer.storage.locations import Location
    from piitracer.storage.store import Store

    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=s3.uri("iceberg"),
                         **{"s3.endpoint": s3.endpoint, "s3.access-key-id": "test", "s3.secret-access-key": "test",
                            "s3.region": "us-east-1"})
    catalog.create_namespace("crm")
    schema = pa.schema([("user_id", pa.int64()), ("pan", pa.string())])
    table = catalog.create_table("crm.people_ice", schema=schema)
    table.append(pa.table({"user_id": pa.array([SUBJECTS[0], 8_000_000_001], pa.int64()), "pan": [SUBJECT_PANS[0], "4111"]}))
    clean = catalog.create_table("crm.clean_ice", schema=schema)
    clean.append(pa.table({"user_id": pa.array([8_000_000_002], pa.int64()), "pan": ["4222"]}))
    locations = {"crm.people_ice": Location.parse(table.location()), "crm.clean_ice": Location.parse(clean.location())}
    assert all(not location.is_local for location in locations.values())

    uris = {name: s3.uri(name.replace(".", "/")) for name in ("crm.people", "crm.people_copy", "crm.cards", "archive.people_weekly")}
    # The tables are in the sql catalog 't' (the workspace says so, as a user of such a catalog would;
    # its keys stay in the environment): planning reads their state through it and picks pyiceberg.
    extra = {"crm.people_ice": {"format": "iceberg", "table": "t.crm.people_ice", "location": table.location(),
                                "columns": ["user_id", "pan"]},
             "crm.clean_ice": {"format": "iceberg", "table": "t.crm.clean_ice", "location": clean.location(),
                               "columns": ["user_id", "pan"]}}
    ws = workspace(tmp_path / "ws", uris)
    config = yaml.safe_load((ws / "piitracer.yaml").read_text())
    config["catalog"].update(extra)
    config["iceberg"] = {"catalogs": {"t": {"type": "sql", "uri": f"sqlite:///{tmp_path}/catalog.db",
                                            "warehouse": s3.uri("iceberg"), "s3.endpoint": s3.endpoint,
                                            "s3.region": "us-east-1"}}}
    (ws / "sql" / "p.sql").write_text((ws / "sql" / "p.sql").read_text()
                                      + "INSERT INTO t.crm.people_ice SELECT user_id, pan FROM crm.people;\n"
                                      + "INSERT INTO t.crm.clean_ice SELECT user_id, pan FROM crm.people;\n")
    (ws / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    workspace_ = piitracer.load_workspace(ws)
    plan = plan_deletion(workspace_, piitracer.build_lineage_graph(workspace_), ["crm.people.user_id"],
                         [Subject(value=str(SUBJECTS[0]), request_id="r1", received_at="2026-11-20T09:00:00Z")],
                         live_types={"crm.people.user_id": "bigint"})
    steps = {s.id: "committed" for s in plan.steps}
    values = {"crm.people.user_id": [SUBJECTS[0]], "crm.people.pan": [SUBJECT_PANS[0]]}
    report = verify_datasets(plan, workspace_.config.catalog, locations, values, steps, store=Store())
    found, erased = report.result("crm.people_ice"), report.result("crm.clean_ice")
    assert found.state is ErasureState.FOUND and found.snapshots_checked == 1
    kinds = {f.kind for f in found.findings}
    assert {"data", "snapshot", "manifest_bound"} <= kinds, kinds  # the data file, the logical read, the bounds
    assert erased.state is ErasureState.ERASED and erased.files_scanned >= 3


def test_wrong_credentials_are_one_clear_error(tmp_path: Path) -> None:
    with s3_server(authenticated=True) as server:
        write_deltalake(server.uri("crm/people"), pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows(20)], SCHEMA))
        uris = {name: server.uri(name.replace(".", "/")) for name in ("crm.people", "crm.people_copy", "crm.cards", "archive.people_weekly")}
        ws = workspace(tmp_path / "ws", uris)
        wrong = cli(ws, "plan", "--source", "crm.people.user_id", "--subject", str(SUBJECTS[0]),
                    env={"AWS_ACCESS_KEY_ID": "AKIANOTAKEY00000000", "AWS_SECRET_ACCESS_KEY": "wrong"})
        right = cli(ws, "plan", "--source", "crm.people.user_id", "--subject", str(SUBJECTS[0]))
    assert right.returncode == 0, right.stderr  # the test can fail: the same command works with the right key
    assert wrong.returncode == 2
    line = wrong.stderr.strip().splitlines()[-1]
    assert line.startswith("error: source crm.people.user_id: dataset crm.people: ") and uris["crm.people"] in line
    assert "wrong" not in line and "Traceback" not in wrong.stderr  # never the secret


@pytest.mark.parametrize("where", ["s3", "local"])
def test_delete_each_removes_exactly_the_files_asked_and_counts_them_in_order(s3, tmp_path: Path, where: str) -> None:
    """The file-removing steps delete several objects at once on S3: exactly the files asked go
    (one already gone is no error), every neighbour stays, ``after_each`` counts 1..n in order."""
    from piitracer.storage.locations import Location
    from piitracer.storage.store import Store

    base = Location.parse(s3.uri(f"delete-each/{tmp_path.name}") if where == "s3" else str(tmp_path / "t"))
    store = Store()
    names = [f"data/part-{i:02d}.parquet" for i in range(30)]
    for name in names:
        with store.open_output(base.child(name)) as out:
            out.write(name.encode())
    doomed = names[::2] + ["data/never-there.parquet"]
    seen: list[int] = []
    assert store.delete_each([base.child(name) for name in doomed], seen.append) == len(doomed)
    assert seen == list(range(1, len(doomed) + 1))
    assert sorted(store.sizes(base)) == names[1::2]
