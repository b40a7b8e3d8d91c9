"""Bad workspaces through the real CLI: every mistake is one clear line naming the file, the line
and the field and what was expected (exit 2 for errors; warnings on stderr for what can still be
worked with), never a Python traceback. And the executor refuses to touch a location that does not
exist or lies outside the configured warehouse roots."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from piitracer.storage.locations import Location
from click.testing import CliRunner

from piitracer.cli.main import cli
from piitracer.model.outcome import SafetyError
from piitracer.executor.runner import check_location
from piitracer.model.plan import Action, Step
from paths import REPO

PARQUET = "{format: parquet, location: %s, columns: [user_id], identifiers: [user_id], subject_key: user_id, column_types: {user_id: bigint}}"


def run(root: Path, *args: str) -> tuple[int, str]:
    """The CLI in-process; an exception that escapes it (a traceback for a user) fails the test."""
    result = CliRunner().invoke(cli, ["--workspace", str(root), *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


def workspace(tmp_path: Path, yaml_text: str, sql: str = "INSERT INTO a.c SELECT user_id FROM a.b;\n") -> Path:
    (tmp_path / "sql").mkdir(exist_ok=True)
    (tmp_path / "sql" / "p.sql").write_text(sql)
    (tmp_path / "data").mkdir(exist_ok=True)
    (tmp_path / "piitracer.yaml").write_text(yaml_text)
    return tmp_path


@pytest.mark.parametrize("yaml_text, expected", [
    ("catalog: [unclosed\n", r"piitracer.yaml:2:1: not valid YAML: .*expected ',' or ']'"),
    ("catalog:\n\ta.b: 1\n", r"piitracer.yaml:2:1: not valid YAML: .*'\\t'"),
    ("- just\n- a list\n", r"piitracer.yaml:1: expected a mapping of keys"),
    ("catalog: 5\n", r"piitracer.yaml:1: catalog: expected a mapping of keys \(got 5\)"),
    ("catalog:\n  a.b: {format: orc, location: data}\n", r"piitracer.yaml:2: catalog.a.b.format: expected 'iceberg', .* \(got 'orc'\)"),
    ("catalogue: {}\n", r"piitracer.yaml:1: catalogue: not a workspace field: did you mean 'catalog'\?"),
    ("catalog:\n  a.b: {format: null, location: data}\n", r"piitracer.yaml:2: catalog.a.b.format: expected 'iceberg'.* \(got null\)"),
    ("catalog:\n  a.b:\n    format: parquet\n    location: data\n    columns: user_id\n", r"piitracer.yaml:5: catalog.a.b.columns: expected a list \(got 'user_id'\)"),
    ("warehouse_roots: 5\n", r"piitracer.yaml:1: warehouse_roots: expected a list \(got 5\)"),
    ("version: 2\n", r"piitracer.yaml:1: version: only workspace version 1 is known"),
    ("catalog:\n  a.b: {format: parquet, location: data, clone_of: {dataset: x.y, mode: shallow}}\n",
     r"catalog.a.b: refers to 'x.y', which is not in the catalog"),
])
def test_invalid_workspace_file_is_one_clear_error(tmp_path: Path, yaml_text: str, expected: str) -> None:
    code, out = run(workspace(tmp_path, yaml_text), "lineage", "stats")
    assert code == 2
    assert any(re.search(expected, line) for line in out.splitlines()), out


def test_no_workspace_file_and_no_folder(tmp_path: Path) -> None:
    code, out = run(tmp_path, "lineage", "stats")
    assert code == 2 and f"{tmp_path}/piitracer.yaml: no workspace file here" in out
    code, out = run(tmp_path / "missing", "plan", "--source", "a.b.user_id", "--subject", "1")
    assert code == 2 and "no workspace file here" in out


def test_missing_location_and_location_outside_the_roots_are_warnings_naming_the_line(tmp_path: Path) -> None:
    root = workspace(tmp_path, "warehouse_roots: [data]\ncatalog:\n"
                               f"  a.b: {PARQUET % 'data/b'}\n"
                               f"  a.c: {PARQUET % (tmp_path.parent / 'outside')}\n"  # not /tmp: it holds a.b
                               "lineage:\n  sql: [{path: sql}]\n")
    code, out = run(root, "lineage", "stats")
    assert code == 0
    assert f"warning: {root}/piitracer.yaml:3: catalog.a.b.location: {root}/data/b does not exist" in out
    assert (f"warning: {root}/piitracer.yaml:4: catalog.a.c.location: {tmp_path.parent}/outside is outside the warehouse "
            f"roots ({root}/data)") in out


def test_lineage_problems_are_reported_not_fatal(tmp_path: Path) -> None:
    root = workspace(tmp_path, f"catalog:\n  a.b: {PARQUET % 'data'}\n"
                               "lineage:\n  sql: [{path: sql}, {path: nosuch}]\n  openlineage: [{path: events}]\n",
                     sql="INSERT INTO a.c SELECT user_id FROM a.b;\nINSERT INTO a.d SELECT x FROM (SELECT;\n")
    (root / "events").mkdir()
    (root / "events" / "e.jsonl").write_text('{"eventType": "COMPLETE"}\nnot json\n')
    code, out = run(root, "lineage", "stats")
    assert code == 0
    assert "lineage.sql.1.path: 'nosuch' does not exist" in out
    assert "sql/p.sql:2: error: cannot parse statement" in out
    assert "events/e.jsonl:1: error:" in out and "events/e.jsonl:2: error: invalid JSON" in out
    assert "datasets in lineage but not in the catalog: a.c" in out  # the derived table is known, its format not
    # A plan refuses a missing source (issue 40: it would miss what the source says), in one line.
    code, out = run(root, "plan", "--source", "a.b.user_id", "--subject", "1")
    assert code == 2 and out.splitlines() == [
        f"error: {root}/piitracer.yaml:4: lineage.sql.1.path: 'nosuch' does not exist ({root}/nosuch): create it, or fix "
        "the path (relative to the workspace folder); a plan without it would miss the datasets it names"]
    (root / "nosuch").mkdir()  # bad statements and events do not stop it: reported, counted and skipped
    code, out = run(root, "plan", "--source", "a.b.user_id", "--subject", "1")
    assert code == 0 and "a.c is not in the catalog" in out


def test_info_lines_are_listed_but_not_counted_as_problems(tmp_path: Path) -> None:
    root = workspace(tmp_path, f"catalog:\n  a.b: {PARQUET % 'data'}\nlineage:\n  sql: [{{path: sql}}]\n",
                     sql="INSERT INTO a.c SELECT user_id FROM a.b;\nSELECT user_id FROM a.b;\n")
    code, out = run(root, "lineage", "stats", "--output", "json")
    stats = json.loads(out)
    assert code == 0 and (stats["ingest_problems"], stats["ingest_errors"], stats["ingest_info"]) == (0, 0, 1)
    assert stats["problems"] == ["sql/p.sql:2: info: SELECT without a target table: no lineage"]
    code, out = run(root, "lineage", "stats")
    assert code == 0 and "sql/p.sql:2: info: SELECT without a target table" in out


def test_plan_with_a_source_outside_the_catalog_or_lineage(tmp_path: Path) -> None:
    root = workspace(tmp_path, f"catalog:\n  a.b: {PARQUET % 'data'}\nlineage:\n  sql: [{{path: sql}}]\n")
    code, out = run(root, "plan", "--source", "x.y.user_id", "--subject", "1")
    assert code == 2 and "--source x.y.user_id" in out and "neither a dataset nor a dataset.column" in out
    code, out = run(root, "plan", "--source", "a.b.nope", "--subject", "1")
    assert code == 2 and "a.b.nope" in out


def test_executor_refuses_missing_locations_and_locations_outside_the_roots(tmp_path: Path) -> None:
    step = Step(order=1, id="s001", dataset="a.b", action=Action.REWRITE_FILES)
    (tmp_path / "lake" / "b").mkdir(parents=True)
    at = lambda *parts: Location.parse(tmp_path.joinpath(*parts))  # noqa: E731
    check_location(step, at("lake", "b"), (at("lake"),))  # inside, exists: fine
    with pytest.raises(SafetyError, match="no warehouse roots"):  # roots always: none given, nothing touched
        check_location(step, at("lake", "b"), ())
    with pytest.raises(SafetyError, match="outside the warehouse roots"):
        check_location(step, at("elsewhere"), (at("lake"),))
    with pytest.raises(SafetyError, match="outside the warehouse roots"):
        check_location(step, Location.parse(f"{tmp_path}/lake/../etc"), (at("lake"),))  # no escape by ..
    with pytest.raises(SafetyError, match="does not exist: fix catalog.a.b.location"):
        check_location(step, at("lake", "typo"), (at("lake"),))


def test_a_workspace_file_written_as_json_loads_as_its_yaml_twin_with_the_same_line_numbers(tmp_path: Path) -> None:
    """JSON is YAML: a generated catalog may be written as one JSON object (read by a JSON parser,
    for speed); it must mean exactly what the YAML means, and a mistake in it still names its line."""
    import yaml

    import piitracer

    fixture = REPO / "lineage_fixtures"
    data = yaml.safe_load((fixture / "piitracer.yaml").read_text())
    (tmp_path / "piitracer.yaml").write_text(json.dumps(data, indent=1))
    for part in ("events", "sql", "catalog.discovered.yaml"):
        (tmp_path / part).symlink_to(fixture / part)
    as_json = piitracer.load_workspace(tmp_path).config
    assert as_json == piitracer.load_workspace(fixture).config
    data["catalog"]["prod.payments"]["format"] = "hudi"
    text = json.dumps(data, indent=1)
    (tmp_path / "piitracer.yaml").write_text(text)
    line = next(i for i, s in enumerate(text.splitlines(), 1) if '"hudi"' in s)
    code, output = run(tmp_path, "lineage", "stats")
    assert code == 2
    assert re.search(rf"piitracer\.yaml:{line}: catalog\.prod\.payments\.format: ", output), output
