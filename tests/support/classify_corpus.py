"""A labelled corpus for ``catalog classify``: tables of columns whose kind is known, generated (seeded,
deterministic) with Faker's locales, python-stdnum's check digits (valid numbers, and look-alikes
that fail), decoys of each kind, and column names in the shapes public schemas use (snake_case,
camelCase, PascalCase, spaced titles, upper case, abbreviations, other languages, and uninformative
names such as ``col_7`` that leave the values to decide).

Each column: (table, column name, values, label) with label a kind of
:data:`piitracer.discover.classify_names.KIND_WORDS` or None (not personal data). Decoys are
labelled None and marked ``decoy``: city and country names, product and company names, job titles,
flags named after a kind (``email_sent``), phone models, e-mail domains, counts, order and
tracking numbers that fail the checksums, licence plates, postal codes alone, order dates.

Used by tests/test_classify_corpus.py and benchmarks/bench_classify.py.
"""

from __future__ import annotations

import random
import string
import uuid
from dataclasses import dataclass
from typing import Any, Callable

LOCALES = ("en_US", "en_GB", "en_IN", "de_DE", "fr_FR", "es_ES", "it_IT", "pt_BR", "nl_NL")
ROWS = 40


@dataclass(frozen=True)
class Column:
    table: str
    name: str
    values: tuple[Any, ...]
    label: str | None
    decoy: bool = False
    locale: str = ""


def _styles(words: list[str], rng: random.Random) -> str:
    """One of the ways people write a multi-word column name."""
    style = rng.choice(["snake", "camel", "pascal", "title", "upper", "dash", "lower"])
    if style == "snake":
        return "_".join(words)
    if style == "camel":
        return words[0] + "".join(w.capitalize() for w in words[1:])
    if style == "pascal":
        return "".join(w.capitalize() for w in words)
    if style == "title":
        return " ".join(w.capitalize() for w in words)
    if style == "upper":
        return "_".join(w.upper() for w in words)
    if style == "dash":
        return "-".join(words)
    return "".join(words)


# Column-name shapes per kind, as public schemas and data dictionaries write them.
NAMES: dict[str | None, list[str]] = {
    "email": ["email", "e mail", "email address", "customer email", "contact email", "user email", "mail", "correo",
              "email id", "courriel"],
    "phone": ["phone", "phone number", "mobile", "mobile no", "msisdn", "telephone", "cell phone", "contact number",
              "telefono", "tel", "home phone", "whatsapp number"],
    "person_name": ["first name", "last name", "full name", "customer name", "name", "surname", "given name",
                    "family name", "nombre", "vorname", "nachname", "contact name", "account holder name", "fname"],
    "address": ["address", "street address", "home address", "billing address", "shipping address", "address line1",
                "adresse", "direccion", "postal address", "residential address"],
    "date_of_birth": ["dob", "date of birth", "birth date", "birthday", "geburtsdatum", "fecha nacimiento"],
    "ip": ["ip", "ip address", "client ip", "remote addr", "ipv4", "login ip"],
    "imei": ["imei", "device imei", "imei number", "device id"],
    "card": ["credit card number", "card number", "ccn", "cc number", "card no", "pan number card", "debit card"],
    "iban": ["iban", "iban number", "beneficiary iban", "IBANNumber"],
    "bank_account": ["account number", "bank account", "acct no", "bank account number", "beneficiary account no"],
    "upi": ["vpa", "upi id", "upi", "payer vpa", "payee vpa"],
    "pan": ["pan", "pan no", "pan card", "customer pan"],
    "aadhaar": ["aadhaar", "aadhaar no", "aadhar number", "uidai number"],
    "gstin": ["gstin", "gst number", "gst no"],
    "voter_id": ["voter id", "epic no", "voter card number"],
    "ssn": ["ssn", "social security number", "ssn number"],
    "nino": ["nino", "national insurance number", "ni number"],
    "passport": ["passport", "passport no", "passport number"],
    "driving_licence": ["driving licence", "driver license number", "dl number", "drivers license"],
    "user_id": ["user id", "customer id", "cust id", "client id", "member id", "sender person id", "account id",
                "subscriber id", "patient id", "employee no", "user uuid"],
}

# Names that tell nothing: the values alone decide.
OPAQUE = ["col", "field", "value", "attr", "data", "c", "x"]


def _luhn_number(rng: random.Random, prefix: str, length: int) -> str:
    from stdnum import luhn

    body = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    return body + luhn.calc_check_digit(body)


def _bad_check(number: str) -> str:
    """The same number with a wrong last digit: it fails its checksum."""
    last = int(number[-1])
    return number[:-1] + str((last + 1 + random.Random(number).randrange(8)) % 10)


def aadhaar(rng: random.Random) -> str:
    from stdnum import verhoeff

    body = rng.choice("23456789") + "".join(rng.choice(string.digits) for _ in range(10))
    return body + verhoeff.calc_check_digit(body)


def pan(rng: random.Random) -> str:
    letters = string.ascii_uppercase
    return ("".join(rng.choice(letters) for _ in range(3)) + "P" + rng.choice(letters)
            + "".join(rng.choice(string.digits) for _ in range(4)) + rng.choice(letters))


def gstin(rng: random.Random) -> str:
    from stdnum import luhn

    alphabet = string.digits + string.ascii_uppercase
    body = f"{rng.randint(1, 35):02d}" + pan(rng) + rng.choice("123456789") + "Z"
    return body + luhn.calc_check_digit(body, alphabet)


def epic(rng: random.Random) -> str:
    from stdnum import luhn

    digits = "".join(rng.choice(string.digits) for _ in range(6))
    return "".join(rng.choice(string.ascii_uppercase) for _ in range(3)) + digits + luhn.calc_check_digit(digits)


def nino(rng: random.Random) -> str:
    first, second = rng.choice("ABCEGHJKLMNPRSTWXYZ"), rng.choice("ABCEGHJKLMNPRSTWXYZ")
    if first + second in ("BG", "GB", "KN", "NK", "NT", "TN", "ZZ"):
        first = "A"
    return first + second + "".join(rng.choice(string.digits) for _ in range(6)) + rng.choice("ABCD")


def upi(fake, rng: random.Random) -> str:
    return f"{fake.user_name()}{rng.randint(1, 99)}@{rng.choice(['okaxis', 'oksbi', 'ybl', 'paytm', 'okhdfcbank', 'upi'])}"


def _generators(fake, rng: random.Random, locale: str) -> dict[str, Callable[[], Any]]:
    def date_of_birth():
        born = fake.date_of_birth(minimum_age=18, maximum_age=90)
        return born if rng.random() < 0.5 else born.isoformat()

    return {
        "email": fake.email,
        "phone": (fake.phone_number if locale != "en_US" or rng.random() < 0.5 else lambda: "+1 " + fake.phone_number()),
        "person_name": fake.name,
        "address": lambda: fake.address().replace("\n", ", "),
        "date_of_birth": date_of_birth,
        "ip": lambda: fake.ipv4() if rng.random() < 0.7 else fake.ipv6(),
        "imei": lambda: _luhn_number(rng, rng.choice(["35", "86", "01", "99"]), 15),
        "card": lambda: _luhn_number(rng, rng.choice(["4", "51", "52", "6011"]), 16),
        "iban": fake.iban,
        "bank_account": lambda: "".join(rng.choice(string.digits) for _ in range(rng.choice([9, 11, 12, 14]))),
        "upi": lambda: upi(fake, rng),
        "pan": lambda: pan(rng),
        "aadhaar": lambda: aadhaar(rng),
        "gstin": lambda: gstin(rng),
        "voter_id": lambda: epic(rng),
        "ssn": lambda: f"{rng.randint(100, 665):03d}-{rng.randint(1, 99):02d}-{rng.randint(1, 9999):04d}",
        "nino": lambda: nino(rng),
        "passport": lambda: rng.choice(string.ascii_uppercase) + "".join(rng.choice(string.digits) for _ in range(7)),
        "driving_licence": lambda: (rng.choice(["MH", "KA", "DL"]) + f"{rng.randint(1, 50):02d} "
                                    + f"{rng.randint(2000, 2024)}{rng.randint(1, 9999999):07d}"),
        "user_id": None,  # per table: unique keys
    }


def _part_values(fake, kind_name: str) -> Callable[[], Any]:
    """A person-name column's values by its name: given, family or full."""
    if any(w in kind_name for w in ("first", "given", "vorname", "fname")) or kind_name == "nombre":
        return fake.first_name
    if any(w in kind_name for w in ("last", "surname", "family", "nachname")):
        return fake.last_name
    return fake.name


def _decoys(fake, rng: random.Random) -> list[tuple[str, Callable[[], Any]]]:
    products = ["iPhone 13", "Galaxy S22", "Pixel 7", "Echo Dot", "Kindle Paperwhite", "AirPods Pro", "ThinkPad X1",
                "PlayStation 5", "Surface Laptop", "Apple Watch", "Fire TV Stick", "Instant Pot", "Roomba 694"]
    models = ["iPhone 12", "Galaxy A52", "Redmi Note 10", "Pixel 6a", "OnePlus 9", "Moto G", "Nokia 3310"]
    return [
        ("city", fake.city), ("city name", fake.city), ("country", fake.country), ("state", fake.state if hasattr(fake, "state") else fake.city),
        ("product name", lambda: rng.choice(products)), ("product", lambda: rng.choice(products)),
        ("company name", fake.company), ("merchant name", fake.company), ("job title", fake.job),
        ("email sent", lambda: rng.random() < 0.5), ("is email verified", lambda: rng.random() < 0.5),
        ("FLAG_PHONE", lambda: rng.randint(0, 1)), ("phone model", lambda: rng.choice(models)),
        ("email domain", fake.free_email_domain), ("phone count", lambda: rng.randint(0, 5)),
        ("order id", lambda: rng.randint(10**9, 10**10)), ("tracking number", lambda: _bad_check(_luhn_number(rng, "4", 16))),
        ("transaction ref", lambda: _bad_check(aadhaar(rng))), ("licence plate", fake.license_plate),
        ("zip code", fake.postcode), ("order date", lambda: fake.date_between("-3y", "today")),
        ("amount", lambda: round(rng.uniform(1, 5000), 2)), ("quantity", lambda: rng.randint(1, 20)),
        ("color", fake.color_name), ("sku", lambda: f"SKU-{rng.randint(1000, 9999)}-{rng.choice('ABC')}"),
        ("file hash", lambda: uuid.UUID(int=rng.getrandbits(128)).hex), ("status", lambda: rng.choice(["open", "closed"])),
        ("department", lambda: rng.choice(["Sales", "HR", "Finance", "Ops"])), ("currency", fake.currency_code),
        ("url", fake.url), ("user agent", fake.user_agent), ("bank name", lambda: rng.choice(["HDFC Bank", "Chase", "Barclays"])),
        ("phone country code", lambda: rng.choice(["+91", "+1", "+44"])), ("comment", fake.sentence),
        ("name", lambda: rng.choice(products)),  # a product table's bare "name"
        ("id", lambda: rng.randint(10**6, 10**7)),  # a table key in a table with no personal data
    ]


def corpus(seed: int = 31, rows: int = ROWS) -> list[Column]:
    """The labelled columns, grouped in tables (a person's table per locale, a table of numbers and
    ids, a table of decoys per locale): deterministic for ``seed``."""
    from faker import Faker

    rng = random.Random(seed)
    columns: list[Column] = []
    for index, locale in enumerate(LOCALES):
        fake = Faker(locale)
        fake.seed_instance(seed + index)
        generators = _generators(fake, rng, locale)
        table = f"people_{locale.lower()}"
        columns.append(Column(table, rng.choice(["id", "ID", "uuid"]),
                              tuple(str(uuid.UUID(int=rng.getrandbits(128))) if rng.random() < 0.3 else 10_000 + i * 7
                                    for i in range(rows)), "user_id", locale=locale))
        for kind, shapes in NAMES.items():
            if kind is None:
                continue
            name = _styles(rng.choice(shapes).split(), rng)
            if kind == "user_id":
                start = rng.randint(1000, 10**7)
                values = tuple(start + i * rng.randint(1, 9) for i in range(rows)) if rng.random() < 0.6 else \
                    tuple(str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(rows))
            elif kind == "person_name":
                make = _part_values(fake, name.lower())
                values = tuple(make() for _ in range(rows))
            else:
                values = tuple(generators[kind]() for _ in range(rows))
            if kind in ("aadhaar", "card", "imei") and rng.random() < 0.5:
                values = tuple(int(v) for v in values)  # numbers stored as BIGINT
            columns.append(Column(table, name, values, kind, locale=locale))
        # The same kinds under names that tell nothing: values alone decide (kinds a library validates).
        for kind in ("email", "phone", "ip", "card", "aadhaar", "iban", "upi", "pan", "person_name", "address"):
            values = tuple(generators[kind]() for _ in range(rows))
            if kind == "phone":
                values = tuple(v if str(v).startswith("+") else fake.phone_number() for v in values)
            columns.append(Column(f"misc_{locale.lower()}", f"{rng.choice(OPAQUE)}_{rng.randint(1, 9)}{len(columns)}", values, kind,
                                  locale=locale))
        for name, make in _decoys(fake, rng):
            columns.append(Column(f"decoys_{locale.lower()}", _styles(name.split(), rng),
                                  tuple(make() for _ in range(rows)), None, decoy=True, locale=locale))
    return columns


def tables(columns: list[Column]) -> dict[str, list[Column]]:
    """The corpus's columns per table, in order."""
    grouped: dict[str, list[Column]] = {}
    for column in columns:
        grouped.setdefault(column.table, []).append(column)
    return grouped


def score(columns: list[Column], predicted: dict[tuple[str, str], str | None]) -> dict[str, Any]:
    """Precision, recall and F1: binary (personal data or not) and typed (the right kind), per kind,
    and decoys flagged. ``predicted``: (table, column) -> kind or None."""
    def f1(p: float, r: float) -> float:
        return 2 * p * r / (p + r) if p + r else 0.0

    tp = fp = fn = 0
    typed_tp = 0
    per_kind: dict[str, dict[str, int]] = {}
    for column in columns:
        guess = predicted.get((column.table, column.name))
        truth = column.label
        if guess and truth:
            tp += 1
        elif guess and not truth:
            fp += 1
        elif truth and not guess:
            fn += 1
        if guess and truth and guess == truth:
            typed_tp += 1
        for kind in {k for k in (guess, truth) if k}:
            counts = per_kind.setdefault(kind, {"tp": 0, "fp": 0, "fn": 0})
            if guess == truth:
                counts["tp"] += 1
            elif guess == kind:
                counts["fp"] += 1
            else:
                counts["fn"] += 1
    flagged = tp + fp
    precision, recall = tp / flagged if flagged else 0.0, tp / (tp + fn) if tp + fn else 0.0
    typed_p = typed_tp / flagged if flagged else 0.0
    typed_r = typed_tp / (tp + fn) if tp + fn else 0.0
    decoys = [c for c in columns if c.decoy]
    decoys_flagged = sorted(f"{c.table}.{c.name}" for c in decoys if predicted.get((c.table, c.name)))
    kinds = {}
    for kind, counts in sorted(per_kind.items()):
        p = counts["tp"] / (counts["tp"] + counts["fp"]) if counts["tp"] + counts["fp"] else 0.0
        r = counts["tp"] / (counts["tp"] + counts["fn"]) if counts["tp"] + counts["fn"] else 0.0
        kinds[kind] = {"precision": round(p, 3), "recall": round(r, 3), "f1": round(f1(p, r), 3), **counts}
    return {"columns": len(columns), "personal": sum(1 for c in columns if c.label), "decoys": len(decoys),
            "flagged": flagged, "precision": round(precision, 3), "recall": round(recall, 3),
            "f1": round(f1(precision, recall), 3), "typed_f1": round(f1(typed_p, typed_r), 3),
            "decoys_flagged": decoys_flagged, "per_kind": kinds}


def classify(columns: list[Column], options=None) -> dict[tuple[str, str], str | None]:
    """Run piitracer's classifier on the corpus, table by table (no catalog, no lineage)."""
    from piitracer.discover.classify import classify_columns

    predicted: dict[tuple[str, str], str | None] = {}
    for table, members in tables(columns).items():
        sample = {c.name.lower(): list(c.values) for c in members}
        for verdict in classify_columns(table, [c.name for c in members], sample, (), {}, options,
                                        rows_sampled=max(len(c.values) for c in members), lineage_checked=False):
            predicted[(table, verdict.column)] = verdict.kind
    return predicted
