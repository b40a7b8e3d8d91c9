"""The first hour's mistakes (issue 40.4), through the real CLI on a workspace `init` made: each is
one line naming the fix — an error (exit 2) where nothing useful could follow, a single warning
where work can go on — never a silent success. A warehouse root that does not exist (discover
found 0 tables and check "agreed"); a lineage SQL folder or events file that does not exist (a plan
silently missed what it says); an empty piitracer.yaml (accepted); a plan on an empty lineage
("neither a dataset nor a dataset.column"); 20 catalog locations that do not exist (20 warnings,
"a iceberg")."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from piitracer.cli.main import cli

NO_KEYS = {"PIITRACER_AUDIT_KEY": None, "PIITRACER_AUDIT_KEY_FILE": None, "PIITRACER_MASTER_KEY": None,
           "PIITRACER_MASTER_KEY_FILE": None, "PIITRACER_SIGNING_KEY_FILE": None}


def fresh_environment() -> dict:
    """A person's first hour: no key, and no Iceberg catalog configured in the environment (one
    another test left behind would be listed by discovery)."""
    return {**NO_KEYS, **{key: None for key in os.environ if key.upper().startswith("PYICEBERG_")}}


def run(*args: str) -> tuple[int, list[str]]:
    """The CLI in-process: exit code and every line it wrote (stdout and stderr); an exception
    escaping it (a traceback for a person) fails the test."""
    result = CliRunner(env=fresh_environment()).invoke(cli, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output.splitlines()


def init(tmp_path: Path, root: Path) -> Path:
    workspace = tmp_path / "ws"
    code, lines = run("init", str(workspace), "--warehouse-root", str(root), "--keys-dir", str(tmp_path / "keys"))
    assert code == 0, lines
    return workspace


def edit(workspace: Path, **fields) -> None:
    path = workspace / "piitracer.yaml"
    config = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**config, **fields}, sort_keys=False))


# ---- a warehouse root that does not exist -----------------------------------------------------

def test_init_with_a_root_that_does_not_exist_yet_says_so_once(tmp_path: Path) -> None:
    result = CliRunner(env=fresh_environment()).invoke(cli, ["init", str(tmp_path / "ws"), "--warehouse-root", str(tmp_path / "lake"),
                                                 "--keys-dir", str(tmp_path / "keys")])
    assert result.exit_code == 0  # the tables may come later
    said = [line for line in result.stderr.splitlines() if "does not exist" in line]
    assert said == [f"warning: warehouse root {tmp_path / 'lake'} does not exist yet: create it (or fix warehouse_roots "
                    f"in {tmp_path / 'ws' / 'piitracer.yaml'}) before `catalog discover`"]


@pytest.mark.parametrize("command", [["catalog", "discover"], ["catalog", "discover", "--write"], ["catalog", "check"],
                                     ["catalog", "classify"]])
def test_a_warehouse_root_that_does_not_exist_is_one_error_naming_the_fix(tmp_path: Path, command: list[str]) -> None:
    lake = tmp_path / "lake"
    workspace = init(tmp_path, lake)
    line = next(i for i, text in enumerate((workspace / "piitracer.yaml").read_text().splitlines(), 1)
                if text == f"- {lake}")
    code, lines = run("-w", str(workspace), *command)
    assert code == 2
    assert lines == [f"error: {workspace / 'piitracer.yaml'}:{line}: warehouse_roots.0: warehouse root {lake} does not "
                     "exist: create it and put your tables under it, or fix warehouse_roots (no table can be discovered "
                     "or checked there)"]
    assert not (workspace / "catalog.discovered.yaml").exists()
    lake.mkdir()
    code, lines = run("-w", str(workspace), *command)
    assert code == 0, lines


# ---- lineage sources that do not exist ------------------------------------------------------------

@pytest.mark.parametrize("lineage, field, path", [
    ({"sql": [{"path": "sql", "dialect": "spark"}]}, "lineage.sql.0.path", "sql"),
    ({"openlineage": [{"path": "events/run.jsonl"}]}, "lineage.openlineage.0.path", "events/run.jsonl"),
    ({"dbt": [{"manifest": "target/manifest.json"}]}, "lineage.dbt.0.manifest", "target/manifest.json"),
])
def test_a_lineage_source_that_does_not_exist_stops_a_plan_in_one_line(tmp_path: Path, lineage: dict, field: str,
                                                                       path: str) -> None:
    lake = tmp_path / "lake"
    lake.mkdir()
    workspace = init(tmp_path, lake)
    edit(workspace, lineage=lineage,
         catalog={"a.b": {"format": "parquet", "location": str(lake), "identifiers": ["user_id"],
                          "subject_key": "user_id", "columns": ["user_id"], "column_types": {"user_id": "bigint"}}})
    line = next(i for i, text in enumerate((workspace / "piitracer.yaml").read_text().splitlines(), 1)
                if text.endswith(f": {path}"))
    code, lines = run("-w", str(workspace), "plan", "--source", "a.b.user_id", "--subject", "1")
    assert code == 2
    assert lines == [f"error: {workspace / 'piitracer.yaml'}:{line}: {field}: {path!r} does not exist ({workspace / path}): "
                     "create it, or fix the path (relative to the workspace folder); a plan without it would miss the "
                     "datasets it names"]


# ---- an empty workspace file ----------------------------------------------------------------------

@pytest.mark.parametrize("text", ["", "# nothing yet\n", "{}\n"])
def test_an_empty_workspace_file_is_one_error_naming_the_fix(tmp_path: Path, text: str) -> None:
    (tmp_path / "piitracer.yaml").write_text(text)
    for command in (["lineage", "stats"], ["plan", "--source", "a.b.user_id", "--subject", "1"]):
        code, lines = run("-w", str(tmp_path), *command)
        assert code == 2
        assert lines == [f"error: {tmp_path / 'piitracer.yaml'}: the workspace file is empty: remove it and run "
                         f"`piitracer init {tmp_path} --warehouse-root PATH`, or write at least version: 1, "
                         "warehouse_roots and lineage in it (the workspace reference lists every field)"]


# ---- a plan on an empty lineage -------------------------------------------------------------------

def test_a_plan_on_an_empty_lineage_says_what_to_add(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    lake.mkdir()
    workspace = init(tmp_path, lake)  # lineage: sql: [], openlineage: [], dbt: [] and no catalog
    code, lines = run("-w", str(workspace), "plan", "--source", "crm.people.user_id", "--subject", "1")
    assert code == 2
    assert lines == [f"error: --source crm.people.user_id: the lineage is empty: add lineage.sql (your pipelines' SQL "
                     "files), lineage.openlineage (OpenLineage events) or lineage.dbt to "
                     f"{workspace / 'piitracer.yaml'}, and the tables to the catalog (`piitracer catalog discover "
                     "--write`)"]


# ---- repeated warnings ----------------------------------------------------------------------------

def test_twenty_missing_locations_are_one_warning_with_a_count_naming_the_missing_root(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    workspace = init(tmp_path, lake)
    catalog = {f"db.t{number:02d}": {"format": "iceberg", "location": str(lake / f"t{number:02d}")} for number in range(20)}
    edit(workspace, catalog=catalog)
    text = (workspace / "piitracer.yaml").read_text().splitlines()
    first = next(i for i, line in enumerate(text, 1) if "t00" in line and "location" in line)
    roots = next(i for i, line in enumerate(text, 1) if line.startswith("warehouse_roots"))
    code, lines = run("-w", str(workspace), "lineage", "stats")
    warnings = [line for line in lines if line.startswith("warning: ")]
    assert code == 0
    assert warnings == [
        f"warning: {workspace / 'piitracer.yaml'}:{first}: catalog.db.t00.location: {lake / 't00'} does not exist (an "
        "Iceberg table's files are expected there), and the locations of 19 more datasets (db.t01, db.t02, db.t03, "
        "db.t04, db.t05 and 14 more) do not exist either; warehouse root "
        f"{lake} does not exist ({workspace / 'piitracer.yaml'}:{roots}: warehouse_roots): create it, or fix "
        "warehouse_roots"]
    # With the root there, the tables still missing are one warning naming the fix.
    lake.mkdir()
    (lake / "t03").mkdir()
    code, lines = run("-w", str(workspace), "lineage", "stats")
    assert [line for line in lines if line.startswith("warning: ")] == [
        f"warning: {workspace / 'piitracer.yaml'}:{first}: catalog.db.t00.location: {lake / 't00'} does not exist (an "
        "Iceberg table's files are expected there), and the locations of 18 more datasets (db.t01, db.t02, db.t04, "
        "db.t05, db.t06 and 13 more) do not exist either: fix each one's location, or run `piitracer catalog discover "
        "--write`"]
