"""Iceberg catalogs as pyiceberg users configure them, and the table's state from its catalog
(issue 38, points 1 and 3), on a real pyiceberg ``sql`` catalog (SQLite) over a local folder.

- the three ways to configure a catalog (workspace ``iceberg.catalogs``, ``.pyiceberg.yaml``,
  ``PYICEBERG_CATALOG__*``) merge, pyiceberg's own configuration over the workspace's;
- a table a catalog keeps is read from the metadata file the catalog names: a newer stray file in
  its folder (another writer's uncommitted commit) is reported, never read;
- a workspace location that disagrees with the catalog's, and a catalog pointer outside the
  table's location, are refused naming both;
- no credential reaches an error message.
"""

from __future__ import annotations

import os
import shutil
from typing import Iterator
from pathlib import Path

import pytest
from iceberg_catalog_lakehouse import build, catalog_environment, write_stray_metadata
from pyiceberg.catalog.sql import SqlCatalog

from piitracer.formats import FormatError, table_schema
from piitracer.formats.iceberg import SUPPORT
from piitracer.formats.iceberg_catalogs import CatalogError, IcebergCatalogs, redacted
from piitracer.formats.iceberg_metadata import table_state
from piitracer.formats.iceberg_table import newest_metadata_file
from piitracer.model.settings import IcebergSettings
from piitracer.model.workspace import CatalogDataset
from piitracer.storage.locations import Location
from piitracer.storage.store import Store


@pytest.fixture(autouse=True)
def own_pyiceberg_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Only what a test sets: no PYICEBERG_* of the machine, no .pyiceberg.yaml of the home folder."""
    for key in list(os.environ):
        if key.upper().startswith("PYICEBERG_"):
            monkeypatch.delenv(key)
    home = tmp_path / "pyiceberg-home"
    home.mkdir()
    monkeypatch.setenv("PYICEBERG_HOME", str(home))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(home)
    yield
    # lakehouse() sets its catalog's variables on os.environ itself, which monkeypatch does not undo:
    # left behind, they configure a catalog for every later test of the process (its discovery lists
    # this test's tables, its namer drops the catalog's name). The machine's own are restored after.
    for key in [key for key in os.environ if key.upper().startswith("PYICEBERG_")]:
        del os.environ[key]


def lakehouse(root: Path):
    """The ``prod`` catalog with its tables under ``root/lake``; the environment configures it."""
    catalog = SqlCatalog("prod", uri=f"sqlite:///{root}/prod.db", warehouse=f"file://{root}/lake")
    built = build(catalog)
    for key, value in catalog_environment(f"sqlite:///{root}/prod.db", f"file://{root}/lake").items():
        os.environ[key] = value  # restored by the fixture's monkeypatch (it removed every PYICEBERG_*)
    return catalog, built


def bound_store(location: str, identifier: str = "prod.fintech.payments") -> Store:
    return Store(pointers=IcebergCatalogs(bindings={Location.parse(location): identifier}))


def test_three_ways_to_configure_a_catalog_and_which_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = IcebergSettings(catalogs={"prod": {"type": "sql", "uri": "sqlite:///workspace.db", "warehouse": "s3://lake"},
                                          "Lab": {"type": "hadoop", "warehouse": "/wh"}})
    (Path(os.environ["PYICEBERG_HOME"]) / ".pyiceberg.yaml").write_text(
        "catalog:\n  prod:\n    uri: sqlite:///file.db\n    s3.region: eu-west-1\n  dev:\n    type: rest\n    uri: http://dev\n")
    monkeypatch.setenv("PYICEBERG_CATALOG__PROD__URI", "sqlite:///environment.db")
    monkeypatch.setenv("PYICEBERG_CATALOG__STAGE__S3__ACCESS_KEY_ID", "AKIASTAGE")
    catalogs = IcebergCatalogs(workspace)
    assert catalogs.names() == ["dev", "lab", "prod", "stage"]
    assert catalogs.properties("PROD") == {"type": "sql", "uri": "sqlite:///environment.db", "warehouse": "s3://lake",
                                           "s3.region": "eu-west-1"}
    assert catalogs.properties("stage") == {"s3.access-key-id": "AKIASTAGE"}
    assert redacted(catalogs.properties("stage")) == {"s3.access-key-id": "***"}
    assert catalogs.owns("prod.fintech.payments") and catalogs.owns("dev.a.b.c")
    assert not catalogs.owns("lab.db.t")  # Spark's Hadoop folder catalog: its folder is its state
    assert not catalogs.owns("nowhere.db.t") and not catalogs.owns("prod.payments")
    with pytest.raises(CatalogError, match=r"'nowhere' is not configured \(configured: dev, lab, prod, stage"):
        catalogs.properties("nowhere")


def test_the_state_is_the_catalogs_pointer_never_a_newer_file_in_the_folder(tmp_path: Path) -> None:
    catalog, built = lakehouse(tmp_path)
    payments = catalog.load_table("fintech.payments")
    stray = write_stray_metadata(payments)
    location = Location.parse(built.locations["fintech.payments"])
    store = bound_store(built.locations["fintech.payments"])

    assert newest_metadata_file(location, store).uri == Location.parse(payments.metadata_location).uri
    state = table_state("fintech.payments", location, store)
    assert state.current_snapshot_id == payments.current_snapshot().snapshot_id
    assert [(r.name, r.snapshot_id) for r in state.refs] == [("eoy", built.tagged_snapshot)]
    files = SUPPORT.files(location, store)
    assert files.problems == [f"metadata/{Location.parse(stray).name} is newer than the catalog's current "
                              f"metadata/{Location.parse(payments.metadata_location).name}: another writer's uncommitted "
                              "file? not read (the catalog's pointer is the table's state)"]
    # Read from the folder (no catalog keeps it), the stray would be the state: the test can fail.
    folder_state = table_state("fintech.payments", location, Store())
    assert newest_metadata_file(location, Store()).uri == Location.parse(stray).uri
    assert folder_state.refs == () and folder_state.current_snapshot_id == built.tagged_snapshot
    assert SUPPORT.files(location, Store()).problems == []


def test_a_location_that_disagrees_with_the_catalog_is_refused_naming_both(tmp_path: Path) -> None:
    _, built = lakehouse(tmp_path)
    copy = tmp_path / "copied" / "payments"
    shutil.copytree(Location.parse(built.locations["fintech.payments"]).uri, copy)
    store = bound_store(str(copy))
    with pytest.raises(CatalogError) as refused:
        newest_metadata_file(Location.parse(str(copy)), store)
    assert str(refused.value) == (f"Iceberg table prod.fintech.payments: its catalog keeps it at "
                                  f"{Location.parse(built.locations['fintech.payments'])}, the workspace catalogues it at "
                                  f"{copy}: refusing to read or change either (make the dataset's location the catalog's)")


def test_a_catalog_pointer_outside_the_tables_location_is_refused(tmp_path: Path) -> None:
    catalog, built = lakehouse(tmp_path)
    payments = catalog.load_table("fintech.payments")
    elsewhere = tmp_path / "elsewhere" / "v9.metadata.json"
    elsewhere.parent.mkdir()
    shutil.copy(Location.parse(payments.metadata_location).uri, elsewhere)
    catalog.register_table("fintech.moved", f"file://{elsewhere}")  # its metadata says payments' location
    store = bound_store(built.locations["fintech.payments"], "prod.fintech.moved")
    with pytest.raises(FormatError, match=r"its catalog names file://.*/elsewhere/v9.metadata.json as the current "
                                          r"metadata, outside the table's catalogued location: refusing to read it"):
        table_state("fintech.payments", Location.parse(built.locations["fintech.payments"]), store)


def test_no_credential_in_an_error_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYICEBERG_CATALOG__ODD__URI", "ftp://etl:hunter2pw@127.0.0.1:1/")
    monkeypatch.setenv("PYICEBERG_CATALOG__ODD__S3__SECRET_ACCESS_KEY", "wJalrXUtnFEMIsecret")
    monkeypatch.setenv("PYICEBERG_CATALOG__PG__TYPE", "sql")
    monkeypatch.setenv("PYICEBERG_CATALOG__PG__URI", "postgresql+psycopg2://etl:hunter2pw@127.0.0.1:1/lake")
    monkeypatch.setenv("PYICEBERG_CATALOG__REST__URI", "http://127.0.0.1:1/")
    monkeypatch.setenv("PYICEBERG_CATALOG__REST__TOKEN", "eyJhbGciOiJIUzI1NiJ9token")
    catalogs = IcebergCatalogs()
    messages = []
    for identifier in ("odd.a.b", "pg.a.b", "rest.a.b"):
        with pytest.raises(CatalogError) as refused:
            catalogs.load_table(identifier)
        messages.append(str(refused.value))
    assert messages[0].startswith("Iceberg catalog 'odd' ({'s3.secret-access-key': '***', 'uri': 'ftp://etl:***@127.0.0.1:1/'})"
                                  ": cannot load it: ValueError: Could not infer the catalog type from the uri: "
                                  "ftp://etl:***@127.0.0.1:1/")
    assert "'uri': 'postgresql+psycopg2://etl:***@127.0.0.1:1/lake'" in messages[1]
    assert "'token': '***'" in messages[2]
    for secret in ("hunter2pw", "wJalrXUtnFEMIsecret", "eyJhbGciOiJIUzI1NiJ9token"):
        assert not any(secret in message for message in messages), secret


def test_the_live_schema_execute_checks_is_the_catalogs(tmp_path: Path) -> None:
    """preflight (execute) and the plan's key types read the live schema through ``table_schema``:
    a stray file whose schema renamed the key column changes nothing while the catalog names another."""
    catalog, built = lakehouse(tmp_path)
    payments = catalog.load_table("fintech.payments")
    stray = Location.parse(write_stray_metadata(payments))
    text = Path(stray.uri).read_text()
    Path(stray.uri).write_text(text.replace('"name": "user_id"', '"name": "uid"'))
    entry = CatalogDataset(format="iceberg", table="prod.fintech.payments", location=built.locations["fintech.payments"])
    location = Location.parse(built.locations["fintech.payments"])
    assert table_schema(entry, location, bound_store(built.locations["fintech.payments"])).names == ["user_id", "pan", "amount", "dt"]
    assert table_schema(entry, location, Store()).names == ["uid", "pan", "amount", "dt"]  # the folder's newest: the stray
