"""A tag on a real Iceberg table (written by pyiceberg, read back from its metadata files) becomes a
rewrite_ref step in the plan (a blocking release_ref by ``policy.refs: release``)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from lineage_builders import A, edge, graph_of, request
from pyiceberg.catalog.sql import SqlCatalog

from piitracer.formats.iceberg_metadata import table_state
from piitracer.formats.iceberg_table import newest_metadata_file
from piitracer.model.plan import Action
from piitracer.model.table_state import RefType
from piitracer.model.workspace import Policy, RefHandling
from piitracer.planner.build import build_plan
from piitracer.storage.locations import Location
from piitracer.storage.store import Store

STORE = Store()


def make_tagged_table(tmp_path: Path) -> tuple[Path, int]:
    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace("src")
    table = catalog.create_table("src.pay", schema=pa.schema([("user_id", pa.int64()), ("amount", pa.float64())]))
    table.append(pa.table({"user_id": [1, 2], "amount": [1.0, 2.0]}))
    tagged = table.current_snapshot().snapshot_id
    table.append(pa.table({"user_id": [3], "amount": [3.0]}))
    table.manage_snapshots().create_tag(tagged, "eoy-2025").create_branch(tagged, "audit").commit()
    return Location.parse(tmp_path / "wh" / "src" / "pay"), tagged


def test_reads_tags_and_branches_from_the_metadata_files(tmp_path: Path) -> None:
    location, tagged = make_tagged_table(tmp_path)
    assert newest_metadata_file(location, STORE).name.startswith("00003-")
    state = table_state("src.pay", location, STORE)
    assert [(r.name, r.type, r.snapshot_id) for r in state.refs] == [("audit", RefType.BRANCH, tagged), ("eoy-2025", RefType.TAG, tagged)]
    assert state.current_snapshot_id != tagged
    assert table_state("src.none", Location.parse(tmp_path / "nothing"), STORE) is None


def test_a_live_tag_is_rewritten_or_by_policy_released_in_the_plan(tmp_path: Path) -> None:
    location, tagged = make_tagged_table(tmp_path)
    graph, catalog = graph_of(edge("src.pay.amount", "x.y.z", A))
    states = {"src.pay": table_state("src.pay", location, STORE)}
    plan = build_plan(graph, catalog, Policy(), request(), states)
    rewrites = [s for s in plan.steps if s.action is Action.REWRITE_REF]
    assert [(s.params.ref, s.params.ref_type, s.params.snapshot_id, s.blocking) for s in rewrites] == [
        ("audit", "branch", tagged, False), ("eoy-2025", "tag", tagged, False)]
    expire = next(s for s in plan.steps if s.dataset == "src.pay" and s.action is Action.EXPIRE_SNAPSHOTS)
    assert rewrites[-1].id in expire.depends_on
    plan = build_plan(graph, catalog, Policy(refs=RefHandling.RELEASE), request(), states)
    releases = [s for s in plan.steps if s.action is Action.RELEASE_REF]
    assert [(s.params.ref, s.params.snapshot_id, s.blocking) for s in releases] == [("audit", tagged, True), ("eoy-2025", tagged, True)]
    assert any(f"tag 'eoy-2025' retains snapshot {tagged}" in w for w in plan.warnings)
