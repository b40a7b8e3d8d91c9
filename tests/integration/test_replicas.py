"""Replicas (a DR copy in another region or bucket), on real Delta tables.

A pipeline-managed replica gets its own erase steps, after the primary's last step; a
replication-managed one is never written by piitracer: an ``await_replication`` step waits for the
propagation, then the verifier decodes the replica, and a subject value still there is a
replication failure. Each is checked on the files: the independent decoder (tests/support/byte_scan.py)
and every other row's checksum."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
import yaml
from byte_scan import find_values
from deltalake import DeltaTable, write_deltalake
from spark_lakehouse import SUBJECT_PANS, SUBJECTS, checksum, rows, write_workspace

from executor_runs import run_plan
import piitracer
from piitracer.api import plan_deletion, verify_plan
from piitracer.executor.preflight import PlanRefused
from piitracer.executor.runner import ExecuteOptions
from piitracer.workspace.model import WorkspaceError
from piitracer.model.plan import Action, Subject
from piitracer.model.verification import ErasureState

SCHEMA = pa.schema([("user_id", pa.int64()), ("pan", pa.string()), ("amount", pa.float64()), ("dt", pa.string())])
RECEIVED = "2026-11-20T09:00:00Z"


def people() -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows(1200)], SCHEMA)


def lake(root: Path, warehouse: Path, propagation_wait: str = "0s") -> tuple[Path, dict[str, Path]]:
    """A Delta primary in three versions, its DR copy written by a pipeline (two versions of its
    own) and an object-for-object copy of its folder made by storage replication."""
    table = people()
    where = {"crm.people": root / "lake/crm/people", "crm.people@dr": root / "dr-region/crm/people",
             "crm.people@eu": root / "eu-bucket/crm/people"}
    for part in (table.slice(0, 400), table.slice(400, 400), table.slice(800)):
        write_deltalake(str(where["crm.people"]), part, mode="append")
    for part in (table.slice(0, 700), table.slice(700)):
        write_deltalake(str(where["crm.people@dr"]), part, mode="append")
    shutil.copytree(where["crm.people"], where["crm.people@eu"])
    catalog = {"crm.people": {
        "format": "delta", "location": str(where["crm.people"]), "columns": SCHEMA.names,
        "identifiers": ["user_id", "pan"], "subject_key": "user_id",
        "replicas": [
            {"name": "dr", "location": str(where["crm.people@dr"]), "managed_by": "pipeline"},
            {"name": "eu", "location": str(where["crm.people@eu"]), "managed_by": "replication",
             "propagation_wait": propagation_wait},
        ]}}
    return write_workspace(root / "ws", warehouse, catalog, "SELECT 1;\n"), where


def subjects() -> list[Subject]:
    return [Subject(value=str(v), request_id=f"r{i}", received_at=RECEIVED) for i, v in enumerate(SUBJECTS)]


def delta_rows(location: Path) -> list[tuple]:
    return [tuple(r.values()) for r in DeltaTable(str(location)).to_pyarrow_table().to_pylist()]


def is_subject(row: tuple) -> bool:
    return any(v in SUBJECTS or v in SUBJECT_PANS for v in row)


def digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def plan_for(ws_folder: Path):
    ws = piitracer.load_workspace(ws_folder)
    return ws, plan_deletion(ws, piitracer.build_lineage_graph(ws), ["crm.people.user_id"], subjects())


def test_replicas_are_datasets_planned_after_the_primary(tmp_path: Path, warehouse: Path) -> None:
    ws_folder, _ = lake(tmp_path, warehouse, propagation_wait="6h")
    ws, plan = plan_for(ws_folder)
    steps = [(s.id, s.dataset, s.action.value, s.depends_on) for s in plan.steps]
    assert steps == [
        ("s001", "crm.people", "resolve", ()),
        ("s002", "crm.people", "delete_rows", ("s001",)),
        ("s003", "crm.people", "purge_deletion_vectors", ("s002",)),
        ("s004", "crm.people", "vacuum", ("s003",)),
        ("s005", "crm.people", "clean_delta_log", ("s004",)),
        # The pipeline's copy: its own delete, after the primary is clean.
        ("s006", "crm.people@dr", "delete_rows", ("s001", "s002", "s005")),
        ("s007", "crm.people@dr", "purge_deletion_vectors", ("s006",)),
        ("s008", "crm.people@dr", "vacuum", ("s007",)),
        ("s009", "crm.people@dr", "clean_delta_log", ("s008",)),
        # The replicated copy: nothing written, a wait from the primary's last step.
        ("s010", "crm.people@eu", "await_replication", ("s001", "s002", "s005")),
    ]
    wait = plan.steps[-1].params
    assert (wait.primary, wait.propagation_wait, wait.propagation_seconds) == ("crm.people", "6h", 21600)
    dr = next(s for s in plan.steps if s.dataset == "crm.people@dr" and s.action is Action.DELETE_ROWS)
    assert dr.key_column == "user_id" and [v.name for v in dr.values_from] == ["crm.people.user_id"]
    assert ws.config.catalog["crm.people@eu"].location.endswith("eu-bucket/crm/people")
    edges = [(e.source, e.target, e.relation.value) for e in piitracer.build_lineage_graph(ws).dataset_edges()]
    assert edges == [("crm.people", "crm.people@dr", "replica"), ("crm.people", "crm.people@eu", "replica")]


@pytest.mark.parametrize("replicas, expected", [
    ([{"name": "dr", "location": "a", "managed_by": "pipeline"}, {"name": "dr", "location": "b", "managed_by": "pipeline"}],
     "replicas: names must be unique"),
    ([{"name": "dr", "location": "a", "managed_by": "mirror"}], "catalog.crm.people.replicas.0.managed_by"),
    ([{"name": "dr", "location": "a"}], "catalog.crm.people.replicas.0.managed_by"),
    ([{"name": "../dr", "location": "a", "managed_by": "pipeline"}], "catalog.crm.people.replicas.0.name"),
])
def test_a_wrong_replica_entry_names_its_field(tmp_path: Path, replicas, expected) -> None:
    catalog = {"crm.people": {"format": "delta", "location": "lake/people", "columns": ["user_id"], "replicas": replicas}}
    folder = write_workspace(tmp_path / "ws", tmp_path / "warehouse", catalog, "SELECT 1;\n")
    with pytest.raises(WorkspaceError, match=expected.replace(".", r"\.")):
        piitracer.load_workspace(folder)


def test_a_dataset_id_with_the_replica_separator_is_refused(tmp_path: Path) -> None:
    catalog = {"crm.people@dr": {"format": "delta", "location": "lake/people", "columns": ["user_id"]}}
    folder = write_workspace(tmp_path / "ws", tmp_path / "warehouse", catalog, "SELECT 1;\n")
    with pytest.raises(WorkspaceError, match="'@' is kept for replicas"):
        piitracer.load_workspace(folder)


def test_pipeline_replica_is_erased_and_a_stale_replicated_one_is_a_replication_failure(tmp_path: Path, warehouse: Path) -> None:
    ws_folder, where = lake(tmp_path, warehouse)
    ws, plan = plan_for(ws_folder)
    keep = {name: checksum(r for r in delta_rows(folder) if not is_subject(r)) for name, folder in where.items()}
    for name, folder in where.items():  # the test can fail: the values are on disk before the run
        assert find_values(folder, SUBJECTS + SUBJECT_PANS), name
    eu_before = digests(where["crm.people@eu"])

    summary = run_plan(ws, plan, ExecuteOptions())
    assert summary.status == "complete", [(r.step.id, r.state, r.message) for r in summary.results]

    for name in ("crm.people", "crm.people@dr"):
        remaining = delta_rows(where[name])
        assert not [r for r in remaining if is_subject(r)], name
        assert checksum(remaining) == keep[name], f"{name}: other rows changed"
        assert find_values(where[name], SUBJECTS + SUBJECT_PANS) == [], f"{name}: subject bytes remain"
    assert digests(where["crm.people@eu"]) == eu_before, "piitracer never writes a replication-managed replica"

    report = verify_plan(ws, plan)
    states = {d.dataset: d.state for d in report.datasets}
    assert states == {"crm.people": ErasureState.ERASED, "crm.people@dr": ErasureState.ERASED,
                      "crm.people@eu": ErasureState.FOUND}
    eu = report.result("crm.people@eu")
    assert eu.reason.startswith("replication failure: ") and "replica of crm.people" in eu.reason
    assert eu.findings and all(f.file for f in eu.findings if f.kind != "snapshot")

    # The replication catches up (an object-for-object copy of the erased primary): verified erased.
    shutil.rmtree(where["crm.people@eu"])
    shutil.copytree(where["crm.people"], where["crm.people@eu"])
    again = verify_plan(ws, plan).result("crm.people@eu")
    assert again.state is ErasureState.ERASED, again.reason
    assert checksum(delta_rows(where["crm.people@eu"])) == keep["crm.people@eu"]


def test_a_replica_inside_its_propagation_wait_is_pending_not_failed(tmp_path: Path, warehouse: Path) -> None:
    ws_folder, where = lake(tmp_path, warehouse, propagation_wait="6h")
    ws, plan = plan_for(ws_folder)
    summary = run_plan(ws, plan, ExecuteOptions())
    assert summary.status == "incomplete"
    wait = next(r for r in summary.results if r.step.action is Action.AWAIT_REPLICATION)
    assert wait.state == "pending" and "has until" in wait.message and "6h after its erasure" in wait.message
    eu = verify_plan(ws, plan).result("crm.people@eu")
    assert eu.state is ErasureState.PENDING and "await_replication (pending)" in eu.pending_until


@pytest.mark.parametrize("replica, now_managed_by, refusal", [
    # The replication now keeps 'dr' in step: the plan's erase steps would write into a replicated copy.
    (0, "replication", "replication-managed replica of crm.people: piitracer only verifies it"),
    # A pipeline now writes 'eu': a plan that only waits for it would leave its rows.
    (1, "pipeline", "await_replication on crm.people@eu, which the catalog does not declare a "
                    "replication-managed replica: re-plan"),
])
def test_a_replica_step_the_catalog_no_longer_matches_is_refused_before_anything_runs(
        tmp_path: Path, warehouse: Path, replica: int, now_managed_by: str, refusal: str) -> None:
    ws_folder, where = lake(tmp_path, warehouse)
    _, plan = plan_for(ws_folder)
    config = yaml.safe_load((ws_folder / "piitracer.yaml").read_text())
    config["catalog"]["crm.people"]["replicas"][replica]["managed_by"] = now_managed_by
    (ws_folder / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    before = {name: digests(folder) for name, folder in where.items()}
    with pytest.raises(PlanRefused, match=refusal):
        run_plan(piitracer.load_workspace(ws_folder), plan, ExecuteOptions())
    assert {name: digests(folder) for name, folder in where.items()} == before
