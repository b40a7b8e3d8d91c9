"""The validated workspace, kept in the lineage store under the hash of the files it is built from.

Validating a catalog of 100k datasets (pydantic, the naming rule, the one-place-each check) takes
seconds. A command in a new process that finds ``piitracer.yaml`` and ``catalog.discovered.yaml``
unchanged takes the validated result from ``.piitracer/lineage/store.sqlite`` instead.

The key covers every file the workspace is built from: the bytes of both files (and whether the
discovered one exists), the workspace's folder (relative locations are resolved against it), and
piitracer's own code and the pydantic and Python versions (a changed validator must not be served
an old result). Any change is a miss: the files are read and validated again, and the new result
replaces the old one. Only one result is kept. The workspace files hold no subject values, so the
cache holds none either.

What the files do not decide is checked again on every load:

* the location warnings (a catalogued folder that does not exist) are computed live by the loader;
* every path component of every local location must be a symlink exactly where it was, each one
  resolving to the same folder: the one-place-each check resolves symlinks, and one created,
  removed or re-pointed since the result was kept could make two datasets share a folder, so any
  such change sends the load down the full path (``lstat`` of each component, ~0.2 s at 100k).

The payload is a pickle, read back by an unpickler that builds only piitracer's own model classes
(pydantic models, enums, dataclasses of ``piitracer.model``, ``piitracer.workspace`` and ``piitracer.ingest``) and a few
standard value types: a tampered store cannot make it call anything else. Anything unreadable is a
miss, never an error: this is a cache.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import hashlib
import importlib
import io
import logging
import os
import pickle
import sqlite3
import stat
import sys
from pathlib import Path
from typing import Any

import pydantic

from piitracer.storage.store import Store
from piitracer.workspace.catalog_layers import DISCOVERED_FILE
from piitracer.ingest.lineage_store import open_store
from piitracer.model.gc_pause import cyclic_gc_paused
from piitracer.storage.locations import Location, LocationError
from piitracer.workspace.layout import WORKSPACE_FILE

log = logging.getLogger(__name__)

CACHE_VERSION = "2"  # 2: the symlinks along the locations kept with their targets
_PACKAGE = Path(__file__).resolve().parents[2]  # piitracer/
_LAYERS = ("model", "workspace", "ingest", "storage")  # everything load_workspace runs lives in these
_code_print: str | None = None


def code_fingerprint() -> str:
    """SHA-256 of the source of the layers a validated workspace comes from (models, ingest,
    storage; once per process): a validator or a model field changed by an upgrade or an edit must
    not be served a result the old code made."""
    global _code_print
    if _code_print is None:
        digest = hashlib.sha256()
        store = Store()  # the storage layer lists files (the package's own source here)
        sources = sorted(f"{layer}/{entry.relative}" for layer in _LAYERS
                         for entry in store.list_files(Location.parse(_PACKAGE / layer)) if entry.relative.endswith(".py"))
        for relative in sources:
            digest.update(relative.encode() + b"\x00")
            digest.update(hashlib.sha256((_PACKAGE / relative).read_bytes()).digest())
        _code_print = digest.hexdigest()
    return _code_print


def files_key(root: Path) -> tuple[str, str]:
    """``(key, text of piitracer.yaml)``: the key hashes every input of the validated workspace.
    Raises ``OSError``/``UnicodeDecodeError`` when a file cannot be read (the loader says so)."""
    main = (root / WORKSPACE_FILE).read_bytes()
    try:
        discovered: bytes | None = (root / DISCOVERED_FILE).read_bytes()
    except FileNotFoundError:
        discovered = None
    digest = hashlib.sha256()
    for part in (CACHE_VERSION, code_fingerprint(), pydantic.VERSION, sys.version.split()[0], os.fspath(root)):
        digest.update(part.encode() + b"\x00")
    digest.update(len(main).to_bytes(8, "big") + main)
    digest.update(b"absent" if discovered is None else b"present" + len(discovered).to_bytes(8, "big") + discovered)
    return digest.hexdigest(), main.decode("utf-8")


class WorkspaceCache:
    """One load's view of the cache: its key, the workspace file's text, and the store's row."""

    def __init__(self, root: Path, key: str, text: str) -> None:
        self.root, self.key, self.text = root, key, text

    @classmethod
    def open(cls, root: Path) -> "WorkspaceCache | None":
        """The cache of the workspace at ``root``, or None when its files cannot be read (the
        loader then reports why)."""
        try:
            key, text = files_key(root)
        except (OSError, UnicodeDecodeError):
            return None
        return cls(root, key, text)

    def workspace(self) -> Any | None:
        """The validated workspace kept for these exact files (its warnings those the files
        decide; the caller adds the live location warnings), or None: not kept, unreadable, or a
        symlink along a location's path appeared, went or points elsewhere since."""
        try:
            store = open_store(self.root)
        except (OSError, sqlite3.Error):
            return None
        try:
            payload = store.cached_workspace(self.key)
        except sqlite3.Error:
            return None
        finally:
            store.close()
        if payload is None:
            return None
        try:
            with cyclic_gc_paused():  # 100k catalog entries: see gc_pause
                workspace, paths, links = _ModelUnpickler(io.BytesIO(payload)).load()
        except Exception as error:  # noqa: BLE001 - any unreadable payload is a miss, not a failure
            log.info("workspace cache: kept result unreadable (%s): validating the files again", type(error).__name__)
            return None
        if _symlinks(paths) != links:
            log.info("workspace cache: a symlink along a location's path appeared, went or moved: validating the files again")
            return None
        return workspace

    def keep(self, workspace: Any) -> None:
        """Keep ``workspace`` (validated from the files this cache was opened on, with only the
        warnings the files decide) with the symlinks along its locations, unless the files changed
        while it was being validated."""
        paths = _location_paths(workspace)
        if paths is None:
            return
        links = _symlinks(paths)
        workspace.checked_locations()  # kept with it: every load checks them all
        try:
            if files_key(self.root)[0] != self.key:
                return  # edited while we validated: the result is of neither version for sure
            _share_equal_parts(workspace)
            payload = pickle.dumps((workspace, sorted(paths), links), protocol=pickle.HIGHEST_PROTOCOL)
            store = open_store(self.root)
        except (OSError, UnicodeDecodeError, sqlite3.Error):
            return
        try:
            store.keep_workspace(self.key, payload)
        except sqlite3.Error as error:  # a read-only or busy store: the next load validates again
            log.info("workspace cache: not kept (%s)", type(error).__name__)
        finally:
            store.close()


def _share_equal_parts(workspace: Any) -> None:
    """Make equal nested values of catalog entries one object — a retention, a clone_of, a column
    name — so the pickle holds each once and a load builds it once: most tables share a few
    retentions and many column names (measured at 100k datasets: the load 0.71 s -> 0.40 s). They
    are immutable (frozen models, strings, tuples), so sharing an equal one changes nothing a
    reader can see."""
    shared: dict[Any, Any] = {}
    for entry in workspace.config.catalog.values():
        fields = entry.__dict__
        for name, value in fields.items():
            if isinstance(value, tuple) and all(type(item) is str for item in value):
                fields[name] = tuple(shared.setdefault(item, item) for item in value)
            elif isinstance(value, pydantic.BaseModel):
                try:
                    fields[name] = shared.setdefault((type(value), value), value)
                except TypeError:
                    continue  # not hashable: kept as it is


def _location_paths(workspace: Any) -> set[str] | None:
    """Every path component (the folder and all its parents) of every local location the
    one-place-each check resolves; None when a location cannot be parsed (nothing is kept)."""
    paths: set[str] = set()
    for entry in workspace.config.catalog.values():
        if entry.location is None or not entry.format.stores_rows:
            continue
        try:
            place = Location.parse(entry.location, base=workspace.root)
        except LocationError:
            return None
        if not place.is_local:
            continue
        path = place.uri
        while path not in paths:
            paths.add(path)
            parent = os.path.dirname(path)
            if parent == path:
                break
            path = parent
    return paths


def _symlinks(paths: Any) -> dict[str, str]:
    """Which of ``paths`` are symlinks, each with the folder it resolves to (a path that does not
    exist is none). The one-place-each check resolves each location component by component: when
    every component is as much a symlink as it was, and each symlinked one resolves where it did,
    every location resolves where it did (``lstat`` follows the components before the last)."""
    lstat, is_link = os.lstat, stat.S_ISLNK
    found = {}
    for path in paths:
        try:
            if is_link(lstat(path).st_mode):
                found[path] = os.path.realpath(path)
        except OSError:
            continue
    return found


_STANDARD = {
    ("datetime", "timedelta"): datetime.timedelta, ("datetime", "datetime"): datetime.datetime,
    ("datetime", "date"): datetime.date, ("datetime", "time"): datetime.time,
    ("datetime", "timezone"): datetime.timezone,
    ("pathlib", "PosixPath"): Path, ("pathlib", "Path"): Path,
}


class _ModelUnpickler(pickle.Unpickler):
    """An unpickler that finds only piitracer's own model classes and a few value types."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _STANDARD:
            return _STANDARD[(module, name)]
        if module.startswith(("piitracer.model.", "piitracer.workspace.", "piitracer.ingest.")):
            try:
                found = getattr(importlib.import_module(module), name, None)  # piitracer's own modules only
            except ImportError:
                found = None
            if isinstance(found, type) and (issubclass(found, (pydantic.BaseModel, enum.Enum))
                                            or dataclasses.is_dataclass(found)):
                return found
        raise pickle.UnpicklingError(f"{module}.{name} is not a piitracer model class")
