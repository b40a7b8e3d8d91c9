"""``verify --sweep roots`` names only what holds a subject, once per table.

- Neighbours' data is not the subject's: an uncatalogued Delta table of other people whose phone
  numbers and e-mail addresses contain the subject's (``+155501001`` around ``+15550100``,
  ``joann@x.com`` and ``ann@x.com.au`` around ``ann@x.com``) lets ``verify --sweep roots`` pass
  (it exited 1 before, naming the table and its ``_delta_log`` folder by absolute path).
- The subject's phone written in a note of that table (``tel:+15550100;``) is found, as one item
  named relative to the warehouse root.
- How files under a root are grouped into items (Delta, Iceberg, partitioned and plain folders).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from deltalake import write_deltalake
from spark_lakehouse import write_workspace

import piitracer
from piitracer.api import plan_deletion, seal_plan, write_private
from executor_runs import run_plan
from piitracer.audit import load_audit_key
from piitracer.cli.main import cli
from piitracer.executor.runner import ExecuteOptions
from piitracer.model.plan import Subject
from piitracer.storage.store import FileEntry
from piitracer.verify.sweep import uncatalogued_items

KEY = "sweep-precision-test-key-0123456789"
SUBJECT, PHONE, EMAIL = 7_000_000_001, "+15550100", "ann@x.com"


def neighbours() -> pa.Table:
    """Other people, each holding text that contains the subject's phone or e-mail characters."""
    return pa.table({"user_id": pa.array([8_000_000_001, 8_000_000_002, 8_000_000_003], pa.int64()),
                     "phone": ["+155501001", "+1555010012", "9+15550100"],
                     "email": ["joann@x.com", "ann@x.com.au", "jo.ann@x.com"],
                     "note": ["call +155501001 after 5", "cc: joann@x.com, ann@x.com.au", "ABC+15550100123"],
                     "country": ["IN", "US", "IN"]})


@pytest.fixture()
def lake(tmp_path: Path, warehouse: Path):
    root = tmp_path / "lake"
    (root / "crm/people").mkdir(parents=True)
    people = pa.table({"user_id": pa.array([SUBJECT, 9_000_000_001], pa.int64()), "phone": [PHONE, "+919800000000"],
                       "email": [EMAIL, "bo@y.org"]})
    pq.write_table(people, root / "crm/people/part-0.parquet")
    catalog = {"crm.people": {"format": "parquet", "location": str(root / "crm/people"),
                              "columns": ["user_id", "phone", "email"], "identifiers": ["user_id", "phone", "email"],
                              "subject_key": "user_id"}}
    folder = write_workspace(tmp_path / "ws", warehouse, catalog, "", roots=[str(root)])
    ws = piitracer.load_workspace(folder)
    plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), ["crm.people.user_id"],
                         [Subject(value=str(SUBJECT), request_id="r1", received_at="2026-11-20T09:00:00Z")])
    plan = seal_plan(plan, load_audit_key(KEY))
    write_private(tmp_path / "plan.json", plan.to_json())
    run_plan(ws, plan, ExecuteOptions(no_concurrent_writers=True))
    # A table nobody catalogued, under the warehouse root: a Delta table partitioned by country.
    write_deltalake(str(root / "exports/contacts"), neighbours(), partition_by=["country"])
    write_deltalake(str(root / "exports/contacts"), neighbours().slice(0, 1), mode="append")
    return root, ws, tmp_path / "plan.json"


def run_verify(ws, plan_file: Path, *args: str) -> tuple[int, str]:
    result = CliRunner(env={"PIITRACER_AUDIT_KEY": KEY}).invoke(cli, ["--workspace", str(ws.root), "verify", str(plan_file), *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


def table_names(output: str) -> list[str]:
    return [line.split("│")[1].strip() for line in output.splitlines() if line.count("│") > 2 and line.split("│")[1].strip()]


def test_neighbours_longer_numbers_and_addresses_are_not_the_subject(lake) -> None:
    root, ws, plan_file = lake
    code, out = run_verify(ws, plan_file, "--sweep", "roots")
    assert code == 0, out
    assert table_names(out) == ["crm.people"]  # the plan's dataset only
    assert "swept 1 more dataset(s)/folder(s)" in out

    # The subject's own phone, written in a note of the same table, is found: one item, named
    # relative to the root, its log and partitions inside it.
    subject_row = neighbours().slice(0, 1).set_column(3, "note", pa.array([f"tel:{PHONE}; thanks"]))
    write_deltalake(str(root / "exports/contacts"), subject_row, mode="append")
    code, out = run_verify(ws, plan_file, "--sweep", "roots")
    assert code == 1, out
    assert table_names(out) == ["crm.people", "folder:exports/contacts"]
    findings = [line.strip() for line in out.splitlines() if line.startswith("  folder:")]
    assert findings and all(line.startswith("folder:exports/contacts: country=US/") or
                            line.startswith("folder:exports/contacts: country=IN/") or
                            line.startswith("folder:exports/contacts: _delta_log/") for line in findings), findings
    assert any("column note (inside text) [data] holds crm.people.phone" in line for line in findings), findings
    assert not any("crm.people.email" in line for line in findings), findings
    assert PHONE not in out and EMAIL not in out and str(SUBJECT) not in out


def entries(*paths: str) -> list[FileEntry]:
    return [FileEntry(path, 1) for path in paths]


def test_files_under_a_root_are_grouped_by_the_table_or_folder_they_belong_to() -> None:
    items = uncatalogued_items(entries(
        "exports/d/_delta_log/00000000000000000000.json", "exports/d/_delta_log/_last_checkpoint",
        "exports/d/user_id=7/part-0.parquet", "exports/d/_change_data/cdc-0.parquet",
        "ice/t/metadata/v1.metadata.json", "ice/t/metadata/snap-1.avro", "ice/t/data/user_id=7/00000-0.parquet",
        "dumps/dt=2026-11-01/hour=3/a.parquet", "dumps/b.csv", "dumps/old/c.parquet", "top.json",
        "user_id=7/x.parquet"))
    assert {folder: (what, sorted(e.relative for e in files)) for folder, (what, files) in items.items()} == {
        "exports/d": ("an uncatalogued Delta table at", ["_change_data/cdc-0.parquet", "_delta_log/00000000000000000000.json",
                                                          "_delta_log/_last_checkpoint", "user_id=7/part-0.parquet"]),
        "ice/t": ("an uncatalogued Iceberg table at", ["data/user_id=7/00000-0.parquet", "metadata/snap-1.avro",
                                                       "metadata/v1.metadata.json"]),
        "dumps": ("", ["b.csv", "dt=2026-11-01/hour=3/a.parquet"]),
        "dumps/old": ("", ["c.parquet"]),
        "": ("", ["top.json", "user_id=7/x.parquet"]),
    }
