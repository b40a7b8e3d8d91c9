"""Where a dataset lives: a local folder or an object-store prefix, in one canonical form.

A catalog location is a local path (relative to the workspace, or absolute), a ``file://`` URI, or
an object-store URI (``s3://bucket/prefix``, ``gs://``, ``abfss://container@account/``,
``hdfs://namenode/path``). Everything below the CLI passes :class:`Location` values, never bare
strings or ``pathlib`` paths, so an ``s3://`` URI is never squeezed into ``s3:/`` by a path
normalisation and a local folder is always absolute.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

LOCAL_SCHEMES = ("", "file")
OBJECT_SCHEMES = frozenset({"s3", "s3a", "s3n", "gs", "gcs", "abfs", "abfss", "hdfs", "viewfs"})


class LocationError(ValueError):
    """A location piitracer cannot use (an unknown scheme, no bucket); the message says which."""


def _plain_local_path(text: str) -> str | None:
    """``text`` as a canonical local path when it already is one (``/a/b`` or ``file:///a/b``)
    and parsing could not change it: no character a URL parser or percent-decoding reads (``%``,
    ``?``, ``#``, ``;``, control characters), nothing :func:`os.path.normpath` would rewrite, no
    surrounding space; else None (parsed in full). A long history's metadata names thousands of such paths: parsing
    each cost more than reading the file it names."""
    if text.startswith("file:///"):
        path = text[7:]
    elif text.startswith("/"):
        path = text
    else:
        return None
    if path.startswith("//") or text != text.strip() or any(c in path for c in "%?#;\\") or not path.isprintable():
        return None  # (a URL parser also drops tabs and line breaks)
    return path if os.path.normpath(path) == path else None


@dataclass(frozen=True, order=True)
class Location:
    """A canonical place: ``/abs/local/path`` or ``scheme://authority/key`` (no trailing slash,
    no ``..``, no doubled slashes)."""

    uri: str

    @classmethod
    def parse(cls, text: str | os.PathLike[str], base: str | os.PathLike[str] | None = None) -> "Location":
        """A location from the catalog's text; relative local paths are taken relative to ``base``."""
        raw = os.fspath(text).strip()
        plain = _plain_local_path(raw)
        if plain is not None:
            return cls(plain)
        parsed = urlparse(raw)
        scheme = parsed.scheme.lower()
        if scheme in LOCAL_SCHEMES or (len(scheme) == 1 and os.name == "nt"):
            path = unquote(parsed.path) if scheme == "file" else raw
            if not os.path.isabs(path):
                path = os.path.join(os.fspath(base) if base is not None else os.getcwd(), path)
            return cls(os.path.normpath(path))
        if scheme not in OBJECT_SCHEMES:
            raise LocationError(f"{raw}: unknown storage scheme {scheme!r} (expected a local path, file://, "
                                f"{', '.join(sorted(s + '://' for s in OBJECT_SCHEMES))})")
        if not parsed.netloc:
            raise LocationError(f"{raw}: no bucket or host after {scheme}://")
        scheme = {"s3a": "s3", "s3n": "s3", "gcs": "gs"}.get(scheme, scheme)  # one name per store
        # normpath keeps a leading "//" (POSIX): strip the slashes before adding one back.
        key = posixpath.normpath("/" + unquote(parsed.path).lstrip("/")) if parsed.path.strip("/") else ""
        return cls(f"{scheme}://{parsed.netloc}{key.rstrip('/')}" if key != "/" else f"{scheme}://{parsed.netloc}")

    def __str__(self) -> str:
        return self.uri

    @property
    def scheme(self) -> str:
        return "file" if self.is_local else self.uri.split("://", 1)[0]

    @property
    def is_local(self) -> bool:
        return "://" not in self.uri

    @property
    def path(self) -> Path:
        """The local folder (only for local locations)."""
        if not self.is_local:
            raise LocationError(f"{self.uri} is not a local path")
        return Path(self.uri)

    @property
    def name(self) -> str:
        return posixpath.basename(self.uri.rstrip("/"))

    def child(self, relative: str) -> "Location":
        """The location ``relative`` (posix, no ``..`` escaping) below this one."""
        clean = posixpath.normpath(relative.replace(os.sep, "/")).lstrip("/")
        if clean.startswith("../") or clean == "..":
            raise LocationError(f"{relative}: a path outside {self.uri}")
        if clean in ("", "."):
            return self
        return Location(self.uri.rstrip("/") + "/" + clean)

    def contains(self, other: "Location") -> bool:
        """Whether ``other`` is this location or inside it (whole path segments only)."""
        return other.uri == self.uri or other.uri.startswith(self.uri.rstrip("/") + "/")

    def relative(self, other: "Location") -> str | None:
        """``other`` as a posix path relative to this location, None when it is outside."""
        if other.uri == self.uri:
            return ""
        if self.contains(other):
            return other.uri[len(self.uri.rstrip("/")) + 1:]
        return None

    def resolve_reference(self, reference: str) -> "Location":
        """A path a table's metadata names — absolute, a URI, or relative to this location."""
        plain = _plain_local_path(reference)
        if plain is not None:
            return Location(plain)
        parsed = urlparse(reference)
        if parsed.scheme.lower() in LOCAL_SCHEMES and not os.path.isabs(unquote(parsed.path) if parsed.scheme else reference):
            return self.child(reference)
        return Location.parse(reference)
