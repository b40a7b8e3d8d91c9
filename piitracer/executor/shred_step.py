"""Crypto-shredding's one step (issue 42): ``destroy_subject_key`` deletes the subjects' keys from
the workspace's key vault (``shred.vault``), rewriting the vault's files and removing its old
versions, only under the vault's location. No file of a dataset planned ``shred`` is touched:
the ciphertext there stays, unreadable once the key is gone.

Before the preflight lets a plan run, :func:`check_destroy_step` refuses, in one line, a step the
workspace cannot run: no vault configured, a vault outside the warehouse roots or not there, a
vault of another master key, a step that names datasets the plan does not shred.

The step journals its starting facts before it destroys anything (``outcome.Attempt``): how many
of the subjects had a key, and the SHA-256 of each wrapped key it is about to delete. A run killed
after the vault's commit resumes with those facts (the destroy itself is idempotent), and the
verifier searches every file of the vault for those wrapped keys, which it cannot read from the
vault any more. A digest of a wrapped key says nothing of the key or the subject; the lookups
(keyed hashes of the subjects) are never journaled.
"""

from __future__ import annotations

import hashlib
from typing import Any, Mapping

from piitracer.model.outcome import Attempt, SafetyError, StepOutcome
from piitracer.model.plan import DatasetDecision, DatasetStatus, Step, plaintext_set
from piitracer.shred.place import DELTA, VaultCopy, VaultPlace, open_existing, vault_problem
from piitracer.storage.guard import canonical, is_under
from piitracer.storage.locations import Location
from piitracer.storage.store import Store


def check_destroy_step(step: Step, decisions: Mapping[str, DatasetDecision], vault: VaultPlace | None,
                       locations: Mapping[str, Location], roots: tuple[Location, ...],
                       protected: tuple[Location, ...], store: Store, master: Any = None) -> str | None:
    """Why the preflight must refuse a ``destroy_subject_key`` step (one line), or None.

    Args:
        step: the step.
        decisions: the plan's decisions by dataset.
        vault: the workspace's vault (None: no ``shred.vault``).
        locations: every catalogued dataset's location (none may overlap the vault's).
        roots: the warehouse roots.
        protected: piitracer's own files.
        store: the storage of the vault's location.
        master: the master key, when the caller has it (its fingerprint must be the vault's).

    Returns:
        The refusal, or None.
    """
    named = ", ".join(step.params.datasets)
    not_shred = [d for d in step.params.datasets if d not in decisions or decisions[d].status is not DatasetStatus.SHRED]
    if not_shred or not step.params.datasets:
        return (f"step {step.id}: destroy_subject_key names {', '.join(not_shred) or 'no dataset'}, which the plan does "
                "not shred: the plan was altered: re-plan")
    if not step.key_column or not step.values_from:
        return f"step {step.id}: destroy_subject_key names no key column or value set to find the subjects' keys by"
    held = {h.dataset for h in step.params.ciphertext}
    if held != set(step.params.datasets) or any(c.plaintext != plaintext_set(c.origin)
                                                for h in step.params.ciphertext for c in h.columns):
        return (f"step {step.id}: destroy_subject_key does not say, for exactly the datasets it shreds ({named}), which "
                "columns hold their ciphertext: it cannot be checked before the keys go (a plan made before piitracer "
                "proved shreds from the bytes, or an altered one): re-plan")
    if vault is None:
        return (f"step {step.id}: destroy_subject_key (crypto-shredding {named}) needs the key vault the pipelines "
                "encrypt with: set shred.vault in piitracer.yaml (a Delta dataset of the catalog, or a SQLite file); "
                "nothing ran")
    if vault.dataset is not None and vault.dataset in {d for d in step.params.datasets}:
        return f"step {step.id}: the key vault {vault.dataset} is itself planned shred: fix the catalog"
    place = canonical(vault.location)
    if not any(is_under(place, root) for root in roots):
        return (f"step {step.id}: {vault} is outside the warehouse roots ({', '.join(map(str, roots))}): refusing to "
                "destroy keys there; add its root to warehouse_roots in piitracer.yaml if it belongs to this lakehouse")
    for own in protected:
        own = canonical(own)
        if own.contains(place) or place.contains(own):
            return f"step {step.id}: {vault} holds or lies in piitracer's own {own}: fix shred.vault"
    for dataset, location in sorted(locations.items()):
        other = canonical(location)
        if dataset != vault.dataset and (other.contains(place) or place.contains(other)):
            return (f"step {step.id}: {vault} overlaps the location of dataset {dataset} ({location}): the vault's "
                    "rewrite and vacuum must act on the vault's files only: give the vault its own folder")
    problem, fingerprint = vault_problem(vault, store)
    if problem is not None:
        return f"step {step.id}: {problem}: fix shred.vault; nothing ran"
    if master is not None and getattr(master, "fingerprint", fingerprint) != fingerprint:
        return (f"step {step.id}: {vault} holds keys wrapped under another master key (fingerprint {fingerprint}, given "
                f"{master.fingerprint}): give the master key the pipelines use; nothing ran")
    for copy in vault.copies:
        refusal = _copy_refusal(step, vault, copy, locations, roots, store, fingerprint)
        if refusal is not None:
            return refusal
    return None


def _copy_refusal(step: Step, vault: VaultPlace, copy: VaultCopy, locations: Mapping[str, Location],
                  roots: tuple[Location, ...], store: Store, fingerprint: str | None) -> str | None:
    """Why a catalogued copy of the vault cannot be destroyed with it (one line), or None: the
    copy holds the same keys, so a key destruction that leaves it is no destruction."""
    what = f"step {step.id}: catalog.{copy.dataset} is a {copy.how} of the {vault}"
    if copy.format != DELTA or copy.location is None:
        where = "has no location" if copy.location is None else f"is a {copy.format} dataset"
        return (f"{what} and {where}: piitracer destroys keys only in a Delta vault table, so the subjects' keys would "
                "outlive the shred there: remove the copy (and its catalog entry) or keep it as a Delta replica of the "
                "vault; nothing ran")
    place = canonical(copy.location)
    if not any(is_under(place, root) for root in roots):
        return f"{what}, outside the warehouse roots: refusing to destroy keys there; nothing ran"
    for dataset, location in sorted(locations.items()):
        other = canonical(location)
        if dataset not in (copy.dataset, vault.dataset) and (other.contains(place) or place.contains(other)):
            return f"{what} and overlaps the location of dataset {dataset}: give the copy its own folder; nothing ran"
    problem, copied = vault_problem(copy.place(), store)
    if problem is not None:
        return f"{what}: {problem}: the keys in it cannot be destroyed; nothing ran"
    if copied != fingerprint:
        return f"{what}, but its keys are wrapped under another master key: it is not a copy of this vault; nothing ran"
    return None


def destroy_subject_keys(step: Step, values: list[Any], vault: VaultPlace | None, master: Any, store: Store,
                         roots: tuple[Location, ...], attempt: Attempt) -> StepOutcome:
    """Destroy the keys of the subjects ``values`` name in the vault, to the bytes.

    Args:
        step: the ``destroy_subject_key`` step.
        values: the subjects' typed key values (the step's value sets, resolved).
        vault: the workspace's vault.
        master: the master key.
        store: the storage of the vault's location.
        roots: the warehouse roots (checked again: the vault's files are rewritten and removed).
        attempt: the step's attempt record (starting facts kept across a kill).

    Returns:
        The outcome: keys destroyed, the vault's files removed, its version after, the digests of
            the wrapped keys destroyed (for the proof).

    Raises:
        SafetyError: no vault, or a vault outside the roots.
        VaultRefusedError, VaultKeyError: not a vault, or another master key's.
    """
    if vault is None:
        raise SafetyError("no key vault: set shred.vault in piitracer.yaml")
    if not any(is_under(vault.location, root) for root in roots):
        raise SafetyError(f"{vault} is outside the warehouse roots: refusing to destroy keys there")
    subjects = sorted(set(values), key=repr)
    places = vault.every_place()  # the vault, then each catalogued copy of it: each holds the same keys
    for place in places[1:]:
        if not any(is_under(place.location, root) for root in roots):
            raise SafetyError(f"{place} (a copy of the {vault}) is outside the warehouse roots: refusing to destroy keys there")
    held_by: list[int] = []
    digests: set[str] = set()
    opened_places = [open_existing(place, master, store) for place in places]
    try:
        lookups = sorted({opened_places[0].lookup.of(value) for value in subjects})
        for opened in opened_places:
            held = opened.backend.find(lookups) if lookups else {}
            held_by.append(len(held))
            digests.update(_digest(w) for w in held.values())
        starting = {"keys_held": held_by[0], "wrapped_sha256": sorted(digests)}
        facts = attempt.start({**starting, "copies_keys_held": held_by[1:]} if vault.copies else starting)
        destroyed = [opened.destroy(subjects) for opened in opened_places]
    finally:
        for opened in opened_places:
            opened.close()
    main = destroyed[0]
    details = {"vault": str(vault.location), "vault_dataset": vault.dataset, "vault_kind": vault.kind,
               "subjects": len(subjects), "keys_destroyed": int(facts["keys_held"]),
               "wrapped_sha256": list(facts["wrapped_sha256"]), "datasets": list(step.params.datasets),
               "vault_files_rewritten": int(main.details.get("files_rewritten", 0)),
               "vault_files_removed": main.files_removed}
    if vault.copies:
        details["vault_copies"] = [{"dataset": copy.dataset, "how": copy.how, "keys_destroyed": int(held),
                                    "files_removed": done.files_removed}
                                   for copy, held, done in zip(vault.copies, facts.get("copies_keys_held", []), destroyed[1:])]
    return StepOutcome(files_rewritten=0, files_removed=0, version_after=main.version_after or None, details=details)


def _digest(wrapped: str) -> str:
    return hashlib.sha256(wrapped.encode("ascii")).hexdigest()
