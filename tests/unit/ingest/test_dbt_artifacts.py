"""Lineage from dbt artifacts: the real manifest.json and catalog.json dbt-core 1.10 + dbt-duckdb
produced for tests/data/dbt_shop (its README has the commands). Exact edges, SELECT * through
catalog.json or through the manifest alone (a seed's CSV header, a source's YAML columns), an
ephemeral model inlined, every defect named, key types from dbt, and a plan made through the models."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

import piitracer
from piitracer.api import plan_deletion
from piitracer.ingest.dbt.artifacts import ingest_dbt_artifacts
from piitracer.model.errors import PiitracerError
from piitracer.model.lineage import ColumnRef, LineageBatch
from piitracer.model.naming import DatasetNamer
from piitracer.model.plan import Subject
from paths import DATA

SHOP = DATA / "dbt_shop"
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
        # SELECT * of the seed, then SELECT * of that model: a chain
        ("analytics.customer_tiers.customer_id", "analytics.stg_customer_tiers.customer_id", "DIRECT", "IDENTITY"),
        ("analytics.customer_tiers.since", "analytics.stg_customer_tiers.since", "DIRECT", "IDENTITY"),
        ("analytics.customer_tiers.tier", "analytics.stg_customer_tiers.tier", "DIRECT", "IDENTITY"),
        ("analytics.stg_customer_tiers.customer_id", "analytics.gold_customers.customer_id", "DIRECT", "IDENTITY"),
        ("analytics.stg_customer_tiers.since", "analytics.gold_customers.since", "DIRECT", "IDENTITY"),
        ("analytics.stg_customer_tiers.tier", "analytics.gold_customers.tier", "DIRECT", "IDENTITY"),
        ("analytics.stg_customer_tiers.tier", "analytics.gold_customers.*", "INDIRECT", "FILTER"),
    }
    assert {(e.source, e.target) for e in batch.dataset_edges} == {
        ("raw.countries", "analytics.country_list"), ("raw.customers", "analytics.stg_customers"),
        ("raw.orders", "analytics.stg_orders"), ("analytics.stg_customers", "analytics.marketing_audience"),
        ("analytics.stg_customers", "analytics.customer_orders"), ("analytics.stg_orders", "analytics.customer_orders"),
        ("analytics.customer_tiers", "analytics.stg_customer_tiers"),
        ("analytics.stg_customer_tiers", "analytics.gold_customers")}
    # The on-run-start hook is ingested too: its INSERT ... VALUES carry no lineage, and say so.
    assert [(where, severity) for where, severity, _ in problems(batch)] == [
        ("target/manifest.json[operation.shop.shop-on-run-start-0]:4", "info"),
        ("target/manifest.json[operation.shop.shop-on-run-start-0]:6", "info")]


def test_the_manifest_alone_gives_the_same_column_edges_as_with_catalog_json() -> None:
    # stg_orders selects * of a source whose sources.yml declares its columns; stg_customer_tiers
    # selects * of a seed (its CSV header), and gold_customers * of that model.
    alone, with_catalog = ingest(catalog=None), ingest()
    assert edges(alone) == edges(with_catalog)
    assert {e for e in edges(alone) if e[1].startswith(("analytics.stg_orders.", "analytics.gold_customers."))}
    assert {(e.source, e.target) for e in alone.dataset_edges} == {(e.source, e.target) for e in with_catalog.dataset_edges}
    assert problems(alone) == problems(with_catalog)  # nothing to warn about


def manifest_without_stated_columns(tmp_path: Path) -> Path:
    """The manifest with no YAML columns and its seed out of reach (root_path elsewhere, no
    seeds/ next to target/): neither a catalog.json nor the manifest says the columns."""
    manifest = json.loads(MANIFEST.read_text())
    for entry in [*manifest["nodes"].values(), *manifest["sources"].values()]:
        entry["columns"] = {}
        if entry.get("root_path"):
            entry["root_path"] = str(tmp_path / "elsewhere")
    (tmp_path / "target").mkdir()
    (tmp_path / "target/manifest.json").write_text(json.dumps(manifest))
    return tmp_path / "target/manifest.json"


def test_without_catalog_json_or_stated_columns_a_select_star_is_one_warning_per_model(tmp_path: Path) -> None:
    batch = ingest_dbt_artifacts(manifest_without_stated_columns(tmp_path), None, namer=DatasetNamer(), display_root=tmp_path)
    assert not {e for e in edges(batch) if e[1].startswith(("analytics.stg_orders.", "analytics.stg_customer_tiers."))}
    assert ("raw.orders", "analytics.stg_orders") in {(e.source, e.target) for e in batch.dataset_edges}
    assert [(where, severity, reason) for where, severity, reason in problems(batch) if severity != "info"] == [
        ("target/manifest.json[model.shop.gold_customers]:1", "warning",
         "cannot expand * of analytics.stg_customer_tiers: no known schema"),
        ("target/manifest.json[model.shop.stg_customer_tiers]:1", "warning",
         "cannot expand * of analytics.customer_tiers: no known schema"),
        ("target/manifest.json[model.shop.stg_orders]:1", "warning", "cannot expand * of raw.orders: no known schema")]


def test_a_seed_is_read_at_its_root_path_and_a_changed_seed_file_is_named(tmp_path: Path) -> None:
    manifest = json.loads(MANIFEST.read_text())
    seed = manifest["nodes"]["seed.shop.customer_tiers"]
    seed["root_path"] = str(tmp_path / "project")
    (tmp_path / "project/seeds").mkdir(parents=True)
    shutil.copy(SHOP / "seeds/customer_tiers.csv", tmp_path / "project/seeds/customer_tiers.csv")
    (tmp_path / "target").mkdir()
    (tmp_path / "target/manifest.json").write_text(json.dumps(manifest))
    batch = ingest_dbt_artifacts(tmp_path / "target/manifest.json", None, namer=DatasetNamer(), display_root=tmp_path)
    assert edges(batch) == edges(ingest())  # the CSV found at root_path (nothing next to target/)
    assert [p for p in problems(batch) if p[1] != "info"] == []

    # A header edited since dbt loaded the seed: its columns are taken, and the file is named.
    (tmp_path / "project/seeds/customer_tiers.csv").write_text("customer_id;Tier;since\n1;gold;2026-01-05\n")
    seed["config"]["delimiter"] = ";"
    (tmp_path / "target/manifest.json").write_text(json.dumps(manifest))
    batch = ingest_dbt_artifacts(tmp_path / "target/manifest.json", None, namer=DatasetNamer(), display_root=tmp_path)
    assert ("analytics.customer_tiers.tier", "analytics.stg_customer_tiers.tier", "DIRECT", "IDENTITY") in edges(batch)
    assert [p for p in problems(batch) if p[1] != "info"] == [(
        "target/manifest.json[seed.shop.customer_tiers]", "warning",
        f"seed seeds/customer_tiers.csv: {tmp_path / 'project/seeds/customer_tiers.csv'} is not the file dbt loaded "
        "(its sha256 differs from the manifest's): its header is used, but re-run dbt if the columns changed")]


def test_a_database_qualified_relation_is_an_alias_of_its_dataset() -> None:
    aliases = {f.dataset: f.aliases for f in ingest().datasets if f.aliases}
    assert aliases["analytics.customer_orders"] == ("shop.analytics.customer_orders",)
    assert aliases["raw.customers"] == ("shop.raw.customers",)
    assert aliases["analytics.customer_tiers"] == ("shop.analytics.customer_tiers",)
    assert "analytics.int_order_totals" not in aliases  # ephemeral: no relation of its own


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


def workspace(root: Path, dbt: list[dict], catalog: dict | None = None) -> Path:
    shutil.copytree(SHOP / "target", root / "dbt" / "target")
    shutil.copytree(SHOP / "seeds", root / "dbt" / "seeds")  # the project's seeds, next to its target/
    config = {"lineage": {"dbt": dbt}, "catalog": CATALOG_ENTRIES if catalog is None else catalog}
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


# No key type typed by hand: dbt states them (catalog.json, or a seed's column_types config).
UNTYPED_ENTRIES = {
    **CATALOG_ENTRIES,
    "raw.customers": {"format": "delta", "location": "lake/raw/customers", "identifiers": ["customer_id", "email"],
                      "subject_key": "customer_id"},
    "analytics.customer_tiers": {"format": "parquet", "location": "lake/analytics/customer_tiers",
                                 "identifiers": ["customer_id"], "subject_key": "customer_id"},
    "analytics.stg_customer_tiers": {"format": "view", "table": "shop.analytics.stg_customer_tiers"},
    "analytics.gold_customers": {"format": "parquet", "location": "lake/analytics/gold_customers"},
}
SUBJECT = Subject(value="1", request_id="r-1", received_at="2026-11-20T09:00:00Z")


def plan_from(root: Path, source: str, value: str = "1"):
    loaded = piitracer.load_workspace(root)
    return plan_deletion(loaded, piitracer.build_lineage_graph(loaded), [source], [SUBJECT.model_copy(update={"value": value})])


def test_a_plan_takes_the_key_type_catalog_json_states(tmp_path: Path) -> None:
    root = workspace(tmp_path, [{"manifest": "dbt/target/manifest.json", "catalog": "dbt/target/catalog.json"}],
                     UNTYPED_ENTRIES)
    loaded = piitracer.load_workspace(root)
    assert loaded.config.catalog["raw.customers"].column_types == {
        "customer_id": "bigint", "email": "string", "full_name": "string", "signup_date": "date"}
    plan = plan_from(root, "raw.customers.customer_id")
    assert [(d.dataset, d.status.value, d.key_column) for d in plan.datasets] == [
        ("raw.customers", "erase", "customer_id"), ("analytics.stg_customers", "no_action", "customer_id"),
        ("analytics.customer_orders", "erase", "customer_id"), ("analytics.marketing_audience", "erase", "email_hash")]
    with pytest.raises(PiitracerError, match=r"source raw\.customers\.customer_id is bigint"):
        plan_from(root, "raw.customers.customer_id", "1.0")  # parsed as the bigint dbt states, not as text


def test_from_the_manifest_alone_a_seed_key_is_typed_by_its_column_types_config(tmp_path: Path) -> None:
    root = workspace(tmp_path, [{"manifest": "dbt/target/manifest.json"}], UNTYPED_ENTRIES)
    loaded = piitracer.load_workspace(root)
    assert loaded.config.catalog["analytics.customer_tiers"].column_types == {"customer_id": "bigint"}
    assert loaded.config.catalog["raw.orders"].column_types == {  # sources.yml's data_type
        "amount": "decimal(12,2)", "customer_id": "bigint", "order_id": "bigint"}
    plan = plan_from(root, "analytics.customer_tiers.customer_id")
    assert [(d.dataset, d.status.value, d.key_column) for d in plan.datasets] == [
        ("analytics.customer_tiers", "erase", "customer_id"), ("analytics.stg_customer_tiers", "no_action", "customer_id"),
        ("analytics.gold_customers", "erase", "customer_id")]
    # raw.customers: neither catalog.json nor sources.yml states a type, and the table is not there.
    with pytest.raises(PiitracerError, match="cannot tell the key column's type"):
        plan_from(root, "raw.customers.customer_id")


def test_a_hand_typed_key_type_wins_and_a_different_dbt_type_is_a_warning(tmp_path: Path) -> None:
    entries = {**UNTYPED_ENTRIES, "raw.customers": {**UNTYPED_ENTRIES["raw.customers"], "column_types": {"customer_id": "int"}}}
    root = workspace(tmp_path, [{"manifest": "dbt/target/manifest.json", "catalog": "dbt/target/catalog.json"}], entries)
    loaded = piitracer.load_workspace(root)
    assert loaded.config.catalog["raw.customers"].column_types["customer_id"] == "int"
    assert [w for w in loaded.warnings if "column_types" in w] == [
        "piitracer.yaml: catalog.raw.customers.column_types.customer_id: says int, but dbt (dbt/target/catalog.json) says bigint: "
        "the catalog's is used"]


def test_the_lineage_store_reads_the_project_again_when_a_seed_file_changes(tmp_path: Path) -> None:
    from piitracer.ingest.lineage_store import open_store
    from piitracer.ingest.workspace_ingest import batch_from_store, ingest_workspace, update_store

    root = workspace(tmp_path, [{"manifest": "dbt/target/manifest.json"}], UNTYPED_ENTRIES)

    def stored():
        loaded = piitracer.load_workspace(root)
        store = open_store(root)
        try:
            update = update_store(loaded, store)
            return update, batch_from_store(store), ingest_workspace(loaded)
        finally:
            store.close()

    first, batch, fresh = stored()
    assert "dbt/0" in first.parsed and edges(batch) == edges(fresh)
    again, _, _ = stored()
    assert again.parsed == []  # the seed file looked at is unchanged: nothing read again
    (root / "dbt/seeds/customer_tiers.csv").write_text("customer_id,tier,since,region\n1,gold,2026-01-05,eu\n")
    changed, batch, fresh = stored()
    assert changed.parsed == ["dbt/0"]
    assert ("analytics.customer_tiers.region", "analytics.stg_customer_tiers.region", "DIRECT", "IDENTITY") in edges(batch)
    assert edges(batch) == edges(fresh)
    (root / "dbt/seeds/customer_tiers.csv").unlink()
    gone, batch, _ = stored()
    assert gone.parsed == ["dbt/0"]
    assert not {e for e in edges(batch) if e[1].startswith("analytics.stg_customer_tiers.")}


def test_a_dbt_relation_may_be_named_database_qualified_as_dbt_prints_it(tmp_path: Path) -> None:
    root = workspace(tmp_path, [{"manifest": "dbt/target/manifest.json", "catalog": "dbt/target/catalog.json"}],
                     UNTYPED_ENTRIES)
    loaded = piitracer.load_workspace(root)
    graph = piitracer.build_lineage_graph(loaded)
    assert piitracer.parse_column("Shop.Analytics.Customer_Orders", graph) == "analytics.customer_orders"
    assert piitracer.parse_column("shop.raw.customers.customer_id", graph) == ColumnRef(dataset="raw.customers",
                                                                                         column="customer_id")
    with pytest.raises(PiitracerError, match="dataset 'raw.customers' has no column 'nope'"):
        piitracer.parse_column("shop.raw.customers.nope", graph)
    by_relation = plan_deletion(loaded, graph, ["shop.raw.customers.customer_id"], [SUBJECT])
    by_id = plan_deletion(loaded, graph, ["raw.customers.customer_id"], [SUBJECT])
    assert [str(s) for s in by_relation.sources] == ["raw.customers.customer_id"]
    assert [(d.dataset, d.status, d.key_column) for d in by_relation.datasets] == [
        (d.dataset, d.status, d.key_column) for d in by_id.datasets]


def test_a_changed_catalog_json_is_read_again_by_the_next_load(tmp_path: Path) -> None:
    root = workspace(tmp_path, [{"manifest": "dbt/target/manifest.json", "catalog": "dbt/target/catalog.json"}],
                     UNTYPED_ENTRIES)
    assert piitracer.load_workspace(root).config.catalog["raw.customers"].column_types["customer_id"] == "bigint"
    catalog = json.loads((root / "dbt/target/catalog.json").read_text())
    catalog["sources"]["source.shop.raw.customers"]["columns"]["customer_id"]["type"] = "INTEGER"
    (root / "dbt/target/catalog.json").write_text(json.dumps(catalog))
    assert piitracer.load_workspace(root).config.catalog["raw.customers"].column_types["customer_id"] == "int"
