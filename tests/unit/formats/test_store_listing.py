"""A local folder listed by the store: every regular file below it, by relative path and size;
symlinks neither listed nor followed, special files left out, hidden and underscore folders in."""

import os

from piitracer.storage.locations import Location
from piitracer.storage.store import Store


def _tree(root):
    files = {"a.parquet": 3, "metadata/v1.metadata.json": 10, "metadata/v2.metadata.json": 0,
             "_delta_log/00000.json": 7, ".hidden/x": 1, "data/p=1/q=2/deep.parquet": 5, "data/p=10/z": 2}
    for relative, size in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * size)
    outside = root.parent / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "secret.parquet").write_bytes(b"s" * 9)
    (outside / "sub" / "f").write_bytes(b"s")
    os.symlink(outside / "secret.parquet", root / "link.parquet")  # a symlink to a file
    os.symlink(outside, root / "data" / "linked")  # a symlink to a folder: not followed
    os.mkfifo(root / "metadata" / "pipe")  # not a regular file
    (root / "empty").mkdir()
    return files


def test_local_listing_is_every_regular_file_and_nothing_else(tmp_path):
    root = tmp_path / "table"
    expected = _tree(root)
    found = Store().list_files(Location.parse(str(root)))
    assert [(entry.relative, entry.size) for entry in found] == sorted(expected.items())


def test_listing_a_missing_folder_or_a_file_lists_nothing(tmp_path):
    store = Store()
    (tmp_path / "f").write_bytes(b"1")
    assert store.list_files(Location.parse(str(tmp_path / "missing"))) == []
    assert store.list_files(Location.parse(str(tmp_path / "f"))) == []
    assert not store.exists(Location.parse(str(tmp_path / "missing")))


def test_exists_stops_at_the_first_file(tmp_path):
    root = tmp_path / "table"
    _tree(root)
    store = Store()
    assert len(list(store._walk(Location.parse(str(root)), limit=1))) == 1
    assert len(list(store._walk(Location.parse(str(root)), limit=3))) == 3
    assert store.exists(Location.parse(str(root / "empty"))) is True  # a folder exists
