"""The one reader of key files on disk (audit, master and signing keys), shared by the audit and
crypto layers, which do not import each other: it reads a key once and applies the one permission
rule (:func:`piitracer.model.key_files.open_mode_problem`) to the file it read."""

from __future__ import annotations

import os
from pathlib import Path

from piitracer.model.errors import BadKeyError
from piitracer.model.key_files import open_mode_problem


def read_key_file(path: str | os.PathLike[str], source: str, what: str, *, hint: str = "", secret: bool = True,
                  error: type[BadKeyError] = BadKeyError) -> bytes:
    """The bytes of a key file, read once: the permission rule is checked on the file read (its
    ``fstat``, not a path that may be swapped meanwhile) when the key is ``secret``. Raises
    ``error`` naming ``source`` (how the key was given) and ``what`` it is ("the audit key")."""
    try:
        with open(path, "rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            data = handle.read()
    except OSError as problem:
        raise error(f"{source}: cannot read {what}: {problem.strerror or problem}{hint}") from None
    if secret and (problem_text := open_mode_problem(Path(path), mode)):
        raise error(f"{source}: {problem_text}")
    return data
