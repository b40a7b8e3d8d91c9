"""The CLI as a person runs it (a new process in the workspace folder), and a folder's bytes, for
tests that check what a refused command leaves behind."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from paths import REPO

ROOT = REPO
CLI = [sys.executable, "-m", "piitracer.cli.main"]


def run_cli(folder: Path, audit_key: str, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """``piitracer --workspace FOLDER ARGS`` with ``audit_key`` in the environment."""
    env = {**os.environ, "PIITRACER_AUDIT_KEY": audit_key, "PYTHONPATH": str(ROOT)}
    return subprocess.run([*CLI, "--workspace", str(folder), *args], capture_output=True, text=True, env=env,
                          cwd=folder, timeout=timeout)


def file_digests(folder: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """SHA-256 of every file under ``folder`` by relative path, leaving out top-level names in ``skip``."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.relative_to(folder).parts[0] not in skip}
