"""Lineage from dbt artifacts: the real manifest.json and catalog.json dbt-core 1.10 + dbt-duckdb
produced for tests/dbt_shop (its README has the commands). Exact edges, SELECT * through
catalog.json, an ephemeral model inlined, every defect named, and a plan made through the models."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

import piitracer
from piitracer.api import plan_deletion
from piitracer.ingest.dbt_artifacts import ingest_dbt_artifacts
from piitracer.model.lineage import LineageBatch
from piitracer.model.naming import DatasetNamer
from piitracer.model.plan import Subject

SHOP = Path(__file__).parent / "dbt_shop"
MANIFEST, CATALOG = SHOP / "target/manifest.json", SHOP / "target/catalog.json"


def ingest(manifest: Path = MANIFEST, catalog: Path | None = CATALOG) -> LineageBatch:
    return ingest_dbt_artifacts(manifest, catalog, namer=DatasetNamer(), display_root=SHOP)


def edges(batch: LineageBatch) -> set[tuple]:
    return {(str(e.source), f"{e.target_dataset}.{e.target_column or '*'}", e.kind.value, e.subtype.value)
            for e in batch.column_edges}


def problems(batch: LineageBatch) -> list[tuple[str, str, str]]:
    return sorted((p.origin.location(), p.severity.value, p.reason) for p in batch.problems)


def test_every_model_gives_its_exact_column_edges() -> None:
    batch = ingest()
    assert edges(batch) == {
        ("raw.countries.code", "analytics.country_list.code", "DIRECT", "IDENTITY"),
        ("raw.countries.name", "analytics.country_list.name", "DIRECT", "IDENTITY"),
        ("raw.customers.customer_id", "analytics.stg_customers.customer_id", "DIRECT", "IDENTITY"),
        ("raw.customers.email", "analytics.stg_customers.email", "DIRECT", "TRANSFORMATION"),
        ("raw.customers.full_name", "analytics.stg_customers.full_name", "DIRECT", "IDENTITY"),
        ("raw.customers.signup_date", "analytics.stg_customers.signup_date", "DIRECT", "IDENTITY"),
        # SELECT * of the source: its columns come from catalog.json
        ("raw.orders.order_id", "analytics.stg_orders.order_id", "DIRECT", "IDENTITY"),
        ("raw.orders.customer_id", "analytics.stg_orders.customer_id", "DIRECT", "IDENTITY"),
        ("raw.orders.amount", "analytics.stg_orders.amount", "DIRECT", "IDENTITY"),
        ("raw.orders.ordered_at", "analytics.stg_orders.ordered_at", "DIRECT", "IDENTITY"),
        ("analytics.stg_customers.email", "analytics.marketing_audience.email_hash", "DIRECT", "TRANSFORMATION"),
        ("analytics.stg_customers.signup_date", "analytics.marketing_audience.signup_date", "DIRECT", "IDENTITY"),
        ("analytics.stg_customers.signup_date", "analytics.marketing_audience.*", "INDIRECT", "FILTER"),
        # through the ephemeral int_order_totals, which dbt inlined as a CTE
        ("analytics.stg_customers.customer_id", "analytics.customer_orders.customer_id", "DIRECT", "IDENTITY"),
        ("analytics.stg_customers.email", "analytics.customer_orders.email", "DIRECT", "IDENTITY"),
        ("analytics.stg_orders.amount", "analytics.customer_orders.lifetime_value", "DIRECT", "AGGREGATION"),
        ("analytics.stg_orders.customer_id", "analytics.customer_orders.customer_id", "DIRECT", "IDENTITY"),
        ("analytics.stg_customers.customer_id", "analytics.customer_orders.*", "INDIRECT", "JOIN"),
        ("analytics.stg_orders.customer_id", "analytics.customer_orders.*", "INDIRECT", "JOIN"),
        ("analytics.stg_orders.customer_id", "analytics.customer_orders.*", "INDIRECT", "GROUP_BY"),
    }
    assert {(e.source, e.target) for e in batch.dataset_edges} == {
        ("raw.countries", "analytics.country_list"), ("raw.customers", "analytics.stg_customers"),
        ("raw.orders", "analytics.stg_orders"), ("analytics.stg_customers", "analytics.marketing_audience"),
        ("analytics.stg_customers", "analytics.customer_orders"), ("analytics.stg_orders", "analytics.customer_orders")}
    # The on-run-start hook is ingested too: its INSERT ... VALUES carry no lineage, and say so.
    assert [(where, severity) for where, severity, _ in problems(batch)] == [
        ("target/manifest.json[operation.shop.shop-on-run-start-0]:4", "info"),
        ("target/manifest.json[operation.shop.shop-on-run-start-0]:6", "info")]


def test_without_catalog_json_a_select_star_is_a_reported_dataset_level_edge() -> None:
    batch = ingest(catalog=None)
    assert not {e for e in edges(batch) if e[1].startswith("analytics.stg_orders.")}
    assert ("raw.orders", "analytics.stg_orders") in {(e.source, e.target) for e in batch.dataset_edges}
    warned = [p for p in problems(batch) if p[0].startswith("target/manifest.json[model.shop.stg_orders]")]
    assert [(severity, reason) for _, severity, reason in warned] == [("warning", "cannot expand * of raw.orders: no known schema")]


def test_a_model_without_compiled_sql_is_an_error_naming_it_and_the_rest_is_ingested(tmp_path: Path) -> None:
    manifest = json.loads(MANIFEST.read_text())
    del manifest["nodes"]["model.shop.marketing_audience"]["compiled_code"]
    parsed_only = tmp_path / "manifest.json"
    parsed_only.write_text(json.dumps(manifest))
    batch = ingest_dbt_artifacts(parsed_only, CATALOG, namer=DatasetNamer(), display_root=tmp_path)
    errors = [p for p in problems(batch) if p[1] == "error"]
    assert errors == [("manifest.json[model.shop.marketing_audience]", "error",
                       "model models/marts/marketing_audience.sql has no compiled SQL in the manifest "
                       "(run dbt compile, or dbt docs generate): its lineage is missing")]
    assert not {e for e in edges(batch) if "marketing_audience" in e[1]}
    assert edges(ingest()) - edges(batch) == {e for e in edges(ingest()) if "marketing_audience" in e[1]}


def test_bad_artifacts_are_one_problem_naming_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "manifest.json"
    broken.write_text('{"metadata": {"adapter_type": "duckdb"},\n "nodes": {')
    assert problems(ingest_dbt_artifacts(broken, None, namer=DatasetNamer(), display_root=tmp_path)) == [
        ("manifest.json", "error", "not JSON (line 2): expected a dbt artifact")]
    run_results = tmp_path / "run_results.json"
    run_results.write_text('{"metadata": {}, "results": []}')
    assert problems(ingest_dbt_artifacts(run_results, None, namer=DatasetNamer(), display_root=tmp_path)) == [
        ("run_results.json", "error", "not a dbt artifact: no 'nodes'")]


CATALOG_ENTRIES = {
    "raw.customers": {"format": "delta", "location": "lake/raw/customers", "identifiers": ["customer_id", "email"],
                      "subject_key": "customer_id", "column_types": {"customer_id": "bigint"}},
    "raw.orders": {"format": "delta", "location": "lake/raw/orders"},
    "analytics.stg_customers": {"format": "view", "table": "shop.analytics.stg_customers"},
    "analytics.stg_orders": {"format": "view", "table": "shop.analytics.stg_orders"},
    "analytics.customer_orders": {"format": "parquet", "location": "lake/analytics/customer_orders"},
    "analytics.marketing_audience": {"format": "parquet", "location": "lake/analytics/marketing_audience"},
    "analytics.country_list": {"format": "parquet", "location": "lake/analytics/country_list"},
}


def workspace(root: Path, dbt: list[dict]) -> Path:
    shutil.copytree(SHOP / "target", root / "dbt" / "target")
    config = {"lineage": {"dbt": dbt}, "catalog": CATALOG_ENTRIES}
    (root / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return root


def test_an_erasure_is_planned_through_the_dbt_models(tmp_path: Path) -> None:
    root = workspace(tmp_path, [{"manifest": "dbt/target/manifest.json", "catalog": "dbt/target/catalog.json"}])
    loaded = piitracer.load_workspace(root)
    plan = plan_deletion(loaded, piitracer.build_lineage_graph(loaded), ["raw.customers.customer_id"],
                         [Subject(value="1", request_id="r-1", received_at="2026-11-20T09:00:00Z")])
    assert [(d.dataset, d.status.value, d.key_column, tuple(v.name for v in d.values_from)) for d in plan.datasets] == [
        ("raw.customers", "erase", "customer_id", ("raw.customers.customer_id",)),
        ("analytics.stg_customers", "no_action", "customer_id", ()),
        ("analytics.customer_orders", "erase", "customer_id", ("raw.customers.customer_id",)),
        ("analytics.marketing_audience", "erase", "email_hash", ("raw.customers.email~07dbe2cdd3",)),
    ]
    computed = {v.name: v.expression for c in plan.resolve for v in c.computed}
    assert computed["raw.customers.email~07dbe2cdd3"] == "MD5(LOWER(TRIM(email)))"  # the hash the model wrote
    assert [(s.dataset, s.action.value, s.key_column) for s in plan.steps if s.key_column] == [
        ("raw.customers", "delete_rows", "customer_id"), ("analytics.customer_orders", "rewrite_files", "customer_id"),
        ("analytics.marketing_audience", "rewrite_files", "email_hash")]


def test_a_missing_artifact_names_its_workspace_key(tmp_path: Path) -> None:
    root = workspace(tmp_path, [{"manifest": "dbt/target/manifest.json", "catalog": "dbt/target/nope.json"}])
    graph = piitracer.build_lineage_graph(piitracer.load_workspace(root))
    assert [p.reason for p in graph.problems if "lineage.dbt" in p.reason] == [
        "lineage.dbt.0.catalog: 'dbt/target/nope.json' does not exist"]
