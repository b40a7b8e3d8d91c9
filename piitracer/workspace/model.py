"""The workspace: a folder with ``piitracer.yaml`` (and ``catalog.discovered.yaml``), validated.

:class:`Workspace` is what every use case receives; :func:`piitracer.ingest.workspace.loader.load_workspace`
reads one. Its own files and piitracer's state folder are described by :mod:`piitracer.workspace.layout`."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from piitracer.model.errors import BadWorkspaceError
from piitracer.model.naming import DatasetNamer
from piitracer.model.workspace import WorkspaceConfig
from piitracer.workspace.catalog_layers import CatalogLayers
from piitracer.workspace.layout import WORKSPACE_FILE

_UNSET: Any = object()


class WorkspaceError(BadWorkspaceError):
    """A workspace that cannot be used; the message names the file, line and field."""


@dataclass(frozen=True)
class Workspace:
    """A validated workspace: its folder, its configuration and its dataset naming rule."""

    root: Path
    config: WorkspaceConfig
    namer: DatasetNamer
    # Not fatal, but worth a look: "file:line: field: what is wrong" (see ``workspace_warnings``).
    warnings: tuple[str, ...] = ()
    # Which catalog fields came from catalog.discovered.yaml and which the person overrode there.
    layers: CatalogLayers = CatalogLayers()
    # Catalog entries set aside as written (no format yet: discovery has still to describe them).
    set_aside: dict[str, dict[str, Any]] = field(default_factory=dict)
    # dataset id -> its local location as an absolute path, filled as asked: every load checks all
    # of them, and the validated workspace kept in the lineage store keeps them (workspace_cache).
    _local_locations: dict[str, str | None] = field(default_factory=dict, init=False, repr=False, compare=False)
    _checked_locations: tuple[tuple[str, str], ...] | None = field(default=None, init=False, repr=False, compare=False)

    def resolve(self, path: str) -> Path:
        """A path of the workspace file, relative to the workspace folder unless absolute."""
        return Path(path) if os.path.isabs(path) else self.root / path

    def location_of(self, dataset_id: str) -> Path | None:
        """Absolute local folder of a catalog dataset; None when it has no location or lives on an
        object store (``s3://...``: the API's ``dataset_locations`` gives every location)."""
        text = self._local_location(dataset_id)
        return None if text is None else Path(text)

    def checked_locations(self) -> tuple[tuple[str, str], ...]:
        """``(dataset id, normalised local folder)`` of every catalogued dataset whose files should
        be at a local folder (it stores rows, its location is not on an object store), sorted:
        what every load checks for existence and against the warehouse roots. Computed once and
        kept with the validated workspace (workspace_cache), so a load does not walk the catalog's
        models for it."""
        if self._checked_locations is None:
            found = []
            for dataset_id, entry in sorted(self.config.catalog.items()):
                if not entry.format.stores_rows or "://" in str(entry.location):
                    continue
                text = self._absolute_local_location(dataset_id)  # not memoised: kept here instead
                if text is None:
                    continue
                found.append((dataset_id, os.path.normpath(text)))
            object.__setattr__(self, "_checked_locations", tuple(found))  # a memo on a frozen dataclass
        return self._checked_locations

    def _local_location(self, dataset_id: str) -> str | None:
        found = self._local_locations.get(dataset_id, _UNSET)
        if found is _UNSET:
            found = self._local_locations[dataset_id] = self._absolute_local_location(dataset_id)
        return found

    def _absolute_local_location(self, dataset_id: str) -> str | None:
        # As a string: checking 100k catalog locations, pathlib objects cost more than the stat.
        entry = self.config.catalog.get(dataset_id)
        if entry is None or entry.location is None or "://" in entry.location and not entry.location.startswith("file:"):
            return None
        return absolute_location(self.root, entry.location.removeprefix("file://").removeprefix("file:"))

    def warehouse_roots(self) -> tuple[Path, ...]:
        """The configured ``warehouse_roots`` as absolute paths (empty: no restriction)."""
        return tuple(Path(os.path.normpath(self.resolve(r))) for r in self.config.warehouse_roots)

    def outside_roots(self, location: Path) -> bool:
        """Whether ``location`` is outside every configured warehouse root (False when none is set)."""
        if not self.config.warehouse_roots:
            return False
        roots = self.warehouse_roots()
        resolved = Path(os.path.normpath(location))
        return not any(resolved == r or r in resolved.parents for r in roots)


def absolute_location(root: Path, location: str) -> str:
    if "://" in location or location.startswith("file:") or os.path.isabs(location):
        return location
    return os.path.normpath(os.path.join(root, location))
