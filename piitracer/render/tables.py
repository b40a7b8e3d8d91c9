"""Tables a person can copy from: names (datasets, step ids, actions, states) are never truncated
or wrapped mid-word, whatever the terminal width, and piped output is not squeezed to 80 columns
(a CI log must say ``shop.silver_orders``, not ``shop.silve…`` twice)."""

from __future__ import annotations

import sys
from typing import Iterable

from rich.console import Console
from rich.table import Table

PIPED_WIDTH = 200  # when output is not a terminal: wide enough for a row of names and counts


def console(stderr: bool = False) -> Console:
    """A console that keeps whole names: the terminal's width, or a wide one when piped."""
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, width=None if stream.isatty() else PIPED_WIDTH)


def name_column(table: Table, header: str, values: Iterable[str], justify: str = "left") -> None:
    """A column that never wraps or truncates its values (it reserves their longest width)."""
    longest = max([len(header), *(len(str(v)) for v in values)])
    table.add_column(header, no_wrap=True, min_width=longest, justify=justify)


def text_column(table: Table, header: str, justify: str = "left") -> None:
    """A column of free text: it folds at spaces when the table is wider than the screen."""
    table.add_column(header, overflow="fold", justify=justify)
