"""A path that is already canonical skips URL parsing: the location is the one the full parse
gives, for every path (random ones from an alphabet of the characters a parser reads)."""

import random

import pytest

from piitracer.storage import locations
from piitracer.storage.locations import Location, LocationError

ALPHABET = ["a", "b", "/", "/", ".", "..", "%", "%20", "%2F", "?", "#", ";", " ", "\\", "file:", "file://",
            "file:///", "//", "=", "+", ":", "é", "\t", "s3://"]


def _full(method, *args):
    """What the location is without the fast path (the parse as it was)."""
    original = locations._plain_local_path
    locations._plain_local_path = lambda text: None
    try:
        return method(*args)
    except LocationError as error:
        return ("refused", str(error))
    finally:
        locations._plain_local_path = original


def _fast(method, *args):
    try:
        return method(*args)
    except LocationError as error:
        return ("refused", str(error))


@pytest.mark.parametrize("seed", range(4))
def test_fast_path_gives_the_full_parse(seed):
    rng = random.Random(seed)
    root = Location("/lake/t")
    texts = ["/a/b", "file:///a/b", "/a/b/", "/a//b", "/a/./b", "/a/../b", "file:///a/b%20c", "/a/b;c",
             "file:////a", "//a/b", " /a/b", "/a/b ", "file:///a/b?x", "/a\\b", "/"]
    for _ in range(3000):
        start = rng.choice(["/", "file:///", "file://", "", "s3://bucket/"])
        texts.append(start + "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 8))))
    for text in texts:
        assert _fast(Location.parse, text) == _full(Location.parse, text), text
        assert _fast(root.resolve_reference, text) == _full(root.resolve_reference, text), text


def test_fast_path_is_taken_for_plain_paths_only():
    assert locations._plain_local_path("/lake/t/data/x.parquet") == "/lake/t/data/x.parquet"
    assert locations._plain_local_path("file:///lake/t/data/x.parquet") == "/lake/t/data/x.parquet"
    for text in ["/lake/t/a;b", "/lake/t/a%20b", "/lake/../t", "/lake//t", "/lake/t/", "file://host/t", "t/a", " /a"]:
        assert locations._plain_local_path(text) is None, text
