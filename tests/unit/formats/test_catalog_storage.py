"""piitracer's own file access to what an Iceberg catalog keeps (issue 38, acceptance: "with only
``PYICEBERG_CATALOG__*`` set"): the store takes the endpoint, region, path style and key of the
catalog that keeps a location (``IcebergCatalogs.storage_properties``), under the workspace's
``storage:`` block and over ``AWS_*``, for every S3 filesystem it opens (listing, reading, the byte
scan, removals), the FileIO properties it hands pyiceberg and the options it hands delta-rs.

What a pyarrow ``S3FileSystem`` was built with is read back from the filesystem itself (its
``__reduce__``: the arguments a copy would be made with). No server here: the S3 server runs in
tests/integration/test_catalog_storage_s3.py and the acceptance test_iceberg_s3_pyiceberg.py.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from piitracer.formats.iceberg_catalogs import CatalogError, IcebergCatalogs
from piitracer.model.settings import IcebergSettings, StorageOptions, StorageSettings
from piitracer.storage.locations import Location
from piitracer.storage.store import StorageError, Store

SECRET = "wJalrXUtnFEMI-catalog-secret"
PROD = {"TYPE": "sql", "URI": "sqlite:////nowhere/prod.db", "WAREHOUSE": "s3://prod-lake/warehouse",
        "S3__ENDPOINT": "http://127.0.0.1:9100", "S3__REGION": "ap-south-1", "S3__ACCESS_KEY_ID": "AKIAPROD",
        "S3__SECRET_ACCESS_KEY": SECRET}
TABLE = "s3://prod-lake/warehouse/fintech.db/payments"


@pytest.fixture(autouse=True)
def only_the_catalogs_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No AWS_* or PYICEBERG_* of the machine; the ``prod`` catalog as a pyiceberg user sets it."""
    for key in list(os.environ):
        if key.upper().startswith(("PYICEBERG_", "AWS_")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    for key, value in PROD.items():
        monkeypatch.setenv(f"PYICEBERG_CATALOG__PROD__{key}", value)


def built_with(store: Store, location: str) -> dict:
    """The arguments the store's S3 filesystem for ``location`` was built with, and the path in it."""
    fs, path = store.filesystem(Location.parse(location))
    return {**fs.__reduce__()[1][0], "path": path}


def catalog_store(settings: StorageSettings | None = None, bindings: dict[str, str] | None = None,
                  iceberg: IcebergSettings | None = None) -> Store:
    bound = {Location.parse(location): identifier for location, identifier in (bindings or {TABLE: "prod.fintech.payments"}).items()}
    return Store(settings, pointers=IcebergCatalogs(iceberg, bound))


def test_a_catalog_location_is_reached_with_the_catalogs_endpoint_region_and_key() -> None:
    store = catalog_store()
    for location in (f"{TABLE}/data/dt=2026-04-19/part-0.parquet", f"{TABLE}/metadata/00003-x.metadata.json",
                     "s3://prod-lake/warehouse/other.db/t"):  # a table's, and one under the warehouse not yet bound
        found = built_with(store, location)
        assert (found["endpoint_override"], found["scheme"], found["region"]) == ("127.0.0.1:9100", "http", "ap-south-1")
        assert (found["access_key"], found["secret_key"]) == ("AKIAPROD", SECRET)
        assert found["path"] == location.removeprefix("s3://")
    # pyiceberg reads a table by its metadata file with the same FileIO; delta-rs gets the same key.
    assert catalog_store().iceberg_properties(Location.parse(TABLE)) == {
        "s3.endpoint": "http://127.0.0.1:9100", "s3.region": "ap-south-1", "s3.access-key-id": "AKIAPROD",
        "s3.secret-access-key": SECRET}
    delta = catalog_store().delta_options(Location.parse("s3://prod-lake/warehouse/delta_t"))
    assert delta == {"AWS_ENDPOINT_URL": "http://127.0.0.1:9100", "AWS_ALLOW_HTTP": "true", "AWS_REGION": "ap-south-1",
                     "AWS_ACCESS_KEY_ID": "AKIAPROD", "AWS_SECRET_ACCESS_KEY": SECRET}


def test_which_catalog_keeps_a_place(monkeypatch: pytest.MonkeyPatch) -> None:
    # ``lab`` keeps one table inside prod's warehouse folder, and its warehouse in another bucket;
    # ``dev`` (REST) names its warehouse by name, not by place; ``mirror`` shares prod's bucket.
    monkeypatch.setenv("PYICEBERG_CATALOG__LAB__WAREHOUSE", "s3://lab-lake/wh")
    monkeypatch.setenv("PYICEBERG_CATALOG__LAB__S3__ENDPOINT", "http://127.0.0.1:9200")
    monkeypatch.setenv("PYICEBERG_CATALOG__LAB__CLIENT__REGION", "eu-west-1")  # pyiceberg's client.* fallback
    monkeypatch.setenv("PYICEBERG_CATALOG__LAB__S3__PATH_STYLE_ACCESS", "true")  # Java's name for it
    monkeypatch.setenv("PYICEBERG_CATALOG__DEV__TYPE", "rest")
    monkeypatch.setenv("PYICEBERG_CATALOG__DEV__WAREHOUSE", "analytics")
    monkeypatch.setenv("PYICEBERG_CATALOG__DEV__S3__ENDPOINT", "http://127.0.0.1:9300")
    store = catalog_store(bindings={TABLE: "prod.fintech.payments", "s3://prod-lake/warehouse/lab.db/t": "lab.lab.t"})
    endpoint = lambda location: store.options_for(Location.parse(location)).endpoint  # noqa: E731
    assert endpoint(f"{TABLE}/data/x.parquet") == "http://127.0.0.1:9100"
    assert endpoint("s3://prod-lake/warehouse/lab.db/t/data/x.parquet") == "http://127.0.0.1:9200"  # the table's own catalog
    assert endpoint("s3://prod-lake/warehouse/lab.db/t2") == "http://127.0.0.1:9100"  # prod's warehouse
    assert endpoint("s3://prod-lake/warehouse/lab.db/t") == "http://127.0.0.1:9200"  # its sibling t2 answered first
    assert endpoint("s3://prod-lake/warehouse/lab.db/t3/x.parquet") == "http://127.0.0.1:9100"
    lab = store.options_for(Location.parse("s3://lab-lake/wh/db/x"))
    assert (lab.endpoint, lab.region, lab.path_style) == ("http://127.0.0.1:9200", "eu-west-1", True)
    assert store._credentials(Location.parse("s3://lab-lake/wh/db/x")) is None  # lab names no key: AWS_*'s chain
    assert endpoint("s3://lab-lake") == "http://127.0.0.1:9200"  # a root above lab's warehouse only
    # A root above two catalogs that reach it differently is neither's; nor is a place no catalog keeps.
    assert endpoint("s3://prod-lake") is None and endpoint("s3://prod-lake/warehouse") == "http://127.0.0.1:9100"
    assert endpoint("s3://prod-lake/exports") is None and endpoint("s3://analytics/x") is None
    # Two catalogs over one bucket with the same FileIO: a root above both is reached as they reach it.
    for key, value in PROD.items():
        if key.startswith("S3__"):
            monkeypatch.setenv(f"PYICEBERG_CATALOG__MIRROR__{key}", value)
    monkeypatch.setenv("PYICEBERG_CATALOG__MIRROR__WAREHOUSE", "s3://shared/mirror")
    monkeypatch.setenv("PYICEBERG_CATALOG__PROD__WAREHOUSE", "s3://shared/prod")
    both = catalog_store(bindings={})
    assert both.options_for(Location.parse("s3://shared")).endpoint == "http://127.0.0.1:9100"
    assert Store().options_for(Location.parse(TABLE)).endpoint is None  # no catalogs, no catalog's settings
    assert catalog_store().options_for(Location.parse("/lake/t")) == StorageOptions()  # local folders: nothing


def test_the_workspace_storage_block_wins_and_aws_variables_still_work(monkeypatch: pytest.MonkeyPatch) -> None:
    # storage: says the endpoint (for one prefix) and the path style; the catalog fills in the rest.
    settings = StorageSettings(path_style=True, prefixes={"s3://prod-lake/warehouse/fintech.db":
                                                          StorageOptions(endpoint="https://s3.proxy.internal")})
    found = built_with(catalog_store(settings), f"{TABLE}/data/x.parquet")
    assert (found["endpoint_override"], found["scheme"], found["region"]) == ("s3.proxy.internal", "https", "ap-south-1")
    assert found["force_virtual_addressing"] is False and found["secret_key"] == SECRET
    # AWS_* as before where no catalog keeps the place; the catalog's over them where one does.
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9999")
    monkeypatch.setenv("AWS_REGION", "us-east-2")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    store = catalog_store()
    elsewhere = built_with(store, "s3://other-bucket/delta/t/part-0.parquet")
    assert (elsewhere["endpoint_override"], elsewhere["region"]) == ("127.0.0.1:9999", "us-east-2")
    assert not elsewhere["access_key"]  # not passed: pyarrow's own chain reads AWS_ACCESS_KEY_ID
    assert store.iceberg_properties(Location.parse("s3://other-bucket/t"))["s3.access-key-id"] == "AKIAENV"
    kept = built_with(store, f"{TABLE}/data/x.parquet")
    assert (kept["endpoint_override"], kept["region"], kept["access_key"]) == ("127.0.0.1:9100", "ap-south-1", "AKIAPROD")
    # A catalog that names no key: its endpoint, and the key of AWS_* (pyarrow's chain).
    monkeypatch.delenv("PYICEBERG_CATALOG__PROD__S3__ACCESS_KEY_ID")
    monkeypatch.delenv("PYICEBERG_CATALOG__PROD__S3__SECRET_ACCESS_KEY")
    keyless = catalog_store()
    assert not built_with(keyless, TABLE)["access_key"] and built_with(keyless, TABLE)["endpoint_override"] == "127.0.0.1:9100"
    assert keyless.iceberg_properties(Location.parse(TABLE))["s3.secret-access-key"] == "env-secret"


def test_no_credential_travels_in_a_task_or_shows_in_a_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = catalog_store()
    store.filesystem(Location.parse(TABLE))  # an open filesystem (it holds the key) is not sent
    sent = pickle.dumps(store)
    assert SECRET.encode() not in sent and b"AKIAPROD" not in sent
    # The task reads its own environment's configuration, as pyiceberg there would: the same key.
    assert built_with(pickle.loads(sent), TABLE)["secret_key"] == SECRET
    assert SECRET not in repr(store._credentials(Location.parse(TABLE))) + repr(store.options_for(Location.parse(TABLE)))
    # A store that cannot reach the catalog's endpoint says where, never with what key.
    monkeypatch.setenv("PYICEBERG_CATALOG__PROD__S3__ENDPOINT", "http://127.0.0.1:9")  # nothing listens on port 9
    with pytest.raises(StorageError) as refused:
        catalog_store().list_files(Location.parse(TABLE))
    assert TABLE in str(refused.value) and SECRET not in str(refused.value) and "AKIAPROD" not in str(refused.value)
    # A configuration pyiceberg cannot read: one line, no text of it (it may quote a key).
    (tmp_path / ".pyiceberg.yaml").write_text(f"catalog:\n  prod: [{SECRET}\n")
    with pytest.raises(CatalogError, match=r"pyiceberg.s configuration .* cannot be read \(line 2, column 10\)") as broken:
        catalog_store().options_for(Location.parse(TABLE))
    assert SECRET not in str(broken.value)
