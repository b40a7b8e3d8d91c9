"""Crypto-shredding certified from the bytes, never from a declaration (issue 49).

Each lakehouse (tests/support/shred_scenes.py) is built with the shred library the way a pipeline
would, and one declaration in it lies: the lineage says "a copy of the ciphertext" over plaintext,
the catalog says a column is ciphertext that is not, the vault named is not the one the data was
encrypted under, an old version holds plaintext, a copy of the vault keeps the keys. Each is either
refused before anything changes (every file and the vault byte-identical, the person's key still
there) or never certified ``crypto_shredded``; the honest tables beside it still are, their files
byte-identical across the erasure. Everything is read back apart from piitracer
(tests/support/byte_scan.py decodes every file; a fresh vault decrypts).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from byte_scan import find_values
from click.testing import CliRunner
from shred_scenes import PEOPLE, SUBJECT, Scene, digests, email, phone
from spark_lakehouse import checksum

import piitracer
from piitracer.api import Keys
from piitracer.audit.keys import write_audit_key
from piitracer.cli.main import cli
from piitracer.crypto.signing import generate_signing_key
from piitracer.executor.preflight import PlanRefused
from piitracer.executor.runner import ExecuteOptions, ExecutionError
from piitracer.model.plan import Subject
from piitracer.model.verification import ErasureState
from piitracer.verify import VerificationError

SECRETS = [email(SUBJECT), phone(SUBJECT), email(SUBJECT).lower()]
HONEST = ("customers", "emails_copy")
CRYPTO, ERASED = ErasureState.CRYPTO_SHREDDED, ErasureState.ERASED


@pytest.fixture()
def keys(tmp_path: Path) -> Keys:
    write_audit_key(tmp_path / "audit.key")
    generate_signing_key(tmp_path / "signing.key")
    return Keys.load(tmp_path / "audit.key", signing_key_file=tmp_path / "signing.key")


def subject() -> Subject:
    return Subject(value=str(SUBJECT), request_id="req-lie-1", received_at="2026-11-20T09:00:00Z")


def plan_of(root: Path, keys: Keys):
    with piitracer.open(root, keys) as session:
        return session.plan(["crm.customers.customer_id"], [subject()], keep=True).plan


def erase(root: Path, keys: Keys):
    """Plan, execute and verify one person's erasure through a session: (plan, summary, report)."""
    with piitracer.open(root, keys) as session:
        plan = session.plan(["crm.customers.customer_id"], [subject()], keep=True).plan
        summary = session.execute(plan, ExecuteOptions(no_concurrent_writers=True))  # no writer beside the test
        report = session.verify(plan).report
    return plan, summary, report


def states(report) -> dict[str, ErasureState]:
    return {d.dataset: d.state for d in report.datasets}


def everything(scene: Scene) -> dict[str, str]:
    """Every file of the lakehouse (tables and vault) by its hash."""
    return digests(scene.lake)


def key_of_subject(scene: Scene) -> bool:
    with scene.open_vault() as vault:
        return vault.fetch([SUBJECT]).get(SUBJECT) is not None


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_a_copy_whose_bytes_are_plaintext_is_erased_and_the_honest_tables_stay_shredded(
        tmp_path: Path, warehouse: Path, keys: Keys, fmt: str) -> None:
    scene = Scene(tmp_path, lying=fmt)
    root = scene.build(warehouse)
    lying = scene.lake / ("lying_copy" if fmt == "delta" else "iceberg")
    assert find_values(lying, SECRETS[:2])  # the test can fail: the plaintext is there before
    before = {name: digests(scene.lake / name) for name in HONEST}
    others = checksum(r for r in scene.decrypted("emails_copy") if r[0] != SUBJECT)
    plan, summary, report = erase(root, keys)
    decision = plan.decision("mart.lying_copy")
    stored = "large_string" if fmt == "iceberg" else "string"  # as pyiceberg's Arrow schema names it
    assert decision.status.value == "erase" and f"column email is stored as {stored}, which cannot hold piitracer's " \
        "ciphertext (binary): it is not ciphertext" in decision.reason
    assert summary.status == "complete", [(r.step.id, r.state, r.message) for r in summary.results]
    assert states(report) == {"crm.customers": CRYPTO, "mart.emails_copy": CRYPTO, "mart.contacts_lc": ERASED,
                              "mart.lying_copy": ERASED}
    assert find_values(lying, SECRETS + [SUBJECT]) == []  # the lie is erased to the bytes
    assert find_values(scene.lake / "contacts_lc", SECRETS + [SUBJECT]) == []
    for name in HONEST:
        assert digests(scene.lake / name) == before[name]  # shredded: not a byte rewritten
    assert checksum(r for r in scene.decrypted("emails_copy") if r[0] != SUBJECT) == others
    assert not key_of_subject(scene)
    evidence = report.result("crm.customers").shred
    assert (evidence.ciphertext_values_opened, evidence.subjects_with_rows) == (4, 1)  # email and phone, two versions
    assert evidence.plaintext_sets == ("decrypted:crm.customers.email", "decrypted:crm.customers.phone")
    assert "decrypted:crm.customers.email" in report.result("mart.lying_copy").value_sets  # searched there too
    with piitracer.open(root, keys) as session:
        markdown = session.report("req-lie-1", "md")
        certificate = session.certificate("req-lie-1")["certificate"]
    table = markdown.split("Crypto-shredded datasets")[1].split("\n\n")[1].splitlines()
    rows = {cells[1].strip(): [c.strip() for c in cells[3:12]] for cells in (line.split("|") for line in table[2:])}
    # keys destroyed, files, rows, values opened, subjects, decrypted values searched, files, versions, others opened
    assert rows["crm.customers"][:7] == ["1", "2", "2", "4", "1", "2", str(report.result("crm.customers").files_scanned)]
    assert rows["mart.emails_copy"][:6] == ["1", "2", "2", "2", "1", "1"]
    said = {d["dataset"]: d for d in certificate["datasets"]}
    assert said["crm.customers"]["erasure"] == "crypto-shredded"
    assert said["crm.customers"]["vault_evidence"]["ciphertext_values_opened"] == 4
    assert said["mart.lying_copy"]["state"] == "erased" and "erasure" not in said["mart.lying_copy"]


def test_the_plan_a_person_sees_says_the_lying_copy_is_erased_and_why(tmp_path: Path, warehouse: Path) -> None:
    root = Scene(tmp_path, lying="delta").build(warehouse)
    result = CliRunner().invoke(cli, ["-w", str(root), "--output", "json", "plan", "--source", "crm.customers.customer_id",
                                      "--subject", str(SUBJECT)])
    assert result.exit_code == 0, result.output
    import json

    rows = {d["dataset"]: (d["status"], d["reason"]) for d in json.loads(result.output)["datasets"]}
    assert rows["mart.lying_copy"][0] == "erase" and "stored as string" in rows["mart.lying_copy"][1]
    assert {d: status for d, (status, _) in rows.items()} == {
        "crm.customers": "shred", "mart.emails_copy": "shred", "mart.contacts_lc": "erase", "mart.lying_copy": "erase"}


@pytest.mark.parametrize("trap", [dict(lying="binary"), dict(source_phone="binary"), dict(other_vault=True),
                                  dict(bare="plaintext"), dict(plaintext_history=True)],
                         ids=["plaintext-bytes-copy", "plaintext-bytes-source", "another-vault", "bare-plaintext",
                              "plaintext-old-version"])
def test_what_is_not_the_subjects_ciphertext_stops_the_run_before_any_key_goes(
        tmp_path: Path, warehouse: Path, keys: Keys, trap: dict) -> None:
    scene = Scene(tmp_path, **trap)
    root = scene.build(warehouse)
    plan = plan_of(root, keys)
    before = everything(scene)
    with piitracer.open(root, keys) as session, pytest.raises(ExecutionError) as stopped:
        session.execute(plan)
    message = str(stopped.value)
    assert "s001 (resolve on crm.customers) failed" in message and "nothing was changed" in message
    assert not any(secret in message for secret in SECRETS) and str(SUBJECT) not in message
    assert everything(scene) == before  # not a file of a table or of the vault changed
    assert key_of_subject(scene)  # the key is still there: nothing was destroyed
    with piitracer.open(root, keys) as session, pytest.raises(VerificationError):
        session.verify(plan, record=False)  # nothing resolved, nothing to certify


def test_the_wrong_vault_is_named_in_the_refusal(tmp_path: Path, warehouse: Path, keys: Keys) -> None:
    scene = Scene(tmp_path, other_vault=True)
    root = scene.build(warehouse)
    plan = plan_of(root, keys)
    with piitracer.open(root, keys) as session, pytest.raises(ExecutionError) as stopped:
        session.execute(plan)
    assert f"the key vault {scene.vault_path} (SQLite) holds no key for 1 subject(s) whose ciphertext is stored " \
        "here" in str(stopped.value)
    assert scene.decrypted("customers", missing="raise")  # the data's own vault still opens the person


def test_a_source_storing_a_declared_column_as_text_is_erased_physically(tmp_path: Path, warehouse: Path,
                                                                         keys: Keys) -> None:
    scene = Scene(tmp_path, source_phone="string")
    root = scene.build(warehouse)
    copy_before = digests(scene.lake / "emails_copy")
    plan, summary, report = erase(root, keys)
    source = plan.decision("crm.customers")
    assert source.status.value == "erase" and source.warnings == (
        "catalog.crm.customers.shredded lists phone as ciphertext, but column phone is stored as string, which cannot "
        "hold piitracer's ciphertext (binary): it is not ciphertext: planned for physical erasure",)
    assert summary.status == "complete"
    assert states(report) == {"crm.customers": ERASED, "mart.emails_copy": CRYPTO, "mart.contacts_lc": ERASED}
    assert find_values(scene.lake / "customers", [phone(SUBJECT), SUBJECT]) == []
    assert digests(scene.lake / "emails_copy") == copy_before


def test_names_stored_in_another_case_are_matched_and_proven(tmp_path: Path, warehouse: Path, keys: Keys) -> None:
    scene = Scene(tmp_path, mixed_case=True)
    root = scene.build(warehouse)
    _, summary, report = erase(root, keys)
    assert summary.status == "complete"
    assert states(report) == {"crm.customers": CRYPTO, "mart.emails_copy": CRYPTO, "mart.contacts_lc": ERASED}
    evidence = report.result("crm.customers").shred
    assert (evidence.ciphertext_values_opened, evidence.key_column) == (4, "customer_id")
    assert evidence.other_rows_opened > 0 and evidence.key_column_places >= 2  # Customer_ID's ids and stats, accepted


def test_a_ciphertext_only_copy_is_found_by_its_ciphertext(tmp_path: Path, warehouse: Path, keys: Keys) -> None:
    scene = Scene(tmp_path, bare="honest")
    root = scene.build(warehouse)
    before = digests(scene.lake / "emails_bare")
    plan, summary, report = erase(root, keys)
    assert plan.decision("mart.emails_bare").status.value == "shred" and summary.status == "complete"
    bare = report.result("mart.emails_bare")
    assert bare.state is CRYPTO, bare.reason
    assert (bare.shred.ciphertext_rows_tried, bare.shred.ciphertext_values_opened) == (2, 2)  # matched by ciphertext
    assert bare.shred.other_rows_opened > 0  # other people's ciphertext matched to customers' rows, opened
    assert digests(scene.lake / "emails_bare") == before


@pytest.mark.parametrize("held", ["honest", "plaintext"])
def test_an_archive_of_the_source_is_read_and_proven(tmp_path: Path, warehouse: Path, keys: Keys, held: str) -> None:
    scene = Scene(tmp_path, archive=held)
    root = scene.build(warehouse)
    plan, summary, report = erase(root, keys)
    archive = report.result("archive.customers")
    if held == "honest":
        assert plan.decision("archive.customers").status.value == "shred"
        assert archive.state is CRYPTO, archive.reason
        assert archive.shred.ciphertext_files_read == 2 and archive.shred.ciphertext_values_opened == 4
    else:
        assert plan.decision("archive.customers").status.value == "erase"
        assert archive.state is ERASED and find_values(scene.lake / "archive", SECRETS[:2] + [SUBJECT]) == []


def test_a_vault_replica_is_destroyed_and_searched_as_the_vault(tmp_path: Path, warehouse: Path, keys: Keys) -> None:
    scene = Scene(tmp_path, vault="delta", vault_copy="replica")
    root = scene.build(warehouse)
    replica = scene.lake / "key_vault_dr"
    with scene.open_vault(replica) as vault:
        lookup = vault.lookup.of(SUBJECT)
    assert find_values(replica, [lookup])  # the replica holds the person's key before
    _, summary, report = erase(root, keys)
    assert summary.status == "complete", [(r.step.id, r.state, r.message) for r in summary.results]
    assert find_values(replica, [lookup]) == [] and find_values(scene.vault_path, [lookup]) == []
    with scene.open_vault(replica) as vault:
        assert vault.fetch([SUBJECT]).get(SUBJECT) is None and len(vault.fetch(PEOPLE[1:])) == len(PEOPLE) - 1
    evidence = report.result("crm.customers").shred
    assert report.result("crm.customers").state is CRYPTO
    assert evidence.vault_copies == (f"replica prod.key_vault@dr ({replica})",)


def test_an_archive_of_the_vault_refuses_the_key_destruction(tmp_path: Path, warehouse: Path, keys: Keys) -> None:
    scene = Scene(tmp_path, vault="delta", vault_copy="archive")
    root = scene.build(warehouse)
    plan = plan_of(root, keys)
    before = everything(scene)
    with piitracer.open(root, keys) as session, pytest.raises(PlanRefused) as refused:
        session.execute(plan)
    assert "catalog.archive.key_vault is a archive of the key vault prod.key_vault" in str(refused.value)
    assert everything(scene) == before and key_of_subject(scene)


def test_a_join_key_copy_stays_shredded(tmp_path: Path, warehouse: Path, keys: Keys) -> None:
    scene = Scene(tmp_path, joined=True)
    root = scene.build(warehouse)
    before = digests(scene.lake / "joined")
    plan, summary, report = erase(root, keys)
    assert plan.decision("mart.joined").status.value == "shred" and summary.status == "complete"
    assert report.result("mart.joined").state is CRYPTO
    assert digests(scene.lake / "joined") == before


def test_a_dataset_holding_only_the_subjects_is_not_certified(tmp_path: Path, warehouse: Path, keys: Keys) -> None:
    scene = Scene(tmp_path, only_subject=True)
    root = scene.build(warehouse)
    _, summary, report = erase(root, keys)
    assert summary.status == "complete"
    only = report.result("mart.subject_only")
    assert only.state is ErasureState.NOT_CHECKED and "no other person's ciphertext" in only.reason
    assert report.result("crm.customers").state is CRYPTO and not report.complete


def test_the_decrypted_values_are_searched_beyond_the_plan_by_the_sweep(tmp_path: Path, warehouse: Path,
                                                                        keys: Keys) -> None:
    from deltalake import write_deltalake
    from shred_scenes import clear

    scene = Scene(tmp_path)
    root = scene.build(warehouse)
    # A job nobody catalogued kept the decrypted e-mails: no lineage, no catalog entry, only the bytes.
    write_deltalake(str(scene.lake / "stray_export"), clear(PEOPLE).select(["customer_id", "email"]).drop(["customer_id"]))
    plan, summary, report = erase(root, keys)
    assert summary.status == "complete" and report.complete  # the plan's own datasets are proven
    with piitracer.open(root, keys) as session:
        swept = session.verify(plan, record=False, sweep="roots").report
    stray = [d for d in swept.datasets if d.dataset not in {x.dataset for x in report.datasets}]
    assert [(d.state, {f.value_set for f in d.findings}) for d in stray] == [
        (ErasureState.UNPLANNED, {"decrypted:crm.customers.email"})]  # found where no plan reached
    assert not swept.complete
