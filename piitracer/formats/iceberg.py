"""Iceberg: the one reader of a table's newest ``metadata.json`` (pyiceberg ``StaticTable`` reads
it directly in ~0.1 s, whichever engine wrote it, on a local folder or an object store), the
erasure on Spark (shared/lakehouse-notes.md: the logical delete, ``rewrite_data_files`` applies
delete files, ``rewrite_manifests`` drops the DELETED entries that keep column bounds,
``expire_snapshots``, then orphan removal), and what the verifier reads: files per snapshot and
every retained snapshot read back."""

from __future__ import annotations

import itertools
import re
import time
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Callable, Iterator

from piitracer.formats import FormatError, FormatSupport, Shown, StepWork, TableFacts, TableFiles, VersionRows, hidden, relative_to
from piitracer.formats.prepare import BLOOM_FPP, bloom_filter_bytes, proof_columns
from piitracer.formats.values import SUBJECT_COLUMN, subject_frame
from piitracer.model.outcome import Attempt, SafetyError, StepOutcome
from piitracer.model.plan import Action
from piitracer.model.table_state import RefType, TableRef, TableState
from piitracer.model.workspace import CatalogDataset, DatasetFormat
from piitracer.storage.disk import removed_between, removed_since_first_attempt
from piitracer.storage.failpoints import failpoint
from piitracer.storage.locations import Location
from piitracer.storage.store import Store

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_METADATA_VERSION = re.compile(r"^v?(\d+)[.-]")


def newest_metadata_file(location: Location, store: Store) -> Location | None:
    """The current ``metadata.json`` of the table: the one ``version-hint.text`` names (Hadoop
    catalog) when present, else the highest-numbered file (``v3.metadata.json``,
    ``00003-<uuid>.metadata.json``, gzip-compressed ones too); mtime is never used."""
    folder = location.child("metadata")
    names = {entry.relative for entry in store.list_files(folder) if "/" not in entry.relative}
    if "version-hint.text" in names:
        hint = store.read_bytes(folder.child("version-hint.text")).decode("utf-8", "replace").strip()
        for name in (f"v{hint}.metadata.json", f"v{hint}.gz.metadata.json", f"v{hint}.metadata.json.gz"):
            if name in names:
                return folder.child(name)
    numbered = []
    for name in names:
        match = _METADATA_VERSION.match(name)
        if match and ".metadata.json" in name:
            numbered.append((int(match.group(1)), name))
    return folder.child(max(numbered)[1]) if numbered else None


def static_table(location: Location, store: Store):
    """pyiceberg's ``StaticTable`` of the newest metadata, or None when there is no table yet."""
    metadata_file = newest_metadata_file(location, store)
    if metadata_file is None:
        return None
    from pyiceberg.table import StaticTable  # ~1 s to import: only once there is a table to read

    try:
        return StaticTable.from_metadata(metadata_file.uri, properties=store.iceberg_properties(location))
    except Exception as error:  # pyiceberg raises many types for a corrupt or foreign file
        raise FormatError(f"{metadata_file}: cannot read Iceberg metadata: {type(error).__name__}: {error}") from error


def arrow_schema(location: Location, store: Store):
    """The current schema as Arrow, or None when there is no table."""
    table = static_table(location, store)
    return None if table is None else table.schema().as_arrow()


def table_state(dataset: str, location: Location, store: Store) -> TableState | None:
    """The table's current snapshot, tags and branches (the planner's input), or None."""
    from pyiceberg.table.refs import SnapshotRefType

    table = static_table(location, store)
    if table is None:
        return None
    metadata = table.metadata
    refs = []
    for name, ref in sorted(metadata.refs.items()):
        if name == "main":
            continue
        snapshot = metadata.snapshot_by_id(ref.snapshot_id)
        refs.append(TableRef(
            name=name, type=RefType.TAG if ref.snapshot_ref_type is SnapshotRefType.TAG else RefType.BRANCH,
            snapshot_id=ref.snapshot_id,
            snapshot_timestamp=datetime.fromtimestamp(snapshot.timestamp_ms / 1000, timezone.utc) if snapshot else None,
        ))
    return TableState(dataset=dataset, current_snapshot_id=metadata.current_snapshot_id, refs=tuple(refs))


def referenced_paths(location: Location, store: Store) -> Iterator[tuple[str, str]]:
    """(what, path) for every place the table's metadata points at: its ``location``, the
    write paths its properties set, every previous metadata file, statistics files, and for every
    retained snapshot its manifest list, manifests and data/delete files. A copied table folder
    keeps the original's absolute paths here: they are what Iceberg reads, writes, expires and
    deletes, whatever folder the metadata file itself sits in."""
    table = static_table(location, store)
    if table is None:
        return
    try:
        yield from _referenced(table)
    except FormatError:
        raise
    except Exception as error:  # a missing or corrupt manifest list or manifest: name it
        raise FormatError(f"cannot read the table's manifests: {type(error).__name__}: {error}") from error


def _referenced(table) -> Iterator[tuple[str, str]]:
    metadata = table.metadata
    yield "table location", metadata.location
    for key in ("write.data.path", "write.metadata.path", "write.object-storage.path", "write.folder-storage.path"):
        if metadata.properties.get(key):
            yield f"property {key}", metadata.properties[key]
    for entry in metadata.metadata_log:
        yield "previous metadata file", entry.metadata_file
    for statistics in getattr(metadata, "statistics", None) or ():
        yield "statistics file", statistics.statistics_path
    for statistics in getattr(metadata, "partition_statistics", None) or ():
        yield "partition statistics file", statistics.statistics_path
    seen_manifests: set[str] = set()
    for snapshot in metadata.snapshots:
        yield f"snapshot {snapshot.snapshot_id} manifest list", snapshot.manifest_list
        for manifest in snapshot.manifests(table.io):
            if manifest.manifest_path in seen_manifests:
                continue
            seen_manifests.add(manifest.manifest_path)
            yield "manifest", manifest.manifest_path
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=False):
                yield "data or delete file", entry.data_file.file_path


# ---- erasure on Spark ------------------------------------------------------------------------

_view_numbers = itertools.count(1)
# Spark key column types an equality-delete file can carry, and their Arrow types.
EQUALITY_KEY_TYPES = {"bigint": "int64", "int": "int32", "smallint": "int16", "string": "string"}
WORK_BRANCH_PREFIX = "piitracer_rewrite_"  # the working branch a tag's rewrite is committed to
DELETE_MODE = "write.delete.mode"
SAVED_DELETE_MODE = "piitracer.saved.write.delete.mode"  # the mode to put back after a rewrite_ref
# Iceberg's Parquet writer settings for Bloom filters (TableProperties, Iceberg 1.10): per column
# on/off and false-positive probability, and one size for every filter (Iceberg passes parquet-java
# no number of distinct values, so each filter is this size).
BLOOM_ENABLED = "write.parquet.bloom-filter-enabled.column."
BLOOM_FPP_PREFIX = "write.parquet.bloom-filter-fpp.column."
BLOOM_MAX_BYTES = "write.parquet.bloom-filter-max-bytes"
TARGET_FILE_SIZE = "write.target-file-size-bytes"
DEFAULT_TARGET_FILE_SIZE = 512 * 1024 * 1024  # Iceberg's default target file size


def _retain_clause(milliseconds: int) -> str:
    """``RETAIN n DAYS|HOURS|MINUTES`` text for a ref's max age (the largest whole unit)."""
    for unit, size in (("DAYS", 86_400_000), ("HOURS", 3_600_000), ("MINUTES", 60_000)):
        if milliseconds % size == 0:
            return f"{milliseconds // size} {unit}"
    return f"{max(milliseconds // 60_000, 1)} MINUTES"


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class IcebergEraser:
    """The Iceberg steps of one table, identified as ``catalog.db.table``."""

    def __init__(self, spark: "SparkSession", table: str, location: Location | None, store: Store | None = None) -> None:
        parts = table.split(".")
        if len(parts) != 3:
            raise SafetyError(f"Iceberg table {table!r}: expected catalog.db.table (set 'table:' in the catalog)")
        self.spark = spark
        self.catalog = parts[0]
        self.table = table
        self.quoted = ".".join(_quote(p) for p in parts)
        self.procedure_table = ".".join(parts[1:])  # procedures take the name without the catalog
        self.location = location
        self.store = store or Store()

    # ---- state ----------------------------------------------------------------------------

    def java_table(self):
        jvm = self.spark._jvm
        table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(self.spark._jsparkSession, self.table)
        table.refresh()
        return table

    def check_location(self) -> None:
        """Refuse when the table Spark loaded lives somewhere else than the catalogued location
        (a copied folder whose metadata names the original, another catalog's table): every
        write, expiry and orphan removal goes to the loaded table's own location."""
        if self.location is None:
            raise SafetyError(f"{self.table}: no catalogued location to check the table against")
        from piitracer.storage.guard import canonical

        loaded = str(self.java_table().location())
        if canonical(Location.parse(loaded)) != canonical(self.location):
            raise SafetyError(f"{self.table}: Spark's table lives at {loaded}, not at its catalogued location "
                              f"{self.location}: refusing to touch it")

    def snapshot_id(self) -> str | None:
        snapshot = self.java_table().currentSnapshot()
        return str(snapshot.snapshotId()) if snapshot is not None else None

    def count(self) -> int:
        return self.spark.table(self.quoted).count()

    # ---- steps ----------------------------------------------------------------------------

    def delete_rows(self, key_column: str, values: list[Any], attempt: Attempt | None = None) -> StepOutcome:
        """DELETE the rows whose key is one of ``values`` (bound as a temp view), checking that
        exactly the expected rows went (:meth:`_counted_delete`)."""
        def delete(subjects) -> dict[str, Any]:
            view = f"piitracer_subjects_{next(_view_numbers)}"
            subjects.createOrReplaceTempView(view)
            try:
                self.spark.sql(f"DELETE FROM {self.quoted} WHERE {_quote(key_column)} IN (SELECT {SUBJECT_COLUMN} FROM {view})")
            finally:
                self.spark.catalog.dropTempView(view)
            return {}
        return self._counted_delete(key_column, values, attempt, "delete", delete)

    def equality_delete(self, key_column: str, values: list[Any], attempt: Attempt | None = None) -> StepOutcome:
        """The subjects' keys as one equality-delete file (``delete_mode: equality``), committed
        with a RowDelta: no scan to find the rows' positions. Spark SQL cannot write equality
        deletes, so the file is Parquet written here (the key column with its Iceberg field id)
        and registered through the table API, without column statistics (no bounds in the
        manifests). It holds the keys until ``rewrite_data_files`` applies and removes it; a
        file a kill left uncommitted is an orphan that orphan removal takes. Only an
        unpartitioned table: a partitioned one would need a delete file per partition, which
        means a scan. The rows before and after are counted, as for a DELETE."""
        import uuid

        import pyarrow as pa
        import pyarrow.parquet as pq

        table = self.java_table()
        if table.spec().isPartitioned():
            fields = ", ".join(str(f.name()) for f in table.spec().fields())
            raise SafetyError(f"{self.table}: delete_mode 'equality' needs an unpartitioned table (this one is partitioned "
                              f"by {fields}): an equality delete per partition would need a scan; use 'positional'")
        spark_type = self.spark.table(self.quoted).schema[key_column].dataType.simpleString()
        arrow_type = EQUALITY_KEY_TYPES.get(spark_type)
        if arrow_type is None:
            raise SafetyError(f"{self.table}: delete_mode 'equality' takes a key column of type "
                              f"{', '.join(sorted(EQUALITY_KEY_TYPES))}; {key_column} is {spark_type}")

        def delete(subjects) -> dict[str, Any]:
            keys = sorted({row[0] for row in subjects.collect()}, key=repr)
            field = table.schema().findField(key_column)
            schema = pa.schema([pa.field(key_column, getattr(pa, arrow_type)(), nullable=False,
                                         metadata={b"PARQUET:field_id": str(field.fieldId()).encode()})])
            target = Location.parse(str(table.location())).child(f"data/piitracer-equality-delete-{uuid.uuid4().hex}.parquet")
            with self.store.open_output(target) as sink:
                pq.write_table(pa.table({key_column: pa.array(keys, schema.field(0).type)}, schema=schema), sink)
            jvm = self.spark._jvm
            ids = self.spark.sparkContext._gateway.new_array(jvm.int, 1)
            ids[0] = field.fieldId()
            file = (jvm.org.apache.iceberg.FileMetadata.deleteFileBuilder(table.spec()).ofEqualityDeletes(ids)
                    .withPath(target.uri).withFormat(jvm.org.apache.iceberg.FileFormat.PARQUET)
                    .withFileSizeInBytes(self.store.info(target).size).withRecordCount(len(keys)).build())
            table.newRowDelta().addDeletes(file).commit()
            self.spark.sql(f"REFRESH TABLE {self.quoted}")
            return {"equality_delete_keys": len(keys)}
        return self._counted_delete(key_column, values, attempt, "equality delete", delete)

    def _counted_delete(self, key_column: str, values: list[Any], attempt: Attempt | None, what: str,
                        delete: Callable[[Any], dict[str, Any]]) -> StepOutcome:
        """Run ``delete`` (given the subjects' values as a broadcast frame; it returns details)
        between two counts, checking that exactly the subjects' rows went. ``rows_deleted`` counts
        from the first attempt: after a kill between the commit and the journal's, the rows an
        earlier attempt removed count."""
        attempt = attempt or Attempt()
        frame = self.spark.table(self.quoted)
        subjects, expected = self._matching(frame, key_column, values)
        before, total_before = self.snapshot_id(), frame.count()
        first = attempt.start({"expected": expected, "version_before": before})
        earlier = int(first["expected"]) - expected  # the subjects' rows a killed attempt already removed
        outcome = StepOutcome(version_before=first["version_before"], version_after=before, rows_deleted=max(earlier, 0))
        if expected == 0:  # an Iceberg MERGE/DELETE with nothing to do still commits a snapshot
            outcome.details["matched"] = 0
            return outcome
        details = delete(subjects)
        failpoint("iceberg.delete.after_commit")  # test-only: committed, the journal does not know
        total_after = self.count()
        if total_after != total_before - expected:
            raise SafetyError(
                f"{self.table}: expected {total_before} - {expected} = {total_before - expected} rows after the {what}, "
                f"found {total_after}: stopping (a concurrent writer, or a delete that did not do what it should)")
        outcome.rows_deleted, outcome.version_after = outcome.rows_deleted + expected, self.snapshot_id()
        outcome.details.update(total_rows_after=total_after, **details)
        return outcome

    def _matching(self, frame, key_column: str, values: list[Any]):
        """(the subjects' values as a broadcast frame typed like ``key_column``, how many rows of
        ``frame`` hold one)."""
        from pyspark.sql import functions as F

        subjects = F.broadcast(subject_frame(self.spark, values, frame.schema[key_column].dataType))
        return subjects, frame.join(subjects, frame[key_column] == subjects[SUBJECT_COLUMN], "left_semi").count()

    def rewrite_data_files(self, options: dict[str, str], attempt: Attempt | None = None,
                           prepare: tuple[str, ...] = ()) -> StepOutcome:
        """Rewrite data files that have delete files, so the rows are gone from data files too;
        then remove the equality-delete files that rewrite applied (they hold the deleted keys).

        ``prepare`` (``verify.prepare``): the rewritten files get Bloom filters on those columns
        (:meth:`_bloom_filters_for_the_rewrite`); dictionary encoding and the page index are
        Iceberg's defaults and stay on."""
        option_map = ", ".join(f"'{k}', '{v}'" for k, v in sorted(options.items()))
        procedure = f"rewrite_data_files(table => '{self.procedure_table}', options => map({option_map}))"
        if not prepare:
            row = self._call(procedure)
        else:
            with self._bloom_filters_for_the_rewrite(prepare, options, attempt or Attempt()) as prepared:
                row = self._call(procedure)
        row["applied_equality_delete_files_removed"] = self._drop_applied_equality_deletes()
        outcome = self._physical(row, files_rewritten=row.get("rewritten_data_files_count", 0))
        if prepare:
            outcome.details.update(prepared)
        return outcome

    def _bloom_filters_for_the_rewrite(self, prepare: tuple[str, ...], options: dict[str, str], attempt: Attempt):
        """Set the table's Bloom filter properties on the columns of ``prepare`` it has, for one
        rewrite, then put every property back as it was (a table's write settings are its owner's:
        the pipelines' own writes keep theirs). The filter size is fitted to the rows of one file
        the rewrite writes (:meth:`_rows_per_rewritten_file`, ``bloom_filter_bytes``): Iceberg
        would otherwise write 1 MiB per column and file. The properties before are journaled
        first (``Attempt``), so a run killed with them set restores the original on resume, not
        the override. Yields the outcome details: which columns, and which properties were set
        and restored (names only)."""
        from contextlib import contextmanager

        @contextmanager
        def prepared():
            columns = self._bloomable_columns(prepare)
            wanted = {f"{BLOOM_ENABLED}{name}": "true" for name in columns}
            wanted.update({f"{BLOOM_FPP_PREFIX}{name}": str(BLOOM_FPP) for name in columns})
            if columns:
                wanted[BLOOM_MAX_BYTES] = str(bloom_filter_bytes(self._rows_per_rewritten_file(options)))
            current = self.java_table().properties()
            first = attempt.start({"table_properties_before": {
                name: (None if current.get(name) is None else str(current.get(name))) for name in sorted(wanted)}})
            before = first["table_properties_before"]
            # An owner's own Bloom filter setting on a column stays (only absent ones are added).
            wanted = {name: value for name, value in wanted.items()
                      if name == BLOOM_MAX_BYTES or before.get(name) is None}
            self._set_properties(wanted)
            try:
                yield {"prepared_for_proof": ", ".join(columns) or "none of the columns has a Bloom filter type",
                       "table_properties_set_and_restored": ", ".join(sorted(wanted))}
            finally:
                self._set_properties({name: before.get(name) for name in {*wanted, *before}})
        return prepared()

    def _bloomable_columns(self, prepare: tuple[str, ...]) -> list[str]:
        """The table's top-level columns among ``prepare`` (as the table spells them) whose type
        can carry a Parquet Bloom filter (a primitive other than boolean)."""
        wanted = set(prepare)
        found = []
        for column in self.java_table().schema().columns():
            kind = column.type()
            if str(column.name()).lower() in wanted and kind.isPrimitiveType() and str(kind.typeId()) != "BOOLEAN":
                found.append(str(column.name()))
        return found

    def _rows_per_rewritten_file(self, options: dict[str, str]) -> int:
        """How many rows one file the rewrite writes will hold, at most about: the data files with
        delete files are what it takes; it writes each partition's rows (an output file never
        mixes partitions) in files of the target size (the rewrite's ``target-file-size-bytes``,
        else the table's ``write.target-file-size-bytes``, else Iceberg's 512 MiB), so the rows
        of one partition, or as many as fit the target size at those files' bytes per row,
        whichever is fewer."""
        properties = self.java_table().properties()
        target = int(options.get("target-file-size-bytes") or properties.get(TARGET_FILE_SIZE)
                     or DEFAULT_TARGET_FILE_SIZE)
        found: dict[tuple[int, str], list[int]] = {}
        tasks = self.java_table().newScan().planFiles()
        try:
            iterator = tasks.iterator()
            while iterator.hasNext():
                task = iterator.next()
                if not task.deletes().isEmpty():
                    file = task.file()
                    totals = found.setdefault((int(file.specId()), str(file.partition())), [0, 0])
                    totals[0] += int(file.recordCount())
                    totals[1] += int(file.fileSizeInBytes())
        finally:
            tasks.close()
        return max((min(rows, -(-target * rows // max(size, 1))) for rows, size in found.values()), default=0)

    def _set_properties(self, properties: dict[str, str | None]) -> None:
        """One commit of table properties through the table API (names never pasted into SQL);
        None removes a property."""
        if not properties:
            return
        update = self.java_table().updateProperties()
        for name, value in sorted(properties.items()):
            update = update.remove(name) if value is None else update.set(name, value)
        update.commit()
        self.spark.sql(f"REFRESH TABLE {self.quoted}")

    def _drop_applied_equality_deletes(self) -> int:
        """Remove, with one ``RewriteFiles`` commit, every equality-delete file no live data file
        is subject to any more: each holds the keys it deleted (a subject's among them, for a
        daily batch of erasure requests or a CDC upsert), and neither ``remove-dangling-deletes``
        nor the dangling-delete action removed them on this Iceberg version (checked: an
        unpartitioned table kept its applied file). An equality delete applies to data files of
        a lower data sequence number in its partition (in every partition when its spec is
        unpartitioned); so it is applied when no such live file is left. With more than one
        partition spec among the data files the whole table is compared (conservative)."""
        jvm = self.spark._jvm
        table = self.java_table()
        snapshot = table.currentSnapshot()
        if snapshot is None:
            return 0
        io, specs = table.io(), table.specs()
        equality = []
        for manifest in snapshot.deleteManifests(io):
            reader = jvm.org.apache.iceberg.ManifestFiles.readDeleteManifest(manifest, io, specs)
            try:
                files = reader.iterator()
                while files.hasNext():
                    delete = files.next()
                    if str(delete.content()) == "EQUALITY_DELETES":
                        equality.append(delete.copy())
            finally:
                reader.close()
        if not equality:
            return 0
        lowest: dict[tuple[int, str], int] = {}
        spec_ids: set[int] = set()
        for manifest in snapshot.dataManifests(io):
            reader = jvm.org.apache.iceberg.ManifestFiles.read(manifest, io, specs)
            try:
                files = reader.iterator()
                while files.hasNext():
                    data = files.next()
                    key = (int(data.specId()), str(data.partition()))
                    spec_ids.add(key[0])
                    lowest[key] = min(lowest.get(key, 2**63), int(data.dataSequenceNumber()))
            finally:
                reader.close()
        table_lowest = min(lowest.values(), default=2**63)
        applied = []
        for delete in equality:
            global_delete = specs.get(delete.specId()).isUnpartitioned() or len(spec_ids) > 1
            floor = table_lowest if global_delete else lowest.get((int(delete.specId()), str(delete.partition())), 2**63)
            if int(delete.dataSequenceNumber()) < floor:
                applied.append(delete)
        if applied:
            rewrite = table.newRewrite()
            for delete in applied:
                rewrite = rewrite.deleteFile(delete)
            rewrite.commit()
        return len(applied)

    def rewrite_manifests(self) -> StepOutcome:
        row = self._call(f"rewrite_manifests('{self.procedure_table}')")
        return self._physical(row, files_rewritten=row.get("rewritten_manifests_count", 0))

    def expire_snapshots(self, retain_last: int = 1, clean_expired_files: bool = True,
                         attempt: Attempt | None = None) -> StepOutcome:
        """Expire every snapshot older than now but the last ``retain_last``.

        ``clean_expired_files=False`` (shallow clones) expires the snapshots without deleting the
        files they alone referenced: those may be another table's files. The SQL procedure has no
        such switch, so that case goes through the table API."""
        if not clean_expired_files:
            def metadata_only() -> dict[str, Any]:
                now_ms = int(time.time() * 1000) + 1000
                (self.java_table().expireSnapshots().expireOlderThan(now_ms).retainLast(int(retain_last))
                 .cleanExpiredFiles(False).commit())
                return {"clean_expired_files": "false"}
            return self._with_listing(metadata_only, attempt)
        moment = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        return self._with_listing(lambda: self._call(
            f"expire_snapshots(table => '{self.procedure_table}', older_than => TIMESTAMP '{moment}', retain_last => {int(retain_last)})"),
            attempt)

    def remove_orphan_files(self, attempt: Attempt | None = None) -> StepOutcome:
        """Delete files under the table location that no snapshot references, through the action
        API: the SQL procedure refuses an ``older_than`` under 24 hours. Only safe with no
        concurrent writer (its uncommitted files look like orphans)."""
        def action() -> dict[str, Any]:
            jvm = self.spark._jvm
            now_ms = int(time.time() * 1000) + 1000
            result = (jvm.org.apache.iceberg.spark.actions.SparkActions.get(self.spark._jsparkSession)
                      .deleteOrphanFiles(self.java_table()).olderThan(now_ms).execute())
            return {"orphan_files": len(list(result.orphanFileLocations()))}
        return self._with_listing(action, attempt)

    def drop_ref(self, name: str, ref_type: str) -> StepOutcome:
        kind = "TAG" if ref_type == "tag" else "BRANCH"
        before = self.snapshot_id()
        self.spark.sql(f"ALTER TABLE {self.quoted} DROP {kind} IF EXISTS {_quote(name)}")
        return StepOutcome(version_before=before, version_after=self.snapshot_id(),
                           details={"dropped": f"{kind.lower()} {name}", "ref": name, "ref_type": ref_type})

    def rewrite_ref(self, name: str, ref_type: str, key_column: str, values: list[Any],
                    attempt: Attempt | None = None) -> StepOutcome:
        """Remove the subjects' rows from a tag's or branch's snapshot without dropping the ref.

        A branch gets a copy-on-write DELETE committed to it (only the data files holding a
        subject are rewritten; every other file is shared), then one more commit that rewrites
        the manifests carrying the DELETE's tombstones (a DELETED entry keeps the removed file's
        column bounds, which can be a subject's value). A tag gets the same on a working branch
        made at its snapshot, and is then moved there with its retention (``REPLACE TAG``).

        Only Iceberg's own commits are used. The tag is moved only after the new snapshot is
        complete, so it never points at a snapshot expiry may remove. A rerun finds the ref
        without the subjects and only tidies up (a working branch left by a kill is dropped
        and the work redone)."""
        attempt = attempt or Attempt()
        self._restore_delete_mode()  # a killed attempt may have left its copy-on-write switch on
        refs = self._refs()
        if name not in refs or refs[name][0] != ref_type:
            raise SafetyError(f"{self.table}: {ref_type} '{name}' is not there any more (found {sorted(refs)}): "
                              "plan again")
        _, old, max_age_ms = refs[name]
        first = attempt.start({"snapshot_before": str(old)})
        work = name if ref_type == "branch" else f"{WORK_BRANCH_PREFIX}{name}"
        rows = self._matching(self.spark.sql(f"SELECT * FROM {self.quoted} VERSION AS OF {old}"), key_column, values)[1]
        if ref_type == "tag":
            self.spark.sql(f"ALTER TABLE {self.quoted} DROP BRANCH IF EXISTS {_quote(work)}")
            if rows == 0:
                return self._ref_outcome(name, ref_type, first["snapshot_before"], old, 0, 0)
            self.spark.sql(f"ALTER TABLE {self.quoted} CREATE BRANCH {_quote(work)} AS OF VERSION {old}")
        branch = f"{self.quoted}.{_quote('branch_' + work)}"
        rewritten = 0
        if rows:
            total_before = self.spark.table(branch).count()
            before_files = self._data_file_count(work)
            view = f"piitracer_subjects_{next(_view_numbers)}"
            frame = self.spark.table(branch)
            subject_frame(self.spark, values, frame.schema[key_column].dataType).createOrReplaceTempView(view)
            try:
                with self._copy_on_write_deletes():
                    self.spark.sql(f"DELETE FROM {branch} WHERE {_quote(key_column)} IN (SELECT {SUBJECT_COLUMN} FROM {view})")
            finally:
                self.spark.catalog.dropTempView(view)
            total_after = self.spark.table(branch).count()
            if total_after != total_before - rows:
                raise SafetyError(f"{self.table}: {ref_type} '{name}' held {total_before} rows, {rows} of the subjects'; "
                                  f"{total_after} are left: stopping (a concurrent writer on the ref?)")
            rewritten = max(before_files - self._data_file_count(work), 0) + self._added_by_head(work)
        kept = self._drop_tombstones(work)
        failpoint("iceberg.rewrite_ref.before_move")  # test-only: new snapshot written, the tag not yet moved
        new = self._refs()[work][1]
        if ref_type == "tag":
            retain = f" RETAIN {_retain_clause(max_age_ms)}" if max_age_ms else ""
            self.spark.sql(f"ALTER TABLE {self.quoted} REPLACE TAG {_quote(name)} AS OF VERSION {new}{retain}")
            self.spark.sql(f"ALTER TABLE {self.quoted} DROP BRANCH IF EXISTS {_quote(work)}")
        outcome = self._ref_outcome(name, ref_type, first["snapshot_before"], new, rows, rewritten)
        if kept:
            outcome.details["manifests_keeping_tombstones"] = kept
        return outcome

    def _refs(self) -> dict[str, tuple[str, int, int | None]]:
        """name -> (tag|branch, snapshot id, max reference age in ms)."""
        rows = self.spark.sql(f"SELECT name, type, snapshot_id, max_reference_age_in_ms FROM {self.quoted}.refs").collect()
        return {r["name"]: (r["type"].lower(), int(r["snapshot_id"]), r["max_reference_age_in_ms"]) for r in rows}

    def _data_file_count(self, ref: str) -> int:
        snapshot = self.java_table().snapshot(ref)
        return int(snapshot.summary().get("total-data-files") or 0) if snapshot is not None else 0

    def _added_by_head(self, ref: str) -> int:
        snapshot = self.java_table().snapshot(ref)
        return int(snapshot.summary().get("added-data-files") or 0) if snapshot is not None else 0

    def _ref_outcome(self, name: str, ref_type: str, before: str, after: int, rows: int, rewritten: int) -> StepOutcome:
        return StepOutcome(rows_deleted=rows, files_rewritten=rewritten, version_before=str(before),
                           version_after=str(after), details={
                               "ref": name, "ref_type": ref_type, "ref_snapshot_before": str(before),
                               "ref_snapshot_after": str(after), "ref_rows_removed": rows,
                               "ref_data_files_rewritten": rewritten})

    def _copy_on_write_deletes(self):
        """Switch the table's DELETEs to copy-on-write for one statement: Iceberg 1.10 takes the
        mode from the table only, and a merge-on-read DELETE would leave the rows in the data
        files a ref keeps. The old mode is saved in a table property first, so a kill between
        the switch and its undo is undone by the next attempt (:meth:`_restore_delete_mode`). A
        concurrent writer's DELETE meanwhile is still correct, only rewritten instead of marked."""
        from contextlib import contextmanager

        @contextmanager
        def switched():
            mode = self.java_table().properties().get(DELETE_MODE)
            if mode is None or str(mode) == "copy-on-write":
                yield
                return
            self.spark.sql(f"ALTER TABLE {self.quoted} SET TBLPROPERTIES ('{SAVED_DELETE_MODE}'='{mode}', "
                           f"'{DELETE_MODE}'='copy-on-write')")
            try:
                failpoint("iceberg.rewrite_ref.copy_on_write")  # test-only: the switch is on, nothing deleted yet
                yield
            finally:
                self._restore_delete_mode()
        return switched()

    def _restore_delete_mode(self) -> None:
        saved = self.java_table().properties().get(SAVED_DELETE_MODE)
        if saved is not None:
            self.spark.sql(f"ALTER TABLE {self.quoted} SET TBLPROPERTIES ('{DELETE_MODE}'='{saved}')")
            self.spark.sql(f"ALTER TABLE {self.quoted} UNSET TBLPROPERTIES ('{SAVED_DELETE_MODE}')")

    def _drop_tombstones(self, ref: str) -> int:
        """Commit once more to ``ref`` so no manifest of its snapshot keeps a DELETED entry of the
        ref's own last commit (they carry the removed files' column bounds). Iceberg 1.10 cannot
        rewrite a branch's manifests (``rewriteManifests().toBranch`` is refused), but a commit
        that replaces one live file of a manifest rewrites that manifest without the earlier
        tombstones, and drops manifests holding nothing but tombstones. The replaced file is a
        byte copy of itself: the rows do not change. Returns how many manifests keep their
        tombstones because every live file in them has delete files (verify decodes them)."""
        jvm = self.spark._jvm
        table = self.java_table()
        head = table.snapshot(ref)
        if head is None:
            return 0
        with_tombstones = [m for m in head.dataManifests(table.io())
                           if m.snapshotId() == head.snapshotId() and m.hasDeletedFiles()]
        if not with_tombstones:
            return 0
        # A copy at another path would shed the position deletes that name the original: only a
        # file no delete file applies to may be copied.
        with_deletes = set()
        tasks = table.newScan().useRef(ref).planFiles()
        try:
            iterator = tasks.iterator()
            while iterator.hasNext():
                task = iterator.next()
                if not task.deletes().isEmpty():
                    with_deletes.add(str(task.file().location()))
        finally:
            tasks.close()
        overwrite = table.newOverwrite().toBranch(ref)
        kept = 0
        for manifest in with_tombstones:
            reader = jvm.org.apache.iceberg.ManifestFiles.read(manifest, table.io())
            original, live_files = None, 0
            try:
                live = reader.iterator()
                while live.hasNext() and original is None:
                    candidate = live.next()
                    live_files += 1
                    if str(candidate.location()) not in with_deletes:
                        original = candidate.copy()
            finally:
                reader.close()
            if original is None:
                kept += live_files > 0  # tombstones only: any commit drops the manifest; else they stay
                continue
            path = str(original.location())
            folder, base = path.rsplit("/", 1)
            copy_path = f"{folder}/piitracer-copy-{next(_view_numbers)}-{int(time.time() * 1000)}-{base}"
            conf = self.spark._jsc.hadoopConfiguration()
            source = jvm.org.apache.hadoop.fs.Path(path)
            filesystem = source.getFileSystem(conf)
            jvm.org.apache.hadoop.fs.FileUtil.copy(filesystem, source, filesystem, jvm.org.apache.hadoop.fs.Path(copy_path),
                                                    False, conf)
            spec = table.specs().get(original.specId())
            copy = jvm.org.apache.iceberg.DataFiles.builder(spec).copy(original).withPath(copy_path).build()
            overwrite = overwrite.deleteFile(original).addFile(copy)
        overwrite.commit()
        return kept

    # ---- helpers --------------------------------------------------------------------------

    def _call(self, procedure: str) -> dict[str, Any]:
        rows = self.spark.sql(f"CALL {_quote(self.catalog)}.system.{procedure}").collect()
        return rows[0].asDict() if rows else {}

    def _physical(self, row: dict[str, Any], files_rewritten: int) -> StepOutcome:
        return StepOutcome(files_rewritten=int(files_rewritten or 0), version_after=self.snapshot_id(),
                           details={k: v for k, v in row.items() if isinstance(v, (int, str))})

    def _with_listing(self, action, attempt: Attempt | None = None) -> StepOutcome:
        """Run a file-removing action and count what it removed since the step's first attempt."""
        before_files = removed_since_first_attempt(self.location, self.store, attempt) if self.location else {}
        before = self.snapshot_id()
        details = action()
        after = self.store.sizes(self.location) if self.location else {}
        files, size = removed_between(before_files, after)
        return StepOutcome(files_removed=files, bytes_removed=size, version_before=before,
                           version_after=self.snapshot_id(), details={k: v for k, v in details.items() if isinstance(v, (int, str))})


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


PERFORM = {
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


DESCRIBE = {
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


def source_rows(spark, entry: CatalogDataset, location: Location, store: Store):
    """The table's rows as Spark reads them by identifier (after the same location check as the
    erasing steps: a read-only step obeys the guard too)."""
    if not entry.table:
        raise SafetyError(f"cannot read source {location}: an Iceberg dataset needs 'table:' in the catalog")
    IcebergEraser(spark, entry.table, location, store).check_location()
    return spark.table(entry.table)


# ---- what the verifier reads ----------------------------------------------------------------------

def files(root: Location, store: Store) -> TableFiles:
    """Which files the current snapshot uses (data/delete files, manifests, manifest list), which
    only older retained snapshots use, and which a tag or branch holds."""
    found = TableFiles()
    table = static_table(root, store)
    if table is None:
        found.problems.append("no Iceberg metadata.json under metadata/")
        return found
    metadata = table.metadata
    current = metadata.current_snapshot_id
    refs = _ref_names(metadata)
    entries_cache: dict[str, list] = {}
    for snapshot in metadata.snapshots:
        is_current = snapshot.snapshot_id == current
        used: set[str] = set()
        meta: set[str] = {relative_to(root, snapshot.manifest_list) or ""}
        for manifest in snapshot.manifests(table.io):
            meta.add(relative_to(root, manifest.manifest_path) or "")
            if manifest.manifest_path not in entries_cache:
                entries_cache[manifest.manifest_path] = manifest.fetch_manifest_entry(table.io, discard_deleted=False)
            for entry in entries_cache[manifest.manifest_path]:
                path = relative_to(root, entry.data_file.file_path)
                deleted = int(entry.status) == 2  # ManifestEntryStatus.DELETED: tombstone, file not live
                if path and not (is_current and deleted):
                    used.add(path)
        meta.discard("")
        if is_current:
            found.live |= used
            found.current_meta |= meta
        else:
            found.retained |= used | meta
        if snapshot.snapshot_id in refs:
            for path in used | meta:
                found.ref_files.setdefault(path, refs[snapshot.snapshot_id])
    found.retained -= found.live | found.current_meta
    return found


def versions(root: Location, store: Store, key_column: str) -> Iterator[VersionRows]:
    """Every retained snapshot read back (pyiceberg), its key column."""
    table = static_table(root, store)
    if table is None:
        return
    metadata = table.metadata
    refs = _ref_names(metadata)
    for snapshot in metadata.snapshots:
        current, ref = snapshot.snapshot_id == metadata.current_snapshot_id, refs.get(snapshot.snapshot_id)
        try:
            rows = table.scan(snapshot_id=snapshot.snapshot_id, selected_fields=(key_column,)).to_arrow()
            keys = rows.column(key_column).combine_chunks() if key_column in rows.column_names else None
        except Exception as error:  # e.g. equality deletes, which pyiceberg 0.12 cannot read
            try:
                keys = _keys_applying_deletes(table, snapshot, key_column, root, store)
            except Exception as fallback:  # noqa: BLE001 - said in the report, the files are still decoded
                yield VersionRows(str(snapshot.snapshot_id), current, ref=ref, problem=(
                    f"snapshot {snapshot.snapshot_id} could not be read back ({type(error).__name__}; "
                    f"reading its files directly: {type(fallback).__name__})"))
                continue
        yield VersionRows(str(snapshot.snapshot_id), current, keys, ref)


def _keys_applying_deletes(table, snapshot, key_column: str, root: Location, store: Store):
    """A snapshot's key column read from its files directly, for what pyiceberg 0.12 cannot scan
    (equality deletes). Following the Iceberg spec: a position delete applies to the data file
    it names when its sequence number is not lower than the file's; an equality delete applies to
    data files of a lower sequence number in its partition (in every partition when its spec is
    unpartitioned), to each row whose equality columns equal a row of the delete file. Columns
    are matched by name in the files of the current schema."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from pyiceberg.manifest import DataFileContent

    def read(path: str, columns: list[str]):
        """The named columns a file has (a file written before a column was added lacks it)."""
        with store.open_input(root.resolve_reference(path)) as handle:
            parquet = pq.ParquetFile(handle)
            return parquet.read(columns=[c for c in columns if c in parquet.schema_arrow.names])

    schema, specs = table.metadata.schema(), table.metadata.specs()
    data, positional, equality = [], [], []
    for manifest in snapshot.manifests(table.io):
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            found = (entry.data_file, entry.sequence_number or 0)
            {DataFileContent.DATA: data, DataFileContent.POSITION_DELETES: positional}.get(
                entry.data_file.content, equality).append(found)
    deleted_positions: dict[str, list[tuple[int, int]]] = {}
    for delete, sequence in positional:
        rows = read(delete.file_path, ["file_path", "pos"])
        for path, position in zip(rows.column("file_path").to_pylist(), rows.column("pos").to_pylist()):
            deleted_positions.setdefault(path, []).append((position, sequence))
    equality_sets = []
    for delete, sequence in equality:
        names = [schema.find_field(field_id).name for field_id in delete.equality_ids]
        rows = read(delete.file_path, names)
        equality_sets.append((names, set(zip(*(rows.column(n).to_pylist() for n in names))), sequence,
                              specs[delete.spec_id].is_unpartitioned(), delete.spec_id, delete.partition))
    parts = []
    for file, sequence in data:
        wanted = sorted({key_column, *(n for names, *_ in equality_sets for n in names)})
        rows = read(file.file_path, wanted)
        keep = [True] * rows.num_rows
        for position, delete_sequence in deleted_positions.get(file.file_path, ()):
            if delete_sequence >= sequence and position < rows.num_rows:
                keep[position] = False
        for names, values, delete_sequence, everywhere, spec_id, partition in equality_sets:
            if delete_sequence <= sequence or not (everywhere or (spec_id, partition) == (file.spec_id, file.partition)):
                continue
            if not all(n in rows.column_names for n in names):
                continue  # the file predates the column: its rows hold null there, which no delete names here
            for number, row in enumerate(zip(*(rows.column(n).to_pylist() for n in names))):
                if row in values:
                    keep[number] = False
        if key_column in rows.column_names:
            parts.append(pc.filter(rows.column(key_column).combine_chunks(), pa.array(keep)))
    return pa.concat_arrays(parts) if parts else None


def _ref_names(metadata) -> dict[int, str]:
    return {ref.snapshot_id: name for name, ref in metadata.refs.items() if name != "main"}


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


def candidate_files(location: Location, store: Store, key_column: str | None, values: list[Any] | None):
    """(file, size) of the current snapshot's data files whose manifest bounds admit a value."""
    from pyiceberg.expressions import AlwaysTrue, In

    table = static_table(location, store)
    if table is None or table.current_snapshot() is None:
        return []
    row_filter = In(key_column, values) if values is not None and key_column else AlwaysTrue()
    return sorted((task.file.file_path, int(task.file.file_size_in_bytes))
                  for task in table.scan(row_filter=row_filter).plan_files())


# ---- catalog discovery ----------------------------------------------------------------------------

def table_folder(parts: tuple[str, ...]) -> str | None:
    """``<table>/metadata/<n>.metadata.json`` marks an Iceberg table at ``<table>``."""
    if len(parts) >= 2 and parts[-2] == "metadata" and parts[-1].endswith((".metadata.json", ".metadata.json.gz")):
        return "/".join(parts[:-2])
    return None


def table_facts(location: Location, store: Store) -> TableFacts:
    """Schema, write mode (``write.delete.mode``; Iceberg's default is copy-on-write), retention
    properties, format version, tags and branches with their max-ref-age, partition columns, and
    where the current snapshot's data files live."""
    from pyiceberg.table.refs import SnapshotRefType

    from piitracer.model.table_properties import ICEBERG_DELETE_MODE, iceberg_retention
    from piitracer.model.workspace import IcebergWriteMode, duration_text

    table = static_table(location, store)
    if table is None:
        raise FormatError(f"{location}: no Iceberg metadata file")
    metadata = table.metadata
    properties = dict(metadata.properties)
    retention, problems = iceberg_retention(properties)
    mode = properties.get(ICEBERG_DELETE_MODE, IcebergWriteMode.COPY_ON_WRITE.value)
    refs = []
    for name, ref in sorted(metadata.refs.items()):
        if name != "main":
            kind = "tag" if ref.snapshot_ref_type is SnapshotRefType.TAG else "branch"
            age = f" (max-ref-age {duration_text(timedelta(milliseconds=ref.max_ref_age_ms))})" if ref.max_ref_age_ms else ""
            refs.append(f"{kind} {name}{age}")
    schema = table.schema()
    return TableFacts(
        columns=tuple(f.name.lower() for f in schema.fields),
        write_mode=IcebergWriteMode(mode) if mode in {m.value for m in IcebergWriteMode} else None,
        retention=retention, format_version=int(metadata.format_version), refs=tuple(refs),
        partition_columns=tuple(schema.find_field(f.source_id).name for f in metadata.spec().fields),
        data_folders=tuple(sorted(_data_file_folders(table))), problems=tuple(problems))


def _data_file_folders(table) -> set[str]:
    """The folders of the current snapshot's data files (one file per manifest says where that
    manifest's files live)."""
    snapshot = table.current_snapshot()
    if snapshot is None:
        return set()
    found = set()
    for manifest in snapshot.manifests(table.io):
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            found.add(entry.data_file.file_path.removeprefix("file:").rsplit("/", 1)[0])
            break
    return found


def sample_rows(location: Location, store: Store, limit: int):
    """At most ``limit`` current rows (pyiceberg scan with a limit)."""
    table = static_table(location, store)
    return None if table is None else table.scan(limit=limit).to_arrow()


SUPPORT = FormatSupport(
    format=DatasetFormat.ICEBERG, perform=PERFORM, describe=DESCRIBE,
    spark_actions=frozenset(PERFORM), spark_table=True, schema=arrow_schema, newest_metadata=newest_metadata_file,
    referenced_paths=referenced_paths, keeps_refs=True, table_state=table_state, source_rows=source_rows, files=files,
    versions=versions, version_word="snapshot", file_removers=file_removers, logical_removers=logical_removers,
    candidate_files=candidate_files, estimate_basis="Iceberg manifest bounds (scan plan)",
    table_folder=table_folder, table_facts=table_facts, sample_rows=sample_rows,
)
