"""Crypto-shredding end to end through the session (issue 42, point 4 and the first acceptance point).

A pipeline (the shred library, delta-rs) keeps payments in a Delta table whose card and e-mail are
ciphertext under each person's key, with three versions of history; jobs copy the ciphertext to a
Delta table (analytics.cards) and an Iceberg table (analytics.cards_ice, pyiceberg's sql catalog,
three snapshots), and another decrypts it into plaintext (analytics.cards_clear). The keys live in
a Delta key vault catalogued as prod.key_vault (``shred.vault``). Erasing one person through
``piitracer.open(...)``: plan, execute, verify, certificate. Then, read independently of the
verifier (tests/support/byte_scan.py decodes every file):

- every file of the shredded tables is byte-identical before and after (no data file rewritten);
- their old versions (Delta versions, Iceberg snapshots) still read back, and decrypt for every
  other person;
- the person's key is gone from every decoded file of the vault (its lookup and its wrapped key);
- the person's stored ciphertext, in every version, fails to decrypt (SubjectShreddedError);
- the decrypted table is erased physically, to the bytes, every other row unchanged;
- verify is complete (the shredded tables crypto_shredded, the plaintext one erased), and the
  certificate says "crypto-shredded" per shredded dataset with the vault's evidence.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pytest
import yaml
from byte_scan import find_values
from deltalake import DeltaTable, write_deltalake
from spark_lakehouse import checksum, write_workspace

import piitracer
from piitracer.api import Keys
from piitracer.audit.keys import write_audit_key
from piitracer.crypto.envelope import load_master_key
from piitracer.crypto.signing import generate_signing_key
from piitracer.model.plan import Subject
from piitracer.model.verification import ErasureState
from piitracer.shred.cipher import ShredColumns, decrypt_batch, encrypt_batch
from piitracer.shred.delta_vault import delta_vault
from piitracer.shred.keys import SubjectShreddedError

PEOPLE = list(range(1000, 1100))
SUBJECT = 1000  # the smallest id: the worst case for statistics
SPEC = ShredColumns(key="user_id", deterministic=("card",), randomised=("email",))
PLAIN = {"card": pa.string(), "email": pa.string()}
SHREDDED = ("payments", "cards", "iceberg")
SQL = ("INSERT INTO analytics.cards SELECT user_id, card, amount FROM prod.payments WHERE amount > 0;\n"
       "INSERT INTO t.analytics.cards_ice SELECT user_id, card, amount FROM prod.payments;\n"
       "INSERT INTO analytics.cards_clear SELECT user_id, piitracer_decrypt(card) AS card, "
       "piitracer_decrypt(email) AS email FROM prod.payments;\n")


def card(person: int) -> str:
    return f"4111-0000-0000-{person:04d}" if person != SUBJECT else "0000-4111-0000-1000"  # the column minimum


def batch(people: list[int], version: int) -> pa.Table:
    return pa.table({"user_id": pa.array(people, pa.int64()), "card": [card(p) for p in people],
                     "email": [f"person{p}@example.org" for p in people],
                     "amount": [float(version * 1000 + p) for p in people]})


def iceberg_catalog(lake: Path):
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog("t", uri=f"sqlite:///{lake}/catalog.db", warehouse=f"file://{lake}/iceberg")


def build(lake: Path) -> None:
    """Three versions of payments (each person once per version), their ciphertext copied to cards
    (Delta) and cards_ice (Iceberg, pyiceberg's sql catalog: three snapshots), and cards_clear
    decrypted from them, the way a Spark job would with the shred library."""
    vault = delta_vault(lake / "key_vault", load_master_key())
    catalog = iceberg_catalog(lake)
    catalog.create_namespace("analytics")
    ice = catalog.create_table("analytics.cards_ice", schema=pa.schema([("user_id", pa.int64()), ("card", pa.binary()),
                                                                        ("amount", pa.float64())]))
    for version in range(3):
        plain = batch(PEOPLE, version)
        encrypted = pa.Table.from_batches([encrypt_batch(plain, vault, SPEC)])
        write_deltalake(str(lake / "payments"), encrypted, mode="append")
        write_deltalake(str(lake / "cards"), encrypted.select(["user_id", "card", "amount"]), mode="append")
        ice.append(encrypted.select(["user_id", "card", "amount"]))
        clear = pa.Table.from_batches([decrypt_batch(encrypted, vault, SPEC, PLAIN)])
        write_deltalake(str(lake / "cards_clear"), clear.select(["user_id", "card", "email"]), mode="append")
    vault.close()


def workspace(tmp_path: Path, warehouse: Path, lake: Path) -> Path:
    catalog = {
        "prod.payments": {"format": "delta", "location": str(lake / "payments"), "identifiers": ["user_id"],
                          "columns": ["user_id", "card", "email", "amount"], "subject_key": "user_id",
                          "column_types": {"user_id": "bigint"}, "shredded": {"key": "user_id", "columns": ["card", "email"]}},
        "analytics.cards": {"format": "delta", "location": str(lake / "cards"), "columns": ["user_id", "card", "amount"]},
        "analytics.cards_clear": {"format": "delta", "location": str(lake / "cards_clear"),
                                  "columns": ["user_id", "card", "email"]},
        "analytics.cards_ice": {"format": "iceberg", "table": "t.analytics.cards_ice", "columns": ["user_id", "card", "amount"],
                                "location": iceberg_catalog(lake).load_table("analytics.cards_ice").location()},
        "prod.key_vault": {"format": "delta", "location": str(lake / "key_vault"), "columns": ["lookup", "wrapped"]},
    }
    root = write_workspace(tmp_path / "ws", warehouse, catalog, SQL, roots=[str(lake), str(warehouse)])
    config = yaml.safe_load((root / "piitracer.yaml").read_text())
    config["shred"] = {"vault": "prod.key_vault"}
    config["iceberg"] = {"catalogs": {"t": {"type": "sql", "uri": f"sqlite:///{lake}/catalog.db",
                                            "warehouse": f"file://{lake}/iceberg"}}}
    (root / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return root


def digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def decrypted(location: Path, version: int | None = None, missing: str = "null") -> list[tuple]:
    """Every row of one version of a shredded table, decrypted (a shredded person's values as null)."""
    table = DeltaTable(str(location), version=version).to_pyarrow_table()
    with delta_vault(location.parent / "key_vault", load_master_key()) as vault:
        spec = ShredColumns(key="user_id", deterministic=("card",),
                            randomised=tuple(c for c in ("email",) if c in table.column_names))
        rows = pa.Table.from_batches([decrypt_batch(table, vault, spec, PLAIN, missing=missing)]).to_pylist()
    return [tuple(r.values()) for r in rows]


def iceberg_decrypted(lake: Path, snapshot: int, missing: str = "null") -> list[tuple]:
    """One snapshot of the Iceberg copy read back by pyiceberg and decrypted."""
    table = iceberg_catalog(lake).load_table("analytics.cards_ice").scan(snapshot_id=snapshot).to_arrow()
    with delta_vault(lake / "key_vault", load_master_key()) as vault:
        rows = decrypt_batch(table, vault, ShredColumns(key="user_id", deterministic=("card",)), PLAIN, missing=missing)
    return [tuple(r.values()) for r in pa.Table.from_batches([rows]).to_pylist()]


def plain_rows(location: Path) -> list[tuple]:
    return [tuple(r.values()) for r in DeltaTable(str(location)).to_pyarrow_table().to_pylist()]


def expected(version: int, columns: tuple[str, ...], people=PEOPLE) -> list[tuple]:
    plain = batch(people, version).to_pylist()
    return [tuple(r[c] for c in columns) for r in plain]


@pytest.fixture()
def keys(tmp_path: Path) -> Keys:
    write_audit_key(tmp_path / "audit.key")
    generate_signing_key(tmp_path / "signing.key")  # returns the public key's path
    return Keys.load(tmp_path / "audit.key", signing_key_file=tmp_path / "signing.key")


def test_one_person_is_crypto_shredded_and_their_plaintext_copy_erased(tmp_path: Path, warehouse: Path, keys: Keys) -> None:
    lake = tmp_path / "lake"
    build(lake)
    root = workspace(tmp_path, warehouse, lake)
    with delta_vault(lake / "key_vault", load_master_key()) as vault:
        lookup = vault.lookup.of(SUBJECT)
        wrapped = vault.backend.find([lookup])[lookup]
    secrets_of_subject = [card(SUBJECT), f"person{SUBJECT}@example.org"]
    before = {name: digests(lake / name) for name in SHREDDED}
    snapshots = [s.snapshot_id for s in iceberg_catalog(lake).load_table("analytics.cards_ice").snapshots()]
    assert len(snapshots) == 3
    others_clear = checksum(r for r in plain_rows(lake / "cards_clear") if r[0] != SUBJECT)
    # The test can fail: before the erasure the key is in the vault and the plaintext in cards_clear.
    assert find_values(lake / "key_vault", [lookup]) and find_values(lake / "key_vault", [wrapped])
    assert find_values(lake / "cards_clear", secrets_of_subject + [SUBJECT])
    assert decrypted(lake / "payments", missing="raise")  # everyone decrypts

    with piitracer.open(root, keys) as session:
        subject = Subject(value=str(SUBJECT), request_id="req-shred-1", received_at="2026-11-20T09:00:00Z")
        plan = session.plan(["prod.payments.user_id"], [subject], keep=True).plan
        assert [(s.action.value, s.dataset) for s in plan.steps] == [
            ("resolve", "prod.payments"), ("destroy_subject_key", "prod.payments"),
            ("delete_rows", "analytics.cards_clear"), ("purge_deletion_vectors", "analytics.cards_clear"),
            ("vacuum", "analytics.cards_clear"), ("clean_delta_log", "analytics.cards_clear")]
        assert {d.dataset: d.status.value for d in plan.datasets} == {
            "prod.payments": "shred", "analytics.cards": "shred", "analytics.cards_ice": "shred",
            "analytics.cards_clear": "erase"}
        summary = session.execute(plan)
        assert summary.status == "complete", [(r.step.id, r.state, r.message) for r in summary.results]
        destroyed = next(r for r in summary.results if r.step.action.value == "destroy_subject_key").outcome
        assert destroyed.details["keys_destroyed"] == 1 and destroyed.files_rewritten == destroyed.files_removed == 0
        report = session.verify(plan).report

    # No data file of a shredded table rewritten, removed or added.
    for name in SHREDDED:
        assert digests(lake / name) == before[name], f"{name}: a file of a shredded table changed"
    # The key is gone from every decoded file of the vault (data files, log, checkpoints).
    assert find_values(lake / "key_vault", [lookup, wrapped]) == []
    # Every version still reads back and decrypts for everyone else; the person's ciphertext does not decrypt.
    for version in range(3):
        rows = decrypted(lake / "payments", version=version)  # version v: the appends 0..v
        assert sorted(r for r in rows if r[0] != SUBJECT) == sorted(
            r for v in range(version + 1) for r in expected(v, ("user_id", "card", "email", "amount")) if r[0] != SUBJECT)
        assert sorted(r for r in rows if r[0] == SUBJECT) == [(SUBJECT, None, None, float(v * 1000 + SUBJECT))
                                                              for v in range(version + 1)]
        with pytest.raises(SubjectShreddedError):
            decrypted(lake / "payments", version=version, missing="raise")
    for number, snapshot in enumerate(snapshots):  # every Iceberg snapshot too
        rows = iceberg_decrypted(lake, snapshot)
        assert sorted(r for r in rows if r[0] != SUBJECT) == sorted(
            r for v in range(number + 1) for r in expected(v, ("user_id", "card", "amount")) if r[0] != SUBJECT)
        assert sorted(r for r in rows if r[0] == SUBJECT) == [(SUBJECT, None, float(v * 1000 + SUBJECT))
                                                              for v in range(number + 1)]
        with pytest.raises(SubjectShreddedError):
            iceberg_decrypted(lake, snapshot, missing="raise")
    copy = decrypted(lake / "cards")
    assert sorted(r for r in copy if r[0] != SUBJECT) == sorted(
        r for v in range(3) for r in expected(v, ("user_id", "card", "amount")) if r[0] != SUBJECT)
    # The decrypted copy is erased physically, to the bytes; every other row as it was.
    assert find_values(lake / "cards_clear", secrets_of_subject + [SUBJECT]) == []
    assert checksum(plain_rows(lake / "cards_clear")) == others_clear
    # The proof: complete, the shredded tables crypto-shredded with the vault's evidence.
    states = {d.dataset: d.state for d in report.datasets}
    assert report.complete and states == {"prod.payments": ErasureState.CRYPTO_SHREDDED,
                                          "analytics.cards": ErasureState.CRYPTO_SHREDDED,
                                          "analytics.cards_ice": ErasureState.CRYPTO_SHREDDED,
                                          "analytics.cards_clear": ErasureState.ERASED}
    evidence = report.result("prod.payments").shred
    assert evidence.keys_destroyed == 1 and evidence.ciphertext_rows_tried == 3 and evidence.vault_files_decoded > 0
    assert evidence.other_subjects_with_keys == evidence.other_subjects_checked == len(PEOPLE) - 1
    with piitracer.open(root, keys) as session:
        certificate = session.certificate("req-shred-1")["certificate"]
    said = {d["dataset"]: d for d in certificate["datasets"]}
    for dataset in ("prod.payments", "analytics.cards", "analytics.cards_ice"):
        assert said[dataset]["erasure"] == "crypto-shredded" and said[dataset]["state"] == "crypto_shredded"
        assert said[dataset]["vault_evidence"]["vault"].startswith("key vault prod.key_vault")
    assert said["analytics.cards_clear"]["state"] == "erased" and "erasure" not in said["analytics.cards_clear"]
    assert lookup not in json.dumps(certificate) and wrapped not in json.dumps(certificate)
