"""``catalog.<id>.shredded`` (crypto-shredding, issue 42): the catalog says which columns are stored
as ciphertext under which column's subject key. A mistake in it is one clear line through the real
CLI, naming the file, the line, the field and what was expected (exit 2, no traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from piitracer.cli.main import cli
from piitracer.ingest.workspace.loader import load_workspace
from piitracer.model.workspace import Shredded

ENTRY = "catalog:\n  prod.payments:\n    format: parquet\n    location: data\n    columns: [user_id, card, email]\n"


def workspace(tmp_path: Path, shredded: str, entry: str = ENTRY) -> Path:
    (tmp_path / "data").mkdir(exist_ok=True)
    (tmp_path / "piitracer.yaml").write_text(f"{entry}    shredded: {shredded}\n")
    return tmp_path


def test_a_shredded_entry_loads_with_lowercased_names(tmp_path: Path) -> None:
    entry = load_workspace(workspace(tmp_path, "{key: User_ID, columns: [Card, email]}")).config.catalog["prod.payments"]
    assert entry.shredded == Shredded(key="user_id", columns=("card", "email"))


def test_without_declared_columns_the_names_cannot_be_checked(tmp_path: Path) -> None:
    entry = "catalog:\n  prod.payments:\n    format: parquet\n    location: data\n"
    loaded = load_workspace(workspace(tmp_path, "{key: uid, columns: [card]}", entry)).config.catalog["prod.payments"]
    assert loaded.shredded == Shredded(key="uid", columns=("card",))


@pytest.mark.parametrize("shredded, line", [
    ("{key: uid, columns: [card]}",
     ":2: catalog.prod.payments: shredded.key 'uid' is not in columns ['user_id', 'card', 'email']"),
    ("{key: user_id, columns: [card, crd]}",
     ":2: catalog.prod.payments: shredded.columns ['crd'] are not in columns ['user_id', 'card', 'email']"),
    ("{key: user_id, columns: [user_id, card]}",
     ":2: catalog.prod.payments: shredded.key 'user_id' cannot be one of shredded.columns: the key column holds the "
     "subject id the key is found by, so it stays readable"),
    ("{key: user_id, columns: []}",
     ":6: catalog.prod.payments.shredded.columns: expected at least one column stored as ciphertext under the key"),
    ("{key: user_id}", ":6: catalog.prod.payments.shredded.columns: required"),
    ("[card]", ":6: catalog.prod.payments.shredded: expected a mapping of keys"),
])
def test_a_mistake_is_one_clear_line(tmp_path: Path, shredded: str, line: str) -> None:
    root = workspace(tmp_path, shredded)
    result = CliRunner().invoke(cli, ["--workspace", str(root), "lineage", "stats"])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)  # no traceback
    assert result.exit_code == 2, result.output
    problems = [text for text in result.output.splitlines() if "piitracer.yaml" in text]
    assert problems == [f"  {root / 'piitracer.yaml'}{line}"], result.output
