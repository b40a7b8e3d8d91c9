"""Iceberg, the format module (``SUPPORT``): the erasers of its actions and their dry-run text on
each engine the plan may name (``Step.engine``: Spark, or pyiceberg where Spark cannot reach the
table), and which planned action removes a leftover the verifier finds. Reading the table's metadata
(its newest ``metadata.json``, state, referenced paths, files per snapshot, retained snapshots read
back, discovery) is :mod:`~piitracer.formats.iceberg_metadata`; the erasure on Spark
(shared/lakehouse-notes.md) is :class:`~piitracer.formats.iceberg_eraser.IcebergEraser`, through
pyiceberg :class:`~piitracer.formats.iceberg_pyiceberg.PyicebergEraser`."""

from __future__ import annotations

from piitracer.formats import FormatSupport, OtherEngine, Shown, StepWork, TableFiles, hidden
from piitracer.formats import iceberg_pyiceberg
from piitracer.formats.iceberg_eraser import WORK_BRANCH_PREFIX, IcebergEraser
from piitracer.formats.iceberg_history import files, history
from piitracer.formats.iceberg_metadata import (arrow_schema, candidate_files, referenced_paths, sample_rows, table_facts,
                                                table_folder, table_state, versions)
from piitracer.formats.iceberg_table import newest_metadata_file, stray_metadata_notes
from piitracer.formats.prepare import proof_columns
from piitracer.model.errors import PiitracerError
from piitracer.model.outcome import SafetyError, StepOutcome
from piitracer.model.plan import Action, StepEngine
from piitracer.model.workspace import CatalogDataset, DatasetFormat
from piitracer.storage.locations import Location
from piitracer.storage.store import Store


def _eraser(work: StepWork) -> IcebergEraser:
    """The eraser of a step's table, after checking Spark loaded the table the preflight checked
    (its location)."""
    if not work.entry.table:
        raise SafetyError(f"{work.step.dataset}: an Iceberg dataset needs 'table:' (catalog.db.table) in the catalog")
    eraser = IcebergEraser(work.spark(), work.entry.table, work.location, work.store)
    eraser.check_location()
    return eraser


def _expire(work: StepWork) -> StepOutcome:
    params = work.step.params
    return _eraser(work).expire_snapshots(params.retain_last, params.clean_expired_files, work.attempt)


SPARK_PERFORM = {
    Action.DELETE_ROWS: lambda work: _eraser(work).delete_rows(work.step.key_column, work.values, work.attempt),
    Action.EQUALITY_DELETE: lambda work: _eraser(work).equality_delete(work.step.key_column, work.values, work.attempt),
    Action.REWRITE_DATA_FILES: lambda work: _eraser(work).rewrite_data_files(
        work.step.params.options, work.attempt, proof_columns(work.entry, work.step.key_column)),
    Action.REWRITE_MANIFESTS: lambda work: _eraser(work).rewrite_manifests(),
    Action.EXPIRE_SNAPSHOTS: _expire,
    Action.REMOVE_ORPHAN_FILES: lambda work: _eraser(work).remove_orphan_files(work.attempt),
    Action.RELEASE_REF: lambda work: _eraser(work).drop_ref(work.step.params.ref, work.step.params.ref_type),
    Action.REWRITE_REF: lambda work: _eraser(work).rewrite_ref(work.step.params.ref, work.step.params.ref_type,
                                                               work.step.key_column, work.values, work.attempt),
}


def _expire_text(shown: Shown) -> str:
    params = shown.step.params
    if not params.clean_expired_files:
        return (f"{shown.table}.expireSnapshots().expireOlderThan(<run time>).retainLast({params.retain_last})"
                ".cleanExpiredFiles(false)  -- shallow clone: the source's files stay")
    return f"CALL system.expire_snapshots(table => '{shown.table}', older_than => <run time>, retain_last => {params.retain_last})"


SPARK_DESCRIBE = {
    Action.DELETE_ROWS: lambda s: (
        f"DELETE FROM {s.table} WHERE {s.key} IN (SELECT v FROM subjects_view)  -- subjects_view = {s.values} (redacted)"),
    Action.EQUALITY_DELETE: lambda s: (
        f"{s.table}.newRowDelta().addDeletes(<one equality-delete file of {s.key} = {s.values} (redacted)>)  "
        "-- no scan for positions"),
    Action.REWRITE_DATA_FILES: lambda s: (
        f"CALL system.rewrite_data_files(table => '{s.table}', options => map("
        + ", ".join(f"'{k}','{v}'" for k, v in sorted(s.step.params.options.items())) + "))"),
    Action.REWRITE_MANIFESTS: lambda s: f"CALL system.rewrite_manifests('{s.table}')",
    Action.EXPIRE_SNAPSHOTS: _expire_text,
    Action.REMOVE_ORPHAN_FILES: lambda s: (
        f"SparkActions.deleteOrphanFiles({s.table}).olderThan(<run time>)  -- only with --no-concurrent-writers"),
    Action.RELEASE_REF: lambda s: (
        f"ALTER TABLE {s.table} DROP {s.step.params.ref_type.upper()} `{s.step.params.ref}`  -- only with --drop-refs"),
    Action.REWRITE_REF: lambda s: (
        (f"ALTER TABLE {s.table} CREATE BRANCH `{WORK_BRANCH_PREFIX}{s.step.params.ref}` AS OF VERSION <tag's snapshot>; "
         if s.step.params.ref_type == "tag" else "")
        + f"DELETE FROM {s.table}.`branch_{WORK_BRANCH_PREFIX if s.step.params.ref_type == 'tag' else ''}{s.step.params.ref}` "
        f"WHERE {s.key} IN (SELECT v FROM subjects_view)  -- copy-on-write, subjects_view = {s.values} (redacted); "
        "a commit that rewrites its tombstoned manifests"
        + (f"; ALTER TABLE {s.table} REPLACE TAG `{s.step.params.ref}` AS OF VERSION <new> RETAIN <its max age>"
           if s.step.params.ref_type == "tag" else "")),
}


def _py(work: StepWork) -> iceberg_pyiceberg.PyicebergEraser:
    return iceberg_pyiceberg.eraser(work.entry, work.location, work.store, work.roots)


def _needs_spark(work: StepWork) -> StepOutcome:
    raise SafetyError(f"{work.step.dataset}: {work.step.action.value} needs Spark (pyiceberg 0.12 writes no equality "
                      "deletes): re-plan with delete_mode 'positional' or iceberg.engine: spark")


PYICEBERG_PERFORM = {
    Action.DELETE_ROWS: lambda work: _py(work).delete_rows(work.step.key_column, work.values, work.attempt),
    Action.EQUALITY_DELETE: _needs_spark,
    Action.REWRITE_DATA_FILES: lambda work: _py(work).rewrite_data_files(work.step.key_column, work.values, work.attempt),
    Action.REWRITE_MANIFESTS: lambda work: _py(work).rewrite_manifests(),
    Action.EXPIRE_SNAPSHOTS: lambda work: _py(work).expire_snapshots(
        work.step.params.retain_last, work.step.params.clean_expired_files, work.attempt),
    Action.REMOVE_ORPHAN_FILES: lambda work: _py(work).remove_orphan_files(work.attempt),
    Action.RELEASE_REF: lambda work: _py(work).drop_ref(work.step.params.ref, work.step.params.ref_type),
    Action.REWRITE_REF: lambda work: _py(work).rewrite_ref(work.step.params.ref, work.step.params.ref_type,
                                                           work.step.key_column, work.values, work.attempt),
}

PYICEBERG_DESCRIBE = {
    Action.DELETE_ROWS: lambda s: (
        f"{s.table}.transaction().delete(In({s.key}, {s.values} (redacted)))  -- copy-on-write through the table's "
        "catalog, counted before and after; a commit lost to another writer is redone from the new state"),
    Action.EQUALITY_DELETE: lambda s: f"{s.table}: equality delete  -- refused: needs Spark",
    Action.REWRITE_DATA_FILES: lambda s: (
        f"{s.table}: data files carrying delete files whose {s.key} bounds admit {s.values} (redacted) read with their "
        "deletes applied and written again (one overwrite commit)"),
    Action.REWRITE_MANIFESTS: lambda s: (
        f"{s.table}: one commit whose manifests keep only live entries (no DELETED entry keeps a removed file's bounds)"),
    Action.EXPIRE_SNAPSHOTS: lambda s: (
        f"{s.table}.maintenance.expire_snapshots() of every snapshot but the last {s.step.params.retain_last} of main "
        "and the tags' and branches' heads"
        + ("; then piitracer removes the files only they referenced (each under the table's location and the "
           "warehouse roots; what a snapshot references then is kept)" if s.step.params.clean_expired_files
           else "  -- shallow clone: metadata only, the source's files stay")),
    Action.REMOVE_ORPHAN_FILES: lambda s: (
        f"piitracer removes the files under {s.table}'s location that no snapshot references  "
        "-- only with --no-concurrent-writers"),
    Action.RELEASE_REF: lambda s: (
        f"{s.table}.manage_snapshots().remove_{s.step.params.ref_type}(`{s.step.params.ref}`)  -- only with --drop-refs"),
    Action.REWRITE_REF: lambda s: (
        (f"{s.table}.manage_snapshots().create_branch(<tag's snapshot>, `{WORK_BRANCH_PREFIX}{s.step.params.ref}`); "
         if s.step.params.ref_type == "tag" else "")
        + f"delete In({s.key}, {s.values} (redacted)) on branch "
        f"`{(WORK_BRANCH_PREFIX if s.step.params.ref_type == 'tag' else '') + s.step.params.ref}` (copy-on-write); "
        "a commit without its tombstoned manifests"
        + (f"; tag `{s.step.params.ref}` moved there with its max-ref-age, the working branch dropped"
           if s.step.params.ref_type == "tag" else "")),
}


def _scrubbed(perform):
    """A pyiceberg performer whose failures say what failed without a subject's value: pyiceberg's
    messages can print the row filter (``In(key, {values})``), and the runner journals and shows
    the message."""
    def guarded(work: StepWork) -> StepOutcome:
        try:
            return perform(work)
        except PiitracerError:
            raise  # piitracer's own messages name no value
        except Exception as error:
            text = (str(error).strip().splitlines() or [""])[0]
            for value in sorted({str(v) for v in work.values if str(v)}, key=len, reverse=True):
                text = text.replace(value, "<subject value>")
            raise SafetyError(f"{work.step.dataset}: {work.step.action.value} through pyiceberg failed: "
                              f"{type(error).__name__}: {text[:400]}") from None
    return guarded


PYICEBERG_PERFORM = {action: _scrubbed(perform) for action, perform in PYICEBERG_PERFORM.items()}


def _on_engine(spark, pyiceberg):
    """The performer (or dry-run text) of the engine the step names: pyiceberg, else Spark."""
    return lambda item: (pyiceberg if getattr(item, "step", None) is not None
                         and item.step.engine is StepEngine.PYICEBERG else spark)(item)


PERFORM = {action: _on_engine(SPARK_PERFORM[action], PYICEBERG_PERFORM[action]) for action in SPARK_PERFORM}
DESCRIBE = {action: _on_engine(SPARK_DESCRIBE[action], PYICEBERG_DESCRIBE[action]) for action in SPARK_DESCRIBE}


def source_rows(spark, entry: CatalogDataset, location: Location, store: Store):
    """The table's rows as Spark reads them by identifier (after the same location check as the
    erasing steps: a read-only step obeys the guard too)."""
    if not entry.table:
        raise SafetyError(f"cannot read source {location}: an Iceberg dataset needs 'table:' in the catalog")
    IcebergEraser(spark, entry.table, location, store).check_location()
    return spark.table(entry.table)


def file_removers(found: TableFiles, path: str) -> list[Action]:
    """The planned actions that remove (or rewrite) a file holding a subject's value."""
    if hidden(path) or path.startswith("metadata/") and path.endswith((".metadata.json", ".metadata.json.gz", "version-hint.text")):
        # Orphan removal skips hidden paths; metadata files are kept by the metadata log.
        return []
    if path in found.live:
        return [Action.DELETE_ROWS, Action.EQUALITY_DELETE, Action.REWRITE_DATA_FILES]
    if path in found.current_meta:
        return [Action.DELETE_ROWS, Action.EQUALITY_DELETE, Action.REWRITE_MANIFESTS]
    if path in found.retained:
        return [Action.REWRITE_REF, Action.RELEASE_REF, Action.EXPIRE_SNAPSHOTS] if path in found.ref_files else [Action.EXPIRE_SNAPSHOTS]
    return [Action.REMOVE_ORPHAN_FILES]


def logical_removers(current: bool, held_by_ref: bool) -> list[Action]:
    """The planned actions that remove a snapshot still holding a subject's row."""
    if current:
        return [Action.DELETE_ROWS, Action.EQUALITY_DELETE]
    return [Action.REWRITE_REF, Action.RELEASE_REF, Action.EXPIRE_SNAPSHOTS] if held_by_ref else [Action.EXPIRE_SNAPSHOTS]


def table_files(root: Location, store: Store) -> TableFiles:
    """:func:`~piitracer.formats.iceberg_metadata.files`, with each metadata file newer than the one
    the table's catalog names as a problem the verifier reports (another writer's uncommitted file:
    never read as the table's state)."""
    found = files(root, store)
    found.problems.extend(stray_metadata_notes(root, store))
    return found


def table_history(root: Location, store: Store, key_column: str | None):
    """:func:`~piitracer.formats.iceberg_history.history` (the table's files and retained snapshots from
    its manifests, read once), its files with the same stray-metadata notes as :func:`table_files`."""
    found = history(root, store, key_column)
    if found is not None:
        found.files.problems.extend(stray_metadata_notes(root, store))
    return found


SUPPORT = FormatSupport(
    format=DatasetFormat.ICEBERG, perform=PERFORM, describe=DESCRIBE,
    spark_actions=frozenset(PERFORM), spark_table=True, schema=arrow_schema, newest_metadata=newest_metadata_file,
    referenced_paths=referenced_paths, keeps_refs=True, table_state=table_state, source_rows=source_rows, files=table_files,
    versions=versions, history=table_history, version_word="snapshot", file_removers=file_removers, logical_removers=logical_removers,
    candidate_files=candidate_files, estimate_basis="Iceberg manifest bounds (scan plan)",
    table_folder=table_folder, table_facts=table_facts, sample_rows=sample_rows,
    engines={StepEngine.PYICEBERG.value: OtherEngine(source_rows=iceberg_pyiceberg.source_rows, check=iceberg_pyiceberg.check)},
)
