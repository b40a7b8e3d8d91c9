"""The string prefilter's substring search (a few literals, no pattern compiled per chunk) says
what the RE2 pattern says, on random values and texts; a pattern that is not plain literals falls
back to RE2."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from piitracer.verify.literals import holds_literal, literal_prefilter, prefilter_literals
from piitracer.verify.values import ValueIndex

PIECES = ["a", "Z", "7", "42", "-", ".", "+", "(", ")", "[", "|", "\\", "*", "?", "$", "^", "{", "}", " ", "@",
          "é", "名", "\n", "/", "%", "'", '"', "x.y@mail.example"]


def _value(rng: random.Random) -> str:
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 6)))


@pytest.mark.parametrize("seed", range(6))
def test_substring_search_agrees_with_re2(seed: int) -> None:
    rng = random.Random(seed)
    checked = with_literals = 0
    for _ in range(60):
        values = sorted({_value(rng) for _ in range(rng.randint(1, 30))})
        index = ValueIndex.build({"s.v": values, "s.n": [rng.randint(0, 10**6)]})
        prefilter = literal_prefilter(values, index.re2_pattern())
        if prefilter is None:
            continue
        with_literals += prefilter_literals(prefilter) is not None
        texts = []
        for _ in range(8):
            parts = [_value(rng) for _ in range(rng.randint(0, 5))]
            if rng.random() < 0.4:
                parts.insert(rng.randint(0, len(parts)), rng.choice(values))
            texts.append("".join(parts).encode("utf-8"))
        for sample in [[text] for text in texts] + [texts]:
            expected = bool(pc.any(pc.match_substring_regex(pa.array(sample, pa.large_binary()), prefilter)).as_py())
            assert holds_literal(sample, prefilter) is expected, (prefilter, sample)
            checked += 1
    assert checked > 200 and with_literals > 10  # the substring path was taken, not only RE2's


def test_patterns_that_are_not_plain_literals_use_re2() -> None:
    assert prefilter_literals(r"ab\+c|d\.e") == (b"ab+c", b"d.e")
    assert prefilter_literals("名前|x") == ("名前".encode(), b"x")
    for pattern in [r"a\d", r"(?:a|b)", "a.b", "a|", "[ab]", "|".join(f"v{n}" for n in range(25)), "a\\"]:
        assert prefilter_literals(pattern) is None, pattern
    assert holds_literal([b"xa7y"], r"a\d") and not holds_literal([b"xady"], r"a\d")
