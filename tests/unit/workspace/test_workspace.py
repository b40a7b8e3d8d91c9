"""piitracer.yaml validation: the fixtures load; bad files name file, line, field and expectation."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from piitracer.workspace.model import WorkspaceError

from piitracer.ingest.workspace.loader import load_workspace
from piitracer.model.workspace import DatasetFormat
from paths import REPO

FIXTURES = REPO / "lineage_fixtures"


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "piitracer.yaml").write_text(text)
    return tmp_path


def error_of(folder: Path) -> str:
    with pytest.raises(WorkspaceError) as caught:
        load_workspace(folder)
    return str(caught.value)


def test_fixture_workspace_loads() -> None:
    workspace = load_workspace(FIXTURES)
    catalog = workspace.config.catalog
    assert catalog["prod.payments"].subject_key == "user_id"
    assert catalog["prod.payments"].identifiers == ("user_id", "pan", "phone", "aadhaar_ref")
    assert catalog["archive.payments_weekly"].archive_of.retention == timedelta(days=90)
    assert catalog["dev.payments_shallow"].clone_of.mode.value == "shallow"
    assert workspace.config.policy.deadline == timedelta(days=30)
    formats = {entry.format for entry in catalog.values()}
    assert formats == set(DatasetFormat)
    assert workspace.location_of("prod.payments") == FIXTURES / "warehouse" / "prod" / "payments"


def test_defaults_for_an_empty_workspace(tmp_path: Path) -> None:
    workspace = load_workspace(write(tmp_path, "version: 1\n"))  # an empty file is refused (test_first_hour.py)
    assert workspace.config.policy.deadline == timedelta(days=30)
    assert workspace.config.spark.master == "local[2]"
    assert workspace.config.lineage.sql == ()


def test_unknown_format_names_file_line_and_field(tmp_path: Path) -> None:
    message = error_of(write(tmp_path, "catalog:\n  prod.t:\n    format: icebrg\n    location: x\n"))
    assert f"{tmp_path / 'piitracer.yaml'}:3: catalog.prod.t.format:" in message
    assert "'iceberg'" in message and "'icebrg'" in message


def test_bad_duration_is_explained(tmp_path: Path) -> None:
    message = error_of(write(tmp_path, "policy:\n  deadline: soon\n"))
    assert ":2: policy.deadline: expected a duration such as '30d'" in message


def test_wrong_type_and_unknown_key(tmp_path: Path) -> None:
    message = error_of(write(tmp_path, "catalog:\n  a.b:\n    format: delta\n    location: x\n    colums: [a]\n"))
    assert ":5: catalog.a.b.colums: not a catalog field: did you mean 'columns'?" in message
    message = error_of(write(tmp_path, "lineage:\n  sql: 7\n"))
    assert "lineage.sql:" in message


def test_subject_key_must_be_an_identifier(tmp_path: Path) -> None:
    text = "catalog:\n  a.b:\n    format: delta\n    location: x\n    identifiers: [pan]\n    subject_key: user_id\n"
    assert "subject_key 'user_id' must be one of identifiers ['pan']" in error_of(write(tmp_path, text))


def test_clone_of_an_unknown_dataset(tmp_path: Path) -> None:
    text = "catalog:\n  dev.c:\n    format: iceberg\n    location: x\n    clone_of: {dataset: prod.nope, mode: shallow}\n"
    assert "refers to 'prod.nope', which is not in the catalog" in error_of(write(tmp_path, text))


def test_external_needs_an_owner(tmp_path: Path) -> None:
    assert "needs an 'owner'" in error_of(write(tmp_path, "catalog:\n  s.t:\n    format: external\n"))


def test_missing_file_and_bad_yaml(tmp_path: Path) -> None:
    assert "no workspace file here" in error_of(tmp_path)
    assert "not valid YAML" in error_of(write(tmp_path, "catalog: [\n"))
