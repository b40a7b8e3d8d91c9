"""A lakehouse kept in an Iceberg catalog, as teams run it: pyiceberg's ``sql`` catalog (SQLite)
named ``prod``, its tables' files on a local folder or on the S3 server on 127.0.0.1
(``s3_server``), configured for piitracer the way a pyiceberg user configures it (the
``PYICEBERG_CATALOG__PROD__*`` environment).

``fintech.payments`` (partitioned by day, a tag ``eoy`` on its first snapshot), its derived
``fintech.payments_daily`` (what ``CREATE TABLE prod.fintech.payments_daily AS ...`` in
``lineage.sql`` makes), ``crm.people`` in a second namespace and an empty ``ops.audit.events`` in a
nested one. A *stray* metadata file is what another writer leaves when its commit never lands: a
newer ``*.metadata.json`` in the folder the catalog does not name."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Mapping

import pyarrow as pa

CATALOG = "prod"
PAYMENTS = pa.schema([("user_id", pa.int64()), ("pan", pa.string()), ("amount", pa.float64()), ("dt", pa.string())])
DAILY = pa.schema([("user_id", pa.int64()), ("total", pa.float64())])
PEOPLE = pa.schema([("user_id", pa.int64()), ("email", pa.string())])
SUBJECT = 8841302
SUBJECT_PAN = "ABCPE1234F"

LINEAGE_SQL = """
CREATE TABLE prod.fintech.payments_daily AS
SELECT user_id, sum(amount) AS total FROM prod.fintech.payments GROUP BY user_id;
"""


def catalog_environment(uri: str, warehouse: str, extra: Mapping[str, str] | None = None, name: str = CATALOG) -> dict[str, str]:
    """``PYICEBERG_CATALOG__<NAME>__<PROP>`` for a ``sql`` catalog (``s3.access-key-id`` is
    ``S3__ACCESS_KEY_ID``: pyiceberg reads ``__`` as ``.`` and ``_`` as ``-``)."""
    properties = {"type": "sql", "uri": uri, "warehouse": warehouse, **(extra or {})}
    return {f"PYICEBERG_CATALOG__{name.upper()}__{key.upper().replace('.', '__').replace('-', '_')}": value
            for key, value in properties.items()}


def s3_properties(s3) -> dict[str, str]:
    """What pyiceberg needs to reach the S3 server (the credentials the server gave)."""
    return {"s3.endpoint": s3.endpoint, "s3.access-key-id": s3.env["AWS_ACCESS_KEY_ID"],
            "s3.secret-access-key": s3.env["AWS_SECRET_ACCESS_KEY"], "s3.region": "us-east-1"}


@dataclass
class Built:
    """What was built: the tagged snapshot and the tables' locations (URIs as the catalog has them)."""

    tagged_snapshot: int
    locations: dict[str, str]


def payment_rows(count: int = 40, first: int = 0) -> pa.Table:
    """``count`` payments of other people; the subject's are added separately."""
    ids = range(1000 + first, 1000 + first + count)
    return pa.Table.from_pylist([{"user_id": i, "pan": f"PAN{i:07d}", "amount": float(i % 97), "dt": f"2026-04-{18 + i % 3}"}
                                 for i in ids], PAYMENTS)


def subject_rows() -> pa.Table:
    return pa.Table.from_pylist([{"user_id": SUBJECT, "pan": SUBJECT_PAN, "amount": 1.0, "dt": "2026-04-19"},
                                 {"user_id": SUBJECT, "pan": SUBJECT_PAN, "amount": 2.5, "dt": "2026-04-20"}], PAYMENTS)


def build(catalog) -> Built:
    """The tables in ``catalog`` (a pyiceberg catalog, any warehouse)."""
    from pyiceberg.transforms import IdentityTransform

    for namespace in ("fintech", "crm", ("ops", "audit")):
        catalog.create_namespace(namespace)
    payments = catalog.create_table("fintech.payments", schema=PAYMENTS)
    with payments.update_spec() as spec:
        spec.add_field("dt", IdentityTransform(), "dt")
    payments.append(pa.concat_tables([payment_rows(), subject_rows()]))
    tagged = payments.current_snapshot().snapshot_id
    payments.append(payment_rows(10, first=100))
    payments.manage_snapshots().create_tag(tagged, "eoy").commit()
    rows = payments.scan().to_arrow().group_by("user_id").aggregate([("amount", "sum")])
    daily = catalog.create_table("fintech.payments_daily", schema=DAILY)
    daily.append(rows.rename_columns(["user_id", "total"]).select(["user_id", "total"]).cast(DAILY))
    people = catalog.create_table("crm.people", schema=PEOPLE)
    people.append(pa.Table.from_pylist([{"user_id": SUBJECT, "email": "asha@example.in"},
                                        {"user_id": 1001, "email": "ravi@example.in"}], PEOPLE))
    catalog.create_table(("ops", "audit", "events"), schema=pa.schema([("event", pa.string())]))
    locations = {name: catalog.load_table(name).location()
                 for name in ("fintech.payments", "fintech.payments_daily", "crm.people", "ops.audit.events")}
    return Built(tagged, locations)


def write_stray_metadata(table, number: int = 99) -> str:
    """Another writer's uncommitted metadata file, numbered above every committed one, in the
    table's metadata folder: the table as that writer saw it, its tags gone and its current
    snapshot the first one (which holds the subject's rows). Written through the table's own
    file access (local or S3). Returns its URI."""
    metadata = json.loads(table.io.new_input(table.metadata_location).open().read())
    first = metadata["snapshots"][0]["snapshot-id"]
    metadata["current-snapshot-id"] = first
    metadata["refs"] = {"main": {"snapshot-id": first, "type": "branch"}}
    metadata["last-updated-ms"] = metadata["last-updated-ms"] + 1
    where = f"{table.location().rstrip('/')}/metadata/{number:05d}-{uuid.uuid4()}.metadata.json"
    with table.io.new_output(where).create(overwrite=True) as out:
        out.write(json.dumps(metadata).encode())
    return where
