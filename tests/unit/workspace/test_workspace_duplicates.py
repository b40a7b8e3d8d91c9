"""A workspace that says one thing twice is refused, through the real CLI, with one line naming the
file and both lines: a key twice in one mapping (YAML or JSON, piitracer.yaml or
catalog.discovered.yaml; a parser would silently keep the last), one dataset name twice in other
letter case, and two datasets at one location or one inside the other's
(symlinks, ``..`` and ``s3a://`` resolved) — a delete or an orphan removal on one must never act
on the other's files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import piitracer
from piitracer.cli.main import cli
from paths import REPO

FIXTURES = REPO / "lineage_fixtures"


def entry(location: str, fmt: str = "parquet") -> str:
    return ("{format: %s, location: %s, columns: [user_id], identifiers: [user_id], subject_key: user_id, "
            "column_types: {user_id: bigint}}" % (fmt, location))


def run(root: Path) -> tuple[int, str]:
    """``lineage stats`` in-process; an exception escaping the CLI (a traceback) fails the test."""
    result = CliRunner().invoke(cli, ["--workspace", str(root), "lineage", "stats"])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


def refused(root: Path) -> str:
    """The one error line of a workspace that must be refused."""
    code, out = run(root)
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert code == 2 and len(errors) == 1, out
    assert "Traceback" not in out
    return errors[0]


def workspace(tmp_path: Path, text: str, discovered: str | None = None) -> Path:
    root = tmp_path / "ws"
    (root / "sql").mkdir(parents=True, exist_ok=True)
    (root / "sql" / "p.sql").write_text("INSERT INTO a.c SELECT user_id FROM a.b;\n")
    for folder in ("data/b", "data/c", "data/b2"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "piitracer.yaml").write_text(text + "lineage:\n  sql: [{path: sql}]\n")
    if discovered is not None:
        (root / "catalog.discovered.yaml").write_text(discovered)
    return root


def line_of(text: str, needle: str, nth: int = 1) -> int:
    """1-based line of the ``nth`` line of ``text`` that contains ``needle``."""
    return [i for i, line in enumerate(text.splitlines(), 1) if needle in line][nth - 1]


# ---- a key said twice -----------------------------------------------------------------------------

def test_one_dataset_twice_under_catalog_names_both_lines(tmp_path: Path) -> None:
    text = f"catalog:\n  a.b: {entry('data/b')}\n  a.c: {entry('data/c')}\n  a.b: {entry('data/b2')}\n"
    root = workspace(tmp_path, text)
    line = refused(root)
    assert line == (f"error: {root}/piitracer.yaml:4: key 'a.b' is said twice in one mapping (lines 2 and 4): keep one "
                    "(a parser would silently keep the last)")


def test_location_twice_in_one_entry_names_both_lines(tmp_path: Path) -> None:
    text = ("catalog:\n  a.b:\n    format: parquet\n    location: data/b\n    columns: [user_id]\n"
            "    location: data/c\n")
    root = workspace(tmp_path, text)
    assert f"piitracer.yaml:6: key 'location' is said twice in one mapping (lines 4 and 6)" in refused(root)


def test_a_key_twice_deeper_down_or_at_the_top_is_refused_too(tmp_path: Path) -> None:
    text = (f"policy:\n  deadline: 30d\ncatalog:\n  a.b:\n    format: parquet\n    location: data/b\n"
            "    retention: {maintenance_every: 1d, maintenance_every: 7d}\n")
    root = workspace(tmp_path, text)
    assert "piitracer.yaml:7: key 'maintenance_every' is said twice in one mapping (lines 7 and 7)" in refused(root)
    text = f"policy:\n  deadline: 30d\ncatalog:\n  a.b: {entry('data/b')}\npolicy:\n  deadline: 60d\n"
    root = workspace(tmp_path, text)
    assert "piitracer.yaml:5: key 'policy' is said twice in one mapping (lines 1 and 5)" in refused(root)


def test_a_duplicate_in_the_discovered_catalog_names_that_file(tmp_path: Path) -> None:
    discovered = ("version: 1\ncatalog:\n  a.b:\n    format: parquet\n    location: data/b\n"
                  "  a.c:\n    format: parquet\n    location: data/c\n  a.b:\n    format: parquet\n    location: data/b2\n")
    root = workspace(tmp_path, "catalog:\n  a.b: {owner: team-b}\n", discovered)
    assert (f"{root}/catalog.discovered.yaml:9: key 'a.b' is said twice in one mapping (lines 3 and 9)"
            in refused(root))


def test_a_json_workspace_file_with_a_key_twice_names_both_lines(tmp_path: Path) -> None:
    body = json.dumps({"catalog": {"a.b": yaml.safe_load(entry("data/b")), "a.c": yaml.safe_load(entry("data/c"))}},
                      indent=1)
    text = body.replace('"location": "data/c"', '"location": "data/c",\n   "location": "data/b2"')
    assert text != body
    root = workspace(tmp_path, "")
    (root / "piitracer.yaml").write_text(text)
    first, second = line_of(text, '"location": "data/c"'), line_of(text, '"location": "data/b2"')
    assert (f"piitracer.yaml:{second}: key 'location' is said twice in one mapping (lines {first} and {second})"
            in refused(root))


def test_merge_keys_may_override_what_they_merge(tmp_path: Path) -> None:
    """``<<: *anchor`` then a key of the mapping's own is YAML's override, not a duplicate."""
    text = ("base: &base {format: parquet, columns: [user_id], identifiers: [user_id], subject_key: user_id}\n"
            "catalog:\n  a.b: {<<: *base, location: data/b}\n  a.c:\n    <<: *base\n    location: data/c\n"
            "    subject_key: user_id\n")
    root = workspace(tmp_path, text.replace("base: &base", "policy: {deadline: 30d}\nx-base: &base"))
    code, out = run(root)
    # x-base is not a workspace field: the error is about that, not about a duplicate
    assert code == 2 and "said twice" not in out and "x-base: not a workspace field" in out


def test_one_dataset_named_twice_in_other_letter_case(tmp_path: Path) -> None:
    text = f"catalog:\n  a.b: {entry('data/b')}\n  A.B: {entry('data/b2')}\n"
    root = workspace(tmp_path, text)
    assert ("piitracer.yaml:3: catalog: 'a.b' (line 2) and 'A.B' (line 3) name one dataset (dataset names are not "
            "case-sensitive): keep one") in refused(root)


# ---- one location, two datasets -----------------------------------------------------------------

@pytest.mark.parametrize("second", ["data/b", "data/./b/", "data/c/../b", "{root}/data/b", "file://{root}/data/b",
                                    "linked", "linked_data/b", "linked_data/../data/b"])
def test_two_datasets_at_one_location_name_both(tmp_path: Path, second: str) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "linked").symlink_to(root / "data" / "b")  # the table's folder through a link
    (root / "linked_data").symlink_to("data")  # a folder above it through a (relative) link
    text = f"catalog:\n  a.b: {entry('data/b')}\n  a.c: {entry(second.format(root=root), 'delta')}\n"
    workspace(tmp_path, text)
    line = refused(root)
    assert (f"error: {root}/piitracer.yaml:3: catalog.a.c.location: {root}/data/b is also the location of a.b "
            f"({root}/piitracer.yaml:2: catalog.a.b.location): a delete or an orphan removal on one would act on the "
            "other's files; give each dataset its own folder") == line


def test_object_store_locations_compare_as_one_store(tmp_path: Path) -> None:
    text = f"catalog:\n  a.b: {entry('s3a://lake/t/b')}\n  a.c: {entry('s3://lake//t/b/')}\n"
    root = workspace(tmp_path, text)
    assert "catalog.a.c.location: s3://lake/t/b is also the location of a.b" in refused(root)
    text = f"catalog:\n  a.b: {entry('s3://lake/t')}\n  a.c: {entry('s3://other/t')}\n  a.d: {entry('s3://lake/t2')}\n"
    assert run(workspace(tmp_path, text))[0] == 0  # another bucket, a longer name: not inside


def test_a_location_inside_another_datasets_is_refused_either_way_round(tmp_path: Path) -> None:
    for outer, inner in (("a.b", "a.c"), ("a.c", "a.b")):
        locations = {outer: "data", inner: "data/c/part"}
        text = f"catalog:\n  a.b: {entry(locations['a.b'])}\n  a.c: {entry(locations['a.c'])}\n"
        root = workspace(tmp_path, text)
        line = refused(root)
        assert re.search(rf"piitracer\.yaml:\d: catalog\.{re.escape(inner)}\.location: {root}/data/c/part lies inside the "
                         rf"location of {re.escape(outer)} \({root}/piitracer\.yaml:\d: catalog\.{re.escape(outer)}\.location\): "
                         rf"a delete or an orphan removal on {re.escape(outer)} would act on {re.escape(inner)}'s files",
                         line), line


def test_siblings_with_a_common_prefix_are_not_nested(tmp_path: Path) -> None:
    text = f"catalog:\n  a.b: {entry('data/b')}\n  a.c: {entry('data/b2')}\n"
    assert run(workspace(tmp_path, text))[0] == 0


def test_a_replica_or_an_archive_is_not_exempt(tmp_path: Path) -> None:
    text = ("catalog:\n  a.b:\n    format: parquet\n    location: data/b\n    replicas:\n"
            "      - {name: dr, location: data/c, managed_by: replication}\n"
            f"  a.c: {entry('data/c')}\n")
    root = workspace(tmp_path, text)
    assert (f"piitracer.yaml:7: catalog.a.c.location: {root}/data/c is also the location of a.b@dr "
            f"({root}/piitracer.yaml:6: catalog.a.b.replicas.0.location)") in refused(root)
    text = (f"catalog:\n  a.b: {entry('data/b')}\n  a.w:\n    format: archive\n    location: data/b/weekly\n"
            "    archive_of: {dataset: a.b, schedule: 7d, retention: 90d}\n    columns: [user_id]\n")
    root = workspace(tmp_path, text)
    assert f"catalog.a.w.location: {root}/data/b/weekly lies inside the location of a.b" in refused(root)


def test_a_location_from_the_discovered_catalog_names_its_line_there(tmp_path: Path) -> None:
    discovered = "version: 1\ncatalog:\n  a.c:\n    format: parquet\n    location: data/b\n    columns: [user_id]\n"
    root = workspace(tmp_path, f"catalog:\n  a.b: {entry('data/b')}\n", discovered)
    assert (f"{root}/catalog.discovered.yaml:5: catalog.a.c.location: {root}/data/b is also the location of a.b "
            f"({root}/piitracer.yaml:2: catalog.a.b.location)") in refused(root)


def test_a_view_or_an_external_system_has_no_files_piitracer_touches(tmp_path: Path) -> None:
    text = (f"catalog:\n  a.b: {entry('data/b')}\n  a.v: {{format: view, location: data/b, columns: [user_id]}}\n"
            "  a.x: {format: external, location: data/b, owner: team, columns: [user_id]}\n")
    assert run(workspace(tmp_path, text))[0] == 0


def test_the_repository_fixtures_still_load(tmp_path: Path) -> None:
    """lineage_fixtures (the demo's workspace) has no shared or nested location: it loads as before."""
    assert len(piitracer.load_workspace(FIXTURES).config.catalog) > 20
