"""The location guard: is a path inside the places piitracer may act on?

A deletion tool that follows a path it was not given can destroy another team's data. Iceberg
metadata holds absolute paths, so a table folder copied with ``cp -a`` still points at the
original: a delete, an expiry or an orphan removal run on the copy would act on the original.
Before a plan runs, every path a dataset's metadata names (and every file under its folder,
through symlinks) must lie under that dataset's catalogued location (or, for a shallow clone, its
source's) and under the workspace's ``warehouse_roots`` when they are set. Local paths are
compared with symlinks resolved; object-store URIs by bucket and key, whole segments only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from piitracer.storage.locations import Location, LocationError


def canonical(location: Location | str | os.PathLike[str]) -> Location:
    """The form places are compared in: a local path with symlinks and ``..`` resolved, or a
    normalised URI (``s3a://`` is ``s3://``)."""
    found = location if isinstance(location, Location) else Location.parse(location)
    return Location(os.path.realpath(found.uri)) if found.is_local else found


def is_under(path: Location | str, prefix: Location | str) -> bool:
    """Whether ``path`` is ``prefix`` or inside it (whole path segments only: ``/lake/payments2``
    is not under ``/lake/payments``)."""
    return canonical(prefix).contains(canonical(path))


@dataclass(frozen=True)
class Territory:
    """Where one dataset's steps may act: its own location (and extra allowed prefixes, such as a
    shallow clone's source), all of it inside the warehouse roots when any are set."""

    dataset: str
    location: Location  # canonical
    allowed: tuple[Location, ...]  # canonical prefixes, own location first
    roots: tuple[Location, ...] = ()  # canonical warehouse roots (empty: no restriction)

    @classmethod
    def of(cls, dataset: str, location: Location, also: tuple[Location, ...] = (),
           roots: tuple[Location, ...] = ()) -> "Territory":
        own = canonical(location)
        return cls(dataset, own, (own, *(canonical(p) for p in also)), tuple(canonical(r) for r in roots))

    def outside_roots(self) -> Location | None:
        """The first allowed prefix that lies outside every warehouse root, if any."""
        if not self.roots:
            return None
        for prefix in self.allowed:
            if not any(root.contains(prefix) for root in self.roots):
                return prefix
        return None

    def admits(self, reference: str, base: Location | None = None) -> bool:
        """Whether a path a table names (absolute, a URI, or relative to ``base``) is inside."""
        try:
            target = canonical((base or self.location).resolve_reference(reference))
        except LocationError:
            return False  # an unknown scheme or a relative path escaping upwards: not ours
        return any(prefix.contains(target) for prefix in self.allowed)


def symlinks_leaving(location: Location, territory: Territory) -> list[str]:
    """Symlinks under a local folder (files or folders) that resolve outside the territory: a
    rewrite or a delete through one would act elsewhere. Object stores have no symlinks."""
    if not location.is_local:
        return []
    leaving = []
    for current, dirs, files in os.walk(location.uri, followlinks=False):
        for name in dirs + files:
            path = os.path.join(current, name)
            if os.path.islink(path) and not territory.admits(os.path.realpath(path)):
                leaving.append(path)
    return sorted(leaving)
