"""Which columns hold personal data: a verdict per column — a kind named in words, a confidence, the
evidence and one line of reasons with the counts (valid of sampled) — and never a value.

Evidence, strongest first:

- **Catalog and lineage**: a catalogued identifier; a column the values of one flow into through
  DIRECT identity or transformation edges (renamed, computed, hashed by a known expression). A
  masking edge without a known expression stops the inheritance; so does an aggregation.
- **Sampled values** validated by kept libraries (:mod:`piitracer.discover.classify_values`):
  checksummed numbers (Aadhaar, cards, IMEI, IBAN...) and formats a library knows (e-mail, phone,
  IP, person names from probablepeople's census tables). A kind is read from values alone when at
  least ``value_share`` of the column's sampled non-null values validate; integers are validated as
  the digits they stand for.
- **The column's name** read as people write it (:mod:`piitracer.discover.classify_names`): a
  suggestion the values confirm (shape: dates for a date of birth, words for a name, unique keys for
  a person's id) or overrule.

**Values outrank names.** Sampled values that no personal data takes (true/false, 0/1 flags, small
counts) or that none validate leave the column without a verdict (the name's suggestion is kept
in ``name_suggests``); a column whose values partly validate gets the name's kind at a low
confidence marked "name only, values disagree". A column with fewer than ``min_values`` non-null
values in a sample that had more rows is *too sparse to judge* by values.

**PII without lineage** — a column with personal data by its values that neither is a catalogued
identifier nor is reached by lineage from one — is only said once the catalog has identifiers:
before the first review every column would be.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping, Sequence

from piitracer.discover import classify_values as values_of
from piitracer.discover.classify_names import KIND_WORDS, NameHint, name_hint
from piitracer.model.lineage import ColumnRef, EdgeKind, EdgeSubtype

VALUE_SHARE = 0.8  # of the sampled non-null values that must validate for a verdict from values
NAME_SHARE = 0.6  # of full-name-shaped values the census tables must know, from values alone
PARTLY = 0.5  # at least this share fitting, under a name that agrees: "name only, values disagree" (0.25-0.4)
NAME_CONFIDENCE = 0.6  # a name with no values to check it against
LINEAGE_CONFIDENCE = 0.9
MIN_VALUES = 20  # non-null values per column to judge by values (the workspace's classify.min_values)

# Kinds whose values identify a person or hold a person's data: a table that has one of them is a
# table of a person's data, and its own row key (a bare `id`) is a person's identifier.
PERSONAL = frozenset(KIND_WORDS) - {"table_key", "user_id"}


@dataclass(frozen=True)
class ClassifyOptions:
    """The workspace's ``classify:`` settings."""

    countries: tuple[str, ...] = ("in", "us", "gb")  # python-stdnum national/tax ids to try
    phone_regions: tuple[str, ...] = ("IN", "US", "GB")  # numbers without +country code are read in these
    min_values: int = MIN_VALUES
    value_share: float = VALUE_SHARE


@dataclass
class ColumnVerdict:
    """What one column is, and why (no sampled value is ever kept here)."""

    dataset: str
    column: str
    kind: str | None = None
    confidence: float = 0.0
    reasons: list[str] = field(default_factory=list)
    pii_without_lineage: bool = False
    evidence: str | None = None  # catalog, lineage, values, name and values, name, name only, values disagree
    part: str | None = None  # person name: given, family, middle or full
    valid: int | None = None  # sampled values that validate as the kind
    sampled: int | None = None  # non-null values sampled
    sparse: bool = False  # too few non-null values to judge by values
    name_suggests: str | None = None  # the kind the name suggested when the values overruled it
    name_in_table: str | None = None  # the column's name as the table writes it (case kept), when it differs

    def add(self, kind: str, confidence: float, reason: str, evidence: str | None = None) -> None:
        """One more reason; the kind and evidence follow the most confident one."""
        self.reasons.append(reason)
        if confidence > self.confidence:
            self.kind, self.confidence = kind, round(confidence, 2)
            self.evidence = evidence or self.evidence

    @property
    def shown(self) -> str:
        """The column's name as the table writes it."""
        return self.name_in_table or self.column

    @property
    def words(self) -> str | None:
        """The kind in words ("e-mail address", "person name (given)")."""
        if self.kind is None:
            return None
        text = KIND_WORDS.get(self.kind, self.kind.replace("_", " "))
        return f"{text} ({self.part})" if self.kind == "person_name" and self.part else text

    def to_json(self) -> dict[str, Any]:
        """The verdict as the JSON output shows it (counts and kinds, never a value)."""
        return {"dataset": self.dataset, "column": self.column, "name_in_table": self.shown, "kind": self.kind,
                "kind_words": self.words,
                "part": self.part, "confidence": self.confidence, "evidence": self.evidence, "valid": self.valid,
                "sampled": self.sampled, "sparse": self.sparse, "name_suggests": self.name_suggests,
                "reasons": self.reasons, "pii_without_lineage": self.pii_without_lineage}


def name_kind(column: str) -> str | None:
    """The kind a column name suggests (:func:`piitracer.discover.classify_names.name_hint`)."""
    hint = name_hint(column)
    if hint is None:
        return None
    return "user_id" if hint.kind == "table_key" else hint.kind  # a key lineage carries is a person's


class _Validators:
    """The value validators of one workspace's options, built once per run."""

    def __init__(self, options: ClassifyOptions) -> None:
        phone = values_of.phone_validator(options.phone_regions)
        std = values_of.stdnum_validator
        # kind -> validator; the order breaks ties between kinds that validate alike.
        self.strong: dict[str, Callable[[str], bool]] = {
            "email": values_of.email, "upi": values_of.upi, "ip": values_of.ip, "iban": std("iban"),
            "gstin": std("in_.gstin"), "pan": std("in_.pan"), "voter_id": std("in_.epic"), "nino": values_of.nino,
            "aadhaar": std("in_.aadhaar"), "imei": values_of.imei, "card": values_of.card,
            "ssn": lambda t: "-" in t and values_of.ssn(t),
            "phone": lambda t: values_of.formatted_phone(t) and (phone(t) or values_of.possible_phone(t)),
            "address": values_of.address, "person_name": values_of.person_name,
        }
        # With the name's suggestion, the validators that a name makes enough.
        self.named: dict[str, Callable[[str], bool]] = {
            **self.strong, "phone": lambda t: phone(t) or values_of.phone_shaped(t), "ssn": values_of.ssn,
            "iban": values_of.iban_shaped, "passport": values_of.passport,
            "driving_licence": values_of.licence, "person_name": lambda t: values_of.name_words(t) is not None,
            "address": lambda t: values_of.address(t) or (len(t.split()) >= 3 and any(c.isdigit() for c in t)),
            "bank_account": lambda t: t.replace(" ", "").isdigit() and 6 <= len(t.replace(" ", "")) <= 20,
        }
        self.countries = values_of.country_validators(options.countries)


@lru_cache(maxsize=8)
def _validators_for(options: ClassifyOptions) -> _Validators:
    return _Validators(options)


def classify_columns(dataset: str, columns: Sequence[str], sample: Mapping[str, Sequence[Any]] | None,
                     catalog_identifiers: Sequence[str], lineage: Mapping[ColumnRef, ColumnRef],
                     options: ClassifyOptions | None = None, rows_sampled: int | None = None,
                     key_values: Mapping[str, frozenset[str]] | None = None,
                     lineage_checked: bool = True, validators: "_Validators | None" = None,
                     names_in_table: Mapping[str, str] | None = None) -> list[ColumnVerdict]:
    """The verdict of every column of one dataset.

    ``sample``: column (lower case) -> sampled values; ``rows_sampled``: the rows those came from
    (a column with fewer non-null values than ``min_values`` out of more rows is too sparse);
    ``key_values``: catalogued subject key (``dataset.column``) -> its values as text (a column
    holding them is a foreign key to a person); ``lineage_checked``: False before the catalog has
    any identifier (no "PII without lineage" then); ``names_in_table``: lower case -> the name as the
    table writes it (read as such: ``SenderPersonId``), when the catalog's names are lower case."""
    options = options or ClassifyOptions()
    validators = validators or _validators_for(options)
    verdicts = []
    for column in columns:
        values = None if sample is None else sample.get(column.lower(), sample.get(column))
        shown = (names_in_table or {}).get(column.lower(), column)
        verdict = _column(dataset, column, values, options, validators, rows_sampled, key_values or {}, shown)
        if shown != column:
            verdict.name_in_table = shown
        ref = ColumnRef(dataset=dataset, column=column)
        from_values = verdict.evidence in ("values", "name and values") and verdict.kind is not None
        # A catalogued identifier is one whatever its sampled values look like (masked, hashed): its
        # kind is the values', else the name's, else a person's identifier.
        named = verdict.name_suggests if verdict.name_suggests != "table_key" else None
        if column in catalog_identifiers:
            verdict.add(verdict.kind or named or "user_id", 1.0, "a catalogued identifier", "catalog")
        elif ref in lineage:
            source = lineage[ref]
            verdict.add(verdict.kind or named or name_kind(source.column) or "user_id", LINEAGE_CONFIDENCE,
                        f"inherits {source} through DIRECT lineage", "lineage")
        elif from_values and lineage_checked and verdict.kind not in ("user_id",):
            verdict.pii_without_lineage = True
            verdict.reasons.append("PII without lineage: no catalogued identifier flows here")
        verdicts.append(verdict)
    _table_keys(verdicts, sample, options)
    return verdicts


def _column(dataset: str, column: str, values: Sequence[Any] | None, options: ClassifyOptions,
            validators: _Validators, rows_sampled: int | None, key_values: Mapping[str, frozenset[str]],
            shown: str | None = None) -> ColumnVerdict:
    verdict = ColumnVerdict(dataset, column)
    hint = name_hint(shown or column)
    if hint and hint.kind == "table_key":
        verdict.name_suggests = "table_key"  # decided with the rest of the table (_table_keys)
        hint = None
    present = [v for v in values or () if v is not None and not (isinstance(v, str) and not v.strip())]
    if not present:
        rows = rows_sampled if rows_sampled is not None else len(values or ())
        if values is not None and rows:
            verdict.sparse, verdict.sampled = True, 0
            why = f"too sparse to judge by values: no non-null value in {rows} sampled rows"
        else:
            why = "no values sampled"
        if hint:
            _name_only(verdict, hint, f"{hint.why}; {why}")
        elif verdict.sparse:
            verdict.reasons.append(why)
        return verdict
    profile = values_of.profile(present)
    verdict.sampled = profile.sampled
    rows = rows_sampled if rows_sampled is not None else len(values or ())
    if profile.sampled < min(options.min_values, rows):
        verdict.sparse = True
        sparse = f"too sparse to judge by values: {profile.sampled} non-null of {rows} sampled rows"
        if hint:
            _name_only(verdict, hint, f"{hint.why}; {sparse}")
        else:
            verdict.reasons.append(sparse)
        return verdict
    texts = [t for t in (values_of.as_text(v) for v in present)]
    if _foreign_key(verdict, texts, key_values, hint):
        return verdict
    contradicts = profile.contradicts_any_kind and not (hint and hint.kind == "user_id" and not profile.booleans)
    if contradicts:
        if hint:
            verdict.name_suggests = hint.kind
            shape = "true/false or 0/1 flags" if profile.booleans else "small numbers"
            verdict.reasons.append(f"{hint.why}, but the {profile.sampled} sampled values are {shape}: not classified")
        return verdict
    found = _by_values(texts, validators, options, hint, profile)
    if found:
        kind, valid, detail = found
        share = valid / profile.sampled
        verdict.valid = valid
        agrees = hint is not None and hint.kind == kind
        words = detail or KIND_WORDS[kind]
        reason = f"{valid} of {profile.sampled} sampled values validate as {words}"
        if agrees:
            verdict.part = hint.part
            verdict.add(kind, min(1.0, 0.95 * share + 0.05), f"{hint.why}; {reason}", "name and values")
        else:
            if kind == "person_name":
                verdict.part = "full" if profile.words >= 1.5 else "given"
            prefix = f"{hint.why}, but " if hint else ""
            verdict.add(kind, 0.9 * share, prefix + reason, "values")
            if hint:
                verdict.name_suggests = hint.kind
        return verdict
    if hint:
        _named(verdict, hint, present, texts, profile, validators, options)
    return verdict


def _by_values(texts: list[str | None], validators: _Validators, options: ClassifyOptions, hint: NameHint | None,
               profile: values_of.Profile) -> tuple[str, int, str | None] | None:
    """The kind at least ``value_share`` of the values validate as, from values alone (with the
    name's kind tried first): (kind, valid, words from the validating library or None)."""
    sampled = len(texts)
    need = options.value_share * sampled
    order = list(validators.strong)
    if hint and hint.kind in validators.strong:
        order.remove(hint.kind)
        order.insert(0, hint.kind)
    for kind in order:
        if kind == "person_name" and profile.texts < sampled:
            continue
        # Full names: the census tables know most English names but fewer of other countries'; a
        # given name or surname they know in most rows of two-word-plus values is enough.
        threshold = NAME_SHARE * sampled if kind == "person_name" and profile.words >= 1.8 else need
        valid = _count_valid(texts, validators.strong[kind], threshold)
        if valid >= threshold and valid:
            return kind, valid, None
    if not any(t is not None and len(t) >= 8 for t in texts):
        return None
    for module, (title, check, weak) in validators.countries.items():
        if (weak or module.split(".")[0] in ("in", "us")) and not (hint and hint.kind == "national_id"):
            continue  # India's and the US's ids have kinds of their own; a format check alone needs the name
        threshold = max(need, 0.9 * sampled)
        valid = _count_valid(texts, lambda text: len(text) >= 8 and check(text), threshold)
        if valid >= threshold and valid:
            return "national_id", valid, title.rstrip(".")
    return None


def _count_valid(texts: Sequence[str | None], check: Callable[[str], bool], threshold: float) -> int:
    """How many ``texts`` pass ``check`` — exact when at least ``threshold`` do; counting stops
    (returning a number under it) as soon as the rest could no longer reach it."""
    valid, left = 0, len(texts)
    for text in texts:
        left -= 1
        if text is not None and check(text):
            valid += 1
        elif valid + left < threshold:
            return valid
    return valid


def _named(verdict: ColumnVerdict, hint: NameHint, present: Sequence[Any], texts: list[str | None],
           profile: values_of.Profile, validators: _Validators, options: ClassifyOptions) -> None:
    """The name suggests ``hint.kind`` and no kind came from values alone: values of the kind's
    shape confirm it; values that partly validate give a low confidence; none: no verdict."""
    sampled = profile.sampled
    if hint.kind == "date_of_birth":
        valid = sum(1 for v in present if values_of.date_of_birth(v))
    elif hint.kind == "user_id":
        valid = sampled if values_of.unique_ids(present) or profile.distinct >= 2 or sampled == 1 else 0
    elif hint.kind == "national_id":
        valid = max([sum(1 for t in texts if t and check(t)) for _, check, _ in validators.countries.values()] or [0])
        if valid < options.value_share * sampled:
            valid = sum(1 for t in texts if t and values_of.licence(t))
    elif hint.kind == "person_name" and hint.weak:
        # a bare "name": the census tables must know some of its values (a product or a city has
        # a name too)
        valid = sum(1 for t in texts if t is not None and values_of.person_name(t))
        valid = valid if valid >= PARTLY * sampled else 0
        if not valid:
            # names in a script the census tables cannot know (Devanagari, Tamil...): their shape
            foreign = [t for t in texts if t is not None and values_of.name_words(t) and not t.isascii()]
            valid = len(foreign) if len(foreign) >= options.value_share * sampled else 0
    elif hint.kind in validators.named:
        check = validators.named[hint.kind]
        valid = sum(1 for t in texts if t is not None and check(t))
    else:
        valid = 0
    share = valid / sampled
    verdict.valid = valid
    verdict.part = hint.part
    if hint.kind == "user_id":
        verdict.add("user_id", 0.8, f"{hint.why}; {sampled} sampled values are shaped like keys", "name and values")
    elif share >= options.value_share:
        strong = hint.kind == "ssn"  # a library's validation under a name that agrees
        words = KIND_WORDS[hint.kind]
        what = f"validate as {words}" if strong else f"fit the shape of {words}"
        verdict.add(hint.kind, 0.95 * share if strong else 0.8 * share,
                    f"{hint.why}; {valid} of {sampled} sampled values {what}", "name and values")
    elif share >= PARTLY:
        verdict.add(hint.kind, 0.5 * share, f"{hint.why}; only {valid} of {sampled} sampled values fit: "
                    "name only, values disagree", "name only, values disagree")
    else:
        verdict.part = None
        verdict.name_suggests = hint.kind
        verdict.reasons.append(f"{hint.why}, but {valid or 'none'} of the {sampled} sampled values fit "
                               f"{KIND_WORDS[hint.kind]}: not classified")


def _name_only(verdict: ColumnVerdict, hint: NameHint, reason: str) -> None:
    verdict.part = hint.part
    verdict.add(hint.kind, NAME_CONFIDENCE, reason, "name")


def _foreign_key(verdict: ColumnVerdict, texts: list[str | None], key_values: Mapping[str, frozenset[str]],
                 hint: NameHint | None) -> bool:
    """A column whose values are (at least ``VALUE_SHARE`` of them) a catalogued subject key's
    values: a foreign key to a person."""
    present = [t for t in texts if t is not None]
    if not present or not key_values or any(len(t) < 3 for t in present):
        return False  # 1, 2, 3... are any small number's values too: only key-shaped values are a key's
    for key, known in sorted(key_values.items()):
        inside = sum(1 for t in present if t in known)
        if inside >= VALUE_SHARE * len(present) and len(set(present)) >= 2:
            verdict.valid = inside
            verdict.add("user_id", 0.9 * inside / len(present),
                        f"{inside} of {len(present)} sampled values are values of the subject key {key}: a "
                        "foreign key to a person", "values")
            if hint and hint.kind != "user_id":
                verdict.name_suggests = hint.kind
            return True
    return False


def _table_keys(verdicts: list[ColumnVerdict], sample: Mapping[str, Sequence[Any]] | None,
                options: ClassifyOptions) -> None:
    """A bare ``id`` (``uuid``, ``pk``) is the table's own row key: a person's identifier when the
    table holds a person's data (another column of a personal kind) and its values are shaped
    like keys; otherwise no verdict."""
    personal = [v.shown for v in verdicts if v.kind in PERSONAL and v.confidence >= NAME_CONFIDENCE]
    for verdict in verdicts:
        if verdict.name_suggests != "table_key" or verdict.kind:
            continue
        values = None if sample is None else sample.get(verdict.column.lower(), sample.get(verdict.column))
        present = [v for v in values or () if v is not None]
        if not personal:
            verdict.reasons.append("the table's own key, in a table with no personal data found")
            continue
        if present and not values_of.unique_ids(present):
            verdict.reasons.append("the table's own key, but its sampled values are not unique keys")
            continue
        verdict.name_suggests = None
        verdict.sampled = len(present) or None
        verdict.add("user_id", 0.8 if present else NAME_CONFIDENCE,
                    f"the table's own key ('{verdict.shown}') in a table of a person's data "
                    f"({', '.join(personal[:3])})" + (f"; {len(present)} sampled values are unique keys" if present else ""),
                    "name and values" if present else "name")


def value_kind(values: Iterable[Any], options: ClassifyOptions | None = None) -> tuple[str, int, int] | None:
    """(kind, valid, sampled) for the kind at least ``value_share`` of the sampled non-null values
    validate as from values alone; None when no kind does."""
    options = options or ClassifyOptions()
    present = [v for v in values if v is not None]
    if not present:
        return None
    profile = values_of.profile(present)
    if profile.contradicts_any_kind:
        return None
    found = _by_values([values_of.as_text(v) for v in present], _validators_for(options), options, None, profile)
    return (found[0], found[1], len(present)) if found else None


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
