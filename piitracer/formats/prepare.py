"""Writing the files piitracer rewrites so the next verification proves absence without decoding
rows (``verify.prepare``, a dataset's ``prepare_for_proof``; design.md, "Proof at scale").

A Parquet column chunk is proven without reading its rows when its Bloom filter misses every
searched value, when it is wholly dictionary-encoded and its dictionary holds none, or page by page
through the page index. So a prepared rewrite writes Bloom filters on the dataset's identifier and
key columns (the columns a subject's value can be searched in), keeps dictionary encoding and
writes the page index with statistics. Each engine is driven through its own settings: pyarrow's
writer here (plain Parquet and archives), Iceberg's table properties (``formats.iceberg_eraser``),
delta-rs's ``WriterProperties`` (``formats.delta``).
"""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa

from piitracer.model.workspace import CatalogDataset

# False-positive probability of the Bloom filters written: 1 % (parquet-java's and Iceberg's
# default). A false positive only means the chunk is decoded, never a wrong verdict.
BLOOM_FPP = 0.01
# Iceberg sizes each Bloom filter at write.parquet.bloom-filter-max-bytes when it is not told the
# number of distinct values (parquet-java's default: 1 MiB per column chunk, whatever the file).
ICEBERG_MAX_BLOOM_BYTES = 1024 * 1024
ICEBERG_MIN_BLOOM_BYTES = 64


def proof_columns(entry: CatalogDataset, key_column: str | None) -> tuple[str, ...]:
    """The columns a prepared rewrite of ``entry`` writes Bloom filters on: its identifiers, its
    subject key and the step's key column (lower-case, sorted); empty when the dataset is not
    prepared (``prepare_for_proof`` false or unset)."""
    if not entry.prepare_for_proof:
        return ()
    names = {*entry.identifiers, *([entry.subject_key] if entry.subject_key else []),
             *([key_column.lower()] if key_column else [])}
    return tuple(sorted(names))


def bloomable(field: pa.Field) -> bool:
    """Whether a Parquet Bloom filter can be written for a top-level column of this type (a
    primitive other than boolean: nested and boolean columns have none)."""
    kind = field.type
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return not (pa.types.is_nested(kind) or pa.types.is_boolean(kind) or pa.types.is_null(kind))


def file_columns(schema: pa.Schema, wanted: tuple[str, ...]) -> list[str]:
    """The top-level columns of ``schema`` (as the file spells them) that are among ``wanted``
    (catalog names, lower-case) and can carry a Bloom filter, in schema order."""
    chosen = set(wanted)
    return [field.name for field in schema if field.name.lower() in chosen and bloomable(field)]


PYARROW_ROW_GROUP_ROWS = 1024 * 1024  # pyarrow's default rows per row group (one filter each)


def pyarrow_write_options(table: pa.Table, original: Any, columns: tuple[str, ...]) -> dict[str, Any]:
    """``pyarrow.parquet.write_table`` options for a prepared rewrite of ``table`` (the rows
    kept of a file whose footer is ``original``, a ``FileMetaData``): the original's codec per
    column and its dictionary use (and dictionary encoding on every Bloom-filtered column),
    statistics and the page index written, and a Bloom filter on each of ``columns`` that the
    file has, sized for a row group's rows (each row a distinct value: identifiers mostly are,
    and counting the distinct values cost more than the filters' write, bench_prepare_write)."""
    bloomed = file_columns(table.schema, columns)
    dictionary: set[str] = set(bloomed)
    compression: dict[str, str] = {}
    for group in range(original.num_row_groups):
        row_group = original.row_group(group)
        for leaf in range(row_group.num_columns):
            chunk = row_group.column(leaf)
            if chunk.has_dictionary_page:
                dictionary.add(chunk.path_in_schema)
            codec = (chunk.compression or "UNCOMPRESSED").lower()
            compression.setdefault(chunk.path_in_schema, "none" if codec == "uncompressed" else codec)
    options: dict[str, Any] = {
        "write_statistics": True,
        "write_page_index": True,
        # No row group in the original (an empty file): pyarrow's default, dictionary on.
        "use_dictionary": sorted(dictionary) if original.num_row_groups else True,
        "bloom_filter_options": {name: {"ndv": max(min(table.num_rows, PYARROW_ROW_GROUP_ROWS), 1), "fpp": BLOOM_FPP}
                                 for name in bloomed},
    }
    if compression and len(set(compression.values())) == 1:
        options["compression"] = next(iter(compression.values()))
    elif compression:
        options["compression"] = compression
    return options


def bloom_filter_bytes(distinct: int, fpp: float = BLOOM_FPP) -> int:
    """Bytes of a split-block Bloom filter holding ``distinct`` values at ``fpp`` (the optimal
    size, rounded up to a power of two as parquet-java does), between 64 bytes and 1 MiB."""
    bits = -max(distinct, 1) * math.log(fpp) / (math.log(2) ** 2)
    size = 1 << max(int(math.ceil(math.log2(max(bits / 8, 1)))), 0)
    return min(max(size, ICEBERG_MIN_BLOOM_BYTES), ICEBERG_MAX_BLOOM_BYTES)
