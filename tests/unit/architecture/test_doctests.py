"""The examples in docstrings run (issue 39.5): every module of the pure rooms (model, graph,
planner) and the workspace room is run through :mod:`doctest`, so an example that no longer holds
fails the suite instead of misleading its reader."""

from __future__ import annotations

import doctest
import importlib

import pytest

from paths import PACKAGE

ROOMS = ("model", "graph", "planner", "workspace")


def modules() -> list[str]:
    found = []
    for room in ROOMS:
        for path in sorted((PACKAGE / room).rglob("*.py")):
            parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
            found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


@pytest.mark.parametrize("name", modules())
def test_the_examples_in_its_docstrings_hold(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed (run doctest -v on it)"

