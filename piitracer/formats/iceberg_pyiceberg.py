"""Iceberg's erasure through pyiceberg, no JVM: for tables Spark cannot reach (object storage without
connector jars) or when ``iceberg.engine: pyiceberg`` says so. The plan names the engine of each step
(``Step.engine``); :mod:`~piitracer.formats.iceberg` hands a step here when it names pyiceberg.

Every change is a commit through the table's catalog (pyiceberg's optimistic commit: the catalog
swaps the metadata pointer only if nobody moved it), so another writer's commit is never lost; a
commit that loses the race is retried by pyiceberg against the new state when its checks allow it,
else refused, and then redone here from the new state (recounted) up to :data:`COMMIT_ROUNDS` times.

- ``delete_rows``: copy-on-write ``Transaction.delete`` by ``In(key, values)`` with values typed as
  the key column (``formats.values.typed_values``), counted before and after on the exact snapshots
  the commit went between: every other row must still be there;
- ``rewrite_data_files``: data files that carry delete files and whose bounds admit a subject's
  value are read with their deletes applied and written again (position deletes keep rows in files);
- ``rewrite_manifests``: a commit whose manifests keep only live entries: a DELETED entry keeps the
  removed file's column bounds, which can be a subject's value;
- ``expire_snapshots``: pyiceberg's ``maintenance.expire_snapshots()`` (metadata only; tag and branch
  heads kept), then piitracer removes the files only expired snapshots referenced;
- ``remove_orphan_files`` (with ``--no-concurrent-writers``): files under the location no snapshot
  references;
- ``release_ref`` / ``rewrite_ref``: as on Spark (a tag's rewrite: a working branch at the tag's
  snapshot, the delete on it, the tag moved there with its max-ref-age, the branch dropped).

piitracer's own removals go through the store (``pyarrow.fs``): the paths are listed and journaled
(``Attempt``) before anything is deleted, every path must lie under the table's catalogued location
and the warehouse roots (``storage.guard``), and just before deleting, what the table's snapshots
reference *now* is read again and kept: a run killed between listing and deleting resumes without
deleting a file a retained snapshot needs (what is already gone is simply not there to delete).
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, TypeVar

from piitracer.formats import FormatError, hidden, relative_to
from piitracer.formats.iceberg_eraser import WORK_BRANCH_PREFIX  # the working branch of a tag's rewrite, as on Spark
from piitracer.formats.iceberg_table import manifest_entry_paths, snapshot_manifests
from piitracer.formats.iceberg_rows import count, live_rows
from piitracer.formats.iceberg_tombstones import drop_tombstones, stage_tombstone_drop
from piitracer.formats.values import typed_values
from piitracer.model.outcome import Attempt, SafetyError, StepOutcome
from piitracer.storage.disk import removed_between
from piitracer.storage.failpoints import failpoint
from piitracer.storage.guard import Territory, canonical
from piitracer.storage.locations import Location
from piitracer.storage.store import Store

if TYPE_CHECKING:
    from pyiceberg.table import Table

log = logging.getLogger(__name__)
T = TypeVar("T")

COMMIT_ROUNDS = 4  # a step redone from the new state after a lost race, at most this often
MARK = "piitracer.commit"  # snapshot summary property: which attempt of which step committed it
_KEPT_METADATA = (".metadata.json", ".metadata.json.gz", "version-hint.text")  # metadata files never removed


class PyicebergEraser:
    """The Iceberg steps of one catalog table through pyiceberg. ``load`` returns the table as its
    catalog has it now (``IcebergCatalogs.load_table``); ``location`` is the catalogued location
    the loaded table must live at; ``roots`` the warehouse roots. ``shared_files``: a shallow clone,
    whose snapshots also reference its source's files (outside its location: never removed here)."""

    def __init__(self, load: Callable[[], "Table"], identifier: str, location: Location, store: Store,
                 roots: tuple[Location, ...] = (), shared_files: bool = False) -> None:
        self.load, self.identifier, self.location, self.store = load, identifier, location, store
        self.territory = Territory.of(identifier, location, (), roots)
        self.shared_files = shared_files

    # ---- the table ------------------------------------------------------------------------

    def table(self) -> "Table":
        """The table as its catalog has it now, refused unless it lives at the catalogued location
        (another table of that name, or a catalog entry pointing elsewhere, is never changed)."""
        table = self.load()
        loaded = Location.parse(table.location())
        if canonical(loaded) != canonical(self.location):
            raise SafetyError(f"{self.identifier}: its catalog keeps the table at {loaded}, not at its catalogued "
                              f"location {self.location}: refusing to touch it")
        return table

    def _rounds(self, what: str, work: Callable[["Table"], T]) -> T:
        """``work`` on the table as the catalog has it now; after a commit lost to another writer
        (pyiceberg's ``CommitFailedException``, or ``ValidationException`` when its retry found a
        conflicting change: neither committed anything), again from the new state."""
        from pyiceberg.exceptions import CommitFailedException, ValidationException

        for number in range(1, COMMIT_ROUNDS + 1):
            try:
                table = self.table()
                if number > 1:  # the commit was lost to another writer: its state, from the catalog
                    table.refresh()
                return work(table)
            except (CommitFailedException, ValidationException) as error:
                if number == COMMIT_ROUNDS:
                    raise SafetyError(f"{self.identifier}: {what} lost the race with another writer {number} times "
                                      f"({type(error).__name__}); nothing of it is committed: run execute --resume "
                                      "when the other writer is done") from None
                log.info("%s: %s lost a commit race (%s): again from the new state", self.identifier, what,
                         type(error).__name__)
        raise AssertionError("unreachable")

    # ---- the logical delete -----------------------------------------------------------------

    def delete_rows(self, key_column: str, values: list[Any], attempt: Attempt | None = None,
                    branch: str = "main", counted: tuple[int, int] | None = None) -> StepOutcome:
        """Delete the rows whose ``key_column`` holds one of ``values`` (copy-on-write), checking on
        the snapshots the commit went between that exactly those rows went; a subject row another
        writer added meanwhile is deleted by one more round. ``rows_deleted`` counts from the first
        attempt (a resumed step finds the rows a killed attempt removed already gone). ``counted``:
        (snapshot id, the subjects' rows in it) the caller counted already; used only while that
        snapshot is still the branch's head."""
        attempt = attempt or Attempt()
        first: dict[str, Any] = {}
        outcome = StepOutcome()
        for _ in range(COMMIT_ROUNDS):
            done = self._rounds("the delete", lambda table: self._delete_once(table, key_column, values, attempt,
                                                                              first, outcome, branch, counted))
            if done:
                return outcome
        raise SafetyError(f"{self.identifier}: rows of the subjects keep arriving on {branch} while they are deleted "
                          f"({COMMIT_ROUNDS} rounds): stop the writer and run execute --resume")

    def _delete_once(self, table: "Table", key_column: str, values: list[Any], attempt: Attempt,
                     first: dict[str, Any], outcome: StepOutcome, branch: str,
                     counted: tuple[int, int] | None = None) -> bool:
        predicate = self.subjects(table, key_column, values)
        head = _head(table, branch)
        if counted is not None and head is not None and counted[0] == head.snapshot_id:
            expected = counted[1]  # the caller counted the subjects' rows of this very snapshot
        else:
            expected = count(table, head, predicate)
        if not first:  # this process's first look: the facts of the step's first attempt, and what it removed
            first.update(attempt.start({"expected": expected, "version_before": _id(head)}))
            outcome.version_before = first["version_before"]
            outcome.rows_deleted = max(int(first["expected"]) - expected, 0)
        outcome.version_after = _id(head)
        if expected == 0:  # a delete with nothing to match would still commit a snapshot
            outcome.details.setdefault("matched", 0)
            return True
        token = uuid.uuid4().hex
        transaction = table.transaction()
        transaction.delete(predicate, snapshot_properties={MARK: token}, branch=branch)
        # The DELETED entries the delete writes keep the removed files' column bounds (the
        # subjects' values): their drop goes in the same commit, one catalog commit instead of two
        # (the plan's rewrite_manifests step then finds nothing left to drop).
        tombstones = stage_tombstone_drop(transaction, table.io, branch, {MARK: token})
        failpoint("iceberg.pyiceberg.before_commit")  # test-only: another writer commits here
        transaction.commit_transaction()
        failpoint("iceberg.delete.after_commit")  # test-only: committed, the journal does not know
        # No reload: pyiceberg's commit leaves the table object at the metadata the catalog answered
        # the commit with (the catalog's state after it, another writer's commits before it included).
        base, marked = self._committed(table, token, branch)
        mine = marked[0]
        before, after = live_rows(table, base), live_rows(table, mine)
        # The commit's base is the snapshot counted above unless another writer committed between:
        # then its subjects' rows are counted again (the same count, so not asked twice otherwise).
        same_base = base is not None and head is not None and base.snapshot_id == head.snapshot_id
        matched_before = expected if same_base else count(table, base, predicate)
        matched_after = count(table, mine, predicate)
        if before - matched_before != after - matched_after:
            raise SafetyError(f"{self.identifier}: the delete went from {before} rows ({matched_before} of the subjects') "
                              f"to {after} ({matched_after} of theirs): other rows changed: stopping")
        outcome.rows_deleted += matched_before - matched_after
        outcome.version_after = _id(_head(table, branch))
        written = sum(int(snapshot.summary.get("added-data-files") or 0) for snapshot in marked)
        outcome.details.update(total_rows_after=after, engine="pyiceberg",
                               data_files_written=outcome.details.get("data_files_written", 0) + written,
                               manifests_rewritten=outcome.details.get("manifests_rewritten", 0) + tombstones[0])
        return matched_after == 0  # rows of a subject another writer added meanwhile: one more round

    def subjects(self, table: "Table", key_column: str, values: list[Any]):
        """``In(key_column, values)`` with the values kept only when exactly of the column's type
        (the same rule as every other engine: no lenient cast), typed as the column is."""
        from pyiceberg.expressions import AlwaysFalse, In
        from pyiceberg.io.pyarrow import schema_to_pyarrow

        arrow = schema_to_pyarrow(table.schema())
        if key_column not in arrow.names:
            raise SafetyError(f"{self.identifier}: no column {key_column!r} (columns: {', '.join(arrow.names)})")
        kept = typed_values(values, arrow.field(key_column).type).to_pylist()
        kept = [v.isoformat() if hasattr(v, "isoformat") else v for v in kept]  # dates as ISO text (pyiceberg's literal)
        return In(key_column, kept) if kept else AlwaysFalse()

    def _committed(self, table: "Table", token: str, branch: str) -> tuple[Any, list]:
        """The snapshot the commit ``token`` went from (None for a table's first) and the snapshots
        it added to ``branch``, the last first (a delete, the rewrite of its files and the drop of
        its tombstones: up to three)."""
        mine, snapshot = [], _head(table, branch)
        while snapshot is not None and _mark(snapshot) != token:  # another writer's commits after it
            snapshot = _parent(table, snapshot)
        while snapshot is not None and _mark(snapshot) == token:
            mine.append(snapshot)
            snapshot = _parent(table, snapshot)
        if not mine:
            raise SafetyError(f"{self.identifier}: the commit is not on {branch} after it succeeded: stopping")
        return snapshot, mine

    # ---- the files that keep deleted rows ---------------------------------------------------

    def rewrite_data_files(self, key_column: str | None, values: list[Any], attempt: Attempt | None = None) -> StepOutcome:
        """Write again, with their delete files applied, the data files that carry delete files and
        whose column bounds admit a subject's value (without values: every one with delete files);
        the rows do not change (checked on the snapshots the commit went between)."""
        def once(table: "Table") -> StepOutcome:
            from pyiceberg.expressions import AlwaysTrue
            from pyiceberg.expressions.visitors import _InclusiveMetricsEvaluator
            from pyiceberg.io.pyarrow import ArrowScan, _dataframe_to_data_files

            head = table.current_snapshot()
            outcome = StepOutcome(version_before=_id(head), version_after=_id(head), details={"engine": "pyiceberg"})
            if head is None:
                return outcome
            may_hold = None
            if key_column and values:
                may_hold = _InclusiveMetricsEvaluator(table.schema(), self.subjects(table, key_column, values)).eval
            tasks = [task for task in table.scan(snapshot_id=head.snapshot_id).plan_files()
                     if task.delete_files and (may_hold is None or may_hold(task.file))]
            outcome.details["files_with_deletes_that_may_hold_a_subject"] = len(tasks)
            if not tasks:
                return outcome
            token, written = uuid.uuid4().hex, 0
            transaction = table.transaction()
            with transaction.update_snapshot(snapshot_properties={MARK: token}).overwrite() as overwrite:
                counter = iter(range(1, 1 << 30))
                for task in tasks:
                    rows = ArrowScan(table_metadata=table.metadata, io=table.io, projected_schema=table.schema(),
                                     row_filter=AlwaysTrue()).to_table(tasks=[task])
                    overwrite.delete_data_file(task.file)
                    for data_file in _dataframe_to_data_files(io=table.io, df=rows, table_metadata=table.metadata,
                                                              write_uuid=uuid.uuid4(), counter=counter):
                        overwrite.append_data_file(data_file)
                        written += 1
            transaction.commit_transaction()  # the table object follows the commit: no reload
            base, marked = self._committed(table, token, "main")
            mine = marked[0]
            rows_before, rows_after = live_rows(table, base), live_rows(table, mine)
            if rows_before != rows_after:
                raise SafetyError(f"{self.identifier}: rewriting {len(tasks)} data file(s) changed the table's row count "
                                  f"({rows_before} -> {rows_after}): stopping")
            outcome.files_rewritten, outcome.version_after = len(tasks), _id(mine)
            outcome.details["data_files_written"] = written
            return outcome
        return self._rounds("the rewrite of data files", once)

    def rewrite_manifests(self, branch: str = "main") -> StepOutcome:
        """One commit whose data manifests keep only live entries (see :func:`drop_tombstones`)."""
        def once(table: "Table") -> StepOutcome:
            before = _head(table, branch)
            # committed through the table object: it follows
            rewritten, kept = drop_tombstones(table, branch, {MARK: uuid.uuid4().hex})
            details = {"engine": "pyiceberg", "manifests_rewritten": rewritten}
            if kept:
                details["delete_manifests_keeping_tombstones"] = kept
            return StepOutcome(files_rewritten=rewritten, version_before=_id(before),
                               version_after=_id(_head(table, branch)), details=details)
        return self._rounds("the rewrite of manifests", once)

    # ---- snapshots and refs -----------------------------------------------------------------

    def expire_snapshots(self, retain_last: int = 1, clean_expired_files: bool = True,
                         attempt: Attempt | None = None) -> StepOutcome:
        """Expire every snapshot the step's first attempt found but the last ``retain_last`` of
        ``main`` and the snapshots tags and branches point at (pyiceberg's expiry: metadata only),
        then remove the files only the expired snapshots referenced (not for a shallow clone,
        ``clean_expired_files`` false: those may be its source's)."""
        attempt = attempt or Attempt()
        table = self.table()
        keep = _retained(table, retain_last)
        doomed = [s for s in table.metadata.snapshots if s.snapshot_id not in keep]
        candidates: list[str] = []
        if clean_expired_files:  # a path outside the location: refused before the expiry commits
            candidates = sorted(self._inside(_paths(table, doomed, live_only=False, store=self.store)))
            self._referenced(table)
        listing = self.store.sizes(self.location)
        first = attempt.start({"version_before": _id(table.current_snapshot()), "expire": [s.snapshot_id for s in doomed],
                               "candidates": candidates, "files_before": listing})

        def expire(table: "Table") -> int:
            keep_now = _retained(table, retain_last)
            ids = [i for i in first["expire"] if table.metadata.snapshot_by_id(i) is not None and i not in keep_now]
            if ids:
                table.maintenance.expire_snapshots().by_ids(ids).commit()
            return len(ids)
        expired = self._rounds("the expiry", expire)
        failpoint("iceberg.pyiceberg.expired")  # test-only: expiry committed, nothing removed yet
        details: dict[str, Any] = {"engine": "pyiceberg", "snapshots_expired": expired}
        if clean_expired_files:
            details["unreferenced_files_removed"] = self._remove_unreferenced(first["candidates"], listing)
        else:
            details["clean_expired_files"] = "false"
        return self._removal_outcome(first, details)

    def remove_orphan_files(self, attempt: Attempt | None = None) -> StepOutcome:
        """Remove the files under the location that no snapshot references (only with no
        concurrent writer: a writer's uncommitted files look like orphans). Metadata files
        (``*.metadata.json``, ``version-hint.text``) and hidden paths are never taken."""
        attempt = attempt or Attempt()
        listing = self.store.sizes(self.location)
        referenced = self._referenced(self.table())
        orphans = sorted(path for path in listing if path not in referenced and not _kept(path))
        first = attempt.start({"orphans": orphans, "files_before": listing})
        details = {"engine": "pyiceberg", "orphan_files": self._remove_unreferenced(first["orphans"], listing)}
        return self._removal_outcome(first, details)

    def drop_ref(self, name: str, ref_type: str) -> StepOutcome:
        """Drop a tag or branch (``--drop-refs``); a ref already gone is not an error."""
        def once(table: "Table") -> StepOutcome:
            before = _id(table.current_snapshot())
            if name in table.metadata.refs:
                manage = table.manage_snapshots()
                (manage.remove_tag(name) if ref_type == "tag" else manage.remove_branch(name)).commit()
            return StepOutcome(version_before=before, version_after=before, details={
                "dropped": f"{ref_type} {name}", "ref": name, "ref_type": ref_type, "engine": "pyiceberg"})
        return self._rounds(f"dropping {ref_type} {name}", once)

    def rewrite_ref(self, name: str, ref_type: str, key_column: str, values: list[Any],
                    attempt: Attempt | None = None) -> StepOutcome:
        """Remove the subjects' rows from a tag's or branch's snapshot without dropping the ref: a
        copy-on-write delete committed to the branch (a tag: to a working branch made at its
        snapshot) together with the drop of its tombstones, then the tag moved to the new
        snapshot with its max-ref-age and the working branch dropped. The tag is moved only once
        the new snapshot is complete; a rerun finds the ref without the subjects and tidies up."""
        attempt = attempt or Attempt()
        table = self.table()
        ref = table.metadata.refs.get(name)
        if ref is None or ref.snapshot_ref_type.value != ref_type:
            raise SafetyError(f"{self.identifier}: {ref_type} '{name}' is not there any more (found "
                              f"{sorted(table.metadata.refs)}): plan again")
        old, max_age = ref.snapshot_id, ref.max_ref_age_ms
        first = attempt.start({"snapshot_before": str(old)})
        work = name if ref_type == "branch" else f"{WORK_BRANCH_PREFIX}{name}"
        snapshot = table.metadata.snapshot_by_id(old)
        rows = count(table, snapshot, self.subjects(table, key_column, values))
        if ref_type == "tag":
            self._set_refs(remove=[work])  # a working branch a killed attempt left
            if rows == 0:
                return _ref_outcome(name, ref_type, first["snapshot_before"], old, 0, 0)
            self._rounds(f"branching {work}", lambda t: t.manage_snapshots().create_branch(old, work).commit())
        removed = rewritten = 0
        if rows:
            deleted = self.delete_rows(key_column, values, Attempt(), branch=work, counted=(old, rows))
            removed = deleted.rows_deleted
            if removed != rows:
                raise SafetyError(f"{self.identifier}: {ref_type} '{name}' held {rows} rows of the subjects; the delete "
                                  f"removed {removed}: stopping")
            rewritten = int(deleted.details.get("data_files_written", 0))
        # The delete dropped its own tombstones in its commit; this drops any the ref's snapshot held before.
        tombstones = self._rounds("the rewrite of manifests", lambda t: drop_tombstones(t, work, {MARK: uuid.uuid4().hex}))
        failpoint("iceberg.rewrite_ref.before_move")  # test-only: new snapshot written, the tag not yet moved
        new = _head(self.table(), work).snapshot_id
        if ref_type == "tag":
            def move(table: "Table") -> None:
                manage = table.manage_snapshots().create_tag(new, name, max_ref_age_ms=max_age)
                manage.remove_branch(work).commit()
            self._rounds(f"moving tag {name}", move)
        outcome = _ref_outcome(name, ref_type, first["snapshot_before"], new, removed, rewritten)
        if tombstones[1]:
            outcome.details["delete_manifests_keeping_tombstones"] = tombstones[1]
        return outcome

    def _set_refs(self, remove: Iterable[str]) -> None:
        def once(table: "Table") -> None:
            gone = [name for name in remove if name in table.metadata.refs]
            if gone:
                manage = table.manage_snapshots()
                for name in gone:
                    manage = manage.remove_branch(name)
                manage.commit()
        self._rounds("dropping a working branch", once)

    # ---- piitracer's own removal ------------------------------------------------------------

    def _inside(self, paths: Iterable[str], foreign_ok: bool = False) -> set[str]:
        """``paths`` (as metadata names them) relative to the location; refused (before anything
        is deleted) when one lies outside the location or the warehouse roots (``foreign_ok``:
        those are left out instead: a shallow clone's references to its source's files)."""
        outside_roots = self.territory.outside_roots()
        if outside_roots is not None:
            raise SafetyError(f"{self.identifier}: {outside_roots} is outside the warehouse roots: refusing to remove files")
        found, strays = set(), []
        for path in paths:
            relative = relative_to(self.location, path)
            if relative is None or not self.territory.admits(path, base=self.location):
                strays.append(path)
            else:
                found.add(relative)
        if strays and not foreign_ok:
            raise SafetyError(f"{self.identifier}: its metadata names {len(strays)} file(s) outside its catalogued location "
                              f"{self.location} (first: {sorted(strays)[0]}): refusing to remove any file")
        return found

    def _referenced(self, table: "Table") -> set[str]:
        """Every file the table's metadata references now, relative to the location: each retained
        snapshot's manifest list, manifests and live data and delete files, the metadata files of
        its log and its statistics files."""
        metadata = table.metadata
        paths = _paths(table, metadata.snapshots, live_only=True, store=self.store)
        paths |= {table.metadata_location, *(entry.metadata_file for entry in metadata.metadata_log)}
        paths |= {f.statistics_path for f in [*metadata.statistics, *metadata.partition_statistics]}
        return self._inside(paths, foreign_ok=self.shared_files)

    def _remove_unreferenced(self, candidates: list[str], present: Mapping[str, int]) -> int:
        """Delete those of ``candidates`` (relative paths journaled before) that are in ``present``
        (this process's listing at the step's start: a resumed step's journaled candidates are
        checked against files there now) and that no snapshot of the table references now, each
        checked inside the location."""
        failpoint("iceberg.pyiceberg.before_removal")  # test-only: listed and journaled, nothing deleted yet
        # Asked of the catalog again right before files go (the one reload of a step): a writer may
        # have registered one of them since it was listed (add_files), or a resumed run's listing is old.
        table = self.table()
        table.refresh()
        referenced = self._referenced(table)
        doomed = [self.location.child(path) for path in candidates
                  if path in present and path not in referenced and not _kept(path)]
        self._inside(place.uri for place in doomed)
        return self.store.delete_each(doomed, lambda number: failpoint("iceberg.pyiceberg.removing", str(number)))  # test-only: a kill part-way

    def _removal_outcome(self, first: dict[str, Any], details: dict[str, Any]) -> StepOutcome:
        files, size = removed_between(first["files_before"], self.store.sizes(self.location))
        current = _id(self.table().current_snapshot())
        return StepOutcome(files_removed=files, bytes_removed=size, version_before=first.get("version_before", current),
                           version_after=current, details=details)


# ---- refs and snapshots ---------------------------------------------------------------------------

def _head(table: "Table", branch: str):
    return table.metadata.snapshot_by_name(branch)


def _parent(table: "Table", snapshot):
    return table.metadata.snapshot_by_id(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id is not None else None


def _mark(snapshot) -> str | None:
    return snapshot.summary.get(MARK) if snapshot.summary is not None else None


def _id(snapshot) -> str | None:
    return str(snapshot.snapshot_id) if snapshot is not None else None


def _retained(table: "Table", retain_last: int) -> set[int]:
    """The snapshots an expiry keeps: every tag's and branch's, and the last ``retain_last`` of main."""
    metadata = table.metadata
    return {ref.snapshot_id for ref in metadata.refs.values()} | _ancestry(metadata, retain_last)


def _ancestry(metadata, limit: int) -> set[int]:
    found, snapshot = set(), metadata.current_snapshot()
    while snapshot is not None and len(found) < limit:
        found.add(snapshot.snapshot_id)
        snapshot = metadata.snapshot_by_id(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
    return found


def _paths(table: "Table", snapshots, live_only: bool, store: Store) -> set[str]:
    """Every path ``snapshots`` reference: manifest lists, manifests, and the data and delete files
    their entries name (``live_only``: entries not DELETED). Each manifest list and manifest is
    read once per store (they are written once: a step's later reads find them kept)."""
    found: set[str] = set()
    read: set[str] = set()
    for snapshot in snapshots:
        found.add(snapshot.manifest_list)
        for manifest in snapshot_manifests(table, snapshot, store):
            found.add(manifest.manifest_path)
            if manifest.manifest_path in read:
                continue
            read.add(manifest.manifest_path)
            found |= {path for path, live in manifest_entry_paths(table, manifest, store) if live or not live_only}
    return found


def _kept(path: str) -> bool:
    """Files piitracer never removes itself: metadata files (the metadata log names them; they hold
    no row values) and hidden paths (as orphan removal on Spark skips them)."""
    return hidden(path) or path.endswith(_KEPT_METADATA)


def _ref_outcome(name: str, ref_type: str, before: str, after: int, rows: int, rewritten: int) -> StepOutcome:
    return StepOutcome(rows_deleted=rows, files_rewritten=rewritten, version_before=str(before), version_after=str(after),
                       details={"ref": name, "ref_type": ref_type, "ref_snapshot_before": str(before),
                                "ref_snapshot_after": str(after), "ref_rows_removed": rows,
                                "ref_data_files_rewritten": rewritten, "engine": "pyiceberg"})


# ---- what the layers above call -------------------------------------------------------------------

def catalog_table(entry, location: Location, store: Store):
    """(a loader of the catalog table ``entry.table`` as its catalog has it now, its identifier);
    FormatError when no configured pyiceberg catalog keeps it."""
    catalogs = store.pointers
    identifier = entry.table or ""
    owns = getattr(catalogs, "owns", None)
    if owns is None or not owns(identifier):
        raise FormatError(f"table {identifier or '(no table: in the catalog entry)'} at {location}: pyiceberg runs its "
                          "steps, but no configured pyiceberg catalog keeps it (configure the catalog under "
                          "iceberg.catalogs in piitracer.yaml, or as PYICEBERG_CATALOG__<NAME>__*, and name the table "
                          "<catalog>.<namespace>.<table>)")
    return (lambda: catalogs.load_table(identifier)), identifier


def eraser(entry, location: Location, store: Store, roots: tuple[Location, ...] = ()) -> PyicebergEraser:
    """The pyiceberg eraser of a catalogued Iceberg table."""
    load, identifier = catalog_table(entry, location, store)
    shallow = entry.clone_of is not None and entry.clone_of.mode.value == "shallow"
    return PyicebergEraser(load, identifier, location, store, roots, shared_files=shallow)


def check(dataset: str, entry, location: Location, store: Store) -> None:
    """Before the first step: the catalog keeps the table at its catalogued location, and no
    snapshot a step reads (current, tags, branches) has equality deletes (pyiceberg 0.12 cannot
    apply them)."""
    from pyiceberg.manifest import DataFileContent, ManifestContent

    table = eraser(entry, location, store).table()
    heads = {ref.snapshot_id for ref in table.metadata.refs.values()}
    for snapshot_id in sorted(heads):
        for manifest in table.metadata.snapshot_by_id(snapshot_id).manifests(table.io):
            if manifest.content == ManifestContent.DELETES and any(
                    e.data_file.content == DataFileContent.EQUALITY_DELETES for e in manifest.fetch_manifest_entry(table.io)):
                raise SafetyError(f"{entry.table}: snapshot {snapshot_id} has equality deletes, which pyiceberg 0.12 "
                                  "cannot apply: compact them with Spark first (rewrite_data_files), or run this "
                                  "dataset's steps with iceberg.engine: spark")


def source_rows(spark, entry, location: Location, store: Store):
    """The table's rows, read through its catalog by pyiceberg, as a Spark DataFrame (resolve)."""
    from piitracer.formats.values import arrow_frame

    return arrow_frame(spark, eraser(entry, location, store).table().scan().to_arrow())
