"""One home per table format: every catalog format has a module in ``piitracer/formats/`` (found by
the registry), every stored format has a step template in ``piitracer/planner/templates/``, the
template never plans an action its format cannot run or describe, and no layer above branches on
a stored format by name. Also the storage layer's reach: only ``storage`` (and the demo builder)
walks, replaces or removes files itself."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from piitracer.formats import TableFiles, support_for, supported_formats
from piitracer.model.plan import NO_FILE_WORK, Action
from piitracer.model.table_state import RefType, TableRef, TableState
from piitracer.model.workspace import CatalogDataset, DatasetFormat, Policy, RefHandling
from piitracer.planner.templates import template_for, templated_formats

from paths import PACKAGE  # noqa: E402
STORED = [f for f in DatasetFormat if f.stores_rows]
# Where a stored format may be named: its own modules, the catalog model, and the demo builder
# (which creates tables of each format).
FORMAT_HOMES = ("model/", "formats/", "planner/templates/", "demo/")


def test_every_catalog_format_has_a_module_and_every_stored_one_a_template() -> None:
    assert supported_formats() == sorted(DatasetFormat, key=lambda f: f.value)
    assert templated_formats() == sorted(STORED, key=lambda f: f.value)


def _entries(fmt: DatasetFormat) -> list[CatalogDataset]:
    """Catalog entries that bring out every step of a format's template."""
    base = {"format": fmt.value, "location": "x", "table": "lake.db.t"}
    if fmt is DatasetFormat.ARCHIVE:
        base["archive_of"] = {"dataset": "db.src", "schedule": "7d", "retention": "365d", "restore_delay": "12h"}
    entries = [CatalogDataset.model_validate(base)]
    if fmt is DatasetFormat.ICEBERG:
        entries.append(CatalogDataset.model_validate({**base, "write_mode": "copy-on-write",
                                                      "clone_of": {"dataset": "db.src", "mode": "shallow"}}))
        entries.append(CatalogDataset.model_validate({**base, "write_mode": "merge-on-read", "delete_mode": "equality"}))
    return entries


@pytest.mark.parametrize("fmt", STORED, ids=lambda f: f.value)
def test_a_template_plans_only_actions_its_format_runs_and_describes(fmt: DatasetFormat) -> None:
    support = support_for(fmt)
    state = TableState(dataset="db.t", current_snapshot_id=2, refs=(
        TableRef(name="eom", type=RefType.TAG, snapshot_id=1), TableRef(name="dev", type=RefType.BRANCH, snapshot_id=1)))
    planned: set[Action] = set()
    for entry in _entries(fmt):
        for policy in (Policy(), Policy(refs=RefHandling.RELEASE)):  # tags rewritten, or released
            planned |= {step.action for step in template_for(fmt).steps(entry, state, policy)}
    assert planned, f"{fmt.value}: the template plans nothing"
    assert planned - NO_FILE_WORK <= support.actions, f"{fmt.value}: planned actions it cannot run: {planned - support.actions}"
    assert set(support.describe) == set(support.perform), f"{fmt.value}: an action without its dry-run text"
    # The verifier's removers name only actions this format's plans have: a leftover attributed
    # to an action the plan never has would be 'found' even while the real step is pending.
    for removers in (support.file_removers(TableFiles(), "data/x.parquet"),
                     support.logical_removers(True, False), support.logical_removers(False, True)):
        assert set(removers) <= planned, f"{fmt.value}: removers {removers} outside the plan's actions {planned}"


def test_formats_without_rows_have_no_actions() -> None:
    for fmt in DatasetFormat:
        if not fmt.stores_rows:
            assert support_for(fmt).actions == frozenset() and template_for(fmt) is None


def _python_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def stored_format_branches(source: str) -> list[int]:
    """Lines of ``source`` that name a stored format (``DatasetFormat.DELTA``...)."""
    names = {f.name for f in STORED}
    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and node.attr in names and isinstance(node.value, ast.Name)
            and node.value.id == "DatasetFormat"]


def test_no_layer_above_the_formats_branches_on_a_stored_format() -> None:
    problems = [f"{path.relative_to(PACKAGE)}:{line}" for path in _python_files()
                if not path.relative_to(PACKAGE).as_posix().startswith(FORMAT_HOMES)
                for line in stored_format_branches(path.read_text())]
    assert problems == [], "per-format behaviour belongs in piitracer/formats/ or planner/templates/: " + "; ".join(problems)


def test_the_branch_check_catches_one() -> None:
    assert stored_format_branches("if entry.format is DatasetFormat.DELTA:\n    pass\n") == [1]
    assert stored_format_branches("x = {DatasetFormat.VIEW: 1}\n") == []  # a view is not a stored format


FILE_WORK = re.compile(r"\b(rglob|os\.walk|os\.replace|os\.remove)\b")


def test_only_the_storage_layer_walks_replaces_or_removes_files() -> None:
    found = [f"{path.relative_to(PACKAGE)}:{number}" for path in _python_files()
             if not path.relative_to(PACKAGE).as_posix().startswith(("storage/", "demo/"))
             for number, line in enumerate(path.read_text().splitlines(), start=1) if FILE_WORK.search(line)]
    assert found == []
