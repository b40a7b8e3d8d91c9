"""The suppression list a pipeline job guards its writes with (issue 52): the keyed hashes of the
erased identifiers, the key they are hashed under, and the small file both travel in.

The file holds the suppression key. Protect it like the vault's key file: with it, whoever holds
the file can answer "was this value erased?" for a value they guess, and nothing more (a value is
never in it, in clear or under an unkeyed hash, and no hash can be turned back into its value
without guessing). Without the key the hashes say nothing.

File layout (version 2), every integer big-endian::

    b"PIITRACER-SUPPRESS\\n"   magic (19 bytes)
    0x02                      version (1 byte)
    flags                     1 byte: bit 0 set when the list holds every whole number's number form
    key                       the suppression key (32 bytes)
    count                     how many hashes follow (8 bytes)
    hashes                    count x 16 bytes, sorted and distinct

Version 1 (written before number forms were kept) has no flags byte and is read as flags 0.
"""

from __future__ import annotations

import hmac
import os
import struct
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from piitracer.guard.hashing import HASH_BYTES, HASH_DTYPE, KEY_BYTES, hash_array, suppression_hash
from piitracer.storage.key_files import replace_private_file

MAGIC = b"PIITRACER-SUPPRESS\n"
VERSION = 2
_NUMBERS = 0x01  # the flags byte's bit: every whole number's number form is on the list
_COUNT = struct.Struct(">Q")
_MAX_BITMAP_BITS = 30  # the membership bitmap's largest size: 2^30 bits, 128 MB (for 33M hashes and more)
_MAX_BUCKET_BITS = 28  # the most buckets: 2^28 (past 268M hashes a bucket holds more than one)
# numpy's raw-bytes type of one hash: compared and sorted bytewise, like the file's order.
_HASH = HASH_DTYPE


class SuppressionList:
    """The keyed hashes of erased identifiers, and the key to hash a job's values under.

    Membership of a whole column is computed at once (NumPy, no Python loop per value): the values'
    keyed hashes (:func:`~piitracer.guard.hashing.hash_array`), then a search in the sorted hashes.
    The hashes are uniformly random (a keyed PRF's output), so the search needs no comparisons
    down a tree: a bitmap of ~32 bits per hash, set at the top bits of each hash, rules out ~31
    probes in 32 that are not on the list with one lookup each; the rest go straight to their bucket
    of the sorted hashes (a table of where each value of the top ~log2(n) bits starts: about one
    hash a bucket) and are compared on all 16 bytes with the few hashes there. For 1,000,000
    hashes: 16 MB of hashes, 4 MB of bitmap, 4 MB of bucket starts. No set is rebuilt per call.
    Pickles as the key, the hashes and whether number forms are on it (Spark ships it to
    executors); the rest is rebuilt on arrival.
    """

    __slots__ = ("_key", "_hashes", "_numbers", "_bits", "_bit_shift", "_starts", "_bucket_shift")

    def __init__(self, key: bytes, hashes: Iterable[bytes], *, numbers: bool = False) -> None:
        """A list of ``hashes`` (16 bytes each, any order, repeats allowed) made under ``key`` (32 bytes).

        ``numbers``: ``hashes`` hold the number form (:func:`~piitracer.guard.hashing.number_hash`)
        of every kept value that is a whole number, beside its text's hash (the records of a store
        that kept them all): integer columns are then hashed by number, no decimal text written.
        False (a list of texts' hashes alone) hashes them by text; both match the same values.

        Raises:
            ValueError: the key is not 32 bytes or a hash is not 16 bytes.
        """
        key = bytes(key)
        if len(key) != KEY_BYTES:
            raise ValueError(f"a suppression key is {KEY_BYTES} bytes, not {len(key)}")
        items = hashes if isinstance(hashes, list) else list(hashes)
        if set(map(len, items)) - {HASH_BYTES}:
            items = [bytes(item) for item in items]  # e.g. NumPy's void scalars, whose len() is not their size
        wrong = sorted(set(map(len, items)) - {HASH_BYTES})
        if wrong:
            raise ValueError(f"a suppression hash is {HASH_BYTES} bytes, not {wrong[0]}")
        self._key = key
        self._numbers = bool(numbers)
        self._set_hashes(_sorted_distinct(np.frombuffer(b"".join(items), dtype=_HASH)))

    @property
    def key(self) -> bytes:
        """The 32-byte suppression key the hashes are made under."""
        return self._key

    @property
    def numbers(self) -> bool:
        """Whether every whole number's number form is on the list (integer columns hashed by number)."""
        return self._numbers

    def __len__(self) -> int:
        return len(self._hashes)

    def __contains__(self, value: Any) -> bool:
        """Whether ``value``'s keyed hash is on the list (False for a value without canonical text)."""
        digest = suppression_hash(self._key, value)
        return digest is not None and bool(self._found(np.frombuffer(digest, dtype=_HASH))[0])

    def __repr__(self) -> str:
        # Never the key: a repr ends up in logs and tracebacks.
        return f"SuppressionList({len(self)} hashes)"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SuppressionList):
            return NotImplemented
        return (hmac.compare_digest(self._key, other._key) and self._numbers == other._numbers
                and np.array_equal(self._hashes, other._hashes))

    __hash__ = None  # type: ignore[assignment]  # equal by content, and mutable-looking: no set member

    def __getstate__(self) -> tuple[bytes, bytes, bool]:
        return self._key, self._hashes.tobytes(), self._numbers

    def __setstate__(self, state: tuple[bytes, bytes, bool]) -> None:
        self._key, self._numbers = state[0], state[2]
        self._set_hashes(np.frombuffer(state[1], dtype=_HASH).copy())  # already sorted and distinct

    def _set_hashes(self, hashes: np.ndarray) -> None:
        """Keep ``hashes`` (sorted and distinct), their bitmap and their bucket starts."""
        self._hashes = hashes
        size = len(hashes)
        top = _top_bits(hashes)  # the first 4 bytes of each hash as a number: sorted as the hashes are
        # The bitmap: 2^b bits for ~32 per hash, bit i set when a hash's top b bits are i.
        b = int(min(_MAX_BITMAP_BITS, max(10, np.ceil(np.log2(max(size, 1) * 32)))))
        self._bit_shift = np.uint32(32 - b)
        slots = top >> self._bit_shift
        self._bits = np.zeros(1 << (b - 3), dtype=np.uint8)
        np.bitwise_or.at(self._bits, slots >> np.uint32(3), np.left_shift(1, slots & np.uint32(7)).astype(np.uint8))
        # The buckets: 2^k of them for ~1 hash each; bucket j's hashes are _hashes[starts[j]:starts[j + 1]].
        k = int(min(_MAX_BUCKET_BITS, max(1, np.ceil(np.log2(max(size, 2))))))
        self._bucket_shift = np.uint32(32 - k)
        self._starts = np.zeros((1 << k) + 1, dtype=np.uint32 if size < 2**32 else np.int64)
        np.cumsum(np.bincount(top >> self._bucket_shift, minlength=1 << k), out=self._starts[1:])

    def matches(self, array: pa.Array | pa.ChunkedArray, *, distinct: bool = True) -> pa.BooleanArray:
        """True where a value's keyed hash is on the list, one flag per element.

        Each distinct value is hashed once: the column is dictionary-encoded (a dictionary column is
        checked through its own dictionary) and the flags of the distinct values are taken back
        through the indices. Nulls, and values with no canonical text (booleans, dates, binary,
        nested values, non-integral numbers), are False.

        Args:
            array: a column, in one piece or in chunks.
            distinct: False to hash every element as it comes, without dictionary-encoding the
                column first (a dictionary column is still checked through its dictionary; a text
                over 15 bytes is still hashed once per distinct value). Faster for a column whose
                values are mostly distinct (a day of user ids): dictionary-encoding costs a hash
                table insert per value, more than the keyed hash of a short value. The flags are
                the same either way.

        Returns:
            A boolean array as long as ``array``, with no nulls.
        """
        if not _may_hold_an_identifier(array.type) or len(self) == 0:
            return pa.array(np.zeros(len(array), dtype=bool))
        if not distinct and not pa.types.is_dictionary(array.type):
            hashes, valid = hash_array(self._key, array, integers_as_numbers=self._numbers)
            return pa.array(self._found(hashes) & valid)
        encoded = array if pa.types.is_dictionary(array.type) else pc.dictionary_encode(array)
        if isinstance(encoded, pa.ChunkedArray):
            if encoded.num_chunks == 0:
                return pa.array([], pa.bool_())
            # dictionary_encode gives every chunk the one dictionary of the whole column; chunks
            # read as a dictionary column (a Parquet row group each) may each have their own.
            first = encoded.chunk(0).dictionary
            if not all(chunk.dictionary.equals(first) for chunk in encoded.chunks[1:]):
                encoded = encoded.unify_dictionaries()
                first = encoded.chunk(0).dictionary
            dictionary = first
            indices = pa.chunked_array([chunk.indices for chunk in encoded.chunks], encoded.type.index_type)
        else:
            dictionary, indices = encoded.dictionary, encoded.indices
        flags = pc.fill_null(pc.take(self._flags(dictionary), indices), False)  # a null index: a null value
        return flags.combine_chunks() if isinstance(flags, pa.ChunkedArray) else flags

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the list to ``path`` (mode 0600), atomically: a reader sees the old file or the new one.

        Returns:
            The path written.
        """
        flags = _NUMBERS if self._numbers else 0
        data = b"".join((MAGIC, bytes([VERSION, flags]), self._key, _COUNT.pack(len(self)), self._hashes.tobytes()))
        return replace_private_file(path, data)

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> SuppressionList:
        """The list written to ``path`` by :meth:`write`.

        Raises:
            ValueError: the file is not a suppression list of version 1 or 2, or is cut short or extended.
        """
        data = Path(path).read_bytes()
        expected = f"a piitracer suppression list (starting {MAGIC!r}, version 1 or {VERSION})"
        version = data[len(MAGIC)] if data.startswith(MAGIC) and len(data) > len(MAGIC) else None
        if version is None:
            raise ValueError(f"{path} is not {expected}")
        if version not in (1, VERSION):
            raise ValueError(f"{path} is a suppression list of version {version}; expected {expected}")
        start = len(MAGIC) + (1 if version == 1 else 2)  # version 2: a flags byte after the version
        header = start + KEY_BYTES + _COUNT.size
        if len(data) < header:
            raise ValueError(f"{path} is not {expected}")
        flags = data[len(MAGIC) + 1] if version == VERSION else 0
        if flags & ~_NUMBERS:
            raise ValueError(f"{path} is damaged: its flags byte is {flags:#04x}; expected {expected} (flags 0 or 1)")
        key = data[start:start + KEY_BYTES]
        (count,) = _COUNT.unpack_from(data, start + KEY_BYTES)
        body = data[header:]
        if len(body) != count * HASH_BYTES:
            raise ValueError(f"{path} is damaged: its header counts {count} hashes ({count * HASH_BYTES} bytes), "
                             f"{len(body)} bytes follow; expected {expected}")
        hashes = np.frombuffer(body, dtype=_HASH)
        if count > 1 and not _is_sorted_distinct(hashes):
            raise ValueError(f"{path} is damaged: its hashes are not sorted and distinct; expected {expected}")
        suppression = cls.__new__(cls)
        suppression.__setstate__((key, body, bool(flags & _NUMBERS)))
        return suppression

    def _found(self, probe: np.ndarray) -> np.ndarray:
        """For each 16-byte hash of ``probe`` (dtype ``V16``): is it on the list. The bitmap first;
        each probe it does not rule out compared with the hashes of its bucket, all probes at once
        (one round per hash a bucket holds: a handful)."""
        probe = np.ascontiguousarray(probe, dtype=_HASH)
        found = np.zeros(len(probe), dtype=bool)
        if len(self._hashes) == 0 or len(probe) == 0:
            return found
        top = _top_bits(probe)
        slots = top >> self._bit_shift
        marked = (self._bits[slots >> np.uint32(3)] >> (slots & np.uint32(7)).astype(np.uint8)) & np.uint8(1)
        rows = np.flatnonzero(marked)
        if len(rows) == 0:
            return found
        bucket = top[rows] >> self._bucket_shift
        at = self._starts[bucket].astype(np.intp)
        end = self._starts[bucket + np.uint32(1)].astype(np.intp)
        listed = self._hashes.view("<u8").reshape(-1, 2)  # each hash as two 64-bit words (equality only)
        wanted = probe.view("<u8").reshape(-1, 2)[rows]
        hit = np.zeros(len(rows), dtype=bool)
        live = np.flatnonzero(at < end)
        while len(live):
            here = at[live]
            same = (listed[here, 0] == wanted[live, 0]) & (listed[here, 1] == wanted[live, 1])
            hit[live[same]] = True
            at[live] += 1
            live = live[~same & (at[live] < end[live])]
        found[rows] = hit
        return found

    def _flags(self, values: pa.Array) -> pa.BooleanArray:
        """One flag per value of ``values`` (each hashed once, the whole array at once)."""
        if not _may_hold_an_identifier(values.type) or len(values) == 0:
            return pa.array(np.zeros(len(values), dtype=bool))
        hashes, valid = hash_array(self._key, values, integers_as_numbers=self._numbers)
        return pa.array(self._found(hashes) & valid)


def _top_bits(hashes: np.ndarray) -> np.ndarray:
    """The first 4 bytes of each hash as a native 32-bit integer (big-endian: in the hashes' order)."""
    return np.ascontiguousarray(hashes).view(">u4")[0::4].astype(np.uint32)


def _words(hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first and last 8 bytes of each hash as native 64-bit integers, in the hashes' bytewise order."""
    big = np.ascontiguousarray(hashes).view(">u8")
    return big[0::2].astype(np.uint64), big[1::2].astype(np.uint64)


def _is_sorted_distinct(hashes: np.ndarray) -> bool:
    """Whether ``hashes`` are in strictly increasing bytewise order."""
    if len(hashes) < 2:
        return True
    first, second = _words(hashes)
    return bool(np.all((first[1:] > first[:-1]) | ((first[1:] == first[:-1]) & (second[1:] > second[:-1]))))


def _sorted_distinct(hashes: np.ndarray) -> np.ndarray:
    """``hashes`` sorted bytewise without repeats (as they are when they come from the records:
    then ``hashes`` itself)."""
    if _is_sorted_distinct(hashes):
        return hashes
    first = _words(hashes)[0]
    order = np.argsort(first)
    ordered = hashes[order]
    if not np.any(first[order][1:] == first[order][:-1]):
        return ordered  # no two hashes share their first 8 bytes: sorted and distinct already
    return np.unique(hashes)  # repeats (or a shared prefix): the exact, slower sort


def _may_hold_an_identifier(kind: pa.DataType) -> bool:
    """Whether values of this type can have a canonical text (a dictionary: its values' type)."""
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind)
            or pa.types.is_string(kind) or pa.types.is_large_string(kind)
            or (hasattr(pa.types, "is_string_view") and pa.types.is_string_view(kind)))
