"""The pyiceberg engine on a table Spark wrote merge-on-read: an earlier DELETE left the subject's rows
in the data files, hidden by position-delete files (shared/lakehouse-notes.md). pyiceberg cannot
write position deletes, so only a table Spark wrote has them; the table is then registered in
pyiceberg's ``sql`` catalog (SQLite) and erased there.

``rewrite_data_files`` through pyiceberg rewrites, with their deletes applied, exactly the data files
that carry delete files and whose bounds admit the subject's value (not a file with deletes of other
people's rows only); after the manifest commit, expiry and piitracer's own removal, no decoded file
holds the subject's id or PAN, and every other row is identical (count and checksum)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.compute as pc
import pytest
from byte_scan import find_values
from spark_lakehouse import SUBJECT_PANS, SUBJECTS, checksum, mor_properties, new_namespace, rows, spark_for

from piitracer.formats import StepWork, support_for
from piitracer.formats.iceberg_catalogs import IcebergCatalogs
from piitracer.formats.iceberg_table import newest_metadata_file
from piitracer.model.outcome import Attempt
from piitracer.model.plan import (Action, ExpireSnapshotsParams, RemoveOrphanFilesParams, RewriteDataFilesParams, Step,
                                  StepEngine)
from piitracer.model.settings import IcebergSettings
from piitracer.model.workspace import CatalogDataset, DatasetFormat
from piitracer.storage.locations import Location
from piitracer.storage.store import Store


@pytest.fixture(autouse=True)
def own_pyiceberg_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.upper().startswith("PYICEBERG_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))


def test_files_with_deletes_that_may_hold_the_subject_are_rewritten_then_removed(warehouse: Path, tmp_path: Path) -> None:
    spark, ns = spark_for(warehouse), new_namespace("pyd")
    spark.sql(f"CREATE TABLE lake.{ns}.pay (user_id BIGINT, pan STRING, amount DOUBLE, dt STRING) USING iceberg "
              f"PARTITIONED BY (dt) TBLPROPERTIES ({mor_properties()})")
    data = rows(300)
    for part in (data[:150], data[150:]):
        spark.createDataFrame(part, "user_id BIGINT, pan STRING, amount DOUBLE, dt STRING").writeTo(f"lake.{ns}.pay").append()
    # An earlier erasure that stopped after its logical delete, and another person's row deleted in
    # another partition: both leave position-delete files, the rows still in the data files.
    spark.sql(f"DELETE FROM lake.{ns}.pay WHERE user_id = {SUBJECTS[0]}")
    spark.sql(f"DELETE FROM lake.{ns}.pay WHERE user_id = 8000000002")  # dt 2026-11-03
    location = Location.parse(warehouse / ns / "pay")
    kept = checksum(tuple(r) for r in spark.table(f"lake.{ns}.pay").collect())
    assert find_values(Path(location.uri), [SUBJECTS[0], SUBJECT_PANS[0]])  # still in the data files

    from pyiceberg.catalog import load_catalog

    properties = {"type": "sql", "uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
    catalog = load_catalog("prod", **properties)
    catalog.create_namespace("fintech")
    catalog.register_table("fintech.pay", newest_metadata_file(location, Store()).uri)
    store = Store(pointers=IcebergCatalogs(IcebergSettings(catalogs={"prod": properties}), {location: "prod.fintech.pay"}))
    entry = CatalogDataset(format="iceberg", table="prod.fintech.pay", location=location.uri)

    def run(action: Action, params=None, keyed: bool = False):
        step = Step(order=1, id="s001", dataset="fintech.pay", action=action, engine=StepEngine.PYICEBERG,
                    key_column="user_id" if keyed else None, **({"params": params} if params is not None else {}))
        work = StepWork(step, entry, location, [SUBJECTS[0]] if keyed else [], Attempt(), store,
                        lambda: pytest.fail("started Spark"), roots=(Location.parse(warehouse),))
        return support_for(DatasetFormat.ICEBERG).perform[action](work)

    table = catalog.load_table("fintech.pay")
    with_deletes = {t.file.file_path: t.file.partition for t in table.scan().plan_files() if t.delete_files}
    subject_files = {path for path, partition in with_deletes.items() if "2026-11-01" in str(partition)}
    assert subject_files and set(with_deletes) - subject_files  # files with deletes in both partitions

    assert run(Action.DELETE_ROWS, keyed=True).rows_deleted == 0  # the rows are already deleted, logically
    rewritten = run(Action.REWRITE_DATA_FILES, RewriteDataFilesParams(options={}), keyed=True)
    assert rewritten.files_rewritten == len(subject_files)
    table = catalog.load_table("fintech.pay")
    still = {t.file.file_path for t in table.scan().plan_files() if t.delete_files}
    assert still == set(with_deletes) - subject_files  # the other person's partition was not rewritten
    run(Action.REWRITE_MANIFESTS)
    run(Action.EXPIRE_SNAPSHOTS, ExpireSnapshotsParams())
    run(Action.REMOVE_ORPHAN_FILES, RemoveOrphanFilesParams())

    assert find_values(Path(location.uri), [SUBJECTS[0], SUBJECT_PANS[0]]) == []
    after = catalog.load_table("fintech.pay").scan().to_arrow()
    assert checksum(tuple(r.values()) for r in after.to_pylist()) == kept
    assert pc.sum(pc.equal(after["user_id"], SUBJECTS[1])).as_py() == 2  # other subjects: not this request
