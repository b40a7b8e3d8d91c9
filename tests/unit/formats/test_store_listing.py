"""A local folder listed by the store: every regular file below it, by relative path and size;
symlinks neither listed nor followed, special files left out, hidden and underscore folders in."""

import os
import shutil
import tempfile
from pathlib import Path

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


def _list_as(user: int | None, root: Path) -> str:
    """The store's listing of ``root`` (or its refusal), done by a forked child running as ``user``
    (None: as this user). Forked, not a new interpreter: the child needs no file of the checkout,
    which may sit in a folder the other user cannot enter (CI clones into a private temp folder)."""
    Store().list_files(Location.parse(str(root / "data")))  # every lazy import done before the fork
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        try:
            os.close(read)
            if user is not None:
                os.setgroups([])
                os.setgid(user)
                os.setuid(user)
            try:
                text = str([entry.relative for entry in Store().list_files(Location.parse(str(root)))])
            except Exception as error:  # reported, not lost with the child: the parent asserts on it
                text = f"{type(error).__name__}: {error}"
            os.write(write, text.encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as answer:
        text = answer.read().decode()
    os.waitpid(child, 0)
    return text


def test_a_folder_that_cannot_be_read_stops_the_listing():
    """A folder left out of a listing would be a hole in a proof: the listing stops, naming it.
    Root reads any folder, so as root the listing runs as ``nobody`` (uid 65534)."""
    root = Path(tempfile.mkdtemp(prefix="piitracer-locked-"))
    try:
        root.chmod(0o755)  # the other user walks to it
        for relative in ("data/a.parquet", "metadata/v1.metadata.json", "metadata/locked/stray.parquet"):
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            (root / relative).write_bytes(b"x")
        for folder in (root / "data", root / "metadata"):
            folder.chmod(0o755)
            for child in folder.iterdir():
                child.chmod(0o755 if child.is_dir() else 0o644)
        (root / "metadata" / "locked").chmod(0o000)
        user = 65534 if os.geteuid() == 0 else None
        found = _list_as(user, root)
        assert found.startswith(f"StorageError: {root}: cannot list metadata/locked/: "), found
        assert "Permission denied" in found, found
        # Readable again: every file listed (the same walk, so the refusal above is the lock's).
        (root / "metadata" / "locked").chmod(0o755)
        assert _list_as(user, root) == str(["data/a.parquet", "metadata/locked/stray.parquet", "metadata/v1.metadata.json"])
    finally:
        (root / "metadata" / "locked").chmod(0o755)
        shutil.rmtree(root)
