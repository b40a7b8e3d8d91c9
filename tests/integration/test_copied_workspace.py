"""A copied workspace never touches the original.

Reproduced before the location guard: ``cp -a ws1 ws3``, then plan and execute in ws3 (even with
``warehouse_roots`` set): Iceberg metadata holds absolute paths, so the delete, the expiry and the
orphan removal acted on ws1 — its files changed or deleted, its Iceberg tables unreadable. Now the
run is refused before its first step, naming the dataset, the catalogued location and a path
outside it, and saying how to copy a table properly; every byte of ws1 is unchanged and ws3's
journal and audit log hold nothing. The same plan in ws1 itself runs (the guard is not a refusal
of everything)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from byte_scan import find_values
from workspace_lakehouse import SUBJECT
from paths import REPO, SUPPORT

ROOT = REPO
CLI = [sys.executable, "-m", "piitracer.cli.main"]
KEY = "copied-workspace-test-key-0123456789"


def run(workspace: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PIITRACER_AUDIT_KEY": KEY, "PYTHONPATH": str(ROOT)}
    return subprocess.run([*CLI, "--workspace", str(workspace), *args], capture_output=True, text=True, env=env,
                          cwd=workspace, timeout=600)


def digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def original(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("copy") / "ws1"
    built = subprocess.run([sys.executable, str(SUPPORT / "workspace_lakehouse.py"), str(folder)],
                           capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert built.returncode == 0, built.stderr[-3000:]
    return folder


def test_a_copied_workspace_is_refused_and_the_original_keeps_every_byte(original: Path) -> None:
    copy = original.parent / "ws3"
    shutil.copytree(original, copy, symlinks=True)  # cp -a
    before = digests(original)
    assert find_values(original / "warehouse", [SUBJECT])  # the test can fail: the subject is there

    planned = run(copy, "plan", "--source", "shop.users.user_id", "--subject", str(SUBJECT), "-o", "plan.json")
    assert planned.returncode == 0, planned.stderr
    recorded = digests(copy / ".piitracer")  # the plan queued its request; nothing may be added below
    for extra in ([], ["--dry-run"]):
        refused = run(copy, "execute", "plan.json", "--no-concurrent-writers", *extra)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        message = refused.stderr.strip().splitlines()[-1]
        assert message.startswith("error: dataset ")
        assert "its metadata points outside its catalogued location" in message
        assert str(copy / "warehouse") in message and str(original / "warehouse") in message  # expected and found
        assert "register_table" in message and "Traceback" not in refused.stderr

    assert digests(original) == before  # every byte of the original
    assert not (copy / ".piitracer" / "journal.sqlite").exists()
    assert digests(copy / ".piitracer") == recorded  # a refused run records nothing (audit log, request store)


def test_the_same_plan_runs_in_the_original(original: Path) -> None:
    planned = run(original, "plan", "--source", "shop.users.user_id", "--subject", str(SUBJECT), "-o", "plan.json")
    assert planned.returncode == 0, planned.stderr
    ran = run(original, "execute", "plan.json", "--no-concurrent-writers")
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-3000:]
    for folder in ("warehouse/shop/users", "warehouse/shop/orders", "delta/shop/events", "parquet/shop/exports"):
        assert find_values(original / folder, [SUBJECT]) == [], folder
