"""What the shred demo checks for itself after the erasure, apart from piitracer's verifier: each
check reads the tables back as a reader of the lakehouse would (delta-rs, pyiceberg, the shred
library with a fresh vault), so the summary shows what a person could check by hand.

- :func:`file_digests`: every file under a table, hashed (before and after: none may change);
- :func:`history_read_back`: every Delta version or Iceberg snapshot read back and decrypted:
  everyone else's ciphertext opens, the subjects' does not;
- :func:`key_gone`: the vault gives no key for the subjects, and still holds everyone else's;
- :func:`sample_decrypts`: a seeded sample of other people decrypt to exactly the values the
  pipeline encrypted (the synthetic rows, generated again);
- :func:`plaintext_rows`: the decrypted table's rows, to count and checksum before and after."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.compute as pc

from piitracer.crypto.envelope import MasterKey
from piitracer.demo.shred_lake import (ANCHOR, CLEAR, FOLDERS, ICEBERG_CATALOG, PAYMENTS_SPEC, PLAIN_TYPES, SHREDDED_SPECS,
                                       SOURCE, VAULT, iceberg_properties, shred_payments)
from piitracer.shred.cipher import ShredColumns, decrypt_batch
from piitracer.shred.delta_vault import delta_vault
from piitracer.shred.keys import SubjectShreddedError


@dataclass(frozen=True)
class HistoryReadBack:
    """Every version (Delta) or snapshot (Iceberg) of one shredded table, read back and decrypted."""

    dataset: str
    kind: str  # "versions" or "snapshots"
    count: int  # versions or snapshots read back
    other_rows: int  # rows of other people decrypted, over all of them
    other_rows_failed: int  # rows of other people whose ciphertext did not decrypt (0)
    subject_rows: int  # the subjects' rows, over all of them
    subject_rows_opened: int  # the subjects' rows that still decrypted (0)

    @property
    def ok(self) -> bool:
        return self.count > 0 and self.other_rows > 0 and self.other_rows_failed == 0 and self.subject_rows_opened == 0


@dataclass(frozen=True)
class KeyCheck:
    """The vault read with a fresh handle: the subjects' keys, everyone else's."""

    subject_keys: int  # keys the vault still gives for the subjects (0)
    other_keys: int  # keys the vault holds besides (the other people's)

    @property
    def ok(self) -> bool:
        return self.subject_keys == 0 and self.other_keys > 0


@dataclass(frozen=True)
class SampleCheck:
    """A sample of other people, their current rows decrypted and compared with the plaintext."""

    people: int
    rows: int
    matched: int  # rows whose decrypted values equal the pipeline's plaintext

    @property
    def ok(self) -> bool:
        return self.people > 0 and self.rows > 0 and self.matched == self.rows


def file_digests(folder: Path) -> dict[str, str]:
    """SHA-256 of every file under ``folder``, by relative path."""
    folder = Path(folder)
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def changed_files(before: dict[str, str], after: dict[str, str]) -> int:
    """Files added, removed or changed between two :func:`file_digests`."""
    return sum(1 for path in set(before) | set(after) if before.get(path) != after.get(path))


def _vault(root: Path, master: MasterKey):
    return delta_vault(str(Path(root) / FOLDERS[VAULT]), master)


def _decrypts(table: pa.Table, spec: ShredColumns, subjects: set[int], vault) -> tuple[int, int, int, int]:
    """(other rows, others failed, subject rows, subject rows opened) of one version."""
    subject = pc.is_in(table["user_id"], pa.array(sorted(subjects), pa.int64()))
    others, own = table.filter(pc.invert(subject)), table.filter(subject)
    plain = decrypt_batch(others, vault, spec, PLAIN_TYPES, missing="null")
    failed = sum(1 for i in range(plain.num_rows)
                 if any(plain.column(c)[i].as_py() is None and others.column(c)[i].as_py() is not None for c in spec.columns))
    opened = 0
    for i in range(own.num_rows):  # each of the subjects' rows on its own: one that opens is counted
        try:
            decrypt_batch(own.slice(i, 1), vault, spec, PLAIN_TYPES, missing="raise")
            opened += 1
        except SubjectShreddedError:
            pass
    return others.num_rows, failed, own.num_rows, opened


def iceberg_table(root: Path):
    """The demo's Iceberg copy, loaded by pyiceberg through the demo's sql catalog."""
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog(ICEBERG_CATALOG, **iceberg_properties(root)).load_table("analytics.cards_ice")


def history_read_back(root: Path, master: MasterKey, dataset: str, subjects: Iterable[int]) -> HistoryReadBack:
    """Read back every version (Delta) or snapshot (Iceberg) of a shredded table and decrypt it.

    Args:
        root: the demo's workspace.
        master: the demo's master key.
        dataset: one of the shredded tables.
        subjects: the erased people's ids.

    Returns:
        The versions or snapshots read, the other people's rows decrypted (and any that failed),
            the subjects' rows (and any that still opened).
    """
    from deltalake import DeltaTable

    spec, people = SHREDDED_SPECS[dataset], set(subjects)
    totals = [0, 0, 0, 0]
    with _vault(root, master) as vault:
        if dataset == "analytics.cards_ice":
            table = iceberg_table(root)
            readings = [table.scan(snapshot_id=s.snapshot_id).to_arrow() for s in table.snapshots()]
            kind = "snapshots"
        else:
            location = str(Path(root) / FOLDERS[dataset])
            newest = DeltaTable(location).version()
            readings = [DeltaTable(location, version=v).to_pyarrow_table() for v in range(newest + 1)]
            kind = "versions"
        for reading in readings:
            totals = [a + b for a, b in zip(totals, _decrypts(reading, spec, people, vault))]
    return HistoryReadBack(dataset, kind, len(readings), *totals)


def key_gone(root: Path, master: MasterKey, subjects: Iterable[int]) -> KeyCheck:
    """Ask the vault (a fresh handle: no key kept from before) for the subjects' keys.

    Args:
        root: the demo's workspace.
        master: the demo's master key.
        subjects: the erased people's ids.

    Returns:
        The keys it still gives for them (0), and how many keys it holds besides.
    """
    people = list(subjects)
    with _vault(root, master) as vault:
        found = vault.fetch(people)
        return KeyCheck(subject_keys=len(found), other_keys=vault.backend.count() - len(found))


def sample_decrypts(root: Path, master: MasterKey, rows: int, seed: int, subjects: Iterable[int],
                    sample: int = 20) -> SampleCheck:
    """Decrypt the current rows of a seeded sample of other people in ``prod.payments`` (a
    missing key raises) and compare them with the plaintext the pipeline encrypted.

    Args:
        root: the demo's workspace.
        master: the demo's master key.
        rows: the payments the lakehouse was built with.
        seed: its seed.
        subjects: the erased people's ids (left out of the sample).
        sample: how many people to check.

    Returns:
        The people and rows checked, and the rows whose values matched.
    """
    from deltalake import DeltaTable

    plain = shred_payments(rows, seed, ANCHOR)
    others = sorted(set(plain.column("user_id").to_pylist()) - set(subjects))
    chosen = sorted(random.Random(seed).sample(others, min(sample, len(others))))
    wanted = pa.array(chosen, pa.int64())
    stored = DeltaTable(str(Path(root) / FOLDERS[SOURCE])).to_pyarrow_table()
    stored = stored.filter(pc.is_in(stored["user_id"], wanted))
    with _vault(root, master) as vault:
        opened = pa.Table.from_batches([decrypt_batch(stored, vault, PAYMENTS_SPEC, PLAIN_TYPES, missing="raise")])
    expected = _multiset(plain.filter(pc.is_in(plain["user_id"], wanted)).to_pylist())
    got = _multiset(opened.to_pylist())
    matched = sum(min(n, expected.get(row, 0)) for row, n in got.items())
    return SampleCheck(people=len(chosen), rows=opened.num_rows, matched=matched)


def _multiset(rows: list[dict[str, Any]]) -> dict[tuple, int]:
    counted: dict[tuple, int] = {}
    for row in rows:
        key = tuple(sorted(row.items()))
        counted[key] = counted.get(key, 0) + 1
    return counted


def plaintext_rows(root: Path, subjects: Iterable[int]) -> tuple[int, int, str]:
    """The decrypted table's current rows: (the subjects' rows, the others' rows, a SHA-256 over
    the others' rows sorted), to compare before and after the erasure."""
    from deltalake import DeltaTable

    table = DeltaTable(str(Path(root) / FOLDERS[CLEAR])).to_pyarrow_table()
    people = set(subjects)
    own = [r for r in table.to_pylist() if r["user_id"] in people]
    others = sorted(repr(tuple(r.values())) for r in table.to_pylist() if r["user_id"] not in people)
    return len(own), len(others), hashlib.sha256("\n".join(others).encode()).hexdigest()
