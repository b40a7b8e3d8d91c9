"""An Iceberg table's retained history from its manifests, read once per verification
(:mod:`~piitracer.formats.history`): which files the current snapshot uses, which only older
retained snapshots use and which a tag or branch holds (``TableFiles``), and for the logical check
which data files each retained snapshot reads, with the delete files that apply to each.

The current ``metadata.json`` is the one :func:`~piitracer.formats.iceberg_table.newest_metadata_file`
names (the catalog's pointer, or the folder's). It is parsed as JSON and the manifest lists and
manifests with fastavro, each manifest once however many snapshots share it: pyiceberg's
``StaticTable`` takes ~1 s of imports before it reads a byte, more than a whole verification of a
small lakehouse (benchmarks/RESULTS.md, 13). pyiceberg is still what reads a v3 deletion vector
(a Puffin blob), only when one applies to a file holding a subject's key.

Which deletes apply follows the Iceberg spec, as pyiceberg's scan does for position deletes and
as :func:`~piitracer.formats.iceberg_metadata._keys_applying_deletes` does for equality deletes
(what a retained snapshot read back shows today):

- a data or delete entry's data sequence number is its own, or inherited from its manifest (an
  ADDED entry, or any entry of a manifest with sequence number 0); deleted entries are not read;
- a position delete file or a deletion vector applies to a data file when its sequence number is
  not lower than the data file's, and it names that file (``referenced_data_file``) or, naming
  none, lies in the same partition of the same spec; it removes the positions it lists for that
  file's path;
- an equality delete file applies to a data file of a strictly lower sequence number in its
  partition (in every partition when its spec is unpartitioned), removing each row whose equality
  columns (matched by name in the current schema) equal one of its rows; a data file that lacks one
  of those columns is left alone.

A data file's key column is found by its field id (by name in a file without field ids); a file
that lacks it holds its identity partition value on every row when the table is partitioned by
the key, else nulls.
"""

from __future__ import annotations

import gzip
import io
import json
from dataclasses import dataclass
from typing import Any, Collection, Iterator

from piitracer.formats import FormatError, TableFiles, relative_to
from piitracer.formats.avro_container import AvroContainer, AvroContainerError, read_container, records_between
from piitracer.formats.history import NO_CONSTANT, DataFile, HistoryVersion, KeyColumn, TableHistory
from piitracer.formats.iceberg_table import newest_metadata_file
from piitracer.storage.locations import Location
from piitracer.storage.store import Store

ADDED, DELETED = 1, 2  # manifest entry status (0: existing)
DATA, POSITION_DELETES, EQUALITY_DELETES = 0, 1, 2  # data file content


@dataclass(frozen=True)
class _Entry:
    """One live (not deleted) entry of a manifest: what the rules above read of it."""

    uri: str
    content: int
    sequence: int
    spec_id: int
    partition: tuple
    rows: int | None
    equality_ids: tuple[int, ...] | None
    referenced: str | None
    file_format: str


@dataclass
class _Manifest:
    """A manifest read once: every path it names (tombstones too), the paths of its live entries,
    and its live entries by path."""

    paths: list[str]
    live_paths: list[str]
    entries: dict[str, list[_Entry]]
    deletes: list[_Entry]


def read_metadata(root: Location, store: Store) -> tuple[Location, dict] | None:
    """(file, parsed JSON) of the table's current metadata, or None when there is no table."""
    found = newest_metadata_file(root, store)
    if found is None:
        return None
    try:
        data = store.read_bytes(found)
        if data[:2] == b"\x1f\x8b":  # v3.gz.metadata.json, v3.metadata.json.gz
            data = gzip.decompress(data)
        return found, json.loads(data)
    except (OSError, ValueError) as error:
        raise FormatError(f"{found}: cannot read Iceberg metadata: {type(error).__name__}: {error}") from error


def files(root: Location, store: Store) -> TableFiles:
    """Which files the current snapshot uses (data/delete files, manifests, manifest list), which
    only older retained snapshots use, and which a tag or branch holds."""
    return history(root, store, None).files


def history(root: Location, store: Store, key_column: str | None) -> "IcebergHistory | None":
    """The table's files and, with ``key_column``, its retained snapshots for the logical check;
    None when the key column is not in the current schema or a data file is not Parquet (read back
    snapshot by snapshot instead)."""
    found = read_metadata(root, store)
    if found is None:
        result = IcebergHistory(root, store, {}, [], {})
        result.files.problems.append("no Iceberg metadata.json under metadata/")
        return result
    _, metadata = found
    key = None
    if key_column is not None:
        field_id = _field_ids(_current_schema(metadata)).get(key_column)
        if field_id is None:
            return None
        key = KeyColumn(key_column, field_id)
    reader = _Reader(root, store, metadata)
    refs = _ref_names(metadata)
    current = metadata.get("current-snapshot-id")
    if current == -1:
        current = None
    snapshots = metadata.get("snapshots") or []
    by_id = {snapshot.get("snapshot-id"): snapshot for snapshot in snapshots}
    lists = [reader.manifest_list(snapshot, by_id.get(snapshot.get("parent-snapshot-id"))) for snapshot in snapshots]
    result = IcebergHistory(root, store, metadata, lists, reader.manifests, key)
    result.files = _table_files(root, snapshots, lists, reader, current, refs)
    if key is None:
        return result
    for snapshot in snapshots:
        sid = snapshot["snapshot-id"]
        result.versions.append(HistoryVersion(str(sid), sid == current, refs.get(sid)))
    constants = _key_partition_fields(metadata, key.field_id)
    for path, manifest in reader.manifests.items():
        for uri, entries in manifest.entries.items():
            if uri in result.data_files:
                continue
            entry = entries[0]
            if entry.file_format.upper() != "PARQUET":
                return None  # ORC or Avro data files: read back through pyiceberg, which reads them
            constant = NO_CONSTANT
            name = constants.get(entry.spec_id)
            if name is not None:
                value = dict(entry.partition).get(name)
                constant = NO_CONSTANT if value is None else value
            result.data_files[uri] = DataFile(uri, reader.relative(uri), entry.rows, constant)
    return result


class _Reader:
    """Reads each manifest list and manifest of one table once."""

    def __init__(self, root: Location, store: Store, metadata: dict) -> None:
        self.root, self.store = root, store
        self.manifests: dict[str, _Manifest] = {}
        # A manifest list read: (its Avro schema, its decompressed blocks, its records), by path.
        self.lists: dict[str, tuple[str | None, bytes, list[dict]]] = {}
        # A manifest list walked: its (manifest path, content) pairs, by path (a child reusing
        # its parent's records reuses these too, instead of walking N^2/2 records again).
        self.listed: dict[str, list[tuple[str, int]]] = {}
        self.relative = _Relative(root)

    def records(self, path: str) -> list[dict]:
        """Every record of the manifest (or manifest list) at ``path``."""
        return self._container(path)[1]

    def _container(self, path: str) -> tuple[AvroContainer | None, list[dict]]:
        import fastavro

        with self.store.open_input(self.root.resolve_reference(path)) as handle:
            raw = handle.read()
        try:
            container = read_container(raw)
            if container is None:  # a codec read by fastavro only
                return None, list(fastavro.reader(io.BytesIO(raw)))
            return container, container.records()
        except AvroContainerError as error:
            raise FormatError(f"{path}: not a readable Avro file ({error})") from error

    def manifest_list(self, snapshot: dict, parent: dict | None = None) -> list[tuple[str, int]]:
        """(manifest path, content) of a snapshot, each manifest read once into :attr:`manifests`;
        ``parent``: its parent snapshot, whose list was read before (its records are reused)."""
        found = []
        inherited: list[tuple[str, int]] = []
        list_path = snapshot.get("manifest-list")
        if list_path:
            parent_path = (parent or {}).get("manifest-list")
            rows, reused = self._list_rows(list_path, parent_path)
            if reused:  # the parent's records, already walked: its (path, content) pairs follow
                rows, inherited = rows[:len(rows) - reused], self.listed[parent_path]
        else:  # format v1 may list its manifests inline
            rows = [{"manifest_path": path} for path in snapshot.get("manifests") or ()]
        for row in rows:
            path = row["manifest_path"]
            content = int(row.get("content") or 0)
            if path not in self.manifests:
                self.manifests[path] = self._manifest(path, row, snapshot)
            found.append((path, content))
        found += inherited
        if list_path:
            self.listed[list_path] = found
        return found

    def _list_rows(self, path: str, parent_path: str | None) -> tuple[list[dict], int]:
        """The records of the manifest list at ``path``. A writer lists a snapshot's new manifests
        first and then its parent's, record for record (pyiceberg, Iceberg's Java library on
        append): when the parent list's decompressed blocks, under the same Avro schema, end this
        list's, only the records before them are decoded and the parent's decoded records follow.
        That is the full decode exactly (Avro records are read one after another, so the records
        that end exactly where the parent's bytes begin are followed by the parent's), checked by
        the counts; otherwise the whole list is decoded. A history of N one-manifest commits holds
        N^2/2 list records: decoding each list whole was most of reading a long history. Returns
        the records and how many of the last ones are the parent's (0: decoded whole)."""
        parent = self.lists.get(parent_path) if parent_path else None
        with self.store.open_input(self.root.resolve_reference(path)) as handle:
            raw = handle.read()
        try:
            container = read_container(raw)
            if container is None:
                return self._container(path)[1], 0
            data, schema = container.data(), container.schema_text
            rows, reused = None, 0
            if parent is not None and parent[0] == schema and parent[2] and data.endswith(parent[1]):
                rows = records_between(data, 0, len(data) - len(parent[1]), schema)
                if rows is not None and len(rows) + len(parent[2]) == container.record_count:
                    rows, reused = rows + parent[2], len(parent[2])
                else:
                    rows = None
            if rows is None:
                rows = container.records()
        except AvroContainerError as error:
            raise FormatError(f"{path}: not a readable Avro file ({error})") from error
        self.lists[path] = (schema, data, rows)
        return rows, reused

    def _manifest(self, path: str, listed: dict, snapshot: dict) -> _Manifest:
        # Inheritance (spec, "Sequence Number Inheritance"; pyiceberg's _inherit_from_manifest).
        manifest_sequence = int(listed.get("sequence_number") or 0)
        spec_id = int(listed.get("partition_spec_id") or 0)
        paths, live_paths, entries, deletes = [], [], {}, []
        for record in self.records(path):
            data_file = record["data_file"]
            uri = data_file["file_path"]
            paths.append(uri)
            status = int(record["status"])
            if status == DELETED:
                continue
            sequence = record.get("sequence_number")
            if sequence is None and (manifest_sequence == 0 or status == ADDED):
                sequence = manifest_sequence
            partition = data_file.get("partition") or {}
            ids = data_file.get("equality_ids")
            entry = _Entry(uri, int(data_file.get("content") or 0), int(sequence or 0), spec_id,
                           tuple(partition.items()) if isinstance(partition, dict) else tuple(partition),
                           data_file.get("record_count"), tuple(ids) if ids else None,
                           data_file.get("referenced_data_file"), str(data_file.get("file_format") or "PARQUET"))
            live_paths.append(uri)
            if entry.content == DATA:
                entries.setdefault(uri, []).append(entry)
            else:
                deletes.append(entry)
        return _Manifest(paths, live_paths, entries, deletes)


def _table_files(root: Location, snapshots: list[dict], lists: list[list[tuple[str, int]]], reader: _Reader,
                 current: int | None, refs: dict[int, str]) -> TableFiles:
    """``TableFiles`` of the table: the current snapshot's live files and metadata, what only older
    retained snapshots use (tombstones included), and the tag or branch of the first snapshot (in
    metadata order) holding a ref that uses each path. Each distinct manifest is walked once."""
    found = TableFiles()
    rel = reader.relative

    def used(manifests: list[tuple[str, int]], is_current: bool) -> tuple[set[str], set[str]]:
        paths, meta = set(), set()
        for path, _ in manifests:
            meta.add(path)
            paths.update(reader.manifests[path].live_paths if is_current else reader.manifests[path].paths)
        return {p for p in map(rel, paths) if p}, {p for p in map(rel, meta) if p}

    older: set[str] = set()
    for snapshot, manifests in zip(snapshots, lists):
        sid = snapshot["snapshot-id"]
        lists_path = rel(snapshot["manifest-list"]) if snapshot.get("manifest-list") else None
        if sid == current:
            data, meta = used(manifests, True)
            found.live |= data
            found.current_meta |= meta | ({lists_path} if lists_path else set())
        else:
            older.update(path for path, _ in manifests)
            if lists_path:
                found.retained.add(lists_path)
        if sid in refs:
            data, meta = used(manifests, sid == current)
            for path in sorted(data | meta | ({lists_path} if lists_path else set())):
                found.ref_files.setdefault(path, refs[sid])
    for path in older:
        manifest_path = rel(path)
        if manifest_path:
            found.retained.add(manifest_path)
        found.retained.update(p for p in map(rel, reader.manifests[path].paths) if p)
    found.retained -= found.live | found.current_meta
    return found


class _Relative:
    """:func:`~piitracer.formats.relative_to` of the many paths a table's metadata names, each
    folder's symlinks resolved once (a file is its folder's real path and its name, unless the file
    itself is a symlink): a realpath per file was most of reading a long history's metadata."""

    def __init__(self, root: Location) -> None:
        from piitracer.storage.guard import canonical

        self.root = root
        self.real_root = canonical(root)
        self.folders: dict[str, str] = {}
        self.found: dict[str, str | None] = {}

    def __call__(self, uri: str) -> str | None:
        if uri not in self.found:
            self.found[uri] = self._relative(uri)
        return self.found[uri]

    def _relative(self, uri: str) -> str | None:
        import os

        from piitracer.storage.locations import LocationError

        try:
            place = self.root.resolve_reference(uri)
        except LocationError:
            return None
        if not place.is_local or os.path.islink(place.uri):
            return relative_to(self.root, uri)
        folder, name = os.path.split(place.uri)
        if folder not in self.folders:
            self.folders[folder] = os.path.realpath(folder)
        return self.real_root.relative(Location(os.path.join(self.folders[folder], name)))


class IcebergHistory(TableHistory):
    """The retained snapshots of one Iceberg table, by their manifests (module docstring)."""

    def __init__(self, root: Location, store: Store, metadata: dict, lists: list[list[tuple[str, int]]],
                 manifests: dict[str, _Manifest], key: KeyColumn | None = None) -> None:
        super().__init__(key=key)
        self.root, self.store, self.metadata = root, store, metadata
        self._lists, self._manifests = lists, manifests
        specs = metadata.get("partition-specs") or [{"spec-id": 0, "fields": metadata.get("partition-spec") or []}]
        self._unpartitioned = {int(s["spec-id"]) for s in specs if not s.get("fields")}
        self._positions: dict[str, dict[str, Any]] = {}  # delete file -> data file path -> positions
        self._equality: dict[str, tuple[tuple[str, ...], set]] = {}
        self._columns: dict[tuple[str, tuple[str, ...]], Any] = {}
        self._relevant_for: tuple[frozenset[str], set[str]] | None = None

    def reading(self, number: int, wanted: Collection[str]) -> Iterator[tuple[str, Any]]:
        wanted = frozenset(wanted)
        relevant = self._relevant(wanted)
        data: list[_Entry] = []
        deletes: list[_Entry] = []
        for path, content in self._lists[number]:
            if path not in relevant:
                continue
            manifest = self._manifests[path]
            deletes += manifest.deletes
            for uri in wanted.intersection(manifest.entries):
                data += manifest.entries[uri]
        for entry in data:
            applying = tuple(d for d in deletes if self._applies(d, entry))
            yield entry.uri, applying

    def _relevant(self, wanted: frozenset[str]) -> set[str]:
        """The manifests a snapshot's reading of ``wanted`` needs: those with a live entry of a
        wanted data file, and those with delete files. Found once per ``wanted`` over the distinct
        manifests, so that each snapshot skips the others at a set lookup each (snapshot k of a
        history lists ~k manifests: an intersection per listed manifest was quadratic work)."""
        if self._relevant_for is None or self._relevant_for[0] != wanted:
            found = {path for path, manifest in self._manifests.items()
                     if manifest.deletes or not wanted.isdisjoint(manifest.entries)}
            self._relevant_for = (wanted, found)
        return self._relevant_for[1]

    def _applies(self, delete: _Entry, data: _Entry) -> bool:
        if delete.content == POSITION_DELETES:
            if delete.sequence < data.sequence:
                return False
            if delete.referenced:
                return delete.referenced == data.uri
            return (delete.spec_id, delete.partition) == (data.spec_id, data.partition)
        if delete.content == EQUALITY_DELETES:
            return delete.sequence > data.sequence and (delete.spec_id in self._unpartitioned or
                                                         (delete.spec_id, delete.partition) == (data.spec_id, data.partition))
        return False

    def deleted(self, uri: str, positions, deletes: Any):
        import numpy as np

        gone = np.zeros(len(positions), dtype=bool)
        for delete in deletes:
            if delete.content == POSITION_DELETES:
                removed = self._removed_positions(delete).get(uri)
                if removed is not None and len(removed):
                    gone |= np.isin(positions, removed)
            else:
                gone |= self._equality_deleted(uri, positions, delete)
        return gone

    def unreadable(self, number: int, error: str) -> tuple[str | None, bool]:
        # As a snapshot read back said it (pyiceberg's scan, then the files read directly).
        return (f"snapshot {self.versions[number].version} could not be read back ({error}; reading its files "
                f"directly: {error})"), False

    # ---- delete files, each read once -------------------------------------------------------------

    def _open(self, uri: str):
        return self.store.open_input(self.root.resolve_reference(uri))

    def _removed_positions(self, delete: _Entry) -> dict[str, Any]:
        if delete.uri not in self._positions:
            if delete.file_format.upper() == "PUFFIN":
                self._positions[delete.uri] = self._vectors(delete)
            else:
                import numpy as np
                import pyarrow.compute as pc
                import pyarrow.parquet as pq

                with self._open(delete.uri) as handle:
                    rows = pq.ParquetFile(handle).read(columns=["file_path", "pos"])
                found = {}
                paths = rows.column("file_path").combine_chunks()
                positions = rows.column("pos").combine_chunks()
                for path in pc.unique(paths).to_pylist():
                    found[path] = np.unique(pc.filter(positions, pc.equal(paths, path)).to_numpy(zero_copy_only=False))
                self._positions[delete.uri] = found
        return self._positions[delete.uri]

    def _vectors(self, delete: _Entry) -> dict[str, Any]:
        """A Puffin file's deletion vectors (format v3), decoded by pyiceberg."""
        import numpy as np
        from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
        from pyiceberg.table.puffin import PuffinFile

        with self._open(delete.uri) as handle:
            payload = handle.read()
        return {vector.referenced_data_file: np.asarray(vector.to_vector().to_numpy(), dtype=np.int64)
                for vector in deletion_vectors_from_puffin_file(PuffinFile(payload))}

    def _equality_deleted(self, uri: str, positions, delete: _Entry):
        import numpy as np

        if delete.uri not in self._equality:
            by_id = {v: k for k, v in _field_ids(_current_schema(self.metadata)).items()}
            names = tuple(by_id[i] for i in delete.equality_ids or ())
            rows = self._read_columns(delete.uri, names)
            values = set(zip(*(rows.column(n).to_pylist() for n in names))) if all(n in rows.column_names for n in names) else set()
            self._equality[delete.uri] = (names, values)
        names, values = self._equality[delete.uri]
        rows = self._columns.get((uri, names))
        if rows is None:
            rows = self._columns[uri, names] = self._read_columns(uri, names)
        if not names or not all(n in rows.column_names for n in names):
            return np.zeros(len(positions), dtype=bool)  # the file predates a column: its rows hold null there
        picked = rows.select(list(names)).take(positions)
        return np.array([row in values for row in zip(*(picked.column(n).to_pylist() for n in names))], dtype=bool)

    def _read_columns(self, uri: str, names: tuple[str, ...]):
        import pyarrow.parquet as pq

        with self._open(uri) as handle:
            parquet = pq.ParquetFile(handle)
            return parquet.read(columns=[c for c in names if c in parquet.schema_arrow.names])


def _current_schema(metadata: dict) -> dict:
    schemas = metadata.get("schemas")
    if schemas:
        current = metadata.get("current-schema-id")
        return next((s for s in schemas if s.get("schema-id") == current), schemas[-1])
    return metadata.get("schema") or {}


def _field_ids(schema: dict) -> dict[str, int]:
    """Top-level field name -> id (a key column is a top-level column)."""
    return {f["name"]: int(f["id"]) for f in schema.get("fields") or ()}


def _key_partition_fields(metadata: dict, field_id: int | None) -> dict[int, str]:
    """Spec id -> the name of its identity partition field on the key column (pyiceberg fills a
    file's missing column from it)."""
    found = {}
    for spec in metadata.get("partition-specs") or ():
        for item in spec.get("fields") or ():
            if item.get("source-id") == field_id and item.get("transform") == "identity":
                found[int(spec["spec-id"])] = item["name"]
    return found


def _ref_names(metadata: dict) -> dict[int, str]:
    """Snapshot id -> the tag or branch (other than main) that holds it (the last one named, as
    pyiceberg's refs mapping gives them)."""
    return {int(ref["snapshot-id"]): name for name, ref in (metadata.get("refs") or {}).items() if name != "main"}
