"""Counting a snapshot's rows through pyiceberg, as the Iceberg steps check their commits: the
subjects' rows (a predicate; the files that may hold them read together, only the key column
decoded) and every row (from the manifest list alone where that is exact)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyiceberg.table import Table


def count(table: "Table", snapshot, predicate=None) -> int:
    """Rows of ``snapshot`` (matching ``predicate``), delete files applied; 0 for no snapshot.

    pyiceberg's ``DataScan.count`` rule: a file the predicate's residual keeps whole and that has
    no delete files counts by its record count; every other file is read with the filter and its
    delete files applied. Unlike ``DataScan.count`` (one file after another, every column), those
    files are read together and only the predicate's column is decoded."""
    if snapshot is None:
        return 0
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan

    scan = table.scan(row_filter=predicate if predicate is not None else AlwaysTrue(), snapshot_id=snapshot.snapshot_id,
                      selected_fields=_predicate_columns(predicate))
    whole, read = 0, []
    for task in scan.plan_files():
        if task.residual == AlwaysTrue() and not task.delete_files:
            whole += task.file.record_count
        else:
            read.append(task)
    if not read:
        return whole
    rows = ArrowScan(table_metadata=table.metadata, io=table.io, projected_schema=scan.projection(),
                     row_filter=scan.row_filter, case_sensitive=scan.case_sensitive).to_table(read)
    return whole + rows.num_rows


def _predicate_columns(predicate) -> tuple[str, ...]:
    """The column ``In``/``EqualTo`` (as :meth:`PyicebergEraser.subjects` builds) test; every
    column otherwise."""
    name = getattr(getattr(predicate, "term", None), "name", None)
    return (name,) if isinstance(name, str) else ("*",)


def live_rows(table: "Table", snapshot) -> int:
    """Rows of ``snapshot``, delete files applied; 0 for no snapshot. Without delete manifests,
    from its manifest list alone: each data manifest's added and existing row counts, the sums of
    the record counts of its ADDED and EXISTING entries, which is what :func:`count` adds up entry
    by entry after reading every manifest (one read instead of one per manifest). When a count is
    missing (optional in format v1) or a delete manifest is there: :func:`count`."""
    if snapshot is None:
        return 0
    from pyiceberg.manifest import ManifestContent

    manifests = snapshot.manifests(table.io)
    if all(m.content == ManifestContent.DATA and m.added_rows_count is not None and m.existing_rows_count is not None
           for m in manifests):
        return sum(m.added_rows_count + m.existing_rows_count for m in manifests)
    return count(table, snapshot)
