"""The JSON prefilter (``ValueIndex.may_be_in_json``, issue 43.2) skips walking a metadata file or
log only when the walk would find nothing: checked against the walk itself on random JSON and JSON
lines texts shaped like Iceberg metadata and Delta commits, with values planted as numbers, strings,
keys, text around them, path segments (URL-encoded too), stats held in JSON strings, escapes."""

from __future__ import annotations

import json
import random
from urllib.parse import quote

import pytest

from piitracer.verify.decoders import _json_text
from piitracer.verify.values import ValueIndex

VALUE_SETS = [
    {"u": [7000000001, 42], "pan": ["ABCDE1234F", "x1"]},
    {"u": [7000000001], "mail": ["ann@x.com"], "phone": ["+15550100"]},
    {"u": [7000000001], "odd": ["a/b", 'q"t', "é-1"]},  # values JSON may escape: never prefiltered
    {"f": [7.5], "u": [12345]},  # a float: never prefiltered
    {"u": [7000000001] + list(range(90001, 90041)), "pan": ["ABCDE1234F"]},  # many values: one regular expression
]
NEAR = ["7000000002", "700000000", "17000000001", "ABCDE1234", "xABCDE1234F", "ann@x.co", "1555010", "a-b", "4"]


def planted(rng: random.Random, values: list) -> object:
    choice = rng.randrange(9)
    value = rng.choice(values)
    if choice == 0:
        return value
    if choice == 1:
        return f"note {value} here"
    if choice == 2:
        return {str(value): rng.randrange(100)}
    if choice == 3:
        return f"data/user_id={quote(str(value), safe='')}/part-0.parquet"
    if choice == 4:
        return json.dumps({"minValues": {"user_id": value}, "numRecords": 3})
    if choice == 5:
        return rng.choice(NEAR)
    if choice == 6:
        return f"data/k={rng.choice(NEAR)}/f.parquet"
    if choice == 7:
        return str(value)
    return rng.randrange(10**10)


def document(rng: random.Random, values: list, depth: int = 0) -> object:
    if depth > 2 or rng.random() < 0.3:
        return planted(rng, values) if rng.random() < 0.5 else rng.choice([1, 2.5, "plain", None, True, "path/x"])
    if rng.random() < 0.5:
        return [document(rng, values, depth + 1) for _ in range(rng.randrange(1, 4))]
    keys = ["location", "path", "partitionValues", "stats", "summary", "operationParameters", "x-default", "other"]
    return {rng.choice(keys) + str(n): document(rng, values, depth + 1) for n in range(rng.randrange(1, 4))}


@pytest.mark.parametrize("sets", VALUE_SETS)
def test_the_prefilter_skips_only_texts_where_the_walk_finds_nothing(sets) -> None:
    index = ValueIndex.build(sets)
    values = [v for vs in sets.values() for v in vs]
    rng = random.Random(len(values))
    skipped = found = 0
    for number in range(400):
        if number % 3 == 2:  # JSON lines (a Delta commit), one line not JSON at all
            text = "\n".join(json.dumps(document(rng, values), ensure_ascii=rng.random() < 0.5) for _ in range(3))
            text += "\nnot json " + str(rng.choice(values + NEAR))
        else:
            text = json.dumps(document(rng, values), ensure_ascii=rng.random() < 0.5)
        for kind in ("log", "metadata", "raw"):
            walked = list(_json_text(text, _without_prefilter(sets), kind))
            assert list(_json_text(text, index, kind)) == walked, text
            skipped += not index.may_be_in_json(text)
            found += bool(walked)
            assert index.may_be_in_json(text.encode("utf-8")) == index.may_be_in_json(text)  # the file's bytes
    assert found > 100  # values are planted often enough
    if not any(isinstance(v, float) or (isinstance(v, str) and not v.isascii() or '"' in str(v)) for v in values):
        assert skipped > 50  # and the prefilter does skip texts


def test_a_value_only_url_encoded_in_a_path_is_still_walked() -> None:
    """A path segment is URL-decoded before it is matched: its literal need not be in the text."""
    index = ValueIndex.build(VALUE_SETS[1])
    for text, kind in (('{"add": {"path": "mail=ann%40x.com/part-0.parquet"}}', "log"),
                       ('{"location": "data/u=%37%30%30%30%30%30%30%30%30%31/f.parquet"}', "metadata")):
        walked = list(_json_text(text, _without_prefilter(VALUE_SETS[1]), kind))
        assert walked and list(_json_text(text, index, kind)) == walked


def test_a_value_spelt_with_unicode_escapes_is_still_walked() -> None:
    """JSON may spell any character as ``\\uXXXX``: a value's literal need not be in the text."""
    index = ValueIndex.build(VALUE_SETS[0])
    for text, kind in (('{"summary": {"k": "\\u0041BCDE1234F"}}', "metadata"),
                       ('{"add": {"stats": "{\\"minValues\\": {\\"u\\": \\u0037000000001}}"}}', "log"),
                       ('["x1", "ABCDE\\u0031234F"]', "raw")):
        walked = list(_json_text(text, _without_prefilter(VALUE_SETS[0]), kind))
        assert walked, text
        assert list(_json_text(text, index, kind)) == walked
        assert index.may_be_in_json(text.encode("utf-8"))


def _without_prefilter(sets) -> ValueIndex:
    index = ValueIndex.build(sets)
    index.__dict__["_json_literals"] = True  # always walk
    return index
