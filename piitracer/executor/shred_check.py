"""Before any key is destroyed (issue 49): what a dataset planned ``shred`` stores is read, not
believed. The lineage and the catalog say where ciphertext should be; only the bytes say it is
there. So the resolve step, before the first change, reads every row of the subjects in every
stored file of every such dataset (the source and each copy, every version a reader can still
reach), and for each column that should hold ciphertext:

- each value of a subject's row must be the shred library's ciphertext and open under that row's
  subject key in the workspace's vault; a plaintext, a ciphertext of another vault, a key the vault
  does not hold (another vault, a mistyped one, an id the pipeline typed differently) stops the run
  with nothing changed, naming the dataset, the file, the column and what was found (never a value);
- a file that stores that column as another type than binary, or stores it without the subject's
  id column, stops the run the same way;
- where a copy keeps no subject id column, its subjects' rows are those holding the very ciphertext
  the subjects' rows of the declaring dataset hold (copied bytes are equal bytes), and every value
  of the column must have the ciphertext's form.

The plaintext the subjects' ciphertext opens to is kept with the request's other values (the
journal seals them under each request's data key, and closing the request shreds them): the
verifier then searches every dataset, every version and the sweep for it, as it searches any
subject value. What was checked is journaled per dataset (files, rows, values, subjects), for the
proof: a dataset whose ciphertext was not checked is never certified ``crypto_shredded``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Mapping

from piitracer.formats import FormatError
from piitracer.formats.stored_files import FileColumns, StoredRows
from piitracer.formats.values import key_type_name
from piitracer.model.key_values import exact_values, parse_key_type
from piitracer.model.outcome import SafetyError
from piitracer.model.plan import Action, CiphertextColumn, CiphertextHeld, DeletionPlan, Step
from piitracer.model.workspace import CatalogDataset
from piitracer.shred.place import VaultPlace, open_existing
from piitracer.storage.locations import Location
from piitracer.storage.store import Store

log = logging.getLogger(__name__)  # datasets and counts only, never a value


class CiphertextRefused(SafetyError):
    """A dataset planned ``shred`` stores something that is not the subjects' ciphertext under this
    vault's keys: the run stops before any key is destroyed (the message names the dataset, the
    file and the column, never a value)."""


@dataclass
class CiphertextFacts:
    """What the check read of one dataset (journaled; counts only)."""

    files: int = 0  # stored files read
    rows: int = 0  # rows of the subjects found
    values: int = 0  # ciphertext values of theirs opened
    closed: int = 0  # on a rerun after the keys were destroyed: values whose key is gone
    subjects: set[Any] = field(default_factory=set)  # subjects with rows there (typed; never journaled)
    columns: set[str] = field(default_factory=set)

    def as_dict(self) -> dict[str, Any]:
        """The journaled facts: counts and column names only."""
        facts = {"files": self.files, "rows": self.rows, "values": self.values, "subjects": len(self.subjects),
                 "columns": sorted(self.columns)}
        return {**facts, "closed": self.closed} if self.closed else facts


def check_ciphertext(plan: DeletionPlan, per_request: dict[str, dict[str, list[Any]]], vault: VaultPlace | None,
                     master: Any, store: Store, catalog: Mapping[str, CatalogDataset],
                     locations: Mapping[str, Location], destroyed_before: bool = False) -> dict[str, dict[str, Any]]:
    """Check the ciphertext of every dataset the plan shreds and add the plaintext it opens to the
    requests' value sets (``per_request``, changed in place), before any key is destroyed.

    Args:
        plan: the plan (its ``destroy_subject_key`` steps say what to check).
        per_request: request id -> value set -> values, as resolved (the subjects' key values).
        vault: the workspace's key vault.
        master: the master key.
        store: the file access.
        catalog: the workspace's catalog.
        locations: every catalogued dataset's location.
        destroyed_before: a rerun after this plan's keys were destroyed: a subject's value whose
            key is gone (the first run opened it before destroying the key) is counted as closed,
            not refused; a value whose key is there must still open.

    Returns:
        dataset -> the facts checked (journaled with the resolve step); empty when nothing is shredded.

    Raises:
        CiphertextRefused: a value, a file or a key that is not what the plan shreds by.
    """
    steps = [s for s in plan.steps if s.action is Action.DESTROY_SUBJECT_KEY]
    if not steps:
        return {}
    if vault is None:
        raise CiphertextRefused("no key vault (shred.vault) to check the shredded datasets' ciphertext against; "
                                "nothing was changed")
    from piitracer.shred.keys import ShredInputError, VaultKeyError, VaultRefusedError

    try:
        opened = open_existing(vault, master, store)
    except (VaultRefusedError, VaultKeyError) as error:
        raise CiphertextRefused(str(error)) from None
    facts: dict[str, dict[str, Any]] = {}
    with opened:
        for step in steps:
            owners = _owners(step, per_request)
            try:
                keys = opened.fetch(list(owners))
            except ShredInputError as error:
                raise CiphertextRefused(f"step {step.id}: {error}; nothing was changed") from None
            check = _StepCheck(step, owners, keys, per_request, store, catalog, locations, str(vault), destroyed_before)
            for held in sorted(step.params.ciphertext, key=lambda h: (not _declares(h), h.dataset)):
                found = check.dataset(held)
                facts[held.dataset] = found.as_dict()
                log.info("ciphertext of %s checked: %d file(s), %d row(s), %d value(s) opened", held.dataset,
                         found.files, found.rows, found.values)
            missing = [d for d in step.params.datasets if d not in facts]
            if missing:
                raise CiphertextRefused(f"step {step.id}: the plan does not say which columns of {', '.join(missing)} "
                                        "hold ciphertext, so it cannot be checked before the keys go: re-plan")
    return facts


def _declares(held: CiphertextHeld) -> bool:
    """Whether ``held`` is the dataset that declares its ciphertext (checked first: a copy without a
    subject id column finds the subjects' rows by that dataset's ciphertext)."""
    return all(column.origin.rsplit(".", 1)[0] == held.dataset for column in held.columns)


def _owners(step: Step, per_request: Mapping[str, Mapping[str, list[Any]]]) -> dict[Any, set[str]]:
    """The subjects' key values the step's keys are found by, each with the requests naming it."""
    owners: dict[Any, set[str]] = {}
    for request_id, sets in per_request.items():
        for source in step.values_from:
            for value in sets.get(source.name, ()):
                owners.setdefault(value, set()).add(request_id)
    return owners


class _StepCheck:
    """The check of the datasets one key destruction erases."""

    def __init__(self, step: Step, owners: dict[Any, set[str]], keys: Any, per_request: dict[str, dict[str, list[Any]]],
                 store: Store, catalog: Mapping[str, CatalogDataset], locations: Mapping[str, Location], vault: str,
                 destroyed_before: bool = False) -> None:
        self.step, self.owners, self.keys, self.per_request = step, owners, keys, per_request
        self.destroyed_before = destroyed_before
        self.store, self.catalog, self.locations, self.vault = store, catalog, locations, vault
        # origin column ('dataset.column') -> the subjects' ciphertext found there -> its subject
        self.ciphertext_of: dict[str, dict[bytes, Any]] = {}

    def dataset(self, held: CiphertextHeld) -> CiphertextFacts:
        entry, location = self.catalog.get(held.dataset), self.locations.get(held.dataset)
        if entry is None or location is None:
            raise CiphertextRefused(f"{held.dataset}: not catalogued with a location: its ciphertext cannot be checked; "
                                    "nothing was changed")
        facts = CiphertextFacts(columns={c.column for c in held.columns})
        rows = StoredRows(entry.format, location, self.store)
        for column in held.columns:
            if column.subject_column is None and column.origin not in self.ciphertext_of:
                self.ciphertext_of[column.origin] = self._origin_ciphertext(column.origin)
        for relative in rows:
            try:
                stored = rows.columns(relative)
                read = self._file(held, rows, stored, facts)
            except FormatError as error:
                raise CiphertextRefused(f"{held.dataset}: {error}: its ciphertext cannot be checked; nothing was "
                                        "changed") from None
            facts.files += read
        return facts

    def _origin_ciphertext(self, origin: str) -> dict[bytes, Any]:
        """The subjects' ciphertext in a declaring dataset that is not itself planned ``shred``
        (read for a copy without a subject id column): its declared key finds their rows."""
        dataset, column = origin.rsplit(".", 1)
        entry = self.catalog.get(dataset)
        if entry is None or entry.shredded is None or dataset not in self.locations:
            return {}
        found: dict[bytes, Any] = {}
        rows = StoredRows(entry.format, self.locations[dataset], self.store)
        for relative in rows:
            stored = rows.columns(relative)
            if stored.name(column) is None or stored.name(entry.shredded.key) is None:
                continue
            table = self._subject_rows(rows, stored, entry.shredded.key, [column], dataset)
            if table is None:
                continue
            subjects, values = table
            for subject, blob in zip(subjects, values[column]):
                if blob is not None:
                    found[bytes(blob)] = subject
        return found

    def _file(self, held: CiphertextHeld, rows: StoredRows, stored: FileColumns, facts: CiphertextFacts) -> int:
        """Check one stored file; returns 1 when it holds a column to check, else 0."""
        from piitracer.shred.cipher import holds_ciphertext

        present = [c for c in held.columns if stored.name(c.column) is not None]
        if not present:
            return 0  # no ciphertext column here (a delete file, an older schema)
        where = f"{held.dataset}, file {stored.relative}"
        if stored.ambiguous:
            raise CiphertextRefused(f"{where}: stores {', '.join(stored.ambiguous)}, which differ only in case: which one "
                                    "holds the ciphertext is ambiguous; nothing was changed")
        for column in present:
            kind = stored.type(column.column)
            if not holds_ciphertext(kind):
                raise CiphertextRefused(f"{where}: column {stored.name(column.column)} is stored as {kind}, which cannot "
                                        "hold piitracer's ciphertext (binary): it is not ciphertext; nothing was changed")
        by_subject: dict[str | None, list[CiphertextColumn]] = {}
        for column in present:
            by_subject.setdefault(column.subject_column, []).append(column)
        for subject_column, columns in sorted(by_subject.items(), key=lambda item: item[0] or ""):
            if subject_column is None:
                self._bare(held.dataset, rows, stored, columns, facts)
            else:
                self._keyed(held.dataset, rows, stored, subject_column, columns, facts)
        return 1

    def _subject_rows(self, rows: StoredRows, stored: FileColumns, subject_column: str, columns: list[str],
                      dataset: str) -> tuple[list[Any], dict[str, list[Any]]] | None:
        """The subjects' rows of one file: each row's subject (the typed value its key is found
        by) and the columns' values; None when none of the subjects has a row there."""
        import pyarrow as pa

        where = f"{dataset}, file {stored.relative}"
        name = stored.name(subject_column)
        names = [stored.name(c) for c in columns]
        if name is None:
            if subject_column.lower() not in stored.partition:
                raise CiphertextRefused(f"{where}: holds ciphertext column(s) {', '.join(names)} but not their subject id "
                                        f"column {subject_column}: whose key opens them is unknown; nothing was changed")
            text = stored.partition[subject_column.lower()]  # one subject for the whole file
            subject = next((v for v in self.owners if str(v) == text), None)
            if subject is None:
                return None
            table = rows.read(stored.relative, names)
            return [subject] * table.num_rows, {c: table.column(n).to_pylist() for c, n in zip(columns, names)}
        key_type = key_type_name(stored.type(subject_column))
        if key_type is None:
            raise CiphertextRefused(f"{where}: its subject id column {name} is stored as {stored.type(subject_column)}, "
                                    "which piitracer does not compare as a subject key; nothing was changed")
        back: dict[Any, Any] = {}
        for value in self.owners:
            for typed in exact_values([value], parse_key_type(key_type)):
                back.setdefault(typed, value)
        if not back:
            return None
        table = rows.read(stored.relative, [name, *names], (name, pa.array(sorted(back, key=repr), stored.type(subject_column))))
        if not table.num_rows:
            return None
        subjects = [back[v] for v in table.column(name).to_pylist()]
        return subjects, {c: table.column(n).to_pylist() for c, n in zip(columns, names)}

    def _keyed(self, dataset: str, rows: StoredRows, stored: FileColumns, subject_column: str,
               columns: list[CiphertextColumn], facts: CiphertextFacts) -> None:
        found = self._subject_rows(rows, stored, subject_column, [c.column for c in columns], dataset)
        if found is None:
            return
        subjects, values = found
        facts.rows += len(subjects)
        facts.subjects.update(subjects)
        for column in columns:
            self._open(dataset, stored, column, subjects, values[column.column], facts,
                       remember=column.origin == f"{dataset}.{column.column}")

    def _bare(self, dataset: str, rows: StoredRows, stored: FileColumns, columns: list[CiphertextColumn],
              facts: CiphertextFacts) -> None:
        """A copy without a subject id column: every value must have the ciphertext's form; the
        subjects' rows are those holding the subjects' ciphertext of the origin."""
        from piitracer.shred.cipher import ciphertext_problem

        table = rows.read(stored.relative, [stored.name(c.column) for c in columns])
        for column in columns:
            known = self.ciphertext_of.get(column.origin, {})
            mine_subjects, mine_values = [], []
            for blob in table.column(stored.name(column.column)).to_pylist():
                if blob is None:
                    continue
                problem = ciphertext_problem(bytes(blob))
                if problem is not None:
                    raise CiphertextRefused(f"{dataset}, file {stored.relative}, column {stored.name(column.column)}: a "
                                            f"stored value is {problem}; nothing was changed")
                subject = known.get(bytes(blob))
                if subject is not None:
                    mine_subjects.append(subject)
                    mine_values.append(blob)
            facts.rows += len(mine_subjects)
            facts.subjects.update(mine_subjects)
            self._open(dataset, stored, column, mine_subjects, mine_values, facts)

    def _open(self, dataset: str, stored: FileColumns, column: CiphertextColumn, subjects: list[Any], values: list[Any],
              facts: CiphertextFacts, remember: bool = False) -> None:
        """Open the subjects' ciphertext of one column under their keys; keep the plaintext per request."""
        import pyarrow as pa

        from piitracer.shred.cipher import ciphertext_problem, decrypt_array
        from piitracer.shred.keys import CiphertextError, SubjectShreddedError

        where = f"{dataset}, file {stored.relative}, column {stored.name(column.column)}"
        pairs = [(s, bytes(v)) for s, v in zip(subjects, values) if v is not None]
        if not pairs:
            return
        for _, blob in pairs:
            problem = ciphertext_problem(blob)
            if problem is not None:
                raise CiphertextRefused(f"{where}: a value of a subject's row is {problem}; nothing was changed")
        if self.destroyed_before:  # a rerun: the subjects whose keys the first run destroyed are closed
            closed = [(s, b) for s, b in pairs if self.keys.get(s) is None]
            facts.closed += len(closed)
            pairs = [(s, b) for s, b in pairs if self.keys.get(s) is not None]
            if not pairs:
                return
        try:
            opened = decrypt_array(pa.array([b for _, b in pairs], pa.binary()), _subject_array([s for s, _ in pairs]),
                                   self.keys, context=column.context, column=stored.name(column.column))
        except SubjectShreddedError:
            missing = len({repr(s) for s, _ in pairs if self.keys.get(s) is None})
            raise CiphertextRefused(f"{where}: the {self.vault} holds no key for {missing} subject(s) whose ciphertext is "
                                    "stored here: this data was not encrypted under this vault (another vault, a "
                                    "mistyped one, or an id typed differently by the pipeline), or the key was destroyed "
                                    "before; nothing was changed") from None
        except CiphertextError:
            raise CiphertextRefused(f"{where}: a value of a subject's row has the ciphertext's form but does not open under "
                                    f"the subject's key in the {self.vault} (another vault's key, another context, or "
                                    "altered); nothing was changed") from None
        facts.values += len(pairs)
        for (subject, blob), plain in zip(pairs, opened.to_pylist()):
            if remember:
                self.ciphertext_of.setdefault(column.origin, {})[blob] = subject
            if plain is None or isinstance(plain, bool):
                continue
            for request_id in self.owners.get(subject, ()):
                self.per_request.setdefault(request_id, {}).setdefault(column.plaintext, []).append(plain)


def _subject_array(subjects: list[Any]):
    """The rows' subjects as one Arrow array (typed as they are found by)."""
    import pyarrow as pa

    return pa.array(subjects)
