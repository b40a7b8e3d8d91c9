"""The one dataset-id normalisation rule (model/naming.py)."""

from __future__ import annotations

from piitracer.model.naming import DatasetNamer, normalise_location


def namer() -> DatasetNamer:
    return DatasetNamer(
        catalog_ids=frozenset({"prod.payments", "stream.cdc"}),
        locations={"/lake/warehouse/prod/payments": "prod.payments"},
        tables={"prod.payments": "prod.payments", "lake.prod.payments": "prod.payments"},
        aliases={"kafka://broker:9092/payments-cdc": "stream.cdc"},
        spark_catalogs=("spark_catalog", "lake"),
        location_roots=(("/data/lakehouse", "/lake"),),
    )


def test_event_and_sql_names_meet_on_one_id() -> None:
    n = namer()
    ids = {
        n.from_table_name("lake.prod.payments"),
        n.from_table_name("`Prod`.`Payments`"),
        n.from_table_name("spark_catalog.prod.payments"),
        n.from_openlineage("hive://metastore:9083", "prod.payments"),
        n.from_openlineage("file:/data/lakehouse/warehouse", "prod.payments"),  # Spark's TABLE symlink
        n.from_openlineage("file", "/data/lakehouse/warehouse/prod/payments/"),  # path, re-rooted
        n.from_openlineage("file", "file:///lake/warehouse/prod/payments"),
    }
    assert ids == {"prod.payments"}


def test_unknown_names_stay_apart() -> None:
    n = namer()
    assert n.from_table_name("orders") == "default.orders"
    assert n.from_table_name("orders", "lake.sales") == "sales.orders"
    assert n.from_openlineage("s3://bucket", "raw/orders") == "location:s3://bucket/raw/orders"
    assert n.from_openlineage("postgres://db:5432", "public.users") == "postgres://db:5432/public.users"
    assert n.from_openlineage("kafka://broker:9092", "payments-cdc") == "stream.cdc"


def test_normalise_location() -> None:
    assert normalise_location("file:/a/b/") == "/a/b"
    assert normalise_location("file:///a/b") == "/a/b"
    assert normalise_location("S3://bucket//k/") == "s3://bucket/k"
