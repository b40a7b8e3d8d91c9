"""A value inside text is found only as a whole token, stated per kind of value (the module
docstring of ``piitracer.verify.values``), and found whenever it is one:

- a phone number or digit string is never found inside a longer number (``+155501001`` does not
  hold ``+15550100``), but is found next to any separator or letter;
- an e-mail is never found inside a longer address (``joann@x.com``, ``ann@x.com.au``), but is
  found after ``mailto:``, in brackets, before a sentence's full stop;
- an identifier (a PAN, ``u-42``) is never found inside a longer run of letters and digits;
- integers keep their whole-number rule.

Checked three ways that must agree: the Python rule on text (``search_text``), on raw bytes
(``search_bytes``) and, for text columns, Arrow's RE2 pre-filter followed by the rule (a real
Parquet file scanned by the verifier); and against a brute-force reference (one regular expression
per value, written from the docstring's rule) over generated values embedded in random text.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from piitracer.storage.locations import Location
from piitracer.storage.store import Store
from piitracer.verify.decoders import scan_location
from piitracer.verify.values import Place, ValueIndex

VALUES = {"phones": ["+15550100"], "digits": ["15550100"], "emails": ["ann@x.com"], "pans": ["ABCDE1234F"],
          "user_ids": ["u-42"], "ids": [4242], "names": ["Ann Smith"]}

# (text, the value sets found in it): each kind, both directions.
CASES = [
    # a phone number never inside a longer number; next to anything else it is found
    ("+155501001", set()), ("+1555010012345", set()), ("9+15550100", {"digits"}), ("155501001", set()),
    ("215550100", set()), ("+15550100", {"phones", "digits"}), ("call +15550100.", {"phones", "digits"}),
    ("tel:+15550100", {"phones", "digits"}), ("tel+15550100", {"phones", "digits"}),
    ("phone=+15550100;", {"phones", "digits"}), ("[+15550100]", {"phones", "digits"}),
    ("'+15550100',", {"phones", "digits"}), ('"+15550100"', {"phones", "digits"}),
    ("+15550100/x", {"phones", "digits"}), ("(+15550100)", {"phones", "digits"}), ("ph15550100", {"digits"}),
    ("15550100x", {"digits"}), ("15550100", {"digits"}), ("15550100-2", {"digits"}), ("+15550100\n", {"phones", "digits"}),
    ("+15550100٣", set()),  # an Arabic-Indic digit continues the number
    # an e-mail never inside a longer address
    ("joann@x.com", set()), ("jo.ann@x.com", set()), ("jo+ann@x.com", set()), ("jo-ann@x.com", set()),
    ("jo_ann@x.com", set()), ("ann@x.com.au", set()), ("ann@x.comb", set()), ("ann@x.com-mail.org", set()),
    ("éann@x.com", set()), ("ann@x.com", {"emails"}), ("mailto:ann@x.com", {"emails"}), ("<ann@x.com>", {"emails"}),
    ("email=ann@x.com", {"emails"}), ("to ann@x.com.", {"emails"}), ("ann@x.com. Next", {"emails"}),
    ("ann@x.com, bob@y.org", {"emails"}), ("'ann@x.com'", {"emails"}), ("a|ann@x.com|b", {"emails"}),
    ("ann@x.com;", {"emails"}), ("ann@x.com/inbox", {"emails"}), ("?ann@x.com", {"emails"}),
    ("{ann@x.com}", {"emails"}), ("ann@x.com..", {"emails"}), ("ann@x.com_old", {"emails"}),
    # an identifier never inside a longer alphanumeric run
    ("XABCDE1234F", set()), ("ABCDE1234FG", set()), ("ABCDE1234F0", set()), ("u-420", set()), ("au-42", set()),
    ("pan=ABCDE1234F;", {"pans"}), ("PAN: ABCDE1234F", {"pans"}), ("pan_ABCDE1234F", {"pans"}),
    ("(ABCDE1234F)", {"pans"}), ("user u-42.", {"user_ids"}), ("user_u-42", {"user_ids"}), ("u-42-x", {"user_ids"}),
    ("/users/u-42/", {"user_ids"}),
    # a name: the same rule at its ends
    ("Joann Smithers", set()), ("Ann Smithson", set()), ("to Ann Smith, hi", {"names"}),
    # integers as before
    ("b474734c4242a866", set()), ("-4242", set()), ("4242.5", set()), ("3.4242", set()), ("42424", set()),
    ("user_4242", {"ids"}), ("id-4242", {"ids"}), ("(4242)", {"ids"}), ("user 4242.", {"ids"}),
]


@pytest.mark.parametrize("text, found", CASES)
def test_a_value_is_found_in_text_exactly_as_a_whole_token(text: str, found: set[str]) -> None:
    index = ValueIndex.build(VALUES)
    assert index.search_text(text) == found
    assert index.search_bytes(text.encode("utf-8")) == found
    assert index.find(text, Place.VALUE) == found | index.match(text)
    if found:  # the RE2 pre-filter may be looser, never stricter
        assert pc.match_substring_regex(pa.array([text]), index.re2_pattern()).to_pylist() == [True]


def test_overlapping_values_are_all_found() -> None:
    index = ValueIndex.build({"full": ["ann smith"], "other": ["smith jones"], "first": ["ann smith jones"]})
    assert index.search_text("to ann smith jones") == {"full", "other", "first"}
    assert index.search_bytes(b"to ann smith jones") == {"full", "other", "first"}


def test_raw_bytes_read_the_utf8_text_around_a_hit() -> None:
    index = ValueIndex.build(VALUES)
    assert index.search_bytes("ü4242".encode()) == set()  # a letter, two bytes long, before the number
    assert index.search_bytes(b"\xff\x004242\x00") == {"ids"}  # bytes that are no text separate
    assert index.search_bytes("Ünn@x.com ann@x.com".encode()) == {"emails"}


def test_a_short_iceberg_bound_is_a_whole_value_not_a_truncated_prefix() -> None:
    index = ValueIndex.build({"phones": ["+155501001"], "emails": ["a.very.long.address@example.com"]})
    assert index.match_bound(b"+15550100", "string") == (set(), False)  # 9 characters: not truncated
    assert index.match_bound(b"a.very.long.addr", "string") == ({"emails"}, True)  # truncate(16)
    assert index.match_bound(b"a.very.long.add", "string") == (set(), False)


def test_a_text_column_of_longer_numbers_and_addresses_holds_no_subject(tmp_path: Path) -> None:
    """The verifier's column path (RE2 pre-filter, then the rule) on a real Parquet file."""
    index = ValueIndex.build(VALUES)
    others = ["+155501001", "joann@x.com", "ann@x.com.au", "XABCDE1234FX", "u-4200", "call +1555010012 now"] * 50
    pq.write_table(pa.table({"note": others}), tmp_path / "others.parquet")
    result = scan_location(Location.parse(str(tmp_path)), index, Store())
    assert [(hit.where, hit.value_set) for hit in result.hits] == []
    pq.write_table(pa.table({"note": others + ["reach me at tel:+15550100 or <ann@x.com>."]}), tmp_path / "others.parquet")
    result = scan_location(Location.parse(str(tmp_path)), index, Store())
    assert sorted({(hit.where, hit.value_set) for hit in result.hits}) == [
        ("column note (inside text)", "digits"), ("column note (inside text)", "emails"),
        ("column note (inside text)", "phones")]


# ---- property: the rule against a brute-force reference -----------------------------------------

LOCAL_PART = "_.+-!#$%&*^`~"


def reference_pattern(value: str | int) -> re.Pattern[str]:
    """The docstring's rule for one value, as one regular expression with look-arounds."""
    text = str(value)
    body = re.escape(text)
    if isinstance(value, int):
        return re.compile(r"(?<![^\W_])(?<!\d\.)(?<!(?<![^\W_])[-+])" + body + r"(?![^\W_]|\.\d)")
    if re.fullmatch(r"\+?\d(?:[\d ().-]*\d)?", text):
        return re.compile(r"(?<!\d)" + body + r"(?!\d)")
    if re.fullmatch(r"[^@\s]+@[^@\s]+", text):
        return re.compile(r"(?<![^\W_])(?<![" + re.escape(LOCAL_PART) + "])" + body + r"(?![^\W_]|-|\.(?:[^\W_]|-))")
    before = r"(?<![^\W_])" if text[0].isalnum() else ""
    after = r"(?![^\W_])" if text[-1].isalnum() else ""
    return re.compile(before + body + after)


def reference(value_sets: dict[str, list], text: str) -> set[str]:
    """Brute force: every value of at least 4 characters, searched on its own at every position."""
    return {name for name, values in value_sets.items() for value in values
            if len(str(value)) >= 4 and reference_pattern(value).search(text)}


digits = st.text("0123456789", min_size=4, max_size=11)
phones = st.builds(lambda plus, d: plus + d, st.sampled_from(["", "+"]), digits)
grouped_phones = st.builds(lambda a, sep, b: f"+{a}{sep}{b}", st.text("0123456789", min_size=1, max_size=3),
                           st.sampled_from([" ", "-", ".", ") "]), st.text("0123456789", min_size=3, max_size=7))
words = st.text("abcxyz019._+-", min_size=1, max_size=6).filter(lambda w: w[0].isalnum() and w[-1].isalnum())
emails = st.builds(lambda local, host, tld: f"{local}@{host}.{tld}", words, st.text("abxy01-", min_size=1, max_size=4),
                   st.sampled_from(["com", "in", "co"]))
identifiers = st.one_of(st.from_regex(r"[A-Z]{5}[0-9]{4}[A-Z]", fullmatch=True), st.from_regex(r"u-[0-9]{2,5}", fullmatch=True))
integers = st.integers(1000, 10**12)
# Text around the values: digits, letters, every separator, the characters that join tokens.
noise = st.text("0123456789abAZ+-._@=/:;,'\"()[]<>{}| \n?!#~üé٣", max_size=4)


@st.composite
def texts_with_values(draw):
    value_sets = {
        "phones": draw(st.lists(st.one_of(phones, grouped_phones), min_size=1, max_size=3)),
        "emails": draw(st.lists(emails, min_size=1, max_size=2)),
        "identifiers": draw(st.lists(identifiers, min_size=1, max_size=2)),
        "ints": draw(st.lists(integers, min_size=1, max_size=2)),
    }
    everything = [str(v) for values in value_sets.values() for v in values]
    # Pieces: the values, the values grown by a character on either side, and noise.
    grown = st.builds(lambda v, a, b: a + v + b, st.sampled_from(everything), noise, noise)
    pieces = draw(st.lists(st.one_of(st.sampled_from(everything), grown, noise), max_size=8))
    return value_sets, "".join(pieces)


@settings(max_examples=1500, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts_with_values())
def test_the_rule_agrees_with_a_brute_force_reference(case) -> None:
    value_sets, text = case
    index = ValueIndex.build(value_sets)
    expected = reference(value_sets, text)
    assert index.search_text(text) == expected
    assert index.search_bytes(text.encode("utf-8")) == expected
    assert index.search_text(text, numbers=False) == expected - {"ints"}
    if expected:
        assert pc.match_substring_regex(pa.array([text]), index.re2_pattern()).to_pylist() == [True]
