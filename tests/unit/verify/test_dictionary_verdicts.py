"""The dictionary rule settles a chunk from its dictionary page's bytes (a literal finder over the
decompressed page, an integer page read as one NumPy array, the token rule on the entries holding a
literal only) and must say exactly what a full decode says: a chunk is proven by its dictionary
only when decoding every row of it and searching it (``column_hits``) finds nothing, and found to
hold a value whenever that search finds one.

Random dictionaries of every handled type (strings with odd characters, e-mails, phone numbers,
digit strings, empty strings, non-ASCII text, searched values glued to letters, digits and
separators; integers of every width, dates, binary, fixed-size binary, floats; nulls), written by
pyarrow with random codecs, searched with random values of every type (an integer beside its
decimal text, floats, decimals, dates, bytes), with the whole index and with a whole-values one.
The literal finder itself is checked against a naive search, its NumPy passes forced on even
where it would search literal by literal."""

from __future__ import annotations

import random
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import piitracer.verify.literals as literal_search
from piitracer.verify.columns import column_hits
from piitracer.verify.parquet_pages import CountingFile, read_metadata
from piitracer.verify.literals import LiteralFinder
from piitracer.verify.parquet_proofs import HOLDS, ParquetProver
from piitracer.verify.values import ValueIndex

CODECS = ["snappy", "zstd", "gzip", "none", "brotli", "lz4"]
ODD = ["", "a", "Z", "7", "42", "_", "-", "+", ".", "@", " ", "(", ")", "|", "\\", "%", "'", '"', "\n", "\x00",
       "é", "名", "ß", "٣", "😀", "0x", "mailto:", "tel:"]
KINDS = ["string", "large_string", "binary", "large_binary", "int8", "int16", "int32", "int64", "uint8", "uint16",
         "uint32", "uint64", "date32", "float64", "fixed4"]
DAY = date(1990, 3, 4)


def _searched(rng: random.Random) -> dict[str, list]:
    """Value sets of every type: e-mails, phone numbers, digit strings, words, short codes,
    integers (small and large), floats, decimals, dates and bytes."""
    number = rng.randrange(10**6, 10**10)
    return {
        "s.email": [f"{rng.choice(['ann', 'jo.ann', 'x_y'])}{rng.randrange(100)}@ex{rng.randrange(9)}.org"
                    for _ in range(rng.randint(0, 3))],
        "s.phone": [f"+{rng.randrange(10**7, 10**11)}" for _ in range(rng.randint(0, 3))],
        "s.digits": [str(rng.randrange(10**5, 10**12)) for _ in range(rng.randint(0, 2))],
        "s.word": [rng.choice(["ABCDE1234F", "u-42", "Ann Smith", "名前テスト", "Zoë-Ünal", "a|b\\c"])
                   for _ in range(rng.randint(0, 2))],
        "s.code": [rng.choice(["ab1", "7", "", "é", "zz"]) for _ in range(rng.randint(0, 1))],
        "s.id": [number, rng.choice([7, 42, 127, 255, 40000, -3, 2**40, 2**63 - 1])] * rng.randint(0, 1),
        "s.amount": [rng.choice([7.0, 0.5, 1e300])] * rng.randint(0, 1),
        "s.price": [Decimal("7.00"), Decimal("12.50")] * rng.randint(0, 1),
        "s.day": [DAY + timedelta(days=rng.randrange(-3, 3))] * rng.randint(0, 1),
        "s.blob": [bytes(rng.randrange(256) for _ in range(rng.randint(1, 6)))] * rng.randint(0, 1),
    }


def _text(rng: random.Random, searched: list) -> str:
    """A string entry: odd pieces, maybe a searched value (or its decimal text) glued to others."""
    parts = [rng.choice(ODD) for _ in range(rng.randint(0, 4))]
    if searched and rng.random() < 0.3:
        value = rng.choice(searched)
        text = value if isinstance(value, str) else str(value) if isinstance(value, int) else None
        if text is not None:
            if rng.random() < 0.3:
                parts = [text]  # whole
            else:  # inside text, glued to whatever the pieces are: the token rule decides
                parts.insert(rng.randint(0, len(parts)), text)
    if rng.random() < 0.1:
        parts = [str(rng.randrange(10**12))]  # a digit string
    return "".join(parts)


def _column(rng: random.Random, kind: str, rows: int, searched: list) -> pa.Array:
    """A column of ``kind`` whose dictionary holds a searched value sometimes, and often values
    that are almost one (a neighbour, a longer number, the value inside longer text)."""
    ints = [v for v in searched if isinstance(v, int) and not isinstance(v, bool)]
    distinct = rng.choice([1, 3, 20, 300])
    if kind in ("string", "large_string"):
        pool = [_text(rng, searched) for _ in range(distinct)]
    elif kind in ("binary", "large_binary"):
        texts = [_text(rng, searched).encode("utf-8") for _ in range(distinct)]
        blobs = [v for v in searched if isinstance(v, bytes)]
        pool = texts + (blobs if rng.random() < 0.3 else []) + [bytes(rng.randrange(256) for _ in range(5))]
    elif kind == "fixed4":
        blobs = [v for v in searched if isinstance(v, bytes) and len(v) == 4]
        pool = [bytes(rng.randrange(256) for _ in range(4)) for _ in range(distinct)] + blobs[:rng.randint(0, 1)]
    elif kind == "date32":
        pool = [DAY + timedelta(days=rng.randrange(-5, 5)) for _ in range(distinct)]
    elif kind == "float64":
        pool = [rng.choice([7.0, 0.5, 7.000001, -0.0, float(rng.randrange(100))]) for _ in range(distinct)]
    else:
        info = pa.types
        arrow = getattr(pa, kind)()
        bits = arrow.bit_width
        low, high = (0, 2**bits - 1) if info.is_unsigned_integer(arrow) else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        near = [v + d for v in ints for d in (-1, 0, 1, 10)] or [0]
        pool = [min(high, max(low, rng.choice(near) if rng.random() < 0.5 else rng.randint(low, high)))
                for _ in range(distinct)]
    values = [rng.choice(pool) for _ in range(rows)]
    if rng.random() < 0.3:
        values = [None if rng.random() < 0.2 else v for v in values]
    arrow = {"fixed4": pa.binary(4), "date32": pa.date32()}.get(kind) or getattr(pa, kind)()
    return pa.array(values, arrow)


def _verdict_and_truth(path: Path, index: ValueIndex) -> tuple[str | None, bool] | None:
    """(the dictionary rule's verdict on the file's one chunk, whether a full decode finds a value
    there); None when the chunk is not wholly dictionary-encoded."""
    with CountingFile(pa.OSFile(str(path))) as handle:
        metadata, footer = read_metadata(handle)
        schema = pq.ParquetFile(str(path)).schema_arrow
        prover = ParquetProver(handle, metadata, schema, index, footer)
        column = prover.column("c", index)
        chunk = metadata.row_group(0).column(0)
        if column is None or column.dictionary_type is None or not chunk.has_dictionary_page:
            return None
        verdict = prover._dictionary_verdict(chunk, column, index)
    truth = any(True for _ in column_hits("c", pq.read_table(path).column("c"), index))
    return verdict, truth


def _random_file(rng: random.Random, path: Path, kind: str, searched: list) -> None:
    rows = rng.randint(1, 400)
    pq.write_table(pa.table({"c": _column(rng, kind, rows, searched)}), path, compression=rng.choice(CODECS),
                   use_dictionary=True, dictionary_pagesize_limit=1 << 20, row_group_size=rows,
                   data_page_version=rng.choice(["1.0", "2.0"]))


@pytest.mark.parametrize("forced", [False, True])
@pytest.mark.parametrize("seed", range(5))
def test_dictionary_verdict_is_exactly_what_a_full_decode_finds(tmp_path: Path, seed: int, forced: bool,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """60 random dictionaries a seed; ``forced``: the literal finder's NumPy passes on every page
    (few literals, small pages: it would otherwise search them literal by literal)."""
    if forced:
        monkeypatch.setattr(literal_search, "_FEW", 0)
        monkeypatch.setattr(literal_search, "_SMALL", 0)
    rng = random.Random(seed)
    outcomes = {None: 0, HOLDS: 0}
    for number in range(60):
        sets = _searched(rng)
        searched = [v for values in sets.values() for v in values]
        index = ValueIndex.build(sets, inside_text=rng.random() < 0.7)
        path = tmp_path / f"d{number}.parquet"
        # Strings half the time: the finder, the token rule and the length-prefixed whole values.
        kind = rng.choice(["string", "large_string", "binary"] if rng.random() < 0.5 else KINDS)
        _random_file(rng, path, kind, searched)
        found = _verdict_and_truth(path, index)
        if found is None:
            continue
        verdict, truth = found
        assert verdict in (None, HOLDS), verdict  # never unreadable: every dictionary here is read
        # Never over-pruned (a value a full decode finds, in a chunk proven); never a false alarm.
        assert (verdict == HOLDS) is truth, (number, verdict, truth)
        outcomes[verdict] += 1
    assert outcomes[None] > 10 and outcomes[HOLDS] > 5, outcomes  # both verdicts really taken


def test_inside_text_verdicts_follow_the_token_rule_on_the_entries(tmp_path: Path) -> None:
    """Searched values glued to letters, digits and separators inside entries of a wide dictionary:
    the finder admits the page, and the token rule (not the bytes) decides, entry by entry."""
    index = ValueIndex.build({"s.id": [7000000001], "s.email": ["ann@x.com"], "s.phone": ["+15550100"]})
    cases = [  # (entry, whether the entry holds a searched value)
        ("17000000001", False), ("x7000000001", False), ("7000000001.5", False), ("-7000000001", False),
        ("user_7000000001", True), ("id=7000000001;", True), ("joann@x.com", False), ("ann@x.com.au", False),
        ("mailto:ann@x.com", True), ("+155501001", False), ("tel:+15550100", True), ("7000000001", True),
    ]
    filler = [f"note {n} about order {n * 7919}" for n in range(2000)]
    for number, (entry, holds) in enumerate(cases):
        path = tmp_path / f"t{number}.parquet"
        # The entry between two others: in the page its neighbours' length bytes sit around it.
        pq.write_table(pa.table({"c": filler[:1000] + [entry] + filler[1000:]}), path, compression="snappy")
        verdict, truth = _verdict_and_truth(path, index)
        assert truth is holds, entry
        assert (verdict == HOLDS) is holds, entry


@pytest.mark.parametrize("seed", range(3))
def test_literal_finder_finds_every_occurrence(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every occurrence of every literal, against a naive search, with the NumPy passes forced on
    (``_FEW``, ``_SMALL`` at 0) and as chosen; literals of 1 to 40 bytes (every window width)."""
    rng = random.Random(seed)
    alphabet = [b"a", b"b", b"1", b"2", b"@", b".", b"\x00", b"\x03", "é".encode(), "名".encode(), b"+", b" "]
    for forced in (True, False):
        if forced:
            monkeypatch.setattr(literal_search, "_FEW", 0)
            monkeypatch.setattr(literal_search, "_SMALL", 0)
        else:
            monkeypatch.undo()
        for _ in range(150):
            longest = rng.choice([3, 8, 20, 40])
            literals = {b"".join(rng.choice(alphabet) for _ in range(rng.randint(1, longest)))
                        for _ in range(rng.randint(1, 80))}
            finder = LiteralFinder(literals)
            for _ in range(3):
                text = b"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 4000)))
                for literal in rng.sample(sorted(literals), min(len(literals), rng.randint(0, 3))):
                    at = rng.randint(0, len(text))
                    text = text[:at] + literal + text[at:]
                expected = {(at, at + len(literal)) for literal in literals for at in _naive(text, literal)}
                assert set(finder.occurrences(text)) == expected
                assert finder.holds(text) is bool(expected)


def _naive(text: bytes, literal: bytes) -> list[int]:
    found, at = [], text.find(literal)
    while at >= 0:
        found.append(at)
        at = text.find(literal, at + 1)
    return found


def test_a_finder_needs_literals() -> None:
    with pytest.raises(ValueError):
        LiteralFinder([])
    with pytest.raises(ValueError):
        LiteralFinder([b"a", b""])
