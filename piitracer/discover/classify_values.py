"""What a column's sampled values are: each value validated per kind by a kept library, never shown,
logged or kept.

- ``python-stdnum``: Aadhaar (Verhoeff), Indian PAN, GSTIN, voter id (EPIC), US SSN, IBAN, IMEI and
  card numbers (Luhn), and the national/tax ids of the workspace's ``classify.countries``;
- ``phonenumbers``: E.164 numbers (a leading ``+``) and numbers of the workspace's default regions;
- ``email-validator`` (syntax only, no DNS); ``ipaddress``;
- ``probablepeople`` (MIT): the US Census name tables it ships (given names with their share of
  use as a first name; surnames) and its name/company tagger — person names with no model
  download; a city or product name is not a person's name;
- dates (``datetime.date`` or ISO/day-month-year text) in a person's lifetime for dates of birth.

Numbers stored as integers are validated as the strings they stand for (an Aadhaar in a BIGINT
column). A column profile (:func:`profile`) says when the values contradict any kind: booleans,
0/1 flags, small counts.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Iterable, Sequence

_DIGITS = re.compile(r"^\d+$")
_SEPARATORS = re.compile(r"[\s\-.]")
_UPI = re.compile(r"^[a-z0-9][a-z0-9._\-]{1,255}@[a-z][a-z0-9]{1,63}$", re.IGNORECASE)
_UUID = re.compile(r"^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$", re.IGNORECASE)
_HEX = re.compile(r"^[0-9a-f]{12,64}$", re.IGNORECASE)
_TOKEN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-:.]{3,63}$")
_PASSPORT = re.compile(r"^[A-Z0-9]{6,9}$")
_LICENCE = re.compile(r"^[A-Z0-9][A-Z0-9 \-/]{4,19}$")
_NINO = re.compile(r"^(?!BG|GB|KN|NK|NT|TN|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]\d{6}[A-D]$")
_WORD = re.compile(r"^[^\W\d_](?:[^\W\d_]|['\-.])*$")  # letters of any script, with ' - .
_STREET = set("street st road rd avenue ave lane ln drive dr boulevard blvd way court ct place pl terrace square "
              "highway hwy parkway pkwy crescent close circle cir trail path row alley marg nagar colony sector "
              "block layout chowk gali mohalla apartment apt suite ste flat floor house strasse str gasse weg platz "
              "allee ring rue chemin impasse calle avenida carrera rua travessa via viale piazza corso straat laan "
              "plein gracht ulica box po".split())
_POSTCODE = re.compile(r"(?<![\w-])(\d{5}(?:-\d{3,4})?|\d{8}|\d{6}|\d{4} ?[A-Z]{2}|\d{4}|\d{3} ?\d{3}|"
                       r"[A-Z]{1,2}\d[A-Z\d]? ?\d[A-Z]{2})(?![\w-])")
# Street words written as the end of a compound (Frankeplatz, Hauptstraße, Tijsdreef).
_STREET_SUFFIXES = ("strasse", "straße", "str", "platz", "weg", "ring", "gasse", "allee", "damm", "dreef", "laan",
                    "straat", "plein", "gracht", "kade", "singel", "steeg", "vej", "gatan", "gade", "nagar", "pur")
_DATE_TEXT = re.compile(r"^(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?:[ T].*)?$|^(\d{1,2})[-/.](\d{1,2})[-/.](\d{4})$")
# Titles, honorifics and degrees around a name, and name particles: not the name's own words.
_TITLES = set("mr mrs ms miss dr prof sir dame herr frau sr sra srta jr md phd mba dipl ing mag shri smt kumari "
              "sig signora signor mme mlle m van von der den de da di del la le".split())
_TRUTHS = {"true", "false", "t", "f", "y", "n", "yes", "no", "0", "1", "0.0", "1.0"}


def as_text(value: Any) -> str | None:
    """A sampled value as the string it stands for: integers as their digits (a BIGINT Aadhaar),
    floats that are whole numbers likewise, text stripped; None for nothing to validate."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e19 else None
    if isinstance(value, (bytes, bytearray)):
        return None
    if isinstance(value, str):
        text = value.strip()
        return text or None
    return None


@dataclass(frozen=True)
class Profile:
    """The shape of a column's sampled non-null values, without any value."""

    sampled: int  # non-null values sampled
    distinct: int
    booleans: bool  # every value a boolean or a 0/1, yes/no flag
    small_numbers: bool  # every value a number under 1,000: counts, codes, amounts
    numeric: bool  # every value a number
    dates: int  # values that are dates or datetimes (objects or date text)
    texts: int  # values that are strings
    words: float  # mean number of whitespace-separated words of the strings

    @property
    def contradicts_any_kind(self) -> bool:
        """Values no kind of personal data takes: true/false, 0/1 flags, small counts."""
        return self.sampled > 0 and (self.booleans or self.small_numbers)


def profile(values: Sequence[Any]) -> Profile:
    """The shape of ``values`` (the non-null sampled values of one column)."""
    present = [v for v in values if v is not None and not (isinstance(v, str) and not v.strip())]
    texts = [v.strip() for v in present if isinstance(v, str)]
    booleans = bool(present) and all(isinstance(v, bool) or (isinstance(v, (int, float)) and v in (0, 1))
                                     or (isinstance(v, str) and v.strip().lower() in _TRUTHS) for v in present)
    numbers = [v for v in present if isinstance(v, (int, float)) and not isinstance(v, bool)]
    numeric = bool(present) and len(numbers) == len(present)
    small = numeric and all(abs(v) < 1000 for v in numbers)
    dates = sum(1 for v in present if isinstance(v, (dt.date, dt.datetime)) or (isinstance(v, str) and _date_text(v)))
    distinct = len({repr(v) for v in present})
    words = sum(len(t.split()) for t in texts) / len(texts) if texts else 0.0
    return Profile(len(present), distinct, booleans, small, numeric, dates, len(texts), words)


# ---- validators: one string -> bool ---------------------------------------------------------------

def email(text: str) -> bool:
    """Syntax of an e-mail address (email-validator, no DNS)."""
    if "@" not in text or " " in text:
        return False
    from email_validator import EmailNotValidError, validate_email

    try:
        validate_email(text, check_deliverability=False)
        return True
    except EmailNotValidError:
        return False


def upi(text: str) -> bool:
    """A UPI virtual payment address: ``handle@bank`` (no dot after the @, unlike an e-mail)."""
    return bool(_UPI.match(text))


def phone_validator(regions: Sequence[str]) -> Callable[[str], bool]:
    """A validator of phone numbers: E.164 (a leading + or 00) in any region, otherwise a valid
    number of one of ``regions`` (phonenumbers' metadata)."""
    regions = tuple(r.upper() for r in regions)

    def valid(text: str) -> bool:
        import phonenumbers

        if len(text) < 7 or len(text) > 24 or not re.search(r"\d{3}", text) or re.search(r"[A-Za-z]{2}", text):
            return False
        candidates = [None] if text.startswith(("+", "00")) else regions
        for region in candidates:
            try:
                number = phonenumbers.parse("+" + text[2:] if text.startswith("00") else text, region)
            except phonenumbers.NumberParseException:
                continue
            if phonenumbers.is_valid_number(number):
                return True
        return False
    return valid


def possible_phone(text: str) -> bool:
    """A number written with its +country code that phonenumbers finds possible for that country
    (length rules): the number plan of a real country, not necessarily an assigned range."""
    import phonenumbers

    if not text.startswith("+"):
        return False
    try:
        return phonenumbers.is_possible_number(phonenumbers.parse(text, None))
    except phonenumbers.NumberParseException:
        return False


def phone_shaped(text: str) -> bool:
    """7-15 digits, with an optional +, spaces, dashes, dots, parentheses or an extension: a number
    as a phone column holds it (with the column's name only)."""
    main = re.split(r"\s*(?:x|ext\.?)\s*\d+$", text, flags=re.IGNORECASE)[0]
    return bool(re.fullmatch(r"\+?[\d\s\-.()]+", main)) and 7 <= sum(c.isdigit() for c in main) <= 15


def iban_shaped(text: str) -> bool:
    """Two letters, two digits, then 10-30 letters and digits: an IBAN's shape (with the column's
    name only: the checksum is python-stdnum's)."""
    return bool(re.fullmatch(r"[A-Z]{2}\d{2}[A-Z0-9]{10,30}", text.replace(" ", "").upper()))


def formatted_phone(text: str) -> bool:
    """A number written as a phone number is (a leading +, or grouped by spaces, dashes, dots or
    parentheses): a bare run of digits is as likely an id, so it needs the column's name."""
    return text.startswith("+") or bool(re.search(r"\d[\s\-.()]+\d", text)) or text.startswith("(")


def _digits(text: str) -> str:
    return _SEPARATORS.sub("", text)


def card(text: str) -> bool:
    """A payment card number: 13-19 digits (spaces or dashes allowed), a major network's first
    digit, Luhn checksum (python-stdnum)."""
    from stdnum import luhn

    digits = _digits(text)
    return digits.isdigit() and 13 <= len(digits) <= 19 and digits[0] in "23456" and luhn.is_valid(digits)


def imei(text: str) -> bool:
    """An IMEI: 15 digits with its Luhn check digit (python-stdnum). The 16-digit IMEISV carries no
    check digit, so it is not told from any number by its value."""
    from stdnum import imei as module

    digits = _digits(text)
    return digits.isdigit() and len(digits) == 15 and module.is_valid(digits)


# Shapes a number must have before its python-stdnum validator is asked (a cheap first look:
# most sampled values of most columns are no such number).
_SHAPES = {
    "iban": re.compile(r"^[A-Za-z]{2}\d{2}[A-Za-z0-9 ]{10,40}$"), "in_.gstin": re.compile(r"^\d{2}[A-Za-z0-9]{13}$"),
    "in_.pan": re.compile(r"^[A-Za-z]{5}\d{4}[A-Za-z]$"), "in_.epic": re.compile(r"^[A-Za-z]{3}\d{7}$"),
    "in_.aadhaar": re.compile(r"^\d{4}[ -]?\d{4}[ -]?\d{4}$"),
}


def stdnum_validator(module: str) -> Callable[[str], bool]:
    """``python-stdnum``'s ``is_valid`` of ``module`` (``in_.aadhaar``, ``iban``...)."""
    from importlib import import_module

    check = import_module(f"stdnum.{module}").is_valid
    shape = _SHAPES.get(module)

    def valid(text: str) -> bool:
        if shape is not None and not shape.match(text):
            return False
        try:
            return bool(check(text))
        except Exception:  # a validator that chokes on odd input says no, never stops the run
            return False
    return valid


def ssn(text: str) -> bool:
    """A US SSN (python-stdnum: area, group and serial rules) written with dashes or as 9 digits."""
    return bool(re.fullmatch(r"\d{3}-?\d{2}-?\d{4}", text)) and _stdnum("us.ssn")(text)


def nino(text: str) -> bool:
    """A UK National Insurance number by HMRC's published format (two prefix letters from the
    allowed sets, six digits, a suffix A-D)."""
    return bool(_NINO.match(text.replace(" ", "").upper()))


def ip(text: str) -> bool:
    """An IPv4 or IPv6 address."""
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


def passport(text: str) -> bool:
    """The shape of a passport number (6-9 capital letters and digits, at least 1 digit): a pattern
    only, so used with the column's name, never alone."""
    compact = text.replace(" ", "").upper()
    return bool(_PASSPORT.match(compact)) and any(c.isdigit() for c in compact) and text == text.upper()


def licence(text: str) -> bool:
    """The shape of a driving licence number (5-20 letters, digits, spaces, dashes; a digit): with
    the column's name only."""
    return bool(_LICENCE.match(text.upper())) and any(c.isdigit() for c in text)


def date_of_birth(value: Any, today: dt.date | None = None) -> bool:
    """A date (object or text) a living person was born on: 1900-01-01 up to today."""
    today = today or dt.date.today()
    if isinstance(value, dt.datetime):
        value = value.date()
    if isinstance(value, dt.date):
        return dt.date(1900, 1, 1) <= value <= today
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)  # 19900102: a date as a number
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"(19|20)\d{6}", text):
            text = f"{text[:4]}-{text[4:6]}-{text[6:]}"
        parsed = _date_text(text)
        return parsed is not None and dt.date(1900, 1, 1) <= parsed <= today
    return False


def _date_text(text: str) -> dt.date | None:
    match = _DATE_TEXT.match(text.strip())
    if not match:
        return None
    try:
        if match.group(1):
            return dt.date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
        first, second, year = int(match.group(4)), int(match.group(5)), int(match.group(6))
        day, month = (first, second) if second <= 12 else (second, first)
        return dt.date(year, month, day)
    except ValueError:
        return None


def address(text: str) -> bool:
    """A postal address: at least three words with letters, a number (house or postcode), and a
    street word (road, Straße, rue, marg, nagar...) or a postcode. City or product names fail."""
    words = re.findall(r"[^\W\d_]+", text)
    if len(words) < 2 or not re.search(r"\d", text) or len(text) < 10:
        return False
    lowered = {w.lower().rstrip(".") for w in words}
    street = bool(lowered & _STREET) or any(w.endswith(_STREET_SUFFIXES) and len(w) > 6 for w in lowered)
    return street or (bool(_POSTCODE.search(text)) and len(words) >= 2)


# ---- person names (probablepeople's shipped tables and tagger) ------------------------------------

@lru_cache(maxsize=1)
def _name_tables() -> tuple[dict[str, float], frozenset[str]]:
    """probablepeople's US Census tables: NAME -> share of its uses that are as a first name (the
    rest: as a surname), and the given names of its gender table."""
    from probablepeople.gender import gender_names
    from probablepeople.ratios import ratios

    return ratios, frozenset(name.upper() for name in gender_names)


def given_name(word: str) -> bool:
    """A word used mostly as a given name in the census tables."""
    ratios, given = _name_tables()
    key = word.upper().strip(".")
    return key in given or ratios.get(key, 0.0) >= 0.5


def surname(word: str) -> bool:
    """A word used mostly as a surname in the census tables."""
    ratios, given = _name_tables()
    key = word.upper().strip(".")
    return key in ratios and ratios[key] < 0.5 and key not in given


def known_name(word: str) -> bool:
    """A word the census tables know as a given name or a surname."""
    ratios, given = _name_tables()
    key = word.upper().strip(".")
    return key in given or key in ratios


def name_words(text: str) -> list[str] | None:
    """The words of a text shaped like a person's name (1-5 words of letters of any script, with ' -
    and initials), or None."""
    words = text.replace(",", " ").split()
    if not 1 <= len(words) <= 5 or any(not _name_word(w) for w in words):
        return None
    return words


def _name_word(word: str) -> bool:
    """Letters of any script (with their combining vowel signs: Devanagari's matras), ' - and ."""
    if not word[0].isalpha():
        return False
    return all(c.isalpha() or c in "'-.’" or unicodedata.category(c) in ("Mn", "Mc") for c in word)


def person_name(text: str) -> bool:
    """A person's name by the census tables: a full name whose first word is a given name or whose
    last word is a surname, or a single given name; not a company (probablepeople's tagger)."""
    words = name_words(text)
    if not words:
        return False
    words = [w for w in words if w.lower().strip(".") not in _TITLES and not (w.endswith(".") and len(w) > 3)] or words
    if len(words) == 1:
        return given_name(words[0])
    core = [w for w in words if len(w.strip(".")) > 1] or words
    # A given name first, or a surname last ("Port Donna", "Lake Jennifer": a given name last is a
    # place named after a person, not a person)
    if not (given_name(core[0]) or surname(core[-1])):
        return False
    return not _company(text)


def _company(text: str) -> bool:
    import probablepeople

    try:
        return probablepeople.tag(text)[1] == "Corporation"
    except Exception:  # the tagger's RepeatedLabelError: an odd string, not a company
        return False


@lru_cache(maxsize=32)
def _stdnum(module: str) -> Callable[[str], bool]:
    return stdnum_validator(module)


# A module of python-stdnum is a person's number when its own title says so (and not a company's,
# a VAT, bank, securities, excise or property number).
_PERSONAL_NUMBER = re.compile(r"person|individual|citizen|national identif|identity|social security|social insurance|"
                              r"passport|taxpayer|tax (identification )?(number|code|file|identifier)|income tax|"
                              r"foreigner|patient|health|pupil|student|resident|population", re.IGNORECASE)
_NOT_PERSONAL_NUMBER = re.compile(r"compan|business|\bvat\b|value added|bank|routing|securit|excise|employer|preparer|"
                                  r"establishment|meter|real estate|\bentit(y|ies)\b|drug|school|postal|postcode|commercial|"
                                  r"economic|corporate|register|goods|credit code", re.IGNORECASE)


def country_validators(countries: Iterable[str]) -> dict[str, tuple[str, Callable[[str], bool], bool]]:
    """For each country code, python-stdnum's personal/tax number modules of that country:
    ``cc.module`` -> (its words from the module's own docstring, validator, weak). Company, VAT
    and bank numbers are left out (not a person's). *Weak*: a module that accepts more than 5% of
    random digit strings (a format check with no check digit): trusted under a name that agrees,
    never from values alone."""
    import pkgutil
    from importlib import import_module

    found: dict[str, tuple[str, Callable[[str], bool]]] = {}
    for country in sorted({c.lower() for c in countries}):
        package_name = "in_" if country == "in" else country
        try:
            package = import_module(f"stdnum.{package_name}")
        except ImportError:
            continue
        for info in pkgutil.iter_modules(package.__path__):
            module = import_module(f"stdnum.{package_name}.{info.name}")
            title = (module.__doc__ or info.name).strip().splitlines()[0]
            if not _PERSONAL_NUMBER.search(title) or _NOT_PERSONAL_NUMBER.search(title):
                continue
            check = _stdnum(f"{package_name}.{info.name}")
            found[f"{country}.{info.name}"] = (title, check, sum(map(check, _random_digits())) > 0.05 * len(_random_digits()))
    return found


@lru_cache(maxsize=1)
def _random_digits() -> tuple[str, ...]:
    """Seeded random digit strings of 8-18 digits: how often a validator says yes by chance."""
    import random

    rng = random.Random(31)
    return tuple("".join(rng.choice(string_digits) for _ in range(n)) for n in range(8, 19) for _ in range(20))


string_digits = "0123456789"


def unique_ids(values: Sequence[Any]) -> bool:
    """Values shaped like a key: all distinct, and all integers of 3+ digits, UUIDs or long hex."""
    texts = [as_text(v) for v in values]
    if not texts or any(t is None for t in texts) or len(set(texts)) < len(texts):
        return False
    return all((t.lstrip("-").isdigit() and len(t.lstrip("-")) >= 3) or _UUID.match(t) or _HEX.match(t)
               or (_TOKEN_ID.match(t) and any(c.isdigit() for c in t)) for t in texts)
