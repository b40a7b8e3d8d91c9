"""Discovery of per-format modules: every module of a package that defines a given attribute.

Both halves of a table format are found this way (``formats/<format>.py`` with ``SUPPORT``,
``planner/templates/<format>.py`` with ``TEMPLATE``), so adding a format registers nothing by hand.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Iterable, TypeVar

T = TypeVar("T")


def discover(package: str, path: Iterable[str], attribute: str, kind: type[T]) -> dict:
    """``{value.format: value}`` for every module of ``package`` (its ``__path__`` is ``path``)
    whose ``attribute`` is a ``kind``, modules in name order; two modules for one format is a
    programming error."""
    found: dict = {}
    for module in sorted(pkgutil.iter_modules(list(path)), key=lambda m: m.name):
        value = getattr(importlib.import_module(f"{package}.{module.name}"), attribute, None)
        if isinstance(value, kind):
            if value.format in found:
                raise RuntimeError(f"two modules of {package} define {attribute} for {value.format.value}")
            found[value.format] = value
    return found
