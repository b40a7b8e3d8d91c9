"""Which columns hold personal identifiers: a verdict per column with its reasons and a confidence,
from three kinds of evidence.

- **Names**, matched against patterns per kind (``NAME_PATTERNS``: email, phone/mobile/msisdn, PAN,
  Aadhaar, card number, SSN, IBAN, IP, user/customer/account ids). A name alone is a weaker
  reason than values that validate.
- **Sampled values** (``sample`` rows per table, read with pyiceberg, delta-rs or pyarrow, never
  printed or kept), validated by kept libraries, not hand-written checks:
  - ``python-stdnum``: Indian PAN, Aadhaar with its Verhoeff checksum, card numbers with Luhn
    (13-19 digits), IBAN;
  - ``phonenumbers``: E.164 and Indian numbers;
  - ``email-validator`` (syntax only, no DNS);
  - ``ipaddress``.

  A kind is reported when at least ``VALUE_SHARE`` of the column's sampled non-empty strings
  validate. Numbers are not validated (an integer passes Luhn one time in ten); ids are found by
  name and lineage.
- **Lineage**: a column the values of a catalogued identifier flow into through DIRECT identity or
  transformation edges (renamed, computed, hashed by a known expression) inherits it, so a
  classification made once at the source follows the data. A masking edge without a known
  expression stops the inheritance; so does an aggregation.

A column that looks like PII by its values but is neither a catalogued identifier nor reached by
lineage from one is reported as **PII without lineage**: the most likely hidden copy.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from piitracer.model.lineage import ColumnRef, EdgeKind, EdgeSubtype

VALUE_SHARE = 0.8  # of the sampled non-empty strings that must validate for a value verdict
NAME_CONFIDENCE = 0.6
LINEAGE_CONFIDENCE = 0.9

NAME_PATTERNS: dict[str, str] = {
    "email": r"e_?mail",
    "phone": r"phone|mobile|msisdn",
    "pan": r"^(card_)?pan$|^pan_?(no|num|number)$",
    "aadhaar": r"aadhaa?r|uidai",
    "card": r"card_?(no|num|number)$|^ccn$|credit_?card",
    "ssn": r"^ssn$|social_?security",
    "iban": r"iban",
    "ip": r"(^|_)ip(_?addr(ess)?)?$",
    "user_id": r"^(user|customer|cust|client|account|member|subscriber|person)_?(id|key|ref|no)$",
}


def _email(text: str) -> bool:
    from email_validator import EmailNotValidError, validate_email

    try:
        validate_email(text, check_deliverability=False)
        return True
    except EmailNotValidError:
        return False


def _phone(text: str) -> bool:
    import phonenumbers

    try:
        return phonenumbers.is_valid_number(phonenumbers.parse(text, "IN"))
    except phonenumbers.NumberParseException:
        return False


def _stdnum(module: str) -> Callable[[str], bool]:
    def valid(text: str) -> bool:
        from importlib import import_module

        return bool(import_module(f"stdnum.{module}").is_valid(text))
    return valid


def _card(text: str) -> bool:
    from stdnum import luhn

    digits = text.replace(" ", "").replace("-", "")
    return digits.isdigit() and 13 <= len(digits) <= 19 and luhn.is_valid(digits)


def _ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


# kind -> validator of one string; the order breaks ties (a 12-digit Aadhaar is no phone number).
VALIDATORS: dict[str, Callable[[str], bool]] = {
    "email": _email, "aadhaar": _stdnum("in_.aadhaar"), "pan": _stdnum("in_.pan"), "card": _card,
    "iban": _stdnum("iban"), "phone": _phone, "ip": _ip,
}


@dataclass
class ColumnVerdict:
    """What one column is, and why (no sampled value is ever kept here)."""

    dataset: str
    column: str
    kind: str | None = None
    confidence: float = 0.0
    reasons: list[str] = field(default_factory=list)
    pii_without_lineage: bool = False

    def add(self, kind: str, confidence: float, reason: str) -> None:
        self.reasons.append(reason)
        if confidence > self.confidence:
            self.kind, self.confidence = kind, confidence


def name_kind(column: str, patterns: Mapping[str, str] = NAME_PATTERNS) -> str | None:
    """The first kind whose pattern the column name matches (case-insensitive)."""
    for kind, pattern in patterns.items():
        if re.search(pattern, column, re.IGNORECASE):
            return kind
    return None


def value_kind(values: Iterable[Any]) -> tuple[str, int, int] | None:
    """(kind, valid, sampled) for the first kind at least ``VALUE_SHARE`` of the sampled non-empty
    strings validate as; None when no kind does or nothing was a string."""
    texts = [v.strip() for v in values if isinstance(v, str) and v.strip()]
    if not texts:
        return None
    for kind, valid in VALIDATORS.items():
        passed = sum(1 for text in texts if valid(text))
        if passed >= VALUE_SHARE * len(texts):
            return kind, passed, len(texts)
    return None


def inherited(graph, seeds: Iterable[ColumnRef]) -> dict[ColumnRef, ColumnRef]:
    """Every column reached from ``seeds`` through DIRECT identity or transformation edges (a
    masking edge only with a known expression) -> the seed it inherits from."""
    found: dict[ColumnRef, ColumnRef] = {}
    frontier = [(seed, seed) for seed in sorted(set(seeds), key=str)]
    while frontier:
        ref, seed = frontier.pop()
        for edge in graph.edges_from(ref):
            target = edge.target
            if target is None or edge.kind is not EdgeKind.DIRECT or target in found or target == seed:
                continue
            if edge.subtype not in (EdgeSubtype.IDENTITY, EdgeSubtype.TRANSFORMATION):
                continue
            if edge.masking and not edge.expression:
                continue  # masked by a transform piitracer cannot compute: the identity is gone
            found[target] = seed
            frontier.append((target, seed))
    return found


def classify_columns(dataset: str, columns: Sequence[str], sample: Mapping[str, Sequence[Any]] | None,
                     catalog_identifiers: Sequence[str], lineage: Mapping[ColumnRef, ColumnRef],
                     patterns: Mapping[str, str] = NAME_PATTERNS) -> list[ColumnVerdict]:
    """The verdict of every column of one dataset (``sample``: column -> sampled values)."""
    verdicts = []
    for column in columns:
        verdict = ColumnVerdict(dataset, column)
        named = name_kind(column, patterns)
        if named:
            verdict.add(named, NAME_CONFIDENCE, f"name matches the {named} pattern")
        values = (sample or {}).get(column)
        by_values = value_kind(values) if values is not None else None
        if by_values:
            kind, passed, sampled = by_values
            verdict.add(kind, round(passed / sampled, 2), f"{passed} of {sampled} sampled values are valid {kind} values")
        ref = ColumnRef(dataset=dataset, column=column)
        if column in catalog_identifiers:
            verdict.add(named or "identifier", 1.0, "a catalogued identifier")
        elif ref in lineage:
            source = lineage[ref]
            verdict.add(name_kind(source.column, patterns) or "identifier", LINEAGE_CONFIDENCE,
                        f"inherits {source} through DIRECT lineage")
        elif by_values:
            verdict.pii_without_lineage = True
            verdict.reasons.append("PII without lineage: no catalogued identifier flows here")
        verdicts.append(verdict)
    return verdicts
