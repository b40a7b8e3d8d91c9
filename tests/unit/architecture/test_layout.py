"""The layout of issue 34: one module per use case under ``piitracer/api`` above the rooms, the CLI
above the API, no import circle between two modules, no module above 600 lines, and planning that
loads only what it uses. The import-direction rules themselves are tests/unit/architecture/test_layers.py's; here
they are run on a copy of the package with a wrong import put in, to show they catch it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from test_layers import PACKAGE, all_violations, imported_modules, package_modules, package_of

MAX_LINES = 600
# A module may be longer when it says why in a comment starting with this.
LONGER_BECAUSE = "# Longer than 600 lines:"
# Modules above 600 lines that were not split with issue 34 (other work was changing them then):
# their owners split them or put the LONGER_BECAUSE comment in them, then drop them from here.
NOT_SPLIT_YET: dict[str, str] = {}
# An import circle that was there before issue 34 and is not the api's, cli's or audit's.
KNOWN_CIRCLES = [["piitracer.demo", "piitracer.demo.builder"]]


def copy_package(tmp_path: Path) -> Path:
    root = tmp_path / "piitracer"
    shutil.copytree(PACKAGE, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_a_wrong_import_in_a_copy_of_the_package_is_caught(tmp_path: Path) -> None:
    root = copy_package(tmp_path)
    with (root / "verify" / "verifier.py").open("a") as module:  # a room reaching up into the API
        module.write("\nfrom piitracer.api import verify_plan\n")
    with (root / "api" / "plan.py").open("a") as module:  # the API reaching up into the CLI
        module.write("\nfrom piitracer.cli.terminal import console\n")
    with (root / "audit" / "store.py").open("a") as module:  # a room reaching into the CLI, by a relative import
        module.write("\nfrom ..cli import main\n")
    found = sorted(set(all_violations(root)) - set(all_violations()))
    assert [line.split(":")[0] for line in found] == ["piitracer/api/plan.py", "piitracer/audit/store.py",
                                                       "piitracer/verify/verifier.py"]
    assert "layer 'api' imports 'piitracer.cli.terminal'" in found[0]
    assert "layer 'audit' imports 'piitracer.cli'" in found[1]
    assert "layer 'verify' imports 'piitracer.api'" in found[2]


def import_circles(root: Path = PACKAGE) -> list[list[str]]:
    """Every set of modules that import each other, directly or round a circle (at the top of a
    module or inside a function alike): the strongly connected components of the import graph."""
    modules = {".".join(path.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__"): path
               for path in package_modules(root)}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for _, imported in imported_modules(path.read_text(), package_of(path, root)):
            parts = imported.split(".")
            while parts and ".".join(parts) not in modules:  # `from a.b import c`: c may be a name in a.b
                parts.pop()
            if parts and ".".join(parts) != name:
                targets.add(".".join(parts))
        graph[name] = targets
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(circles)


def test_no_two_modules_import_each_other() -> None:
    assert [circle for circle in import_circles() if circle not in KNOWN_CIRCLES] == []


def test_the_circle_check_catches_the_audit_store_and_verifier_importing_each_other(tmp_path: Path) -> None:
    root = copy_package(tmp_path)
    verifier = root / "audit" / "verify.py"
    verifier.write_text(verifier.read_text() + "\nfrom piitracer.audit.store import AuditLog\n")
    assert ["piitracer.audit.store", "piitracer.audit.verify"] in import_circles(root)


def test_no_module_is_longer_than_600_lines() -> None:
    long = {}
    for path in package_modules():
        text = path.read_text()
        name = str(path.relative_to(PACKAGE))
        if text.count("\n") > MAX_LINES and LONGER_BECAUSE not in text and name not in NOT_SPLIT_YET:
            long[name] = text.count("\n")
    assert long == {}


def test_importing_planning_loads_neither_the_verifier_nor_the_audit_trail_nor_spark() -> None:
    code = ("import sys, piitracer, piitracer.api.plan\n"
            "print(' '.join(sorted(m for m in sys.modules if m.startswith(('piitracer', 'pyspark', 'pyarrow')))))")
    loaded = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    assert "piitracer.api.plan" in loaded
    for heavy in ("piitracer.api.verify", "piitracer.api.audit", "piitracer.api.demo", "piitracer.api.execute",
                  "piitracer.verify", "piitracer.demo", "pyspark", "pyarrow"):
        assert heavy not in loaded, f"import piitracer.api.plan loaded {heavy}"


def state_paths_spelled(root: Path = PACKAGE) -> list[str]:
    """Every string literal in code (docstrings aside) that spells a path of piitracer's state
    folder (``.piitracer``, ``.piitracer/...``, ``.../.piitracer``) outside the layout module."""
    import ast
    import re

    spelled = re.compile(r"^\.piitracer(/|$)|/\.piitracer(/|$)")
    found = []
    for path in package_modules(root):
        if path.relative_to(root).as_posix() == "workspace/layout.py":
            continue
        tree = ast.parse(path.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings \
                    and spelled.search(node.value.strip()):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {node.value!r}")
    return found


def test_only_the_layout_module_spells_the_state_folder() -> None:
    assert state_paths_spelled() == []


def test_the_state_folder_check_catches_a_spelled_path(tmp_path: Path) -> None:
    root = copy_package(tmp_path)
    with (root / "api" / "audit.py").open("a") as module:
        module.write('\nEXTRA = Path(".piitracer") / "extra.sqlite"\n')
    assert [line.split(":")[0] for line in state_paths_spelled(root)] == ["api/audit.py"]
