"""A verification and the audit trail load no lineage parser (issue 51): the audit trail imports
the lineage's wiring (piitracer.api.lineage), which used to load the SQL and dbt ingest (sqlglot),
the OpenLineage event models and networkx with it, ~0.3 s of every `piitracer verify` process.
They load when lineage is read or a graph is built. The seconds are measured in
benchmarks/bench_verify_process.py, never here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PARSERS = ("piitracer.ingest.sql.lineage", "piitracer.ingest.dbt.artifacts", "piitracer.ingest.openlineage.events")


def loaded(code: str) -> set[str]:
    """The modules a new process has loaded after running ``code``."""
    program = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"
    return set(subprocess.run([sys.executable, "-c", program], check=True, capture_output=True, text=True).stdout.split())


def test_the_audit_trail_loads_no_lineage_parser_and_no_graph_library() -> None:
    found = loaded("import piitracer.api.audit, piitracer.api.lineage")
    assert {"piitracer.api.audit", "piitracer.api.lineage"} <= found
    assert sorted(found & {*PARSERS, "sqlglot", "networkx"}) == []


def test_the_verify_command_loads_no_lineage_parser() -> None:
    found = loaded("import piitracer.cli.erasure, piitracer.cli.terminal, piitracer.api.session, piitracer.api.verify\n"
                   "import piitracer.api.audit")
    assert "piitracer.verify.verifier" in found
    assert sorted(found & {*PARSERS, "sqlglot", "networkx", "piitracer.planner.build"}) == []  # no planning either


def test_the_parsers_and_networkx_load_when_lineage_is_read(tmp_path: Path) -> None:
    sql = tmp_path / "a.sql"
    sql.write_text("INSERT INTO b SELECT x FROM a")
    found = loaded("from piitracer.graph.lineage_graph import LineageGraph\n"
                   "from piitracer.ingest.workspace_ingest import ingest_sql_file\n"
                   "from piitracer.model.naming import DatasetNamer\n"
                   "LineageGraph()\n"
                   f"batch = ingest_sql_file(__import__('pathlib').Path({str(sql)!r}), namer=DatasetNamer(), known={{}})\n"
                   "edges = [(str(e.source), str(e.target)) for e in batch.column_edges]\n"
                   "assert edges == [('default.a.x', 'default.b.x')], edges")
    assert {"networkx", "sqlglot", "piitracer.ingest.sql.lineage"} <= found


def test_execute_imports_the_graph_library_in_the_background_and_a_failure_stays_quiet() -> None:
    """``execute`` starts importing networkx (for its origin check) while the preflight waits on
    the lakehouse; a module that cannot be imported there says nothing (its real import will)."""
    found = loaded("from piitracer.api.session import _import_in_background\n"
                   "assert 'networkx' not in sys.modules\n"
                   "_import_in_background('networkx').join()\n"
                   "assert _import_in_background('networkx') is None")
    assert "networkx" in found
    quiet = subprocess.run([sys.executable, "-c", "from piitracer.api.session import _import_in_background\n"
                            "_import_in_background('piitracer_no_such_module').join()"],
                           capture_output=True, text=True, check=True)
    assert quiet.stderr == ""
