"""The fixture plan for user 8841302 matches the reviewed expected file, step by step, and is
byte-identical when planned again.

The expected file was made with, and is only ever refreshed by a person reviewing the diff of:
  piitracer -w lineage_fixtures plan --source prod.payments.user_id --subject 8841302 \
    --request-id dsr-2026-0042 --received-at 2026-11-20T09:00:00Z --output json \
    > tests/data/expected/fixture_plan_8841302.json
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

import piitracer
from piitracer.api import plan_deletion
from piitracer.model.plan import Action, DatasetStatus, Subject
from paths import DATA, REPO

ROOT = REPO
EXPECTED = DATA / "expected" / "fixture_plan_8841302.json"
SUBJECT = Subject(value="8841302", request_id="dsr-2026-0042", received_at=datetime(2026, 11, 20, 9, tzinfo=timezone.utc))


def make_plan():
    workspace = piitracer.load_workspace(ROOT / "lineage_fixtures")
    return plan_deletion(workspace, piitracer.build_lineage_graph(workspace), ["prod.payments.user_id"], [SUBJECT])


@pytest.fixture(scope="module")
def plan():
    return make_plan()


def test_matches_the_expected_plan_step_by_step(plan) -> None:
    expected = json.loads(EXPECTED.read_text())
    actual = json.loads(plan.to_json())
    for want, got in zip(expected["steps"], actual["steps"]):
        assert got == want, f"step {want['order']} ({want['dataset']} {want['action']}) differs"
    assert len(actual["steps"]) == len(expected["steps"])
    for want, got in zip(expected["datasets"], actual["datasets"]):
        assert got == want, f"dataset {want['dataset']} differs"
    assert actual == expected


def test_planning_again_is_byte_identical(plan) -> None:
    assert make_plan().to_json() == plan.to_json() == EXPECTED.read_text()


def test_plan_id_is_the_hash_of_the_content(plan) -> None:
    assert plan.plan_id == plan.content_hash() and len(plan.plan_id) == 64


def test_what_the_plan_decides_for_the_fixture(plan) -> None:
    """The decisions the fixtures were written to show, readable without opening the expected file."""
    summary = {d.dataset: (d.status, d.key_column) for d in plan.datasets}
    assert summary["prod.payments_enriched"] == (DatasetStatus.ERASE, "customer_id")
    assert summary["analytics.customer_txn"] == (DatasetStatus.ERASE, "cust")
    assert summary["analytics.user_hashes"] == (DatasetStatus.ERASE, "user_hash")
    assert summary["risk.card_usage"] == (DatasetStatus.ERASE, "pan")
    assert summary["support.phone_directory"] == (DatasetStatus.ERASE, "phone")
    assert summary["risk.contact_points"] == (DatasetStatus.ERASE, "contact")
    assert summary["analytics.daily_revenue"][0] is DatasetStatus.RECOMPUTE
    assert summary["analytics.user_monthly_spend"] == (DatasetStatus.ERASE, "user_id")
    assert summary["analytics.v_recent_payments"][0] is DatasetStatus.NO_ACTION
    assert summary["analytics.repeat_merchants"][0] is DatasetStatus.NO_ACTION
    assert summary["ml.payment_features"][0] is DatasetStatus.MANUAL_REVIEW
    assert summary["stream.payments_cdc"][0] is DatasetStatus.MANUAL_REVIEW
    assert "prod.merchants" not in summary
    assert plan.decision("prod.payments_enriched").group == plan.decision("analytics.user_risk").group == "cycle-1"
    assert plan.decision("analytics.user_monthly_spend").deadline.violates_deadline  # 45d snapshots
    assert not plan.decision("prod.payments").deadline.violates_deadline
    assert plan.steps[0].action is Action.RESOLVE and plan.steps[0].dataset == "prod.payments"
    (capture,) = plan.resolve
    assert capture.identifiers == ("aadhaar_ref", "pan", "phone", "user_id")
    # Every computed form a planned column holds is resolved, not only the keys steps match on:
    # user_hashes.phone_hash holds a hash of the phone, and the verifier searches it for that form.
    assert [v.expression for v in capture.computed] == ["SHA2(LOWER(TRIM(phone)), 256)", "SHA2(CAST(user_id AS STRING), 256)"]
    assert capture.key_types == {"user_id": "bigint"}
    forms = plan.decision("analytics.user_hashes").column_forms
    assert forms == {"phone_hash": (capture.computed[0].name,), "user_hash": (capture.computed[1].name,)}
    assert plan.decision("risk.contact_points").column_forms == {"contact": ("prod.payments.pan", "prod.payments.phone")}


def test_the_plan_names_where_a_guard_belongs(plan) -> None:
    """Issue 52: the source is the fixture's one entry point (no job carries identifiers into a
    planned dataset's key column from outside the erasure)."""
    assert [(g.dataset, g.columns, g.fed_by) for g in plan.guard_points] == [
        ("prod.payments", ("aadhaar_ref", "pan", "phone", "user_id"), ())]
