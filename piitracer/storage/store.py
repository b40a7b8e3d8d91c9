"""What piitracer does to files, on any filesystem ``pyarrow.fs`` knows: list (recursively, hidden
and underscore folders included), stat, read, write a new object, replace one object by another,
delete. Local folders, S3 and S3-compatible stores, GCS, ADLS (abfs) and HDFS all go through here;
nothing else in piitracer walks ``pathlib`` paths of a dataset.

Credentials come from where the ecosystem keeps them — ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``
/``AWS_PROFILE``/``AWS_ENDPOINT_URL``/``AWS_REGION``, ``GOOGLE_APPLICATION_CREDENTIALS``, Azure's
``AZURE_STORAGE_*`` — plus the workspace's optional ``storage:`` block (endpoint, region,
path-style, per-prefix overrides; never secrets), which is also handed to delta-rs as its
``storage_options`` and to pyiceberg as its FileIO properties. Nothing here logs an option's value.

On S3, an Iceberg catalog's FileIO properties are a place too: for a location its catalog keeps
(under one of its tables or its warehouse, or a bucket root holding only its tables), the catalog's
``s3.endpoint``/``s3.region``/path style fill in what the ``storage:`` block does not say, and its
``s3.access-key-id``/``s3.secret-access-key``/``s3.session-token`` are the key — as pyiceberg reads
the same table (:meth:`MetadataPointers.storage_properties`, :mod:`piitracer.storage.fileio`).
Order for a non-secret option: ``storage:`` (its prefix entry, then its defaults), the catalog,
then ``AWS_*``; for the key: the catalog's, else the ecosystem's chain (``AWS_*``, a profile).

Replacing without rename: a local folder replaces a file with ``os.replace`` (atomic on one
filesystem). An object store has no atomic rename, but writing an object is atomic per key: the
replacement is written under a hidden temporary key first, then copied over the original's key on
the server (a reader sees the old object or the new one, never a mix and never neither), then the
temporary is deleted. A crash before the copy leaves the original and a stray temporary (removed on
resume); after it, the replacement and maybe the temporary.
"""

from __future__ import annotations

import os
import stat
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Protocol, Sequence

from piitracer.model.errors import UnavailableError
from piitracer.model.settings import StorageOptions, StorageSettings
from piitracer.storage.fileio import S3Credentials, catalog_credentials, catalog_options, fileio_properties
from piitracer.storage.locations import Location


class StorageError(UnavailableError):
    """A location cannot be read or written (no such bucket, wrong credentials, unreachable
    endpoint, unknown scheme): the message names the location and the store's reason."""


_DELETE_THREADS = 8  # concurrent deletes on an object store (pyarrow's own I/O pool is 8 too)


@dataclass(frozen=True)
class FileEntry:
    """One file under a location: its path relative to the location (posix), its size and when it
    was last written (nanoseconds; None where the store does not say). The time is not part of a
    file's identity (equality), only a hint that a file was written again under the same name."""

    relative: str
    size: int
    modified_ns: int | None = field(default=None, compare=False)


class MetadataPointers(Protocol):
    """Who keeps the pointer to a table's current metadata file, when it is not the table's own
    folder: an Iceberg catalog (REST, SQL/JDBC, Glue, Hive) names the current ``metadata.json``,
    and a newer file lying in the folder is not the table's state."""

    def current_metadata(self, location: Location) -> str | None:
        """The metadata file a catalog names as the current state of the table at ``location``,
        or None when no catalog keeps that table (its folder says, as for Spark's Hadoop catalog)."""

    def storage_properties(self, location: Location) -> Mapping[str, str]:
        """The properties (Iceberg's FileIO names: ``s3.endpoint``, ``s3.access-key-id``, ...) of the
        catalog that keeps ``location``, credentials included; empty when no catalog keeps it.
        Read from configuration only (no catalog is asked)."""

    def forget(self, location: Location) -> None:
        """Forget what was read of the table at ``location``: something else committed to it."""



def _walk_local(location: Location, limit: int | None = None) -> Iterator[FileEntry]:
    """Every regular file below a local folder, depth first in name order; symlinks (to files or
    folders) are neither listed nor followed. One ``scandir`` per folder and one ``lstat`` per file
    (``os.walk`` with ``islink``/``isfile``/``getsize``/``relpath`` cost four calls and a path
    computation per file: most of listing a table with a long history). A folder that vanishes
    while it is walked is skipped (a writer's temporary folder); one that cannot be read stops
    the listing: a folder silently left out would be a hole in a proof."""
    count = 0
    pending = [("", location.uri)]
    while pending:
        prefix, folder = pending.pop()
        try:
            with os.scandir(folder) as found:
                entries = sorted(found, key=lambda entry: entry.name)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as error:
            raise StorageError(f"{location}: cannot list {prefix or '.'}: {_reason(error)}") from None
        folders = []
        for entry in entries:
            try:
                if entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    folders.append((prefix + entry.name + "/", entry.path))
                    continue
                info = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISREG(info.st_mode):
                yield FileEntry(prefix + entry.name, info.st_size, info.st_mtime_ns)
                count += 1
                if limit is not None and count >= limit:
                    return
        pending.extend(reversed(folders))


class Store:
    """Files at locations, through the filesystem each location's scheme needs; ``pointers`` says
    which tables a catalog keeps the current metadata of (:class:`MetadataPointers`)."""

    def __init__(self, settings: StorageSettings | None = None, pointers: MetadataPointers | None = None) -> None:
        self.settings = settings or StorageSettings()
        self.pointers = pointers
        self._filesystems: dict[tuple, object] = {}
        self._access_cache: dict[tuple, tuple[StorageOptions, S3Credentials | None]] = {}
        # What was read of files written once and never changed (an Iceberg manifest list or
        # manifest, by its path): read once per store, i.e. per session's command.
        self.written_once: dict[tuple, Any] = {}

    def __getstate__(self) -> dict:
        # Sent to a Spark task: the settings and the workspace's catalog definitions travel; the
        # open filesystems (an S3 one holds the driver's key) and every credential do not. An
        # executor opens its own filesystems from its own environment (AWS_*, PYICEBERG_CATALOG__*,
        # .pyiceberg.yaml), as pyiceberg on that executor would: a serialized task is no place for
        # a key (it crosses the network unencrypted unless Spark's RPC is, and may be kept).
        return {"settings": self.settings, "pointers": self.pointers, "_filesystems": {}, "_access_cache": {},
                "written_once": {}}

    def forget_written(self, kind: str) -> None:
        """Drop what was kept of files of one kind written once (``written_once`` keys start with
        the kind): they are read again when next asked."""
        for key in [key for key in self.written_once if key[0] == kind]:
            del self.written_once[key]

    def committed(self, location: Location) -> None:
        """Say that a table at ``location`` was committed to by something other than this store's
        catalogs' own table objects (a Spark step): its catalog is asked afresh next time."""
        if self.pointers is not None:
            self.pointers.forget(location)

    def current_metadata(self, location: Location) -> str | None:
        """The metadata file a catalog names as current for the table at ``location`` (None: no
        catalog keeps it; read the folder)."""
        return None if self.pointers is None else self.pointers.current_metadata(location)

    # ---- configuration ------------------------------------------------------------------------

    def catalog_properties(self, location: Location) -> Mapping[str, str]:
        """The FileIO properties of the Iceberg catalog that keeps ``location`` (empty for a local
        folder or a place no catalog keeps). Credentials included: never show them."""
        if self.pointers is None or location.is_local:
            return {}
        return self.pointers.storage_properties(location)

    def options_for(self, location: Location) -> StorageOptions:
        """The storage options for a location: the longest matching ``prefixes`` entry over the
        ``storage:`` block's own defaults over what the catalog keeping the location says
        (endpoint, region, path style; never its key)."""
        return self._access(location)[0]

    def _access(self, location: Location) -> tuple[StorageOptions, S3Credentials | None]:
        """The options and the catalog's key for a location, built once per distinct answer (a
        scan asks for every file it reads)."""
        properties = self.catalog_properties(location) if location.scheme == "s3" else {}
        prefixes = tuple(prefix for prefix in sorted(self.settings.prefixes, key=len)
                         if location.contains(Location.parse(prefix)) or location.uri.startswith(prefix.rstrip("/")))
        key = (frozenset(properties.items()), prefixes)
        if key not in self._access_cache:
            merged = catalog_options(properties)
            merged.update(self.settings.model_dump(exclude={"prefixes"}, exclude_none=True))
            for prefix in prefixes:
                merged.update(self.settings.prefixes[prefix].model_dump(exclude_none=True))
            self._access_cache[key] = (StorageOptions(**merged), catalog_credentials(properties))
        return self._access_cache[key]

    def delta_options(self, location: Location) -> dict[str, str]:
        """delta-rs ``storage_options`` for a location (empty for local folders: the ecosystem's
        environment variables still apply)."""
        if location.is_local:
            return {}
        options, credentials = self._access(location)
        found: dict[str, str] = {}
        if location.scheme == "s3":
            if options.endpoint:
                found["AWS_ENDPOINT_URL"] = options.endpoint
                if options.endpoint.startswith("http://"):
                    found["AWS_ALLOW_HTTP"] = "true"
            if options.region:
                found["AWS_REGION"] = options.region
            if options.path_style is not None:
                found["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false" if options.path_style else "true"
            if options.allow_http is not None:
                found["AWS_ALLOW_HTTP"] = "true" if options.allow_http else "false"
            if options.unsafe_rename:
                found["AWS_S3_ALLOW_UNSAFE_RENAME"] = "true"
            if credentials is not None:
                found.update(credentials.delta())
        found.update(options.extra)
        return found

    def _credentials(self, location: Location) -> S3Credentials | None:
        """The key of the catalog that keeps an S3 location (None: the ecosystem's chain)."""
        return self._access(location)[1]

    def iceberg_properties(self, location: Location) -> dict[str, str]:
        """pyiceberg FileIO properties for a location: the catalog's own (when one keeps it) under
        the options and key :meth:`filesystem` uses."""
        if location.is_local:
            return {}
        options, credentials = self._access(location)
        found: dict[str, str] = {}
        if location.scheme == "s3":
            found.update(fileio_properties(self.catalog_properties(location)))
            endpoint = options.endpoint or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
            if endpoint:
                found["s3.endpoint"] = endpoint
            region = options.region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
            if region:
                found["s3.region"] = region
            if options.path_style is not None:
                found["s3.force-virtual-addressing"] = "false" if options.path_style else "true"
            if credentials is not None:
                found.update(credentials.fileio())
            else:
                for env, prop in (("AWS_ACCESS_KEY_ID", "s3.access-key-id"), ("AWS_SECRET_ACCESS_KEY", "s3.secret-access-key"),
                                  ("AWS_SESSION_TOKEN", "s3.session-token")):
                    if os.environ.get(env):
                        found[prop] = os.environ[env]
        return found

    def filesystem(self, location: Location):
        """(pyarrow filesystem, the location's path inside it)."""
        import pyarrow.fs as pafs

        if location.is_local:
            # One per store: constructing it costs ~0.1 ms, paid per file opened before (a long
            # history opens thousands of small files).
            local = self._filesystems.get(("file",))
            if local is None:
                local = self._filesystems[("file",)] = pafs.LocalFileSystem()
            return local, location.uri
        scheme, rest = location.uri.split("://", 1)
        authority, _, key = rest.partition("/")
        options, credentials = self._access(location)
        cache_key = (scheme, authority if scheme != "s3" else "", options, credentials)
        if cache_key not in self._filesystems:
            try:
                if scheme == "s3":
                    self._filesystems[cache_key] = (self._s3(options, credentials), None)
                else:  # gs, abfs(s), hdfs: pyarrow knows where their credentials live
                    self._filesystems[cache_key] = pafs.FileSystem.from_uri(f"{scheme}://{authority}")
            except (OSError, ValueError) as error:
                raise StorageError(f"{location}: cannot open its filesystem: {_reason(error)}") from None
        fs, root = self._filesystems[cache_key]
        if root is None:  # S3: paths are bucket/key
            return fs, rest
        return fs, (root.rstrip("/") + "/" + key) if key else root

    def _s3(self, options: StorageOptions, credentials: S3Credentials | None = None):
        import pyarrow.fs as pafs

        # A catalog's key, as pyiceberg passes it; without one, pyarrow's chain (AWS_*, a profile).
        kwargs: dict[str, object] = dict(credentials.pyarrow()) if credentials is not None else {}
        endpoint = options.endpoint or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        if endpoint:
            scheme, _, host = endpoint.partition("://")
            kwargs["endpoint_override"] = host or scheme
            kwargs["scheme"] = scheme if host else "https"
        region = options.region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        if region:
            kwargs["region"] = region
        if options.path_style is not None:
            kwargs["force_virtual_addressing"] = not options.path_style
        # Fail fast on an unreachable endpoint instead of the SDK's long retry loop.
        kwargs["connect_timeout"] = 5
        kwargs["request_timeout"] = 30
        kwargs["retry_strategy"] = pafs.AwsStandardS3RetryStrategy(max_attempts=3)
        return pafs.S3FileSystem(**kwargs)

    # ---- reading ------------------------------------------------------------------------------

    def info(self, location: Location):
        fs, path = self.filesystem(location)
        try:
            return fs.get_file_info(path)
        except OSError as error:
            raise StorageError(f"{location}: {_reason(error)}") from None

    def exists(self, location: Location) -> bool:
        """A file, a folder, or (on an object store) a prefix with at least one object below it."""
        import pyarrow.fs as pafs

        found = self.info(location)
        if found.type is not pafs.FileType.NotFound:
            return True
        if location.is_local:
            return False
        return next(self._walk(location, limit=1), None) is not None

    def is_file(self, location: Location) -> bool:
        import pyarrow.fs as pafs

        return self.info(location).type is pafs.FileType.File

    def list_files(self, location: Location) -> list[FileEntry]:
        """Every file below ``location`` (hidden and underscore folders included; symlinks are not
        followed), sorted by relative path. A location that does not exist lists nothing."""
        return sorted(self._walk(location), key=lambda entry: entry.relative)

    def _walk(self, location: Location, limit: int | None = None) -> Iterator[FileEntry]:
        if location.is_local:
            yield from _walk_local(location, limit)
            return
        import pyarrow.fs as pafs

        fs, path = self.filesystem(location)
        selector = pafs.FileSelector(path, recursive=True, allow_not_found=True)
        try:
            infos = fs.get_file_info(selector)
        except OSError as error:
            raise StorageError(f"{location}: cannot list: {_reason(error)}") from None
        count = 0
        for item in infos:
            if item.type is pafs.FileType.File:
                yield FileEntry(item.path[len(path.rstrip("/")) + 1:], int(item.size or 0),
                                item.mtime_ns if item.mtime is not None else None)
                count += 1
                if limit is not None and count >= limit:
                    return

    def sizes(self, location: Location) -> dict[str, int]:
        """Relative path -> size of every file below ``location``."""
        return {entry.relative: entry.size for entry in self.list_files(location)}

    def read_bytes(self, location: Location) -> bytes:
        fs, path = self.filesystem(location)
        try:
            with fs.open_input_stream(path) as stream:
                return stream.read()
        except OSError as error:
            raise StorageError(f"{location}: cannot read: {_reason(error)}") from None

    def open_input(self, location: Location):
        """A random-access file (Parquet footers are read from the end)."""
        fs, path = self.filesystem(location)
        try:
            return fs.open_input_file(path)
        except OSError as error:
            raise StorageError(f"{location}: cannot read: {_reason(error)}") from None

    # ---- writing ------------------------------------------------------------------------------

    def open_output(self, location: Location):
        fs, path = self.filesystem(location)
        try:
            if location.is_local:
                os.makedirs(os.path.dirname(path), exist_ok=True)
            return fs.open_output_stream(path)
        except OSError as error:
            raise StorageError(f"{location}: cannot write: {_reason(error)}") from None

    @contextmanager
    def open_durable_output(self, location: Location) -> Iterator[Any]:
        """A file to write that is on stable storage when the block ends: a local file is
        flushed and fsynced (a replacement must be on disk before it replaces anything); an
        object-store object exists only once its upload completes at close."""
        if not location.is_local:
            with self.open_output(location) as sink:
                yield sink
            return
        try:
            os.makedirs(os.path.dirname(location.uri), exist_ok=True)
            sink = open(location.uri, "wb")
        except OSError as error:
            raise StorageError(f"{location}: cannot write: {_reason(error)}") from None
        with sink:
            yield sink
            sink.flush()
            os.fsync(sink.fileno())

    def write_bytes(self, location: Location, data: bytes) -> None:
        with self.open_output(location) as sink:
            sink.write(data)

    def replace(self, temporary: Location, target: Location) -> None:
        """Put ``temporary``'s content at ``target`` atomically for readers (see the module
        docstring), then remove ``temporary``."""
        if temporary.is_local and target.is_local:
            os.replace(temporary.uri, target.uri)
            _fsync_folder(os.path.dirname(target.uri))
            return
        fs, source = self.filesystem(temporary)
        _, destination = self.filesystem(target)
        try:
            fs.copy_file(source, destination)  # a server-side copy: one atomic PUT of the target key
            fs.delete_file(source)
        except OSError as error:
            raise StorageError(f"{target}: cannot replace it: {_reason(error)}") from None

    def delete(self, location: Location) -> None:
        fs, path = self.filesystem(location)
        try:
            fs.delete_file(path)
        except FileNotFoundError:
            return
        except OSError as error:
            raise StorageError(f"{location}: cannot delete: {_reason(error)}") from None

    def delete_each(self, locations: Sequence[Location], after_each: Callable[[int], None] | None = None) -> int:
        """Delete every one of ``locations`` (one already gone is not an error) and return how
        many were asked. On an object store several go at once (each delete is a round trip: 20
        files took 0.4 s one by one on the S3 server); on a local disk one by one. ``after_each(n)``
        runs in this thread once the first ``n`` are gone. A failure raises after the deletes
        already under way have finished (the caller's step is journaled: a resume lists again)."""
        if not locations:
            return 0
        if all(location.is_local for location in locations):
            for number, location in enumerate(locations, start=1):
                self.delete(location)
                if after_each is not None:
                    after_each(number)
            return len(locations)
        from concurrent.futures import ThreadPoolExecutor

        self.filesystem(locations[0])  # opened once here, not by several threads at once
        with ThreadPoolExecutor(min(_DELETE_THREADS, len(locations)), thread_name_prefix="piitracer-delete") as pool:
            for number, _ in enumerate(pool.map(self.delete, locations), start=1):
                if after_each is not None:
                    after_each(number)
        return len(locations)


def _fsync_folder(folder: str) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _reason(error: BaseException) -> str:
    """The store's reason on one line, without request ids or credentials."""
    text = " ".join(str(error).split())
    return text[:300]


def store_for(settings: StorageSettings | None) -> Store:
    """A store for a workspace's ``storage:`` settings (one per process is enough)."""
    return Store(settings)


__all__ = ["FileEntry", "Location", "Store", "StorageError", "store_for"]
