"""The tutorial (docs/tutorial.md) as a person runs it: every block the page marks, read from the
page itself (tests/support/tutorial_page.py), run in order by bash in an empty folder with a fresh
home (no key, no workspace), the virtualenv first on the PATH — from `piitracer init` to a
certificate checked by the README's snippet. Fails when any documented command fails (or exits
otherwise than the page says), when a file the page has you save is wrong, or when an output the
page shows is not printed. Then looks at the bytes: nothing of user 102 left in any decoded file of
the lakehouse, every other row still there. One Spark start (the execute's resolve step)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
from deltalake import DeltaTable

from byte_scan import find_values
from tutorial_page import PAGE, blocks

VENV_BIN = Path(sys.executable).parent


def test_the_tutorial_runs_as_written_to_a_checked_certificate(tmp_path: Path) -> None:
    home, start = tmp_path / "home", tmp_path / "start"
    home.mkdir()
    start.mkdir()
    state, cwd = tmp_path / "shell-state.sh", tmp_path / "shell-cwd"
    state.write_text("")
    cwd.write_text(str(start))
    # A person's shell: the virtualenv first, a home of its own, no piitracer key or setting inherited.
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PIITRACER_", "PYICEBERG_", "XDG_", "AWS_", "VIRTUAL_ENV"))}
    env.update(HOME=str(home), PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}", COLUMNS="100")
    last_output = ""
    ran = 0
    for block in blocks():
        where = f"{PAGE.name}:{block.line}"
        if block.kind == "file":
            Path(cwd.read_text().strip(), block.name).write_text(block.text)
            continue
        if block.kind == "output":
            missing = [line for line in block.text.splitlines() if line.strip() and line.strip() not in last_output]
            assert missing == [], f"{where}: the page shows output the command before it did not print: {missing}"
            continue
        # Each block in a new bash, starting where the last one ended (its folder and its exports).
        script = (f"set -e\nsource {shlex.quote(str(state))}\ncd \"$(cat {shlex.quote(str(cwd))})\"\n"
                  f"trap 'export -p > {shlex.quote(str(state))}; pwd > {shlex.quote(str(cwd))}' EXIT\n{block.text}")
        result = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=900)
        assert result.returncode == block.exit_code, (
            f"{where}: exit {result.returncode}, the page expects {block.exit_code}\n$ {block.text}\n"
            f"stdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-3000:]}")
        assert "Traceback" not in result.stderr, f"{where}:\n{result.stderr[-3000:]}"
        last_output = result.stdout
        ran += 1
    assert ran >= 12

    folder = start / "erasure-tutorial"
    lake = folder / "lake"
    # The bytes: user 102's id and e-mail (as written and as the pipeline lower-cased it) are in no
    # decoded file of the lakehouse, Delta log and statistics included; every other row is there.
    assert find_values(lake, [102, "Ravi@example.in", "ravi@example.in"]) == []
    people = DeltaTable(str(lake / "crm" / "people")).to_pyarrow_table().sort_by("user_id")
    assert people.column("user_id").to_pylist() == [101, 103, 104]
    assert people.column("email").to_pylist() == ["Asha@example.in", "Meera@example.in", "Kiran@example.in"]
    audience = pq.read_table(lake / "marketing" / "audience").sort_by("user_id")
    assert audience.column("email").to_pylist() == ["asha@example.in", "meera@example.in", "kiran@example.in"]
    # The keys stayed outside the workspace, in the fresh home, each readable by its owner only.
    keys = list((home / ".config" / "piitracer" / "keys").glob("workspace-*/*.key"))
    assert sorted(key.name for key in keys) == ["audit.key", "master.key", "signing.key"]
    assert all(key.stat().st_mode & 0o077 == 0 for key in keys)
    assert (folder / "certificate.json").is_file()
