"""Where things are, for tests and their support modules: the repository, the tests folder, the
support modules (on ``sys.path`` through pytest's ``pythonpath``) and the test data."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
SUPPORT = TESTS / "support"
DATA = TESTS / "data"
PACKAGE = REPO / "piitracer"
