"""Shared fixtures: one warehouse folder for the whole test session (Spark runs one session per
process, bound to one Iceberg warehouse), and a master key for the session.

The CLI stores subject values only encrypted: every command that keeps or reads them needs the
master key (``--master-key-file`` or the environment). Tests that are not about keys get one
random master key for the whole session through ``PIITRACER_MASTER_KEY`` (children inherit it);
tests about keys set or remove it themselves."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest


# Set when the test session starts, before any test module builds its subprocess environment.
os.environ.setdefault("PIITRACER_MASTER_KEY", secrets.token_hex(32))
# Every Spark driver the tests start (in-process and in child processes: spark-submit reads it,
# silently) is a short-lived JVM on small tables: the C1 compiler alone and the serial collector
# spend far less CPU warming up on 2 shared cores (the product's own Spark sessions are untouched).
os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("warehouse")


@pytest.fixture(scope="session")
def postgres():
    """A throwaway PostgreSQL server for the session (tests/support/postgres_server.py): the Iceberg
    JDBC catalog Spark and pyiceberg share. Each test module makes its own database in it."""
    from postgres_server import postgres_server

    with postgres_server() as server:
        yield server


INTEGRATION = Path(__file__).resolve().parent / "integration"


def pytest_collection_modifyitems(config, items) -> None:
    """Every test under tests/integration is marked ``integration``: a local loop runs
    ``pytest tests/unit`` or ``-m "not integration"``; CI runs everything."""
    for item in items:
        if INTEGRATION in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.integration)


# The integration modules the second integration worker runs with ``-n 2``: chosen so that both
# workers take about as long (``pytest tests/integration --durations=0``, 2026-11-28: ~860 s each
# of 1,711 s; the cluster, the browser, the notebooks and the S3 modules here, most of the
# in-process Spark work in the first). A module not named here runs in the first worker.
SECOND_INTEGRATION_WORKER = frozenset({
    "test_attest.py", "test_batch.py", "test_catalog_asks.py", "test_console_at_volume.py",
    "test_console_browser.py", "test_copied_workspace.py", "test_discover.py", "test_errors.py",
    "test_four_eyes.py", "test_iceberg_catalog_s3.py", "test_iceberg_s3_pyiceberg.py",
    "test_join_equivalence.py", "test_lifecycle_without_java.py", "test_notebooks.py", "test_object_storage.py",
    "test_plan_origin.py", "test_replicas.py", "test_requests.py", "test_roots_always.py", "test_serve.py",
    "test_serve_limits.py", "test_shred_erasure.py", "test_spark_cluster.py", "test_sweep_precision.py",
    "test_tutorial.py", "test_verify_scope.py",
})


def integration_group(nodeid: str) -> str | None:
    """Which integration worker runs a test (``integration-1`` or ``integration-2``), None for a
    unit test."""
    module = nodeid.split("::", 1)[0]
    if not module.startswith("tests/integration/"):
        return None
    return "integration-2" if module.rsplit("/", 1)[-1] in SECOND_INTEGRATION_WORKER else "integration-1"


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # only called when pytest-xdist runs workers (-n)
def pytest_xdist_make_scheduler(config, log):
    """With ``-n 2`` (the README's test command): the integration tests in two groups, each run
    whole by one worker in file order on that worker's own Spark session and warehouse, with the
    servers its tests start (every port is picked free, every folder is the worker's own: nothing
    is shared between the two processes); each unit test module a work unit of its own, run by whichever
    worker is free first. Scopes are handed out in collection order (the integration groups
    first, one to each worker); xdist's reordering by test count is turned off so that stays true.
    xdist's ``--dist loadgroup`` would group with an ``xdist_group`` mark, but xdist 3.8 groups by
    rewriting ``item._nodeid``, which pytest 9.2 no longer reads."""
    from xdist.scheduler import LoadScopeScheduling

    missing = sorted(name for name in SECOND_INTEGRATION_WORKER if not (INTEGRATION / name).exists())
    if missing:  # a renamed module would silently move to the first worker
        raise pytest.UsageError(f"tests/conftest.py SECOND_INTEGRATION_WORKER names no such module: {', '.join(missing)}")
    config.option.loadscopereorder = False

    class IntegrationInTwoWorkers(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return integration_group(nodeid) or nodeid.split("::", 1)[0]

    return IntegrationInTwoWorkers(config, log)
