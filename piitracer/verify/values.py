"""The resolved values to look for, indexed by type, and the ways they can be written down.

Matching is typed, so a match means the subject's datum and not a coincidence of digits:
an integer matches integers (and a text that is exactly its decimal form, as a key cast to
string downstream is the same datum); a string matches strings; a float, a decimal and a date
match their own types only. The BIGINT key 7 never matches the float 7.0 or the text "17".

Inside free text (log messages, predicates in a Delta commit, text columns, unknown files) a value
of at least ``MIN_TEXT_LENGTH`` characters is found only as a whole token: what stands right before
and after it decides, by the kind of value (:func:`value_kind`). Shorter values are matched whole
only: a 3-character value inside arbitrary text is noise, not evidence.

- An **integer** (its decimal text): never inside a run of letters and digits (the 4242 in the hex
  digest ``b474734c4242a866`` is not user 4242), never part of a decimal (``3.4242``, ``4242.5``)
  or a signed number (``-4242``). ``_`` separates (``user_4242`` is user 4242).
- A **number string** (a phone number or any digit string: an optional leading ``+``, digits,
  possibly grouped by spaces, ``-``, ``.`` or parentheses, ending in a digit): never inside a longer
  number, so no digit right before it (before its ``+`` when it has one: the ``+`` is part of the
  value) and no digit right after it. ``+155501001`` and ``1+15550100`` do not hold ``+15550100``;
  ``tel:+15550100``, ``tel+15550100`` and ``+15550100.`` do, and so does ``+15550100`` hold the digit
  string ``15550100``. Letters around it do not matter (``ph15550100`` holds it).
- An **e-mail address** (one ``@`` between a local part and a domain, no spaces): never inside a
  longer address, so right before it no e-mail local-part character (a letter, a digit, one of
  ``_ . + - ! # $ % & * ^ ` ~``) and right after it no domain character (a letter, a digit, ``-``),
  nor a ``.`` followed by one: ``joann@x.com``, ``jo.ann@x.com`` and ``ann@x.com.au`` do not hold
  ``ann@x.com``; ``mailto:ann@x.com``, ``<ann@x.com>``, ``email=ann@x.com`` and ``…ann@x.com.``
  (the full stop of a sentence) do.
- **Any other string** (an identifier such as a PAN ``ABCDE1234F`` or a user id ``u-42``, a name):
  never inside a longer run of letters and digits: when it starts with a letter or digit, none
  right before it; when it ends with one, none right after it. ``XABCDE1234F`` and ``u-420`` do
  not hold them; ``pan=ABCDE1234F;`` and ``user_u-42`` do.

Everything else around a value is a separator that leaves it whole: spaces, ``,``, quotes, ``=``,
``/``, ``:``, ``;``, ``|``, ``?``, brackets, the start or end of the text, and ``_`` (except right
before an e-mail address, where it belongs to the local part). Matching is
case-sensitive, as the values were resolved. Overlapping values are all found (``ann smith`` and
``smith jones`` both in ``ann smith jones``). In raw bytes the same rule reads the UTF-8 text
around a hit. Redaction (:meth:`ValueIndex.redact_text`) is looser on purpose: it hides a string
value wherever its characters occur, so a shown name never carries them.

Where a value sits decides whether a number there can be one (:class:`Place`): counts, sizes,
ids, offsets and sequence numbers in manifests, metadata and logs are never subject values, so
a file of 1000 rows is not user 1000.

A string bound in an Iceberg manifest names a longer subject string by its prefix only when it
is as long as Iceberg's default truncation (``truncate(16)``): a shorter bound was not truncated,
so it is another, whole value (the bound ``+15550100`` is not the subject ``+155501001``).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from enum import Enum
from typing import Any, Iterable, Mapping
from urllib.parse import unquote, unquote_plus, unquote_to_bytes

MIN_TEXT_LENGTH = 4
# Iceberg truncates string bounds to 16 characters by default (write.metadata.metrics.default
# truncate(16)): a lower bound of that length that is a prefix of a subject's string may be that
# value. A shorter bound was not truncated: it is a whole value, another one.
MIN_TRUNCATED_PREFIX = 16

# The kinds of value a token rule is stated for (module docstring).
INT, NUMBER, EMAIL, WORD = "int", "number", "email", "word"
_NUMBER_TEXT = re.compile(r"\+?\d(?:[\d ().-]*\d)?")
_EMAIL_TEXT = re.compile(r"[^@\s]+@[^@\s]+")
# Characters of an e-mail local part that join an address (RFC 5322 atext minus the ones that
# also separate fields in text: quotes, '=', '/', '?', '|', braces).
_LOCAL_PART = frozenset("_.+-!#$%&*^`~")


def value_kind(text: str) -> str:
    """The kind of a string value, which decides its token rule inside text: ``number`` (a phone
    number or digit string), ``email`` or ``word`` (identifiers, names: everything else)."""
    if _NUMBER_TEXT.fullmatch(text):
        return NUMBER
    if _EMAIL_TEXT.fullmatch(text):
        return EMAIL
    return WORD


def is_whole(kind: str, token: str, before: str, after: str) -> bool:
    """Whether ``token`` (a value of ``kind``: ``int`` or a :func:`value_kind`) found between
    ``before`` (the text before it; its last two characters matter) and ``after`` (the text after
    it; its first two matter) is that value, not part of a longer one (module docstring)."""
    b1, b2 = before[-1:], before[-2:-1]
    a1, a2 = after[:1], after[1:2]
    if kind == INT:
        if b1.isalnum() or (b1 == "." and b2.isdecimal()) or (b1 in ("+", "-") and not b2.isalnum()):
            return False
        return not (a1.isalnum() or (a1 == "." and a2.isdecimal()))
    if kind == NUMBER:
        return not (b1.isdecimal() or a1.isdecimal())
    if kind == EMAIL:
        if b1.isalnum() or b1 in _LOCAL_PART:
            return False
        return not (a1.isalnum() or a1 == "-" or (a1 == "." and (a2.isalnum() or a2 == "-")))
    if token[:1].isalnum() and b1.isalnum():
        return False
    return not (token[-1:].isalnum() and a1.isalnum())


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
    # False: an index of whole values only (an identifier column's: verify.scope); nothing is
    # searched inside text, so :meth:`search_text` and :meth:`re2_pattern` find nothing.
    inside_text: bool = True

    @classmethod
    def build(cls, value_sets: Mapping[str, Iterable[Any]], inside_text: bool = True) -> "ValueIndex":
        """The index of ``value_sets`` (name -> values); ``inside_text=False``: whole values only."""
        index = cls(inside_text=inside_text)
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
        # Token text -> (kind, value sets): every value long enough to be searched inside text.
        self._tokens: dict[str, list[tuple[str, set[str]]]] = {}
        for text in self.strs if self.inside_text else ():
            if len(text) >= MIN_TEXT_LENGTH:
                self._tokens.setdefault(text, []).append((value_kind(text), self.by_key[("str", text)]))
        for number in self.ints if self.inside_text else ():
            if len(str(number)) >= MIN_TEXT_LENGTH:
                self._tokens.setdefault(str(number), []).append((INT, self.by_key[("int", number)]))
        self._byte_tokens = {text.encode("utf-8"): entries for text, entries in self._tokens.items()}
        self._lengths = sorted({len(text) for text in self._tokens}, reverse=True)
        self._byte_lengths = sorted({len(data) for data in self._byte_tokens}, reverse=True)
        # Where any token starts (a zero-width look-ahead, so overlapping tokens are all seen; is_whole
        # then decides on each one), the tokens shaped as a trie (``ab(?:c|d)``): Python's re tries a
        # flat alternation's branches one by one at every position of the text.
        self._scanner = re.compile(f"(?={_trie_pattern(self._tokens)})") if self._tokens else None
        self._byte_scanner = re.compile(self._scanner.pattern.encode("utf-8")) if self._scanner else None
        # Redaction hides a string value's characters wherever they occur (looser than the rule).
        self._redact_pattern = _redact_pattern(self.strs, self.ints)
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
                    raw = segment.split("=", 1)[1]
                    for decoded in (raw, *url_decodings(raw)):
                        names |= self.match(decoded)
        return names

    def match_prefix(self, value: str) -> set[str]:
        """Sets holding a longer string that starts with ``value`` (a truncated Iceberg lower bound)."""
        if len(value) < MIN_TRUNCATED_PREFIX:  # not truncated: a whole (other) value
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
        """Sets whose values occur as whole tokens inside ``text`` (the rule per kind of value is
        in the module docstring); ``numbers=False``: string values only."""
        if self._scanner is None or not text:
            return set()
        names: set[str] = set()
        for hit in self._scanner.finditer(text):
            start = hit.start()
            for length in self._lengths:
                token = text[start:start + length]
                for kind, found in self._tokens.get(token, ()):
                    if (numbers or kind != INT) and not found <= names and is_whole(
                            kind, token, text[max(0, start - 2):start], text[start + length:start + length + 2]):
                        names |= found
        return names

    def _token(self, token: str, numbers: bool = True) -> set[str]:
        names = set(self.by_key.get(("str", token), ()))
        if numbers and token.isdigit():
            names |= self.by_key.get(("int", int(token)), set())
        return names

    def search_bytes(self, data: bytes) -> set[str]:
        """Like :meth:`search_text` on raw bytes: values as UTF-8, the token rule read on the text
        decoded around each hit (bytes that are not UTF-8 separate)."""
        if self._byte_scanner is None or not data:
            return set()
        names: set[str] = set()
        for hit in self._byte_scanner.finditer(data):
            start = hit.start()
            for length in self._byte_lengths:
                for kind, found in self._byte_tokens.get(data[start:start + length], ()):
                    if found <= names:
                        continue
                    # 8 bytes hold the two characters on each side whatever their UTF-8 length.
                    before = data[max(0, start - 8):start].decode("utf-8", "replace")
                    after = data[start + length:start + length + 8].decode("utf-8", "replace")
                    if is_whole(kind, data[start:start + length].decode("utf-8"), before, after):
                        names |= found
        return names

    def redact_text(self, text: str) -> str:
        """``text`` with every value token replaced by ``<value set>`` (for paths and field names)."""
        if not text:
            return text
        if self.match(text):
            return f"<{sorted(self.match(text))[0]}>"
        if self._redact_pattern is None:
            return text
        return self._redact_pattern.sub(lambda hit: f"<{sorted(self._token(hit.group(0)) or {'value'})[0]}>", text)

    def may_be_in_json(self, text: str | bytes) -> bool:
        """False only when no searched value can be read from this JSON (or JSON lines) text by
        :func:`~piitracer.verify.decoders._json_text`: a JSON leaf, key or text that holds a value
        holds its literal characters (a string's, an integer's decimal form), and none occurs in
        the text. One regular-expression pass instead of a walk of every leaf in Python: a table's
        kept ``metadata.json`` files repeat its whole history, each a little longer. Not used (True)
        when a float is searched (a JSON number has many spellings), when a value holds a character
        JSON may escape (quotes, backslash, ``/``, control or non-ASCII characters), or when the
        text holds a ``%`` (a path segment is URL-decoded before it is matched) or a ``\\u``
        escape (JSON may spell any character so). ``text`` may be the file's UTF-8 bytes: the
        literals are printable ASCII, found in the bytes exactly where in the decoded text (a file
        that needs no walk need not be decoded either)."""
        finders = self.__dict__.get("_json_literals", False)
        if finders is False:
            finders = self.__dict__["_json_literals"] = self._json_literals()
        if finders is True:
            return True
        if isinstance(text, str):
            if "%" in text or "\\u" in text:
                return True
            return finders is not None and finders[0](text)
        if b"%" in text or b"\\u" in text:
            return True
        return finders is not None and finders[1](text)

    def _json_literals(self):
        """The compiled prefilters of :meth:`may_be_in_json` (for text, for bytes); True: no
        prefilter; None: nothing a JSON text holds can match (no string or integer is searched)."""
        if self.floats:
            return True
        literals = self.strs | set(self.int_texts)
        if any(not text or any(c in '"\\/%' or not " " <= c <= "~" for c in text) for text in literals):
            return True
        if not literals:
            return None
        return (_finder(literals, _trie_pattern),
                _finder({text.encode("ascii") for text in literals},
                        _bytes_alternation))

    def may_be_in_avro(self, data: bytes) -> bool:
        """False only when no searched value can be read from an Iceberg manifest or manifest
        list whose decompressed Avro blocks are ``data`` (:func:`~piitracer.verify.decoders._avro`):
        every place there is a string (raw UTF-8), a partition value (an Avro zigzag varint, or the
        value's own bytes), or a bound in Iceberg's single-value form (little-endian integers and
        floats, UTF-8 text whose first 16 characters a truncated bound keeps, raw bytes); none of
        those forms of a searched value occurs in ``data``. Not used (True) when a decimal or a
        timestamp is searched (their encodings vary). A path is URL-decoded before it is searched,
        so bytes holding a ``%`` or a ``+`` are searched URL-decoded too (:func:`url_decodings`): a bare ``%`` byte is common in an
        Avro block (a count, an id), and taking it for a path made most manifest lists of a long
        history be decoded for nothing."""
        finder = self.__dict__.get("_avro_literals", False)
        if finder is False:
            finder = self.__dict__["_avro_literals"] = self._avro_literals()
        if finder is True:
            return True
        if finder is None:
            return False
        return finder(data) or any(finder(decoded) for decoded in url_decodings(data))

    def _avro_literals(self):
        """The compiled prefilter of :meth:`may_be_in_avro` (True: none; None: nothing can match)."""
        if self.decimals or self.datetimes or "" in self.strs or any("\ufffd" in text for text in self.strs):
            return True  # (U+FFFD: what an invalid %-escape of a path decodes to, not its bytes)
        forms: set[bytes] = set(self.bytes_values)
        for text in self.strs | set(self.int_texts):
            forms.add(text[:MIN_TRUNCATED_PREFIX].encode("utf-8"))  # a truncated bound keeps a prefix
        for number in self.ints | {(d - date(1970, 1, 1)).days for d in self.dates}:
            if -2**63 <= number < 2**63:  # no Avro long or 8-byte bound holds a larger one
                forms |= {_zigzag_varint(number), number.to_bytes(8, "little", signed=True)}
            if -2**31 <= number < 2**31:
                forms.add(number.to_bytes(4, "little", signed=True))
        for number in self.floats:
            forms |= {struct.pack("<d", number), struct.pack("<f", number)} if abs(number) < 3.4e38 else {struct.pack("<d", number)}
        forms.discard(b"")
        if not forms:
            return None
        return _finder(forms, _bytes_alternation)

    def whole_values(self) -> "ValueIndex":
        """This index's values, whole values only (``inside_text=False``): what a key column is
        matched with. Built once per index."""
        found = self.__dict__.get("_whole_values")
        if found is None:
            if not self.inside_text:
                return self
            found = ValueIndex(by_key={key: set(names) for key, names in self.by_key.items()}, inside_text=False)
            found._prepare()
            self.__dict__["_whole_values"] = found
        return found

    def re2_pattern(self) -> str | None:
        """An RE2 (Arrow) pattern that finds at least every token :meth:`search_text` finds; RE2 has
        no look-around, so the digit boundaries are spelt as character classes. Numbers (integers
        and number strings) carry their ASCII digit boundaries, a superset of the rule; e-mails and
        words are plain substrings; the Python rule decides on each hit."""
        if not self._re2_built:
            by_length = sorted(self._tokens, key=lambda t: (-len(t), t))
            parts = [_re2_escape(t) for t in by_length if any(k in (EMAIL, WORD) for k, _ in self._tokens[t])]
            numbers = [_re2_escape(t) for t in by_length if any(k in (INT, NUMBER) for k, _ in self._tokens[t])]
            alternatives = []
            if parts:
                alternatives.append("(?:" + "|".join(parts) + ")")
            if numbers:
                alternatives.append(r"(?:^|[^0-9])(?:" + "|".join(numbers) + r")(?:$|[^0-9])")
            self._re2 = "|".join(alternatives) or None
            self._re2_built = True  # after the pattern: a reader in another thread never sees "built, none"
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


def _trie_pattern(words: Iterable[str]) -> str:
    """One regular expression matching exactly ``words`` (non-empty strings), shaped as their trie."""
    trie: dict[str, Any] = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = True  # a word ends here

    def pattern(node: dict[str, Any]) -> str:
        branches = []
        for char, child in sorted(node.items()):
            if not char:
                continue
            text = re.escape(char)
            while len(child) == 1 and "" not in child:  # one way on: a literal run, no recursion
                ((char, child),) = child.items()
                text += re.escape(char)
            branches.append(text + pattern(child))
        if not branches:
            return ""
        if "" in node:  # a word ends here, longer ones go on
            return "(?:" + "|".join(branches) + ")?"
        return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"

    return pattern(trie)


def _redact_pattern(strings: set[str], ints: set[int]) -> re.Pattern[str] | None:
    """Strings wherever their characters occur, integers as whole numeric tokens: what a shown
    name (a path, a field name) must not carry."""
    parts = [s for s in strings if len(s) >= MIN_TEXT_LENGTH]
    numbers = [str(i) for i in ints if len(str(i)) >= MIN_TEXT_LENGTH]
    alternatives = []
    if parts:
        alternatives.append(_trie_pattern(parts))  # greedy: the longest value at a place
    if numbers:
        # A whole numeric token (see _NUMBER_BEFORE): 17000000001, 7000000001.5, -7000000001 and
        # the digits inside the hex digest c47000000001a are other data.
        alternatives.append(_NUMBER_BEFORE + "(?:" + _trie_pattern(numbers) + ")" + _NUMBER_AFTER)
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


FEW_LITERALS = 24  # up to this many, one substring search each (memchr speed) beats one regex pass


def _bytes_alternation(found: list[bytes]) -> bytes:
    """A bytes pattern matching any of ``found`` (escaped), the longest first."""
    return b"|".join(re.escape(form) for form in sorted(found, key=len, reverse=True))


def _finder(literals, pattern):
    """Whether a text holds any of ``literals``: a substring search per literal when they are few,
    else one pass of the regular expression ``pattern(literals)`` builds."""
    found = sorted(literals)
    if len(found) <= FEW_LITERALS:
        return lambda text: any(literal in text for literal in found)
    compiled = re.compile(pattern(found))
    return lambda text: compiled.search(text) is not None


def url_decodings(text: str | bytes) -> list:
    """The forms a URL-encoded path segment may stand for (none when it holds no escape): ``%XX``
    decoded, and also with ``+`` as a space (pyiceberg's partition folders: ``quote_plus``).
    Bytes are decoded to bytes (the Avro prefilter), text to text."""
    if isinstance(text, str):
        if "%" not in text and "+" not in text:
            return []
        return list(dict.fromkeys(form for form in (unquote(text), unquote_plus(text)) if form != text))
    if b"%" not in text and b"+" not in text:
        return []
    return list(dict.fromkeys(form for form in (unquote_to_bytes(text), unquote_to_bytes(text.replace(b"+", b" ")))
                              if form != text))


def _zigzag_varint(number: int) -> bytes:
    """An integer as Avro writes an int or long: zigzag, then a little-endian base-128 varint."""
    value = ((number << 1) ^ (number >> 63)) & (2**64 - 1)
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


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
