"""Pause CPython's cyclic garbage collector while a large structure of acyclic objects is built."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block (re-enabled on exit, errors included).

    Ingest, workspace validation and graph building allocate millions of small objects that form
    no cycles (rows, edges, catalog entries); as they survive, the generational collector walks
    them again and again (measured: ~40% of the OpenLineage ingest's time for 2,000 events, ~40%
    of loading a 100k-dataset catalog). Reference counting still frees everything.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
