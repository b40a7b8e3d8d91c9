"""A string column delta-rs writes as Arrow ``string_view`` (its MERGE, a table created from a
schema) is searched like any string column: the subject's value in it is found, whole and inside
text, and its key rows are read. Before, the chunk was "proven by type" (no searched value was of
type string_view) and a leftover e-mail address went unseen."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable

from piitracer.storage.locations import Location
from piitracer.storage.store import Store
from piitracer.verify.decoders import scan_location
from piitracer.verify.values import ValueIndex

SCHEMA = pa.schema([pa.field("email", pa.string()), pa.field("note", pa.string())])


def test_a_string_view_column_is_decoded_and_searched(tmp_path: Path) -> None:
    DeltaTable.create(str(tmp_path), schema=SCHEMA)
    rows = pa.table({"email": [f"p{i}@example.org" for i in range(50)],
                     "note": [f"called back p{i}@example.org" if i == 7 else "" for i in range(50)]}, schema=SCHEMA)
    DeltaTable(str(tmp_path)).merge(rows, "t.email = s.email", source_alias="s", target_alias="t") \
        .when_not_matched_insert_all().execute()
    data = [p for p in tmp_path.glob("*.parquet")]
    assert data and all(pa.types.is_string_view(pq.read_schema(p).field("email").type) for p in data)
    result = scan_location(Location.parse(str(tmp_path)), ValueIndex.build({"emails": ["p7@example.org"]}), Store())
    places = {(hit.where, hit.kind) for hit in result.hits}
    assert ("column email", "data") in places
    assert ("column note (inside text)", "data") in places
    assert result.chunks.by_method.get("type", 0) == 0  # no string_view chunk "proven" by its type
