"""Prove a Parquet column chunk holds no searched value without decoding its rows (design.md,
"Proof at scale"). Every rule is exact: it proves a chunk only from what the file itself holds,
and anything it cannot read, or does not understand, leaves the chunk to be decoded.

A chunk (one flat column of one row group) is proven, in this order, by:

- ``type``: no searched value has the column's type (a double when only integers and strings are
  searched), and no value can sit inside it as text;
- ``statistics``: an integer or date chunk whose footer min/max exclude every searched value; a
  string or binary chunk likewise when its bounds are flagged exact in the footer (read from the
  Thrift: pyarrow 26 does not expose the flags) and no value is searched inside its text (a value
  may sit inside a longer text anywhere between the bounds);
- ``page_index``: an integer or date chunk whose every page's column-index min/max exclude every
  searched value (or is all nulls);
- ``bloom``: a chunk whose split-block Bloom filter misses every searched value, hashed (xxHash64,
  seed 0) in the column's physical encoding. Whole values only: a string column that a value could
  sit inside as text is never proven by its filter. An identifier column (:mod:`~piitracer.verify.scope`)
  is searched for the whole values of its own value sets only, so its filter is probed with those;
- ``dictionary``: a chunk whose every data page is dictionary-encoded — read from the page headers
  themselves, not guessed from the footer's ``encodings`` — and whose dictionary holds no searched
  value, whole or inside text (what :func:`~piitracer.verify.columns.column_hits` finds). The
  dictionary page is decompressed once and settled from its PLAIN bytes when they suffice: no
  literal of a searched string in them (:class:`LiteralFinder`; for whole values only, a string
  or binary value as the page stores it, its 4-byte length then its bytes), or an integer or date
  page read as one NumPy array and looked up in the sorted searched values of its type. Else it
  is decoded by pyarrow from a one-page file built around those bytes and searched: whole values
  by one ``is_in`` of the column's typed candidates, values inside text by the token rule on the
  entries holding a literal only. The rows' indices are never read;
- ``pages``: a string chunk that is plain-encoded, or whose dictionary fell back to plain pages,
  whose every data page is PLAIN or dictionary-encoded and whose dictionary page and PLAIN pages,
  decompressed, hold no literal of a searched value (a PLAIN page stores each string's bytes
  whole, so a value equal to or holding a searched string holds its literal). Nothing is decoded
  to Arrow: the pages are decompressed and searched as bytes.

Everything else is decoded (``decoded``), with why. Nested columns are always decoded.
"""

from __future__ import annotations

import struct
from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from piitracer.verify.columns import candidates_for, column_hits, plain_type
from piitracer.verify.literals import LiteralFinder, holds_literal, literal_prefilter, may_hold, prefilter_finder
from piitracer.verify.parquet_bloom import bloom_may_hold, xxhash64_of
from piitracer.verify.parquet_pages import (DATA_PAGE, DATA_PAGE_V2, DECOMPRESS, DICTIONARY_PAGE, PLAIN,
                                            PLAIN_DICTIONARY, RLE_DICTIONARY, CountingFile, PageHeader,
                                            BytesAt, chunk_start, decode_dictionary, decompress_page,
                                            parse_footer, read_page_headers)
from piitracer.verify.parquet_thrift import ThriftError, read_struct
from piitracer.verify.values import ValueIndex

METHODS = ("type", "statistics", "page_index", "bloom", "dictionary", "pages", "decoded")
PROVING_METHODS = METHODS[:-1]


FALLBACK = "plain-encoded data pages (dictionary fallback)"
HOLDS = "its dictionary holds a searched value"


@dataclass(frozen=True)
class ChunkProof:
    """How one chunk was settled: a method of :data:`METHODS`; for ``decoded``, why (no value)."""

    method: str
    why: str = ""


class ParquetProver:
    """The rules above for the chunks of one open Parquet file."""

    def __init__(self, handle: CountingFile, metadata: pq.FileMetaData, schema: pa.Schema, index: ValueIndex,
                 footer: bytes, columns: dict[str, ValueIndex] | None = None) -> None:
        self.handle = handle
        self.footer_bytes = footer
        self.metadata = metadata
        self.schema = schema
        self.index = index
        # Identifier columns (verify.scope): searched with their own whole-values index.
        self.indexes = dict(columns or {})
        self.leaves = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
        self._columns: dict[tuple[str, int | None], _Column | None] = {}
        self._footer: dict[int, Any] | None = None
        # A chunk's dictionary, decoded once per file whatever index it is proven with.
        self._dictionaries: dict[int, Any] = {}

    def column(self, name: str, index: ValueIndex | None = None) -> "_Column | None":
        """What the rules need of column ``name`` searched with ``index`` (default: its own)."""
        key = (name, None if index is None else id(index))
        if key not in self._columns:
            self._columns[key] = self._column(name, index or self.indexes.get(name, self.index))
        return self._columns[key]

    def _column(self, name: str, index: ValueIndex) -> "_Column | None":
        # What a column of this type needs is the same in every file searched with this index:
        # computed once (the index lives for one dataset's scan, in a task or the driver).
        leaf = self.leaves.get(name)
        kind = self.schema.field(name).type
        if leaf is None or pa.types.is_nested(kind):
            return None
        descr = self.metadata.schema.column(leaf)
        cache = index.__dict__.setdefault("_chunk_proof_columns", {})
        key = (kind, descr.physical_type, descr.length)
        if key not in cache:
            cache[key] = _Column.of(index, name, leaf, kind, descr)
        found = cache[key]
        return _Column(name, leaf, *found.shared())

    def prove(self, group: int, name: str, index: ValueIndex | None = None) -> ChunkProof:
        """How chunk (row group ``group``, top-level column ``name``) is proven, or why it is decoded;
        ``index``: searched for this index's values instead of the column's own (a key column's
        whole values, :mod:`~piitracer.verify.key_rows`)."""
        index = index or self.indexes.get(name, self.index)
        column = self.column(name, index)
        if column is None:
            return ChunkProof("decoded", "nested column")
        if column.candidates is None and not column.inside_text:
            return ChunkProof("type")
        chunk = self.metadata.row_group(group).column(column.leaf)
        why = []
        if column.byte_values is not None and not column.inside_text:
            try:
                if self._excluded_by_exact_bounds(group, column, chunk):
                    return ChunkProof("statistics")
                why.append("min/max admit a searched value, or are not exact")
            except (ThriftError, ValueError, KeyError, IndexError, TypeError, AttributeError):
                why.append("statistics unreadable")
        if column.ordered:
            if _excluded_by_statistics(chunk, column.values):
                return ChunkProof("statistics")
            why.append("min/max admit a searched value")
            if chunk.has_column_index:
                try:
                    if self._excluded_by_page_index(group, column):
                        return ChunkProof("page_index")
                    why.append("pages' min/max admit a searched value")
                except (ThriftError, OSError, ValueError, struct.error, KeyError, IndexError, TypeError):
                    why.append("page index unreadable")
        if chunk.bloom_filter_offset is not None and column.hashes is not None and not column.inside_text:
            try:
                if not bloom_may_hold(self.handle, chunk, column.hashes):
                    return ChunkProof("bloom")
                why.append("Bloom filter admits a searched value")
            except (ThriftError, OSError, ValueError, struct.error):
                why.append("Bloom filter unreadable")
        elif column.hashes is not None:
            why.append("values may sit inside text" if column.inside_text else "no Bloom filter")
        elif column.inside_text:
            why.append("values may sit inside text")
        plain = False
        if column.dictionary_type is None:
            why.append("type not handled by the dictionary reader")
        elif not chunk.has_dictionary_page:
            why.append("plain-encoded: no dictionary page")
            plain = True
        else:
            try:
                found = self._dictionary_verdict(chunk, column, index)
            except (ThriftError, OSError, ValueError, struct.error, pa.ArrowException) as error:
                found = f"dictionary unreadable ({type(error).__name__})"
            if found is None:
                return ChunkProof("dictionary")
            why.append(found)
            plain = found == FALLBACK
        if plain and column.prefilter is not None and column.physical == "BYTE_ARRAY":
            try:
                found = self._pages_verdict(chunk, column.prefilter)
            except (ThriftError, OSError, ValueError, struct.error, pa.ArrowException) as error:
                found = f"pages unreadable ({type(error).__name__})"
            if found is None:
                return ChunkProof("pages")
            why.append(found)
        return ChunkProof("decoded", "; ".join(why))

    # ---- plain pages ----------------------------------------------------------------------------

    def _pages_verdict(self, chunk, prefilter: str) -> str | None:
        """None when every data page is PLAIN or dictionary-encoded, and neither the dictionary
        page nor any PLAIN data page holds, once decompressed, any literal of ``prefilter`` (a
        PLAIN string page stores each value's bytes whole after its length, so a value equal to or
        holding a searched string holds its literal; levels and length prefixes searched along
        only add false alarms); else why the chunk must be decoded."""
        start, size = chunk_start(chunk), chunk.total_compressed_size
        data = self.handle.read_at(size, start)
        if len(data) != size:
            return "chunk truncated"
        pages = read_page_headers(BytesAt(data, start), chunk)
        if pages is None or sum(p.num_values for p in pages if p.type != DICTIONARY_PAGE) != chunk.num_values:
            return "page headers do not add up to the chunk"
        if chunk.compression != "UNCOMPRESSED" and chunk.compression not in DECOMPRESS:
            return f"{chunk.compression} pages not read here"
        texts = []
        for page in pages:
            if page.type in (DATA_PAGE, DATA_PAGE_V2) and page.encoding in (PLAIN_DICTIONARY, RLE_DICTIONARY):
                continue  # indices into the dictionary page, which is searched
            if page.type == DICTIONARY_PAGE and page.encoding not in (PLAIN, PLAIN_DICTIONARY):
                return "dictionary page not PLAIN-encoded"
            if page.type not in (DICTIONARY_PAGE, DATA_PAGE, DATA_PAGE_V2) or (page.type != DICTIONARY_PAGE
                                                                              and page.encoding != PLAIN):
                return "data pages neither PLAIN nor dictionary-encoded"
            body = data[page.offset + page.header_size - start:page.offset + page.header_size - start + page.compressed_size]
            levels = page.levels_size if page.type == DATA_PAGE_V2 else 0
            values, expected = body[levels:], page.uncompressed_size - levels
            if chunk.compression != "UNCOMPRESSED" and (page.type != DATA_PAGE_V2 or page.values_compressed):
                values = pa.decompress(values, expected, codec=DECOMPRESS[chunk.compression]).to_pybytes()
            if len(values) != expected:
                return "page size does not match its header"
            texts.append(values)
        if texts and holds_literal(texts, prefilter):
            return "a page holds a searched value's text"
        return None

    # ---- dictionary -----------------------------------------------------------------------------

    def _dictionary_verdict(self, chunk, column: "_Column", index: ValueIndex) -> str | None:
        """None when every data page is dictionary-encoded and the dictionary holds no searched
        value of ``index``; else why the chunk must be decoded. The page is decompressed once and
        settled from its bytes when they suffice (no literal of a searched value in them; an
        integer or date page read as one NumPy array); else decoded to Arrow (from the bytes
        already decompressed) and searched as :func:`~piitracer.verify.columns.column_hits`
        searches a column."""
        start = chunk_start(chunk)
        if start not in self._dictionaries:
            self._dictionaries[start] = self._dictionary(chunk, column)
        found = self._dictionaries[start]
        if isinstance(found, str):
            return found
        raw = found.decompressed(chunk.compression)  # None: a codec read by pyarrow's reader only
        finder = None
        if raw is not None:
            if column.inside_text:
                # Values inside text: the literals of every searched string, over the page's bytes.
                finder = prefilter_finder(column.prefilter) if column.prefilter is not None else None
                if finder is not None and not may_hold(raw, finder):
                    return None
            elif column.ordered:
                held = _integers_held(raw, found.page, column)
                if held is not None:
                    return HOLDS if held else None
            else:
                # Whole values only (an identifier column, a key): a dictionary entry equal to a
                # searched string is stored as its 4-byte length and its bytes, so the page holds
                # that literal; its absence proves the chunk without decoding it.
                entries = column.entry_finder()
                if entries is not None and not entries.holds(raw):
                    return None
        if found.values is None:  # decoded on first need only (the bytes above often settle it)
            found.values = decode_dictionary(raw if raw is not None else found.body, chunk, found.page,
                                             self.metadata.schema.column(column.leaf), column.dictionary_type,
                                             "UNCOMPRESSED" if raw is not None else None)
            if found.values is None:
                self._dictionaries[start] = "dictionary page not decodable"
                return "dictionary page not decodable"
        if finder is not None:
            held = _strings_held(found.values, raw, finder, column, index)
            if held is not None:
                return HOLDS if held else None
        if any(True for _ in column_hits(column.name, found.values, index)):
            return HOLDS
        return None

    def _dictionary(self, chunk, column: "_Column") -> "_Dictionary | str":
        """The dictionary page (read, not yet decompressed nor decoded) of a chunk whose every data
        page is dictionary-encoded, or why it is not one."""
        pages = read_page_headers(self.handle, chunk, until_plain=True)
        if pages is None:
            return "page headers do not add up to the chunk"
        dictionary = [p for p in pages if p.type == DICTIONARY_PAGE]
        data = [p for p in pages if p.type != DICTIONARY_PAGE]
        if len(dictionary) != 1 or pages[0].type != DICTIONARY_PAGE:
            return "no single leading dictionary page"
        if any(p.type not in (DATA_PAGE, DATA_PAGE_V2) or p.encoding not in (PLAIN_DICTIONARY, RLE_DICTIONARY) for p in data):
            return FALLBACK
        # Only now is the list whole (read_page_headers stops early at a plain page alone).
        if sum(p.num_values for p in data) != chunk.num_values:
            return "page headers do not add up to the chunk"
        page = dictionary[0]
        if page.encoding not in (PLAIN, PLAIN_DICTIONARY):
            return "dictionary page not PLAIN-encoded"
        body = self.handle.read_at(page.compressed_size, page.offset + page.header_size)
        if len(body) != page.compressed_size:
            return "dictionary page truncated"
        return _Dictionary(body, page)

    # ---- exact string bounds --------------------------------------------------------------------

    def _excluded_by_exact_bounds(self, group: int, column: "_Column", chunk=None) -> bool:
        """A string or binary chunk whose footer min_value/max_value are flagged exact (pyarrow
        does not expose the flags: read from the footer's Statistics, fields 5-8) and exclude every
        searched value in Parquet's unsigned byte order."""
        stats = chunk.statistics if chunk is not None else None
        if stats is not None and stats.has_min_max:
            # The bounds pyarrow reads admit a value: so would the flagged ones (the same bytes or a
            # legacy pair), and the footer need not be parsed (in Python: ~ms per file) to say so.
            low, high = stats.min_raw, stats.max_raw
            if isinstance(low, bytes) and isinstance(high, bytes) and _any_between(column.byte_values, low, high):
                return False
        if self._footer is None:
            self._footer = parse_footer(self.footer_bytes)
        stats = self._footer[4][group][1][column.leaf][3].get(12)
        if not stats or stats.get(7) is not True or stats.get(8) is not True or 5 not in stats or 6 not in stats:
            return False
        low, high = stats[6], stats[5]
        return not _any_between(column.byte_values, low, high)

    # ---- page index -----------------------------------------------------------------------------

    def _excluded_by_page_index(self, group: int, column: "_Column") -> bool:
        if self._footer is None:
            self._footer = parse_footer(self.footer_bytes)
        meta = self._footer[4][group][1][column.leaf]
        offset, length = meta.get(6), meta.get(7)
        if offset is None or not length:
            return False
        index, _ = read_struct(self.handle.read_at(length, offset))
        nulls, mins, maxes = index[1], index[2], index[3]
        fmt = column.bound_format
        if fmt is None or not (len(nulls) == len(mins) == len(maxes)):
            return False
        width = struct.calcsize(fmt)
        pages = [(low, high) for null, low, high in zip(nulls, mins, maxes) if not null]
        if any(len(low) != width or len(high) != width for low, high in pages):
            return False
        if not pages:
            return True
        # Every page at once: the first searched value at or above each page's min, within its max?
        lows = np.frombuffer(b"".join(low for low, _ in pages), dtype=np.dtype(fmt))
        highs = np.frombuffer(b"".join(high for _, high in pages), dtype=np.dtype(fmt))
        return not _any_in_ranges(column.value_array, lows, highs)


@dataclass
class _Column:
    """What the rules need of one flat column, computed once per file."""

    name: str
    leaf: int
    physical: str
    candidates: pa.Array | None  # the searched values of the column's type (None: none)
    inside_text: bool  # a string column: a value may sit inside its text
    values: list[Any]  # candidates as the integers its Parquet bounds compare with (ordered types), sorted
    ordered: bool  # integer or date: exact bounds (statistics, page index)
    bound_format: str | None  # struct format of one plain-encoded bound
    hashes: list[int] | None  # xxHash64 of each candidate's plain encoding (None: no Bloom check)
    dictionary_type: pa.DataType | None  # the Arrow type its dictionary decodes to (None: not handled)
    prefilter: str | None  # a string column: RE2 literals found in any text holding a searched value
    byte_values: list[bytes] | None  # a string or binary column: the candidates' bytes (exact bounds), sorted
    value_array: Any = None  # ``values`` as a NumPy array of the bounds' type (the page index's, at once)
    # What is built on first need, once for every column of the type (shared, not copied).
    memo: dict = field(default_factory=dict)

    def shared(self) -> tuple:
        """Every field but the column's name and leaf (the same for every column of its type)."""
        return (self.physical, self.candidates, self.inside_text, self.values, self.ordered, self.bound_format,
                self.hashes, self.dictionary_type, self.prefilter, self.byte_values, self.value_array, self.memo)

    def entry_finder(self) -> "LiteralFinder | None":
        """A string or binary column searched for whole values: the finder of each candidate as a
        PLAIN dictionary page stores it (its 4-byte little-endian length, then its bytes); None
        for any other column."""
        if "entries" not in self.memo:
            finder = None
            if self.physical == "BYTE_ARRAY" and self.byte_values:
                finder = LiteralFinder(struct.pack("<I", len(value)) + value for value in self.byte_values)
            self.memo["entries"] = finder
        return self.memo["entries"]

    @classmethod
    def of(cls, index: ValueIndex, name: str, leaf: int, kind: pa.DataType, descr) -> "_Column":
        if pa.types.is_dictionary(kind):
            kind = kind.value_type
        kind = plain_type(kind)  # delta-rs's string_view: searched as a string
        physical = descr.physical_type
        candidates = candidates_for(kind, index)
        # No pattern: nothing is searched inside text (a whole-values index, or no long value).
        inside = (pa.types.is_string(kind) or pa.types.is_large_string(kind)) and index.re2_pattern() is not None
        unsigned = pa.types.is_unsigned_integer(kind)
        ordered = (pa.types.is_integer(kind) or pa.types.is_date32(kind)) and physical in ("INT32", "INT64")
        values: list[Any] = []
        if candidates is not None and ordered:
            values = sorted((v - date(1970, 1, 1)).days if isinstance(v, date) else v for v in candidates.to_pylist())
        bound_format = None
        if ordered:
            bound_format = {("INT32", False): "<i", ("INT32", True): "<I", ("INT64", False): "<q",
                            ("INT64", True): "<Q"}[(physical, unsigned)]
        prefilter = None
        if physical == "BYTE_ARRAY" and (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            prefilter = literal_prefilter(candidates.to_pylist() if candidates is not None else [],
                                          index.re2_pattern())
        byte_values = None
        if physical == "BYTE_ARRAY" and candidates is not None:
            if pa.types.is_string(kind) or pa.types.is_large_string(kind):
                byte_values = sorted(v.encode("utf-8") for v in candidates.to_pylist())
            elif pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
                byte_values = sorted(candidates.to_pylist())
        return cls(name, leaf, physical, candidates, inside, values, ordered, bound_format,
                   xxhash64_of(candidates, values, physical, kind, bound_format, descr.length),
                   _dictionary_type(kind, physical), prefilter, byte_values,
                   np.asarray(values, dtype=np.dtype(bound_format)) if bound_format else None)


def _excluded_by_statistics(chunk, values: list[Any]) -> bool:
    stats = chunk.statistics
    if stats is None or not stats.has_min_max:
        return False
    low, high = stats.min, stats.max
    if isinstance(low, date):
        low, high = (low - date(1970, 1, 1)).days, (high - date(1970, 1, 1)).days
    try:
        return not _any_between(values, low, high)
    except TypeError:  # bounds of another type than the candidates: decode
        return False


def _any_between(ordered: list[Any], low: Any, high: Any) -> bool:
    """Whether a value of ``ordered`` (ascending) lies in [low, high]: one binary search, however
    many values are searched (a batch of thousands of subjects)."""
    at = bisect_left(ordered, low)
    return at < len(ordered) and ordered[at] <= high


def _any_in_ranges(ordered, lows, highs) -> bool:
    """Whether a value of ``ordered`` (an ascending NumPy array) lies in any [lows[i], highs[i]]:
    one vectorised binary search for all ranges."""
    if not len(ordered):
        return False
    at = np.searchsorted(ordered, lows, side="left")
    inside = at < len(ordered)
    return bool(np.any(ordered[np.minimum(at, len(ordered) - 1)][inside] <= highs[inside]))


# ---- dictionary pages -----------------------------------------------------------------------------

@dataclass
class _Dictionary:
    """A chunk's dictionary page, read once per file whatever index the chunk is proven with: its
    bytes as stored and its header; its bytes decompressed and its values decoded on first need."""

    body: bytes
    page: PageHeader
    values: pa.Array | None = None
    _raw: bytes | None = None
    _decompressed: bool = False

    def decompressed(self, compression: str) -> bytes | None:
        """The page's PLAIN values as bytes (None: its codec is not one read here)."""
        if not self._decompressed:
            self._raw = decompress_page(self.body, compression, self.page.uncompressed_size)
            self._decompressed = True
        return self._raw


def _integers_held(raw: bytes, page: PageHeader, column: "_Column") -> bool | None:
    """Whether an integer or date dictionary page holds a searched value: its PLAIN values, read
    at once as a NumPy array of their stored width (a date as its days, an unsigned integer
    unsigned: the bounds' format), looked up in the column's sorted values by one vectorised
    binary search. The typed rule is :func:`~piitracer.verify.columns.exact_hits`' (the values are
    those of the column's type, so an integer never meets a float, a text or a boolean here).
    None (decode, and say why) when the page is not exactly ``num_values`` such values, or holds
    one outside a narrow type's range (pyarrow's checked cast refuses it)."""
    if column.bound_format is None or column.value_array is None:
        return None
    dtype = np.dtype(column.bound_format)
    if page.num_values < 0 or len(raw) != page.num_values * dtype.itemsize:
        return None
    stored = np.frombuffer(raw, dtype=dtype)
    kind = column.dictionary_type
    if len(stored) and pa.types.is_integer(kind) and kind.bit_width < 32:
        bits = kind.bit_width
        low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if pa.types.is_signed_integer(kind) else (0, (1 << bits) - 1)
        if int(stored.min()) < low or int(stored.max()) > high:
            return None
    ordered = column.value_array
    if not len(ordered) or not len(stored):
        return False
    at = np.minimum(np.searchsorted(ordered, stored), len(ordered) - 1)
    return bool(np.any(ordered[at] == stored))


def _strings_held(values: pa.Array, raw: bytes, finder: "LiteralFinder", column: "_Column",
                  index: ValueIndex) -> bool | None:
    """Whether a decoded string dictionary holds a searched value, whole or inside text, as
    :func:`~piitracer.verify.columns.column_hits` finds them: whole, one ``is_in`` of the column's
    typed candidates (``candidates_for`` of its type: what ``exact_hits`` matches it with); inside
    text, the token rule (:meth:`~piitracer.verify.values.ValueIndex.search_text`) decides on the
    entries that hold a literal of the prefilter only (every token it finds is one), found in the
    page's bytes (``raw``) by ``finder`` and placed in their entries by the decoded offsets: no
    pattern of every searched value is compiled for the chunk. None (search it as a column) when
    the page is not laid out as its decoded values say."""
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)) or values.null_count \
            or values.buffers()[1] is None:
        return None
    width = 8 if pa.types.is_large_string(values.type) else 4
    offsets = np.frombuffer(values.buffers()[1], dtype=f"<i{width}", count=len(values) + 1,
                            offset=values.offset * width).astype(np.int64)
    lengths = np.diff(offsets)
    # Entry i's bytes follow its own and every earlier entry's 4-byte length.
    starts = 4 * np.arange(1, len(values) + 1, dtype=np.int64) + (offsets[:-1] - offsets[0])
    if 4 * len(values) + int(offsets[-1] - offsets[0]) != len(raw):
        return None
    if column.candidates is not None and pc.any(pc.is_in(values, value_set=column.candidates)).as_py():
        return True
    found = finder.occurrences(raw)
    if not found:
        return False
    at = np.array([start for start, _ in found], dtype=np.int64)
    ends = np.array([end for _, end in found], dtype=np.int64)
    entry = np.searchsorted(starts, at, side="right") - 1
    within = (entry >= 0) & (ends <= starts[np.maximum(entry, 0)] + lengths[np.maximum(entry, 0)])
    admitted = values.take(pa.array(np.unique(entry[within])))
    return any(index.search_text(text) for text in set(admitted.to_pylist()))


def _dictionary_type(kind: pa.DataType, physical: str) -> pa.DataType | None:
    """The Arrow type a dictionary of this column decodes to exactly (None: decode the chunk)."""
    if physical == "BYTE_ARRAY" and (pa.types.is_string(kind) or pa.types.is_large_string(kind)
                                     or pa.types.is_binary(kind) or pa.types.is_large_binary(kind)):
        return kind
    if physical == "INT32" and (pa.types.is_int8(kind) or pa.types.is_int16(kind) or pa.types.is_int32(kind)
                                or pa.types.is_uint8(kind) or pa.types.is_uint16(kind) or pa.types.is_uint32(kind)
                                or pa.types.is_date32(kind)):
        return kind
    if physical == "INT64" and (pa.types.is_int64(kind) or pa.types.is_uint64(kind)):
        return kind
    if (physical == "FLOAT" and pa.types.is_float32(kind)) or (physical == "DOUBLE" and pa.types.is_float64(kind)):
        return kind
    if physical == "FIXED_LEN_BYTE_ARRAY" and pa.types.is_fixed_size_binary(kind):
        return kind
    return None
