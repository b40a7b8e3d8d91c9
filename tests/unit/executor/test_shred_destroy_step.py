"""Crypto-shredding's key destruction (issue 42 point 4): where the vault is (``shred.vault``, checked
at load in the workspace's words), what the preflight refuses before anything runs (no vault, a
vault outside the roots, absent, not a vault, of another master key, overlapping a dataset), and
the step itself: the subjects' keys gone from the vault, every other key kept, a vault never
created, its starting facts kept across a kill (the digests of the wrapped keys the proof looks
for). Real SQLite and Delta vaults; no Spark."""

from __future__ import annotations

import hashlib
import secrets
from pathlib import Path

import pytest
from click.testing import CliRunner
from deltalake import write_deltalake
import pyarrow as pa

from byte_scan import find_values
from piitracer.cli.main import cli
from piitracer.crypto.envelope import MasterKey
from piitracer.executor.shred_step import check_destroy_step, destroy_subject_keys
from piitracer.graph.lineage_graph import LineageGraph
from piitracer.ingest.sql.lineage import ingest_sql_text
from piitracer.ingest.workspace.loader import load_workspace
from piitracer.model.naming import DatasetNamer
from piitracer.model.outcome import Attempt
from piitracer.model.plan import Action
from piitracer.model.workspace import CatalogDataset, Policy
from piitracer.planner.build import build_plan
from piitracer.shred.delta_vault import delta_vault
from piitracer.shred.keys import VaultKeyError, VaultRefusedError
from piitracer.shred.place import DELTA, SQLITE, VaultPlace
from piitracer.shred.vault import sqlite_vault
from piitracer.storage.locations import Location
from piitracer.storage.store import Store
from lineage_builders import request

SUBJECTS = list(range(100, 130))
JOBS = "INSERT INTO analytics.cards SELECT user_id, card FROM prod.payments;\n"


def master() -> MasterKey:
    return MasterKey(secrets.token_hex(32).encode(), "test")


def planned(root: Path):
    """A plan shredding prod.payments and analytics.cards (ciphertext copied), with its key destruction."""
    catalog = {"prod.payments": CatalogDataset(format="delta", location=str(root / "payments"), columns=["user_id", "card"],
                                               identifiers=["user_id"], column_types={"user_id": "bigint"},
                                               shredded={"key": "user_id", "columns": ["card"]}),
               "analytics.cards": CatalogDataset(format="delta", location=str(root / "cards"))}
    graph = LineageGraph.build(ingest_sql_text(JOBS, file="jobs.sql", namer=DatasetNamer(),
                                               schemas={"prod.payments": ["user_id", "card"]}), catalog)
    plan = build_plan(graph, catalog, Policy(), request("101", source="prod.payments.user_id"))
    step = next(s for s in plan.steps if s.action is Action.DESTROY_SUBJECT_KEY)
    locations = {d: Location.parse(e.location) for d, e in catalog.items()}
    return plan, step, {d.dataset: d for d in plan.datasets}, locations


def refusal(tmp_path: Path, vault: VaultPlace | None, key=None, roots=None, protected=()) -> str | None:
    plan, step, decisions, locations = planned(tmp_path)
    return check_destroy_step(step, decisions, vault, locations, roots or (Location.parse(str(tmp_path)),),
                              protected, Store(), key)


def test_the_preflight_refuses_what_cannot_be_erased_there(tmp_path: Path) -> None:
    key = master()
    sqlite_vault(tmp_path / "vault.sqlite", key).close()
    good = VaultPlace(SQLITE, Location.parse(str(tmp_path / "vault.sqlite")))
    assert refusal(tmp_path, good, key) is None
    assert refusal(tmp_path, None).endswith("needs the key vault the pipelines encrypt with: set shred.vault in "
                                            "piitracer.yaml (a Delta dataset of the catalog, or a SQLite file); nothing ran")
    outside = refusal(tmp_path, good, key, roots=(Location.parse(str(tmp_path / "lake")),))
    assert "is outside the warehouse roots" in outside and "refusing to destroy keys there" in outside
    absent = VaultPlace(SQLITE, Location.parse(str(tmp_path / "typo.sqlite")))
    assert refusal(tmp_path, absent, key) == (f"step s002: key vault {tmp_path / 'typo.sqlite'} (SQLite): no such file "
                                              "(piitracer never creates a vault to erase from): fix shred.vault; nothing ran")
    assert not (tmp_path / "typo.sqlite").exists()
    (tmp_path / "other.sqlite").write_bytes(b"not a database at all")
    other = refusal(tmp_path, VaultPlace(SQLITE, Location.parse(str(tmp_path / "other.sqlite"))), key)
    assert other.endswith("(SQLite): not a piitracer key vault: fix shred.vault; nothing ran")
    stranger = refusal(tmp_path, good, master())
    assert "holds keys wrapped under another master key" in stranger and stranger.endswith("nothing ran")
    write_deltalake(str(tmp_path / "table"), pa.table({"a": [1]}))
    not_vault = refusal(tmp_path, VaultPlace(DELTA, Location.parse(str(tmp_path / "table")), "prod.keys"), key)
    assert not_vault.endswith("a Delta table that is not a piitracer key vault: fix shred.vault; nothing ran")
    inside = VaultPlace(DELTA, Location.parse(str(tmp_path / "payments" / "keys")), "prod.keys")
    assert "overlaps the location of dataset prod.payments" in refusal(tmp_path, inside, key)
    own = refusal(tmp_path, good, key, protected=(Location.parse(str(tmp_path / "vault.sqlite")),))
    assert "holds or lies in piitracer's own" in own


@pytest.mark.parametrize("kind", [SQLITE, DELTA])
def test_the_subjects_keys_are_destroyed_and_no_other(tmp_path: Path, kind: str) -> None:
    key = master()
    where = tmp_path / ("vault.sqlite" if kind == SQLITE else "vault")
    vault = sqlite_vault(where, key) if kind == SQLITE else delta_vault(where, key)
    for start in range(0, len(SUBJECTS), 10):  # three batches: three data files in the Delta vault
        vault.keys_for(SUBJECTS[start:start + 10])
    lookups = {s: vault.lookup.of(s) for s in SUBJECTS}
    wrapped = vault.backend.find(sorted(lookups.values()))
    vault.close()
    _, step, _, _ = planned(tmp_path)
    place = VaultPlace(kind, Location.parse(str(where)), None if kind == SQLITE else "prod.keys")
    saved = []
    outcome = destroy_subject_keys(step, [101, 102, 999], place, key, Store(), (Location.parse(str(tmp_path)),),
                                   Attempt(None, saved.append))
    gone = [lookups[101], lookups[102]]
    digests = sorted(hashlib.sha256(wrapped[lookup].encode()).hexdigest() for lookup in gone)
    assert saved == [{"keys_held": 2, "wrapped_sha256": digests}]  # journaled before the destruction
    assert outcome.details["keys_destroyed"] == 2 and outcome.details["subjects"] == 3
    assert outcome.details["wrapped_sha256"] == digests
    assert outcome.rows_deleted == outcome.files_rewritten == outcome.files_removed == 0  # nothing of prod.payments
    assert find_values(tmp_path, gone + [wrapped[lookup] for lookup in gone]) == []  # every decoded file of the vault
    reopened = sqlite_vault(where, key) if kind == SQLITE else delta_vault(where, key)
    ring = reopened.fetch(SUBJECTS)
    assert ring.get(101) is None and ring.get(102) is None
    assert all(ring.get(s) is not None for s in SUBJECTS if s not in (101, 102))  # every other key kept
    reopened.close()
    # A run killed after the vault's commit: the next attempt has the first one's facts and finds nothing left.
    again = destroy_subject_keys(step, [101, 102, 999], place, key, Store(), (Location.parse(str(tmp_path)),),
                                 Attempt(saved[0], saved.append))
    assert again.details["keys_destroyed"] == 2 and again.details["wrapped_sha256"] == digests and len(saved) == 1


def test_an_absent_vault_is_never_created_by_an_erasure(tmp_path: Path) -> None:
    _, step, _, _ = planned(tmp_path)
    for place in (VaultPlace(SQLITE, Location.parse(str(tmp_path / "v.sqlite"))),
                  VaultPlace(DELTA, Location.parse(str(tmp_path / "v")), "prod.keys")):
        with pytest.raises(VaultRefusedError, match="piitracer never creates a vault to erase from"):
            destroy_subject_keys(step, [101], place, master(), Store(), (Location.parse(str(tmp_path)),), Attempt())
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    key = master()
    sqlite_vault(tmp_path / "v.sqlite", key).close()
    with pytest.raises(VaultKeyError):
        destroy_subject_keys(step, [101], VaultPlace(SQLITE, Location.parse(str(tmp_path / "v.sqlite"))), master(),
                             Store(), (Location.parse(str(tmp_path)),), Attempt())


ENTRY = "catalog:\n  prod.payments:\n    format: parquet\n    location: data\n  prod.keys:\n    format: {fmt}\n    location: keys\n"


@pytest.mark.parametrize("fmt, vault, line", [
    ("delta", "prod.nothing", ":8: shred: vault 'prod.nothing' is neither a dataset of the catalog (a Delta vault table) "
                              "nor a SQLite vault file (a path ending .sqlite or .db)"),
    ("parquet", "prod.keys", ":8: shred: vault prod.keys: catalog.prod.keys is a parquet dataset: the key vault is a "
                             "Delta table with a location, holding keys only"),
    ("delta", "''", ":9: shred.vault: expected a catalog dataset id (a Delta vault table) or a SQLite vault file path"),
])
def test_a_misplaced_vault_is_one_clear_line(tmp_path: Path, fmt: str, vault: str, line: str) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "keys").mkdir()
    (tmp_path / "piitracer.yaml").write_text(ENTRY.format(fmt=fmt) + f"shred:\n  vault: {vault}\n")
    result = CliRunner().invoke(cli, ["--workspace", str(tmp_path), "lineage", "stats"])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2, result.output
    problems = [text for text in result.output.splitlines() if "piitracer.yaml" in text]
    assert len(problems) == 1 and problems[0].startswith(f"  {tmp_path / 'piitracer.yaml'}{line}"), result.output


def test_the_vault_setting_loads(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "keys").mkdir()
    (tmp_path / "piitracer.yaml").write_text(ENTRY.format(fmt="delta") + "shred:\n  vault: Prod.Keys\n")
    config = load_workspace(tmp_path).config
    assert config.shred.dataset(config.catalog) == "prod.keys"
    (tmp_path / "piitracer.yaml").write_text(ENTRY.format(fmt="delta") + "shred:\n  vault: state/vault.sqlite\n")
    config = load_workspace(tmp_path).config
    assert config.shred.dataset(config.catalog) is None and config.shred.vault == "state/vault.sqlite"
