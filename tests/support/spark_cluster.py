"""A real Spark standalone cluster on 127.0.0.1 for tests: one master and two workers started from
the installed pyspark (``$SPARK_HOME/bin/spark-class``), one core and 1 GiB each, their executors
running this virtualenv's Python (the system Python has no pyarrow, no piitracer).

Started once per test session that asks for it, stopped by process id at the end."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).parent
REGISTER_TIMEOUT = 90  # seconds for both workers to register (about 7 s each when the machine is idle)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class SparkCluster:
    """A running master and its workers."""

    master_url: str
    web_url: str
    folder: Path
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    def state(self) -> dict:
        """The master's JSON status page (workers, applications)."""
        with urllib.request.urlopen(f"{self.web_url}/json/", timeout=10) as response:
            return json.load(response)

    def alive_workers(self) -> int:
        return sum(1 for worker in self.state()["workers"] if worker["state"] == "ALIVE")

    def applications(self) -> list[dict]:
        state = self.state()
        return [*state.get("activeapps", []), *state.get("completedapps", [])]

    def worker_ids(self) -> set[str]:
        return {worker["id"] for worker in self.state()["workers"] if worker["state"] == "ALIVE"}

    def add_worker(self) -> None:
        """Start one more worker and wait until it has registered (to replace one a test killed)."""
        known = self.worker_ids()
        number = len(self.processes)
        self.launch(f"worker{number}", "org.apache.spark.deploy.worker.Worker", self.master_url, "--host", "127.0.0.1",
                    "--cores", "1", "--memory", "1g", "--webui-port", str(free_port()),
                    "--work-dir", str(self.folder / f"work{number}"))
        deadline = time.monotonic() + REGISTER_TIMEOUT
        while not self.worker_ids() - known:
            if time.monotonic() > deadline:
                raise RuntimeError(f"a new Spark worker did not register within {REGISTER_TIMEOUT} s")
            time.sleep(1)

    def launch(self, name: str, *arguments: str) -> None:
        log = open(self.folder / f"{name}.log", "wb")
        # spark-class execs the JVM: the process id is the daemon's.
        self.processes[name] = subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), *arguments],
                                                env=environment(self.folder), stdout=log, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL)

    def stop(self) -> None:
        for name, process in reversed(list(self.processes.items())):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def environment(folder: Path) -> dict[str, str]:
    """What the daemons and their executors need: this Python for tasks, Spark's home, a private
    log and work folder."""
    env = dict(os.environ)
    env.update(PYSPARK_PYTHON=sys.executable, SPARK_HOME=str(SPARK_HOME), SPARK_LOG_DIR=str(folder / "logs"),
               SPARK_WORKER_DIR=str(folder / "work"), SPARK_LOCAL_DIRS=str(folder / "local"))
    return env


def start_cluster(folder: Path, workers: int = 2) -> SparkCluster:
    """Start a master and ``workers`` workers; return once every worker has registered."""
    folder.mkdir(parents=True, exist_ok=True)
    port, web = free_port(), free_port()
    cluster = SparkCluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{web}", folder)
    launch = cluster.launch
    try:
        launch("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
               "--webui-port", str(web))
        for number in range(1, workers + 1):
            launch(f"worker{number}", "org.apache.spark.deploy.worker.Worker", cluster.master_url, "--host", "127.0.0.1",
                   "--cores", "1", "--memory", "1g", "--webui-port", str(free_port()),
                   "--work-dir", str(folder / f"work{number}"))
        deadline = time.monotonic() + REGISTER_TIMEOUT
        while True:
            for name, process in cluster.processes.items():
                if process.poll() is not None:
                    raise RuntimeError(f"spark {name} exited: {(folder / f'{name}.log').read_text()[-2000:]}")
            try:
                if cluster.alive_workers() == workers:
                    return cluster
            except OSError:
                pass  # the master's web page is not up yet
            if time.monotonic() > deadline:
                raise RuntimeError(f"{workers} Spark workers did not register within {REGISTER_TIMEOUT} s")
            time.sleep(1)
    except BaseException:
        cluster.stop()
        raise
