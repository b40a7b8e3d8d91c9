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



# The modules a newcomer reads first: what a name becomes, what a key value is, what a plan id is,
# what a column reaches, what a plan decides and in which order. Each teaches by example.
FIRST_READ = ("piitracer.model.naming", "piitracer.model.key_values", "piitracer.model.workspace", "piitracer.model.plan",
              "piitracer.graph.lineage_graph", "piitracer.planner.build", "piitracer.planner.ordering",
              "piitracer.planner.expressions")


def examples_in(name: str) -> int:
    finder = doctest.DocTestFinder()
    return sum(len(test.examples) for test in finder.find(importlib.import_module(name)))


def test_the_pure_rooms_teach_by_example() -> None:
    per_room = {room: sum(examples_in(name) for name in modules() if name.split(".")[1] == room)
                for room in ("model", "graph", "planner")}
    assert all(count > 0 for count in per_room.values()), per_room
    assert [name for name in FIRST_READ if examples_in(name) == 0] == []
