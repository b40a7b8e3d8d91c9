"""The Iceberg history reader's paths relative to a table's location (formats/iceberg_history.py,
``_Relative``: each folder's symlinks resolved once) are exactly formats.relative_to's, symlinked
folders and files, paths outside and URIs included."""

from __future__ import annotations

from pathlib import Path

from piitracer.formats import relative_to
from piitracer.formats.iceberg_history import _Relative
from piitracer.storage.locations import Location


def test_relative_paths_as_relative_to_says_with_symlinks(tmp_path: Path) -> None:
    table = tmp_path / "lake" / "t"
    (table / "data" / "p=1").mkdir(parents=True)
    (table / "data" / "p=1" / "a.parquet").write_bytes(b"x")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "b.parquet").write_bytes(b"y")
    (table / "data" / "linked").symlink_to(outside)  # a folder inside that leads outside
    (table / "data" / "b-link.parquet").symlink_to(outside / "b.parquet")  # a file that does
    (tmp_path / "alias").symlink_to(tmp_path / "lake")  # the table named through another path
    paths = [str(table / "data" / "p=1" / "a.parquet"), f"file://{table}/data/p=1/a.parquet", "data/p=1/a.parquet",
             str(table / "data" / "linked" / "b.parquet"), str(table / "data" / "b-link.parquet"),
             str(tmp_path / "alias" / "t" / "data" / "p=1" / "a.parquet"), str(outside / "b.parquet"),
             str(table / "data" / "missing" / "c.parquet"), "s3://bucket/t/data/x.parquet", str(table)]
    for root in (Location.parse(table), Location.parse(tmp_path / "alias" / "t")):
        relative = _Relative(root)
        assert [relative(p) for p in paths] == [relative_to(root, p) for p in paths]
    assert relative_to(Location.parse(table), paths[3]) is None  # the test can tell: a link out is outside
