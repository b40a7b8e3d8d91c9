"""The key vault as a Delta table of the lakehouse (delta-rs), local or on an object store.

The table has two string columns, ``lookup`` (the subject's keyed hash) and ``wrapped`` (the
subject's key wrapped under the master key), no partitions, and is marked as a vault in its
metadata (name and description: the format and the master key's fingerprint), so piitracer never
writes, deletes or vacuums a table that is not one. Column statistics are off
(``delta.dataSkippingNumIndexedCols = 0``): the log's add actions would otherwise copy a lookup
or a wrapped key into their min/max, where a delete does not reach.

Writes are MERGEs: insert when absent (delta-rs refuses a MERGE whose read a concurrent commit
changed, and the loser reads the winner's key on retry), delete when matched (the lookups are
the MERGE's source data, never predicate text, which the commit would keep in its parameters).

Destroying a key, to the bytes (:meth:`DeltaVault.destroy`):

1. the rows are deleted by a MERGE (its file rewritten without them), with no checkpoint in that
   commit so the next step sees its removed files;
2. vacuum with zero retention through delta-rs (``formats.delta.vacuum``: files removed by the
   log's recent commits only, so a concurrent writer's uncommitted files are never touched);
3. any file under the vault that the current version does not reference and that still holds a
   destroyed lookup (removed before an older checkpoint, or left by a crash) is deleted;
4. the log's old versions are removed (``formats.delta.clean_delta_log``): no time travel to a
   version that held the key.

Every step is idempotent: a destroy run again after a crash finishes the removal.
"""

from __future__ import annotations

import json
import os
import random
import time
from typing import Mapping

import pyarrow as pa
import pyarrow.compute as pc

from piitracer.crypto.envelope import MasterKey
from piitracer.formats import FormatError, delta
from piitracer.shred.keys import SubjectLookup, VaultBusyError, VaultRefusedError
from piitracer.shred.vault import FORMAT, Destroyed, KeyVault
from piitracer.storage.disk import removed_between
from piitracer.storage.locations import Location
from piitracer.storage.store import Store

SCHEMA = pa.schema([pa.field("lookup", pa.string(), nullable=False), pa.field("wrapped", pa.string(), nullable=False)])
NAME = "piitracer key vault"
CONFIGURATION = {"delta.dataSkippingNumIndexedCols": "0"}
ATTEMPTS = 12


class DeltaVault:
    """The vault's rows in a Delta table at ``location`` (created when the location is empty)."""

    def __init__(self, location: Location, store: Store, fingerprint: str) -> None:
        self.where, self.store = location, store
        self.location = str(location)
        if not delta.is_table(location, store):
            if store.list_files(location):
                raise VaultRefusedError(f"{location}: holds files but no Delta table: not a piitracer key vault; "
                                        "piitracer will not write or delete there")
            self._create(fingerprint)
        self.fingerprint = self._checked()

    def _create(self, fingerprint: str) -> None:
        from deltalake import DeltaTable

        description = json.dumps({"format": FORMAT, "master": fingerprint}, sort_keys=True)
        try:
            DeltaTable.create(self.location, schema=SCHEMA, name=NAME, description=description,
                              configuration=CONFIGURATION, storage_options=self.store.delta_options(self.where) or None)
        except Exception:  # delta-rs's own error types: another process may have created it first
            if not delta.is_table(self.where, self.store):
                raise

    def _checked(self) -> str:
        table = self._table()
        metadata = table.metadata()
        try:
            marker = json.loads(metadata.description or "")
        except ValueError:
            marker = {}
        schema = pa.schema(table.schema().to_arrow())
        if (metadata.name != NAME or not isinstance(marker, dict) or marker.get("format") != FORMAT
                or "master" not in marker or schema.names != SCHEMA.names or metadata.partition_columns):
            raise VaultRefusedError(f"{self.location}: a Delta table that is not a piitracer key vault (columns: "
                                    f"{', '.join(schema.names)}); piitracer will not write, delete or vacuum there")
        return str(marker["master"])

    def _table(self):
        return delta.open_table(self.where, self.store)

    def find(self, lookups: list[str]) -> dict[str, str]:
        """The stored wrapped key of each of ``lookups``, from the newest version (read again when a
        concurrent destroy removed a file under the read).

        Args:
            lookups: hex lookups.

        Returns:
            lookup -> wrapped key, for those present.

        Raises:
            VaultRefusedError: two different keys are stored for one lookup.
            VaultBusyError: the vault could not be read in any attempt.
        """
        wanted = pa.array(lookups, pa.string())
        for attempt in range(ATTEMPTS):
            try:
                # A destroy may vacuum a file between the log's read and the file's: read again.
                rows = self._table().to_pyarrow_table(columns=["lookup", "wrapped"])
                break
            except (OSError, pa.ArrowException, FormatError, _delta_error()) as error:
                _backoff(attempt, error, self.location, "read")
        # In memory, not a dataset filter: the vault keeps no statistics to skip files by.
        rows = rows.filter(pc.is_in(rows.column("lookup"), value_set=wanted))
        found: dict[str, str] = {}
        for lookup, wrapped in zip(rows.column("lookup").to_pylist(), rows.column("wrapped").to_pylist()):
            if found.setdefault(lookup, wrapped) != wrapped:
                raise VaultRefusedError(f"{self.location}: the vault holds two keys for one subject (written without "
                                        "piitracer's MERGE?); refusing to choose one")
        return found

    def insert_missing(self, rows: Mapping[str, str]) -> dict[str, str]:
        """One MERGE inserting each (lookup, wrapped) whose lookup is absent, retried when a
        concurrent commit changed what it read.

        Args:
            rows: lookup -> wrapped key, for subjects the caller found absent.

        Returns:
            What is stored for every lookup of ``rows`` afterwards (the first writer's key).

        Raises:
            VaultBusyError: every attempt met a concurrent commit.
        """
        source = pa.table({"lookup": list(rows), "wrapped": list(rows.values())}, schema=SCHEMA)
        for attempt in range(ATTEMPTS):
            try:
                (self._table().merge(source, "t.lookup = s.lookup", source_alias="s", target_alias="t")
                 .when_not_matched_insert_all().execute())
                break
            except _delta_error() as error:  # a concurrent commit: read the vault again and retry
                _backoff(attempt, error, self.location, "write")
        return self.find(list(rows))

    def destroy(self, lookups: list[str]) -> Destroyed:
        """Delete the rows of ``lookups`` and every copy the vault's files kept (the module's four
        steps); idempotent.

        Args:
            lookups: hex lookups of the subjects whose keys go.

        Returns:
            Keys deleted, files rewritten, vacuumed, swept and removed, the version after.

        Raises:
            VaultRefusedError: a destroyed lookup is still in the current version afterwards.
            VaultBusyError: every attempt of the delete met a concurrent commit.
        """
        from deltalake import PostCommitHookProperties

        before = self.store.sizes(self.where)
        deleted, rewritten = 0, 0
        if lookups:
            source = pa.table({"lookup": pa.array(lookups, pa.string())})
            # No checkpoint in this commit: the vacuum below removes what the commits since the last
            # checkpoint removed, and this commit's removed files must be among them.
            hooks = PostCommitHookProperties(create_checkpoint=False, cleanup_expired_logs=False)
            for attempt in range(ATTEMPTS):
                try:
                    metrics = (self._table().merge(source, "t.lookup = s.lookup", source_alias="s", target_alias="t",
                                                   post_commithook_properties=hooks)
                               .when_matched_delete().execute())
                    deleted, rewritten = int(metrics["num_target_rows_deleted"]), int(metrics["num_target_files_removed"])
                    break
                except _delta_error() as error:
                    _backoff(attempt, error, self.location, "delete")
        vacuumed = delta.vacuum(self.where, self.store)
        swept = self._sweep(set(lookups))
        delta.clean_delta_log(self.where, self.store)
        if self.find(lookups):
            raise VaultRefusedError(f"{self.location}: the destroyed keys are still in the vault's current version "
                                    "after the delete; stopping (a concurrent writer re-created them?)")
        files, _ = removed_between(before, self.store.sizes(self.where))
        return Destroyed(self.location, deleted, files_removed=files, version_after=str(self._table().version()),
                         details={"files_rewritten": rewritten, "vacuumed": vacuumed.details.get("vacuumed", 0),
                                  "swept": swept})

    def _sweep(self, lookups: set[str]) -> int:
        """Delete every data file under the vault that the current version does not reference and
        that holds one of ``lookups``; a file holding none (a concurrent writer's, not yet
        committed) is left alone. Returns how many were deleted."""
        import pyarrow.parquet as pq

        table = self._table()
        referenced = {self.where.relative(Location.parse(uri)) for uri in table.file_uris()}
        swept = 0
        for entry in self.store.list_files(self.where):
            if entry.relative.startswith("_delta_log/") or not entry.relative.endswith(".parquet") \
                    or entry.relative in referenced:
                continue
            place = self.where.child(entry.relative)
            try:
                with self.store.open_input(place) as handle:
                    held = pq.read_table(handle, columns=["lookup"]).column("lookup").to_pylist()
            except (OSError, pa.ArrowException):
                continue  # not a finished Parquet file of ours: a writer's file in flight
            if lookups.intersection(held):
                self.store.delete(place)
                swept += 1
        return swept

    def count(self) -> int:
        """How many subject keys the vault holds."""
        return self._table().to_pyarrow_dataset().count_rows()

    def close(self) -> None:
        """Nothing to release: every call opens the newest version."""


def _delta_error() -> type[Exception]:
    from deltalake.exceptions import DeltaError

    return DeltaError


def _backoff(attempt: int, error: Exception, location: str, what: str) -> None:
    """Wait before another attempt (jittered, growing); after the last, raise :class:`VaultBusyError`."""
    if attempt + 1 >= ATTEMPTS:
        raise VaultBusyError(f"{location}: the key vault's {what} failed {ATTEMPTS} times while other writers changed it "
                             f"(last: {type(error).__name__}); retry later") from None
    time.sleep(min(2.0, 0.02 * 2 ** attempt) * (0.5 + random.random()))


def delta_vault(location: str | os.PathLike[str] | Location, master: MasterKey, store: Store | None = None) -> KeyVault:
    """The key vault in a Delta table (created when ``location`` is empty or absent).

    Args:
        location: the vault table's folder or URI (``s3://...``); nothing else may live there.
        master: the master key the keys are wrapped under (the lookup key is derived from it).
        store: the storage settings for the location (default: the environment's).

    Returns:
        The open vault.

    Raises:
        VaultRefusedError: the location holds files that are not a piitracer key vault (nothing is changed).
        VaultKeyError: the vault was created under another master key.
    """
    where = location if isinstance(location, Location) else Location.parse(location)
    backend = DeltaVault(where, store or Store(), master.fingerprint)
    return KeyVault(backend, master, SubjectLookup.from_master(master))


__all__ = ["DeltaVault", "delta_vault"]
