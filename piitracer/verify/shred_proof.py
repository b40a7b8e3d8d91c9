"""The proof of a crypto-shredded dataset (issues 42 and 49): the verdict of a dataset the plan
erases by destroying the subjects' keys (status ``shred``) instead of rewriting it.

A declaration is where to look, never what is there: the lineage says which tables copy the
ciphertext and the catalog's ``shredded:`` says which columns hold it, but only the bytes say that
they do. Such a dataset is ``crypto_shredded`` when all of these hold, each checked here; a check
that cannot run gives ``not_checked``, never the verdict:

1. **Its ciphertext was checked before destruction**: the resolve step read every subject's row
   in every stored file of the dataset and opened each value of its ciphertext columns under the
   row's subject key in this vault (``executor/shred_check.py``; journaled per dataset), and kept
   the plaintext, sealed, with the request's values.
2. **The key destruction ran**: every ``destroy_subject_key`` step naming the dataset committed
   (otherwise it is ``pending`` until that step), in the vault the workspace names now.
3. **No key is left in the vault or a copy of it**: every file of the key vault and of each
   catalogued copy of it (replicas, clones) is decoded and holds no subject's lookup (the keyed hash
   the vault finds a subject by) and none of the wrapped keys the step destroyed (searched by the
   SHA-256 the step journaled before destroying them), and neither the vault nor a copy gives a key
   for a subject. At least as many keys were destroyed as subjects have ciphertext here.
4. **No plaintext of the subjects is left**: the verifier's search of every file — every column,
   statistics, logs, manifests, every retained version — for every value of theirs, the plaintext
   their ciphertext opened to included, finds nothing but their id in the column whose key opens
   the ciphertext (what the vault found the key by: it stays readable by design).
5. **The vault is the one the dataset was encrypted with**: other people's ciphertext in the
   dataset (a sample of their rows; a copy without an id column is matched to the declaring
   dataset's rows by its ciphertext) still opens under their keys in this vault.

Anything found is ``found`` (a plaintext, a key left in the vault); what cannot be shown is
``not_checked`` (no check before destruction, another vault, no other person's rows to show it).
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

from piitracer.formats.current_rows import key_field_ids
from piitracer.model.plan import Action, CiphertextHeld, DatasetDecision, DeletionPlan, Step
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
    """What the proof needs besides the plan: the workspace's vault, the master key, what each
    committed ``destroy_subject_key`` step journaled (step id -> its outcome's details), and what the
    resolve step checked of each shredded dataset's ciphertext before (dataset -> facts)."""

    vault: VaultPlace | None = None
    master: Any = None
    destroyed: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    checked: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass
class VaultProof:
    """The vault's files (and its copies') decoded once per verification: what was found there, or
    why it could not be."""

    files: int = 0
    findings: list[Finding] = field(default_factory=list)
    problem: str | None = None
    vault: Any = None  # the open KeyVault, for the other people's keys
    copies: list[Any] = field(default_factory=list)  # each copy of the vault, open
    held: int = 0  # subjects the vault or a copy still gives a key for


class ShredCheck:
    """The proof of every dataset a plan shreds, the vault decoded once (when first asked)."""

    def __init__(self, plan: DeletionPlan, setting: ShredSetting | None, value_sets: Mapping[str, list[Any]],
                 store: Store, catalog: Mapping[str, CatalogDataset] | None = None,
                 locations: Mapping[str, Location] | None = None) -> None:
        self.plan, self.setting, self.value_sets, self.store = plan, setting or ShredSetting(), value_sets, store
        # Where each dataset is: a copy without a subject id column is matched to its declaring dataset's rows.
        self.places = {d: (e, locations[d]) for d, e in (catalog or {}).items() if d in (locations or {})}
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
        """Close the vault the proof opened, and its copies."""
        if self._proof is not None:
            for vault in [self._proof.vault, *self._proof.copies]:
                if vault is not None:
                    vault.close()

    def verdict(self, decision: DatasetDecision, entry: CatalogDataset | None, location: Location | None,
                findings: list[Finding], common: dict[str, Any], states: Mapping[str, str]) -> DatasetVerification:
        """The verdict of one dataset planned ``shred`` (module docstring), from the verifier's
        ``findings`` in its files and the rest of its result (``common``)."""
        dataset = decision.dataset
        steps = [s for s in self.steps if dataset in s.params.datasets]
        base = {k: v for k, v in common.items() if k not in ("findings", "dataset")}
        held = next((h for s in steps if (h := s.params.held(dataset)) is not None), None)
        subject_columns = sorted({c.subject_column for c in held.columns if c.subject_column} if held else
                                 ({decision.key_column} if decision.key_column else set()))
        key = held_key(subject_columns, decision.key_column)
        key_sets = {v.name for s in steps for v in s.values_from} | {v.name for v in decision.values_from}
        ids = {c: _field_ids(entry, location, self.store, c) for c in subject_columns}
        accepted = [f for f in findings if f.value_set in key_sets and any(names_column(f.where, c, ids[c])
                                                                            for c in subject_columns)]
        plain = [f for f in findings if f not in accepted]

        def result(state: ErasureState, reason: str, found: list[Finding] = (), **more: Any) -> DatasetVerification:
            return DatasetVerification(dataset=dataset, state=state, reason=reason, findings=tuple(found), **base, **more)

        if plain:
            return result(ErasureState.FOUND, f"planned shred, but {len(plain)} place(s) hold the subjects' values outside "
                          f"the column{'s' if len(subject_columns) > 1 else ''} their keys are found by "
                          f"({', '.join(subject_columns) or 'none'}): plaintext that destroying the key does not erase, and "
                          "no planned step removes (check the catalog's shredded: and the lineage, then re-plan)", plain)
        if not steps:
            return result(ErasureState.FOUND, "planned shred, but no destroy_subject_key step of the plan names it: "
                          "the plan was altered: re-plan")
        open_steps = [s for s in steps if states.get(s.id) != COMMITTED]
        if open_steps:
            until = "; ".join(f"{s.id} {s.action.value} ({states.get(s.id, 'not run')})" for s in open_steps)
            return DatasetVerification(dataset=dataset, state=ErasureState.PENDING, findings=tuple(accepted),
                                       pending_until=f"{until}: destroys the subjects' keys in the key vault",
                                       reason="the subjects' ciphertext stays readable until their keys are destroyed", **base)
        if held is None:
            return result(ErasureState.NOT_CHECKED, "the plan does not say which of its columns hold ciphertext (a plan "
                          "made before piitracer proved shreds from the bytes): its ciphertext was never checked; re-plan")
        checked = self.setting.checked.get(dataset)
        if checked is None:
            return result(ErasureState.NOT_CHECKED, "its ciphertext was not read and opened under the subjects' keys before "
                          "the keys were destroyed (the resolve step journaled no check of it): nothing shows that the "
                          "keys destroyed are the ones that opened it")
        vault = self.setting.vault
        moved = sorted({str(d.get("vault")) for s in steps if (d := self.setting.destroyed.get(s.id)) is not None}
                       - {str(vault.location) if vault is not None else None})
        if moved:
            return result(ErasureState.NOT_CHECKED, f"the keys were destroyed in {', '.join(moved)}, but the workspace's "
                          f"key vault is now {vault.location if vault is not None else 'none'}: the proof reads the "
                          "vault the step destroyed keys in")
        proof = self.proof()
        if proof.problem is not None:
            return result(ErasureState.NOT_CHECKED, f"the key destruction cannot be proven: {proof.problem}")
        if proof.findings:
            return result(ErasureState.FOUND, f"{len(proof.findings)} place(s) of the {vault} or its copies still hold a "
                          "subject's lookup or a destroyed wrapped key: the key is not gone from the vault's files",
                          proof.findings)
        if proof.held:
            return result(ErasureState.FOUND, f"the {vault} or a copy of it still gives a key for {proof.held} of the "
                          "subject(s): their ciphertext still opens")
        destroyed = sum(int(self.setting.destroyed.get(s.id, {}).get("keys_destroyed", 0)) for s in steps)
        with_rows = int(checked.get("subjects", 0))
        if destroyed < with_rows:
            return result(ErasureState.NOT_CHECKED, f"{with_rows} subject(s) have ciphertext here, opened before the "
                          f"destruction, but the steps destroyed {destroyed} key(s): the keys destroyed are not all the "
                          "ones that opened it")
        others = other_rows(proof.vault, held, self.subjects(steps), entry, location, self.store, self.places)
        if others.problem is not None:
            return result(ErasureState.NOT_CHECKED, others.problem)
        plaintext = sorted({c.plaintext for c in held.columns})
        evidence = ShredEvidence(
            vault=str(vault), vault_copies=tuple(str(c) for c in vault.copies), destroyed_by=tuple(s.id for s in steps),
            keys_destroyed=destroyed, vault_files_decoded=proof.files, wrapped_keys_searched=len(_digests(self.setting)),
            ciphertext_files_read=int(checked.get("files", 0)), ciphertext_rows_tried=int(checked.get("rows", 0)),
            ciphertext_values_opened=int(checked.get("values", 0)), subjects_with_rows=with_rows,
            plaintext_sets=tuple(plaintext),
            plaintext_values_searched=sum(len(self.value_sets.get(name, ())) for name in plaintext),
            files_searched=int(common.get("files_scanned", 0)), versions_searched=int(common.get("snapshots_checked", 0)),
            key_column=key, key_column_places=len(accepted), other_subjects_checked=others.subjects,
            other_subjects_with_keys=others.with_keys, other_rows_opened=others.opened)
        keys_said = (f"{destroyed} key(s) destroyed in the {vault}" + (f" and its {len(vault.copies)} copy(ies)"
                                                                         if vault.copies else "")
                     + f" by {', '.join(s.id for s in steps)}")
        return result(ErasureState.CRYPTO_SHREDDED, (
            f"crypto-shredded: before the destruction, {evidence.ciphertext_values_opened} ciphertext value(s) of "
            f"{with_rows} subject(s) in {evidence.ciphertext_rows_tried} row(s) of {evidence.ciphertext_files_read} stored "
            f"file(s) opened under their keys; {keys_said}; {proof.files} file(s) of the vault decoded hold no lookup and "
            f"no destroyed wrapped key of theirs, and it gives none of their keys; their {evidence.plaintext_values_searched} "
            f"decrypted value(s) were searched for in {evidence.files_searched} file(s) and {evidence.versions_searched} "
            f"version(s) and not found; {key or 'no id column'} keeps their id ({len(accepted)} place(s), accepted); "
            f"{others.opened} other people's ciphertext value(s) of {others.with_keys} subject(s) still open with this "
            "vault"), shred=evidence)


def held_key(subject_columns: list[str], key_column: str | None) -> str | None:
    """The column named as the one keeping the subjects' ids (the plan's key column when it is one of them)."""
    if key_column in subject_columns:
        return key_column
    return subject_columns[0] if subject_columns else None


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
    """Decode every file of the vault and of each catalogued copy of it for the subjects' lookups
    and the destroyed wrapped keys, and ask each for the subjects' keys.

    Args:
        setting: the vault, the master key, the destroy steps' journaled facts.
        subjects: the typed key values whose keys were destroyed.
        store: the storage of the vault's location.

    Returns:
        The files decoded, what was found there, how many subjects still have a key, or the
            problem; the vault and its copies left open.
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
    proof = VaultProof()
    for number, where in enumerate(place.every_place()):
        try:
            opened = open_existing(where, setting.master, store)
        except (VaultRefusedError, VaultKeyError) as error:
            proof.problem = str(error)
            return proof
        if number == 0:
            proof.vault = opened
        else:
            proof.copies.append(opened)
        try:
            lookups = sorted({opened.lookup.of(value) for value in subjects})
            proof.held = max(proof.held, len(opened.fetch(subjects)))
        except ShredInputError as error:
            proof.problem = str(error)
            return proof
        root, files = _vault_files(where, store)
        scan = scan_location(root, ValueIndex.build({LOOKUPS: lookups}), store, files)
        label = "key vault" if number == 0 else f"copy {where.dataset} of the key vault"
        proof.findings += [Finding(file=hit.file, where=f"{label}: {hit.where}", value_set=hit.value_set, kind="vault")
                           for hit in scan.hits]
        digests = _digests(setting)
        for relative in files:
            for found in _wrapped_places(store.read_bytes(root.child(relative)), relative, digests):
                proof.findings.append(Finding(file=relative, where=f"{label}: {found}", value_set=WRAPPED, kind="vault"))
        proof.files += len(files)
    return proof


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
class OtherRows:
    """Other people's ciphertext of a dataset opened with the vault now (``problem``: not shown)."""

    subjects: int = 0
    with_keys: int = 0
    opened: int = 0
    problem: str | None = None


def other_rows(vault: Any, held: CiphertextHeld, subjects: list[Any], entry: CatalogDataset | None,
               location: Location | None, store: Store,
               places: Mapping[str, tuple[CatalogDataset, Location]] | None = None) -> OtherRows:
    """Open a sample of other people's ciphertext in the dataset with the vault: it is the vault
    the dataset was encrypted with only if their ciphertext opens under their keys there (module
    docstring, 5). Rows are read from the stored files; a column without a subject id column is
    matched to the declaring dataset's rows by its ciphertext.

    Args:
        vault: the open key vault.
        held: the dataset's ciphertext columns.
        subjects: the typed key values whose keys were destroyed (their rows are not sampled).
        entry: the dataset's catalog entry.
        location: its location.
        store: the file access.
        places: dataset -> (catalog entry, location), for the declaring dataset of a copy's ciphertext.

    Returns:
        How many other people were sampled, how many still have a key, how many of their values
            opened, or why the vault cannot be shown to be this dataset's.
    """
    import pyarrow as pa

    from piitracer.formats import FormatError
    from piitracer.formats.stored_files import StoredRows
    from piitracer.shred.cipher import decrypt_array
    from piitracer.shred.keys import CiphertextError, ShredInputError

    found = OtherRows()
    if entry is None or location is None or not store.exists(location):
        found.problem = "its files are not there: other people's ciphertext cannot show that the vault is its vault"
        return found
    mine = {repr(s) for s in subjects}
    pairs: list[tuple[Any, bytes, str]] = []  # (subject, ciphertext, context) of other people
    try:
        pairs = _sampled(StoredRows(entry.format, location, store), held, mine, store, places or {})
    except FormatError as error:
        found.problem = f"its stored files cannot be read for other people's ciphertext: {error}"
        return found
    if not pairs:
        found.problem = ("no other person's ciphertext was found in it to open with the vault (it holds only the "
                         "erased subjects', or its copy's ciphertext matches no row of the declaring dataset): "
                         "nothing shows the vault is the one it was encrypted with")
        return found
    people = {repr(s): s for s, _, _ in pairs}
    found.subjects = len(people)
    try:
        keys = vault.fetch(list(people.values()))
    except ShredInputError as error:
        found.problem = f"other people's ids cannot be looked up in the vault: {error}"
        return found
    found.with_keys = len(keys)
    usable = [(s, b, c) for s, b, c in pairs if keys.get(s) is not None]
    for context in sorted({c for _, _, c in usable}):
        batch = [(s, b) for s, b, c in usable if c == context]
        try:
            decrypt_array(pa.array([b for _, b in batch], pa.binary()), pa.array([s for s, _ in batch]), keys,
                          context=context)
        except CiphertextError:
            found.problem = ("other people's ciphertext in it does not open under their keys in the vault: it was not "
                             "encrypted with this vault, so a missing key of the subjects proves nothing (check shred.vault)")
            return found
        found.opened += len(batch)
    if not found.opened:
        found.problem = (f"the vault holds no key for any of the {found.subjects} other subject(s) sampled from it: it is not "
                         "the vault its pipeline encrypts with, so a missing key proves nothing (check shred.vault)")
    return found


def _sampled(rows: Any, held: CiphertextHeld, mine: set[str], store: Store,
             places: Mapping[str, tuple[CatalogDataset, Location]], limit: int = OTHERS_SAMPLED) -> list[tuple[Any, bytes, str]]:
    """Up to ``limit`` (subject, ciphertext, context) of people other than ``mine`` from the stored
    files; a column without a subject id column through the declaring dataset's rows."""
    found: list[tuple[Any, bytes, str]] = []
    bare: dict[str, list[bytes]] = {}
    for relative in rows:
        stored = rows.columns(relative)
        for column in held.columns:
            name = stored.name(column.column)
            if name is None:
                continue
            if column.subject_column is None:
                values = rows.read(relative, [name]).column(name).to_pylist()
                bare.setdefault(column.origin, []).extend(bytes(v) for v in values[:limit] if v is not None)
                continue
            subject = stored.name(column.subject_column)
            if subject is None:
                continue
            table = rows.read(relative, [subject, name])
            for who, blob in zip(table.column(subject).to_pylist(), table.column(name).to_pylist()):
                if who is not None and blob is not None and repr(who) not in mine:
                    found.append((who, bytes(blob), column.context))
        if len(found) >= limit:
            break
    if bare and len(found) < limit:
        found += _through_origin(bare, held, mine, store, places, limit - len(found))
    return found[:limit]


def _through_origin(bare: Mapping[str, list[bytes]], held: CiphertextHeld, mine: set[str], store: Store,
                    places: Mapping[str, tuple[CatalogDataset, Location]], limit: int) -> list[tuple[Any, bytes, str]]:
    """Other people's (subject, ciphertext) for a copy's ciphertext that carries no subject id:
    the declaring dataset's rows holding the same ciphertext say whose it is."""
    import pyarrow as pa

    from piitracer.formats.stored_files import StoredRows

    found: list[tuple[Any, bytes, str]] = []
    contexts = {c.origin: c.context for c in held.columns}
    for origin, blobs in sorted(bare.items()):
        place = places.get(origin.rsplit(".", 1)[0])
        if place is None:
            continue
        entry, location = place
        if entry.shredded is None:
            continue
        column = origin.rsplit(".", 1)[1]
        rows = StoredRows(entry.format, location, store)
        wanted = pa.array(sorted(set(blobs))[:limit], pa.binary())
        for relative in rows:
            stored = rows.columns(relative)
            name, key = stored.name(column), stored.name(entry.shredded.key)
            if name is None or key is None:
                continue
            table = rows.read(relative, [key, name], (name, wanted.cast(stored.type(column))))
            for who, blob in zip(table.column(key).to_pylist(), table.column(name).to_pylist()):
                if who is not None and blob is not None and repr(who) not in mine:
                    found.append((who, bytes(blob), contexts.get(origin, "")))
            if len(found) >= limit:
                return found[:limit]
    return found

