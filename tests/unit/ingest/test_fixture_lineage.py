"""The demo lakehouse's lineage: every construct the fixtures were written to show is in the graph."""

from __future__ import annotations

from pathlib import Path

import pytest

import piitracer
from piitracer.graph.lineage_graph import Reach
from piitracer.model.lineage import ColumnRef, DatasetRelation
from paths import REPO

FIXTURES = REPO / "lineage_fixtures"


@pytest.fixture(scope="module")
def graph() -> piitracer.LineageGraph:
    return piitracer.build_lineage_graph(FIXTURES)


def edges(graph, source: str, target_dataset: str) -> set[tuple]:
    dataset, _, column = source.rpartition(".")
    return {(e.target_column, e.kind.value, e.subtype.value if e.subtype else None, e.masking, e.expression)
            for e in graph.edges_from(ColumnRef(dataset=dataset, column=column)) if e.target_dataset == target_dataset}


def test_fixture_ingests_cleanly(graph) -> None:
    assert graph.problems == []
    assert graph.stats()["datasets_not_in_catalog"] == []
    assert graph.units_read == 9 + 13  # 9 events in 4 files, 13 statements in 10 SQL files


def test_renamed_key_twice(graph) -> None:
    assert edges(graph, "prod.payments.user_id", "prod.payments_enriched") == {("customer_id", "DIRECT", "IDENTITY", False, None)}
    assert edges(graph, "prod.payments_enriched.customer_id", "analytics.customer_txn") == {("cust", "DIRECT", "IDENTITY", False, None)}


def test_hashed_keys_through_ctes(graph) -> None:
    assert ("user_hash", "DIRECT", "TRANSFORMATION", True, "SHA2(CAST(user_id AS STRING), 256)") in edges(graph, "prod.payments.user_id", "analytics.user_hashes")
    assert ("phone_hash", "DIRECT", "TRANSFORMATION", True, "SHA2(LOWER(TRIM(phone)), 256)") in edges(graph, "prod.payments.phone", "analytics.user_hashes")


def test_event_only_tables_land_on_catalog_ids(graph) -> None:
    # 1-0 facet, source named through the hive metastore, output by a path re-rooted from the cluster
    assert edges(graph, "prod.payments.phone", "support.phone_directory") == {("phone", "DIRECT", "IDENTITY", False, None)}
    # latest event wins: an older run also copied user_id into last_merchant_id
    assert edges(graph, "prod.payments.user_id", "support.phone_directory") == set()
    # 1-1 facet: a masked token with no expression
    assert edges(graph, "prod.payments.user_id", "ml.payment_features") >= {("user_token", "DIRECT", "TRANSFORMATION", True, None)}
    # 1-2 facet: dataset-level indirect inputs
    assert (None, "INDIRECT", "FILTER", False, None) in edges(graph, "prod.payments.dt", "finance.settlements")
    # a Kafka topic named by namespace/name, aliased in the catalog
    assert ("user_id", "DIRECT", "IDENTITY", False, None) in edges(graph, "prod.payments.user_id", "stream.payments_cdc")


def test_union_merge_cycle_and_clones(graph) -> None:
    for identifier in ("pan", "phone"):  # UNION ALL by position: both identifiers land in `contact`
        into_contact = {e for e in edges(graph, f"prod.payments.{identifier}", "risk.contact_points") if e[0] == "contact"}
        assert into_contact == {("contact", "DIRECT", "IDENTITY", False, None)}
    assert ("risk_score", "DIRECT", "IDENTITY", False, None) in edges(graph, "analytics.user_risk.risk_score", "prod.payments_enriched")
    relations = {(e.source, e.target, e.relation) for e in graph.dataset_edges()}
    assert ("prod.payments", "dev.payments_shallow", DatasetRelation.SHALLOW_CLONE) in relations
    assert ("prod.payments", "dev.payments_deep", DatasetRelation.DEEP_CLONE) in relations
    assert ("prod.payments", "archive.payments_weekly", DatasetRelation.ARCHIVE) in relations


def test_reach_from_the_subject_key(graph) -> None:
    reach = graph.reachable_datasets(ColumnRef(dataset="prod.payments", column="user_id"))
    assert reach["analytics.repeat_merchants"] is Reach.INDIRECT  # user id only as a join key
    assert reach["analytics.daily_revenue"] is Reach.DIRECT  # count(DISTINCT user_id)
    assert "risk.card_usage" not in reach and "support.phone_directory" not in reach  # PAN / phone only
    assert "prod.merchants" not in reach
