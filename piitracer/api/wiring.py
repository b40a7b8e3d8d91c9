"""Shared wiring of the use cases: a workspace's places for a caller without a session (each call
resolves them anew: a session resolves them once, ``api/lakehouse.py``), the executor's context and
what its journal holds of a plan, the request store, and private files. Rooms: model, storage,
ingest (the workspace), executor (its context and journal), requests."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Collection, Sequence

from piitracer.api.lakehouse import Lakehouse, lakehouse_of
from piitracer.crypto.envelope import KeyWrapper, ValueCipher
from piitracer.executor.journal import Journal
from piitracer.formats.iceberg_catalogs import IcebergCatalogs
from piitracer.executor.runner import ExecutionContext
from piitracer.workspace.model import Workspace
from piitracer.model.steps import StepRecord
from piitracer.requests.store import RequestStore
from piitracer.shred.place import VaultPlace
from piitracer.storage.locations import Location
from piitracer.storage.store import Store
from piitracer.workspace.layout import StateLayout


def workspace_store(workspace: Workspace) -> Store:
    """The files of a workspace's datasets, through its ``storage:`` settings, with the Iceberg
    catalogs that keep the current metadata of its catalog tables (``iceberg.catalogs`` and
    pyiceberg's own configuration; a table of Spark's Hadoop catalog is read from its folder).
    A session's use cases share one: [`Lakehouse.store`][piitracer.api.lakehouse.Lakehouse.store]."""
    return Lakehouse(workspace).store


def iceberg_catalogs(workspace: Workspace, ask_catalogs: bool = True) -> IcebergCatalogs:
    """The workspace's Iceberg catalogs, each Iceberg dataset whose ``table:`` names a catalog other
    than Spark's Hadoop warehouse catalog (``spark.catalog``) bound to its catalogued location (one
    with no ``location:`` to the one its catalog gives, unless not ``ask_catalogs``)."""
    lakehouse = Lakehouse(workspace)
    if ask_catalogs:
        lakehouse.locations  # noqa: B018 - binds the tables their catalogs place
    return lakehouse.catalogs


def dataset_locations(workspace: Workspace, datasets: Collection[str] | None = None,
                      ask_catalogs: bool = True) -> dict[str, Location]:
    """Every catalogued dataset's location (or only those of ``datasets``) as a :class:`Location`
    (relative paths under the workspace; ``s3://...`` and other URIs as they are). A location that
    is not a usable place is a workspace error naming the dataset. An Iceberg dataset with no
    ``location:`` whose ``table:`` is in a configured catalog is where that catalog keeps it
    (asked now, unless not ``ask_catalogs``; a catalog that cannot say is a workspace error).
    A session's use cases share one lakehouse, which asks each catalog once
    ([`Lakehouse`][piitracer.api.lakehouse.Lakehouse])."""
    lakehouse = Lakehouse(workspace)
    if not ask_catalogs:
        placed = lakehouse.placed()
        return placed if datasets is None else {d: placed[d] for d in sorted(datasets) if d in placed}
    return lakehouse.locations if datasets is None else lakehouse.locations_of(datasets)


def warehouse_roots(workspace: Workspace) -> tuple[Location, ...]:
    """Every place piitracer may change lies inside one of these roots; never empty.

    The workspace's ``warehouse_roots`` when it sets them; otherwise the workspace folder and the
    Spark warehouse folder (the places ``catalog discover`` looks), derived from the workspace file
    alone, so they never widen without an edit to it. A catalog location anywhere else (``..``
    out of the workspace, a symlink to another folder, an object store) is refused before the
    first step until ``warehouse_roots`` names its root."""
    return Lakehouse(workspace).roots


def protected_places(workspace: Workspace) -> tuple[Location, ...]:
    """piitracer's own files in a workspace (its state folder and workspace files): no dataset's
    location may hold them, or an orphan removal or a rewrite there would destroy the audit log,
    the journal or the request store."""
    return Lakehouse(workspace).protected


def write_private(path: str | os.PathLike[str], text: str) -> None:
    """Write a file only its owner can read (mode 0600): plans and journals hold subject values."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # also when the file existed with a wider mode
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def vault_place(workspace: Workspace) -> VaultPlace | None:
    """The workspace's key vault (``shred.vault``): a Delta dataset of the catalog at its location,
    with its catalogued copies, or a SQLite file (relative to the workspace); None when the
    workspace has none."""
    return Lakehouse(workspace).vault


def execution_context(workspace: Workspace, attested: Sequence[str] = (), cipher: ValueCipher | None = None,
                      master: KeyWrapper | None = None, lakehouse: Lakehouse | None = None) -> ExecutionContext:
    """Where the executor finds tables, Spark settings and its journal, for one workspace
    (``attested``: ids of person steps their owners attested; ``cipher``: seals the values the
    journal keeps under each request's data key; ``master``: the master key, for crypto-shredding's
    key destruction in the workspace's vault; ``lakehouse``: the session's, whose places are
    resolved once)."""
    return lakehouse_of(workspace, lakehouse).context(attested, cipher, master)


def audit_log_path(workspace: Workspace) -> Path:
    """``<workspace>/.piitracer/audit.sqlite``."""
    return StateLayout(workspace.root).audit_log


def request_store_path(workspace: Workspace) -> Path:
    """``<workspace>/.piitracer/requests.sqlite``."""
    return StateLayout(workspace.root).request_store


def request_store(workspace: Workspace, master: KeyWrapper | None = None):
    """The workspace's request store (created on first use). ``master`` (the master key, or a KMS
    wrapper) is needed to add requests and to read or seal their values."""
    return RequestStore(request_store_path(workspace), master)


def journal_steps(workspace: Workspace, plan_id: str) -> list[StepRecord]:
    """Every journaled step of a plan (empty when it never ran): what :func:`record_run` records
    when a run stopped with an error instead of returning its summary."""
    path = StateLayout(workspace.root).journal
    if not path.exists():
        return []
    with Journal(path) as journal:
        return journal.records(plan_id)
