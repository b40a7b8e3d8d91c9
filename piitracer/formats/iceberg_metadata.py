"""Reading an Iceberg table's metadata, for the format module :mod:`~piitracer.formats.iceberg`
(the table itself, read from the metadata file that is its current state, is
:func:`~piitracer.formats.iceberg_table.static_table`): the table's state and
every path its metadata names (the location guard), every retained snapshot read back through
pyiceberg (the logical check of a table whose history is not derived from its manifests, and the
reference the derivation is tested against; the verifier's files and derived history are
:mod:`~piitracer.formats.iceberg_history`), the estimate's candidate files and what catalog
discovery reads of a table."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Iterator

from piitracer.formats import FormatError, TableFacts, VersionRows
from piitracer.formats.iceberg_table import manifest_entry_paths, snapshot_manifests, static_table
from piitracer.model.table_state import RefType, TableRef, TableState
from piitracer.storage.locations import Location
from piitracer.storage.store import Store


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
        yield from _referenced(table, store)
    except FormatError:
        raise
    except Exception as error:  # a missing or corrupt manifest list or manifest: name it
        raise FormatError(f"cannot read the table's manifests: {type(error).__name__}: {error}") from error


def _referenced(table, store: Store) -> Iterator[tuple[str, str]]:
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
        for manifest in snapshot_manifests(table, snapshot, store):
            if manifest.manifest_path in seen_manifests:
                continue
            seen_manifests.add(manifest.manifest_path)
            yield "manifest", manifest.manifest_path
            for path, _ in manifest_entry_paths(table, manifest, store):
                yield "data or delete file", path


# ---- what the verifier reads ----------------------------------------------------------------------

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
    table = static_table(location, store)
    if table is None:
        raise FormatError(f"{location}: no Iceberg metadata file")
    return table_facts_of(table)


def table_facts_of(table) -> TableFacts:
    """:func:`table_facts` of a pyiceberg table already read (a ``StaticTable`` of its folder, or
    the ``Table`` a catalog returns: discovery through the catalog)."""
    from pyiceberg.table.refs import SnapshotRefType

    from piitracer.model.table_properties import ICEBERG_DELETE_MODE, iceberg_retention
    from piitracer.model.workspace import IcebergWriteMode, duration_text

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
