"""The proof does not stop at the plan's keys or at the plan's edge.

- Value forms: a column the lineage says holds ``LOWER(TRIM(email))`` is searched for that form
  in its dataset even though the dataset's own step keys on the user id: a stray file holding the
  normalised e-mail is ``found`` (it was reported ``erased`` before).
- The sweep: ``verify --sweep catalog`` decodes every other catalogued dataset and ``--sweep
  roots`` every file under ``warehouse_roots``; a table holding the subject with no lineage from
  the source is ``unplanned`` and verify exits 1; a lakehouse without one exits 0.
- What a person sees: the verification table, one row per dataset with its state, names whole.
- An uncatalogued table under a warehouse root is one item (a Delta table is not also its
  ``_delta_log``, a partitioned one not also each partition folder), named relative to the root;
  the root is stated once, in its reason.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from spark_lakehouse import write_workspace

from executor_runs import run_plan
import piitracer
from piitracer.api import plan_deletion, seal_plan, verify_plan, write_private
from piitracer.audit import load_audit_key
from piitracer.cli.main import cli
from piitracer.executor.runner import ExecuteOptions
from piitracer.model.plan import Subject
from piitracer.model.verification import ErasureState

KEY = "verify-scope-test-key-0123456789"
SUBJECT, EMAIL = 7_000_000_001, "  Asha.Rao@Example.IN "
NORMALISED = EMAIL.strip().lower()


def users() -> pa.Table:
    ids = [SUBJECT, 8_000_000_001, 8_000_000_002] + [9_000_000_000 + i for i in range(300)]
    emails = [EMAIL, "b@x.in", "c@x.in"] + [f"user{i}@example.in" for i in range(300)]
    return pa.table({"user_id": pa.array(ids, pa.int64()), "email": emails})


@pytest.fixture()
def lake(tmp_path: Path, warehouse: Path):
    root = tmp_path / "lake"
    table = users()
    for name in ("crm/users", "mk/contacts", "ops/shadow", "ops/clean"):
        (root / name).mkdir(parents=True)
    pq.write_table(table, root / "crm/users/part-0.parquet")
    contacts = pa.table({"user_id": table.column("user_id"),
                         "email_norm": [e.strip().lower() for e in table.column("email").to_pylist()]})
    pq.write_table(contacts, root / "mk/contacts/part-0.parquet")
    # A catalogued table no lineage explains: it holds the subject's raw e-mail.
    pq.write_table(pa.table({"contact": [EMAIL, "z@x.in"], "n": [1, 2]}), root / "ops/shadow/part-0.parquet")
    pq.write_table(pa.table({"contact": ["q@x.in"], "n": [1]}), root / "ops/clean/part-0.parquet")
    catalog = {
        "crm.users": {"format": "parquet", "location": str(root / "crm/users"), "columns": ["user_id", "email"],
                      "identifiers": ["user_id", "email"], "subject_key": "user_id"},
        "mk.contacts": {"format": "parquet", "location": str(root / "mk/contacts"), "columns": ["user_id", "email_norm"]},
        "ops.shadow": {"format": "parquet", "location": str(root / "ops/shadow"), "columns": ["contact", "n"]},
        "ops.clean": {"format": "parquet", "location": str(root / "ops/clean"), "columns": ["contact", "n"]},
    }
    sql = "INSERT INTO mk.contacts SELECT user_id, LOWER(TRIM(email)) AS email_norm FROM crm.users;\n"
    folder = write_workspace(tmp_path / "ws", warehouse, catalog, sql, roots=[str(root)])
    ws = piitracer.load_workspace(folder)
    plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), ["crm.users.user_id"],
                         [Subject(value=str(SUBJECT), request_id="r1", received_at="2026-11-20T09:00:00Z")])
    plan = seal_plan(plan, load_audit_key(KEY))
    write_private(tmp_path / "plan.json", plan.to_json())
    run_plan(ws, plan, ExecuteOptions(no_concurrent_writers=True))
    return root, ws, plan, tmp_path / "plan.json"


def test_a_column_is_searched_for_every_form_the_lineage_says_it_holds(lake) -> None:
    root, ws, plan, _ = lake
    contacts = plan.decision("mk.contacts")
    assert contacts.key_column == "user_id" and [v.name for v in contacts.values_from] == ["crm.users.user_id"]
    (computed,) = contacts.column_forms["email_norm"]
    assert verify_plan(ws, plan).result("mk.contacts").state is ErasureState.ERASED  # the rewrite took the row
    # A stray file (a re-run of an old export job) with only the normalised e-mail: no user id to key on.
    pq.write_table(pa.table({"email_norm": [NORMALISED, "b@x.in"]}), root / "mk/contacts/part-stray.parquet")
    result = verify_plan(ws, plan).result("mk.contacts")
    assert result.state is ErasureState.FOUND
    assert {(f.file, f.where, f.value_set) for f in result.findings} == {
        ("part-stray.parquet", "column email_norm", computed),
        ("part-stray.parquet", "footer statistics min of email_norm", computed)}


def run_verify(ws, plan_file: Path, *args: str) -> tuple[int, str]:
    result = CliRunner(env={"PIITRACER_AUDIT_KEY": KEY}).invoke(cli, ["--workspace", str(ws.root), "verify", str(plan_file), *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


def row_of(output: str, dataset: str) -> list[str]:
    rows = [line for line in output.splitlines() if line.startswith("│") and f" {dataset} " in line]
    assert len(rows) == 1, (dataset, output)
    return [cell.strip() for cell in rows[0].strip("│").split("│")]


def test_the_sweep_finds_a_table_the_lineage_does_not_show(lake) -> None:
    root, ws, plan, plan_file = lake
    code, out = run_verify(ws, plan_file)
    assert code == 0, out  # the plan's own datasets are erased: without a sweep nothing else is looked at
    assert row_of(out, "crm.users")[:2] == ["crm.users", "erased"]
    assert row_of(out, "mk.contacts")[:2] == ["mk.contacts", "erased"]

    code, out = run_verify(ws, plan_file, "--wide", "--sweep")  # a bare --sweep is the catalog; --wide: every reason whole
    assert code == 1
    cells = row_of(out, "ops.shadow")
    assert cells[:2] == ["ops.shadow", "unplanned"] and cells[4] == "2"  # the column and its footer statistics
    assert "  ops.shadow: part-0.parquet: column contact [data] holds crm.users.email" in out
    assert "lineage does not show this flow" in out.replace("\n", " ").replace("│", "")
    assert "ops.clean" not in [line.split("│")[1].strip() for line in out.splitlines() if line.count("│") > 2]
    assert "swept 2 more dataset(s)/folder(s)" in out and EMAIL.strip() not in out and str(SUBJECT) not in out

    (root / "ops/shadow/part-0.parquet").unlink()  # the flow found and erased by hand
    code, out = run_verify(ws, plan_file, "--sweep", "catalog")
    assert code == 0, out

    stray = root / "exports" / "adhoc"  # a folder nobody catalogued, under the warehouse roots
    stray.mkdir(parents=True)
    pq.write_table(pa.table({"uid": pa.array([SUBJECT], pa.int64())}), stray / "dump.parquet")
    code, out = run_verify(ws, plan_file, "--sweep", "catalog")
    assert code == 0, out  # the catalog sweep does not look outside the catalog
    code, out = run_verify(ws, plan_file, "--sweep", "roots")
    assert code == 1
    assert row_of(out, "folder:exports/adhoc")[1] == "unplanned"  # named relative to its warehouse root
    assert "folder:exports/adhoc: dump.parquet: column uid [data] holds crm.users.user_id" in out


def test_the_sweep_is_recorded_in_the_audit_log(lake) -> None:
    import json
    import sqlite3

    _, ws, _, plan_file = lake
    run_verify(ws, plan_file, "--sweep")
    db = sqlite3.connect(ws.root / ".piitracer" / "audit.sqlite")
    (body,) = [json.loads(b) for (b,) in db.execute("SELECT body FROM entries WHERE kind = 'verification'")]
    assert body["sweep"] == "catalog" and body["swept"] == ["ops.clean", "ops.shadow"]
    assert [(d["dataset"], d["state"]) for d in body["datasets"] if d["state"] == "unplanned"] == [("ops.shadow", "unplanned")]


def verify_json(ws, plan_file: Path, *args: str) -> tuple[int, dict]:
    import json

    result = CliRunner(env={"PIITRACER_AUDIT_KEY": KEY}).invoke(
        cli, ["--workspace", str(ws.root), "verify", str(plan_file), "--output", "json", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, json.loads(result.output[result.output.index("{"):])


def test_an_uncatalogued_delta_table_is_swept_once_by_its_folder(lake) -> None:
    from deltalake import write_deltalake

    root, ws, _, plan_file = lake
    table = root / "exports" / "people_delta"  # nobody catalogued it; partitioned by the user id
    people = pa.table({"user_id": pa.array([8_000_000_001, SUBJECT], pa.int64()), "note": ["a", "b"]})
    write_deltalake(str(table), people, partition_by=["user_id"])
    write_deltalake(str(table), people.slice(0, 1), mode="append")
    code, out = run_verify(ws, plan_file, "--sweep", "roots")
    assert code == 1
    names = [line.split("│")[1].strip() for line in out.splitlines() if line.count("│") > 2]
    assert [n for n in names if n.startswith("folder:")] == ["folder:exports/people_delta"]
    assert row_of(out, "folder:exports/people_delta")[1] == "unplanned"
    # Its files are named inside the table: the log as the log, the partition folder redacted.
    assert re.search(r"\n  folder:exports/people_delta: _delta_log/0{20}\.json: line \d+ \.add\.partitionValues\.user_id "
                     r"\[log\] holds crm\.users\.user_id\n", out)
    assert "folder:exports/people_delta: user_id=<crm.users.user_id>/" in out
    assert str(SUBJECT) not in out

    code, report = verify_json(ws, plan_file, "--sweep", "roots")
    assert code == 1
    (found,) = [d for d in report["datasets"] if d["state"] == "unplanned" and d["dataset"] != "ops.shadow"]
    assert found["dataset"] == "folder:exports/people_delta"
    assert found["reason"].startswith(f"an uncatalogued Delta table at exports/people_delta under warehouse root {root},")
    folders = [label for label in report["swept"] if label.startswith("folder:")]
    assert folders == ["folder:exports/people_delta"]
    assert str(root) not in " ".join(report["swept"]) and str(SUBJECT) not in str(report)
