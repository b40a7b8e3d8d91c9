"""Where a key vault is, as a value a Spark task can receive: the kind, the location and the master
key file's path (never the key: each process reads it where it runs)."""

from __future__ import annotations

from dataclasses import dataclass

from piitracer.shred.delta_vault import delta_vault
from piitracer.shred.keys import VaultRefusedError
from piitracer.shred.vault import KeyVault, sqlite_vault


@dataclass(frozen=True)
class VaultSpec:
    """Where a vault is and how to get its master key, picklable for a Spark task: the key file's
    path travels, never the key (each task reads it where it runs)."""

    kind: str  # "sqlite" or "delta"
    location: str
    master_key_file: str | None = None  # None: $PIITRACER_MASTER_KEY_FILE / $PIITRACER_MASTER_KEY where it runs

    def open(self) -> KeyVault:
        """Open the vault this spec names, reading the master key where the code runs.

        Returns:
            The open vault.

        Raises:
            MasterKeyError: no master key is given where this runs.
            VaultRefusedError, VaultKeyError: as :func:`sqlite_vault` and ``delta_vault``.
        """
        from piitracer.crypto.envelope import load_master_key

        master = load_master_key(self.master_key_file)
        if self.kind == "sqlite":
            return sqlite_vault(self.location, master)
        if self.kind == "delta":
            return delta_vault(self.location, master)
        raise VaultRefusedError(f"unknown key vault kind {self.kind!r} (expected 'sqlite' or 'delta')")
