"""Reading a Parquet file's parts by their offsets, for :mod:`~piitracer.verify.parquet_proofs`:
a file that counts the bytes read through it, the footer, a column chunk's page headers and its
dictionary page (decompressed, and decoded by pyarrow from a one-page file built around its
bytes). Nothing here decides whether a chunk is proven: that is the prover's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from piitracer.verify.parquet_thrift import (BINARY, I32, I64, LIST, STRUCT, ThriftError, read_selected, read_struct,
                                             write_struct)

# parquet.thrift enums
DATA_PAGE, INDEX_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 1, 2, 3
PLAIN, PLAIN_DICTIONARY, RLE_DICTIONARY = 0, 2, 8
CODECS = {"UNCOMPRESSED": 0, "SNAPPY": 1, "GZIP": 2, "LZO": 3, "BROTLI": 4, "LZ4": 5, "ZSTD": 6, "LZ4_RAW": 7}
PHYSICAL = {"BOOLEAN": 0, "INT32": 1, "INT64": 2, "INT96": 3, "FLOAT": 4, "DOUBLE": 5, "BYTE_ARRAY": 6,
            "FIXED_LEN_BYTE_ARRAY": 7}
READ_AHEAD = 8192  # bytes read for page headers at once; grown when one header (its statistics) is longer
MAX_HEADER = 1 << 20


class CountingFile:
    """A random-access file that counts the bytes read through it (the report's "bytes read"), and
    serves a read again from its last few reads: pyarrow decoding a small chunk whose page headers
    were just read with it reads nothing twice."""

    RECENT = 4

    def __init__(self, handle) -> None:
        self.handle = handle
        self.bytes_read = 0
        self._recent: list[tuple[int, bytes]] = []  # (offset, data) of the last reads, newest last

    def _cached(self, offset: int, nbytes: int) -> bytes | None:
        pieces, position, end = [], offset, offset + nbytes
        while position < end:
            found = next(((start, data) for start, data in reversed(self._recent)
                          if start <= position < start + len(data)), None)
            if found is None:
                return None
            start, data = found
            pieces.append(data[position - start:min(end, start + len(data)) - start])
            position = start + len(data) if end > start + len(data) else end
        return b"".join(pieces)

    def _remember(self, offset: int, data: bytes) -> None:
        self.bytes_read += len(data)
        self._recent = [*self._recent[-(self.RECENT - 1):], (offset, data)]

    def read(self, nbytes: int = -1) -> bytes:
        position = self.handle.tell()
        if nbytes is not None and nbytes >= 0:
            cached = self._cached(position, nbytes)
            if cached is not None:
                self.handle.seek(position + nbytes)
                return cached
        data = self.handle.read(nbytes) if nbytes is not None and nbytes >= 0 else self.handle.read()
        self._remember(position, data)
        return data

    def read_at(self, nbytes: int, offset: int) -> bytes:
        cached = self._cached(offset, nbytes)
        if cached is not None:
            return cached
        data = self.handle.read_at(nbytes, offset)
        self._remember(offset, data)
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.handle.seek(offset, whence)

    def tell(self) -> int:
        return self.handle.tell()

    def size(self) -> int:
        return self.handle.size()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    @property
    def closed(self) -> bool:
        return self.handle.closed

    def close(self) -> None:
        self.handle.close()

    def __enter__(self) -> "CountingFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

class BytesAt:
    """A chunk's bytes, read once, served at their file offsets (for :func:`read_page_headers`)."""

    def __init__(self, data: bytes, start: int) -> None:
        self.data, self.start = data, start

    def read_at(self, nbytes: int, offset: int) -> bytes:
        return self.data[offset - self.start:offset - self.start + nbytes]


# ---- page headers ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class PageHeader:
    type: int
    offset: int  # of the header
    header_size: int
    compressed_size: int
    uncompressed_size: int
    num_values: int
    encoding: int
    levels_size: int = 0  # a v2 data page: its levels' bytes, stored uncompressed before the values
    values_compressed: bool = True  # a v2 data page: whether its values are compressed (is_compressed)


def chunk_start(chunk) -> int:
    """Where a column chunk's first page starts (its dictionary page, when it has one)."""
    start = chunk.data_page_offset
    if chunk.has_dictionary_page and chunk.dictionary_page_offset is not None and 0 < chunk.dictionary_page_offset < start:
        start = chunk.dictionary_page_offset
    return start


def read_page_headers(handle: CountingFile, chunk, until_plain: bool = False) -> list[PageHeader] | None:
    """Every page header of a column chunk, reading only the headers (a page's body is skipped
    unless it lies in the same read as a header: small pages cost one read for many headers, which
    matters on object storage); None when the pages do not exactly fill ``total_compressed_size``.
    ``until_plain``: stop after the first data page that is not dictionary-encoded (the chunk will
    be decoded: the rest need not be read)."""
    position = chunk_start(chunk)
    end = position + chunk.total_compressed_size
    pages = []
    buffer_start, buffer = position, b""
    while position < end:
        window = READ_AHEAD
        while True:
            offset = position - buffer_start
            if 0 <= offset < len(buffer):
                try:
                    fields, after = read_struct(buffer, offset)
                    break
                except ThriftError:
                    if buffer_start + len(buffer) >= end or window > MAX_HEADER:
                        return None  # the header runs past the chunk, or is absurdly long
            buffer_start, buffer = position, handle.read_at(min(window, end - position), position)
            if not buffer:
                return None
            window *= 4
        size = after - offset
        kind, uncompressed, compressed = fields.get(1), fields.get(2), fields.get(3)
        if kind is None or compressed is None or uncompressed is None or compressed < 0:
            return None
        detail = {DATA_PAGE: 5, DICTIONARY_PAGE: 7, DATA_PAGE_V2: 8}.get(kind)
        sub = fields.get(detail, {}) if detail else {}
        encoding = sub.get(4 if kind == DATA_PAGE_V2 else 2, -1)
        levels = (sub.get(5, 0) + sub.get(6, 0)) if kind == DATA_PAGE_V2 else 0
        pages.append(PageHeader(kind, position, size, compressed, uncompressed, sub.get(1, 0), encoding, levels,
                                sub.get(7, True) is not False))
        position += size + compressed
        if until_plain and kind != DICTIONARY_PAGE and encoding not in (PLAIN_DICTIONARY, RLE_DICTIONARY):
            return pages
    return pages if position == end else None


# Parquet codecs pyarrow.decompress reads as they are stored (LZ4 is Hadoop-framed: not here).
DECOMPRESS = {"SNAPPY": "snappy", "GZIP": "gzip", "BROTLI": "brotli", "ZSTD": "zstd", "LZ4_RAW": "lz4_raw"}


def decompress_page(body: bytes, compression: str, uncompressed_size: int) -> bytes | None:
    """A page's bytes as they were before compression (``body`` itself when uncompressed); None
    when its codec is not one :data:`DECOMPRESS` reads, or its bytes are not as long as its header
    says (the caller then leaves the page to pyarrow's own reader)."""
    if compression == "UNCOMPRESSED":
        raw = body
    elif compression in DECOMPRESS:
        raw = pa.decompress(body, uncompressed_size, codec=DECOMPRESS[compression], asbytes=True)
    else:
        return None
    return raw if len(raw) == uncompressed_size else None


# ---- dictionary pages -----------------------------------------------------------------------------

def decode_dictionary(body: bytes, chunk, page: PageHeader, descr, kind: pa.DataType,
                      compression: str | None = None) -> pa.Array | None:
    """The dictionary page's values as Arrow type ``kind``: its bytes (``body``, as stored,
    compressed with the chunk's codec, or with ``compression``: ``"UNCOMPRESSED"`` for a page
    the caller has already decompressed) are wrapped as the one PLAIN data page of a required
    column in a one-row-group file, which pyarrow decodes; None when the codec or type is not one
    pyarrow reads."""
    codec = CODECS.get(compression or chunk.compression)
    physical = PHYSICAL.get(descr.physical_type)
    if codec is None or physical is None or page.num_values < 0:
        return None
    header = write_struct([(1, I32, DATA_PAGE), (2, I32, page.uncompressed_size), (3, I32, len(body)),
                           (5, STRUCT, [(1, I32, page.num_values), (2, I32, PLAIN), (3, I32, 3), (4, I32, 3)])])
    leaf = [(1, I32, physical)] + ([(2, I32, descr.length)] if physical == PHYSICAL["FIXED_LEN_BYTE_ARRAY"] else []) \
        + [(3, I32, 0), (4, BINARY, "v")]
    size = len(header) + len(body)
    column = [(1, I32, physical), (2, LIST, (I32, [PLAIN])), (3, LIST, (BINARY, ["v"])), (4, I32, codec),
              (5, I64, page.num_values), (6, I64, len(header) + page.uncompressed_size), (7, I64, size), (9, I64, 4)]
    footer = write_struct([
        (1, I32, 1),
        (2, LIST, (STRUCT, [[(4, BINARY, "schema"), (5, I32, 1)], leaf])),
        (3, I64, page.num_values),
        (4, LIST, (STRUCT, [[(1, LIST, (STRUCT, [[(2, I64, 4), (3, STRUCT, column)]])), (2, I64, size),
                             (3, I64, page.num_values)]])),
    ])
    data = b"PAR1" + header + body + footer + len(footer).to_bytes(4, "little") + b"PAR1"
    values = pq.ParquetFile(pa.BufferReader(data)).read(use_threads=False).column(0).combine_chunks()
    return _as_type(values, kind)


def _as_type(values: pa.Array, kind: pa.DataType) -> pa.Array:
    if pa.types.is_unsigned_integer(kind) and kind.bit_width in (32, 64):
        return values.view(kind)  # stored as the same bits, signed
    if pa.types.is_date32(kind):
        return values.view(pa.date32())
    return values.cast(kind)  # checked: a string's bytes are validated as UTF-8, a narrow int's range


# ---- footer -------------------------------------------------------------------------------------

TAIL_WINDOW = 8192  # one read usually holds the whole footer; pyarrow's own first read is 64 KiB


def read_metadata(handle: CountingFile) -> tuple[pq.FileMetaData, bytes]:
    """The file's footer, read with the fewest bytes (its tail, then the rest of the footer if
    longer), parsed by pyarrow; and the footer's Thrift bytes (for :func:`parse_footer`)."""
    size = handle.size()
    window = min(size, TAIL_WINDOW)
    tail = handle.read_at(window, size - window)
    if len(tail) < 12 or tail[-4:] != b"PAR1":
        raise ValueError("no Parquet footer magic")
    length = int.from_bytes(tail[-8:-4], "little")
    if length + 12 > size:
        raise ValueError("Parquet footer longer than the file")
    if length + 8 > len(tail):
        tail = handle.read_at(length + 8 - len(tail), size - length - 8) + tail
    footer = tail[len(tail) - 8 - length:len(tail) - 8]
    return pq.read_metadata(pa.BufferReader(b"PAR1" + footer + tail[-8:])), footer


# What the proofs read of a footer (parquet.thrift): FileMetaData.row_groups (4) -> RowGroup.columns
# (1) -> ColumnChunk: its meta_data's (3) statistics (12), column_index_offset/length (6, 7).
FOOTER_FIELDS = {4: {1: {3: {12: True}, 6: True, 7: True}}}


def parse_footer(footer: bytes) -> dict[int, Any]:
    """The FileMetaData struct, only the :data:`FOOTER_FIELDS` of it (what pyarrow does not expose:
    exact-bound flags, page index offsets); the rest is skipped unbuilt."""
    return read_selected(footer, FOOTER_FIELDS)[0]
