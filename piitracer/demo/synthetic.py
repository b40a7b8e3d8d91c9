"""Deterministic synthetic payments for the demo lakehouse: Indian-style identifiers (16-digit
PANs, 10-digit mobile numbers, 12-digit Aadhaar reference numbers), rupee amounts, merchants in
Indian cities. Everything comes from one seeded generator, so the same seed, size and anchor date
give the same rows."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

import numpy as np
import pyarrow as pa

# The demo's data subject: the user whose erasure the demo plans (README, lineage_fixtures/).
SUBJECT_USER_ID = 8841302
SUBJECT_PAYMENTS = 6

PAYMENTS_SCHEMA = pa.schema([
    ("user_id", pa.int64()),
    ("pan", pa.string()),
    ("phone", pa.string()),
    ("aadhaar_ref", pa.string()),
    ("amount", pa.decimal128(12, 2)),
    ("merchant_id", pa.int64()),
    ("dt", pa.date32()),
])
MERCHANTS_SCHEMA = pa.schema([("merchant_id", pa.int64()), ("merchant_name", pa.string()), ("city", pa.string())])

_CITIES = ["Mumbai", "Delhi", "Bengaluru", "Hyderabad", "Chennai", "Kolkata", "Pune", "Ahmedabad", "Jaipur",
           "Lucknow", "Kochi", "Indore", "Chandigarh", "Bhubaneswar", "Guwahati"]
_KINDS = ["Kirana Store", "Medicals", "Textiles", "Electronics", "Sweets", "Fuels", "Travels", "Cafe",
          "Mobiles", "Books", "Hardware", "Restaurant"]
_NAMES = ["Sharma", "Gupta", "Patel", "Reddy", "Iyer", "Singh", "Das", "Nair", "Joshi", "Mehta", "Rao", "Khan"]
PAYMENTS_PER_USER = 12  # on average: sizes the user population from the row count


@dataclass(frozen=True)
class DemoCalendar:
    """The payment dates: ``weeks`` weekly business dates ending at ``anchor`` (yesterday by
    default, so the pipelines' ``current_date()`` windows and the settlements' 'yesterday' hold
    rows on whatever day the demo is built)."""

    anchor: date
    weeks: int = 8

    @property
    def dates(self) -> list[date]:
        return [self.anchor - timedelta(days=7 * k) for k in range(self.weeks - 1, -1, -1)]


def merchants(count: int = 400, seed: int = 7) -> pa.Table:
    """``count`` merchants (ids 1001...) with a name and a city."""
    rng = np.random.default_rng(seed)
    ids = np.arange(1001, 1001 + count, dtype=np.int64)
    names = [f"{_NAMES[a]} {_KINDS[b]}" for a, b in zip(rng.integers(0, len(_NAMES), count), rng.integers(0, len(_KINDS), count))]
    cities = [_CITIES[i] for i in rng.integers(0, len(_CITIES), count)]
    return pa.table([pa.array(ids), pa.array(names), pa.array(cities)], schema=MERCHANTS_SCHEMA)


def payments(rows: int, calendar: DemoCalendar, merchant_ids: np.ndarray, seed: int = 42) -> pa.Table:
    """``rows`` payments (at least the subject's) over ``calendar``'s dates, sorted by date.

    Users have one card, one phone and one Aadhaar reference each; about 2% of payments are
    refunds (negative amounts, which the enrichment pipeline filters out). The subject
    :data:`SUBJECT_USER_ID` makes :data:`SUBJECT_PAYMENTS` payments, the last one on the anchor
    date, so every derived table holds some of theirs."""
    rng = np.random.default_rng(seed)
    users = max(rows // PAYMENTS_PER_USER, 10)
    user_ids = _distinct(rng, users, 1_000_000, 9_999_999, exclude=SUBJECT_USER_ID)
    user_ids[0] = SUBJECT_USER_ID
    pans = _digits(rng, users, 15, prefixes=("4", "5", "6"))  # Visa, Mastercard, RuPay
    phones = _digits(rng, users, 9, prefixes=("6", "7", "8", "9"))  # Indian mobile numbers
    aadhaar = _digits(rng, users, 11, prefixes=("2", "3", "4", "5", "6", "7", "8", "9"))

    others = max(rows - SUBJECT_PAYMENTS, 0)
    who = np.concatenate([np.zeros(SUBJECT_PAYMENTS, dtype=np.int64), rng.integers(1, users, others)])
    dates = np.array(calendar.dates, dtype="datetime64[D]")
    subject_days = dates[np.linspace(0, len(dates) - 1, SUBJECT_PAYMENTS).round().astype(int)]
    day = np.concatenate([subject_days, dates[rng.integers(0, len(dates), others)]])
    paise = np.round(rng.lognormal(mean=6.2, sigma=1.1, size=len(who)) * 100).astype(np.int64) + 100
    paise[rng.random(len(who)) < 0.02] *= -1  # refunds
    merchant = merchant_ids[rng.integers(0, len(merchant_ids), len(who))]

    order = np.argsort(day, kind="stable")
    who, day, paise, merchant = who[order], day[order], paise[order], merchant[order]
    return pa.table([
        pa.array(user_ids[who]),
        pa.array(pans[who]),
        pa.array(phones[who]),
        pa.array(aadhaar[who]),
        pa.array([Decimal(int(p)).scaleb(-2) for p in paise], type=pa.decimal128(12, 2)),
        pa.array(merchant),
        pa.array(day),
    ], schema=PAYMENTS_SCHEMA)


def _distinct(rng: np.random.Generator, count: int, low: int, high: int, exclude: int) -> np.ndarray:
    """``count`` distinct integers in [low, high] without ``exclude``, in random order."""
    chosen = np.unique(rng.integers(low, high + 1, count * 2))
    chosen = chosen[chosen != exclude]
    rng.shuffle(chosen)
    if len(chosen) < count:
        raise ValueError(f"cannot draw {count} distinct ids in [{low}, {high}]")
    return chosen[:count].astype(np.int64)


def _digits(rng: np.random.Generator, count: int, length: int, prefixes: tuple[str, ...]) -> np.ndarray:
    """``count`` distinct digit strings: a prefix then ``length`` random digits."""
    body = rng.integers(0, 10 ** length, count * 2, dtype=np.int64)
    first = rng.integers(0, len(prefixes), count * 2)
    texts = [f"{prefixes[f]}{b:0{length}d}" for f, b in zip(first, body)]
    unique = list(dict.fromkeys(texts))[:count]
    if len(unique) < count:
        raise ValueError(f"cannot draw {count} distinct {length + 1}-digit numbers")
    return np.array(unique, dtype=object)
