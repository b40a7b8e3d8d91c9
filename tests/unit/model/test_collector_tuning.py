"""The CLI process tunes CPython's cyclic collector for one command (model.gc_pause): a cold
`plan` at 100k datasets spends a third of its CPU in generation-0 collections otherwise
(benchmarks/RESULTS.md 7). A library caller's process is not piitracer's: importing the API
leaves the collector as it was."""

from __future__ import annotations

import subprocess
import sys

from piitracer.model.gc_pause import COMMAND_THRESHOLDS


def _thresholds_after(statement: str) -> tuple[int, ...]:
    code = f"import gc; {statement}; print(*gc.get_threshold())"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return tuple(int(part) for part in out.split())


def test_the_cli_process_collects_less_often():
    assert _thresholds_after("import piitracer.cli") == COMMAND_THRESHOLDS


def test_importing_the_api_leaves_the_callers_collector_alone():
    default = _thresholds_after("pass")
    assert default != COMMAND_THRESHOLDS
    assert _thresholds_after("import piitracer, piitracer.api; from piitracer.api import plan_deletion") == default


def test_the_cli_process_freezes_what_is_alive_at_exit():
    """The last full collection at exit skips what the command left alive (gc.freeze): a handler
    registered before piitracer.cli's runs after its freeze and sees the frozen objects."""
    code = ("import atexit, gc\n"
            "atexit.register(lambda: print('frozen', gc.get_freeze_count()))\n"
            "import piitracer.cli\n"
            "kept = [object() for _ in range(1000)]\n")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    assert out[0] == "frozen" and int(out[1]) > 1000
    library = subprocess.run([sys.executable, "-c", code.replace("piitracer.cli", "piitracer.api")], check=True,
                             capture_output=True, text=True).stdout.split()
    assert library == ["frozen", "0"]
