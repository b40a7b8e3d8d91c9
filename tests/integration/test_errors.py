"""Errors a person can act on: a Java failure shows its deepest cause in one line, not py4j's
"An error occurred while calling o123.sql" followed by a stack; a broken table is named with its
file; the CLI catches piitracer's own errors only (a bug is a traceback, not a "user error")."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from spark_lakehouse import build, new_namespace, spark_for, workspace

import piitracer
from piitracer.api import plan_deletion, write_private
from piitracer.cli.main import cli
from piitracer.executor.runner import _one_line
from piitracer.model.errors import PiitracerError
from piitracer.model.plan import Subject
from paths import REPO


def test_a_java_failure_is_its_root_cause_on_one_line(warehouse: Path) -> None:
    spark = spark_for(warehouse)
    with pytest.raises(Exception) as caught:  # py4j's Py4JJavaError
        spark._jvm.java.io.FileInputStream("/nonexistent/metadata/snap-123.avro")
    assert "An error occurred while calling" in str(caught.value)  # what a person used to see first
    assert _one_line(caught.value) == "FileNotFoundException: /nonexistent/metadata/snap-123.avro (No such file or directory)"
    with pytest.raises(Exception) as caught:  # pyspark's captured AnalysisException
        spark.sql("SELECT * FROM lake.no_such_db.no_such_table").collect()
    line = _one_line(caught.value)
    assert line.split(":")[0].endswith("AnalysisException") and "\n" not in line and "TABLE_OR_VIEW_NOT_FOUND" in line


def test_a_table_whose_metadata_is_broken_is_one_line_naming_the_file(tmp_path: Path, warehouse: Path) -> None:
    spark = spark_for(warehouse)
    ns = new_namespace("broken")
    build(spark, warehouse, ns)
    ws = piitracer.load_workspace(workspace(tmp_path, warehouse, ns))
    plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), [f"{ns}.src.user_id"],
                         [Subject(value="7000000001", request_id="r1", received_at="2026-11-20T09:00:00Z")])
    write_private(tmp_path / "plan.json", plan.to_json())
    manifest_list = sorted((warehouse / ns / "cow" / "metadata").glob("snap-*.avro"))[-1]
    manifest_list.unlink()
    result = CliRunner(env={"PIITRACER_AUDIT_KEY": "errors-test-audit-key-0123456789"}).invoke(
        cli, ["--workspace", str(ws.root), "execute", str(tmp_path / "plan.json"), "--dry-run", "--unsealed"])
    assert result.exit_code == 2
    assert result.output.startswith(f"error: dataset {ns}.cow: ") and manifest_list.name in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_every_user_facing_error_is_a_piitracer_error() -> None:
    from piitracer.api import PlanSealError
    from piitracer.audit import AuditError, AuditKeyError
    from piitracer.model.outcome import SafetyError
    from piitracer.executor.preflight import PlanRefused
    from piitracer.executor.runner import ExecutionError
    from piitracer.formats import FormatError
    from piitracer.ingest.requests import RequestFileError
    from piitracer.planner.build import PlanningError
    from piitracer.verify import VerificationError

    for kind in (PlanSealError, AuditError, AuditKeyError, SafetyError, PlanRefused, ExecutionError, FormatError,
                 RequestFileError, PlanningError, VerificationError, piitracer.WorkspaceError):
        assert issubclass(kind, PiitracerError), kind


def test_a_bug_is_a_traceback_not_a_user_error(monkeypatch, tmp_path: Path) -> None:
    import piitracer.ingest.requests as reader  # the CLI imports it from here when it reads a request file

    def broken(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr(reader, "read_labelled_requests", broken)
    requests = tmp_path / "r.csv"
    requests.write_text("value\n1\n")
    result = CliRunner().invoke(cli, ["--workspace", str(REPO / "lineage_fixtures"), "plan",
                                      "--source", "prod.payments.user_id", "--requests", str(requests)])
    assert isinstance(result.exception, KeyError)  # not swallowed into "error: ..." and exit 2


def test_the_cli_catches_piitracer_errors_only() -> None:
    """Every ``except`` in the CLI names a PiitracerError class (or click's usage mistakes,
    ``click.ClickException``): a KeyError or an OSError caught
    there would turn a bug (or an unplanned failure) into a one-line "user error"."""
    import ast
    import importlib

    import piitracer.cli.main as main

    caught = []
    for path in sorted(Path(main.__file__).parent.glob("*.py")):
        module = importlib.import_module(f"piitracer.cli.{path.stem}")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ExceptHandler):
                names = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
                caught += [(f"{path.name}:{node.lineno}", name) for name in names]
    assert caught, "the CLI catches at least PiitracerError"
    for where, name in caught:
        if ast.unparse(name) == "click.ClickException":  # click's usage mistakes: user errors by definition
            continue
        assert isinstance(name, ast.Name), f"{where}: a bare or dotted except"
        module = importlib.import_module(f"piitracer.cli.{where.split('.py:')[0]}")
        kind = getattr(module, name.id, None) or getattr(__import__("builtins"), name.id, None)
        if kind is None:  # imported inside the function: find it where the CLI imports it from
            source = Path(module.__file__).read_text()
            line = next(l for l in source.splitlines() if "import" in l and f" {name.id}" in l)
            kind = getattr(importlib.import_module(line.split()[1]), name.id)
        assert isinstance(kind, type) and issubclass(kind, PiitracerError), f"{where}: catches {name.id}"


def test_explain_of_a_dataset_the_plan_does_not_reach_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--workspace", str(REPO / "lineage_fixtures"), "plan",
                                      "--source", "prod.payments.user_id", "--subject", "8841302",
                                      "--explain", "no.such_table"])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
    assert result.output.strip().splitlines()[-1] == "error: --explain no.such_table: the plan does not reach dataset 'no.such_table'"
