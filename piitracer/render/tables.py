"""Tables in a terminal.

- :class:`FittedTable` (the default of ``plan``, ``verify`` and ``requests``): one line per row at
  whatever width it is printed, cells cropped with ``…`` rather than folded (a column folded to one
  letter a line made an 80-column ``plan`` 748 lines long), optional columns given up when the
  width is short.
- :func:`name_column` and :func:`text_column` (the ``--wide`` tables and the other commands'):
  names (datasets, step ids, actions, states) are never truncated or wrapped mid-word, and free
  text folds at spaces; printed at an unlimited width, every row is whole on one line (a CI log
  must say ``shop.silver_orders``, not ``shop.silve…`` twice)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Iterable

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

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


@dataclass(frozen=True)
class Fit:
    """A column of a :class:`FittedTable`. ``drop``: 0 for a column always shown, else its rank
    among the columns given up when the width is short (1 goes first). ``flexible``: free text that
    takes what width is left (cropped first, down to ``minimum``); other columns keep their longest
    value's width while they can, and are cropped only when only the always-shown ones are left."""

    header: str
    justify: str = "left"
    minimum: int = 6
    drop: int = 0
    flexible: bool = False


class FittedTable:
    """A table that fits the width it is printed at: one line per row, whatever the width; a cell
    too long for its column is cropped with ``…``, never folded onto more lines; when the columns
    do not fit, the flexible ones are cropped, then the optional ones given up (least important
    first, named on a line under the table), then the others cropped, never below their minimum.
    Widths are decided when rich renders it (``console.print``), from the width it is given."""

    def __init__(self, columns: list[Fit], rows: list[list[str | Text]], note_dropped: str = "") -> None:
        self.columns, self.rows, self.note_dropped = columns, rows, note_dropped

    def widths(self, width: int) -> dict[int, int]:
        """Column index -> width for a table at most ``width`` cells wide (the shown columns only)."""
        natural = [max([cell_len(column.header)] + [_length(row[i]) for row in self.rows]) for i, column in
                   enumerate(self.columns)]
        floor = [min(natural[i], column.minimum) for i, column in enumerate(self.columns)]
        shown = list(range(len(self.columns)))
        for rank in sorted({c.drop for c in self.columns if c.drop}) + [None]:
            room = width - (3 * len(shown) + 1)  # '│ ' before each cell, ' ' after, and the last '│'
            fixed = sum(natural[i] for i in shown if not self.columns[i].flexible)
            flexible = [i for i in shown if self.columns[i].flexible]
            if fixed + sum(floor[i] for i in flexible) <= room or rank is None:
                break
            shown = [i for i in shown if self.columns[i].drop != rank]
        sizes = {i: natural[i] for i in shown}
        spare = room - fixed
        for i in flexible:  # in order: the first flexible column is served first
            sizes[i] = max(floor[i], min(natural[i], spare - sum(floor[j] for j in flexible if j > i)))
            spare -= sizes[i]
        excess = sum(sizes.values()) - room
        while excess > 0:  # only the always-shown columns left: crop the widest, never below its minimum
            widest = max((i for i in sizes if sizes[i] > floor[i]), key=lambda i: sizes[i], default=None)
            if widest is None:
                break
            sizes[widest] -= 1
            excess -= 1
        return sizes

    def table(self, width: int) -> tuple[Table, list[str]]:
        """The rich table for ``width``, and the headers of the columns given up."""
        sizes = self.widths(width)
        table = Table()
        for i, size in sizes.items():
            column = self.columns[i]
            table.add_column(column.header, justify=column.justify, width=size, no_wrap=True, overflow="ellipsis")
        for row in self.rows:
            table.add_row(*(row[i] for i in sizes))
        return table, [c.header for i, c in enumerate(self.columns) if i not in sizes]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table, dropped = self.table(options.max_width)
        yield table
        if dropped and self.note_dropped:
            yield Text(self.note_dropped.format(columns=", ".join(dropped)), no_wrap=True, overflow="ellipsis")


def _length(cell: str | Text) -> int:
    return cell.cell_len if isinstance(cell, Text) else cell_len(cell)


def line(text: str | Text) -> Text:
    """One line of text that never wraps: cropped with ``…`` at the width it is printed at."""
    shown = text.copy() if isinstance(text, Text) else Text(text)
    shown.no_wrap, shown.overflow = True, "ellipsis"
    return shown
