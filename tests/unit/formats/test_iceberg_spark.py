"""One catalog definition, two engines: pyiceberg's properties -> Spark's ``spark.sql.catalog.<name>.*``
(formats/iceberg_spark.py), type by type, with Iceberg Java 1.10's property names. Pure: no Spark."""

from __future__ import annotations

import pytest

from piitracer.formats.iceberg_spark import (DRIVERS, RESOLVING_FILE_IO, S3_FILE_IO, SPARK_CATALOG_CLASS, SkipCatalog,
                                             spark_catalog, spark_catalogs)


def conf(name: str, properties: dict[str, str], environ: dict[str, str] | None = None) -> dict[str, str]:
    return spark_catalog(name, properties, environ or {}).conf()


def test_a_postgresql_sql_catalog_becomes_a_jdbc_catalog_with_user_and_password_from_the_uri() -> None:
    # The password is in the uri only because the environment gave it (PYICEBERG_CATALOG__PG__URI).
    got = conf("pg", {"type": "sql", "uri": "postgresql+psycopg2://etl:s3cr%40t@db.internal:5433/lake?sslmode=require",
                      "warehouse": "/data/warehouse"})
    assert got == {
        "spark.sql.catalog.pg": SPARK_CATALOG_CLASS,
        "spark.sql.catalog.pg.type": "jdbc",
        "spark.sql.catalog.pg.uri": "jdbc:postgresql://db.internal:5433/lake?sslmode=require",
        "spark.sql.catalog.pg.jdbc.user": "etl",
        "spark.sql.catalog.pg.jdbc.password": "s3cr@t",
        "spark.sql.catalog.pg.jdbc.schema-version": "V1",
        "spark.sql.catalog.pg.warehouse": "/data/warehouse",
    }
    assert spark_catalog("pg", {"type": "sql", "uri": "postgresql://h/db", "warehouse": "/w"}, {}).driver is DRIVERS["postgresql"]


def test_the_jdbc_password_comes_from_PGPASSWORD_when_the_uri_has_none_and_is_never_shown() -> None:
    catalog = spark_catalog("pg", {"uri": "postgresql+psycopg2://etl@127.0.0.1/lake", "warehouse": "/w"},
                            {"PGPASSWORD": "from-env", "PGPORT": "6543"})
    assert catalog.type == "jdbc"  # inferred from the uri, as pyiceberg infers it
    assert catalog.properties["jdbc.password"] == "from-env"
    assert catalog.properties["uri"] == "jdbc:postgresql://127.0.0.1:6543/lake"
    shown = catalog.shown()
    assert shown["spark.sql.catalog.pg.jdbc.password"] == "***" and "from-env" not in repr(shown)
    no_password = spark_catalog("pg", {"uri": "postgresql://etl@127.0.0.1/lake", "warehouse": "/w"}, {})
    assert "jdbc.password" not in no_password.properties and no_password.properties["uri"].endswith(":5432/lake")


def test_a_query_password_moves_out_of_the_jdbc_uri() -> None:
    catalog = spark_catalog("pg", {"type": "sql", "uri": "postgresql://h:1/db?user=u&password=pw&sslmode=verify-full",
                                   "warehouse": "/w"}, {})
    assert catalog.properties["uri"] == "jdbc:postgresql://h:1/db?sslmode=verify-full"
    assert (catalog.properties["jdbc.user"], catalog.properties["jdbc.password"]) == ("u", "pw")


def test_sql_catalogs_spark_cannot_share_are_skipped_with_the_reason() -> None:
    found = spark_catalogs({
        "memory": {"type": "sql", "uri": "sqlite:///:memory:", "warehouse": "/w"},
        "socket": {"type": "sql", "uri": "postgresql:///lake?host=/var/run/postgresql", "warehouse": "/w"},
        "nowarehouse": {"type": "sql", "uri": "postgresql://h/db"},
        "python": {"type": "sql", "uri": "postgresql://h/db", "warehouse": "/w", "py-catalog-impl": "my.Catalog"},
        "bq": {"type": "bigquery", "warehouse": "gs://b"},
        "spark_catalog": {"type": "hive", "uri": "thrift://h:9083"},
        "file": {"type": "sql", "uri": "sqlite:////data/catalog.db", "warehouse": "/data/w"},
    }, {})
    assert sorted(found.catalogs) == ["file"]
    assert found.catalogs["file"].properties["uri"] == "jdbc:sqlite:/data/catalog.db"
    assert found.catalogs["file"].driver is DRIVERS["sqlite"]
    assert "in one process" in found.skipped["memory"]
    assert "Unix socket" in found.skipped["socket"]
    assert "warehouse" in found.skipped["nowarehouse"]
    assert "Python catalog" in found.skipped["python"]
    assert "'bigquery'" in found.skipped["bq"] and "spark.sql.catalog.bq" in found.skipped["bq"]
    assert "session catalog" in found.skipped["spark_catalog"]


def test_a_jdbc_uri_written_for_spark_is_taken_as_written() -> None:
    catalog = spark_catalog("pg", {"type": "jdbc", "uri": "jdbc:postgresql://h:5432/db", "warehouse": "/w",
                                   "jdbc.user": "etl", "jdbc.schema-version": "V0"}, {})
    assert catalog.properties == {"type": "jdbc", "uri": "jdbc:postgresql://h:5432/db", "warehouse": "/w",
                                  "jdbc.user": "etl", "jdbc.schema-version": "V0"}
    assert catalog.driver is DRIVERS["postgresql"]


def test_rest_passes_its_auth_and_headers_under_the_same_names() -> None:
    catalog = spark_catalog("prod", {
        "type": "rest", "uri": "https://catalog.internal/api", "warehouse": "prod_wh", "credential": "client:secret",
        "token": "tkn", "scope": "PRINCIPAL_ROLE:ALL", "oauth2-server-uri": "https://idp/token", "prefix": "p1",
        "header.X-Iceberg-Access-Delegation": "vended-credentials", "rest.sigv4-enabled": "false",
        "auth.type": "oauth2", "ssl.cabundle": "/etc/ca.pem"}, {})
    assert catalog.properties == {
        "type": "rest", "uri": "https://catalog.internal/api", "warehouse": "prod_wh", "credential": "client:secret",
        "token": "tkn", "scope": "PRINCIPAL_ROLE:ALL", "oauth2-server-uri": "https://idp/token", "prefix": "p1",
        "header.X-Iceberg-Access-Delegation": "vended-credentials", "rest.sigv4-enabled": "false"}
    assert catalog.dropped == ("auth.type", "ssl.cabundle")  # pyiceberg-only: not given to Spark
    assert catalog.needs_classes == ()
    shown = catalog.shown()
    assert shown["spark.sql.catalog.prod.credential"] == shown["spark.sql.catalog.prod.token"] == "***"
    assert "secret" not in repr(shown) and "tkn" not in repr(shown)
    signed = spark_catalog("prod", {"uri": "https://x", "rest.sigv4-enabled": "true", "rest.signing-region": "eu-west-1"}, {})
    assert signed.type == "rest" and signed.needs_classes == ("software.amazon.awssdk.auth.signer.Aws4Signer",)


def test_glue_gets_its_id_endpoint_and_region_and_leaves_credentials_to_the_aws_chain() -> None:
    catalog = spark_catalog("glue", {"type": "glue", "glue.id": "123456789012", "glue.region": "ap-south-1",
                                     "glue.endpoint": "https://glue.vpce", "glue.access-key-id": "AKIA",
                                     "glue.secret-access-key": "x", "warehouse": "s3://lake/wh"}, {})
    assert catalog.properties == {"type": "glue", "glue.id": "123456789012", "client.region": "ap-south-1",
                                  "glue.endpoint": "https://glue.vpce", "warehouse": "s3://lake/wh"}
    assert catalog.dropped == ("glue.access-key-id", "glue.secret-access-key")
    assert "software.amazon.awssdk.services.glue.GlueClient" in catalog.needs_classes


def test_hive_and_hadoop() -> None:
    assert conf("hms", {"uri": "thrift://metastore:9083", "warehouse": "hdfs://nn/wh", "hive.hive2-compatible": "true"}) == {
        "spark.sql.catalog.hms": SPARK_CATALOG_CLASS, "spark.sql.catalog.hms.type": "hive",
        "spark.sql.catalog.hms.uri": "thrift://metastore:9083", "spark.sql.catalog.hms.warehouse": "hdfs://nn/wh"}
    assert conf("local", {"type": "hadoop", "warehouse": "/data/wh"}) == {
        "spark.sql.catalog.local": SPARK_CATALOG_CLASS, "spark.sql.catalog.local.type": "hadoop",
        "spark.sql.catalog.local.warehouse": "/data/wh"}
    with pytest.raises(SkipCatalog, match="thrift"):
        spark_catalog("hms", {"type": "hive"}, {})


def test_s3_properties_become_s3fileio_settings() -> None:
    catalog = spark_catalog("lake", {
        "type": "sql", "uri": "postgresql://h/db", "warehouse": "s3://lake/wh", "s3.endpoint": "http://127.0.0.1:9000",
        "s3.access-key-id": "ak", "s3.secret-access-key": "sk", "s3.region": "us-east-1", "s3.proxy-uri": "http://p"}, {})
    assert {k: v for k, v in catalog.properties.items() if not k.startswith(("jdbc.", "uri", "type"))} == {
        "warehouse": "s3://lake/wh", "io-impl": S3_FILE_IO, "s3.endpoint": "http://127.0.0.1:9000",
        "s3.access-key-id": "ak", "s3.secret-access-key": "sk", "client.region": "us-east-1",
        "s3.path-style-access": "true"}
    assert catalog.needs_classes == ("software.amazon.awssdk.services.s3.S3Client",)
    assert catalog.dropped == ("s3.proxy-uri",)
    shown = catalog.shown()
    assert shown["spark.sql.catalog.lake.s3.secret-access-key"] == shown["spark.sql.catalog.lake.s3.access-key-id"] == "***"
    # pyiceberg's generic AWS client properties stand in for missing s3.* ones; virtual addressing kept
    generic = spark_catalog("lake", {"type": "hadoop", "warehouse": "s3a://lake/wh", "client.access-key-id": "ak",
                                     "s3.endpoint": "https://s3.example", "s3.force-virtual-addressing": "true"}, {})
    assert generic.properties["s3.access-key-id"] == "ak" and generic.properties["s3.path-style-access"] == "false"
    # s3.* beside a warehouse that is not on S3: a FileIO that picks S3 only for s3:// paths, no SDK needed up front
    mixed = spark_catalog("lake", {"type": "hadoop", "warehouse": "/data/wh", "s3.endpoint": "http://e"}, {})
    assert mixed.properties["io-impl"] == RESOLVING_FILE_IO and mixed.needs_classes == ()
    plain = spark_catalog("lake", {"type": "hadoop", "warehouse": "/data/wh"}, {})
    assert "io-impl" not in plain.properties


def test_a_spark_prefixed_property_is_for_spark_only_and_wins() -> None:
    catalog = spark_catalog("pg", {"type": "sql", "uri": "postgresql://h/db", "warehouse": "/w",
                                   "spark.cache-enabled": "false", "spark.jdbc.schema-version": "V0"}, {})
    assert catalog.properties["cache-enabled"] == "false" and catalog.properties["jdbc.schema-version"] == "V0"
    assert catalog.dropped == ()


def test_the_same_definitions_give_the_same_configuration() -> None:
    definitions = {"b": {"type": "hadoop", "warehouse": "/b"}, "a": {"uri": "http://r"}}
    first, second = spark_catalogs(definitions, {}), spark_catalogs(dict(reversed(definitions.items())), {})
    assert list(first.conf().items()) == list(second.conf().items())
    assert list(first.conf()) == sorted(first.conf())
