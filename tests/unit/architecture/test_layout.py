"""The layout of issue 34: one module per use case under ``piitracer/api`` above the rooms, the CLI
above the API, no import circle between two modules, no module above 600 lines, and planning that
loads only what it uses; and issue 39.2's public seams: no private name imported across modules, no
class that reads an attribute it never defines (a mixin's implicit contract), only the layout module
spelling the state folder. The import-direction rules themselves are tests/unit/architecture/test_layers.py's;
each check here is also run on a copy of the package with a wrong line put in, to show it catches it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from paths import TESTS
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


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(root: Path = PACKAGE) -> list[str]:
    """Every import of a private name of another module of the package (issue 39.2): ``from
    piitracer.x import _y``, ``from .x import _y``, ``from . import _x``, ``import piitracer._x``,
    ``from piitracer._x import y``. A name used by another module is public."""
    import ast

    found = []
    for path in package_modules(root):
        package = package_of(path, root)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                taken = [(alias.name, alias.name) for alias in node.names if alias.name.split(".")[0] == "piitracer"]
                bad = [shown for module, shown in taken if any(map(is_private, module.split(".")))]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    module = ".".join(base[: len(base) - (node.level - 1)] + ([node.module] if node.module else []))
                elif node.module and node.module.split(".")[0] == "piitracer":
                    module = node.module
                else:
                    continue
                private_module = any(map(is_private, module.split(".")))
                bad = [alias.name for alias in node.names if private_module or is_private(alias.name)]
                bad = [f"from {module} import {name}" for name in bad]
            else:
                continue
            found += [f"{path.relative_to(root).as_posix()}:{node.lineno}: {what}" for what in bad]
    return found


def test_no_module_imports_a_private_name_of_another() -> None:
    assert private_imports() == []


def test_the_private_import_check_catches_each_form(tmp_path: Path) -> None:
    root = copy_package(tmp_path)
    (root / "ingest" / "sql" / "_rules.py").write_text('"""A private module."""\n')
    with (root / "ingest" / "sql" / "scope.py").open("a") as module:
        module.write("\nfrom piitracer.ingest.sql.expressions import _hidden\n"  # absolute
                     "from .relations import _Kept, Flow\n"  # relative, one of two names
                     "from . import _rules\n"  # a private module by a relative import
                     "import piitracer.ingest.sql._rules\n")  # a private module by its name
    assert [line.split(": ", 1)[1] for line in private_imports(root)] == [
        "from piitracer.ingest.sql.expressions import _hidden",
        "from piitracer.ingest.sql.relations import _Kept",
        "from piitracer.ingest.sql import _rules",
        "piitracer.ingest.sql._rules",
    ]
    assert all(line.startswith("ingest/sql/scope.py:") for line in private_imports(root))


# Bases whose attributes the check cannot see but which define none a subclass reads implicitly.
PLAIN_BASES = {"object", "Protocol", "ABC", "Generic"}


def implicit_attribute_contracts(root: Path = PACKAGE) -> list[str]:
    """Every class of the package that reads ``self.x`` where neither it nor a base defines ``x``
    (a method, a class attribute or annotation, an assignment to ``self.x``): a mixin that relies on
    what its subclass happens to set (issue 39.2: such a part becomes an object the class composes,
    given its inputs as arguments). A class with a base from outside the package (pydantic's
    BaseModel, an exception, a library's class) is not judged: its base's attributes are unknown."""
    import ast

    classes: dict[str, list[ast.ClassDef]] = {}
    where: dict[int, str] = {}
    for path in package_modules(root):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, []).append(node)
                where[id(node)] = f"{path.relative_to(root).as_posix()}:{node.lineno}"

    def bases(node: ast.ClassDef) -> list[str]:
        names = []
        for base in node.bases:
            base = base.value if isinstance(base, ast.Subscript) else base
            names.append(base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else "?")
        return names

    def own(node: ast.ClassDef) -> set[str]:
        names = set()
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(item.name)
            elif isinstance(item, (ast.Assign, ast.AnnAssign)):
                for target in item.targets if isinstance(item, ast.Assign) else [item.target]:
                    names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        return names | {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
                        and isinstance(n.value, ast.Name) and n.value.id == "self"}

    def defined(name: str, seen: frozenset[str] = frozenset()) -> set[str] | None:
        """What a class and its bases define; None when a base is not the package's."""
        names: set[str] = set()
        for node in classes[name]:
            names |= own(node)
            for base in bases(node):
                if base in classes and base not in seen:
                    inherited = defined(base, seen | {name})
                    if inherited is None:
                        return None
                    names |= inherited
                elif base not in PLAIN_BASES:
                    return None
        return names

    found = []
    for name, nodes in sorted(classes.items()):
        names = defined(name)
        if names is None:
            continue
        for node in nodes:
            read = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)
                    and isinstance(n.value, ast.Name) and n.value.id == "self"}
            missing = sorted(attr for attr in read - names if not attr.startswith("__"))
            if missing:
                found.append(f"{where[id(node)]}: {name} reads {', '.join(missing)}")
    return found


def test_no_class_reads_an_attribute_it_never_defines() -> None:
    assert implicit_attribute_contracts() == []


def test_the_attribute_contract_check_catches_a_mixin(tmp_path: Path) -> None:
    root = copy_package(tmp_path)
    with (root / "ingest" / "sql" / "relations.py").open("a") as module:
        module.write("\n\nclass Describes:\n"
                     "    def describe(self) -> str:\n"
                     "        return f'{self.label}: {self.column_names()} {self.rows}'\n\n\n"
                     "class Described(Describes, Relation):\n"
                     "    rows = 0\n")
    assert [line.split(": ", 1)[1] for line in implicit_attribute_contracts(root)] == [
        "Describes reads column_names, label, rows"]


def test_no_two_test_modules_share_a_basename() -> None:
    """pytest's default import mode imports a test module by its basename: a second module of
    the same name anywhere under tests/ stops collection of the whole suite ('import file
    mismatch', CI exit 2)."""
    seen: dict[str, list[str]] = {}
    for path in sorted(TESTS.rglob("test_*.py")):
        seen.setdefault(path.name, []).append(str(path.relative_to(TESTS)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}
