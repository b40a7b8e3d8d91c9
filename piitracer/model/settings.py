"""How piitracer reaches and runs the lakehouse, as ``piitracer.yaml`` says it: object storage
(``storage:``), Spark (``spark:``), Iceberg catalogs and engine (``iceberg:``), where file work runs
(``verify:``, ``rewrite:``), classification (``classify:``) and piitracer's own OpenLineage runs
(``openlineage:``). Credentials are never among them: a key that names one is refused."""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import Field, field_validator

from piitracer.model.lineage import Frozen


SECRET_WORDS = ("SECRET", "PASSWORD", "TOKEN", "ACCESS_KEY")  # in a key's name: it holds a credential


def secret_keys(value: Any, words: tuple[str, ...] = SECRET_WORDS, path: str = "") -> list[str]:
    """Keys of a (nested) mapping whose names hold one of ``words`` (case-insensitive; '-' as '_'):
    credentials, which belong in the environment or a profile, never in piitracer.yaml."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if any(word in str(key).upper().replace("-", "_") for word in words):
                found.append(where)
            found += secret_keys(item, words, where)
    return found


class StorageOptions(Frozen):
    """How piitracer reaches an object store. Never secrets: credentials come from the
    ecosystem's own places (AWS_* variables and profiles, GOOGLE_APPLICATION_CREDENTIALS, ...)."""

    endpoint: str | None = Field(None, description="An S3-compatible endpoint URL (http://127.0.0.1:9000).")
    region: str | None = None
    path_style: bool | None = Field(None, description="Path-style requests (bucket in the path), as most S3-compatible stores need.")
    allow_http: bool | None = Field(None, description="Allow a plain-http endpoint.")
    unsafe_rename: bool | None = Field(
        None, description="delta-rs commits on S3 without a lock (AWS_S3_ALLOW_UNSAFE_RENAME): only with one writer per table.")
    extra: dict[str, str] = Field(default_factory=dict, description="Further delta-rs storage_options, passed as given.")

    @field_validator("extra")
    @classmethod
    def _no_secrets(cls, value: dict[str, str]) -> dict[str, str]:
        secret = secret_keys(value)
        if secret:
            raise ValueError(f"{secret}: keep credentials in the environment or a profile, not in piitracer.yaml")
        return value

    def __hash__(self) -> int:  # filesystems are cached per options
        return hash(self.model_dump_json())


class StorageSettings(StorageOptions):
    """The ``storage:`` block: defaults, and overrides per location prefix (``s3://eu-lake/``)."""

    prefixes: dict[str, StorageOptions] = Field(default_factory=dict)


class LineageEmitSettings(Frozen):
    """The ``openlineage:`` block: piitracer reports its own runs as OpenLineage jobs (START, then
    COMPLETE or FAIL, the datasets it changed as outputs) through openlineage-python's transport."""

    transport: dict[str, Any] = Field(description="openlineage-python's transport config, e.g. {type: http, url: "
                                      "'http://marquez:5000', endpoint: api/v1/lineage}; no credentials here.")
    api_key_env: str | None = Field(None, description="Environment variable holding the HTTP transport's API key "
                                    "(sent as a bearer token).")
    namespace: str = Field("piitracer", description="The job namespace of piitracer's runs.")
    job_name: str = Field("piitracer.erase", description="The job name of piitracer's runs.")

    @field_validator("transport")
    @classmethod
    def _no_secrets(cls, value: dict[str, Any]) -> dict[str, Any]:
        secret = secret_keys(value, SECRET_WORDS + ("APIKEY", "API_KEY"))  # openlineage-python's auth.apiKey
        if secret:
            raise ValueError(f"{secret}: keep credentials in the environment (api_key_env), not in piitracer.yaml")
        if not isinstance(value.get("type"), str):
            raise ValueError("needs 'type' (http, console, file, kafka... as openlineage-python names them)")
        return value


class SparkSettings(Frozen):
    master: str = "local[2]"
    catalog: str = Field("lake", description="Name of the Iceberg catalog registered in Spark.")
    warehouse: str = Field("warehouse", description="Iceberg warehouse folder (relative to the workspace).")
    iceberg_jar: str | None = Field(None, description="Path of the Iceberg runtime jar; default: the one in the installed wheel.")
    packages: tuple[str, ...] = Field((), description="Maven coordinates for spark.jars.packages instead of the jar.")
    driver_memory: str = "1g"
    conf: dict[str, str] = Field(default_factory=dict, description="Extra Spark configuration.")


class IcebergEngine(str, Enum):
    """What runs an Iceberg table's steps (``iceberg.engine``)."""

    AUTO = "auto"  # Spark where it reaches the table's files (local folders); pyiceberg on object storage
    SPARK = "spark"  # Spark SQL and Iceberg's Java actions, through the catalog Spark is given
    PYICEBERG = "pyiceberg"  # pyiceberg (no JVM); piitracer removes expired and orphan files itself


# Catalog properties that hold a credential (or a URI with one in it): they belong in the environment
# (PYICEBERG_CATALOG__<NAME>__<PROP>) or .pyiceberg.yaml, never in piitracer.yaml.
CATALOG_SECRET_WORDS = SECRET_WORDS + ("CREDENTIAL", "ACCESS_KEY_ID", "SIGNING")


class IcebergSettings(Frozen):
    """The ``iceberg:`` block: the Iceberg catalogs the lakehouse keeps its tables in, written as
    pyiceberg users write them (``{prod: {type: sql, uri: ..., warehouse: s3://..., s3.endpoint: ...}}``),
    and which engine runs the Iceberg steps. pyiceberg's own configuration (``.pyiceberg.yaml``,
    ``PYICEBERG_CATALOG__<NAME>__<PROP>``) adds catalogs and properties, credentials included; a
    credential written here is refused."""

    catalogs: dict[str, dict[str, str]] = Field(
        default_factory=dict, description="Catalog name -> its pyiceberg properties (type: rest|sql|glue|hive|"
        "hadoop, uri, warehouse, s3.*, ...); the same definition configures Spark's catalog of that name.")
    engine: IcebergEngine = Field(IcebergEngine.AUTO, description="'auto': Spark for tables on local folders, "
                                  "pyiceberg for tables on object storage (Spark has no S3 connector unless "
                                  "configured); 'spark' or 'pyiceberg' for every Iceberg table.")

    @field_validator("catalogs", mode="before")
    @classmethod
    def _names_and_text(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        found = {}
        for name, properties in value.items():
            if not isinstance(properties, dict):
                raise ValueError(f"{name}: expected the catalog's properties as a mapping (type, uri, warehouse, ...)")
            found[str(name).lower()] = {str(k): v if isinstance(v, str) else str(v).lower() if isinstance(v, bool)
                                        else str(v) for k, v in properties.items()}
        return found

    @field_validator("catalogs")
    @classmethod
    def _no_secrets(cls, value: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        secret = secret_keys(value, CATALOG_SECRET_WORDS)
        with_password = [f"{name}.{key}" for name, properties in value.items() for key, text in properties.items()
                         if "://" in text and "@" in text.split("://", 1)[1].split("/", 1)[0]
                         and ":" in text.split("://", 1)[1].split("@", 1)[0]]
        if secret or with_password:
            raise ValueError(f"{sorted(secret + with_password)}: keep credentials in the environment "
                             "(PYICEBERG_CATALOG__<NAME>__<PROP>, AWS_*) or .pyiceberg.yaml, not in piitracer.yaml")
        return value


class TaskEngine(str, Enum):
    """Where per-file work (verify's decoding, plain Parquet and archive rewrites) runs."""

    AUTO = "auto"  # Spark tasks from spark_min_files files or spark_min_bytes bytes, else the driver
    DRIVER = "driver"  # this process, on a few threads (verify) or file after file: no Spark session needed
    SPARK = "spark"  # Spark tasks (a few per core) on spark.master


class FileWorkSettings(Frozen):
    """Where ``verify`` decodes files (``verify:``) and where plain Parquet and archive files are
    rewritten (``rewrite:``); ``piitracer verify --engine`` overrides the first."""

    engine: TaskEngine = TaskEngine.AUTO
    spark_min_files: int = Field(2000, ge=1, description="With engine auto: Spark tasks from this many files.")
    spark_min_bytes: int = Field(2 * 1024**3, ge=1, description="With engine auto: Spark tasks from this many bytes.")

    def wants_spark(self, files: int, size: int, engine: TaskEngine | None = None) -> bool:
        """Whether ``files`` files of ``size`` bytes go to Spark tasks (``engine`` overrides the
        setting's)."""
        chosen = engine or self.engine
        if chosen is not TaskEngine.AUTO:
            return chosen is TaskEngine.SPARK
        return files >= self.spark_min_files or size >= self.spark_min_bytes


class VerifySettings(FileWorkSettings):
    """The ``verify:`` block: where files are decoded, and whether the files piitracer rewrites are
    written for the next verification to prove without decoding rows (``prepare``)."""

    prepare: bool = Field(False, description="Rewritten files get Bloom filters on each dataset's identifier and "
                          "key columns, dictionary encoding and a page index (Iceberg: through table properties set "
                          "for the rewrite and restored after). A dataset's prepare_for_proof overrides it.")


class ClassifySettings(Frozen):
    """The ``classify:`` block: how ``catalog classify`` reads values."""

    countries: tuple[str, ...] = Field(("in", "us", "gb"), description="Countries (ISO 3166 codes) whose national and "
                                       "tax ids python-stdnum validates in sampled values.")
    phone_regions: tuple[str, ...] = Field(("IN", "US", "GB"), description="Regions a phone number written without "
                                           "its +country code is read in (E.164 numbers are read in any region).")
    min_values: int = Field(20, ge=1, description="Non-null values sampled per column to judge it by its values; "
                            "fewer (out of more rows): the column is reported too sparse to judge.")

    @field_validator("countries", "phone_regions")
    @classmethod
    def _two_letters(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for code in value:
            if not (len(code) == 2 and code.isalpha()):
                raise ValueError(f"{code!r} is not a two-letter country code")
        return value


SQLITE_VAULT_SUFFIXES = (".sqlite", ".db")


class ShredSettings(Frozen):
    """The ``shred:`` block: where the key vault of crypto-shredding is (issue 42). Erasing a
    subject of a dataset planned ``shred`` destroys the subject's key there; the proof decodes its
    files. The vault is part of the lakehouse: under the warehouse roots like every dataset."""

    vault: str = Field(description="The key vault the pipelines encrypt with: the id of a catalog dataset of "
                       "format delta (the vault as a Delta table, e.g. prod.key_vault), or the path of a SQLite vault "
                       "file ending .sqlite or .db (relative to the workspace unless absolute).")

    @field_validator("vault")
    @classmethod
    def _named(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("expected a catalog dataset id (a Delta vault table) or a SQLite vault file path")
        return value.strip()

    def dataset(self, catalog: Any) -> str | None:
        """The catalog dataset the vault is (a Delta table), or None when it is a SQLite file: a
        dataset of the catalog by that id wins over a file name."""
        return self.vault.lower() if self.vault.lower() in catalog else None
