"""The key vault as a Delta table (issue 42 point 1, the lakehouse backend, delta-rs): a batch's keys
in one read and one MERGE, a concurrent creator ending with the first key, and a destroyed key gone
from every decoded file of the vault's folder (data files, log, checkpoints) and from its history,
while every other subject's key still fetches and unwraps."""

from __future__ import annotations

import secrets
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from byte_scan import find_values
from piitracer.crypto.envelope import MasterKey
from piitracer.shred.delta_vault import DeltaVault, delta_vault
from piitracer.shred.keys import SubjectLookup, VaultKeyError, VaultRefusedError
from piitracer.storage.locations import Location
from piitracer.storage.store import Store

SUBJECTS = [f"person-{n:04d}@example.org" for n in range(30)] + list(range(5000, 5030))


def master() -> MasterKey:
    return MasterKey(secrets.token_hex(32).encode(), "test")


def filled(folder, key, batches=3):
    """A vault whose keys arrived in ``batches`` batches: one MERGE (and one data file) each."""
    vault = delta_vault(folder, key)
    size = len(SUBJECTS) // batches
    for start in range(0, len(SUBJECTS), size):
        vault.keys_for(SUBJECTS[start:start + size])
    return vault, vault.fetch(SUBJECTS)


def test_keys_for_a_batch_are_one_read_and_one_merge(tmp_path) -> None:
    key = master()
    vault = delta_vault(tmp_path / "vault", key)
    calls = []
    backend = vault.backend
    for name in ("find", "insert_missing"):
        real = getattr(backend, name)
        setattr(backend, name, lambda *a, _real=real, _name=name: calls.append(_name) or _real(*a))
    ring = vault.keys_for(SUBJECTS)
    assert calls == ["find", "insert_missing", "find"]  # the write reads back what is stored
    assert DeltaTable(str(tmp_path / "vault")).version() == 1  # one commit for the batch
    calls.clear()
    second = vault.keys_for(SUBJECTS)
    assert calls == ["find"]  # nothing new: no write
    assert all(second.get(s).secret == ring.get(s).secret for s in SUBJECTS)
    again = delta_vault(tmp_path / "vault", MasterKey(key.secret, "reopened")).fetch(SUBJECTS)
    assert all(again.get(s).secret == ring.get(s).secret for s in SUBJECTS)
    assert vault.fetch(["nobody@example.org"]).get("nobody@example.org") is None
    assert vault.backend.count() == len(SUBJECTS)
    assert find_values(tmp_path, [s for s in SUBJECTS if isinstance(s, str)]) == []  # no subject in clear


def test_a_concurrent_creator_gets_the_first_writers_key(tmp_path) -> None:
    key = master()
    first, second = delta_vault(tmp_path / "vault", key), delta_vault(tmp_path / "vault", key)
    first.keys_for(["early@example.org"])
    # The second writer read the vault (and opened its MERGE's snapshot) before the first committed.
    backend = second.backend
    stale, reads, opens = backend._table(), [], []

    def stale_first_read(lookups):
        reads.append(1)
        return {} if len(reads) == 1 else DeltaVault.find(backend, lookups)

    def stale_first_table():
        opens.append(1)
        return stale if len(opens) == 1 else DeltaVault._table(backend)

    backend.find, backend._table = stale_first_read, stale_first_table
    mine = first.keys_for(["late@example.org"]).get("late@example.org")
    theirs = second.keys_for(["late@example.org"]).get("late@example.org")
    assert theirs.secret == mine.secret
    rows = DeltaTable(str(tmp_path / "vault")).to_pyarrow_table()
    assert rows.num_rows == 2  # one row per subject: the loser's MERGE was refused and retried


def test_destroyed_key_is_gone_from_every_decoded_file_and_from_history(tmp_path) -> None:
    folder = tmp_path / "vault"
    key = master()
    lookup = SubjectLookup.from_master(key)
    vault, ring = filled(folder, key)
    target = SUBJECTS[12]
    hashed = lookup.of(target)
    wrapped = vault.backend.find([hashed])[hashed]
    version = DeltaTable(str(folder)).version()
    assert find_values(folder, [wrapped]) and find_values(folder, [hashed])  # the scan sees them before

    outcome = vault.destroy([target])

    assert outcome.keys_destroyed == 1 and outcome.details["files_rewritten"] == 1
    assert find_values(folder, [wrapped, hashed]) == []
    assert vault.fetch([target]).get(target) is None
    others = [s for s in SUBJECTS if s != target]
    fetched = delta_vault(folder, key).fetch(others)  # reopened: the vault's marker survived
    assert all(fetched.get(s).secret == ring.get(s).secret for s in others)
    assert vault.backend.count() == len(others)
    for old in range(version + 1):  # no version that held the key can be loaded
        with pytest.raises(Exception):
            DeltaTable(str(folder), version=old).to_pyarrow_table()
    assert vault.destroy([target]).keys_destroyed == 0  # idempotent


def test_a_destroy_interrupted_before_its_vacuum_is_finished_on_resume(tmp_path) -> None:
    folder = tmp_path / "vault"
    key = master()
    lookup = SubjectLookup.from_master(key)
    vault, _ = filled(folder, key)
    target = SUBJECTS[40]
    hashed = lookup.of(target)
    wrapped = vault.backend.find([hashed])[hashed]
    # The row's delete committed, then the process died; a later writer's commit made a checkpoint.
    DeltaTable(str(folder)).merge(pa.table({"lookup": [hashed]}), "t.lookup = s.lookup", source_alias="s",
                                  target_alias="t").when_matched_delete().execute()
    vault.keys_for(["after@example.org"])
    DeltaTable(str(folder)).create_checkpoint()
    assert find_values(folder, [wrapped])

    outcome = vault.destroy([target])  # run again: nothing left to delete, the removal still finishes

    assert outcome.keys_destroyed == 0
    assert find_values(folder, [wrapped, hashed]) == []


def test_an_uncommitted_file_holding_the_key_is_swept_and_another_writers_is_not(tmp_path) -> None:
    folder = tmp_path / "vault"
    key = master()
    lookup = SubjectLookup.from_master(key)
    vault, ring = filled(folder, key)
    target = SUBJECTS[3]
    hashed = lookup.of(target)
    wrapped = vault.backend.find([hashed])[hashed]
    # A writer that crashed after writing its file and before its commit left a copy of the row no
    # commit names (no vacuum of the log's removals sees it); another writer's file is in flight.
    holder = next(uri for uri in DeltaTable(str(folder)).file_uris()
                  if hashed in pq.read_table(uri, columns=["lookup"]).column("lookup").to_pylist())
    shutil.copy(holder, folder / "part-00000-crashed-writer-c000.snappy.parquet")
    in_flight = folder / "part-00000-writer-in-flight-c000.snappy.parquet"
    pq.write_table(pa.table({"lookup": ["f" * 64], "wrapped": ["in flight"]}), in_flight)

    outcome = vault.destroy([target])

    assert outcome.details["swept"] == 1
    assert find_values(folder, [wrapped, hashed]) == []
    assert in_flight.exists()
    others = [s for s in SUBJECTS if s != target]
    fetched = vault.fetch(others)
    assert all(fetched.get(s).secret == ring.get(s).secret for s in others)


def test_a_table_that_is_not_a_vault_is_refused_and_left_alone(tmp_path) -> None:
    payments = tmp_path / "payments"
    write_deltalake(str(payments), pa.table({"user_id": [1, 2], "amount": [10, 20]}))
    write_deltalake(str(payments), pa.table({"user_id": [3], "amount": [30]}), mode="append")
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "part-0.parquet").write_bytes(b"PAR1 not really")
    for place in (payments, loose):
        before = Store().sizes(Location.parse(place))
        with pytest.raises(VaultRefusedError) as caught:
            delta_vault(place, master())
        assert "not a piitracer key vault" in str(caught.value)
        assert Store().sizes(Location.parse(place)) == before
    assert DeltaTable(str(payments)).version() == 1 and DeltaTable(str(payments), version=0).to_pyarrow_table().num_rows == 2


def test_another_master_key_is_refused(tmp_path) -> None:
    delta_vault(tmp_path / "vault", master()).keys_for([1])
    with pytest.raises(VaultKeyError):
        delta_vault(tmp_path / "vault", master())
