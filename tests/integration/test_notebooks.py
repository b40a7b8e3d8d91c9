"""The notebooks run top to bottom without errors (against a small demo lakehouse), and are kept in
git with their outputs stripped."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from paths import REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks() -> None:
    assert [p.name for p in NOTEBOOKS][:2] == ["01_plan_a_deletion.ipynb", "02_execute_and_verify.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_outputs_are_stripped_in_git(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: strip outputs before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_without_errors(path: Path, tmp_path: Path, monkeypatch) -> None:
    # A small lakehouse of its own, in a folder of this test (the kernel is another process with
    # its own Spark session).
    monkeypatch.setenv("PIITRACER_DEMO_DIR", str(tmp_path / "demo"))
    monkeypatch.setenv("PIITRACER_DEMO_ROWS", "3000")
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    client.execute()  # raises CellExecutionError naming the failing cell
    errors = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []
