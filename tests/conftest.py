"""Shared fixtures: one warehouse folder for the whole test session (Spark runs one session per
process, bound to one Iceberg warehouse)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("warehouse")
