"""Lakehouses built with the shred library where a declaration lies (issue 49), the way a pipeline
would write them (delta-rs, pyiceberg, pyarrow; no Spark): the catalog and the lineage say one thing,
the bytes another.

The honest core: ``crm.customers`` (Delta, two loads: two versions) keeps ``email`` (AES-SIV: a join
key) and ``phone`` (AES-GCM) as ciphertext under each customer's key, ``customer_id`` in plaintext,
and declares ``shredded: {key: customer_id, columns: [email, phone]}``; ``mart.emails_copy`` copies the
email ciphertext; ``mart.contacts_lc`` holds ``lower()`` of the decrypted e-mail (erased physically).
Each :class:`Scene` option adds one trap or one layout (see its fields). The subject is the smallest
id and their e-mail the column minimum: the worst case for statistics.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from deltalake import DeltaTable, write_deltalake
from spark_lakehouse import write_workspace

from piitracer.crypto.envelope import load_master_key
from piitracer.shred.cipher import ShredColumns, decrypt_batch, encrypt_batch
from piitracer.shred.delta_vault import delta_vault
from piitracer.shred.vault import sqlite_vault

SUBJECT = 4000
PEOPLE = list(range(4000, 4040))
SPEC = ShredColumns(key="customer_id", deterministic=("email",), randomised=("phone",))
PLAIN = {"email": pa.string(), "phone": pa.string()}


def email(person: int) -> str:
    return f"a{person}@example.org" if person == SUBJECT else f"person{person}@example.org"


def phone(person: int) -> str:
    return f"+91 98{person:08d}"


def clear(people: list[int]) -> pa.Table:
    return pa.table({"customer_id": pa.array(people, pa.int64()), "email": [email(p) for p in people],
                     "phone": [phone(p) for p in people], "city": [f"city{p % 5}" for p in people]})


LOADS = ([SUBJECT] + PEOPLE[1:20], PEOPLE[20:] + [SUBJECT])  # two loads, the subject in both


@dataclass
class Scene:
    """One lakehouse; the defaults are the honest core. Options:

    - ``lying``: ``mart.lying_copy``, whose SQL is an identity copy of the ciphertext, stores the
      decrypted e-mail and phone: ``"delta"`` or ``"iceberg"`` as strings, ``"binary"`` as the
      plaintext's UTF-8 bytes in binary columns (a Delta table);
    - ``source_phone``: ``crm.customers`` stores the declared ``phone`` in plaintext, ``"string"``
      or ``"binary"``;
    - ``other_vault``: the data is encrypted under another vault than the one ``shred.vault`` names
      (which holds a key for one of the other people: the same master key finds the same people);
    - ``mixed_case``: the tables store ``Customer_ID``, ``EMAIL``, ``Phone``;
    - ``bare``: ``mart.emails_bare`` keeps the e-mail ciphertext and no id (``"honest"``), or the
      plaintext's bytes (``"plaintext"``);
    - ``archive``: ``archive.customers`` (format archive of crm.customers, Parquet) holds the
      ciphertext (``"honest"``) or the decrypted values as strings (``"plaintext"``);
    - ``plaintext_history``: ``crm.customers``'s first version stored the e-mail and phone as text;
      the second overwrote them with ciphertext;
    - ``vault``: ``"sqlite"`` (a file) or ``"delta"`` (``prod.key_vault``); ``vault_copy``: a
      catalogued ``"replica"`` of the Delta vault (its files copied), or an ``"archive"`` of it;
    - ``joined``: ``mart.joined`` joins customers to the copy on the e-mail ciphertext (AES-SIV);
    - ``only_subject``: ``mart.subject_only`` copies only the subject's ciphertext rows.
    """

    root: Path
    lying: str | None = None
    source_phone: str | None = None
    other_vault: bool = False
    mixed_case: bool = False
    bare: str | None = None
    archive: str | None = None
    plaintext_history: bool = False
    vault: str = "sqlite"
    vault_copy: str | None = None
    joined: bool = False
    only_subject: bool = False
    catalog: dict = field(default_factory=dict)

    @property
    def lake(self) -> Path:
        return self.root / "lake"

    @property
    def vault_path(self) -> Path:
        return self.lake / ("vault.sqlite" if self.vault == "sqlite" else "key_vault")

    def open_vault(self, path: Path | None = None):
        path = path or (self.lake / "other.sqlite" if self.other_vault else self.vault_path)
        opener = sqlite_vault if str(path).endswith(".sqlite") else delta_vault
        return opener(path, load_master_key())

    def names(self, *columns: str) -> list[str]:
        """Column names as the tables store them."""
        spelt = {"customer_id": "Customer_ID", "email": "EMAIL", "phone": "Phone"} if self.mixed_case else {}
        return [spelt.get(c, c) for c in columns]

    def spec(self) -> ShredColumns:
        key, mail, tel = self.names("customer_id", "email", "phone")
        return ShredColumns(key=key, deterministic=(mail,), randomised=(tel,) if self.source_phone is None else ())

    def build(self, warehouse: Path) -> Path:
        """Write the tables and the workspace; returns the workspace folder."""
        self.lake.mkdir(parents=True)
        vault = self.open_vault()
        if self.other_vault:  # the named vault: the same master key, one other person's key, not the data's keys
            with self.open_vault(self.vault_path) as named:
                named.keys_for([PEOPLE[5]])
        for number, people in enumerate(LOADS):
            plain = clear(people).rename_columns(self.names("customer_id", "email", "phone", "city"))
            encrypted = pa.Table.from_batches([encrypt_batch(plain, vault, self.spec())])
            if self.source_phone == "binary":
                encrypted = encrypted.set_column(2, self.names("phone")[0],
                                                 pa.array([p.encode() for p in plain.column(2).to_pylist()], pa.binary()))
            if self.plaintext_history and number == 0:
                write_deltalake(str(self.lake / "customers"), plain, mode="append")
            elif self.plaintext_history:  # the second version overwrites the text with ciphertext
                write_deltalake(str(self.lake / "customers"), encrypted, mode="overwrite", schema_mode="overwrite")
            else:
                write_deltalake(str(self.lake / "customers"), encrypted, mode="append")
            key, mail = self.names("customer_id", "email")
            write_deltalake(str(self.lake / "emails_copy"), encrypted.select([key, mail]), mode="append")
            write_deltalake(str(self.lake / "contacts_lc"), pa.table({
                "customer_id": plain.column(0), "email_lc": [e.lower() for e in plain.column(1).to_pylist()]}), mode="append")
            self._traps(number, plain, encrypted)
        vault.close()
        return self._workspace(warehouse)

    def _traps(self, number: int, plain: pa.Table, encrypted: pa.Table) -> None:
        key, mail, tel = self.names("customer_id", "email", "phone")
        if self.lying in ("delta", "binary"):
            lie = plain.select([key, mail, tel])
            if self.lying == "binary":
                lie = pa.table({key: lie.column(0), mail: [v.encode() for v in lie.column(1).to_pylist()],
                                tel: [v.encode() for v in lie.column(2).to_pylist()]})
            write_deltalake(str(self.lake / "lying_copy"), lie, mode="append")
        if self.lying == "iceberg":
            self._iceberg_table().append(plain.select([key, mail, tel]))
        if self.bare:
            values = encrypted.column(1) if self.bare == "honest" else pa.array(
                [v.encode() for v in plain.column(1).to_pylist()], pa.binary())
            write_deltalake(str(self.lake / "emails_bare"), pa.table({mail: values}), mode="append")
        if self.archive:
            folder = self.lake / "archive" / f"export={number}"  # one export per load
            folder.mkdir(parents=True)
            table = encrypted if self.archive == "honest" else plain
            pq.write_table(table, folder / "part-0.parquet")
        if self.joined:
            write_deltalake(str(self.lake / "joined"), encrypted.select([key, mail]), mode="append")
        if self.only_subject:
            mine = encrypted.filter(pa.compute.equal(encrypted.column(0), SUBJECT)).select([key, mail])
            write_deltalake(str(self.lake / "subject_only"), mine, mode="append")

    def _iceberg_catalog(self):
        from pyiceberg.catalog.sql import SqlCatalog

        return SqlCatalog("ice", uri=f"sqlite:///{self.lake}/iceberg.db", warehouse=f"file://{self.lake}/iceberg")

    def _iceberg_table(self):
        catalog = self._iceberg_catalog()
        try:
            return catalog.load_table("mart.lying_copy")
        except Exception:
            catalog.create_namespace("mart")
            key, mail, tel = self.names("customer_id", "email", "phone")
            return catalog.create_table("mart.lying_copy", schema=pa.schema([(key, pa.int64()), (mail, pa.string()),
                                                                             (tel, pa.string())]))

    def _workspace(self, warehouse: Path) -> Path:
        lake = self.lake
        customers = {"format": "delta", "location": str(lake / "customers"), "identifiers": ["customer_id"],
                     "columns": ["customer_id", "email", "phone", "city"], "subject_key": "customer_id",
                     "column_types": {"customer_id": "bigint"},
                     "shredded": {"key": "customer_id", "columns": ["email", "phone"]}}
        catalog = {"crm.customers": customers,
                   "mart.emails_copy": {"format": "delta", "location": str(lake / "emails_copy")},
                   "mart.contacts_lc": {"format": "delta", "location": str(lake / "contacts_lc")}}
        sql = ["INSERT INTO mart.emails_copy SELECT customer_id, email FROM crm.customers;",
               "INSERT INTO mart.contacts_lc SELECT customer_id, lower(piitracer_decrypt(email)) AS email_lc "
               "FROM crm.customers;"]
        if self.lying in ("delta", "binary"):
            catalog["mart.lying_copy"] = {"format": "delta", "location": str(lake / "lying_copy")}
        if self.lying == "iceberg":
            catalog["mart.lying_copy"] = {"format": "iceberg", "table": "ice.mart.lying_copy",
                                          "location": self._iceberg_catalog().load_table("mart.lying_copy").location()}
        if self.lying:
            table = "ice.mart.lying_copy" if self.lying == "iceberg" else "mart.lying_copy"
            sql.append(f"INSERT INTO {table} SELECT customer_id, email, phone FROM crm.customers;")
        if self.bare:
            catalog["mart.emails_bare"] = {"format": "delta", "location": str(lake / "emails_bare")}
            sql.append("INSERT INTO mart.emails_bare SELECT email FROM crm.customers;")
        if self.archive:
            catalog["archive.customers"] = {"format": "archive", "location": str(lake / "archive"),
                                            "archive_of": {"dataset": "crm.customers", "schedule": "7d",
                                                           "retention": "365d"}}
        if self.joined:
            catalog["mart.joined"] = {"format": "delta", "location": str(lake / "joined")}
            sql.append("INSERT INTO mart.joined SELECT c.customer_id, e.email FROM crm.customers c "
                       "JOIN mart.emails_copy e ON c.email = e.email;")
        if self.only_subject:
            catalog["mart.subject_only"] = {"format": "delta", "location": str(lake / "subject_only")}
            sql.append("INSERT INTO mart.subject_only SELECT customer_id, email FROM crm.customers WHERE customer_id = 4000;")
        if self.vault == "delta":
            catalog["prod.key_vault"] = {"format": "delta", "location": str(self.vault_path), "columns": ["lookup", "wrapped"]}
            if self.vault_copy == "replica":
                shutil.copytree(self.vault_path, lake / "key_vault_dr")  # storage replication: the same files
                catalog["prod.key_vault"]["replicas"] = [{"name": "dr", "location": str(lake / "key_vault_dr"),
                                                          "managed_by": "replication", "propagation_wait": "1h"}]
            if self.vault_copy == "archive":
                (lake / "vault_archive").mkdir()
                pq.write_table(DeltaTable(str(self.vault_path)).to_pyarrow_table(), lake / "vault_archive" / "part-0.parquet")
                catalog["archive.key_vault"] = {"format": "archive", "location": str(lake / "vault_archive"),
                                                "archive_of": {"dataset": "prod.key_vault", "schedule": "7d",
                                                               "retention": "365d"}}
        self.catalog = catalog
        root = write_workspace(self.root / "ws", warehouse, catalog, "\n".join(sql) + "\n", roots=[str(lake), str(warehouse)])
        config = yaml.safe_load((root / "piitracer.yaml").read_text())
        config["shred"] = {"vault": "prod.key_vault" if self.vault == "delta" else str(self.vault_path)}
        if self.lying == "iceberg":
            config["iceberg"] = {"engine": "pyiceberg",  # Spark has no SQLite JDBC driver here
                                 "catalogs": {"ice": {"type": "sql", "uri": f"sqlite:///{lake}/iceberg.db",
                                                      "warehouse": f"file://{lake}/iceberg"}}}
        (root / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        return root

    # ---- reading back, apart from piitracer -------------------------------------------------

    def decrypted(self, folder: str, missing: str = "null") -> list[tuple]:
        """The current rows of one Delta table of the scene, decrypted with a fresh vault."""
        table = DeltaTable(str(self.lake / folder)).to_pyarrow_table()
        key, mail, tel = self.names("customer_id", "email", "phone")
        spec = ShredColumns(key=key, deterministic=tuple(c for c in (mail,) if c in table.column_names),
                            randomised=tuple(c for c in (tel,) if c in table.column_names))
        with self.open_vault() as vault:
            rows = decrypt_batch(table, vault, spec, {mail: pa.string(), tel: pa.string()}, missing=missing)
        return [tuple(r.values()) for r in pa.Table.from_batches([rows]).to_pylist()]


def digests(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` by its SHA-256."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}
