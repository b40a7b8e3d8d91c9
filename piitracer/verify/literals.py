"""Finding searched literals in raw bytes, exactly (the Parquet proofs' ``dictionary`` and
``pages`` rules, :mod:`~piitracer.verify.parquet_proofs`): the RE2 prefilter of plain literals a
chunk's bytes must hold for any searched value to be in them, and :class:`LiteralFinder`, which
finds every occurrence of a set of byte literals with a few NumPy passes at about the same cost
however many values are searched. Every candidate is confirmed against the whole literal: a
finder never misses an occurrence (tests/unit/verify/test_dictionary_verdicts.py checks it against
a naive search)."""

from __future__ import annotations

import functools
import math
import re
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from piitracer.verify.values import FEW_LITERALS


def literal_prefilter(whole: list[str], re2: str | None) -> str | None:
    """An RE2 pattern of plain literals that occurs in any bytes holding a searched string, whole
    (``whole``) or as the Python rule finds it inside text (``re2``, the index's pattern with its
    digit-boundary classes dropped: a superset). None when the pattern holds anything but escaped
    literals and alternations once those are dropped (then no prefilter: decode)."""
    if "" in whole:
        return None  # an empty value is in every text
    parts = [_re2_literal(value) for value in whole]
    if re2:
        bare = re2.replace("(?:^|[^0-9])", "").replace("(?:$|[^0-9])", "")
        structure = re.sub(r"\\.", "", bare).replace("(?:", "").replace(")", "").replace("|", "")
        if any(c in structure for c in "^$[]().*+?{}\\"):
            return None
        parts += _alternatives(bare)
    return "|".join(sorted(set(parts), key=lambda part: (-len(part), part))) if parts else None


def _alternatives(pattern: str) -> list[str]:
    """The literals of ``a|(?:b|c)|d`` (groups only as whole alternatives, not nested), else the
    pattern itself as one alternative."""
    parts, current, depth, index = [], "", 0, 0
    while index < len(pattern):
        if pattern[index] == "\\":
            current += pattern[index:index + 2]
            index += 2
        elif pattern.startswith("(?:", index):
            if depth or current:
                return [pattern]
            depth, index = 1, index + 3
        elif pattern[index] == ")":
            if not depth or pattern[index + 1:index + 2] not in ("", "|"):
                return [pattern]
            depth, index = 0, index + 1
        elif pattern[index] == "|":
            if current:
                parts.append(current)
            current, index = "", index + 1
        else:
            current += pattern[index]
            index += 1
    if depth:
        return [pattern]
    return parts + ([current] if current else [])


def _re2_literal(text: str) -> str:
    return "".join("\\" + c if (c.isascii() and not c.isalnum() and c.isprintable() and c != " ") else c for c in text)


def may_hold(raw: bytes, finder: "LiteralFinder") -> bool:
    """Whether the dictionary page's bytes (decompressed, length prefixes and all) hold any literal
    of the column's prefilter (``finder``): no means no dictionary value is or contains a searched
    string."""
    return finder.holds(raw)


def holds_literal(texts: list[bytes], prefilter: str) -> bool:
    """Whether any of ``texts`` holds a literal of ``prefilter`` (escaped literals and alternations,
    :func:`literal_prefilter`): its :class:`LiteralFinder` when it is plain literals (no pattern
    compiled per chunk: a one-value dictionary of a small file cost ~50 us of compiling, hundreds
    of values tens of ms a page), else one RE2 pass."""
    finder = prefilter_finder(prefilter)
    if finder is not None:
        return any(finder.holds(text) for text in texts)
    whole = pa.array(texts, pa.large_binary())
    return bool(pc.any(pc.match_substring_regex(whole, prefilter)).as_py())


@functools.lru_cache(maxsize=64)
def prefilter_finder(prefilter: str) -> "LiteralFinder | None":
    """The finder of a :func:`literal_prefilter` pattern's literals, built once per pattern (the
    same for every column of a type searched with one index); None when the pattern is not plain
    literals (RE2 reads it)."""
    literals = _plain_literals(prefilter)
    return LiteralFinder(literals) if literals is not None else None


@functools.lru_cache(maxsize=64)
def prefilter_literals(prefilter: str) -> tuple[bytes, ...] | None:
    """The UTF-8 literals of a :func:`literal_prefilter` pattern, when it is a few escaped
    literals joined by ``|`` (None as for :func:`_plain_literals`, and when more than
    :data:`~piitracer.verify.values.FEW_LITERALS` of them)."""
    literals = _plain_literals(prefilter)
    return literals if literals is not None and len(literals) <= FEW_LITERALS else None


def _plain_literals(prefilter: str) -> tuple[bytes, ...] | None:
    """The UTF-8 literals of a :func:`literal_prefilter` pattern, when it is escaped literals
    joined by ``|`` (an escape of a letter or digit is a class, not a literal: None then, as for a
    group or an empty alternative); a text holds one exactly when the pattern matches it."""
    literals, current, index = [], [], 0
    while index < len(prefilter):
        char = prefilter[index]
        if char == "\\":
            escaped = prefilter[index + 1:index + 2]
            if not escaped or escaped.isascii() and escaped.isalnum():
                return None
            current.append(escaped)
            index += 2
            continue
        if char == "|":
            literals.append("".join(current))
            current = []
        elif char in "^$[]().*+?{}":
            return None
        else:
            current.append(char)
        index += 1
    literals.append("".join(current))
    if "" in literals:
        return None
    return tuple(literal.encode("utf-8") for literal in literals)


# ---- literals in bytes ------------------------------------------------------------------------------

# Fibonacci hashing of a window (the top bits of its product, in the window's own width, index
# the table: products as wide as the window cost the least to write).
_HASH = {4: (np.uint32(0x9E3779B1), 32), 8: (np.uint64(0x9E3779B97F4A7C15), 64)}
SHORT_LITERAL = 3  # shorter literals fit no window: one substring search each (found at once, mostly)
_OFFSETS = 32  # a literal's window is chosen among its first 32 bytes (its offset is a bit of a uint32)
# Up to this many literals, or literals x text bytes, one substring search each (memchr speed)
# beats the NumPy passes' fixed cost (~30 us a text).
_FEW = 2
_SMALL = 1 << 16


class LiteralFinder:
    """Where a set of byte literals occurs in a text, exactly, in a few NumPy passes over the text
    whatever the number of literals: RE2's pass (``match_substring_regex`` compiles its pattern
    afresh for every chunk) slows with it, hundreds of a batch's values costing tens of ms a
    page, and a substring search per literal grows with it.

    The text is read as aligned windows of ``width`` bytes (8, 4 or 2: the largest with
    ``2 * width - 1`` at most the shortest literal), one table lookup each. An occurrence of a
    literal at ``p`` covers whole the aligned windows from ``q = ceil(p / width) * width`` on
    (``q - p < width``) to its end, which sit at the literal's offsets ``q - p``, ``q - p + width``,
    and so on; so for each residue of ``q - p`` modulo ``width`` the table holds one of those
    windows (the one with the most digits: an identifier's digits set it apart, a prefix that
    all of them share, ``+91`` or ``user``, does not), with the bit of its offset. A window found
    gives the literal's possible starts; a start is kept when its first ``min(8, shortest)``
    bytes are a literal's, and then compared with each such literal whole. A hash collision
    only adds starts to compare: nothing is missed. Literals shorter than :data:`SHORT_LITERAL`,
    and few literals or a short text (where the passes' fixed cost does not pay), are searched
    one substring search each."""

    def __init__(self, literals: Iterable[bytes]) -> None:
        found = sorted(set(literals))
        if not found or b"" in found:
            raise ValueError("a finder needs non-empty literals")
        self.literals = found
        self.short = [literal for literal in found if len(literal) < SHORT_LITERAL]
        self.long = [literal for literal in found if len(literal) >= SHORT_LITERAL]
        if not self.long:
            return
        self.shortest = min(len(literal) for literal in self.long)
        self.width = width = 8 if self.shortest >= 15 else 4 if self.shortest >= 7 else 2
        self.prefix = min(8, self.shortest)
        self.mask = np.uint64((1 << (8 * self.prefix)) - 1)
        by_prefix: dict[int, list[bytes]] = {}
        masks: dict[int, int] = {}
        for literal in self.long:
            by_prefix.setdefault(int.from_bytes(literal[:self.prefix], "little"), []).append(literal)
            for residue in range(width):
                offsets = range(residue, min(len(literal) - width, _OFFSETS - 1) + 1, width)
                best = max(offsets, key=lambda at: (_rarity(literal[at:at + width]), at))
                window = int.from_bytes(literal[best:best + width], "little")
                masks[window] = masks.get(window, 0) | (1 << best)
        self.by_prefix = {key: tuple(value) for key, value in by_prefix.items()}
        self.prefixes = np.array(sorted(by_prefix), dtype=np.uint64)
        # A slot per window and 255 more (few collisions: each adds starts to compare), in a
        # table of booleans (one byte a slot: it stays in cache, and NumPy finds the true ones of
        # a boolean array fastest); the offsets' bits in another, read on hits only.
        self.bits = 16 if width == 2 else max(12, min(20, math.ceil(math.log2(len(masks))) + 8))
        self.masks = np.zeros(1 << self.bits, dtype=np.uint32)
        windows = np.array(list(masks), dtype=f"<u{width}")
        np.bitwise_or.at(self.masks, self._slots(windows), np.array(list(masks.values()), dtype=np.uint32))
        self.present = self.masks != 0
        self.mask_bytes = (max(masks.values()).bit_length() + 7) // 8

    def _slots(self, windows: np.ndarray) -> np.ndarray:
        """Each window's slot in the tables."""
        if self.width == 2:
            return windows  # 65,536 slots: the window itself
        factor, size = _HASH[self.width]
        slots = windows * factor
        slots >>= windows.dtype.type(size - self.bits)
        return slots

    def holds(self, text: bytes) -> bool:
        """Whether ``text`` holds any of the literals."""
        return next(self._found(text), None) is not None

    def occurrences(self, text: bytes) -> list[tuple[int, int]]:
        """(start, end) of every occurrence of every literal in ``text`` (unordered, maybe twice)."""
        return list(self._found(text))

    def _found(self, text: bytes) -> Iterator[tuple[int, int]]:
        for literal in self.short:
            yield from _each(text, literal)
        if not self.long:
            return
        if len(self.long) <= _FEW or len(self.long) * len(text) <= _SMALL or len(text) < 2 * self.width:
            for literal in self.long:
                yield from _each(text, literal)
            return
        yield from self._windowed(text)

    def _windowed(self, text: bytes) -> Iterator[tuple[int, int]]:
        size, width = len(text), self.width
        windows = np.frombuffer(text, dtype=f"<u{width}", count=size // width)
        slots = self._slots(windows)
        hits = np.flatnonzero(self.present.take(slots))
        if not len(hits):
            return
        masks = self.masks.take(slots[hits]).astype("<u4").view(np.uint8).reshape(-1, 4)[:, :self.mask_bytes]
        rows, offsets = np.nonzero(np.unpackbits(masks, axis=1, bitorder="little"))
        starts = hits[rows] * width - offsets
        starts = starts[(starts >= 0) & (starts <= size - self.shortest)]
        tail = starts[starts > size - 8].tolist()
        inner = starts[starts <= size - 8]
        if len(inner):
            # Every 8 bytes from each start at once (an unaligned view with a stride of one byte).
            keys = np.ndarray((size - 7,), dtype="<u8", buffer=text, strides=(1,))[inner] & self.mask
            at = np.minimum(np.searchsorted(self.prefixes, keys), len(self.prefixes) - 1)
            kept = self.prefixes[at] == keys
            for start, key in zip(inner[kept].tolist(), keys[kept].tolist()):
                for literal in self.by_prefix[key]:
                    if text.startswith(literal, start):
                        yield start, start + len(literal)
        for start in tail:
            for literal in self.by_prefix.get(int.from_bytes(text[start:start + self.prefix], "little"), ()):
                if text.startswith(literal, start):
                    yield start, start + len(literal)


def _each(text: bytes, literal: bytes) -> Iterator[tuple[int, int]]:
    at = text.find(literal)
    while at >= 0:
        yield at, at + len(literal)
        at = text.find(literal, at + 1)


def _rarity(window: bytes) -> tuple[int, int]:
    """How unlikely a literal's window is in text, roughly: its digits, then its bytes that are
    not ASCII letters or spaces (words and shared prefixes are common; an identifier's digits
    are not). Only the speed depends on it, never what is found."""
    digits = sum(48 <= byte <= 57 for byte in window)
    return digits, sum(not (65 <= byte <= 90 or 97 <= byte <= 122 or byte == 32) for byte in window)
