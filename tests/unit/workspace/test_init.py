"""`piitracer init [DIR]`: a workspace a first run can use — piitracer.yaml with its warehouse
roots, the audit key, the master key and the certificate signing key written 0600 outside the
workspace (each file saying which key it is; the public key beside the signing key), the three
lines of environment printed — that `lineage stats`, `catalog discover` and `plan -o` then accept; never an
overwrite, never a key inside the workspace, nothing written when refused. No Spark: the table is
written by delta-rs."""

from __future__ import annotations

import os
import select
import stat
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
import yaml
from click.testing import CliRunner
from deltalake import write_deltalake

from piitracer.cli.main import cli

NO_KEYS = {"PIITRACER_AUDIT_KEY": None, "PIITRACER_AUDIT_KEY_FILE": None, "PIITRACER_MASTER_KEY": None,
           "PIITRACER_MASTER_KEY_FILE": None, "PIITRACER_SIGNING_KEY_FILE": None}
PEOPLE = pa.table({"user_id": pa.array([1, 2, 3], pa.int64()), "email": ["a@example.in", "b@example.in", "c@example.in"]})


def run(*args: str, env: dict | None = None):
    result = CliRunner().invoke(cli, list(args), env={**NO_KEYS, **(env or {})})
    return result.exit_code, result.stdout, result.stderr


def exported(stdout: str) -> dict[str, str]:
    """The environment init prints: exactly three `export NAME=VALUE` lines (audit, master, signing)."""
    lines = stdout.splitlines()
    assert len(lines) == 3 and all(line.startswith("export ") for line in lines), stdout
    return dict(line[len("export "):].split("=", 1) for line in lines)


def files_under(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_init_makes_a_workspace_that_lineage_stats_discover_and_plan_accept(tmp_path: Path) -> None:
    lake, workspace, keys = tmp_path / "lake", tmp_path / "ws", tmp_path / "secrets" / "ws-keys"
    write_deltalake(str(lake / "crm" / "people"), PEOPLE)
    code, out, err = run("init", str(workspace), "--warehouse-root", str(lake), "--keys-dir", str(keys))
    assert code == 0, err
    env = exported(out)
    assert env == {"PIITRACER_AUDIT_KEY_FILE": str(keys / "audit.key"), "PIITRACER_MASTER_KEY_FILE": str(keys / "master.key"),
                   "PIITRACER_SIGNING_KEY_FILE": str(keys / "signing.key")}
    for key, first_line in (("audit.key", "piitracer-audit-key v1"), ("master.key", "piitracer-master-key v1"),
                            ("signing.key", "-----BEGIN PRIVATE KEY-----")):
        assert stat.S_IMODE((keys / key).stat().st_mode) == 0o600
        assert (keys / key).read_text().splitlines()[0] == first_line  # each file says which key it is
        assert len((keys / key).read_text().strip()) >= 32
    assert (keys / "signing.key.pub").read_text().startswith("-----BEGIN PUBLIC KEY-----")
    assert "export PIITRACER_SIGNING_KEY_FILE=" in (workspace / "piitracer.yaml").read_text()  # in its comment too
    assert stat.S_IMODE(keys.stat().st_mode) == 0o700
    assert (keys / "audit.key").read_bytes() != (keys / "master.key").read_bytes()
    config = yaml.safe_load((workspace / "piitracer.yaml").read_text())
    assert config["warehouse_roots"] == [str(lake)] and config["version"] == 1
    assert not any(p.suffix == ".key" for p in workspace.rglob("*"))  # no key inside the workspace

    assert run("-w", str(workspace), "lineage", "stats", env=env)[0] == 0
    code, _, err = run("-w", str(workspace), "catalog", "discover", "--write", env=env)
    assert code == 0, err
    assert "crm.people" in yaml.safe_load((workspace / "catalog.discovered.yaml").read_text())["catalog"]
    config["catalog"] = {"crm.people": {"identifiers": ["user_id", "email"], "subject_key": "user_id", "owner": "crm"}}
    (workspace / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))

    plan_args = ("-w", str(workspace), "plan", "--source", "crm.people.user_id", "--subject", "2",
                 "--request-id", "dsr-1", "-o", str(tmp_path / "plan.json"))
    code, _, err = run(*plan_args)  # without the environment init printed: the first missing key, exit 2
    assert code == 2 and "no audit key" in err
    code, _, err = run(*plan_args, env=env)
    assert code == 0, err
    assert "sealed" in err and "NOT sealed" not in err
    assert stat.S_IMODE((tmp_path / "plan.json").stat().st_mode) == 0o600
    code, out, err = run("-w", str(workspace), "audit", "verify", env=env)
    assert code == 0 and "audit log intact" in out, err


def test_init_never_overwrites_a_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    assert run("init", str(workspace), "--warehouse-root", "lake", "--keys-dir", str(tmp_path / "k1"))[0] == 0
    before = (workspace / "piitracer.yaml").read_bytes()
    code, out, err = run("init", str(workspace), "--warehouse-root", "other", "--keys-dir", str(tmp_path / "k2"))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "piitracer.yaml exists" in err and "Traceback" not in err
    assert (workspace / "piitracer.yaml").read_bytes() == before
    assert not (tmp_path / "k2").exists()  # refused before any key was written


def test_init_refuses_a_keys_folder_inside_the_workspace_also_through_a_symlink(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "link").symlink_to(workspace)
    for keys in (workspace / "keys", workspace, tmp_path / "link" / "keys"):
        code, out, err = run("init", str(workspace), "--warehouse-root", "lake", "--keys-dir", str(keys))
        assert code == 2 and out == "" and err.count("\n") == 1, err
        assert "is inside the workspace" in err
    assert list(workspace.iterdir()) == []  # nothing written: no piitracer.yaml, no keys folder


@pytest.mark.parametrize("existing", ["master.key", "signing.key.pub"])
def test_init_never_overwrites_a_key_and_leaves_nothing_behind(tmp_path: Path, existing: str) -> None:
    keys, workspace = tmp_path / "keys", tmp_path / "ws"
    keys.mkdir()
    (keys / existing).write_text("an older key that guards open requests\n")
    before = files_under(keys)
    code, _, err = run("init", str(workspace), "--warehouse-root", "lake", "--keys-dir", str(keys))
    assert code == 2 and f"{existing} exists" in err
    assert files_under(keys) == before and not (workspace / "piitracer.yaml").exists()


def test_init_without_a_root_and_without_a_terminal_is_one_line(tmp_path: Path) -> None:
    code, out, err = run("init", str(tmp_path / "ws"), "--keys-dir", str(tmp_path / "keys"))
    assert code == 2 and out == "" and err.count("\n") == 1 and "--warehouse-root" in err
    assert not (tmp_path / "ws").exists() and not (tmp_path / "keys").exists()


def test_the_default_keys_folder_is_outside_the_workspace_one_per_workspace(tmp_path: Path) -> None:
    config_home = tmp_path / "config"
    env = {"XDG_CONFIG_HOME": str(config_home)}
    first = exported(run("init", str(tmp_path / "a" / "lake"), "--warehouse-root", "x", env=env)[1])
    second = exported(run("init", str(tmp_path / "b" / "lake"), "--warehouse-root", "x", env=env)[1])
    folders = {Path(v).parent for v in (*first.values(), *second.values())}
    assert len(folders) == 2  # two workspaces named "lake": two key folders
    for folder in folders:
        assert folder.parent == config_home / "piitracer" / "keys" and folder.name.startswith("lake-")


def test_init_asks_for_the_roots_on_a_terminal(tmp_path: Path) -> None:
    """A real terminal (a pty as stdin): the question goes to stderr, the answer becomes the roots,
    and stdout still holds only the lines of environment."""
    primary, secondary = os.openpty()
    process = subprocess.Popen([str(Path(sys.executable).parent / "piitracer"), "init", str(tmp_path / "ws"),
                                "--keys-dir", str(tmp_path / "keys")],
                               stdin=secondary, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={k: v for k, v in os.environ.items() if not k.startswith("PIITRACER_")})
    os.close(secondary)
    try:
        deadline, asked = time.monotonic() + 60, b""
        while b"Warehouse roots" not in asked and time.monotonic() < deadline:
            ready, _, _ = select.select([process.stderr], [], [], 1)
            if ready:
                asked += os.read(process.stderr.fileno(), 4096)
        assert b"Warehouse roots" in asked
        os.write(primary, b"lake, s3://bucket/warehouse/\n")
        out, _ = process.communicate(timeout=60)
    finally:
        os.close(primary)
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0
    assert len(exported(out.decode())) == 3
    config = yaml.safe_load((tmp_path / "ws" / "piitracer.yaml").read_text())
    assert config["warehouse_roots"] == [str(Path.cwd() / "lake"), "s3://bucket/warehouse/"]


def test_the_api_makes_a_workspace_the_loader_accepts(tmp_path: Path) -> None:
    from piitracer.api import init_workspace
    from piitracer.ingest.workspace.loader import load_workspace

    made = init_workspace(tmp_path / "ws", ["s3://lake/warehouse/", " "], keys_dir=tmp_path / "keys")
    assert made.warehouse_roots == ("s3://lake/warehouse/",)
    assert made.environment() == [f"export PIITRACER_AUDIT_KEY_FILE={tmp_path / 'keys' / 'audit.key'}",
                                  f"export PIITRACER_MASTER_KEY_FILE={tmp_path / 'keys' / 'master.key'}",
                                  f"export PIITRACER_SIGNING_KEY_FILE={tmp_path / 'keys' / 'signing.key'}"]
    assert load_workspace(tmp_path / "ws").config.warehouse_roots == ("s3://lake/warehouse/",)
