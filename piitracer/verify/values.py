"""The resolved values to look for, indexed by type, and the ways they can be written down.

Matching is typed, so a match means the subject's datum and not a coincidence of digits:
an integer matches integers (and a text that is exactly its decimal form, as a key cast to
string downstream is the same datum); a string matches strings; a float, a decimal and a date
match their own types only. The BIGINT key 7 never matches the float 7.0 or the text "17".

Inside free text (log messages, predicates in a Delta commit, unknown files) a value is searched
as a token: strings of at least ``MIN_TEXT_LENGTH`` characters as substrings, integers as whole
numeric tokens: never inside a run of letters and digits (the 4242 in the hex digest
``b474734c4242a866`` is not user 4242), never part of a decimal (``3.4242``, ``4242.5``) or a signed
number (``-4242``). Shorter values are matched whole only: a 3-character value inside arbitrary
text is noise, not evidence.

Where a value sits decides whether a number there can be one (:class:`Place`): counts, sizes,
ids, offsets and sequence numbers in manifests, metadata and logs are never subject values, so
a file of 1000 rows is not user 1000.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from enum import Enum
from typing import Any, Iterable, Mapping
from urllib.parse import unquote

MIN_TEXT_LENGTH = 4
# Iceberg truncates string bounds to 16 characters by default (write.metadata.metrics.default
# truncate(16)): a lower bound that is a long enough prefix of a subject's string is that value.
MIN_TRUNCATED_PREFIX = 8


class Place(Enum):
    """What kind of place a value was read from, which decides what can match there."""

    VALUE = "value"  # data, bounds, statistics, partition values, predicates, unknown files: everything
    PATH = "path"  # file paths and map keys: strings anywhere; a number only as a `key=value` segment
    COUNT = "count"  # counts, sizes, ids, offsets, sequence numbers: strings only, never a number


# A number token: not inside a run of letters/digits (Unicode), not the fraction of a decimal, not
# after a sign that starts a number; not followed by letters/digits or by a fraction.
_NUMBER_BEFORE = r"(?<![^\W_])(?<!\d\.)(?<!(?<![^\W_])[-+])"
_NUMBER_AFTER = r"(?![^\W_]|\.\d)"


def type_key(value: Any) -> tuple[str, Any] | None:
    """The typed identity of a value: ``7`` and ``7.0`` and ``True`` are different data."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", value)
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, Decimal):
        return ("decimal", value)
    if isinstance(value, datetime):
        return ("datetime", value)
    if isinstance(value, date):
        return ("date", value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return ("bytes", bytes(value))
    return None


@dataclass
class ValueIndex:
    """Value set name -> values, looked up by typed value. Never exposes a value in its output:
    every answer is a set of value-set names."""

    by_key: dict[tuple[str, Any], set[str]] = field(default_factory=dict)

    @classmethod
    def build(cls, value_sets: Mapping[str, Iterable[Any]]) -> "ValueIndex":
        index = cls()
        for name, values in value_sets.items():
            for value in values:
                key = type_key(value)
                if key is not None:
                    index.by_key.setdefault(key, set()).add(name)
        index._prepare()
        return index

    def _prepare(self) -> None:
        self.ints = {v for (t, v) in self.by_key if t == "int"}
        self.strs = {v for (t, v) in self.by_key if t == "str"}
        self.floats = {v for (t, v) in self.by_key if t == "float"}
        self.decimals = {v for (t, v) in self.by_key if t == "decimal"}
        self.dates = {v for (t, v) in self.by_key if t == "date"}
        self.datetimes = {v for (t, v) in self.by_key if t == "datetime"}
        self.bytes_values = {v for (t, v) in self.by_key if t == "bytes"}
        # The decimal text of an integer key is the same datum (CAST(user_id AS STRING)).
        self.int_texts = {str(v): v for v in self.ints}
        self._prefixes: dict[int, dict[str, set[str]]] = {}
        self._text_pattern = _text_pattern(self.strs, self.ints)
        self._bytes_pattern = re.compile(self._text_pattern.pattern.encode()) if self._text_pattern else None
        self._re2: str | None = None
        self._re2_built = False

    def __bool__(self) -> bool:
        return bool(self.by_key)

    # ---- whole values -----------------------------------------------------------------------

    def match(self, value: Any, numbers: bool = True) -> set[str]:
        """The value sets that hold exactly this (typed) value; empty when none. ``numbers=False``:
        a number, or a text that is a number's decimal form, matches nothing (a place of counts)."""
        key = type_key(value)
        if key is None:
            return set()
        if not numbers and (key[0] != "str" or value in self.int_texts):
            return set()
        found = self.by_key.get(key)
        if found:
            return set(found)
        if key[0] == "str" and value in self.int_texts:
            return set(self.by_key[("int", self.int_texts[value])])
        return set()

    def find(self, value: Any, place: Place = Place.VALUE) -> set[str]:
        """The value sets found in ``value`` read from a place of kind ``place``: the whole value,
        and inside text (see the module docstring and :class:`Place`)."""
        if place is Place.VALUE:
            names = self.match(value)
            return names | self.search_text(value) if isinstance(value, str) else names
        if not isinstance(value, str):
            return set()
        names = self.match(value, numbers=False) | self.search_text(value, numbers=False)
        if place is Place.PATH:
            for segment in value.split("/"):
                if "=" in segment:  # Hive-style partition folder, Iceberg partition summary key
                    names |= self.match(unquote(segment.split("=", 1)[1]))
        return names

    def match_prefix(self, value: str) -> set[str]:
        """Sets holding a longer string that starts with ``value`` (a truncated Iceberg lower bound)."""
        if len(value) < MIN_TRUNCATED_PREFIX:
            return set()
        table = self._prefixes.get(len(value))
        if table is None:
            table = {}
            for text in self.strs:
                if len(text) > len(value):
                    table.setdefault(text[: len(value)], set()).update(self.by_key[("str", text)])
            self._prefixes[len(value)] = table
        return set(table.get(value, ()))

    # ---- free text --------------------------------------------------------------------------

    def search_text(self, text: str, numbers: bool = True) -> set[str]:
        """Sets whose values occur as tokens inside ``text`` (see the module docstring);
        ``numbers=False``: string values only."""
        if self._text_pattern is None or not text:
            return set()
        names: set[str] = set()
        for hit in self._text_pattern.finditer(text):
            names |= self._token(hit.group(0), numbers)
        return names

    def _token(self, token: str, numbers: bool = True) -> set[str]:
        names = set(self.by_key.get(("str", token), ()))
        if numbers and token.isdigit():
            names |= self.by_key.get(("int", int(token)), set())
        return names

    def search_bytes(self, data: bytes) -> set[str]:
        """Like :meth:`search_text` on raw bytes (values as UTF-8; the token rule over ASCII)."""
        if self._bytes_pattern is None or not data:
            return set()
        names: set[str] = set()
        for hit in self._bytes_pattern.finditer(data):
            names |= self._token(hit.group(0).decode("utf-8", "replace"))
        return names

    def redact_text(self, text: str) -> str:
        """``text`` with every value token replaced by ``<value set>`` (for paths and field names)."""
        if not text:
            return text
        if self.match(text):
            return f"<{sorted(self.match(text))[0]}>"
        if self._text_pattern is None:
            return text
        return self._text_pattern.sub(lambda hit: f"<{sorted(self._token(hit.group(0)) or {'value'})[0]}>", text)

    def re2_pattern(self) -> str | None:
        """An RE2 (Arrow) pattern that finds at least every token :meth:`search_text` finds; RE2 has
        no look-around, so the digit boundaries are spelt as character classes."""
        if not self._re2_built:
            self._re2_built = True
            parts = [_re2_escape(s) for s in sorted(self.strs, key=len, reverse=True) if len(s) >= MIN_TEXT_LENGTH]
            numbers = [str(i) for i in sorted(self.ints) if len(str(i)) >= MIN_TEXT_LENGTH]
            alternatives = []
            if parts:
                alternatives.append("(?:" + "|".join(parts) + ")")
            if numbers:
                # Looser than the Python rule (a superset): the Python rule decides on each hit.
                alternatives.append(r"(?:^|[^0-9])(?:" + "|".join(numbers) + r")(?:$|[^0-9])")
            self._re2 = "|".join(alternatives) or None
        return self._re2

    # ---- binary encodings (Iceberg single-value serialization) ---------------------------

    def match_bound(self, raw: bytes, iceberg_type: str | None) -> tuple[set[str], bool]:
        """Decode an Iceberg manifest bound of ``iceberg_type`` and match it. Returns (sets,
        truncated): ``truncated`` when only a prefix of a subject string matched."""
        value = decode_single_value(raw, iceberg_type) if iceberg_type else None
        if value is not None:
            names = self.match(value)
            if names:
                return names, False
            if isinstance(value, str):
                prefix = self.match_prefix(value)
                if prefix:
                    return prefix, True
            return set(), False
        # Unknown type: compare against every plausible encoding of the values.
        names = set()
        for candidate in _plain_decodings(raw):
            names |= self.match(candidate)
        return names, False


def _text_pattern(strings: set[str], ints: set[int]) -> re.Pattern[str] | None:
    parts = [re.escape(s) for s in sorted(strings, key=len, reverse=True) if len(s) >= MIN_TEXT_LENGTH]
    numbers = [str(i) for i in sorted(ints) if len(str(i)) >= MIN_TEXT_LENGTH]
    alternatives = []
    if parts:
        alternatives.append("|".join(parts))
    if numbers:
        # A whole numeric token (see _NUMBER_BEFORE): 17000000001, 7000000001.5, -7000000001 and
        # the digits inside the hex digest c47000000001a are other data.
        alternatives.append(_NUMBER_BEFORE + "(?:" + "|".join(numbers) + ")" + _NUMBER_AFTER)
    if not alternatives:
        return None
    return re.compile("|".join(f"(?:{a})" for a in alternatives))


def decode_single_value(raw: bytes, iceberg_type: str) -> Any:
    """Iceberg's binary single-value serialization (spec, Appendix D) for primitive types."""
    kind = iceberg_type.lower()
    try:
        if kind in ("int", "date") and len(raw) == 4:
            number = struct.unpack("<i", raw)[0]
            return number if kind == "int" else _date(number)
        if kind in ("long",) and len(raw) in (4, 8):
            return struct.unpack("<q" if len(raw) == 8 else "<i", raw)[0]
        if kind in ("time", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"):
            return None  # times are not identifiers piitracer resolves
        if kind == "float" and len(raw) == 4:
            return struct.unpack("<f", raw)[0]
        if kind == "double" and len(raw) == 8:
            return struct.unpack("<d", raw)[0]
        if kind == "string":
            return raw.decode("utf-8")
        if kind.startswith("decimal"):
            scale = int(kind.split(",")[1].strip(" )"))
            return Decimal(int.from_bytes(raw, "big", signed=True)).scaleb(-scale)
        if kind in ("binary", "uuid") or kind.startswith("fixed"):
            return bytes(raw)
        if kind == "boolean":
            return None
    except (struct.error, UnicodeDecodeError, ValueError, IndexError):
        return None
    return None


def _date(days: int) -> date | None:
    try:
        return date.fromordinal(date(1970, 1, 1).toordinal() + days)
    except ValueError:
        return None


def _plain_decodings(raw: bytes) -> list[Any]:
    out: list[Any] = [bytes(raw)]
    if len(raw) == 8:
        out.append(struct.unpack("<q", raw)[0])
    if len(raw) == 4:
        out.append(struct.unpack("<i", raw)[0])
    try:
        out.append(raw.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    return out



def _re2_escape(text: str) -> str:
    """Escape ASCII punctuation only: RE2 rejects Python's escapes of spaces and other characters."""
    return "".join("\\" + c if (c.isascii() and not c.isalnum() and c.isprintable() and c != " ") else c for c in text)
