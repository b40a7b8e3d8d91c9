"""A fintech Iceberg lakehouse written by pyiceberg through a catalog (no Spark): ``fintech.payments``
partitioned by ``dt`` with the subject's identifiers (user_id, PAN, phone, Aadhaar reference), written
in several commits, a tag on an old snapshot, and ``fintech.payments_by_user``, the rows a CTAS over
it writes. The subject's values are every column's minimum (the worst case: they are in every
manifest's lower bounds), distinctive enough that no count, size or id in the metadata equals them.
Used by the pyiceberg engine's unit tests (local folder) and the S3 acceptance (moto)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pyarrow as pa

from byte_scan import find_values
from piitracer.formats import StepWork, support_for
from piitracer.formats.iceberg_catalogs import IcebergCatalogs
from piitracer.model.outcome import Attempt
from piitracer.model.plan import (Action, ExpireSnapshotsParams, RemoveOrphanFilesParams, RewriteDataFilesParams,
                                  RewriteRefParams, Step, StepEngine)
from piitracer.model.settings import IcebergSettings
from piitracer.model.workspace import CatalogDataset, DatasetFormat
from piitracer.storage.locations import Location
from piitracer.storage.store import Store

SCHEMA = pa.schema([("user_id", pa.int64()), ("pan", pa.string()), ("phone", pa.string()), ("aadhaar_ref", pa.string()),
                    ("amount", pa.float64()), ("dt", pa.string())])
DERIVED = pa.schema([("user_id", pa.int64()), ("pan", pa.string()), ("amount", pa.float64()), ("dt", pa.string())])
SUBJECT = {"user_id": 7_000_000_001, "pan": "AAAAA0001A", "phone": "+910000000001", "aadhaar_ref": "AADH-0000-0001"}
SUBJECT_VALUES = list(SUBJECT.values())
DAYS = ("2026-04-18", "2026-04-19", "2026-04-20")
TAG = "q1-close"
TAG_AGE_MS = 90 * 86_400_000
# The CTAS the derived table is made by (lineage.sql of the acceptance workspace).
CTAS = ("CREATE TABLE fintech.payments_by_user AS\n"
        "SELECT user_id, pan, amount, dt FROM fintech.payments;\n")


def other_rows(start: int, count: int) -> list[dict[str, Any]]:
    """Rows of other people (ids, PANs, phones and references above the subject's)."""
    return [{"user_id": 8_000_000_000 + i, "pan": f"BQRPK{i:04d}Z", "phone": f"+9198{i:08d}",
             "aadhaar_ref": f"AADH-{i:04d}-9999", "amount": float(i % 97) + 0.5, "dt": DAYS[i % len(DAYS)]}
            for i in range(start, start + count)]


def subject_rows(dt: str, count: int = 2) -> list[dict[str, Any]]:
    return [{**SUBJECT, "amount": 10.25 + n, "dt": dt} for n in range(count)]


def arrow(rows: list[dict[str, Any]], schema: pa.Schema = SCHEMA) -> pa.Table:
    return pa.Table.from_pylist(rows, schema)


def create_payments(catalog, namespace: str = "fintech", properties: dict[str, str] | None = None,
                    commits: tuple[int, int, int, int] = (60, 40, 50, 30)):
    """``<namespace>.payments`` partitioned by dt, written in four commits of ``commits`` other
    people's rows each (the subject's rows in the first and third), a tag on the second snapshot
    (the subject's rows in it) with a max-ref-age; returns the table."""
    from pyiceberg.transforms import IdentityTransform

    if (namespace,) not in catalog.list_namespaces():
        catalog.create_namespace(namespace)
    table = catalog.create_table(f"{namespace}.payments", schema=SCHEMA, properties=properties or {})
    with table.update_spec() as update:
        update.add_field("dt", IdentityTransform(), "dt")
    starts = [sum(commits[:n]) for n in range(len(commits))]
    table.append(arrow(other_rows(starts[0], commits[0]) + subject_rows(DAYS[1])))
    table.append(arrow(other_rows(starts[1], commits[1])))
    table.manage_snapshots().create_tag(table.current_snapshot().snapshot_id, TAG, max_ref_age_ms=TAG_AGE_MS).commit()
    table.append(arrow(other_rows(starts[2], commits[2]) + subject_rows(DAYS[0], 1)))
    table.append(arrow(other_rows(starts[3], commits[3])))
    return table


def create_derived(catalog, payments, namespace: str = "fintech"):
    """``<namespace>.payments_by_user``: the rows ``CTAS`` writes (projected from payments' rows),
    in two commits."""
    rows = payments.scan().to_arrow().select(DERIVED.names).cast(DERIVED)
    table = catalog.create_table(f"{namespace}.payments_by_user", schema=DERIVED)
    half = rows.num_rows // 2
    table.append(rows.slice(0, half))
    table.append(rows.slice(half))
    return table


def checksum(rows: pa.Table) -> tuple[int, str]:
    """(count, sha256 over the sorted rows): equal for the same multiset of rows."""
    ordered = sorted(repr(tuple(r.values())) for r in rows.to_pylist())
    return len(ordered), hashlib.sha256("\n".join(ordered).encode()).hexdigest()


def others(rows: pa.Table) -> pa.Table:
    """The rows that are not the subject's."""
    import pyarrow.compute as pc

    return rows.filter(pc.not_equal(rows["user_id"], SUBJECT["user_id"]))


IDENTIFIER = "prod.fintech.payments"
KEY = [SUBJECT["user_id"]]


def _no_spark():
    raise AssertionError("a pyiceberg step started Spark")


class LocalLake:
    """A SQL catalog over SQLite with ``fintech.payments`` in a local warehouse, the store the
    executor would give the steps (the catalog keeps the table's pointer), and the table's steps run
    as the executor runs them (the format's performers, engine pyiceberg)."""

    def __init__(self, folder: Path, location: str | None = None, properties: dict[str, str] | None = None) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.properties = {"type": "sql", "uri": f"sqlite:///{folder}/catalog.db", "warehouse": f"file://{folder}/warehouse"}
        self.catalog = self.connect()
        self.table = create_payments(self.catalog, properties=properties)
        self.location = Location.parse(location or self.table.location())
        catalogs = IcebergCatalogs(IcebergSettings(catalogs={"prod": self.properties}), {self.location: IDENTIFIER})
        self.store = Store(pointers=catalogs)
        self.entry = CatalogDataset(format="iceberg", table=IDENTIFIER, location=self.location.uri)
        self.roots = (Location.parse(folder),)

    def connect(self):
        """Another connection to the same catalog (a second writer's)."""
        from pyiceberg.catalog import load_catalog

        return load_catalog("prod", **self.properties)

    def rows(self, ref: str | None = None) -> pa.Table:
        table = self.connect().load_table("fintech.payments")
        snapshot = table.metadata.snapshot_by_name(ref) if ref else table.current_snapshot()
        return table.scan(snapshot_id=snapshot.snapshot_id).to_arrow()

    def run(self, action: Action, params=None, attempt: Attempt | None = None, keyed: bool = False):
        step = Step(order=1, id="s001", dataset="fintech.payments", action=action, engine=StepEngine.PYICEBERG,
                    key_column="user_id" if keyed else None, **({"params": params} if params is not None else {}))
        work = StepWork(step, self.entry, self.location, list(KEY) if keyed else [], attempt or Attempt(), self.store,
                        _no_spark, roots=self.roots)
        return support_for(DatasetFormat.ICEBERG).perform[action](work)

    def erase(self) -> dict:
        """The plan's steps for this table, in the plan's order."""
        tag = self.connect().load_table("fintech.payments").metadata.refs[TAG]
        return {
            "delete": self.run(Action.DELETE_ROWS, keyed=True),
            "rewrite": self.run(Action.REWRITE_DATA_FILES, RewriteDataFilesParams(options={}), keyed=True),
            "manifests": self.run(Action.REWRITE_MANIFESTS),
            "tag": self.run(Action.REWRITE_REF, RewriteRefParams(ref=TAG, ref_type="tag", snapshot_id=tag.snapshot_id),
                            keyed=True),
            "expire": self.run(Action.EXPIRE_SNAPSHOTS, ExpireSnapshotsParams()),
            "orphans": self.run(Action.REMOVE_ORPHAN_FILES, RemoveOrphanFilesParams()),
        }

    def leftovers(self) -> list[str]:
        return find_values(self.folder / "warehouse", SUBJECT_VALUES)
