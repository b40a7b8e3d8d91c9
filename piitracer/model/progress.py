"""Progress of long work (decoding every file of a verification, sampling every table to
classify, estimating every step of a batch): a use case reports it, a front door draws it (the
CLI's bars on stderr, when stderr is a terminal).

A report is ``(what, done, total)``: what is being done ("decoding files"), how many of how many.
Reports with the same ``what`` go on counting; a new ``what`` is a new phase. Reporting is
optional everywhere: ``None`` means nobody is watching, and costs nothing.
"""

from __future__ import annotations

from typing import Callable, Optional

Progress = Callable[[str, int, int], None]
"""A progress callback: called with what is being done, how many are done, of how many."""


def report(progress: Optional[Progress], what: str, done: int, total: int) -> None:
    """Tell ``progress`` (if anyone watches) that ``done`` of ``total`` are done in ``what``."""
    if progress is not None:
        progress(what, done, total)


def phase(progress: Optional[Progress], prefix: str) -> Optional[Progress]:
    """``progress`` with every ``what`` it is told prefixed (``plan 2 of 3: decoding files``)."""
    if progress is None:
        return None
    return lambda what, done, total: progress(f"{prefix}{what}", done, total)
