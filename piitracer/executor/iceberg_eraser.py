"""Iceberg erasure on Spark: the logical delete and the steps that make the bytes go
(shared/lakehouse-notes.md: rewrite_data_files applies delete files, rewrite_manifests drops the
DELETED entries that keep column bounds, expire_snapshots, then orphan removal)."""

from __future__ import annotations

import itertools
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from piitracer.executor.disk import removed_between, removed_since_first_attempt
from piitracer.executor.failpoints import failpoint
from piitracer.executor.outcome import Attempt, SafetyError, StepOutcome
from piitracer.executor.resolve import SUBJECT_COLUMN, subject_frame
from piitracer.storage.locations import Location
from piitracer.storage.store import Store

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_view_numbers = itertools.count(1)


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
        exactly the expected rows went. ``rows_deleted`` counts from the first attempt: after a kill
        between the DELETE's commit and the journal's, the rows an earlier attempt removed count."""
        from pyspark.sql import functions as F

        attempt = attempt or Attempt()
        frame = self.spark.table(self.quoted)
        subjects = F.broadcast(subject_frame(self.spark, values, frame.schema[key_column].dataType))
        expected = frame.join(subjects, frame[key_column] == subjects[SUBJECT_COLUMN], "left_semi").count()
        before, total_before = self.snapshot_id(), frame.count()
        first = attempt.start({"expected": expected, "version_before": before})
        earlier = int(first["expected"]) - expected  # the subjects' rows a killed attempt already removed
        outcome = StepOutcome(version_before=first["version_before"], version_after=before, rows_deleted=max(earlier, 0))
        if expected == 0:  # an Iceberg MERGE/DELETE with nothing to do still commits a snapshot
            outcome.details["matched"] = 0
            return outcome
        view = f"piitracer_subjects_{next(_view_numbers)}"
        subjects.createOrReplaceTempView(view)
        try:
            self.spark.sql(f"DELETE FROM {self.quoted} WHERE {_quote(key_column)} IN (SELECT {SUBJECT_COLUMN} FROM {view})")
        finally:
            self.spark.catalog.dropTempView(view)
        failpoint("iceberg.delete.after_commit")  # test-only: the DELETE is committed, the journal does not know
        total_after = self.count()
        if total_after != total_before - expected:
            raise SafetyError(
                f"{self.table}: expected {total_before} - {expected} = {total_before - expected} rows after the delete, "
                f"found {total_after}: stopping (a concurrent writer, or a delete that did not do what it should)")
        outcome.rows_deleted, outcome.version_after = outcome.rows_deleted + expected, self.snapshot_id()
        outcome.details["total_rows_after"] = total_after
        return outcome

    def rewrite_data_files(self, options: dict[str, str]) -> StepOutcome:
        """Rewrite data files that have delete files, so the rows are gone from data files too."""
        option_map = ", ".join(f"'{k}', '{v}'" for k, v in sorted(options.items()))
        row = self._call(f"rewrite_data_files(table => '{self.procedure_table}', options => map({option_map}))")
        return self._physical(row, files_rewritten=row.get("rewritten_data_files_count", 0))

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
        return StepOutcome(version_before=before, version_after=self.snapshot_id(), details={"dropped": f"{kind.lower()} {name}"})

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
