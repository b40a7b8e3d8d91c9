"""Spark's side of the Iceberg catalogs: one definition, two engines.

The catalogs pyiceberg reads (the workspace's ``iceberg.catalogs`` under ``.pyiceberg.yaml`` and
``PYICEBERG_CATALOG__<NAME>__<PROP>``, merged by
:class:`~piitracer.formats.iceberg_catalogs.IcebergCatalogs`) become Iceberg ``SparkCatalog``\\ s of
the same names: ``spark.sql.catalog.<name>=org.apache.iceberg.spark.SparkCatalog`` and its
``.type``/``.uri``/``.warehouse``/... translated from pyiceberg's property names to Iceberg Java's
(1.10, the names read from the runtime jar's classes). Same name on both sides matters: a JDBC
catalog's rows carry the catalog's name, so Spark and pyiceberg share tables only under one name.

====================  =====================================================================
pyiceberg             Spark (``spark.sql.catalog.<name>.*``)
====================  =====================================================================
``sql`` (PostgreSQL)  ``type=jdbc``, ``uri=jdbc:postgresql://host:port/db[?query]``,
                      ``jdbc.user``, ``jdbc.password`` (the uri's, else ``PGPASSWORD``),
                      ``jdbc.schema-version=V1``, ``warehouse``; needs the driver's jar
``sql`` (SQLite)      ``type=jdbc``, ``uri=jdbc:sqlite:<file>``; needs a SQLite JDBC jar
``rest``              ``type=rest``, ``uri``, ``warehouse``, ``credential``, ``token``,
                      ``scope``, ``oauth2-server-uri``, ``prefix``, ``header.*``, ``rest.sigv4-*``
``glue``              ``type=glue``, ``glue.id``, ``glue.endpoint``, ``glue.skip-archive``,
                      ``glue.region`` -> ``client.region``; AWS credentials from the AWS chain
``hive``              ``type=hive``, ``uri`` (``thrift://``), ``warehouse``
``hadoop``            ``type=hadoop``, ``warehouse``
``s3.*``              ``io-impl`` (``S3FileIO`` on an ``s3://`` warehouse, else
                      ``ResolvingFileIO``), ``s3.endpoint``, ``s3.access-key-id``,
                      ``s3.secret-access-key``, ``s3.session-token``, ``s3.path-style-access``
                      (on a custom endpoint), ``s3.region`` -> ``client.region``
====================  =====================================================================

A property ``spark.<prop>`` in a definition is given to Spark only, as ``<prop>`` (pyiceberg
ignores it): Spark's own settings for one catalog (``spark.cache-enabled: "false"``). Properties
only pyiceberg understands are not passed (:attr:`SparkCatalog.dropped` names them). A catalog
Spark cannot be given (a Python-only type, an in-memory SQLite) is left out with the reason
(:attr:`SparkCatalogs.skipped`). Credentials travel only inside the returned configuration,
which goes to the Spark driver's memory; :meth:`SparkCatalog.shown` is what may be displayed.

Pure: no Spark, no file; the environment is read only as given.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Mapping
from urllib.parse import quote, urlencode, urlparse

from piitracer.model.settings import CATALOG_SECRET_WORDS

SPARK_CATALOG_CLASS = "org.apache.iceberg.spark.SparkCatalog"
S3_FILE_IO = "org.apache.iceberg.aws.s3.S3FileIO"
RESOLVING_FILE_IO = "org.apache.iceberg.io.ResolvingFileIO"  # S3FileIO for s3:// paths, Hadoop's for the rest
JDBC_SCHEMA_VERSION = "V1"  # Iceberg's current JDBC catalog tables (views too); pyiceberg's sql catalog reads them
# Classes a catalog needs beyond the Iceberg runtime jar (the AWS SDK: iceberg-aws-bundle), by need.
AWS_CLASSES = {"s3": "software.amazon.awssdk.services.s3.S3Client",
               "glue": "software.amazon.awssdk.services.glue.GlueClient",
               "sigv4": "software.amazon.awssdk.auth.signer.Aws4Signer"}
S3_SCHEMES = ("s3", "s3a", "s3n")
# A Spark session configuration key: why the session has no catalog of that name (the session sets
# it; the Iceberg steps read it to say why they cannot reach a table).
UNAVAILABLE = "piitracer.catalog.{name}.unavailable"
# Property names that hold a credential beyond the workspace's words (a header, an SSE-C key).
_MORE_SECRET_WORDS = ("AUTHORIZATION", "SSE_KEY", "API_KEY", "APIKEY")


@dataclass(frozen=True)
class JdbcDriver:
    """The JDBC driver a ``jdbc`` catalog on one database needs on Spark's classpath."""

    database: str  # postgresql, sqlite, mysql
    jar_word: str  # a jar whose file name holds this word is taken to provide it
    driver_class: str
    debian_jar: str | None = None  # found automatically when present
    debian_package: str | None = None
    maven: str | None = None

    def advice(self) -> str:
        """Where the driver comes from, for a message."""
        ways = []
        if self.debian_package:
            ways.append(f"install Debian's {self.debian_package} ({self.debian_jar})")
        ways.append(f"name the driver's jar in spark.conf['spark.jars']")
        if self.maven:
            ways.append(f"add {self.maven}:<version> to spark.packages where Maven is reachable")
        return ", or ".join(ways)


DRIVERS = {
    "postgresql": JdbcDriver("postgresql", "postgresql", "org.postgresql.Driver", "/usr/share/java/postgresql.jar",
                             "libpostgresql-jdbc-java", "org.postgresql:postgresql"),
    "sqlite": JdbcDriver("sqlite", "sqlite", "org.sqlite.JDBC", maven="org.xerial:sqlite-jdbc"),
    "mysql": JdbcDriver("mysql", "mysql", "com.mysql.cj.jdbc.Driver", maven="com.mysql:mysql-connector-j"),
}
_DEFAULT_PORTS = {"postgresql": 5432, "mysql": 3306}


class SkipCatalog(ValueError):
    """This catalog cannot be given to Spark; the message says why."""


@dataclass(frozen=True)
class SparkCatalog:
    """One catalog as Spark gets it."""

    name: str
    type: str  # jdbc, rest, glue, hive, hadoop (Iceberg Java's type)
    properties: dict[str, str]  # the catalog's own properties (no spark.sql.catalog.<name>. prefix), credentials included
    driver: JdbcDriver | None = None  # a jdbc catalog's driver (its jar must be on Spark's classpath)
    needs_classes: tuple[str, ...] = ()  # classes beyond the Iceberg runtime jar (the AWS SDK)
    dropped: tuple[str, ...] = ()  # pyiceberg properties Spark is not given (names only)

    def conf(self) -> dict[str, str]:
        """``spark.sql.catalog.<name>`` and ``spark.sql.catalog.<name>.<prop>`` -> value."""
        prefix = f"spark.sql.catalog.{self.name}"
        return {prefix: SPARK_CATALOG_CLASS, **{f"{prefix}.{key}": value for key, value in sorted(self.properties.items())}}

    def shown(self) -> dict[str, str]:
        """:meth:`conf` as it may be shown or logged: every credential ``***``."""
        return {key: "***" if is_secret(key) else value for key, value in self.conf().items()}


@dataclass(frozen=True)
class SparkCatalogs:
    """Every configured catalog as Spark gets it, and those it cannot get (name -> why)."""

    catalogs: dict[str, SparkCatalog] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def conf(self) -> dict[str, str]:
        """Every catalog's Spark configuration, one mapping."""
        merged: dict[str, str] = {}
        for name in sorted(self.catalogs):
            merged.update(self.catalogs[name].conf())
        return merged


def is_secret(key: str) -> bool:
    """Whether a property (or a Spark configuration key) holds a credential, by its name."""
    name = key.upper().replace("-", "_").replace(".", "_")
    return any(word in name for word in CATALOG_SECRET_WORDS + _MORE_SECRET_WORDS)


def spark_catalogs(definitions: Mapping[str, Mapping[str, str]], environ: Mapping[str, str] | None = None) -> SparkCatalogs:
    """Spark's configuration for every catalog of ``definitions`` (name -> pyiceberg properties,
    as :meth:`IcebergCatalogs.definitions` merges them); ``environ`` (default: this process's) is
    where a JDBC password may also come from (``PGPASSWORD``)."""
    environ = os.environ if environ is None else environ
    found, skipped = {}, {}
    for name in sorted(definitions):
        try:
            found[name] = spark_catalog(name, definitions[name], environ)
        except SkipCatalog as reason:
            skipped[name] = str(reason)
    return SparkCatalogs(found, skipped)


def spark_catalog(name: str, properties: Mapping[str, str], environ: Mapping[str, str] | None = None) -> SparkCatalog:
    """One catalog as Spark gets it (see the module's table); raises :class:`SkipCatalog` with the
    reason when Spark cannot be given it."""
    environ = os.environ if environ is None else environ
    name = name.lower()
    if name == "spark_catalog":
        raise SkipCatalog("'spark_catalog' is Spark's built-in session catalog: configure it under spark.conf "
                          "(org.apache.iceberg.spark.SparkSessionCatalog)")
    if not name.replace("_", "").isalnum():
        raise SkipCatalog(f"{name!r} is not a name Spark SQL can address (letters, digits and _ only)")
    props = {str(k): str(v) for k, v in properties.items()}
    kind = _catalog_type(props)
    own = {key[len("spark."):]: value for key, value in props.items() if key.startswith("spark.") and len(key) > 6}
    translate = _TRANSLATORS.get(kind)
    if translate is None:
        raise SkipCatalog(f"type {kind!r}: piitracer generates Spark's catalog for the types "
                          f"{', '.join(sorted(_TRANSLATORS))}; configure this one under spark.conf "
                          f"(spark.sql.catalog.{name}.*) if Spark should reach it")
    used: set[str] = {"type"} | {key for key in props if key.startswith("spark.")}
    java, driver, needs = translate(name, props, environ, used)
    storage, storage_needs = _file_io(props, java, kind, used)
    java = {**storage, **java}
    needs = tuple(dict.fromkeys((*needs, *storage_needs)))
    java.update(own)  # a definition's spark.<prop> is Spark's own word for this catalog: it wins
    dropped = tuple(sorted(key for key in props if key not in used))
    return SparkCatalog(name, java.get("type", kind), java, driver, needs, dropped)


def _catalog_type(props: Mapping[str, str]) -> str:
    """The catalog's type as pyiceberg would take it: ``type``, else inferred from the uri."""
    if props.get("py-catalog-impl"):
        raise SkipCatalog("py-catalog-impl names a Python catalog class, which Spark cannot load")
    kind = props.get("type", "").strip().lower()
    if kind:
        return kind
    uri = props.get("uri", "")
    if uri.startswith("http"):
        return "rest"
    if uri.startswith("thrift"):
        return "hive"
    if uri.startswith(("sqlite", "postgresql")):
        return "sql"
    raise SkipCatalog("no 'type', and none can be inferred from its uri (as pyiceberg infers it)")


def _take(props: Mapping[str, str], used: set[str], *keys: str) -> dict[str, str]:
    """The properties among ``keys`` that are set, marked used."""
    taken = {key: props[key] for key in keys if props.get(key) not in (None, "")}
    used.update(taken)
    return taken


def _with_prefix(props: Mapping[str, str], used: set[str], prefix: str) -> dict[str, str]:
    taken = {key: value for key, value in props.items() if key.startswith(prefix) and len(key) > len(prefix)}
    used.update(taken)
    return taken


# ---- one translator per type: (java properties, jdbc driver, classes needed) --------------------

def _sql(name: str, props: Mapping[str, str], environ: Mapping[str, str], used: set[str]):
    uri = props.get("uri")
    if not uri:
        raise SkipCatalog("a sql catalog needs 'uri'")
    used.add("uri")
    if "warehouse" not in props:
        raise SkipCatalog("Spark's JDBC catalog needs a 'warehouse' (where new tables go)")
    java = {"type": "jdbc", **_take(props, used, "warehouse")}
    java.update(_with_prefix(props, used, "jdbc."))  # the Java catalog's own jdbc.* settings, if a definition has them
    java.setdefault("jdbc.schema-version", JDBC_SCHEMA_VERSION)
    if uri.startswith("jdbc:"):  # a definition for Spark only (pyiceberg has no jdbc type): taken as written
        database = uri.split(":", 2)[1].lower()
        java["uri"] = uri
        return java, DRIVERS.get(database), ()
    from sqlalchemy.engine import make_url  # pyiceberg's sql catalog parses its uri the same way

    try:
        url = make_url(uri)
    except Exception:  # SQLAlchemy's ArgumentError: the uri itself may hold a password, never shown
        raise SkipCatalog("its uri is not a SQLAlchemy database URL") from None
    database = url.get_backend_name()
    if database == "sqlite":
        if not url.database or url.database == ":memory:" or "mode=memory" in str(url.query):
            raise SkipCatalog("an in-memory SQLite catalog lives in one process: Spark cannot share it")
        java["uri"] = f"jdbc:sqlite:{url.database}"
    elif database in _DEFAULT_PORTS:
        query = {str(k): str(v) for k, v in url.query.items()}
        postgres = database == "postgresql"
        host = url.host or query.pop("host", None) or (environ.get("PGHOST") if postgres else None)
        if not host or host.startswith("/"):
            raise SkipCatalog("Spark's JDBC driver needs a host and port (it cannot use a Unix socket): give the uri "
                              "a host")
        port = url.port or (environ.get("PGPORT") if postgres else None) or _DEFAULT_PORTS[database]
        user = url.username or query.pop("user", None) or (environ.get("PGUSER") if postgres else None)
        password = url.password or query.pop("password", None) or (environ.get("PGPASSWORD") if postgres else None)
        address = f"[{host}]" if ":" in host else host
        suffix = f"?{urlencode(sorted(query.items()))}" if query else ""
        java["uri"] = f"jdbc:{database}://{address}:{port}/{quote(url.database or '', safe='')}{suffix}"
        if user:
            java["jdbc.user"] = str(user)
        if password:
            java["jdbc.password"] = str(password)
    else:
        raise SkipCatalog(f"a sql catalog on {database!r}: piitracer translates PostgreSQL, SQLite and MySQL uris for "
                          "Spark's JDBC catalog")
    return java, DRIVERS[database], ()


_REST_KEYS = ("uri", "warehouse", "credential", "token", "scope", "audience", "resource", "oauth2-server-uri", "prefix",
              "token-refresh-enabled", "token-exchange-enabled", "token-expires-in-ms", "rest.sigv4-enabled",
              "rest.signing-region", "rest.signing-name")


def _rest(name: str, props: Mapping[str, str], environ: Mapping[str, str], used: set[str]):
    if not props.get("uri"):
        raise SkipCatalog("a rest catalog needs 'uri'")
    java = {"type": "rest", **_take(props, used, *_REST_KEYS), **_with_prefix(props, used, "header.")}
    signed = props.get("rest.sigv4-enabled", "").lower() == "true"
    return java, None, (AWS_CLASSES["sigv4"],) if signed else ()


def _glue(name: str, props: Mapping[str, str], environ: Mapping[str, str], used: set[str]):
    java = {"type": "glue", **_take(props, used, "warehouse", "glue.id", "glue.endpoint", "glue.skip-archive")}
    region = _take(props, used, "glue.region").get("glue.region")
    if region:
        java["client.region"] = region
    # glue.profile-name and glue.access-key-id/secret-access-key/session-token have no Java
    # equivalent: Spark's Glue client takes credentials from the AWS default chain (AWS_* variables,
    # profiles, instance roles). They stay unused (listed in 'dropped').
    return java, None, (AWS_CLASSES["glue"], AWS_CLASSES["s3"])


def _hive(name: str, props: Mapping[str, str], environ: Mapping[str, str], used: set[str]):
    if not props.get("uri"):
        raise SkipCatalog("a hive catalog needs 'uri' (thrift://host:9083)")
    return {"type": "hive", **_take(props, used, "uri", "warehouse")}, None, ()


def _hadoop(name: str, props: Mapping[str, str], environ: Mapping[str, str], used: set[str]):
    if not props.get("warehouse"):
        raise SkipCatalog("a hadoop catalog needs 'warehouse' (the folder its tables live in)")
    return {"type": "hadoop", **_take(props, used, "warehouse")}, None, ()


_TRANSLATORS = {"sql": _sql, "jdbc": _sql, "rest": _rest, "glue": _glue, "hive": _hive, "hadoop": _hadoop}


def _file_io(props: Mapping[str, str], java: Mapping[str, str], kind: str, used: set[str]) -> tuple[dict[str, str], tuple[str, ...]]:
    """The FileIO properties (``s3.*`` and the AWS client's), and the classes they need."""
    found = _take(props, used, "s3.endpoint", "s3.access-key-id", "s3.secret-access-key", "s3.session-token",
                  "s3.sse.type", "s3.sse.key", "s3.sse.md5", "s3.acl", "s3.remote-signing-enabled", "s3.path-style-access",
                  "client.region", "io-impl")
    # pyiceberg's generic AWS properties (client.*) apply to its S3 FileIO when no s3.* one is given.
    for generic in ("access-key-id", "secret-access-key", "session-token"):
        if props.get(f"client.{generic}") and f"s3.{generic}" not in found:
            found[f"s3.{generic}"] = props[f"client.{generic}"]
            used.add(f"client.{generic}")
    region = _take(props, used, "s3.region").get("s3.region")
    if region and "client.region" not in found:
        found["client.region"] = region
    virtual = _take(props, used, "s3.force-virtual-addressing").get("s3.force-virtual-addressing", "").lower() == "true"
    if "s3.endpoint" in found and "s3.path-style-access" not in found:
        # pyarrow (pyiceberg's FileIO) addresses a custom endpoint path-style unless forced virtual.
        found["s3.path-style-access"] = "false" if virtual else "true"
    warehouse = str(java.get("warehouse", "")).lower()
    on_s3 = urlparse(warehouse).scheme in S3_SCHEMES
    s3_given = any(key.startswith("s3.") for key in found)
    if "io-impl" not in found and kind not in ("glue",):  # Glue's default FileIO is S3FileIO already
        if on_s3:
            found["io-impl"] = S3_FILE_IO
        elif s3_given:
            found["io-impl"] = RESOLVING_FILE_IO
    needs = (AWS_CLASSES["s3"],) if found.get("io-impl") == S3_FILE_IO else ()
    return found, needs
