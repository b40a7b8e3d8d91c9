"""The proof of a crypto-shredded dataset (issue 42 point 4): the verdict of a dataset the plan
erases by destroying the subjects' keys (status ``shred``) instead of rewriting it.

Such a dataset is ``crypto_shredded`` when all of these hold, each checked here:

1. **The key destruction ran**: every ``destroy_subject_key`` step naming the dataset committed
   (otherwise it is ``pending`` until that step).
2. **No key is left in the vault's files**: every file under the key vault's location (data files,
   log, checkpoints; a SQLite vault's file and its journal) is decoded by the verifier's decoders
   and holds no subject's lookup (the keyed hash the vault finds a subject by, computed here from
   the master key); and no file holds one of the wrapped keys the step destroyed, searched by the
   SHA-256 the step journaled before destroying them (the wrapped key is a fixed-length base64
   text ending in one ``=``: every such window of every file's bytes, and of every decoded Parquet
   value, is hashed and compared).
3. **No plaintext of the subjects is left in the dataset**: the verifier's usual search of every
   file finds subject values only in the dataset's key column (its rows, its statistics, a Delta
   log's stats or an Iceberg manifest's bounds of that column), and only the value sets naming the
   subjects' keys: that id is what the vault found the key by, and stays readable by design.
4. **The subjects' stored ciphertext does not decrypt**: the vault gives no key for any subject,
   and decrypting the subjects' rows of a dataset that declares ``shredded:`` fails with
   :class:`~piitracer.shred.keys.SubjectShreddedError` (a copy of the ciphertext elsewhere is the
   same ciphertext, under the same destroyed key).
5. **The vault is the one the dataset was encrypted with**: the vault still holds keys for other
   subjects of the dataset (a sample of them); a vault holding none of theirs proves nothing by
   missing the subjects' keys.

Anything else found is ``found`` (a plaintext outside the key column, a key left in the vault, a
ciphertext that still decrypts) or ``not_checked`` (no vault, no master key, the wrong vault).
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

from piitracer.formats.current_rows import current_rows, key_field_ids
from piitracer.model.plan import Action, DatasetDecision, DeletionPlan, Step
from piitracer.model.verification import DatasetVerification, ErasureState, Finding, ShredEvidence
from piitracer.model.workspace import CatalogDataset
from piitracer.shred.keys import SECRET_BYTES
from piitracer.shred.place import SQLITE, VaultPlace
from piitracer.storage.locations import Location
from piitracer.storage.store import Store

COMMITTED = "committed"
LOOKUPS = "key vault: the subjects' lookups"
WRAPPED = "key vault: the subjects' wrapped keys"
# A wrapped key: base64 of a 12-byte nonce, the 64-byte key and a 16-byte tag (crypto.envelope's
# MasterKey.wrap): 124 characters, the last one '=' (92 bytes is 2 more than a multiple of 3).
WRAPPED_CHARS = len(base64.b64encode(bytes(12 + SECRET_BYTES + 16)))
OTHERS_SAMPLED = 1000


@dataclass(frozen=True)
class ShredSetting:
    """What the proof needs besides the plan: the workspace's vault, the master key, and what each
    committed ``destroy_subject_key`` step journaled (step id -> its outcome's details)."""

    vault: VaultPlace | None = None
    master: Any = None
    destroyed: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass
class VaultProof:
    """The vault's files decoded once per verification: what was found there, or why it could not be."""

    files: int = 0
    findings: list[Finding] = field(default_factory=list)
    problem: str | None = None
    vault: Any = None  # the open KeyVault, for the decrypt attempts


class ShredCheck:
    """The proof of every dataset a plan shreds, the vault decoded once (when first asked)."""

    def __init__(self, plan: DeletionPlan, setting: ShredSetting | None, value_sets: Mapping[str, list[Any]],
                 store: Store) -> None:
        self.plan, self.setting, self.value_sets, self.store = plan, setting or ShredSetting(), value_sets, store
        self.steps = [s for s in plan.steps if s.action is Action.DESTROY_SUBJECT_KEY]
        self._proof: VaultProof | None = None

    def subjects(self, steps: Iterable[Step]) -> list[Any]:
        """The typed key values whose keys ``steps`` destroy (their value sets, resolved)."""
        found: dict[str, Any] = {}
        for step in steps:
            for source in step.values_from:
                for value in self.value_sets.get(source.name, []):
                    found.setdefault(repr(value), value)
        return [found[k] for k in sorted(found)]

    def proof(self) -> VaultProof:
        """The vault's files decoded for every subject of every key destruction of the plan."""
        if self._proof is None:
            self._proof = prove_vault(self.setting, self.subjects(self.steps), self.store)
        return self._proof

    def close(self) -> None:
        """Close the vault the proof opened."""
        if self._proof is not None and self._proof.vault is not None:
            self._proof.vault.close()

    def verdict(self, decision: DatasetDecision, entry: CatalogDataset | None, location: Location | None,
                findings: list[Finding], common: dict[str, Any], states: Mapping[str, str]) -> DatasetVerification:
        """The verdict of one dataset planned ``shred`` (module docstring), from the verifier's
        ``findings`` in its files and the rest of its result (``common``)."""
        dataset = decision.dataset
        steps = [s for s in self.steps if dataset in s.params.datasets]
        base = {k: v for k, v in common.items() if k not in ("findings", "dataset")}
        key = decision.key_column
        key_sets = {v.name for s in steps for v in s.values_from} | {v.name for v in decision.values_from}
        ids = _field_ids(entry, location, self.store, key) if key else set()
        accepted = [f for f in findings if key and f.value_set in key_sets and names_column(f.where, key, ids)]
        plain = [f for f in findings if f not in accepted]

        def result(state: ErasureState, reason: str, found: list[Finding] = (), **more: Any) -> DatasetVerification:
            return DatasetVerification(dataset=dataset, state=state, reason=reason, findings=tuple(found), **base, **more)

        if plain:
            return result(ErasureState.FOUND, f"planned shred, but {len(plain)} place(s) hold the subjects' values outside "
                          f"its key column {key or '(none)'}: plaintext that destroying the key does not erase, and no "
                          "planned step removes (check the catalog's shredded: and the lineage, then re-plan)", plain)
        if not steps:
            return result(ErasureState.FOUND, "planned shred, but no destroy_subject_key step of the plan names it: "
                          "the plan was altered: re-plan")
        open_steps = [s for s in steps if states.get(s.id) != COMMITTED]
        if open_steps:
            until = "; ".join(f"{s.id} {s.action.value} ({states.get(s.id, 'not run')})" for s in open_steps)
            return DatasetVerification(dataset=dataset, state=ErasureState.PENDING, findings=tuple(accepted),
                                       pending_until=f"{until}: destroys the subjects' keys in the key vault",
                                       reason="the subjects' ciphertext stays readable until their keys are destroyed", **base)
        proof = self.proof()
        vault = str(self.setting.vault)
        if proof.problem is not None:
            return result(ErasureState.NOT_CHECKED, f"the key destruction cannot be proven: {proof.problem}")
        if proof.findings:
            return result(ErasureState.FOUND, f"{len(proof.findings)} place(s) of the {vault} still hold a subject's "
                          "lookup or a destroyed wrapped key: the key is not gone from the vault's files", proof.findings)
        subjects = self.subjects(steps)
        attempt = decrypt_attempt(proof.vault, entry, location, self.store, key, subjects)
        if attempt.problem is not None:
            state = ErasureState.NOT_CHECKED if attempt.cannot_check else ErasureState.FOUND
            return result(state, attempt.problem)
        evidence = ShredEvidence(
            vault=vault, destroyed_by=tuple(s.id for s in steps),
            keys_destroyed=sum(int(self.setting.destroyed.get(s.id, {}).get("keys_destroyed", 0)) for s in steps),
            vault_files_decoded=proof.files, wrapped_keys_searched=len(_digests(self.setting)),
            ciphertext_rows_tried=attempt.rows, key_column=key, key_column_places=len(accepted),
            other_subjects_checked=attempt.others, other_subjects_with_keys=attempt.others_with_keys)
        tried = (f"{attempt.rows} stored ciphertext row(s) of the subjects fail to decrypt (no key)" if entry is not None
                 and entry.shredded else "its ciphertext is under the destroyed keys")
        return result(ErasureState.CRYPTO_SHREDDED, (
            f"crypto-shredded: the subjects' keys destroyed in the {vault} by {', '.join(s.id for s in steps)}; "
            f"{proof.files} file(s) of the vault decoded hold no lookup and no destroyed wrapped key of theirs; {tried}; "
            f"the key column {key} keeps their id ({len(accepted)} place(s), accepted); the vault holds keys for "
            f"{attempt.others_with_keys} of {attempt.others} other subject(s) sampled"), shred=evidence)


def names_column(where: str, column: str, field_ids: set[int] = frozenset()) -> bool:
    """Whether a finding's place is one column's own: its rows (``column user_id``), its Parquet
    footer statistics (``... of user_id``), a Delta log's or checkpoint's stats of it
    (``...minValues.user_id``), an Iceberg manifest's bounds of its field id."""
    place = where.removesuffix(" (truncated prefix)").lower()
    name = column.lower()
    if place == f"column {name}" or place.endswith(f" column {name}") or place.endswith(f" of {name}"):
        return True
    if re.search(rf"\.(minvalues|maxvalues)\.{re.escape(name)}$", place):
        return True
    bound = re.search(r"_bounds of field (\d+)$", place)
    return bool(bound and int(bound.group(1)) in field_ids)


def _field_ids(entry: CatalogDataset | None, location: Location | None, store: Store, column: str) -> set[int]:
    """An Iceberg table's field id of ``column`` (its manifests' bounds are keyed by it); empty otherwise."""
    if entry is None or location is None:
        return set()
    return key_field_ids(entry.format, location, store, column)


def _digests(setting: ShredSetting) -> set[str]:
    return {d for details in setting.destroyed.values() for d in details.get("wrapped_sha256", [])}


def prove_vault(setting: ShredSetting, subjects: list[Any], store: Store) -> VaultProof:
    """Decode every file of the vault for the subjects' lookups and the destroyed wrapped keys.

    Args:
        setting: the vault, the master key, the destroy steps' journaled facts.
        subjects: the typed key values whose keys were destroyed.
        store: the storage of the vault's location.

    Returns:
        The files decoded and what was found there, or the problem; the vault left open.
    """
    from piitracer.shred.keys import ShredInputError, VaultKeyError, VaultRefusedError
    from piitracer.shred.place import open_existing
    from piitracer.verify.decoders import scan_location
    from piitracer.verify.values import ValueIndex

    place = setting.vault
    if place is None:
        return VaultProof(problem="the workspace names no key vault (shred.vault in piitracer.yaml)")
    if setting.master is None:
        return VaultProof(problem="no master key: the subjects' entries in the vault are found by a hash keyed from it "
                                  "(give --master-key-file or PIITRACER_MASTER_KEY_FILE)")
    try:
        vault = open_existing(place, setting.master, store)
    except (VaultRefusedError, VaultKeyError) as error:
        return VaultProof(problem=str(error))
    try:
        lookups = sorted({vault.lookup.of(value) for value in subjects})
    except ShredInputError as error:
        vault.close()
        return VaultProof(problem=str(error))
    root, files = _vault_files(place, store)
    scan = scan_location(root, ValueIndex.build({LOOKUPS: lookups}), store, files)
    findings = [Finding(file=hit.file, where=f"key vault: {hit.where}", value_set=hit.value_set, kind="vault")
                for hit in scan.hits]
    digests = _digests(setting)
    for relative in files:
        for where in _wrapped_places(store.read_bytes(root.child(relative)), relative, digests):
            findings.append(Finding(file=relative, where=f"key vault: {where}", value_set=WRAPPED, kind="vault"))
    return VaultProof(files=len(files), findings=findings, vault=vault)


def _vault_files(place: VaultPlace, store: Store) -> tuple[Location, list[str]]:
    """The folder the vault's files are listed from and those files (relative): a SQLite vault's
    file and any journal beside it; every file under a Delta vault's location."""
    if place.kind == SQLITE:
        path = place.location.path
        names = [n for n in (path.name, f"{path.name}-journal", f"{path.name}-wal") if (path.parent / n).exists()]
        return Location.parse(str(path.parent)), names
    return place.location, sorted(entry.relative for entry in store.list_files(place.location))


def _wrapped_places(data: bytes, relative: str, digests: set[str]) -> Iterator[str]:
    """Where ``data`` (a file's bytes, and a Parquet file's decoded values) holds a wrapped key
    whose SHA-256 is among ``digests``."""
    if not digests:
        return
    if _windows_match(data, digests):
        yield "raw bytes"
    if relative.endswith(".parquet"):
        import io

        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(io.BytesIO(data))
        except (OSError, pa.ArrowException):
            return
        for name in table.column_names:
            column = table.column(name)
            if pa.types.is_string(column.type) or pa.types.is_large_string(column.type) or pa.types.is_binary(column.type):
                if any(value is not None and _windows_match(value if isinstance(value, bytes) else value.encode("utf-8"),
                                                            digests) for value in column.to_pylist()):
                    yield f"column {name}"


def _windows_match(data: bytes, digests: set[str]) -> bool:
    """Whether a window of :data:`WRAPPED_CHARS` bytes ending at an '=' hashes to one of ``digests``."""
    start = data.find(b"=", WRAPPED_CHARS - 1)
    while start != -1:
        window = data[start - WRAPPED_CHARS + 1:start + 1]
        if hashlib.sha256(window).hexdigest() in digests:
            return True
        start = data.find(b"=", start + 1)
    return False


@dataclass
class DecryptAttempt:
    """What decrypting the subjects' stored ciphertext gave (``problem``: not crypto-shredded)."""

    rows: int = 0
    others: int = 0
    others_with_keys: int = 0
    problem: str | None = None
    cannot_check: bool = False


def decrypt_attempt(vault: Any, entry: CatalogDataset | None, location: Location | None, store: Store,
                    key: str | None, subjects: list[Any]) -> DecryptAttempt:
    """Try to decrypt the subjects' stored ciphertext of one dataset, and check the vault still
    holds keys for some of its other subjects (module docstring, 4 and 5).

    Args:
        vault: the open key vault.
        entry: the dataset's catalog entry (its ``shredded:`` names the ciphertext columns).
        location: its location.
        store: the storage of its location.
        key: its key column.
        subjects: the typed key values whose keys were destroyed.

    Returns:
        The rows tried, the other subjects checked, and the problem if any.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from piitracer.shred.cipher import ShredColumns, decrypt_batch
    from piitracer.shred.keys import CiphertextError, SubjectShreddedError

    attempt = DecryptAttempt()
    held = len(vault.fetch(subjects))
    if held:
        attempt.problem = f"the key vault still gives a key for {held} of the {len(subjects)} subject(s): not shredded"
        return attempt
    rows = _rows(entry, location, store)
    if rows is None or key is None or key not in rows.schema.names:
        return attempt
    column = rows.to_table(columns=[key]).column(key)
    wanted = pa.array(subjects, column.type) if subjects else pa.array([], column.type)
    others = pc.unique(pc.filter(column, pc.invert(pc.is_in(column, value_set=wanted)))).drop_null()
    sample = others.slice(0, OTHERS_SAMPLED).to_pylist()
    attempt.others = len(sample)
    attempt.others_with_keys = len(vault.fetch(sample)) if sample else 0
    if sample and not attempt.others_with_keys:
        attempt.cannot_check = True
        attempt.problem = (f"the key vault holds no key for any of {len(sample)} other subject(s) of this dataset: it is "
                           "not the vault its pipeline encrypts with, so a missing key proves nothing (check shred.vault)")
        return attempt
    if entry is None or entry.shredded is None:
        return attempt
    columns = [c for c in entry.shredded.columns if c in rows.schema.names]
    mine = rows.to_table(columns=[key, *columns], filter=pc.field(key).isin(wanted))
    attempt.rows = mine.num_rows
    if not mine.num_rows or not columns:
        return attempt
    try:
        decrypt_batch(mine, vault, ShredColumns(key=key, randomised=tuple(columns)))
    except SubjectShreddedError:
        return attempt
    except CiphertextError as error:
        attempt.problem = f"a subject's stored ciphertext met a key in the vault: {error}"
        return attempt
    if any(mine.column(c).null_count < mine.num_rows for c in columns):
        attempt.problem = f"{mine.num_rows} stored ciphertext row(s) of the subjects still decrypt"
    return attempt


def _rows(entry: CatalogDataset | None, location: Location | None, store: Store):
    """The dataset's current rows as a pyarrow dataset (``to_table(columns, filter)``), or None."""
    if entry is None or location is None or not store.exists(location):
        return None
    return current_rows(entry.format, location, store)
