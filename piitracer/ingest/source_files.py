"""Finding lineage source files and naming them in messages, shared by the event and SQL ingests."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator, Sequence

from piitracer.storage.locations import Location
from piitracer.storage.store import Store

# Lineage sources are workspace files: listed through the storage layer like every other file walk.
_FILES = Store()


def files_under(paths: Sequence[Path], suffixes: Iterable[str]) -> Iterator[Path]:
    """Each given file as is, and every file with one of ``suffixes`` under each given folder,
    recursively, sorted by path so ingest order (and output) is deterministic. A path that does not
    exist is yielded too: the caller reports it."""
    wanted = {s.lower() for s in suffixes}
    for path in map(Path, paths):
        if path.is_dir():
            found = (path / entry.relative for entry in _FILES.list_files(Location.parse(str(path)))
                     if Path(entry.relative).suffix.lower() in wanted)
            yield from sorted(found, key=lambda p: p.as_posix())
        else:
            yield path


def display_path(path: Path, root: Path | None) -> str:
    """The path as messages and origins show it: relative to ``root`` (posix) when inside it."""
    if root is not None:
        for candidate, base in ((path, root), (path.resolve(), root.resolve())):
            try:
                return candidate.relative_to(base).as_posix()
            except ValueError:
                continue
    return path.as_posix()
