"""Names of tables kept in Iceberg catalogs (issue 38.1): the dataset is ``namespace.table`` as the
catalog and SQL name it; the catalog's name in front (``prod.fintech.payments``) is dropped from
lineage names and accepted where a person names a dataset or column (``--source``), whether the
catalog is configured in ``piitracer.yaml`` (``iceberg.catalogs``) or only where pyiceberg looks
(``PYICEBERG_CATALOG__*``, ``.pyiceberg.yaml``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

import piitracer
from piitracer.model.naming import DatasetNamer

PIPELINE = """
CREATE TABLE prod.fintech.payments_daily AS
SELECT user_id, sum(amount) AS total FROM prod.fintech.payments GROUP BY user_id;
"""


@pytest.fixture(autouse=True)
def own_pyiceberg_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.upper().startswith("PYICEBERG_"):
            monkeypatch.delenv(key)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("PYICEBERG_HOME", str(home))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(home)


def workspace(root: Path, **more) -> Path:
    (root / "sql").mkdir(parents=True, exist_ok=True)
    (root / "sql" / "pipeline.sql").write_text(PIPELINE)
    config = {"version": 1, "lineage": {"sql": [{"path": "sql", "dialect": "spark"}]},
              "catalog": {"fintech.payments": {"format": "iceberg", "table": "prod.fintech.payments",
                                               "location": "lake/fintech/payments", "columns": ["user_id", "amount"],
                                               "identifiers": ["user_id"], "subject_key": "user_id"}}, **more}
    (root / "piitracer.yaml").write_text(yaml.safe_dump(config))
    return root


def test_a_person_names_a_column_with_or_without_its_catalog() -> None:
    namer = DatasetNamer(catalog_ids=frozenset({"fintech.payments", "payments"}),
                         tables={"fintech.payments": "fintech.payments", "prod.fintech.payments": "fintech.payments",
                                 "dev.fintech.payments": "payments", "payments": "payments"},
                         spark_catalogs=("spark_catalog", "prod", "dev"))
    assert namer.from_column_name("prod.fintech.payments.user_id") == "fintech.payments.user_id"
    assert namer.from_column_name("Prod.Fintech.Payments.User_Id") == "fintech.payments.user_id"
    assert namer.from_column_name("fintech.payments.user_id") == "fintech.payments.user_id"
    assert namer.from_column_name("dev.fintech.payments.user_id") == "payments.user_id"  # its table: identifier
    assert namer.from_column_name("prod.fintech.payments") == "fintech.payments"  # a dataset, no column
    assert namer.from_column_name("stage.fintech.payments.user_id") == "stage.fintech.payments.user_id"  # unknown: as given


def test_a_catalog_configured_only_in_the_environment_names_lineage_and_sources(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    ws = workspace(tmp_path)
    before = piitracer.load_workspace(ws)
    assert before.namer.from_table_name("prod.fintech.payments_daily") == "prod.fintech.payments_daily"  # can fail
    monkeypatch.setenv("PYICEBERG_CATALOG__PROD__URI", "sqlite:///nowhere.db")
    loaded = piitracer.load_workspace(ws)  # the kept workspace: the environment is read on every load
    assert loaded.namer.from_table_name("prod.fintech.payments_daily") == "fintech.payments_daily"
    graph = piitracer.build_lineage_graph(loaded)
    assert graph.has_dataset("fintech.payments_daily") and not graph.has_dataset("prod.fintech.payments_daily")
    assert piitracer.parse_column(loaded.namer.from_column_name("prod.fintech.payments.user_id"), graph).dataset \
        == "fintech.payments"


def test_a_catalog_in_pyiceberg_yaml_or_the_workspace_names_lineage_too(tmp_path: Path) -> None:
    (Path(os.environ["PYICEBERG_HOME"]) / ".pyiceberg.yaml").write_text("catalog:\n  lakehouse:\n    uri: sqlite:///x.db\n")
    ws = workspace(tmp_path / "a", iceberg={"catalogs": {"Prod": {"type": "sql", "uri": "sqlite:///prod.db"}}})
    loaded = piitracer.load_workspace(ws)
    assert loaded.namer.from_table_name("prod.fintech.payments_daily") == "fintech.payments_daily"
    assert loaded.namer.from_table_name("lakehouse.crm.people") == "crm.people"
    assert loaded.namer.from_table_name("other.crm.people") == "other.crm.people"
