"""The verdict of a dataset planned ``shred`` (issue 42 point 4), on real files (delta-rs, a Delta
key vault, the pipeline library's AES-SIV/AES-GCM ciphertext), no Spark: crypto_shredded only
when the key destruction committed, no file of the vault holds a subject's lookup or a destroyed
wrapped key, the subjects' stored ciphertext fails to decrypt, no plaintext of theirs is left but
the key column's id, and the vault still holds other subjects' keys. Each way it is not is the
verdict that says so."""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import write_deltalake

from lineage_builders import request
from piitracer.crypto.envelope import MasterKey
from piitracer.executor.shred_check import CiphertextRefused, check_ciphertext
from piitracer.executor.shred_step import destroy_subject_keys
from piitracer.graph.lineage_graph import LineageGraph
from piitracer.ingest.sql.lineage import ingest_sql_text
from piitracer.model.naming import DatasetNamer
from piitracer.model.outcome import Attempt
from piitracer.model.plan import Action
from piitracer.model.verification import ErasureState
from piitracer.model.workspace import CatalogDataset, Policy
from piitracer.planner.build import build_plan
from piitracer.shred.cipher import ShredColumns, encrypt_batch
from piitracer.shred.delta_vault import delta_vault
from piitracer.shred.place import DELTA, VaultPlace
from piitracer.storage.locations import Location
from piitracer.storage.store import Store
from piitracer.verify import verify_datasets
from piitracer.verify.shred_proof import ShredSetting, names_column

SUBJECT, OTHERS = 4242, list(range(5000, 5040))
JOBS = "INSERT INTO analytics.cards SELECT user_id, card FROM prod.payments;\n"
SPEC = ShredColumns(key="user_id", deterministic=("card",), randomised=("email",))


def rows(ids: list[int]) -> pa.Table:
    return pa.table({"user_id": pa.array(ids, pa.int64()), "card": [f"4111-{i:04d}" for i in ids],
                     "email": [f"p{i}@example.org" for i in ids], "amount": [float(i) for i in ids]})


class Lake:
    """prod.payments (ciphertext, two versions), analytics.cards (a copy of its ciphertext), a Delta vault."""

    def __init__(self, root: Path, key: MasterKey | None = None) -> None:
        self.root, self.key = root, key or MasterKey(secrets.token_hex(32).encode(), "test")
        vault = delta_vault(root / "vault", self.key)
        for batch in (rows([SUBJECT] + OTHERS[:20]), rows(OTHERS[20:] + [SUBJECT])):  # two versions
            encrypted = pa.Table.from_batches([encrypt_batch(batch, vault, SPEC)])
            write_deltalake(str(root / "payments"), encrypted, mode="append")
            write_deltalake(str(root / "cards"), encrypted.select(["user_id", "card"]), mode="append")
        self.lookup = vault.lookup.of(SUBJECT)
        self.wrapped = vault.backend.find([self.lookup])[self.lookup]
        vault.close()
        self.catalog = {
            "prod.payments": CatalogDataset(format="delta", location=str(root / "payments"),
                                            columns=["user_id", "card", "email", "amount"], identifiers=["user_id"],
                                            column_types={"user_id": "bigint"},
                                            shredded={"key": "user_id", "columns": ["card", "email"]}),
            "analytics.cards": CatalogDataset(format="delta", location=str(root / "cards"))}
        graph = LineageGraph.build(ingest_sql_text(JOBS, file="jobs.sql", namer=DatasetNamer(),
                                                   schemas={"prod.payments": ["user_id", "card", "email", "amount"]}),
                                   self.catalog)
        self.plan = build_plan(graph, self.catalog, Policy(), request(str(SUBJECT), source="prod.payments.user_id"))
        self.step = next(s for s in self.plan.steps if s.action is Action.DESTROY_SUBJECT_KEY)
        self.place = VaultPlace(DELTA, Location.parse(str(root / "vault")), "prod.keys")
        self.locations = {d: Location.parse(e.location) for d, e in self.catalog.items()}
        self.values = {"prod.payments.user_id": [SUBJECT]}
        self.destroyed: dict = {}
        self.checked: dict = {}

    def resolve(self) -> None:
        """The resolve step's check of the ciphertext (before the key goes): the plaintext joins the values."""
        found = {"req-1": {"prod.payments.user_id": [SUBJECT]}}
        self.checked = check_ciphertext(self.plan, found, self.place, self.key, Store(), self.catalog, self.locations)
        self.values = {name: sorted(set(values), key=repr) for name, values in found["req-1"].items()}

    def destroy(self, resolve: bool = True) -> None:
        if resolve:
            self.resolve()
        outcome = destroy_subject_keys(self.step, [SUBJECT], self.place, self.key, Store(),
                                       (Location.parse(str(self.root)),), Attempt())
        self.destroyed = {self.step.id: outcome.details}

    def verify(self, committed: bool = True, place: VaultPlace | None = None, key=None):
        states = {s.id: "committed" for s in self.plan.steps if committed or s.action is not Action.DESTROY_SUBJECT_KEY}
        report = verify_datasets(self.plan, self.catalog, self.locations, self.values, states, store=Store(),
                                 shred=ShredSetting(place or self.place, key or self.key, self.destroyed, self.checked))
        return {d.dataset: d for d in report.datasets}


def test_the_key_destroyed_is_crypto_shredded_with_the_vaults_evidence(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    assert [d.status.value for d in lake.plan.datasets] == ["shred", "shred"]
    assert lake.verify(committed=False)["prod.payments"].state is ErasureState.PENDING
    lake.destroy()
    assert lake.checked == {  # journaled by the resolve step: counts only
        "prod.payments": {"files": 2, "rows": 2, "values": 4, "subjects": 1, "columns": ["card", "email"]},
        "analytics.cards": {"files": 2, "rows": 2, "values": 2, "subjects": 1, "columns": ["card"]}}
    assert lake.values["decrypted:prod.payments.card"] == [f"4111-{SUBJECT:04d}"]  # opened before the key went
    assert lake.values["decrypted:prod.payments.email"] == [f"p{SUBJECT}@example.org"]
    results = lake.verify()
    for dataset in ("prod.payments", "analytics.cards"):
        assert results[dataset].state is ErasureState.CRYPTO_SHREDDED, results[dataset].reason
        assert results[dataset].findings == ()
        assert {"decrypted:prod.payments.card", "decrypted:prod.payments.email"} <= set(results[dataset].value_sets)
    payments = results["prod.payments"]
    evidence = payments.shred
    assert evidence.destroyed_by == (lake.step.id,) and evidence.keys_destroyed == 1
    assert evidence.vault_files_decoded >= 3 and evidence.wrapped_keys_searched == 1
    assert (evidence.ciphertext_files_read, evidence.ciphertext_rows_tried, evidence.ciphertext_values_opened,
            evidence.subjects_with_rows) == (2, 2, 4, 1)  # the subject's row in each version
    assert evidence.plaintext_sets == ("decrypted:prod.payments.card", "decrypted:prod.payments.email")
    assert evidence.plaintext_values_searched == 2 and evidence.files_searched == payments.files_scanned
    assert evidence.key_column == "user_id" and evidence.key_column_places >= 4  # rows and stats of user_id, accepted
    assert evidence.other_subjects_checked == 40 and evidence.other_subjects_with_keys == 40
    assert evidence.other_rows_opened == 80  # each other person's row in each version, card and email... of payments
    assert payments.reason.startswith("crypto-shredded: before the destruction, 4 ciphertext value(s) of 1 subject(s) in 2 "
                                      "row(s) of 2 stored file(s) opened under their keys; 1 key(s) destroyed in the key "
                                      "vault prod.keys")
    assert results["analytics.cards"].shred.ciphertext_values_opened == 2


def test_without_the_check_before_destruction_nothing_is_certified(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    lake.destroy(resolve=False)  # the keys destroyed, the ciphertext never opened before
    for result in lake.verify().values():
        assert result.state is ErasureState.NOT_CHECKED and "not read and opened" in result.reason


def test_the_decrypted_plaintext_found_anywhere_is_found(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    lake.destroy()
    leak = pa.table({"user_id": pa.array([7], pa.int64()), "card": [None], "memo": [f"card 4111-{SUBJECT:04d} refunded"]})
    write_deltalake(str(tmp_path / "cards"), leak.cast(pa.schema([("user_id", pa.int64()), ("card", pa.binary()),
                                                                   ("memo", pa.string())])),
                    mode="append", schema_mode="merge")  # the decrypted card under another person's row
    result = lake.verify()["analytics.cards"]
    assert result.state is ErasureState.FOUND
    assert {(f.where, f.value_set) for f in result.findings} >= {("column memo (inside text)", "decrypted:prod.payments.card")}


def test_a_key_left_in_the_vault_is_found(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    lake.resolve()
    lake.destroyed = {lake.step.id: {"keys_destroyed": 1, "wrapped_sha256": [],  # "committed", nothing destroyed
                                     "vault": str(lake.place.location)}}
    result = lake.verify()["prod.payments"]
    assert result.state is ErasureState.FOUND and "still hold a subject's lookup" in result.reason
    assert {f.value_set for f in result.findings} == {"key vault: the subjects' lookups"}


def test_a_wrapped_key_left_in_a_stray_file_of_the_vault_is_found(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    lake.destroy()
    stray = pa.table({"lookup": ["0" * 64], "wrapped": [lake.wrapped]})  # e.g. a crashed writer's copy, lookup gone
    pq.write_table(stray, tmp_path / "vault" / "part-stray.parquet")
    result = lake.verify()["prod.payments"]
    assert result.state is ErasureState.FOUND
    assert {(f.file, f.value_set) for f in result.findings} == {("part-stray.parquet", "key vault: the subjects' wrapped keys")}
    assert "key vault: column wrapped" in {f.where for f in result.findings}  # decoded, not only in the raw bytes


def test_plaintext_outside_the_key_column_is_found(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    lake.destroy()
    leak = pa.table({"user_id": pa.array([1], pa.int64()), "card": [b"\x02"], "note": [f"refund for user {SUBJECT}"]})
    write_deltalake(str(tmp_path / "cards"), leak, mode="append", schema_mode="merge")  # a plaintext column added
    result = lake.verify()["analytics.cards"]
    assert result.state is ErasureState.FOUND and "outside the column their keys are found by (user_id)" in result.reason
    assert "column note (inside text)" in {f.where for f in result.findings}
    assert not [f for f in result.findings if "user_id" in f.where]  # the key column's ids stay accepted


def test_another_vault_proves_nothing(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "a")
    lake.destroy()
    other = MasterKey(lake.key.secret, "same key")
    delta_vault(tmp_path / "empty", other).keys_for([1])  # a vault of the same master key, not the pipeline's
    result = lake.verify(place=VaultPlace(DELTA, Location.parse(str(tmp_path / "empty")), "prod.keys"))["prod.payments"]
    assert result.state is ErasureState.NOT_CHECKED
    assert "the keys were destroyed in" in result.reason and "but the workspace's key vault is now" in result.reason
    assert lake.verify(key=MasterKey(secrets.token_hex(32).encode(), "x"))["prod.payments"].state is ErasureState.NOT_CHECKED


def test_data_encrypted_under_another_vault_stops_the_run_before_any_key_goes(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "a")
    other = delta_vault(tmp_path / "b", lake.key)  # the same master key: it finds the same people, holds other keys
    other.keys_for(OTHERS[:1])
    other.close()
    lake.place = VaultPlace(DELTA, Location.parse(str(tmp_path / "b")), "prod.keys")
    with pytest.raises(CiphertextRefused) as refused:
        lake.resolve()
    assert str(refused.value).startswith("prod.payments, file ") and "holds no key for 1 subject(s) whose ciphertext" in \
        str(refused.value)
    assert str(SUBJECT) not in str(refused.value)


@pytest.mark.parametrize("where, expected", [
    ("column user_id", True), ("footer statistics min of user_id", True), ("column card", False),
    ("line 4 .add.stats (JSON string).minValues.user_id", True), ("line 4 .add.stats (JSON string).minValues.card", False),
    ("checkpoint row 3 .add.stats (JSON string).maxValues.USER_ID", True), ("record 0.data_file lower_bounds of field 1", True),
    ("record 0.data_file upper_bounds of field 2 (truncated prefix)", False), ("column user_id_copy", False),
])
def test_a_place_names_the_key_column_exactly(where: str, expected: bool) -> None:
    assert names_column(where, "user_id", {1}) is expected
