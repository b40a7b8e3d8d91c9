"""Roots always: every place piitracer may change lies inside a warehouse root, in every
configuration, the default one included.

Reproduced on the main before this change: a workspace without ``warehouse_roots`` whose catalog
says ``../outside/copy`` (or ``lake/copy`` where ``lake`` or ``copy`` is a symlink to a folder
outside the workspace) had that folder's Parquet files rewritten by ``execute``, exit 0. Now,
without ``warehouse_roots``, the roots are the workspace folder and the Spark warehouse; ``..`` and
every symlink on a table's path are resolved before the check; a location outside is refused
before the first step with one line naming the setting to add; piitracer's own state folder is
never inside a dataset's territory. Nothing is journaled and no byte outside changes.
"""

from __future__ import annotations

from datetime import datetime, timezone
import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from cli_process import file_digests, run_cli

import piitracer
from piitracer.api import plan_deletion
from piitracer.api.execute import prepare_execution
from piitracer.executor.preflight import PlanRefused
from piitracer.workspace.model import WorkspaceError
from piitracer.model.plan import Subject

AUDIT_KEY = "roots-always-test-audit-key-0123456789"
SUBJECT = 7001


def people(n: int = 50) -> pa.Table:
    ids = list(range(SUBJECT, SUBJECT + n))
    return pa.table({"user_id": pa.array(ids, pa.int64()), "email": [f"u{i}@example.org" for i in ids]})


def write_table(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(people(), folder / "part-0.parquet")


def digests(folder: Path) -> dict[str, str]:
    return file_digests(folder)


def workspace(folder: Path, copy_location: str, roots: list[str] | None = None) -> Path:
    """A Parquet source inside the workspace and a derived Parquet copy at ``copy_location``."""
    folder.mkdir(parents=True, exist_ok=True)
    write_table(folder / "lakehouse" / "users")
    (folder / "sql").mkdir(exist_ok=True)
    (folder / "sql" / "copy.sql").write_text("INSERT INTO shop.copy SELECT user_id, email FROM shop.users;\n")
    config: dict = {
        "lineage": {"sql": [{"path": "sql"}]},
        "spark": {"master": "local[1]", "warehouse": "warehouse"},
        "catalog": {
            "shop.users": {"format": "parquet", "location": "lakehouse/users", "columns": ["user_id", "email"],
                           "identifiers": ["user_id", "email"], "subject_key": "user_id",
                           "column_types": {"user_id": "bigint", "email": "string"}},
            "shop.copy": {"format": "parquet", "location": copy_location, "columns": ["user_id", "email"]},
        },
    }
    if roots is not None:
        config["warehouse_roots"] = roots
    (folder / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return folder


def run(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return run_cli(folder, AUDIT_KEY, *args)


def preflight_of(folder: Path):
    """Plan the subject and run the executor's preflight (what execute does before its first step)."""
    ws = piitracer.load_workspace(folder)
    graph = piitracer.lineage_graph_for(ws, ["shop.users.user_id"])
    plan = plan_deletion(ws, graph, ["shop.users.user_id"], [Subject(value=str(SUBJECT), request_id="r1", received_at=datetime.now(timezone.utc))])
    return prepare_execution(ws, plan)


def outside_cases(base: Path) -> dict[str, tuple[Path, Path]]:
    """name -> (workspace, the outside folder that must keep every byte)."""
    cases = {}
    # 1. '..' out of the workspace, no warehouse_roots (the default configuration).
    outside = base / "dotdot" / "outside" / "copy"
    write_table(outside)
    cases["dotdot"] = (workspace(base / "dotdot" / "ws", "../outside/copy"), outside)
    # 2. the table folder itself is a symlink to a folder outside the workspace.
    outside = base / "link" / "outside" / "copy"
    write_table(outside)
    ws = workspace(base / "link" / "ws", "lakehouse/copy")
    os.symlink(outside, ws / "lakehouse" / "copy")
    cases["table symlink"] = (ws, outside)
    # 3. a folder between the root and the table is a symlink out of the root (warehouse_roots set).
    outside = base / "mid" / "elsewhere" / "copy"
    write_table(outside)
    ws = workspace(base / "mid" / "ws", "lake/sub/copy", roots=["lake", "lakehouse"])
    (ws / "lake").mkdir()
    os.symlink(outside.parent, ws / "lake" / "sub")
    cases["symlink on the path, roots set"] = (ws, outside)
    # 4. '..' climbing out of a configured root.
    outside = base / "rootdotdot" / "outside" / "copy"
    write_table(outside)
    cases["'..' out of a root"] = (workspace(base / "rootdotdot" / "ws", "lakehouse/../../outside/copy",
                                             roots=["lakehouse"]), outside)
    return cases


def test_a_location_outside_every_root_is_refused_before_the_first_step(tmp_path: Path) -> None:
    for name, (ws, outside) in outside_cases(tmp_path).items():
        before = digests(outside)
        with pytest.raises(PlanRefused) as refused:
            preflight_of(ws)
        message = str(refused.value)
        assert "dataset shop.copy" in message and "outside the warehouse roots" in message, name
        assert str(outside) in message, (name, message)  # the real place, symlinks and '..' resolved
        assert "warehouse_roots" in message, name  # the setting to add
        assert digests(outside) == before, name


def test_cli_execute_refuses_with_one_line_and_changes_nothing(tmp_path: Path) -> None:
    ws, outside = outside_cases(tmp_path)["dotdot"]
    before = digests(outside)
    planned = run(ws, "plan", "--source", "shop.users.user_id", "--subject", str(SUBJECT), "-o", "plan.json")
    assert planned.returncode == 0, planned.stderr
    state = digests(ws / ".piitracer")
    for extra in ([], ["--dry-run"]):
        refused = run(ws, "execute", "plan.json", "--no-concurrent-writers", *extra)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        lines = refused.stderr.strip().splitlines()
        assert lines[-1].startswith("error: dataset shop.copy: ") and "outside the warehouse roots" in lines[-1]
        assert "set warehouse_roots" in lines[-1] and "Traceback" not in refused.stderr
    assert digests(outside) == before  # every byte outside the workspace
    assert not (ws / ".piitracer" / "journal.sqlite").exists()
    assert digests(ws / ".piitracer") == state  # a refused run records nothing


def test_piitracers_own_files_are_never_a_datasets_territory(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "own", ".piitracer/tables/copy")
    write_table(ws / ".piitracer" / "tables" / "copy")
    with pytest.raises(PlanRefused, match="piitracer's own"):
        preflight_of(ws)
    # The workspace folder itself as a table's location: it holds the other table, refused at load.
    with pytest.raises(WorkspaceError, match="lies inside the location of shop.copy"):
        preflight_of(workspace(tmp_path / "whole", "."))


def test_inside_the_default_roots_the_guard_lets_the_plan_run(tmp_path: Path) -> None:
    """The control: the same workspace with the copy inside it passes the preflight."""
    ws = workspace(tmp_path / "ws", "lakehouse/copy")
    write_table(ws / "lakehouse" / "copy")
    executor = prepare_execution(piitracer.load_workspace(ws), preflight_of(ws).plan)
    assert {s.dataset for s in executor.plan.steps} >= {"shop.copy"}
