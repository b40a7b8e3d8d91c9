"""An Avro object container file (Iceberg's manifests and manifest lists) read as its header and its
decompressed blocks, its records decoded with fastavro under a schema parsed once per process.

``fastavro.reader`` and ``fastavro.block_reader`` parse the writer's schema for every file they open:
~0.2-0.3 ms for an Iceberg manifest's schema, more than decoding a one-entry manifest. A table with a
long history has hundreds of such files, all under the same few schemas, so the header is read here
(fastavro's own header schema), each block framed by the container spec (a record count, a byte
size, the bytes, the file's 16-byte sync marker), decompressed, and its records decoded with
``fastavro.schemaless_reader`` under the cached parsed schema: the same records as
``fastavro.reader`` (checked on real manifests and lists, and on corrupted ones, by the tests of
this module). A codec not handled here (snappy, zstandard, bzip2, xz) gives None: read it with
fastavro.
"""

from __future__ import annotations

import io
import json
import zlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

MAGIC = b"Obj\x01"
SYNC_SIZE = 16


class AvroContainerError(ValueError):
    """Bytes that are not a well-formed Avro object container file."""


@dataclass(frozen=True)
class AvroContainer:
    """One container file: its metadata (``avro.schema``, ``avro.codec``, a writer's own keys) as
    text, and each block as (record count, decompressed bytes)."""

    metadata: dict[str, str]
    blocks: tuple[tuple[int, bytes], ...]

    @property
    def schema_text(self) -> str:
        return self.metadata.get("avro.schema", "")

    @property
    def record_count(self) -> int:
        return sum(count for count, _ in self.blocks)

    def data(self) -> bytes:
        """Every block's decompressed bytes, one after another: the records' whole encoding."""
        return b"".join(block for _, block in self.blocks)

    def records(self) -> list[dict]:
        """Every record, as ``fastavro.reader`` reads them."""
        found = records_between(self.data(), 0, None, self.schema_text)
        if found is None or len(found) != self.record_count:
            raise AvroContainerError("the records do not add up to the blocks")
        return found


def read_container(data: bytes) -> AvroContainer | None:
    """The container file ``data``; None when its codec is not one read here (read it with
    fastavro). Raises :class:`AvroContainerError` on bytes that are not a container file."""
    import fastavro

    if data[:4] != MAGIC:
        raise AvroContainerError("no Avro magic")
    stream = io.BytesIO(data)
    try:
        header = fastavro.schemaless_reader(stream, _header_schema(), None)
    except (EOFError, ValueError, UnicodeDecodeError, IndexError, TypeError) as error:
        raise AvroContainerError(f"unreadable header: {type(error).__name__}") from error
    try:
        metadata = {key: bytes(value).decode("utf-8") for key, value in header["meta"].items()}
    except UnicodeDecodeError as error:
        raise AvroContainerError("metadata is not UTF-8") from error
    codec = metadata.get("avro.codec", "null")
    if codec not in ("null", "deflate"):
        return None
    sync, pos, blocks = header["sync"], stream.tell(), []
    while pos < len(data):
        count, pos = _long(data, pos)
        size, pos = _long(data, pos)
        if count < 0 or size < 0 or pos + size + SYNC_SIZE > len(data):
            raise AvroContainerError("a block runs past the end of the file")
        raw = data[pos:pos + size]
        pos += size
        if data[pos:pos + SYNC_SIZE] != sync:
            raise AvroContainerError("a block does not end with the file's sync marker")
        pos += SYNC_SIZE
        if codec == "deflate":
            try:
                raw = zlib.decompress(raw, -15)
            except zlib.error as error:
                raise AvroContainerError("a deflate block does not decompress") from error
        blocks.append((count, raw))
    return AvroContainer(metadata, tuple(blocks))


def records_between(data: bytes, start: int, end: int | None, schema_text: str) -> list[dict] | None:
    """The records encoded in ``data`` from ``start``, up to ``end`` (None: the end of ``data``),
    under the writer schema ``schema_text``; None when the records do not end exactly at ``end``."""
    import fastavro

    end = len(data) if end is None else end
    schema = parsed_schema(schema_text)
    stream, found = io.BytesIO(data), []
    stream.seek(start)
    try:
        while stream.tell() < end:
            found.append(fastavro.schemaless_reader(stream, schema, None))
    except (EOFError, ValueError, UnicodeDecodeError, IndexError, TypeError, KeyError) as error:
        raise AvroContainerError(f"a record does not decode: {type(error).__name__}") from error
    except MemoryError as error:  # a corrupted length: fastavro allocates what it says before reading
        raise AvroContainerError("a record claims more bytes than can be held") from error
    return found if stream.tell() == end else None


@lru_cache(maxsize=64)
def parsed_schema(schema_text: str) -> Any:
    """fastavro's parsed form of a writer schema, once per distinct schema text."""
    import fastavro
    from fastavro.schema import SchemaParseException, UnknownType

    try:
        return fastavro.parse_schema(json.loads(schema_text))
    except (ValueError, TypeError, KeyError, AttributeError, SchemaParseException, UnknownType) as error:
        raise AvroContainerError(f"unreadable schema: {type(error).__name__}") from error


@lru_cache(maxsize=1)
def _header_schema() -> Any:
    import fastavro
    from fastavro.read import HEADER_SCHEMA

    return fastavro.parse_schema(HEADER_SCHEMA)


def _long(data: bytes, pos: int) -> tuple[int, int]:
    """An Avro long (zigzag varint) at ``pos``, and the position after it."""
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise AvroContainerError("a block header runs past the end of the file")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
