"""The location warnings every load computes live (ingest/workspace_loader.workspace_warnings): a
catalogued folder that does not exist, and one outside the warehouse roots, each named with the
line that says it; the same warnings whether the workspace was validated from its files or served
from the lineage store's kept copy (where the folders to check are kept as plain strings)."""

from __future__ import annotations

from pathlib import Path

import piitracer
from piitracer.ingest.workspace.cache import WorkspaceCache

WORKSPACE = """\
version: 1
warehouse_roots: [wh]
catalog:
  shop.inside:
    format: parquet
    location: wh/inside
  shop.missing:
    format: parquet
    location: wh/missing
  shop.sibling:
    format: parquet
    location: wh2/sibling
  shop.climbs:
    format: parquet
    location: wh/../outside
  shop.remote:
    format: parquet
    location: s3://bucket/remote
"""


def _workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for folder in ("wh/inside", "wh2/sibling", "outside"):
        (root / folder).mkdir(parents=True)
    (root / "piitracer.yaml").write_text(WORKSPACE)
    return root


def _warnings(root: Path) -> list[str]:
    return [w for w in piitracer.load_workspace(root).warnings if "warehouse roots" in w or "does not exist" in w]


def test_missing_and_outside_locations_warn_with_their_lines(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    found = _warnings(root)
    ws = root / "piitracer.yaml"
    assert found == [
        f"{ws}:9: catalog.shop.missing.location: {root / 'wh/missing'} does not exist "
        "(a Parquet dataset's files are expected there): fix catalog.shop.missing.location, or run "
        "`piitracer catalog discover --write`",
        # wh2 only starts like the root wh: it is not inside it; '..' climbs out of it. Two of a kind
        # are one warning naming the first and the other.
        f"{ws}:15: catalog.shop.climbs.location: {root / 'outside'} is outside the warehouse roots ({root / 'wh'}), "
        "and the location of shop.sibling is outside them too: piitracer will not touch them",
    ]


def test_a_workspace_served_from_the_store_warns_the_same_and_sees_a_folder_go(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    first = _warnings(root)
    assert WorkspaceCache.open(root).workspace() is not None  # the next load is served from the store
    assert _warnings(root) == first
    (root / "wh" / "inside").rmdir()  # checked live: not part of what the store keeps
    assert any("does not exist (a Parquet dataset's files are expected there)" in w and "shop.inside" in w
               for w in _warnings(root))
