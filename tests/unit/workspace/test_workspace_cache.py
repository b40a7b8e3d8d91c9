"""The validated workspace kept in the lineage store (piitracer/ingest/workspace/cache.py): a new
process that finds the workspace files unchanged plans from it byte for byte as from the files; a
changed file, a symlink along a location or a tampered payload is never served from it; it holds no
subject value."""

from __future__ import annotations

import os
import pickle
import shutil
import sqlite3
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

import piitracer
from piitracer.api import plan_deletion
from piitracer.model.plan import Subject
from piitracer.ingest.lineage_store import STORE_FILE, open_store
from piitracer.ingest.workspace.cache import WorkspaceCache, files_key
from paths import DATA, REPO

ROOT = REPO
EXPECTED = DATA / "expected" / "fixture_plan_8841302.json"
SUBJECT = Subject(value="8841302", request_id="dsr-2026-0042", received_at=datetime(2026, 11, 20, 9, tzinfo=timezone.utc))
PLAN = ["plan", "--source", "prod.payments.user_id", "--subject", "8841302", "--request-id", "dsr-2026-0042",
        "--received-at", "2026-11-20T09:00:00Z", "--output", "json"]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(ROOT / "lineage_fixtures", root, ignore=shutil.ignore_patterns(".piitracer"))
    return root


def cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    """piitracer in a new process: every run is a cold start."""
    return subprocess.run([sys.executable, "-m", "piitracer.cli.main", "-w", str(root), *args],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)


def make_plan(root: Path) -> str:
    workspace = piitracer.load_workspace(root)
    graph = piitracer.lineage_graph_for(workspace, ["prod.payments.user_id"])
    return plan_deletion(workspace, graph, ["prod.payments.user_id"], [SUBJECT]).to_json()


def kept_key(root: Path) -> str | None:
    row = sqlite3.connect(root / STORE_FILE).execute("SELECT key FROM workspace_cache").fetchone()
    return None if row is None else row[0]


def test_a_cold_process_plans_from_the_kept_workspace_byte_for_byte(workspace: Path) -> None:
    first = cli(workspace, *PLAN)  # validates the files and keeps the result
    assert first.returncode == 0, first.stderr
    assert kept_key(workspace) == files_key(workspace)[0]
    assert WorkspaceCache.open(workspace).workspace() is not None  # the next process is served from it
    second = cli(workspace, *PLAN)
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout and '"steps"' in first.stdout
    assert second.stderr == first.stderr  # the same warnings, the location ones computed live


def test_a_plan_from_the_kept_workspace_is_the_golden_plan(workspace: Path) -> None:
    cold = make_plan(workspace)  # validated from the files, and kept
    assert WorkspaceCache.open(workspace).workspace() is not None
    warm = make_plan(workspace)  # served from the store
    assert warm == cold == EXPECTED.read_text()


def test_the_kept_workspace_equals_the_validated_one(workspace: Path) -> None:
    validated = piitracer.load_workspace(workspace)
    served = piitracer.load_workspace(workspace)
    kept = WorkspaceCache.open(workspace).workspace()
    assert kept is not None and kept.config == validated.config and kept.namer == validated.namer
    assert served == validated


@pytest.mark.parametrize("file", ["piitracer.yaml", "catalog.discovered.yaml"])
def test_an_edited_location_is_never_served_from_the_cache(workspace: Path, file: str) -> None:
    assert cli(workspace, *PLAN).returncode == 0
    old_key = kept_key(workspace)
    path = workspace / file
    old = {"piitracer.yaml": "location: archive/payments_weekly",
           "catalog.discovered.yaml": "location: warehouse/analytics/daily_revenue"}[file]
    assert path.read_text().count(old) == 1
    path.write_text(path.read_text().replace(old, old.replace("location: ", "location: moved/")))
    planned = cli(workspace, *PLAN)
    assert planned.returncode == 0, planned.stderr
    new_location = old.split(": ")[1]
    assert f'"location": "moved/{new_location}"' in planned.stdout
    assert f'"location": "{new_location}"' not in planned.stdout
    # The live warning names the new one (its 'does not exist' is summarised with the fixture's other
    # unbuilt tables; it is the one location outside the warehouse roots).
    assert f"moved/{new_location} is outside the warehouse roots" in planned.stderr
    assert kept_key(workspace) not in (None, old_key)


def test_a_deleted_discovered_catalog_is_a_miss(workspace: Path) -> None:
    piitracer.load_workspace(workspace)
    kept = WorkspaceCache.open(workspace).workspace()
    assert kept is not None and kept.layers.discovered_file is not None
    (workspace / "catalog.discovered.yaml").unlink()
    assert WorkspaceCache.open(workspace).workspace() is None
    assert piitracer.load_workspace(workspace).layers.discovered_file is None


def test_the_cache_holds_no_subject_value(workspace: Path) -> None:
    value = "5550172"  # in no fixture file
    assert not any(value.encode() in p.read_bytes() for p in workspace.rglob("*") if p.is_file())
    planned = cli(workspace, *[value if arg == "8841302" else arg for arg in PLAN])
    assert planned.returncode == 0, planned.stderr
    assert kept_key(workspace) is not None
    store_files = list((workspace / STORE_FILE).parent.iterdir())
    assert store_files and not any(value.encode() in p.read_bytes() for p in store_files)


def test_a_symlink_along_a_location_sends_the_load_down_the_full_path(workspace: Path, tmp_path: Path) -> None:
    piitracer.load_workspace(workspace)
    assert WorkspaceCache.open(workspace).workspace() is not None
    folder = workspace / "warehouse" / "analytics"  # a parent of several locations, absent in the copy
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
    folder.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(tmp_path / "one", folder)  # appeared
    assert WorkspaceCache.open(workspace).workspace() is None
    piitracer.load_workspace(workspace)  # validated again (the symlink resolved), and kept with it
    assert WorkspaceCache.open(workspace).workspace() is not None
    folder.unlink()
    os.symlink(tmp_path / "two", folder)  # points elsewhere
    assert WorkspaceCache.open(workspace).workspace() is None
    piitracer.load_workspace(workspace)
    folder.unlink()  # went
    assert WorkspaceCache.open(workspace).workspace() is None


def test_a_workspace_reached_through_a_symlink_is_served(workspace: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    os.symlink(workspace, link)
    validated = piitracer.load_workspace(link)
    assert WorkspaceCache.open(link).workspace() is not None
    assert piitracer.load_workspace(link) == validated


class _Planted:
    def __reduce__(self):
        return (os.system, ("touch planted",))


def test_a_tampered_payload_builds_nothing_but_models(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    validated = piitracer.load_workspace(workspace)
    key = files_key(workspace)[0]
    store = open_store(workspace)
    store.keep_workspace(key, pickle.dumps((_Planted(), [])))
    store.close()
    monkeypatch.chdir(workspace)
    assert WorkspaceCache.open(workspace).workspace() is None
    assert not (workspace / "planted").exists()
    assert piitracer.load_workspace(workspace) == validated  # validated again, and kept again
    assert WorkspaceCache.open(workspace).workspace() is not None


def test_lineage_rebuild_forgets_the_kept_workspace(workspace: Path) -> None:
    piitracer.load_workspace(workspace)
    store = open_store(workspace)
    assert store.cached_workspace(files_key(workspace)[0]) is not None
    store.clear()
    assert store.cached_workspace(files_key(workspace)[0]) is None
    store.close()
