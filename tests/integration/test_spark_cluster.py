"""piitracer on a real Spark standalone cluster (a master and two one-core workers on 127.0.0.1,
started and stopped here): the demo's plan — Iceberg merge-on-read and copy-on-write, Delta, plain
Parquet, an archive — built, executed, verified and audited against ``spark://127.0.0.1:P``, with
the same checks as the local tests; and the verifier's Spark tasks giving the same report as the
driver on leftovers planted in a Parquet footer's statistics and an Iceberg manifest's bounds.

The driver runs in its own process (``cluster_demo_driver.py``): a process has one Spark session
and the test session's is local. ``-m "not cluster"`` leaves these out of a quick local loop; CI
runs them."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from byte_scan import find_values
from spark_cluster import free_port, start_cluster

import piitracer
from piitracer.demo.workspace_files import prepare_workspace
from paths import SUPPORT

pytestmark = pytest.mark.cluster
HERE = SUPPORT
PERSON_STEPS = {"ml.payment_features", "stream.payments_cdc", "analytics.daily_revenue"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    running = start_cluster(tmp_path_factory.mktemp("spark-cluster"))
    yield running
    running.stop()
    assert all(process.poll() is not None for process in running.processes.values())


def drive(phase: str, folder: Path, master: str, out: Path) -> None:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, str(HERE / "cluster_demo_driver.py"), phase, str(folder), master, str(out)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]


@pytest.fixture(scope="module")
def erased(cluster, tmp_path_factory):
    """(workspace folder, driver output folder) after the demo's erasure ran on the cluster."""
    base = tmp_path_factory.mktemp("cluster-demo")
    folder, out = base / "demo", base / "out"
    drive("erase", folder, cluster.master_url, out)
    return folder, out


def rows(table) -> Counter:
    return Counter(json.dumps(row, sort_keys=True, default=str) for row in table.to_pylist())


def holds(row_text: str, forms: set[str]) -> bool:
    return any(str(value) in forms for value in json.loads(row_text).values())


def test_the_demo_runs_on_the_cluster_and_erases_the_subject_to_the_bytes(cluster, erased) -> None:
    folder, out = erased
    outcome = json.loads((out / "erase.json").read_text())
    assert outcome["master"] == cluster.master_url
    # The work ran in executors on the two workers: the master saw one application using both cores.
    apps = [app for app in cluster.applications() if app["name"] == "piitracer"]
    assert apps and all(app["cores"] == 2 for app in apps), apps
    # Every step piitracer performs committed; only the person steps wait for their owners.
    states = {step: state for step, (dataset, action, state) in outcome["steps"].items() if dataset not in PERSON_STEPS}
    assert set(states.values()) == {"committed"}, states
    assert {d for d, s in outcome["verification"].items() if s not in ("erased", "no_action")} == PERSON_STEPS
    assert outcome["audit_intact"] is True
    # The plain Parquet and archive rewrites ran as Spark tasks (the workspace says rewrite.engine: spark).
    rewrites = {step: ran for step, ran in outcome["ran_in"].items()
                if outcome["steps"][step][1] in ("rewrite_files", "rewrite_archive")}
    assert len(rewrites) >= 3 and set(rewrites.values()) == {"spark"}, rewrites

    forms_by_set = json.loads((out / "forms.json").read_text())
    forms = {str(v) for values in forms_by_set.values() for v in values}
    assert "8841302" in forms and len(forms_by_set) >= 4
    workspace = piitracer.load_workspace(folder)
    kinds = {workspace.config.catalog[d].format.value for d in outcome["erased"]}
    assert {"iceberg", "delta", "parquet", "archive"} <= kinds
    modes = {workspace.config.catalog[d].write_mode.value for d in outcome["erased"]
             if workspace.config.catalog[d].format.value == "iceberg"}
    assert modes == {"merge-on-read", "copy-on-write"}
    for dataset in outcome["erased"]:
        before = rows(pq.read_table(out / "before" / f"{dataset}.parquet"))
        after = rows(pq.read_table(out / "after" / f"{dataset}.parquet"))
        kept = Counter({row: n for row, n in before.items() if not holds(row, forms)})
        # Exactly the subject's rows went: every other row is still there, count and checksum.
        assert after == kept, (dataset, sum(before.values()), sum(after.values()), sum(kept.values()))
        assert hashlib.sha256("".join(sorted(after.elements())).encode()).hexdigest() == \
            hashlib.sha256("".join(sorted(kept.elements())).encode()).hexdigest()
        # The independent decoder finds no form of the subject in any file of the dataset.
        location = workspace.location_of(dataset)
        values = [v for values in forms_by_set.values() for v in values]
        assert find_values(Path(location), values) == [], dataset


def test_verification_in_spark_tasks_equals_the_driver_on_planted_leftovers(cluster, erased) -> None:
    folder, out = erased
    drive("plant", folder, cluster.master_url, out)
    reports = json.loads((out / "plant.json").read_text())
    driver, tasks = reports["driver"], reports["spark"]
    # The driver engine started no decoding job; the Spark engine decoded in one job per scan
    # (the plan's datasets, then the sweep's).
    assert (reports["driver decoding jobs"], reports["spark decoding jobs"]) == (0, 2)
    assert tasks == driver
    by_dataset = {d["dataset"]: d for d in driver["datasets"]}
    payments, card_usage = by_dataset["prod.payments"], by_dataset["risk.card_usage"]
    assert payments["state"] == "found" and card_usage["state"] == "found"
    assert {"statistics", "manifest_bound", "data"} <= {f["kind"] for f in payments["findings"]}
    assert {"statistics", "data"} <= {f["kind"] for f in card_usage["findings"]}
    assert any(f["file"].endswith("planted-leftover.parquet") for f in card_usage["findings"])
    assert driver["sweep"] == "catalog" and driver["swept"]


def test_an_unreachable_master_is_one_clear_error_naming_spark_master(tmp_path: Path) -> None:
    folder = prepare_workspace(tmp_path / "demo")
    master = f"spark://127.0.0.1:{free_port()}"  # nothing listens there
    config = folder / "piitracer.yaml"
    config.write_text(config.read_text().replace("  master: local[2]\n", f"  master: {master}\n"))
    done = subprocess.run([sys.executable, "-m", "piitracer.cli.main", "demo", "--dir", str(folder), "--rows", "100"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"spark.master {master}: cannot reach the Spark master" in lines[0]


def ancestors(pid: int) -> list[int]:
    """``pid``'s parent, grandparent... (from /proc)."""
    chain = []
    while pid > 1:
        stat = Path(f"/proc/{pid}/stat").read_text()
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        chain.append(pid)
    return chain


def test_a_worker_lost_mid_verification_gives_the_same_report(cluster, erased) -> None:
    """The cluster loses a worker (the next test adds one back). The task decoding the planted file is held (a
    pausepoint in the executors' environment); its worker and executor are killed with SIGKILL
    (a node lost); Spark runs the lost tasks on the other worker, and the report is the same as
    the driver's."""
    folder, out = erased
    if not (out / "plant.json").exists():
        pytest.skip("needs the planted leftovers of the previous test")
    pause = out / "pause"
    pause.mkdir()
    held = pause / "verify.task@planted-leftover.parquet.paused"
    task, worker = run_losing_a_worker(cluster, "lose-worker", folder, out, held)
    # The task ran again (in another process: the lost worker's executor is gone, so on the other).
    assert worker.startswith("worker") and held.exists() and int(held.read_text()) != task
    again = json.loads((out / "lost_worker.json").read_text())
    assert again == json.loads((out / "plant.json").read_text())["driver"]


def run_losing_a_worker(cluster, phase: str, folder: Path, out: Path, held: Path) -> tuple[int, str]:
    """Run the driver's ``phase`` while killing the worker of the task held at ``held`` (see
    :func:`kill_worker_holding`); the driver must still succeed."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    driver = subprocess.Popen([sys.executable, str(HERE / "cluster_demo_driver.py"), phase, str(folder), cluster.master_url,
                               str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        lost = kill_worker_holding(cluster, held, driver)
        _, errors = driver.communicate(timeout=300)
        assert driver.returncode == 0, errors[-3000:]
        return lost
    finally:
        if driver.poll() is None:
            driver.kill()


def kill_worker_holding(cluster, held: Path, driver: subprocess.Popen) -> tuple[int, str]:
    """Wait until a task is held at a pausepoint (``held`` holds its process id), then SIGKILL that
    task, its executor and its worker (a node lost) and let the point go; (task pid, worker name)."""
    deadline = time.monotonic() + 240
    while not held.exists() or not held.read_text():
        assert driver.poll() is None, driver.stderr.read()[-3000:]
        assert time.monotonic() < deadline, f"no task reached {held.name}"
        time.sleep(0.2)
    task = int(held.read_text())
    daemons = {process.pid: name for name, process in cluster.processes.items()}
    chain = ancestors(task)
    lost = next(pid for pid in chain if pid in daemons)
    executor = chain[chain.index(lost) - 1]  # the worker's child: the executor's JVM
    for pid in (executor, lost, task):
        os.kill(pid, signal.SIGKILL)
    held.unlink()
    held.with_suffix(".go").touch()
    return task, daemons[lost]


def test_a_worker_lost_mid_rewrite_loses_nothing(cluster, erased) -> None:
    """Runs after the verification one (a worker is added back). The planted file holds the
    subject again; risk.card_usage is rewritten in Spark tasks, and the worker whose task has
    written the replacement but not put it in place is killed: Spark reruns the task on the other
    worker, the subject's rows are gone, every other row is there, and no temporary is left."""
    folder, out = erased
    if not (out / "plant.json").exists():
        pytest.skip("needs the planted leftovers of the earlier test")
    cluster.add_worker()
    location = piitracer.load_workspace(folder).location_of("risk.card_usage")
    before = rows(pq.read_table(location))
    (out / "pause-rewrite").mkdir()
    held = out / "pause-rewrite" / "parquet.after_temp_write@card_usage.paused"
    task, worker = run_losing_a_worker(cluster, "lose-worker-rewriting", folder, out, held)
    assert worker.startswith("worker") and held.exists() and int(held.read_text()) != task  # rerun elsewhere
    outcome = json.loads((out / "rewrite.json").read_text())
    assert outcome["ran_in"] == "spark" and outcome["files"] == 1 and outcome["rows_deleted"] >= 1
    forms = set(outcome["values"])
    after = rows(pq.read_table(location))
    assert after == Counter({row: n for row, n in before.items() if not holds(row, forms)})
    assert sum(before.values()) - sum(after.values()) == outcome["rows_deleted"]
    assert find_values(Path(location), json.loads((out / "forms.json").read_text())["prod.payments.pan"]) == []
    assert not [p for p in Path(location).rglob("*") if p.name.endswith(".piitracer-tmp")]
