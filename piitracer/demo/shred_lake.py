"""The crypto-shredding demo's lakehouse (``piitracer demo --shred``, issue 42): prod-like tables
that store a person's PII as ciphertext under that person's own key, built the way a pipeline
would with the shred library, delta-rs and pyiceberg (no Spark to build it).

- ``prod.payments`` (Delta): the demo's synthetic payments (:mod:`piitracer.demo.synthetic`),
  ``pan`` encrypted deterministically (AES-SIV: a join key), ``phone`` and ``aadhaar_ref``
  randomised (AES-GCM); four loads of two weeks each, so four versions of history;
- ``analytics.cards`` (Delta) and ``analytics.cards_ice`` (Iceberg, pyiceberg's sql catalog over
  SQLite): copies of the ciphertext, four versions and four snapshots;
- ``analytics.contacts_clear`` (Delta): a job decrypted ``pan`` and ``phone`` into plaintext, so
  the plan erases it physically;
- ``prod.key_vault`` (Delta): the key vault (``shred.vault``), every key wrapped under the demo
  folder's master key.

The workspace (``piitracer.yaml`` with the whole catalog, ``sql/pipelines.sql`` for the lineage)
is written once and never overwritten; the lakehouse is built once (a marker in the state folder)
and reused unless rebuilt."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping

import pyarrow as pa
import pyarrow.compute as pc
import yaml

from piitracer.crypto.envelope import MasterKey
from piitracer.demo import synthetic
from piitracer.demo.iceberg_tables import DemoBuildError
from piitracer.shred.cipher import ShredColumns, decrypt_batch, encrypt_batch
from piitracer.shred.delta_vault import delta_vault
from piitracer.workspace.layout import StateLayout
from piitracer.workspace.model import WORKSPACE_FILE, Workspace

SHRED_ROWS = 3000  # payments: 250 people, about 12 payments each
SHRED_SEED = 42
# A fixed last payment date: the same rows (and ciphertext under the same people) on every build.
ANCHOR = date(2026, 11, 20)
LOADS = 4  # the pipeline's loads: versions of each Delta table, snapshots of the Iceberg table
MARKER = StateLayout.relative("demo-shred-lakehouse.json")
ICEBERG_CATALOG = "ice"  # pyiceberg's sql catalog (SQLite) holding analytics.cards_ice
SOURCE = "prod.payments"
SOURCE_COLUMN = "prod.payments.user_id"
VAULT = "prod.key_vault"
CLEAR = "analytics.contacts_clear"
# What the pipeline encrypted in each table that holds ciphertext (the catalog says the same of
# the source; the lineage carries it to the copies).
PAYMENTS_SPEC = ShredColumns(key="user_id", deterministic=("pan",), randomised=("phone", "aadhaar_ref"))
CARDS_SPEC = ShredColumns(key="user_id", deterministic=("pan",))
SHREDDED_SPECS = {SOURCE: PAYMENTS_SPEC, "analytics.cards": CARDS_SPEC, "analytics.cards_ice": CARDS_SPEC}
PLAIN_TYPES = {"pan": pa.string(), "phone": pa.string(), "aadhaar_ref": pa.string()}
# Where each table lives under the workspace.
FOLDERS = {SOURCE: "lake/payments", "analytics.cards": "lake/cards", "analytics.cards_ice": "lake/iceberg/analytics/cards_ice",
           CLEAR: "lake/contacts_clear", VAULT: "lake/key_vault"}
COLUMNS = {SOURCE: ["user_id", "pan", "phone", "aadhaar_ref", "amount", "merchant_id", "dt"],
           "analytics.cards": ["user_id", "pan", "amount", "dt"], "analytics.cards_ice": ["user_id", "pan", "amount", "dt"],
           CLEAR: ["user_id", "pan", "phone"], VAULT: ["lookup", "wrapped"]}
PIPELINES_SQL = f"""-- The jobs of the crypto-shredding demo (piitracer demo --shred): what the lineage reads.
-- Copies of the ciphertext: shredded with the key.
INSERT INTO analytics.cards SELECT user_id, pan, amount, dt FROM prod.payments WHERE amount > 0;
INSERT INTO {ICEBERG_CATALOG}.analytics.cards_ice SELECT user_id, pan, amount, dt FROM prod.payments;
-- A job that decrypts into plaintext: erased physically.
INSERT INTO analytics.contacts_clear
SELECT user_id, piitracer_decrypt(pan) AS pan, piitracer_decrypt(phone) AS phone FROM prod.payments;
"""


@dataclass
class ShredBuild:
    """What :func:`build_shred_lake` found or made."""

    reused: bool
    rows: int
    people: int
    seed: int
    anchor: str  # the latest payment date (ISO)
    loads: int
    built_at: str
    seconds: float = 0.0


def iceberg_properties(root: Path) -> dict[str, str]:
    """pyiceberg's properties of the demo's sql catalog (a SQLite file beside the tables)."""
    lake = Path(root).absolute() / "lake"
    return {"type": "sql", "uri": f"sqlite:///{lake / 'iceberg_catalog.db'}", "warehouse": f"file://{lake / 'iceberg'}"}


def is_shred_workspace(folder: Path) -> bool:
    """``folder`` holds a shred demo workspace (its ``piitracer.yaml`` names the key vault)."""
    path = Path(folder) / WORKSPACE_FILE
    if not path.is_file():
        return False
    config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return isinstance(config, dict) and (config.get("shred") or {}).get("vault") == VAULT


def prepare_shred_workspace(folder: Path, spark: Mapping[str, Any] | None = None) -> Path:
    """Write the shred demo's workspace into ``folder`` unless it is there (never overwritten).

    Args:
        folder: the demo's folder (made when missing).
        spark: settings that replace the defaults of the workspace's ``spark:`` section (the
            resolve step reads the source on local Spark; tests point it at their running session).

    Returns:
        The workspace folder.

    Raises:
        DemoBuildError: the folder holds another workspace (the main demo's, or any other).
    """
    folder = Path(folder).absolute()
    if is_shred_workspace(folder):
        return folder
    if (folder / WORKSPACE_FILE).exists():
        raise DemoBuildError(f"{folder / WORKSPACE_FILE}: another workspace is there (not the crypto-shredding demo's); "
                             "give demo --shred another --dir")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sql").mkdir(exist_ok=True)
    (folder / "sql" / "pipelines.sql").write_text(PIPELINES_SQL, encoding="utf-8")
    place = {name: str(folder / relative) for name, relative in FOLDERS.items()}
    catalog: dict[str, dict[str, Any]] = {
        SOURCE: {"format": "delta", "location": place[SOURCE], "columns": COLUMNS[SOURCE], "identifiers": ["user_id"],
                 "subject_key": "user_id", "column_types": {"user_id": "bigint"},
                 "shredded": {"key": "user_id", "columns": list(PAYMENTS_SPEC.columns)}, "owner": "payments-platform",
                 "description": "Card and UPI payments; pan, phone and aadhaar_ref stored as ciphertext under each person's key."},
        "analytics.cards": {"format": "delta", "location": place["analytics.cards"], "columns": COLUMNS["analytics.cards"],
                            "description": "Card payments: a copy of the ciphertext."},
        "analytics.cards_ice": {"format": "iceberg", "table": f"{ICEBERG_CATALOG}.analytics.cards_ice",
                                "location": place["analytics.cards_ice"], "columns": COLUMNS["analytics.cards_ice"],
                                "description": "Every payment's card: a copy of the ciphertext, in Iceberg."},
        CLEAR: {"format": "delta", "location": place[CLEAR], "columns": COLUMNS[CLEAR],
                "description": "Contact points a job decrypted into plaintext."},
        VAULT: {"format": "delta", "location": place[VAULT], "columns": COLUMNS[VAULT],
                "description": "The key vault: one key per person, wrapped under the master key."},
    }
    config = {
        "version": 1,
        "lineage": {"sql": [{"path": "sql", "dialect": "spark"}]},
        "warehouse_roots": [str(folder / "lake"), str(folder / "warehouse")],
        "spark": {"master": "local[2]", "catalog": "lake", "warehouse": str(folder / "warehouse"), "driver_memory": "1g",
                  **dict(spark or {})},
        "iceberg": {"catalogs": {ICEBERG_CATALOG: iceberg_properties(folder)}},
        "shred": {"vault": VAULT},
        "catalog": catalog,
    }
    header = ("# The crypto-shredding demo (piitracer demo --shred): payments whose PII is ciphertext under each\n"
              "# person's key, two copies of the ciphertext (Delta, Iceberg), a table a job decrypted, the key vault.\n")
    (folder / WORKSPACE_FILE).write_text(header + yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return folder


def shred_payments(rows: int, seed: int, anchor: date) -> pa.Table:
    """The plaintext payments, sorted by date (the subject :data:`~piitracer.demo.synthetic.SUBJECT_USER_ID`
    has six of them, in every load): the same arguments give the same rows."""
    merchants = synthetic.merchants()
    return synthetic.payments(rows, synthetic.DemoCalendar(anchor), merchants.column("merchant_id").to_numpy(), seed=seed)


def loads(payments: pa.Table, count: int = LOADS) -> list[pa.Table]:
    """The payments split into ``count`` loads by date (consecutive dates, oldest first)."""
    days = sorted(set(payments.column("dt").to_pylist()))
    per = -(-len(days) // count)
    return [payments.filter(pc.is_in(payments["dt"], pa.array(days[i:i + per], pa.date32())))
            for i in range(0, len(days), per)]


def marker_path(root: Path) -> Path:
    return Path(root) / MARKER


def lake_present(workspace: Workspace) -> bool:
    """A finished build is there: its marker and every table's folder."""
    return marker_path(workspace.root).is_file() and all((workspace.root / f).is_dir() for f in FOLDERS.values())


def build_shred_lake(workspace: Workspace, master: MasterKey, rows: int = SHRED_ROWS, seed: int = SHRED_SEED,
                     rebuild: bool = False, progress: Callable[[str], None] | None = None) -> ShredBuild:
    """Build the shred demo's lakehouse under the workspace's ``lake/`` unless a finished build
    is there (``rebuild``: delete ``lake/`` and build again).

    Args:
        workspace: the shred demo's workspace (:func:`prepare_shred_workspace`).
        master: the master key the vault wraps every person's key under.
        rows: payments to generate (at least 100).
        seed: the generator's seed.
        rebuild: build again even when a finished build is there.
        progress: gets one line per table written.

    Returns:
        What was found or built.

    Raises:
        DemoBuildError: too few rows, or the workspace is not the shred demo's.
    """
    say = progress or (lambda line: None)
    root = Path(workspace.root).absolute()
    if not is_shred_workspace(root):
        raise DemoBuildError(f"{root}: not the crypto-shredding demo's workspace")
    if lake_present(workspace) and not rebuild:
        found = json.loads(marker_path(root).read_text(encoding="utf-8"))
        return ShredBuild(reused=True, **found)
    if rows < 100:
        raise DemoBuildError(f"rows: {rows} payments are too few (at least 100)")
    started = time.monotonic()
    marker_path(root).unlink(missing_ok=True)
    shutil.rmtree(root / "lake", ignore_errors=True)  # only the demo's own folder, inside its workspace
    (root / "lake" / "iceberg").mkdir(parents=True)
    payments = shred_payments(rows, seed, ANCHOR)
    from deltalake import write_deltalake
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog(ICEBERG_CATALOG, **iceberg_properties(root))
    catalog.create_namespace("analytics")
    ice = None
    place = {name: str(root / relative) for name, relative in FOLDERS.items()}
    with delta_vault(place[VAULT], master) as vault:
        for number, load in enumerate(loads(payments)):
            # What the pipeline writes: the source's PII encrypted under each person's key, the
            # copies of that ciphertext, and what a decrypting job made of it.
            encrypted = pa.Table.from_batches([encrypt_batch(load, vault, PAYMENTS_SPEC)])
            cards = encrypted.select(COLUMNS["analytics.cards"])
            write_deltalake(place[SOURCE], encrypted, mode="append")
            write_deltalake(place["analytics.cards"], cards.filter(pc.greater(cards["amount"], 0)), mode="append")
            if ice is None:
                ice = catalog.create_table("analytics.cards_ice", schema=cards.schema, location=place["analytics.cards_ice"])
            ice.append(cards)
            clear = pa.Table.from_batches([decrypt_batch(encrypted, vault, PAYMENTS_SPEC, PLAIN_TYPES)])
            write_deltalake(place[CLEAR], clear.select(COLUMNS[CLEAR]), mode="append")
            say(f"  load {number + 1}: {load.num_rows:,} payments encrypted and written to 4 tables")
    built = ShredBuild(reused=False, rows=payments.num_rows, people=len(pc.unique(payments["user_id"])), seed=seed,
                       anchor=ANCHOR.isoformat(), loads=LOADS,
                       built_at=datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
                       seconds=round(time.monotonic() - started, 3))
    marker_path(root).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    found = {k: v for k, v in asdict(built).items() if k != "reused"}
    marker_path(root).write_text(json.dumps(found, indent=2) + "\n", encoding="utf-8")
    return built
