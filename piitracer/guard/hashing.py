"""The keyed hash an erased identifier is remembered by (issue 52), shared by the suppression
records piitracer keeps at close, the lakehouse scan and the pipeline guard.

A suppression record never holds the value, nor a plain hash of it: a plain hash of a user id, a
phone number or a PAN is reversed by hashing every candidate (there are only so many). It holds a
16-byte *keyed* hash of the value's canonical text, under a random 32-byte suppression key of its
own that only the workspace's master key unwraps. Without the key the records say nothing;
destroying the key forgets everyone at once.

**The construction.** Two keys are derived from the suppression key with HKDF-SHA256 (distinct
``info`` labels): two AES-256 keys, one for short texts, one for long texts' CBC-MAC. With ``t`` the UTF-8 bytes of the
canonical text:

- ``len(t) <= 15``: ``AES-256(aes key, t + zero bytes to 15 + one byte holding len(t))``, one
  block. AES under a secret key is a pseudorandom permutation of 16-byte blocks, and a PRP on a
  domain this large is a pseudorandom function (the PRP/PRF switching lemma: a distinguisher's
  advantage is at most q^2 / 2^129 for q blocks), so the output says nothing of the text to whoever
  lacks the key and no dictionary of candidate ids can be hashed without it. The encoding is
  injective (the last byte tells ``b"1"`` from ``b"1\\0"``), and a permutation never maps two
  texts to one hash: short texts do not collide at all. ECB here is no misuse: each block is one
  evaluation of the PRF on its own, and equal texts giving equal hashes is the point (a lookup).
  Being one block each, the hashes of a slice of an Arrow column are one AES-ECB call
  (``encryptor().update_into``) over the concatenated blocks, built with NumPy from the column's
  offsets and data buffer, or from an integer column's numbers (:func:`hash_array`): a few
  nanoseconds a value where a Python HMAC costs a microsecond each. User ids, phone numbers, Indian PANs and Aadhaar numbers are all 15
  bytes or fewer.
- longer texts: CBC-MAC under the second key (AES-256) of a first block holding the text's length
  (8 bytes, big-endian) and ``b"pt-long1"``, then the text in 16-byte blocks, the last padded with
  zeros: ``s = AES(k, L); s = AES(k, s XOR P_i)`` for each block, the last ``s`` the hash. CBC-MAC
  is a PRF on a prefix-free set of messages, and the length block makes the set prefix-free
  (Bellare, Kilian and Rogaway; Petrank and Rackoff): two texts of different lengths differ in
  their first block, two of one length have as many blocks and neither is a prefix of the other.
  It is computed for a whole column too: the long texts grouped by their number of blocks, each
  group's blocks one AES-ECB call per block position (e-mail addresses, 16-digit card numbers, hex
  digests: a card number is two AES blocks, a SHA-256 hex digest five).
Both halves are keyed and both keys come from the one suppression key: destroying it forgets
everyone. The two outputs cannot be confused with each other in a way that matters: a short and a
long text colliding is a 2^-128 event per pair (two keys, two pseudorandom functions). :func:`suppression_hash`
(one value) builds its block with plain ``bytes`` and is the reference the vectorised
:func:`hash_array` is tested against, value for value.

The canonical text is the value's *text*, not its type: a backfill that writes the id 8841302 into
a string column, or a phone number into an integer one, still matches. Integers (and integral
decimals and floats) are their decimal digits; strings are kept exactly as stored (no trimming or
case folding: a neighbouring value is a different person). Other types (booleans, dates, binary,
nested values, nulls, the empty string) identify no one here and have no canonical text.

**Whole numbers have a second form.** A record of a value whose text is a 64-bit whole number
(:func:`whole_number`) also keeps its :func:`number_hash`: one AES block of the number's 8 bytes
under a third derived key. An integer column is then hashed from its values' bytes
(``hash_array(..., integers_as_numbers=True)``), with no decimal text written, and matches exactly
the values the text form would (the number ``v`` and the text ``str(v)`` are one value). A list
made before number forms were kept has none for its old records: it hashes integers by text.

The derived keys of the last few suppression keys are kept in this process (``_keys``, a small
LRU cache, and each thread's AES contexts) so that hashing one value does not derive them again;
they are as secret as the key.
"""

from __future__ import annotations

import re
import threading
from decimal import Decimal
from functools import lru_cache
from typing import Any, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

HASH_BYTES = 16
KEY_BYTES = 32
SHORT_BYTES = 15  # a canonical text of at most this many UTF-8 bytes is hashed by one AES block
AES_INFO = b"piitracer/suppress/v1/aes-256-block"
LONG_INFO = b"piitracer/suppress/v1/aes-256-cbc-mac"
NUMBER_INFO = b"piitracer/suppress/v1/aes-256-int64"
LONG_TAG = b"pt-long1"  # the second half of a long text's length block
NUMBER_TAG = b"pt-int64"  # the second half of a whole number's block
HASH_DTYPE = np.dtype(f"V{HASH_BYTES}")  # NumPy's raw-bytes type of one hash (compared bytewise)

_LOCAL = threading.local()  # each thread's AES encryptors, by key (_encryptor)

# _MASKS[k]: the k low bytes of a little-endian 64-bit word (k = 0..8); long texts' last block.
_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)
# _DIGITS4[k]: the four ASCII digits of k (0000 to 9999) in the low bytes of a little-endian word,
# the first digit lowest: an integer's decimal text is built four digits a lookup.
_DIGITS4 = np.array([int.from_bytes(f"{k:04d}".encode(), "little") for k in range(10_000)], dtype=np.uint64)
_ASCII_ZEROS = np.uint64(int.from_bytes(b"0" * 8, "little"))
_POWERS_OF_TEN = 10 ** np.arange(1, 16, dtype=np.int64)  # an integer's digits: 1 + how many it reaches
# An integer whose decimal text is one block: 0 <= v < 10^15 (15 digits), -10^14 < v < 0 ("-" and 14).
_SHORT_ABOVE, _SHORT_BELOW = -(10**14), 10**15
_SLICE_ROWS = 1 << 15  # a column is hashed this many values at a time (hash_array)
# A canonical text that is a whole number as Python and Arrow write one: ASCII digits, no leading
# zero, "-" before a negative, no "+", no "-0", no spaces.
_WHOLE_NUMBER = re.compile(r"-?[1-9][0-9]*|0")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_NUMBER_TAG_WORD = np.uint64(int.from_bytes(NUMBER_TAG, "little"))


def canonical_text(value: Any) -> str | None:
    """The text a value is hashed as, or None for a value that identifies no one here."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value if value else None
    if isinstance(value, Decimal):
        return str(int(value)) if value.is_finite() and value == value.to_integral_value() else None
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else None
    return None


@lru_cache(maxsize=8)
def _keys(key: bytes) -> tuple[bytes, bytes]:
    """(AES-256 key of short texts, AES-256 key of long texts' CBC-MAC), both derived from the
    suppression key with HKDF-SHA256."""
    def derive(info: bytes) -> bytes:
        return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(key)

    return derive(AES_INFO), derive(LONG_INFO)


@lru_cache(maxsize=8)
def _number_key(key: bytes) -> bytes:
    """The AES-256 key of whole numbers' number form, derived from the suppression key with
    HKDF-SHA256 (its own ``info``)."""
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=NUMBER_INFO).derive(key)


def whole_number(value: Any) -> int | None:
    """The 64-bit signed integer a value's canonical text writes, or None: the text is not a whole
    number as an integer column's value is written (``"0042"``, ``"+5"``, ``"-0"``, ``" 5"`` are
    not), or it is outside the 64-bit range."""
    text = canonical_text(value)
    if text is None or not _WHOLE_NUMBER.fullmatch(text):
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


def number_hash(key: bytes, value: Any) -> bytes | None:
    """The keyed hash of a value's *number form* (None when it is no 64-bit whole number,
    :func:`whole_number`): ``AES-256(number key, the number as 8 little-endian bytes, two's
    complement, + b"pt-int64")``, one block under a third key derived from the suppression key.

    A record of a whole number keeps this beside its text's hash, so that an integer column is
    matched from its values' bytes, with no decimal text built (300,000 user ids on one thread:
    2.9 ms against 17.4 ms by text). Exactly as a text match: an integer ``v`` of a column is flagged by
    number when some kept text is a whole number ``t`` with ``int(t) == v``, which is
    ``t == str(v)``, the text-form rule. A keyed PRF like the text form: without the key it says
    nothing of the number, and it never equals a text form's hash but by a 2^-128 accident."""
    number = whole_number(value)
    if number is None:
        return None
    return _encrypt_blocks(_number_key(bytes(key)), number.to_bytes(8, "little", signed=True) + NUMBER_TAG)


def _encryptor(aes_key: bytes):
    """This thread's AES-256-ECB encryptor under ``aes_key``, made once: ECB keeps nothing from one
    block to the next, so one context encrypts any number of whole blocks (a context is never
    shared between threads)."""
    cache = getattr(_LOCAL, "encryptors", None)
    if cache is None:
        cache = _LOCAL.encryptors = {}
    encryptor = cache.get(aes_key)
    if encryptor is None:
        if len(cache) >= 8:
            cache.clear()
        encryptor = cache[aes_key] = Cipher(algorithms.AES(aes_key), modes.ECB()).encryptor()
    return encryptor


def _encrypt_blocks(aes_key: bytes, blocks: bytes) -> bytes:
    """AES-256 of each 16-byte block (ECB: every block alone), in one call."""
    return _encryptor(aes_key).update(blocks)


def _short_block(data: bytes) -> bytes:
    """The one block a short text is hashed as: its bytes, zeros to 15, its length."""
    return data + bytes(SHORT_BYTES - len(data)) + bytes([len(data)])


def _length_block(size: int) -> bytes:
    return size.to_bytes(8, "big") + LONG_TAG


def _long_hash(long_key: bytes, data: bytes) -> bytes:
    """The CBC-MAC of one long text (module docstring): CBC encryption with a zero IV of the length
    block and the zero-padded text, its last block."""
    padded = data + bytes(-len(data) % HASH_BYTES)
    encryptor = Cipher(algorithms.AES(long_key), modes.CBC(bytes(HASH_BYTES))).encryptor()
    return (encryptor.update(_length_block(len(data)) + padded) + encryptor.finalize())[-HASH_BYTES:]


def suppression_hash(key: bytes, value: Any) -> bytes | None:
    """The keyed hash of one value (None when it has no canonical text)."""
    text = canonical_text(value)
    if text is None:
        return None
    aes_key, long_key = _keys(bytes(key))
    data = text.encode("utf-8")
    if len(data) <= SHORT_BYTES:
        return _encrypt_blocks(aes_key, _short_block(data))
    return _long_hash(long_key, data)


def suppression_hashes(key: bytes, values: Iterable[Any]) -> list[bytes | None]:
    """The keyed hash of each value, in order (None where a value has no canonical text); the short
    texts' blocks are encrypted together."""
    aes_key, long_key = _keys(bytes(key))
    out: list[bytes | None] = []
    short: list[int] = []
    blocks = bytearray()
    for value in values:
        text = canonical_text(value)
        if text is None:
            out.append(None)
            continue
        data = text.encode("utf-8")
        if len(data) <= SHORT_BYTES:
            short.append(len(out))
            blocks += _short_block(data)
            out.append(None)
        else:
            out.append(_long_hash(long_key, data))
    if short:
        encrypted = _encrypt_blocks(aes_key, bytes(blocks))
        for n, at in enumerate(short):
            out[at] = encrypted[n * HASH_BYTES:(n + 1) * HASH_BYTES]
    return out


def hash_array(key: bytes, array: pa.Array | pa.ChunkedArray, *,
               integers_as_numbers: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The keyed hash of every element of an Arrow column, computed a column at a time.

    Strings (``string``, ``large_string``, ``string_view``) are hashed from their UTF-8 bytes,
    integers from their decimal digits (written from the numbers by NumPy, no text column made), a
    dictionary column through its dictionary; integral floats and decimals go through
    :func:`canonical_text` one value at a time (rare in an identifier column). A long column is
    hashed a slice at a time. The bytes are exactly :func:`suppression_hash`'s.

    Args:
        key: the 32-byte suppression key.
        array: a column, in one piece or in chunks, sliced or not.
        integers_as_numbers: hash an integer column's values by their number form
            (:func:`number_hash`) instead of their text; a ``uint64`` above the 64-bit signed
            range, which has no number form, still by its text.

    Returns:
        ``(hashes, valid)``: a NumPy array of ``len(array)`` 16-byte hashes (dtype ``V16``; zeros
        where not valid) and a boolean array, False for nulls and for values with no canonical text
        (the empty string, booleans, dates, binary, nested values, non-integral numbers).
    """
    aes_key, long_key = _keys(bytes(key))
    number_key = _number_key(bytes(key)) if integers_as_numbers else None
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    if len(chunks) == 1 and (len(chunks[0]) <= _SLICE_ROWS or pa.types.is_dictionary(chunks[0].type)):
        return _hash_one(aes_key, long_key, number_key, chunks[0])
    hashes, valid = np.empty(len(array), HASH_DTYPE), np.empty(len(array), bool)
    at = 0
    for chunk in chunks:
        # A long column a slice at a time: each step's temporaries stay small enough to be reused
        # from the allocator's free memory and the cache, where whole-column temporaries (a few MB
        # each) are fresh pages every time (measured: 2-3x the time). A dictionary column is
        # hashed through its dictionary once.
        step = len(chunk) if pa.types.is_dictionary(chunk.type) else _SLICE_ROWS
        for start in range(0, len(chunk), max(step, 1)):
            part = chunk.slice(start, step)
            hashes[at:at + len(part)], valid[at:at + len(part)] = _hash_one(aes_key, long_key, number_key, part)
            at += len(part)
    return hashes, valid


def _hash_one(aes_key: bytes, long_key: bytes, number_key: bytes | None,
              array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    kind = array.type
    if pa.types.is_dictionary(kind):
        hashes, valid = _hash_one(aes_key, long_key, number_key, array.dictionary)
        indices = array.indices
        at = indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.intp, copy=False)
        if len(hashes) == 0:  # every index null
            return np.zeros(len(array), HASH_DTYPE), np.zeros(len(array), bool)
        present = valid[at]
        if indices.null_count:
            present &= indices.is_valid().to_numpy(zero_copy_only=False)
        taken = hashes[at]
        taken[~present] = np.zeros(1, HASH_DTYPE)  # zeros where not valid, as elsewhere
        return taken, present
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return _hash_strings(aes_key, long_key, array)
    if pa.types.is_integer(kind):
        if number_key is not None:
            return _hash_numbers(aes_key, long_key, number_key, array)
        return _hash_integers(aes_key, long_key, array)
    if hasattr(pa.types, "is_string_view") and pa.types.is_string_view(kind):
        return _hash_strings(aes_key, long_key, pc.cast(array, pa.large_string()))
    if pa.types.is_floating(kind) or pa.types.is_decimal(kind):
        if pa.types.is_float16(kind):
            array = array.cast(pa.float64())  # half floats convert to numpy scalars, not Python floats
        texts = pa.array([canonical_text(value) for value in array.to_pylist()], pa.large_string())
        return _hash_strings(aes_key, long_key, texts)
    return np.zeros(len(array), HASH_DTYPE), np.zeros(len(array), bool)


def _integer_values(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A non-empty integer array's values as a NumPy view of its buffer (at its offset; garbage
    under nulls) and whether each is valid."""
    kind, n = array.type, len(array)
    numbers = np.frombuffer(array.buffers()[1], dtype=kind.to_pandas_dtype(), count=n,
                            offset=array.offset * kind.bit_width // 8)
    valid = array.is_valid().to_numpy(zero_copy_only=False) if array.null_count else np.ones(n, bool)
    return numbers, valid


def _hash_numbers(aes_key: bytes, long_key: bytes, number_key: bytes,
                  array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Every element of an integer array (any width, signed or not, any offset) by its number form
    (:func:`number_hash`): its value as 8 little-endian bytes and the tag, one AES call; a ``uint64``
    above the 64-bit signed range (no number form) by its text."""
    n = len(array)
    if n == 0:
        return np.zeros(0, HASH_DTYPE), np.zeros(0, bool)
    kind = array.type
    numbers, valid = _integer_values(array)
    blocks = np.empty((n, 2), "<u8")
    blocks[:, 0] = numbers.astype(np.int64, copy=False).view(np.uint64)  # two's complement, sign-extended
    blocks[:, 1] = _NUMBER_TAG_WORD
    hashes = _encrypt_array(number_key, blocks.view(np.uint8).reshape(n, HASH_BYTES))
    if array.null_count:
        hashes[~valid] = np.zeros(1, HASH_DTYPE)  # zeros where not valid, as elsewhere
    if kind.bit_width == 64 and pa.types.is_unsigned_integer(kind):
        beyond = np.flatnonzero((numbers > np.uint64(_INT64_MAX)) & valid)
        if len(beyond):
            hashes[beyond] = _hash_integers(aes_key, long_key, array.take(pa.array(beyond)))[0]
    return hashes, valid


def _hash_integers(aes_key: bytes, long_key: bytes, array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Every element of an integer array (any width, signed or not, any offset), from its values:
    the short ones' blocks written from their digits (:func:`_decimal_blocks`) without a text
    column; the few whose text is longer than 15 bytes through Arrow's cast to text."""
    n = len(array)
    if n == 0:
        return np.zeros(0, HASH_DTYPE), np.zeros(0, bool)
    kind = array.type
    numbers, valid = _integer_values(array)
    if kind.bit_width == 64 and pa.types.is_unsigned_integer(kind):
        short = numbers < np.uint64(_SHORT_BELOW)
        values = np.where(short, numbers, 0).astype(np.int64)
    else:
        values = numbers.astype(np.int64, copy=False)
        short = (values > _SHORT_ABOVE) & (values < _SHORT_BELOW) if kind.bit_width > 32 else None
    if short is None or short.all():
        hashes = _encrypt_array(aes_key, _decimal_blocks(values))
        if array.null_count:
            hashes[~valid] = np.zeros(1, HASH_DTYPE)  # zeros where not valid, as elsewhere
        return hashes, valid
    hashes = np.zeros(n, HASH_DTYPE)  # zeros where not valid
    rows = np.flatnonzero(short & valid)
    if len(rows):
        hashes[rows] = _encrypt_array(aes_key, _decimal_blocks(values[rows]))
    long_rows = np.flatnonzero(~short & valid)
    if len(long_rows):
        texts = pc.cast(array.take(pa.array(long_rows)), pa.large_string())
        hashes[long_rows] = _hash_strings(aes_key, long_key, texts)[0]
    return hashes, valid


def _decimal_blocks(values: np.ndarray) -> np.ndarray:
    """The one-block encoding of each integer's decimal text (int64, at least one, each
    -10^14 < v < 10^15), as an ``(n, 16)`` uint8 matrix: exactly the block of ``str(v)``
    (:func:`_short_block`).

    Each value's 16-digit zero-padded text is written as two little-endian words, four digits a
    table lookup; the text proper is the 16 bytes from its first significant digit (a "-" in the
    byte before it for a negative value), masked to its length, the length put last."""
    count = len(values)
    negative = values < 0
    magnitude = np.abs(values)
    smallest, largest = int(magnitude.min()), int(magnitude.max())
    words = np.empty(2 * count + 2, np.uint64)  # each value's two words, then a spare block to read into
    words[2 * count:] = 0
    padded = words[:2 * count].reshape(count, 2)
    if largest < 10**8:  # ids of up to 8 digits: the first word is all zeros
        padded[:, 0] = _ASCII_ZEROS
        padded[:, 1] = _eight_digits(magnitude)
    else:
        high, low = np.divmod(magnitude, 10**8)
        padded[:, 0] = _eight_digits(high)
        padded[:, 1] = _eight_digits(low)
    data = words.view(np.uint8)
    if not negative.any() and len(str(smallest)) == len(str(largest)):
        # One number of digits (a day of user ids): every text starts at one place in its 16 bytes.
        size = len(str(largest))
        blocks = np.ndarray((count,), dtype=HASH_DTYPE, buffer=data, offset=HASH_BYTES - size, strides=(HASH_BYTES,))
        return _masked_blocks(blocks.copy(), size)
    digits = np.searchsorted(_POWERS_OF_TEN, magnitude, side="right") + 1
    size = digits + negative
    starts = np.arange(HASH_BYTES, HASH_BYTES * (count + 1), HASH_BYTES) - size  # each text ends its 16 bytes
    matrix = _masked_blocks(_blocks_at(data, starts), size)
    matrix[negative, 0] = ord("-")
    return matrix


def _eight_digits(values: np.ndarray) -> np.ndarray:
    """The eight ASCII digits of each value (0 <= v < 10^8, zero-padded) as a little-endian word."""
    high, low = np.divmod(values, 10**4)
    return _DIGITS4[high] | (_DIGITS4[low] << np.uint64(32))


def _blocks_at(data: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The 16 bytes of ``data`` (uint8) from each of ``starts``, as a fresh ``V16`` array: one
    gather from a view of a block at every byte (each start at most ``len(data) - 16``)."""
    windows = np.ndarray((len(data) - HASH_BYTES + 1,), dtype=HASH_DTYPE, buffer=data, strides=(1,))
    return windows[starts]


@lru_cache(maxsize=1)
def _block_masks() -> np.ndarray:
    """``_block_masks()[k]``: a 16-byte block whose first ``k`` bytes are all ones (k = 0..15), as ``V16``."""
    masks = np.zeros((HASH_BYTES, HASH_BYTES), np.uint8)
    for k in range(HASH_BYTES):
        masks[k, :k] = 0xFF
    return masks.view(HASH_DTYPE).reshape(HASH_BYTES)


def _masked_blocks(blocks: np.ndarray, size: np.ndarray | int) -> np.ndarray:
    """``blocks`` (a fresh ``V16`` array, each starting with a text of ``size`` bytes, 1 to 15: one
    size for all or one each) with the bytes past each text zeroed and its length put last, as an
    ``(n, 16)`` uint8 matrix."""
    halves = blocks.view("<u8").reshape(-1, 2)
    halves &= _block_masks()[np.atleast_1d(size)].view("<u8").reshape(-1, 2)
    matrix = blocks.view(np.uint8).reshape(-1, HASH_BYTES)
    matrix[:, SHORT_BYTES] = size
    return matrix


def _short_blocks(raw: np.ndarray, starts: np.ndarray, size: np.ndarray, first: int, last: int) -> np.ndarray:
    """The one-block encoding of texts of 1 to 15 bytes (each at ``starts`` in ``raw``, ``size``
    bytes long, all within ``raw[first:last]``), as an ``(n, 16)`` uint8 matrix: the text's bytes,
    zeros to 15, its length."""
    count = len(size)
    width = int(size[0])
    # The bytes of the used range, then 16 zero bytes: 16 bytes can be read from any start.
    data = np.zeros(last - first + HASH_BYTES, np.uint8)
    data[:last - first] = raw[first:last]
    if width * count == last - first and np.all(size == width):
        # Every text the same length and nothing else in the data (ids of one number of digits,
        # phone numbers, PANs): text k starts at k * width, the 16 bytes from each start a strided
        # view of the data (no gather).
        return _masked_blocks(np.ndarray((count,), dtype=HASH_DTYPE, buffer=data, strides=(width,)).copy(), width)
    return _masked_blocks(_blocks_at(data, starts - first), size)


def _encrypt_array(aes_key: bytes, blocks: np.ndarray) -> np.ndarray:
    """AES-256 of each row of an ``(n, 16)`` uint8 matrix (ECB: every block alone), in one call
    straight into a NumPy buffer; the hashes as ``V16``."""
    out = np.empty(blocks.size + HASH_BYTES, dtype=np.uint8)  # update_into wants a block to spare
    written = _encryptor(aes_key).update_into(np.ascontiguousarray(blocks), out)
    return out[:written].view(HASH_DTYPE)


def _hash_strings(aes_key: bytes, long_key: bytes, array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Every element of a ``string`` or ``large_string`` array (any offset), from its buffers."""
    n = len(array)
    if n == 0:
        return np.zeros(0, HASH_DTYPE), np.zeros(0, bool)
    _, offsets_buffer, data_buffer = array.buffers()
    width = np.int64 if pa.types.is_large_string(array.type) else np.int32
    offsets = np.frombuffer(offsets_buffer, dtype=width, count=n + 1, offset=array.offset * np.dtype(width).itemsize)
    offsets = offsets.astype(np.int64)
    lengths = offsets[1:] - offsets[:-1]
    valid = lengths > 0  # the empty string has no canonical text
    if array.null_count:
        valid &= array.is_valid().to_numpy(zero_copy_only=False)
    first, last = int(offsets[0]), int(offsets[-1])
    raw = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None and last > first else np.zeros(0, np.uint8)

    short = valid & (lengths <= SHORT_BYTES)
    if short.all():  # every value short (the usual identifier column): no copy into place
        return _encrypt_array(aes_key, _short_blocks(raw, offsets[:-1], lengths, first, last)), valid
    hashes = np.zeros(n, HASH_DTYPE)  # zeros where not valid
    rows = np.flatnonzero(short)
    if len(rows):
        blocks = _short_blocks(raw, offsets[:-1][rows], lengths[rows], first, last)
        hashes[rows] = _encrypt_array(aes_key, blocks)

    long_rows = np.flatnonzero(valid & (lengths > SHORT_BYTES))
    if len(long_rows):
        hashes[long_rows] = _long_hashes(long_key, raw, offsets[:-1][long_rows], lengths[long_rows], first, last)
    return hashes, valid


def _long_hashes(long_key: bytes, raw: np.ndarray, starts: np.ndarray, size: np.ndarray, first: int,
                 last: int) -> np.ndarray:
    """The CBC-MAC of texts of more than 15 bytes (each at ``starts`` in ``raw``, ``size`` bytes
    long, within ``raw[first:last]``), a column at a time: grouped by their number of blocks, each
    group's chain advanced one block position at a time for every text at once (one AES-ECB call
    per position)."""
    hashes = np.zeros(len(size), HASH_DTYPE)
    blocks_of = (size + HASH_BYTES - 1) // HASH_BYTES
    widest = int(blocks_of.max()) * HASH_BYTES
    data = np.zeros(last - first + widest, np.uint8)  # the used range, then zeros: any window stays inside
    data[:last - first] = raw[first:last]
    counts = np.bincount(blocks_of)
    for count in np.flatnonzero(counts).tolist():
        rows = np.flatnonzero(blocks_of == count)
        width = count * HASH_BYTES
        # Each text's ``width`` bytes from its start, one row each (a window view of the data,
        # rows taken by one gather), then the bytes past its end zeroed: they can only be in the
        # last block, masked as two 64-bit words as the short blocks are.
        padded = np.lib.stride_tricks.sliding_window_view(data, width)[starts[rows] - first]
        left = (size[rows] - (count - 1) * HASH_BYTES).astype(np.int64)  # 1..16 bytes in the last block
        tail = padded[:, width - HASH_BYTES:].view("<u8")  # (n, 2): its bytes 0-7, 8-15
        tail[:, 0] &= _MASKS[np.minimum(left, 8)]
        tail[:, 1] &= _MASKS[np.clip(left - 8, 0, 8)]
        state = np.empty((len(rows), HASH_BYTES), np.uint8)
        state[:, :8] = size[rows].astype(">u8").view(np.uint8).reshape(len(rows), 8)
        state[:, 8:] = np.frombuffer(LONG_TAG, np.uint8)
        state = _encrypt_array(long_key, state).view(np.uint8).reshape(len(rows), HASH_BYTES)
        for position in range(count):
            chained = state ^ padded[:, position * HASH_BYTES:(position + 1) * HASH_BYTES]
            state = _encrypt_array(long_key, chained).view(np.uint8).reshape(len(rows), HASH_BYTES)
        hashes[rows] = state.view(HASH_DTYPE).reshape(len(rows))
    return hashes
