"""Iceberg's erasure on Spark (shared/lakehouse-notes.md: the logical delete, ``rewrite_data_files``
applies delete files, ``rewrite_manifests`` drops the DELETED entries that keep column bounds,
``expire_snapshots``, then orphan removal; tags and branches rewritten or released), for the
format module :mod:`~piitracer.formats.iceberg`, whose performers call :class:`IcebergEraser`."""

from __future__ import annotations

import itertools
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable

from piitracer.formats.iceberg_spark import UNAVAILABLE
from piitracer.formats.prepare import BLOOM_FPP, bloom_filter_bytes
from piitracer.formats.values import SUBJECT_COLUMN, subject_frame
from piitracer.model.outcome import Attempt, SafetyError, StepOutcome
from piitracer.storage.disk import removed_between, removed_since_first_attempt
from piitracer.storage.failpoints import failpoint
from piitracer.storage.locations import Location
from piitracer.storage.store import Store

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


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
        self.check_catalog()
        from piitracer.storage.guard import canonical

        loaded = str(self.java_table().location())
        if canonical(Location.parse(loaded)) != canonical(self.location):
            raise SafetyError(f"{self.table}: Spark's table lives at {loaded}, not at its catalogued location "
                              f"{self.location}: refusing to touch it")

    def check_catalog(self) -> None:
        """Refuse, saying why, when the Spark session has no catalog of the table's name (the
        session records why it left a configured catalog out: ``iceberg_spark.UNAVAILABLE``)."""
        reason = self.spark.conf.get(UNAVAILABLE.format(name=self.catalog.lower()), None)
        if reason:
            raise SafetyError(f"{self.table}: Spark cannot reach Iceberg catalog {self.catalog!r}: {reason}")
        if self.spark.conf.get(f"spark.sql.catalog.{self.catalog}", None) is None:
            raise SafetyError(f"{self.table}: Spark has no Iceberg catalog {self.catalog!r}: define it under iceberg.catalogs "
                              f"(or PYICEBERG_CATALOG__{self.catalog.upper()}__*), or set the table's catalog in 'table:'")

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
