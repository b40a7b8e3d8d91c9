"""`catalog discover --spark`: views come from the Spark catalogs that keep them (the session
catalog here; a Hive metastore or REST catalog in production), never from a folder walk; so do
tables a catalog keeps outside the walked folders (listed, never read). A catalog that cannot be
listed is one line on stderr and the rest is still discovered."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from piitracer.cli.main import cli
from spark_lakehouse import new_namespace, spark_for, write_workspace


def test_views_the_spark_catalog_keeps_are_discovered_and_written(tmp_path: Path, warehouse: Path) -> None:
    spark = spark_for(warehouse)
    inside, outside = new_namespace("walked"), new_namespace("elsewhere")
    for ns in (inside, outside):
        spark.sql(f"CREATE TABLE lake.{ns}.people (user_id BIGINT, email STRING) USING iceberg")
    spark.sql("CREATE OR REPLACE VIEW spark_catalog.default.v_signups AS "
              "SELECT * FROM VALUES (1, 'asha@example.in') AS t(User_Id, email)")
    spark.sql("CREATE OR REPLACE TEMP VIEW v_scratch AS SELECT 1 AS x")  # one session's: not a dataset
    try:
        folder = write_workspace(tmp_path / "ws", warehouse, {}, "SELECT 1;")
        config = yaml.safe_load((folder / "piitracer.yaml").read_text())
        config["lineage"]["spark_catalogs"] = ["lake", "no_such_catalog"]
        config["warehouse_roots"] = [str(folder), str(warehouse / inside)]  # not the rest of the shared warehouse
        (folder / "piitracer.yaml").write_text(yaml.safe_dump(config))
        result = CliRunner().invoke(cli, ["--workspace", str(folder), "catalog", "discover", "--spark", "--write",
                                          "--output", "json"])
        assert result.exit_code == 0, result.output
        shown = json.loads(result.stdout)
        assert {d: c for d, c in shown["views"].items() if d.startswith("default.v_")} == {
            "default.v_signups": ["user_id", "email"]}
        assert list(shown["unreadable_catalogs"]) == ["no_such_catalog"]
        assert [line for line in result.stderr.splitlines() if "views not listed" in line] == [
            f"Spark catalog no_such_catalog: views not listed: {shown['unreadable_catalogs']['no_such_catalog']}"]
        written = yaml.safe_load((folder / "catalog.discovered.yaml").read_text())["catalog"]
        assert written["default.v_signups"] == {"format": "view", "columns": ["user_id", "email"]}
        assert "default.v_scratch" not in written and "v_scratch" not in json.dumps(shown)
        tables = {t["table"]: t for t in shown["tables"] if t["table"] in (f"lake.{inside}.people", f"lake.{outside}.people")}
        listed = [t["table"] for t in shown["tables"]]
        assert (listed.count(f"lake.{inside}.people"), listed.count(f"lake.{outside}.people")) == (1, 1)
        assert (tables[f"lake.{inside}.people"]["format"], tables[f"lake.{inside}.people"]["problems"]) == ("iceberg", [])
        assert tables[f"lake.{outside}.people"]["problems"] == [
            "kept by the Spark catalog outside the discovery roots: not read (piitracer touches nothing there)"]
        assert written[f"{inside}.people"]["table"] == f"lake.{inside}.people" and f"{outside}.people" not in written
    finally:
        spark.sql("DROP VIEW IF EXISTS spark_catalog.default.v_signups")
        spark.catalog.dropTempView("v_scratch")
