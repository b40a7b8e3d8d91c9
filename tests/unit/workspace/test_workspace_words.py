"""Workspace validation in the workspace's words (issue 40 point 2): every problem of piitracer.yaml
at once, in the file's order, each naming its line and field and what was expected there ('expected
a list', not pydantic's 'Input should be a valid tuple'), and an unknown key with the nearest key
that place takes ('linage: ... did you mean 'lineage'?', not 'Extra inputs are not permitted') —
through the real CLI, one error, exit 2."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from piitracer.cli.main import cli
from piitracer.model.workspace import Policy

PYDANTIC = ("Input should", "Extra inputs", "valid tuple", "valid dictionary", "Field required", "Value error")
TEXT = """warehouse_roots: 5
linage:
  sql: [{path: sql}]
catalog:
  a.b: {format: parquet, location: data, colums: [user_id], identifiers: [user_id], subject_key: user_id}
  a.c: {format: orc, location: data}
  a.d: {location: data, ownr: crm}
policy:
  deadline_dayz: 3
  watch: sometimes
"""


def problems_of(tmp_path: Path, text: str) -> tuple[int, list[str]]:
    (tmp_path / "piitracer.yaml").write_text(text)
    result = CliRunner().invoke(cli, ["--workspace", str(tmp_path), "lineage", "stats"])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    lines = result.stderr.splitlines()
    assert lines[0] == "error: invalid workspace:", result.stderr
    return result.exit_code, [line.strip().split("piitracer.yaml:", 1)[1] for line in lines[1:]]


def test_every_problem_at_once_in_the_file_s_order_and_words(tmp_path: Path) -> None:
    code, problems = problems_of(tmp_path, TEXT)
    assert code == 2
    assert problems[:6] == [
        "1: warehouse_roots: expected a list (got 5)",
        "2: linage: not a workspace field: did you mean 'lineage'?",
        "5: catalog.a.b.colums: not a catalog field: did you mean 'columns'?",
        "6: catalog.a.c.format: expected 'iceberg', 'delta', 'parquet', 'view', 'archive' or 'external' (got 'orc')",
        "7: catalog.a.d.ownr: not a catalog field: did you mean 'owner'?",  # an entry without a format yet, too
        "9: policy.deadline_dayz: not a policy field: did you mean 'deadline'?",
    ]
    assert problems[6].startswith("10: policy.watch: ") and len(problems) == 7
    assert not [p for p in problems if any(words in p for words in PYDANTIC)]


def test_an_unknown_key_with_nothing_near_lists_the_keys_the_place_takes(tmp_path: Path) -> None:
    _, problems = problems_of(tmp_path, "policy:\n  zzz: 1\n")
    keys = ", ".join(sorted(Policy.model_fields))  # batch_every, deadline, refs, watch...
    assert problems == [f"2: policy.zzz: not a policy field (expected one of {keys})"]
