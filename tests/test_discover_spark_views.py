"""`catalog discover --spark`: views come from the Spark catalogs that keep them (the session
catalog here; a Hive metastore or REST catalog in production), never from a folder walk. A catalog
that cannot be listed is one line on stderr and the rest is still discovered."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from piitracer.cli.main import cli
from spark_lakehouse import spark_for, write_workspace


def test_views_the_spark_catalog_keeps_are_discovered_and_written(tmp_path: Path, warehouse: Path) -> None:
    spark = spark_for(warehouse)
    spark.sql("CREATE OR REPLACE VIEW spark_catalog.default.v_signups AS "
              "SELECT * FROM VALUES (1, 'asha@example.in') AS t(User_Id, email)")
    spark.sql("CREATE OR REPLACE TEMP VIEW v_scratch AS SELECT 1 AS x")  # one session's: not a dataset
    try:
        folder = write_workspace(tmp_path / "ws", warehouse, {}, "SELECT 1;")
        config = yaml.safe_load((folder / "piitracer.yaml").read_text())
        config["lineage"]["spark_catalogs"] = ["lake", "no_such_catalog"]
        config["warehouse_roots"] = [str(folder)]  # the shared warehouse holds other tests' tables
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
    finally:
        spark.sql("DROP VIEW IF EXISTS spark_catalog.default.v_signups")
        spark.catalog.dropTempView("v_scratch")
