"""The keyed hash of issue 52, computed a whole Arrow column at a time (AES-256 on one block for a
text of at most 15 bytes, a CBC-MAC with the length block first beyond, both under keys HKDF derives from the
suppression key): every element's bytes equal the one-value hash's, whatever the column's type,
slicing, chunking, nulls or UTF-8; both equal an independent implementation of the definition;
and a list's membership of random columns equals a Python set of one-value hashes."""

from __future__ import annotations

import random
import secrets

import numpy as np
import pyarrow as pa
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

import piitracer.guard.hashing as hashing
import piitracer.guard.suppression_list as suppression_module
from piitracer.guard import SuppressionList, canonical_text, suppression_hash
from piitracer.guard.hashing import hash_array, suppression_hashes

KEY = bytes(range(32))


def definition(key: bytes, value) -> bytes | None:
    """The hash as the module docstring defines it, written out again with nothing of the module
    but the canonical text."""
    text = canonical_text(value)
    if text is None:
        return None
    aes_key = HKDF(hashes.SHA256(), 32, None, b"piitracer/suppress/v1/aes-256-block").derive(key)
    long_key = HKDF(hashes.SHA256(), 32, None, b"piitracer/suppress/v1/aes-256-cbc-mac").derive(key)
    data = text.encode("utf-8")
    if len(data) <= 15:
        block = data + b"\x00" * (15 - len(data)) + bytes([len(data)])
        encryptor = Cipher(algorithms.AES(aes_key), modes.ECB()).encryptor()
        return encryptor.update(block) + encryptor.finalize()
    # CBC-MAC written out block by block: the length block, then the text zero-padded to blocks
    blocks = [len(data).to_bytes(8, "big") + b"pt-long1"]
    padded = data + b"\x00" * (-len(data) % 16)
    blocks += [padded[i:i + 16] for i in range(0, len(padded), 16)]
    state = bytes(16)
    for block in blocks:
        encryptor = Cipher(algorithms.AES(long_key), modes.ECB()).encryptor()
        state = encryptor.update(bytes(a ^ b for a, b in zip(state, block))) + encryptor.finalize()
    return state


def per_value(key: bytes, array: pa.Array | pa.ChunkedArray) -> list[bytes | None]:
    return [suppression_hash(key, value) for value in array.to_pylist()]


def vectorised(key: bytes, array: pa.Array | pa.ChunkedArray) -> list[bytes | None]:
    digests, valid = hash_array(key, array)
    assert isinstance(digests, np.ndarray) and digests.dtype == np.dtype("V16") and valid.dtype == bool
    assert len(digests) == len(valid) == len(array)
    assert all(bytes(d) == bytes(16) for d, ok in zip(digests, valid) if not ok)  # zeros where not valid
    return [bytes(d) if ok else None for d, ok in zip(digests, valid)]


def assert_same(key: bytes, array: pa.Array | pa.ChunkedArray) -> None:
    expected = per_value(key, array)
    assert vectorised(key, array) == expected
    assert suppression_hashes(key, array.to_pylist()) == expected


# texts around the one-block limit: 15 bytes is one AES block, 16 the CBC-MAC; multi-byte UTF-8
# characters that end exactly at 15 bytes or cross it
BOUNDARY = ["123456789012345", "1234567890123456", "12345678901234", "a", "12345678", "123456789",
            "é" * 7 + "x", "é" * 7 + "xy", "é" * 8, "€" * 5, "€" * 5 + "x", "x" + "€" * 5, "😀" * 3 + "abc",
            "😀" * 4, "😀" * 3 + "ab", "\x00", "a\x00", "\x00" * 15, "\x00" * 16, "ann@example.org",
            "bo.smith@example.org", "f" * 64, "+44 7700 900123", "ABCPE1234F", "4111111111111111", " ", "", None]


def random_text(rng: random.Random) -> str | None:
    if rng.random() < 0.08:
        return None
    alphabet = rng.choice(["0123456789", "abcXYZ+@. -", "éü€😀ñ", "0123456789é€😀\x00"])
    return "".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 2, 7, 8, 9, 14, 15, 16, 17, 23, 24, 25, 30, 32, 33, 40])))


def test_the_hash_is_the_definition_and_has_fixed_bytes() -> None:
    for value in BOUNDARY + [0, -1, 8841302, 2**63 - 1, -2**63, 10**15 - 1, 10**15, 2**64 - 1, 7.0, 7.5]:
        assert suppression_hash(KEY, value) == definition(KEY, value), value
    # the bytes themselves, so that a change of the definition is a decision, not an accident
    assert suppression_hash(KEY, 8841302).hex() == "a223d86032d3d4d2bc717197cb93b793"  # one AES block
    assert suppression_hash(KEY, "f" * 64).hex() == "84dd18ccf94e51be79a0b5cdf3557523"  # the CBC-MAC
    assert suppression_hash(KEY, "8841302") == suppression_hash(KEY, 8841302)
    other = bytes(reversed(range(32)))
    assert suppression_hash(other, 8841302) != suppression_hash(KEY, 8841302)
    assert suppression_hash(other, "f" * 64) != suppression_hash(KEY, "f" * 64)
    # not the block encrypted under the suppression key itself: the keys are derived
    raw = Cipher(algorithms.AES(KEY), modes.ECB()).encryptor().update(b"8841302" + bytes(8) + b"\x07")
    assert suppression_hash(KEY, 8841302) != raw


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string()])
def test_boundary_texts_hash_the_same_as_one_value_alone(kind) -> None:
    array = pa.array(BOUNDARY, kind)
    assert_same(KEY, array)
    assert vectorised(KEY, array) == [definition(KEY, value) for value in BOUNDARY]
    _, valid = hash_array(KEY, array)
    assert valid.tolist() == [value not in ("", None) for value in BOUNDARY]


@pytest.mark.parametrize("seed", range(4))
def test_random_texts_every_way_an_arrow_column_comes(seed) -> None:
    rng = random.Random(seed)
    values = [random_text(rng) for _ in range(600)]
    key = secrets.token_bytes(32)
    for kind in (pa.string(), pa.large_string()):
        array = pa.array(values, kind)
        assert_same(key, array)
        for start, length in ((1, 598), (37, 200), (599, 1), (300, 0), (5, 400)):  # offset != 0
            piece = array.slice(start, length)
            assert piece.offset == start
            assert_same(key, piece)
        chunked = pa.chunked_array([array.slice(0, 3), array.slice(3, 0), array.slice(3, 400), array.slice(403)])
        assert_same(key, chunked)
        assert_same(key, pa.chunked_array([], kind))
        assert_same(key, array.dictionary_encode())
        assert_same(key, array.slice(11, 300).dictionary_encode().slice(7, 100))
    if hasattr(pa, "string_view"):
        assert_same(key, pa.array(values, pa.string_view()))


@pytest.mark.parametrize("width", [1, 7, 8, 9, 10, 13, 15])
def test_texts_all_of_one_length(width) -> None:
    """Phone numbers, PANs, ids of one number of digits: the data is a matrix of one row per text."""
    rng = random.Random(width)
    values = ["".join(rng.choice("0123456789ABC") for _ in range(width)) for _ in range(500)]
    gaps = [None if n % 7 == 0 else "" if n % 11 == 0 else value for n, value in enumerate(values)]
    wide = ["é" * (width // 2) + "x" * (width % 2) for _ in range(50)]  # two bytes a character, same length
    for kind in (pa.string(), pa.large_string()):
        for array in (pa.array(values, kind), pa.array(gaps, kind), pa.array(values, kind).slice(3, 400),
                      pa.array(gaps, kind).slice(13, 300), pa.array(wide, kind), pa.array(values + ["0" * 16], kind),
                      pa.array(values[:-1] + ["0" * (width - 1 or 2)], kind)):
            assert_same(KEY, array)


@pytest.mark.parametrize("kind", [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32(), pa.uint64()])
def test_integers_hash_as_their_decimal_digits(kind) -> None:
    rng = random.Random(str(kind))
    info = np.iinfo(kind.to_pandas_dtype())
    values = [int(info.min), int(info.max), 0, 1, -1 if info.min < 0 else 2, None]
    for _ in range(500):
        digits = rng.randint(1, len(str(info.max)))
        value = rng.randint(-(10**digits), 10**digits) if info.min < 0 else rng.randint(0, 10**digits)
        values.append(None if rng.random() < 0.1 else max(int(info.min), min(int(info.max), value)))
    array = pa.array(values, kind)
    assert_same(KEY, array)
    assert_same(KEY, array.slice(3, 250))
    assert_same(KEY, pa.chunked_array([array.slice(0, 100), array.slice(100)]))
    texts = vectorised(KEY, pa.array([None if v is None else str(v) for v in values]))
    assert vectorised(KEY, array) == texts  # the id 8841302 and the text "8841302" are one value


def test_numbers_that_are_not_integers_and_other_types() -> None:
    assert_same(KEY, pa.array([1.0, 2.5, None, -3.0, float("nan"), float("inf"), 1e16, 123456789012345.0]))
    from decimal import Decimal

    assert_same(KEY, pa.array([Decimal("8841302.00"), Decimal("1.50"), None], pa.decimal128(12, 2)))
    for array in (pa.array([True, False, None]), pa.array([b"1", b"2"]), pa.array([19723], pa.date32()),
                  pa.array([None, None], pa.null()), pa.array([], pa.string()), pa.array([[1]], pa.list_(pa.int64()))):
        digests, valid = hash_array(KEY, array)
        assert len(digests) == len(array) and not valid.any()


def _boundary_integers(kind: pa.DataType) -> list[int]:
    """Every power of ten the type holds, one below it and one above, negated too when signed; the
    type's limits; the one-block limits of a decimal text (15 digits, "-" and 14)."""
    info = np.iinfo(kind.to_pandas_dtype())
    near = {0, 1, 9, 10**14 - 1, 10**14, 10**15 - 1, 10**15, 10**15 + 1, int(info.min), int(info.max)}
    for power in range(20):
        near |= {10**power - 1, 10**power, 10**power + 1}
    near |= {-value for value in near}
    return sorted(value for value in near if int(info.min) <= value <= int(info.max))


@pytest.mark.parametrize("kind", [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(),
                                  pa.uint32(), pa.uint64()])
def test_integers_at_every_digit_boundary(kind) -> None:
    """A column of every number of digits (and one of each width alone, where the digits start at
    one place): one block up to 15 characters, the CBC-MAC past them, a sign in the block."""
    values = _boundary_integers(kind)
    assert_same(KEY, pa.array(values, kind))
    assert_same(KEY, pa.array(values + [None], kind).slice(1))
    by_width: dict[int, list[int]] = {}
    for value in values:
        by_width.setdefault(len(str(value)), []).append(value)
    for same_width in by_width.values():
        assert_same(KEY, pa.array(same_width * 3, kind))
        assert_same(KEY, pa.array([None] + same_width, kind))


@pytest.mark.parametrize("slice_rows", [None, 61])
def test_a_random_day_of_ids_of_one_width_and_of_many(slice_rows, monkeypatch) -> None:
    if slice_rows:  # hashed in slices: a slice of one width in a column of many, and the other way
        monkeypatch.setattr(hashing, "_SLICE_ROWS", slice_rows)
    rng = np.random.default_rng(52)
    for low, high in ((7_000_000_000, 7_005_000_000), (1, 99_999_999), (-10**14 + 1, 10**15 - 1),
                      (10**15 - 50, 10**15 + 50), (-(2**63), 2**63 - 1)):
        values = rng.integers(low, high, 2_000, dtype=np.int64, endpoint=True)
        assert_same(KEY, pa.array(values))
        nulls = rng.random(2_000) < 0.05
        assert_same(KEY, pa.array(values, mask=nulls))
        texts = pa.array([str(value) for value in values[:500]] + ["x" * 40, "", "é" * 9] * 7)
        assert_same(KEY, pa.chunked_array([texts.slice(3, 250), pa.array(values[:300], mask=nulls[:300]).cast(pa.string()),
                                           texts.slice(200)]))


@pytest.mark.parametrize("broken", ["_MASKS", "_block_masks", "_DIGITS4"])
def test_a_wrong_block_in_the_vectorised_path_is_caught(monkeypatch, broken) -> None:
    """The comparisons above fail when a column path builds its blocks differently from one value
    alone: each table the paths build blocks from, broken by one byte (texts of one width and of
    many; integers of one width and of many; texts over 15 bytes)."""
    arrays = [pa.array(["123456789", "12345678901234", "123"]), pa.array(["123456789", "987654321"]),
              pa.array([123456789, 12345678901234, 123]), pa.array([123456789, 987654321]),
              pa.array([5, 12, 123456789012, -4242]), pa.array(["x" * 17, "y" * 20, "z" * 18])]
    for array in arrays:
        assert_same(KEY, array)
    if broken == "_MASKS":
        wrong = hashing._MASKS.copy()
        wrong[1:8] = hashing._MASKS[2:9]  # a long text's last block keeps one byte too many
        monkeypatch.setattr(hashing, "_MASKS", wrong)
    elif broken == "_block_masks":
        wrong = hashing._block_masks().copy().view(np.uint8).reshape(16, 16)
        wrong[9:, 15] = 0xFF  # past 9 bytes, the byte the length goes in is kept
        wrong[:, :] = np.roll(wrong, 1, axis=1)  # each mask one byte too long
        monkeypatch.setattr(hashing, "_block_masks", lambda: wrong.view(np.dtype("V16")).reshape(16))
    else:
        wrong = hashing._DIGITS4.copy()
        wrong[4242] = wrong[4243]
        monkeypatch.setattr(hashing, "_DIGITS4", wrong)
    caught = []
    for n, array in enumerate(arrays):
        try:
            assert_same(KEY, array)
        except AssertionError:
            caught.append(n)
    # each table breaks exactly the arrays whose path reads it (and the entry broken)
    assert caught == {"_MASKS": [5], "_block_masks": [0, 1, 2, 3, 4], "_DIGITS4": [4]}[broken]


@pytest.mark.parametrize("seed", range(5))
def test_membership_of_random_columns_is_a_set_of_one_value_hashes(seed, monkeypatch) -> None:
    """(Seeds 3 and 4 hash a column in slices of a hundred values, as a column longer than a
    slice is: the slices' edges fall inside chunks, nulls and runs of one value.)"""
    if seed >= 3:
        monkeypatch.setattr(hashing, "_SLICE_ROWS", 97 + seed)
    rng = random.Random(100 + seed)
    key = secrets.token_bytes(32)
    people = [rng.randrange(10**12) for _ in range(300)]
    texts = [random_text(rng) for _ in range(300)]
    erased = rng.sample(people, 40) + [str(p) for p in rng.sample(people, 20)] + [t for t in rng.sample(texts, 60) if t]
    # decoys: hashes of nobody in the data, random 16-byte strings
    on_list = {suppression_hash(key, value) for value in erased}
    suppression = SuppressionList(key, list(on_list) + [secrets.token_bytes(16) for _ in range(2_000)])
    columns = [
        pa.array([rng.choice(people) if rng.random() > 0.1 else None for _ in range(3_000)], pa.int64()),
        pa.array([rng.choice(texts) for _ in range(3_000)], pa.large_string()),
        pa.array([rng.choice(texts) for _ in range(3_000)]).dictionary_encode(),
        pa.chunked_array([pa.array([str(rng.choice(people)) for _ in range(500)]) for _ in range(3)]).slice(250, 1_000),
    ]
    for column in columns:
        values = column.to_pylist()
        expected = [suppression_hash(key, value) in on_list for value in values]
        assert suppression.matches(column).to_pylist() == expected
        assert suppression.matches(column, distinct=False).to_pylist() == expected
        assert 0 < sum(expected) < len(values)
        assert [value in suppression for value in values[:200]] == expected[:200]


def test_hashes_that_share_their_first_eight_bytes_are_searched_exactly() -> None:
    """(They share their bitmap bit and their bucket: the 16 bytes decide.)"""
    key = secrets.token_bytes(32)
    real = [suppression_hash(key, value) for value in ("8841302", "ann@example.org", "+44 7700 900123")]
    # made-up hashes sharing a real hash's first 8 bytes, around it in sorted order
    twins = [real[0][:8] + bytes(8), real[0][:8] + b"\xff" * 8, real[1][:8] + real[1][8:15] + bytes([real[1][15] ^ 1])]
    suppression = SuppressionList(key, list(reversed(real + twins)) + real[:1])  # unsorted, a repeat
    assert len(suppression) == 6
    probe = np.frombuffer(b"".join(real + twins + [real[2][:8] + bytes(8), bytes(16)]), dtype="V16")
    assert suppression._found(probe).tolist() == [True] * 6 + [False, False]
    column = pa.array(["8841302", "ann@example.org", "+44 7700 900123", "8841303", None])
    assert suppression.matches(column).to_pylist() == [True, True, True, False, False]


def test_the_list_is_sorted_and_distinct_however_its_hashes_come() -> None:
    rng = np.random.default_rng(52)
    digests = [bytes(d) for d in np.frombuffer(rng.bytes(16 * 5_000), dtype="V16")]
    expected = np.unique(np.frombuffer(b"".join(digests), dtype="V16"))
    for given in (digests, sorted(digests), digests + digests[:100], sorted(digests) + digests[-1:]):
        built = SuppressionList(KEY, given)
        assert np.array_equal(built._hashes, expected)
    assert suppression_module._is_sorted_distinct(expected)
    assert not suppression_module._is_sorted_distinct(expected[::-1])
    assert not suppression_module._is_sorted_distinct(np.concatenate([expected[:3], expected[2:]]))


def test_a_crowded_bucket_and_lists_of_every_small_size() -> None:
    rng = np.random.default_rng(7)
    crowd = [b"\x12\x34\x56\x78" + rng.bytes(12) for _ in range(60)]  # one top: one bitmap bit, one bucket
    others = [rng.bytes(16) for _ in range(200)]
    suppression = SuppressionList(KEY, crowd[::2] + others)
    probe = np.frombuffer(b"".join(crowd + others + [rng.bytes(16) for _ in range(500)]), dtype="V16")
    expected = [True, False] * 30 + [True] * 200 + [False] * 500
    assert suppression._found(probe).tolist() == expected
    assert suppression._found(probe[::-1]).tolist() == expected[::-1]
    for size in range(0, 9):
        listed = [rng.bytes(16) for _ in range(size)]
        small = SuppressionList(KEY, listed)
        probe = np.frombuffer(b"".join(listed + [rng.bytes(16) for _ in range(50)]), dtype="V16")
        assert small._found(probe).tolist() == [True] * size + [False] * 50


def test_threads_hashing_at_once_agree_with_one_thread() -> None:
    """Each thread keeps its own AES context: columns and single values hashed side by side."""
    from concurrent.futures import ThreadPoolExecutor

    rng = random.Random(9)
    columns = [pa.array([random_text(rng) for _ in range(3_000)]) for _ in range(8)]
    columns += [pa.array([rng.randrange(10**14) for _ in range(3_000)], pa.int64()) for _ in range(4)]
    expected = [vectorised(KEY, column) for column in columns]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            assert list(pool.map(lambda column: vectorised(KEY, column), columns)) == expected
        values = columns[0].to_pylist()
        assert list(pool.map(lambda value: suppression_hash(KEY, value), values)) == expected[0]


def by_number(key: bytes, value) -> bytes | None:
    """The one-value definition an integer column is hashed by when numbers are kept: the number
    form, or the text form for a whole number past 64 bits (it has no number form)."""
    return hashing.number_hash(key, value) if hashing.whole_number(value) is not None else suppression_hash(key, value)


def test_the_number_form_is_the_documented_construction() -> None:
    number_key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
                      info=b"piitracer/suppress/v1/aes-256-int64").derive(KEY)
    for value in (0, 1, -1, 8841302, 2**63 - 1, -(2**63)):
        block = value.to_bytes(8, "little", signed=True) + b"pt-int64"
        encryptor = Cipher(algorithms.AES(number_key), modes.ECB()).encryptor()
        assert hashing.number_hash(KEY, value) == encryptor.update(block) + encryptor.finalize()
        assert hashing.number_hash(KEY, str(value)) == hashing.number_hash(KEY, value)  # one value, text or number
    assert hashing.number_hash(KEY, 7) != suppression_hash(KEY, 7)


@pytest.mark.parametrize("text,number", [("42", 42), ("0", 0), ("-42", -42), ("0042", None), ("+42", None),
                                         ("-0", None), (" 42", None), ("42 ", None), ("4_2", None), ("\u0664\u0662", None),
                                         ("１２", None), ("4e2", None), (str(2**63 - 1), 2**63 - 1),
                                         (str(-(2**63)), -(2**63)), (str(2**63), None), (str(-(2**63) - 1), None)])
def test_which_texts_are_whole_numbers(text, number) -> None:
    assert hashing.whole_number(text) == number
    assert (hashing.number_hash(KEY, text) is None) == (number is None)


@pytest.mark.parametrize("slice_rows", [None, 61])
@pytest.mark.parametrize("kind", [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(),
                                  pa.uint32(), pa.uint64()])
def test_integer_columns_hashed_by_number_are_each_value_hashed_alone(kind, slice_rows, monkeypatch) -> None:
    """Every integer type at its limits and every number of digits, with nulls, sliced, in chunks,
    dictionary-encoded, hashed in slices: each element's hash is its number form (a uint64 past
    the 64-bit signed range: its text form)."""
    if slice_rows:
        monkeypatch.setattr(hashing, "_SLICE_ROWS", slice_rows)
    values = _boundary_integers(kind)
    array = pa.array(values + [None] + values[::-1], kind)
    for column in (array, array.slice(3), pa.chunked_array([array.slice(0, 5), array.slice(5)]), array.dictionary_encode()):
        digests, valid = hash_array(KEY, column, integers_as_numbers=True)
        got = [bytes(d) if ok else None for d, ok in zip(digests, valid)]
        assert got == [None if value is None else by_number(KEY, value) for value in column.to_pylist()]
        assert all(bytes(d) == bytes(16) for d, ok in zip(digests, valid) if not ok)
    texts = pa.array([str(value) for value in values])
    assert hash_array(KEY, texts, integers_as_numbers=True)[0].tolist() == hash_array(KEY, texts)[0].tolist()  # texts stay texts
