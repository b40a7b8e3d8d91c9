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


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # only called when pytest-xdist runs workers (-n)
def pytest_xdist_make_scheduler(config, log):
    """With ``-n 2`` (the README's test command): every integration test in one worker, in file
    order, on that worker's one Spark session and warehouse, exactly as without xdist (they share
    one JVM, fixed namespaces and a 2-core machine, so they must not run side by side); each unit
    test module a work unit of its own, run by whichever worker is free (the other one, while the
    integration tests run). xdist's ``--dist loadgroup`` would do this with an ``xdist_group``
    mark, but xdist 3.8 groups by rewriting ``item._nodeid``, which pytest 9.2 no longer reads."""
    from xdist.scheduler import LoadScopeScheduling

    class IntegrationInOneWorker(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return "integration" if module.startswith("tests/integration/") else module

    return IntegrationInOneWorker(config, log)
