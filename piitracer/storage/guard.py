"""The location guard: is a path inside the places piitracer may act on?

A deletion tool that follows a path it was not given can destroy another team's data. Iceberg
metadata holds absolute paths, so a table folder copied with ``cp -a`` still points at the
original: a delete, an expiry or an orphan removal run on the copy would act on the original.
Before a plan runs, every path a dataset's metadata names (and every file under its folder,
through symlinks) must lie under that dataset's catalogued location (or, for a shallow clone, its
source's) and under the workspace's ``warehouse_roots`` when they are set.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse


def canonical(location: str | os.PathLike[str]) -> str:
    """An absolute, normalised form to compare places by: local paths resolved (symlinks
    followed, ``..`` removed) without a scheme; URIs as ``scheme://bucket/key`` with ``..`` and
    duplicate slashes removed. Relative paths are relative to the current folder (callers pass
    absolute ones)."""
    text = os.fspath(location)
    parsed = urlparse(text)
    if parsed.scheme in ("", "file") or (len(parsed.scheme) == 1 and os.name == "nt"):
        path = unquote(parsed.path) if parsed.scheme == "file" else text
        return os.path.realpath(path)
    key = posixpath.normpath("/" + unquote(parsed.path)) if parsed.path else "/"
    return f"{parsed.scheme.lower()}://{parsed.netloc}{key}".rstrip("/")


def is_under(path: str, prefix: str) -> bool:
    """Whether canonical ``path`` is ``prefix`` or inside it (whole path segments only:
    ``/lake/payments2`` is not under ``/lake/payments``)."""
    return path == prefix or path.startswith(prefix.rstrip("/") + "/")


@dataclass(frozen=True)
class Territory:
    """Where one dataset's steps may act: its own location (and extra allowed prefixes, such as a
    shallow clone's source), all of it inside the warehouse roots when any are set."""

    dataset: str
    location: str  # canonical
    allowed: tuple[str, ...]  # canonical prefixes, own location first
    roots: tuple[str, ...] = ()  # canonical warehouse roots (empty: no restriction)

    @classmethod
    def of(cls, dataset: str, location: str | os.PathLike[str], also: tuple[str | os.PathLike[str], ...] = (),
           roots: tuple[str | os.PathLike[str], ...] = ()) -> "Territory":
        own = canonical(location)
        return cls(dataset, own, (own, *(canonical(p) for p in also)), tuple(canonical(r) for r in roots))

    def outside_roots(self) -> str | None:
        """The first allowed prefix that lies outside every warehouse root, if any."""
        if not self.roots:
            return None
        for prefix in self.allowed:
            if not any(is_under(prefix, root) for root in self.roots):
                return prefix
        return None

    def admits(self, path: str, relative_to: str | None = None) -> bool:
        """Whether a path a table names (absolute, a URI, or relative to ``relative_to``) is inside."""
        if relative_to is not None and not urlparse(path).scheme and not os.path.isabs(path):
            path = os.path.join(relative_to, path)
        target = canonical(path)
        return any(is_under(target, prefix) for prefix in self.allowed)


def symlinks_leaving(folder: Path, territory: Territory) -> list[str]:
    """Symlinks under ``folder`` (files or folders) that resolve outside the territory: a rewrite
    or a delete through one would act elsewhere."""
    leaving = []
    for current, dirs, files in os.walk(folder, followlinks=False):
        for name in dirs + files:
            path = os.path.join(current, name)
            if os.path.islink(path) and not territory.admits(os.path.realpath(path)):
                leaving.append(path)
    return sorted(leaving)
