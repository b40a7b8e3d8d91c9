"""Subject key values, parsed strictly against the key column's type.

A deletion tool must delete exactly the person asked for. Spark's lenient cast turns ``4242.9``
into 4242, ``" 17 "`` into 17 and ``"5000\\u0000"`` into 5000: a typo would erase somebody else.
So every value a request names is parsed here, at plan time and again at execute time, by one
rule for ``--subject``, CSV and JSONL:

- integer keys (``tinyint``, ``smallint``, ``int``, ``bigint``) accept only an exact integer in
  range, written in ASCII decimal digits with an optional leading ``-``: no spaces, no ``+``, no
  leading zeros, no fraction (``4242.9``, ``4242.0``), no exponent (``1e3``), no hex (``0x10``);
- ``decimal(p,s)`` accepts a plain decimal number with at most ``s`` fraction digits and ``p``
  digits in all (never rounded);
- ``double``/``float`` accept a finite decimal number;
- ``date`` accepts ``YYYY-MM-DD`` only;
- ``string`` keys are taken exactly: no trim, no case fold — unless the catalog says the column
  is normalised (``normalised: {email: [trim, lower]}``), then those steps are applied.

Every type refuses control characters and invisible formatting characters (NUL, zero-width
space, BOM, bidi marks...): no identifier holds them, and they are how a value that looks right
differs from the one that matches. Errors say what is wrong, never the value itself (a value is
personal data: it must not reach a terminal, a log or a CI transcript).
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Iterable

INTEGER_BITS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}
_ALIASES = {
    "byte": "tinyint", "short": "smallint", "integer": "int", "long": "bigint", "int8": "tinyint",
    "int16": "smallint", "int32": "int", "int64": "bigint", "varchar": "string", "char": "string",
    "text": "string", "large_string": "string", "utf8": "string", "float64": "double", "float32": "float",
    "real": "float", "numeric": "decimal", "number": "decimal", "date32": "date",
}
_PARAMETERS = re.compile(r"^\s*([a-z_0-9]+)\s*(?:\(\s*([0-9]+)\s*(?:,\s*([0-9]+)\s*)?\))?\s*$")
_INTEGER = re.compile(r"0|-?[1-9][0-9]*")
_DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.([0-9]+))?")
_FLOAT = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
NORMALISATIONS = ("trim", "lower", "upper")


class KeyValueError(ValueError):
    """A subject value that does not parse as its key column's type. The message never holds the
    value: callers prefix it with the value's position (``--subject #2``, ``batch.csv:7``)."""


@dataclass(frozen=True)
class KeyType:
    """A key column's type, as piitracer compares values: ``bigint``, ``string``, ``decimal(10,2)``..."""

    name: str
    precision: int | None = None
    scale: int | None = None

    def __str__(self) -> str:
        if self.name == "decimal":
            return f"decimal({self.precision},{self.scale})"
        return self.name

    @property
    def is_integer(self) -> bool:
        return self.name in INTEGER_BITS


def parse_key_type(text: str) -> KeyType:
    """``'BIGINT'`` -> ``KeyType('bigint')``; ``'decimal(12, 2)'`` -> ``KeyType('decimal', 12, 2)``.
    Raises :class:`KeyValueError` for a type piitracer cannot compare keys of.

    Examples:
        >>> parse_key_type("BIGINT")
        KeyType(name='bigint', precision=None, scale=None)
        >>> str(parse_key_type("numeric(12, 2)"))
        'decimal(12,2)'
    """
    match = _PARAMETERS.match(str(text).lower())
    if not match:
        raise KeyValueError(f"unknown key type {text!r}")
    name = _ALIASES.get(match.group(1), match.group(1))
    if name == "decimal":
        precision = int(match.group(2) or 10)
        scale = int(match.group(3) or 0)
        if not (1 <= precision <= 38 and 0 <= scale <= precision):
            raise KeyValueError(f"decimal({precision},{scale}): expected 1 <= precision <= 38 and 0 <= scale <= precision")
        return KeyType("decimal", precision, scale)
    if match.group(2) is not None and name != "string":
        raise KeyValueError(f"type {text!r} takes no parameters")
    if name in INTEGER_BITS or name in ("string", "double", "float", "date"):
        return KeyType(name)
    raise KeyValueError(f"key type {text!r} is not supported (integers, string, decimal(p,s), double, float, date)")


def parse_key_value(raw: Any, key_type: KeyType, normalised: Iterable[str] = ()) -> Any:
    """The typed value (int, str, Decimal, float or date) that ``raw`` denotes as ``key_type``,
    or :class:`KeyValueError` saying what is wrong with it (never showing it).

    Examples:
        >>> parse_key_value("8841302", KeyType("bigint"))
        8841302
        >>> parse_key_value("19.90", parse_key_type("decimal(10,2)"))
        Decimal('19.90')
        >>> parse_key_value(" Ana@Example.com", KeyType("string"), normalised=["trim", "lower"])
        'ana@example.com'

        A value that is almost the key is refused, saying why but never showing it:

        >>> parse_key_value("4242.9", KeyType("bigint"))
        Traceback (most recent call last):
        piitracer.model.key_values.KeyValueError: is not an exact bigint: it has a decimal point (a fraction is never rounded to an id)
        >>> parse_key_value("00042", KeyType("bigint"))
        Traceback (most recent call last):
        piitracer.model.key_values.KeyValueError: is not an exact bigint: leading zeros are not accepted (is it a string id?)
        >>> parse_key_value("ana\\u200b@example.com", KeyType("string"))
        Traceback (most recent call last):
        piitracer.model.key_values.KeyValueError: contains an invisible or non-printing character (U+200B) at character 4
    """
    if not isinstance(raw, str) or isinstance(raw, bool):
        raise KeyValueError(f"expected text, got a {type(raw).__name__}")
    if raw == "":
        raise KeyValueError("is empty")
    _refuse_hidden_characters(raw)
    if key_type.name == "string":
        return normalise(raw, normalised)
    if raw != raw.strip():
        raise KeyValueError(f"has leading or trailing spaces: a {key_type} key is written without them")
    if key_type.is_integer:
        return _integer(raw, key_type)
    if key_type.name == "decimal":
        return _decimal(raw, key_type)
    if key_type.name in ("double", "float"):
        return _float(raw, key_type)
    if key_type.name == "date":
        return _date(raw)
    raise KeyValueError(f"key type {key_type} is not supported")


def normalise(value: str, steps: Iterable[str]) -> str:
    """Apply the catalog's normalisation steps to a string key, in order."""
    for step in steps:
        if step == "trim":
            value = value.strip()
        elif step == "lower":
            value = value.lower()
        elif step == "upper":
            value = value.upper()
        else:
            raise KeyValueError(f"unknown normalisation {step!r} (expected one of {', '.join(NORMALISATIONS)})")
    if value == "":
        raise KeyValueError("is empty after normalisation")
    return value


def _refuse_hidden_characters(raw: str) -> None:
    for position, char in enumerate(raw, start=1):
        category = unicodedata.category(char)
        if category in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
            kind = "a control character" if category == "Cc" else "an invisible or non-printing character"
            raise KeyValueError(f"contains {kind} (U+{ord(char):04X}) at character {position}")


def _integer(raw: str, key_type: KeyType) -> int:
    if not _INTEGER.fullmatch(raw):
        raise KeyValueError(f"is not an exact {key_type}: {_why_not_integer(raw)}")
    number = int(raw)
    bits = INTEGER_BITS[key_type.name]
    if not -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
        raise KeyValueError(f"is out of range for a {key_type} ({-(2 ** (bits - 1))} .. {2 ** (bits - 1) - 1})")
    return number


def _why_not_integer(raw: str) -> str:
    lowered = raw.lower()
    if raw == "-0":
        return "negative zero: write 0"
    if lowered.startswith(("0x", "-0x")):
        return "hexadecimal is not accepted, write the integer in decimal digits"
    if "." in raw:
        return "it has a decimal point (a fraction is never rounded to an id)"
    if re.fullmatch(r"-?[0-9.]+e[-+]?[0-9]+", lowered):
        return "an exponent is not accepted, write every digit"
    if raw.startswith("+"):
        return "write it without a '+' sign"
    if re.fullmatch(r"-?0[0-9]+", raw):
        return "leading zeros are not accepted (is it a string id?)"
    if any(c.isspace() for c in raw):
        return "it contains spaces"
    if any(c.isdigit() and not c.isascii() for c in raw):
        return "only ASCII digits 0-9 are accepted"
    return "expected ASCII decimal digits with an optional leading '-'"


def _decimal(raw: str, key_type: KeyType) -> Decimal:
    match = _DECIMAL.fullmatch(raw)
    if not match:
        raise KeyValueError(f"is not a plain decimal number for a {key_type} key (digits, an optional '-' and '.')")
    fraction = match.group(1) or ""
    if len(fraction) > (key_type.scale or 0):
        raise KeyValueError(f"has {len(fraction)} fraction digits; a {key_type} key has {key_type.scale} (it is never rounded)")
    try:
        value = Decimal(raw)
    except InvalidOperation:  # pragma: no cover - the regex admits only valid decimals
        raise KeyValueError(f"is not a decimal number for a {key_type} key") from None
    whole_digits = len(raw.lstrip("-").split(".")[0].lstrip("0"))
    if whole_digits > (key_type.precision or 0) - (key_type.scale or 0):
        raise KeyValueError(f"has too many digits for a {key_type} key")
    return value.quantize(Decimal(1).scaleb(-(key_type.scale or 0)))


def _float(raw: str, key_type: KeyType) -> float:
    if not _FLOAT.fullmatch(raw):
        raise KeyValueError(f"is not a decimal number for a {key_type} key")
    value = float(raw)
    if not math.isfinite(value):
        raise KeyValueError(f"is out of range for a {key_type} key")
    return value


def _date(raw: str) -> date:
    if not _DATE.fullmatch(raw):
        raise KeyValueError("is not a date written YYYY-MM-DD")
    try:
        return date.fromisoformat(raw)
    except ValueError:
        raise KeyValueError("is not a real calendar date (YYYY-MM-DD)") from None


def same_type(value: Any, key_type: KeyType) -> bool:
    """Whether a typed Python value (e.g. resolved from the source rows) is a value of ``key_type``
    exactly, with no conversion that could change it."""
    if isinstance(value, bool):
        return False
    if key_type.is_integer:
        bits = INTEGER_BITS[key_type.name]
        return isinstance(value, int) and -(2 ** (bits - 1)) <= value < 2 ** (bits - 1)
    if key_type.name == "string":
        return isinstance(value, str)
    if key_type.name == "decimal":
        return isinstance(value, Decimal) and value == value.quantize(Decimal(1).scaleb(-(key_type.scale or 0)))
    if key_type.name in ("double", "float"):
        return isinstance(value, float)
    if key_type.name == "date":
        return isinstance(value, date) and not isinstance(value, datetime)
    return False


def exact_values(values: Iterable[Any], key_type: KeyType | None) -> list[Any]:
    """The distinct values that are exactly values of ``key_type`` (an int also as the decimal
    text of a string key); every other value is left out: it cannot be equal to a key of that
    type without a conversion that could change it. ``key_type`` None (a type piitracer does not
    compare keys of) keeps nothing. What every engine's subject values are built from: the journal
    keeps resolved values as JSON, and nothing is cast leniently (text never becomes a number).

    Examples:
        >>> exact_values([3, "3", True, 2, None, 3, 2**40], KeyType("int"))  # no text, no bool, in range
        [2, 3]
        >>> exact_values([3, "3"], KeyType("string"))  # an int is also its decimal text
        ['3']
    """
    if key_type is None:
        return []
    kept = set()
    for value in values:
        if value is None:
            continue
        if same_type(value, key_type):
            kept.add(value)
        elif key_type.name == "string" and isinstance(value, int) and not isinstance(value, bool):
            kept.add(str(value))
    return sorted(kept, key=repr)
