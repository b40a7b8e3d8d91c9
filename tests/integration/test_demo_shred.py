"""``piitracer demo --shred`` (issue 42, first acceptance point as a command), run through click
in this process (the resolve step uses the suite's one Spark session: the demo's workspace is
written with the shared session's settings) into a temporary folder, then checked apart from the
demo's own checks and piitracer's verifier, by reading the files back (delta-rs, pyiceberg, the
shred library with a fresh vault handle, tests/support/byte_scan.py):

- every file of the shredded tables (Delta payments and cards, the Iceberg cards_ice) is
  byte-identical before and after: no data file rewritten, added or removed;
- every Delta version and Iceberg snapshot from before the erasure still reads back and decrypts
  to the same values for every other person; the person's rows, in every one, fail to decrypt;
- the person's key (its lookup and its wrapped blob) is in no decoded file of the vault;
- the table a job decrypted holds no byte of the person, and every other row by count and checksum;
- the command exits 0, and its summary rows say what was done per dataset and what was checked.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from byte_scan import find_values
from click.testing import CliRunner
from deltalake import DeltaTable
from spark_lakehouse import checksum, settings, spark_for

from piitracer.api.demo import demo_keys
from piitracer.cli.main import cli
from piitracer.demo import SUBJECT_USER_ID
from piitracer.demo.shred_lake import build_shred_lake, iceberg_properties, prepare_shred_workspace
from piitracer.ingest.workspace.loader import load_workspace
from piitracer.shred.cipher import ShredColumns, decrypt_batch
from piitracer.shred.delta_vault import delta_vault
from piitracer.shred.keys import SubjectShreddedError

SUBJECT = SUBJECT_USER_ID
PAYMENTS = ShredColumns(key="user_id", deterministic=("pan",), randomised=("phone", "aadhaar_ref"))
CARDS = ShredColumns(key="user_id", deterministic=("pan",))
TYPES = {"pan": pa.string(), "phone": pa.string(), "aadhaar_ref": pa.string()}
DELTA = {"prod.payments": ("lake/payments", PAYMENTS), "analytics.cards": ("lake/cards", CARDS)}
ICEBERG = "lake/iceberg/analytics/cards_ice"
ROWS = 1200  # 100 people: small enough for CI, every load holding the person


def digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def opened(table: pa.Table, root: Path, spec: ShredColumns, missing: str = "null") -> list[dict]:
    with delta_vault(root / "lake" / "key_vault", demo_keys(root).master) as vault:  # a fresh handle: no cached key
        return pa.Table.from_batches([decrypt_batch(table, vault, spec, TYPES, missing=missing)]).to_pylist()


def histories(root: Path) -> dict[str, list[pa.Table]]:
    """Every version of each shredded Delta table, every snapshot of the Iceberg one, as stored."""
    from pyiceberg.catalog.sql import SqlCatalog

    found = {}
    for name, (folder, _) in DELTA.items():
        location = str(root / folder)
        found[name] = [DeltaTable(location, version=v).to_pyarrow_table() for v in range(DeltaTable(location).version() + 1)]
    ice = SqlCatalog("ice", **iceberg_properties(root)).load_table("analytics.cards_ice")
    found["analytics.cards_ice"] = [ice.scan(snapshot_id=s.snapshot_id).to_arrow() for s in ice.snapshots()]
    return found


def subject_rows(table: pa.Table, subject: bool) -> pa.Table:
    mask = pc.equal(table["user_id"], SUBJECT)
    return table.filter(mask if subject else pc.invert(mask))


def rows_of(table: list[dict]) -> list[tuple]:
    return sorted(tuple(sorted(r.items())) for r in table)


def summary_rows(text: str) -> dict[str, list[str]]:
    """First cell -> the other cells of every table row the command printed (piped: one line each)."""
    rows = {}
    for line in text.splitlines():
        if line.startswith("│"):
            cells = [c.strip() for c in line.strip().strip("│").split("│")]
            rows[cells[0]] = cells[1:]
    return rows


@pytest.fixture(scope="module")
def demo(tmp_path_factory, warehouse: Path):
    """(workspace root, before): the shred demo's lakehouse built by the product's builder, and
    what the test read from it before the command ran."""
    spark_for(warehouse)  # the suite's session: the demo's resolve step reuses it
    root = prepare_shred_workspace(tmp_path_factory.mktemp("shred") / "demo-shred",
                                   spark={"warehouse": str(warehouse), "conf": dict(settings().conf)})
    build_shred_lake(load_workspace(root), demo_keys(root).master, rows=ROWS)  # the command reuses it
    return root


def test_demo_shred_erases_one_person_by_their_key_and_everything_else_still_reads(demo: Path) -> None:
    root = demo
    shredded = {**{name: root / folder for name, (folder, _) in DELTA.items()}, "analytics.cards_ice": root / ICEBERG}
    before = {name: digests(folder) for name, folder in shredded.items()}
    specs = {**{name: spec for name, (_, spec) in DELTA.items()}, "analytics.cards_ice": CARDS}
    # Before: everyone decrypts, in every version and snapshot (missing="raise").
    history = histories(root)
    assert [len(history[n]) for n in specs] == [4, 4, 4]
    plain_before = {name: [opened(t, root, specs[name], missing="raise") for t in tables] for name, tables in history.items()}
    mine = [r for r in plain_before["prod.payments"][-1] if r["user_id"] == SUBJECT]
    assert len(mine) == 6
    secrets_of_subject = sorted({v for r in mine for v in (r["pan"], r["phone"])})
    with delta_vault(root / "lake" / "key_vault", demo_keys(root).master) as vault:
        lookup = vault.lookup.of(SUBJECT)
        wrapped = vault.backend.find([lookup])[lookup]
        people = vault.backend.count()
    clear = root / "lake" / "contacts_clear"
    clear_rows = DeltaTable(str(clear)).to_pyarrow_table()
    others_clear = checksum(tuple(r.values()) for r in subject_rows(clear_rows, False).to_pylist())
    # The test can fail: the key is in the vault's files, the plaintext in the decrypted table.
    assert find_values(root / "lake" / "key_vault", [lookup]) and find_values(root / "lake" / "key_vault", [wrapped])
    assert find_values(clear, secrets_of_subject + [SUBJECT])

    result = CliRunner().invoke(cli, ["demo", "--shred", "--dir", str(root)])
    assert result.exit_code == 0, result.output

    # No file of a shredded table rewritten, added or removed.
    for name, folder in shredded.items():
        assert digests(folder) == before[name], f"{name}: a file of a shredded table changed"
    # The key is in no decoded file of the vault (data files, log, checkpoints).
    assert find_values(root / "lake" / "key_vault", [lookup, wrapped]) == []
    # Every version and snapshot still reads back: the others' values as before, the person's gone.
    after = histories(root)
    for name, tables in after.items():
        assert len(tables) == 4, name
        for number, table in enumerate(tables):
            rows = opened(table, root, specs[name])
            assert rows_of(r for r in rows if r["user_id"] != SUBJECT) == rows_of(
                r for r in plain_before[name][number] if r["user_id"] != SUBJECT), f"{name} {number}"
            theirs = [r for r in rows if r["user_id"] == SUBJECT]
            assert theirs and all(r[c] is None for r in theirs for c in specs[name].columns), f"{name} {number}"
            with pytest.raises(SubjectShreddedError):
                opened(subject_rows(table, True), root, specs[name], missing="raise")
    # The decrypted table: not a byte of the person, every other row as it was.
    assert find_values(clear, secrets_of_subject + [SUBJECT]) == []
    assert checksum(tuple(r.values()) for r in DeltaTable(str(clear)).to_pyarrow_table().to_pylist()) == others_clear

    # What the person sees: per dataset, then what was checked.
    shown = summary_rows(result.stdout)
    subject_history = sum(len(subject_rows(t, True)) for t in history["prod.payments"])
    assert shown["prod.payments"][:4] == ["shred", f"0 of {len(before['prod.payments'])}",
                                          f"4 versions; the subject's {subject_history} rows no longer decrypt",
                                          f"{sum(len(subject_rows(t, False)) for t in history['prod.payments']):,} of "
                                          f"{sum(len(subject_rows(t, False)) for t in history['prod.payments']):,}"]
    assert shown["analytics.cards"][:2] == ["shred", f"0 of {len(before['analytics.cards'])}"]
    assert shown["analytics.cards_ice"][:3] == ["shred", f"0 of {len(before['analytics.cards_ice'])}",
                                                f"4 snapshots; the subject's {subject_history} rows no longer decrypt"]
    assert shown["analytics.contacts_clear"][0] == "erase"
    assert "decrypts shredded column prod.payments.pan" in shown["analytics.contacts_clear"][-1]
    assert shown["lakehouse"] == [f"reused: {ROWS:,} payments of {people} people in 4 loads, pan, phone and aadhaar_ref "
                                  "stored as ciphertext under each person's key"]
    assert shown["subject's key"] == [f"removed: the vault gives no key for the subject; {people - 1} other people's keys kept"]
    assert shown["verify"] == ["complete (3 crypto-shredded, 1 erased)"]
    tried = sum(len(subject_rows(t, True)) for tables in history.values() for t in tables)
    assert shown["subject's ciphertext"] == [f"{tried} of {tried} rows fail to decrypt, in every version and snapshot"]
    sampled = re.fullmatch(r"20 people sampled: (\d+) of (\d+) rows decrypt to their original values", shown["other subjects"][0])
    assert sampled and sampled[1] == sampled[2] and int(sampled[1]) >= 20
    assert shown["decrypted table"] == [f"analytics.contacts_clear: 6 rows of the subject before, 0 after; "
                                        f"{others_clear[0]:,} other rows unchanged (count and checksum)"]
    certificate = json.loads((root / "certificate.json").read_text())["certificate"]
    said = {d["dataset"]: d.get("erasure", d["state"]) for d in certificate["datasets"]}
    assert said == {"prod.payments": "crypto-shredded", "analytics.cards": "crypto-shredded",
                    "analytics.cards_ice": "crypto-shredded", "analytics.contacts_clear": "erased"}
