"""A full run (plan, execute, verify, audit) through the real CLI with every log at DEBUG —
piitracer's, py4j's (every command sent to the JVM) and Spark's own log4j — writes no raw subject
value to stdout, stderr or the log file; afterwards the only file anywhere under the test's
folders (workspace, lakehouse, Spark's local dir, temp dir) whose bytes still hold a subject value
in clear is the request file the operator gave (mode 0600): the plan file, the request store and
the journal keep the values only encrypted under each request's data key. And the audit key has no
default: ``execute`` without one refuses before anything runs.

The lakehouse holds Iceberg (merge-on-read source, copy-on-write copy, shallow clone), Delta,
plain Parquet and an archive, so every eraser runs. Subject values are searched as text (user
ids, PANs); the binary forms inside table files are the verifier's business (tests/integration/test_verify.py).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import delta_parquet_lakehouse
import yaml
from spark_lakehouse import SUBJECT_PANS, SUBJECTS, build, new_namespace, spark_for, workspace, write_workspace

CLI = [sys.executable, "-m", "piitracer.cli.main"]
NEEDLES = [str(s).encode() for s in SUBJECTS] + [p.encode() for p in SUBJECT_PANS]


def combined_workspace(tmp_path: Path, warehouse: Path, ns: str, lake: dict[str, Path], spark_local: Path) -> Path:
    """One workspace over the Iceberg tables of ``ns`` and the Delta/Parquet/archive lakehouse."""
    parts = [workspace(tmp_path / "iceberg", warehouse, ns), delta_parquet_lakehouse.workspace(tmp_path / "delta", warehouse, lake)]
    configs = [yaml.safe_load((p / "piitracer.yaml").read_text()) for p in parts]
    catalog = {**configs[0]["catalog"], **configs[1]["catalog"]}
    sql = "".join((p / "sql" / "pipelines.sql").read_text() for p in parts)
    root = write_workspace(tmp_path / "ws", warehouse, catalog, sql)
    config = yaml.safe_load((root / "piitracer.yaml").read_text())
    config["spark"]["conf"]["spark.local.dir"] = str(spark_local)  # Spark's scratch files, scanned below
    (root / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return root


def private_file(path: Path, text: str) -> Path:
    path.touch(mode=0o600)
    path.write_text(text)
    return path


def files_holding_values(*roots: Path) -> dict[Path, int]:
    """Every file under ``roots`` whose bytes contain a needle -> its permission bits."""
    found = {}
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                if any(needle in data for needle in NEEDLES):
                    found[path] = stat.S_IMODE(path.stat().st_mode)
    return found


def test_a_full_run_at_debug_logs_no_subject_value(tmp_path: Path, warehouse: Path) -> None:
    spark = spark_for(warehouse)
    ns = new_namespace("leak")
    build(spark, warehouse, ns)
    lake = delta_parquet_lakehouse.build(tmp_path / "lake")
    spark_local, temp = tmp_path / "spark-local", tmp_path / "tmp"
    spark_local.mkdir()
    temp.mkdir()
    root = combined_workspace(tmp_path, warehouse, ns, lake, spark_local)
    requests = private_file(tmp_path / "requests.csv", "value,request_id,received_at\n" +
                            "".join(f"{s},dsr-{i},2026-11-20T09:00:00Z\n" for i, s in enumerate(SUBJECTS)))
    plan_file, log_file = tmp_path / "plan.json", tmp_path / "piitracer.log"
    env = {**os.environ, "PIITRACER_AUDIT_KEY": "leak-test-audit-key-0123456789", "TMPDIR": str(temp)}
    base = [*CLI, "--log-level", "DEBUG", "--log-file", str(log_file), "--workspace", str(root)]

    outputs = []
    keyless = {k: v for k, v in env.items() if not k.startswith("PIITRACER_AUDIT")}
    for command in (
        ["plan", "--source", f"{ns}.src.user_id", "--source", "crm.people.user_id", "--requests", str(requests), "-o", str(plan_file)],
        ["execute", str(plan_file), "--no-concurrent-writers"],
        ["verify", str(plan_file)],
        ["audit", "verify"],
        ["audit", "report", "--request", "dsr-0", "-o", str(tmp_path / "report.html")],
    ):
        done = subprocess.run([*base, *command], capture_output=True, cwd=tmp_path, env=env, timeout=900)
        assert done.returncode == 0, (command, done.stderr.decode(errors="replace")[-3000:])
        outputs.append((command[0], done.stdout + done.stderr))
        if command[0] == "plan":  # the audit key has no default: without one, nothing runs
            refused = subprocess.run([*base, "execute", str(plan_file)], capture_output=True, text=True, cwd=tmp_path, env=keyless)
            assert refused.returncode == 2 and "no audit key" in refused.stderr and "Traceback" not in refused.stderr
            assert not (root / ".piitracer" / "journal.sqlite").exists()

    log = log_file.read_bytes()
    # The logs are really at DEBUG, from all three sources: otherwise this test proves nothing.
    assert b"piitracer.executor.runner: step" in log and b"DEBUG py4j" in log
    assert any(b" DEBUG " in out and b"org.apache" in out for _, out in outputs), "Spark's log4j was not at DEBUG"
    for command, out in [*outputs, ("log file", log)]:
        leaked = [n.decode() for n in NEEDLES if n in out]
        assert leaked == [], f"{command}: subject values in the output or log ({len(leaked)} of {len(NEEDLES)})"

    holding = files_holding_values(tmp_path, warehouse / ns)
    assert set(holding) == {requests}, f"subject values in clear in: {sorted(map(str, set(holding) - {requests}))}"
    for sealed in (plan_file, root / ".piitracer" / "journal.sqlite", root / ".piitracer" / "requests.sqlite"):
        assert b"enc:v1:" in sealed.read_bytes(), sealed  # the values are there, encrypted
    assert all(mode == 0o600 for mode in holding.values()), {str(p): oct(m) for p, m in holding.items()}
    assert stat.S_IMODE(log_file.stat().st_mode) == 0o600
