"""Where a workspace's key vault is (``shred.vault`` in piitracer.yaml), and opening it for an
erasure or a proof: only a vault that is there, never a new one.

A pipeline opens its vault with :func:`~piitracer.shred.vault.sqlite_vault` or
:func:`~piitracer.shred.delta_vault.delta_vault`, which create the vault when it is absent. An
erasure must not: a mistyped vault location would be created empty, "destroy" nothing there,
and a proof reading it would find no key for anyone, while the keys the pipelines use live on
elsewhere. So :func:`vault_problem` (read without the master key, for the preflight) and
:func:`open_existing` refuse a location that holds no vault, or holds something else.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from piitracer.storage.locations import Location

if TYPE_CHECKING:  # the readers (pyarrow, delta-rs) load only when a vault is read: planning imports this module
    from piitracer.shred.vault import KeyVault
    from piitracer.storage.store import Store

DELTA, SQLITE = "delta", "sqlite"


@dataclass(frozen=True)
class VaultCopy:
    """A catalogued copy of the vault (a replica, a clone, an archive of its dataset): it holds the
    same keys, so it is the vault too — destroyed and searched with it."""

    dataset: str
    format: str  # the catalog's format of the copy
    location: Location | None  # None: the catalog gives it none (the preflight refuses the key destruction)
    how: str  # "replica", "clone" or "archive"

    def place(self) -> "VaultPlace":
        """The copy as a vault of its own (a Delta vault table), to open and destroy keys in."""
        assert self.location is not None, "a copy of the vault without a location is refused by the preflight"
        return VaultPlace(DELTA, self.location, self.dataset)

    def __str__(self) -> str:
        return f"{self.how} {self.dataset} ({self.location})"


@dataclass(frozen=True)
class VaultPlace:
    """The workspace's vault: a Delta table catalogued as ``dataset``, or a SQLite file, and the
    catalogued copies of it."""

    kind: str  # DELTA or SQLITE
    location: Location
    dataset: str | None = None  # the catalog dataset of a Delta vault
    copies: tuple[VaultCopy, ...] = ()

    def __str__(self) -> str:
        return f"key vault {self.dataset} ({self.location})" if self.dataset else f"key vault {self.location} (SQLite)"

    def every_place(self) -> tuple["VaultPlace", ...]:
        """The vault, then each copy of it as a vault of its own."""
        return (VaultPlace(self.kind, self.location, self.dataset), *(copy.place() for copy in self.copies))


def vault_problem(place: VaultPlace, store: "Store") -> tuple[str | None, str | None]:
    """Whether a piitracer key vault is at ``place``, read without the master key.

    Args:
        place: the vault's place.
        store: the storage of its location.

    Returns:
        (problem, fingerprint): what is wrong in one line, or None; and the fingerprint of the
            master key the vault's keys are wrapped under (None when there is a problem).
    """
    from piitracer.formats import delta
    from piitracer.shred.delta_vault import NAME
    from piitracer.shred.vault import FORMAT

    if place.kind == SQLITE:
        if not place.location.is_local:
            return f"{place}: a SQLite vault is a local file", None
        if not place.location.path.is_file():
            return f"{place}: no such file (piitracer never creates a vault to erase from)", None
        try:
            db = sqlite3.connect(f"file:{place.location.path}?mode=ro", uri=True)
            try:
                meta = dict(db.execute("SELECT name, value FROM vault"))
            finally:
                db.close()
        except sqlite3.DatabaseError:
            meta = {}
        if meta.get("format") != FORMAT or "master" not in meta:
            return f"{place}: not a piitracer key vault", None
        return None, meta["master"]
    if not store.exists(place.location) or not delta.is_table(place.location, store):
        return f"{place}: no Delta table there (piitracer never creates a vault to erase from)", None
    metadata = delta.open_table(place.location, store).metadata()
    try:
        marker = json.loads(metadata.description or "")
    except ValueError:
        marker = None
    if metadata.name != NAME or not isinstance(marker, dict) or marker.get("format") != FORMAT or "master" not in marker:
        return f"{place}: a Delta table that is not a piitracer key vault", None
    return None, str(marker["master"])


def open_existing(place: VaultPlace, master: Any, store: "Store") -> "KeyVault":
    """Open the vault at ``place`` for an erasure or a proof; never create one.

    Args:
        place: the vault's place.
        master: the master key (a KMS wrapper cannot serve: the lookups derive from the key itself).
        store: the storage of its location.

    Returns:
        The open vault.

    Raises:
        VaultRefusedError: no vault there, something else there, or a master key that is a KMS wrapper.
        VaultKeyError: the vault's keys are wrapped under another master key.
    """
    from piitracer.crypto.envelope import MasterKey
    from piitracer.shred.delta_vault import DeltaVault
    from piitracer.shred.keys import SubjectLookup, VaultKeyError, VaultRefusedError
    from piitracer.shred.vault import KeyVault, SqliteVault

    problem, fingerprint = vault_problem(place, store)
    if problem is not None:
        raise VaultRefusedError(f"{problem}; nothing was changed")
    if master is None:
        raise VaultRefusedError(f"{place}: no master key given (--master-key-file, PIITRACER_MASTER_KEY_FILE or "
                                "PIITRACER_MASTER_KEY): the vault's keys are wrapped under it; nothing was changed")
    if not isinstance(master, MasterKey):
        raise VaultRefusedError(f"{place}: crypto-shredding needs the master key itself (a subject's vault entry is "
                                "found by a hash keyed from it), not a KMS wrapper")
    if fingerprint != master.fingerprint:
        raise VaultKeyError(f"{place} holds keys wrapped under another master key (fingerprint {fingerprint}, given "
                            f"{master.fingerprint}): give the master key the pipelines use; nothing was changed")
    backend = SqliteVault(place.location.path, master.fingerprint) if place.kind == SQLITE \
        else DeltaVault(place.location, store, master.fingerprint)
    return KeyVault(backend, master, SubjectLookup.from_master(master))


__all__ = ["DELTA", "SQLITE", "VaultCopy", "VaultPlace", "open_existing", "vault_problem"]
