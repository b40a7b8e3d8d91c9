"""``piitracer demo --shred`` refuses, in one line and before building anything, what it cannot do:
the main demo's options it has no use for, and a folder that holds another workspace (the main
demo's, or anyone's: its ``piitracer.yaml`` is never overwritten). The demo itself runs in
tests/integration/test_demo_shred.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from piitracer.cli.main import cli


@pytest.mark.parametrize("extra, named", [(["--subjects", "3"], "--subjects"), (["--no-attest"], "--no-attest"),
                                          (["--serve"], "--serve")])
def test_the_main_demos_options_are_refused_with_shred(tmp_path: Path, extra: list[str], named: str) -> None:
    result = CliRunner().invoke(cli, ["demo", "--shred", "--dir", str(tmp_path / "d"), *extra])
    assert result.exit_code == 2
    assert f"demo --shred does not take {named} (it takes --dir, --rows, --rebuild, --no-close and --output)" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "d").exists()


def test_a_folder_holding_another_workspace_is_refused_and_left_alone(tmp_path: Path) -> None:
    workspace = tmp_path / "demo"
    workspace.mkdir()
    (workspace / "piitracer.yaml").write_text("version: 1\n")
    result = CliRunner().invoke(cli, ["demo", "--shred", "--dir", str(workspace)])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == (
        f"error: {workspace / 'piitracer.yaml'}: another workspace is there (not the crypto-shredding demo's); "
        "give demo --shred another --dir")
    assert sorted(p.name for p in workspace.iterdir()) == ["piitracer.yaml"]
    assert (workspace / "piitracer.yaml").read_text() == "version: 1\n"
