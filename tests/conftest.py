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
