"""The demo's piitracer.yaml says only what a person must, and with catalog.discovered.yaml under
it the workspace's catalog is today's hand-written one (tests/data/expected/demo_catalog_handwritten.yaml)
field by field, where both say something. test_demo checks that discovering the built demo
lakehouse writes exactly that discovered file."""

from __future__ import annotations

from pathlib import Path

import yaml

import piitracer
from piitracer.model.workspace import DatasetFormat, WorkspaceConfig
from paths import DATA, REPO

ROOT = REPO
FIXTURES = ROOT / "lineage_fixtures"
HANDWRITTEN = DATA / "expected" / "demo_catalog_handwritten.yaml"
# What only a person knows, and so what piitracer.yaml may still say of a table the lakehouse describes.
PERSON_FIELDS = {"identifiers", "subject_key", "column_types", "normalised", "owner", "description", "replicas",
                 "clone_of", "classified_by", "retention", "delete_mode"}


def test_the_layered_catalog_is_the_handwritten_one_field_by_field() -> None:
    handwritten = WorkspaceConfig.model_validate(yaml.safe_load(HANDWRITTEN.read_text())).catalog
    layered = piitracer.load_workspace(FIXTURES).config.catalog
    assert sorted(layered) == sorted(handwritten)
    differences = {}
    for dataset, entry in handwritten.items():
        ours, theirs = entry.model_dump(), layered[dataset].model_dump()
        for name, value in ours.items():
            if value in (None, (), {}) or theirs[name] == value:
                continue
            differences[(dataset, name)] = (value, theirs[name])
    # Discovery cannot know the metastore name of a table Spark does not reach by identifier (Delta,
    # Parquet read by delta-rs and pyarrow) nor a view's: the plan names them by dataset id instead.
    assert differences == {(d, "table"): (handwritten[d].table, None) for d in (
        "analytics.customer_txn", "analytics.last_payments", "analytics.repeat_merchants", "analytics.user_risk",
        "analytics.v_recent_payments", "risk.card_usage")}
    assert all(handwritten[d].format is not DatasetFormat.ICEBERG for d, _ in differences)


def test_the_persons_file_says_no_fact_the_lakehouse_knows_of_a_discovered_table() -> None:
    person = yaml.safe_load((FIXTURES / "piitracer.yaml").read_text())["catalog"]
    discovered = yaml.safe_load((FIXTURES / "catalog.discovered.yaml").read_text())["catalog"]
    said = {(d, name) for d, entry in person.items() if d in discovered for name in entry if name not in PERSON_FIELDS}
    assert said == set()
    kept_retention = {(d, key) for d, entry in person.items() for key in entry.get("retention", {})}
    assert {key for _, key in kept_retention} == {"maintenance_every"}  # how often maintenance runs: a person's fact
