"""Imports point one way only (design.md): model <- storage <- formats <- executor, verify;
model <- workspace (the Workspace type, its catalog layers, the state layout); model, storage, workspace <- ingest (lineage files are listed through the store), audit (its anchor is written
through it); model, storage, formats <- discover (catalog discovery); model <- crypto; graph <- planner <- executor, verify, audit, render <- api
(one module per use case, wiring the rooms) <- console (the web console, on top of serve) <- cli. The planner is pure:
no Spark, no file I/O. Relative imports and imports by name (``importlib.import_module``,
``__import__``) count like any other."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from paths import PACKAGE  # noqa: E402
LOWER = {"model": set(), "graph": {"model"}, "storage": {"model"}}
# Keys are read from files by the storage layer's one key-file reader (audit's and crypto's alike).
LOWER["crypto"] = {"model", "storage"}
# The workspace room: the Workspace every use case receives, its catalog layers, the layout of
# piitracer's own files in it. Only frozen model types below it.
LOWER["workspace"] = {"model"}
LOWER["ingest"] = {"model", "storage", "workspace"}
# Who acts (issue 50): the people file (each person's token hash and their own key, sealed under
# it) and the statements they sign; below the audit log that records and checks their signatures.
LOWER["identity"] = {"model", "crypto", "workspace"}
LOWER["formats"] = {"model", "storage"}
LOWER["planner"] = {"model", "graph"}
for _layer in ("audit", "render"):
    LOWER[_layer] = {"model", "graph", "planner"}
LOWER["audit"] = LOWER["audit"] | {"storage", "identity", "crypto"}  # the anchor is written through the store (a locked bucket);
# the people's signatures are checked with their registered keys
# Crypto-shredding (issue 42): the key vault and the pipeline's encrypt/decrypt library, beside the
# formats (the Delta vault is erased through formats.delta) and below the executor and the verifier
# that erase and prove with it; a Spark job imports it, so it never reaches up to the API or a front door.
LOWER["shred"] = {"model", "storage", "crypto", "formats"}
# The pipeline guard (issue 52): a pipeline job imports it with no workspace, so only the model below
# it, and the storage layer's private-file writer (the list it exports holds a key).
LOWER["guard"] = {"model", "storage"}
for _layer in ("executor", "verify"):
    LOWER[_layer] = {"model", "graph", "planner", "storage", "formats", "crypto", "shred"}
# The guard scan (verify/guard_scan.py) matches values with the guard's keyed hash.
LOWER["verify"] = LOWER["verify"] | {"guard"}
# Catalog discovery reads tables through the storage layer and the formats' metadata readers.
LOWER["discover"] = {"model", "storage", "formats"}
# The request store: values under per-request keys, lifecycle, close; it records in the audit log.
LOWER["requests"] = {"model", "crypto", "audit", "identity", "guard"}  # the suppression list hashes with the guard's keyed hash
# The demo lakehouse builder is wiring for `piitracer demo` only (it builds tables with Spark and
# delta-rs from the workspace's catalog and SQL): it may use every layer below the verifier. The
# crypto-shredding demo (demo --shred) writes its ciphertext and reads it back with the shred
# library under the demo's master key, as a pipeline would.
LOWER["demo"] = {"model", "workspace", "ingest", "graph", "planner", "storage", "formats", "executor", "shred", "crypto"}
# The OpenLineage endpoint: an ASGI app over the ingest layer's event store.
LOWER["serve"] = {"model", "workspace", "ingest"}
# The web console (privacy office and owners): wiring beside the CLI. It reads the request store,
# the audit log and the report's facts through the API, draws the report's diagram, and is served
# on top of the OpenLineage endpoint (it imports serve; serve never imports it). Only the CLI
# imports the console (test_only_the_cli_imports_the_console).
LOWER["console"] = {"model", "workspace", "ingest", "graph", "planner", "storage", "crypto", "audit", "render", "requests", "serve",
                    "identity",
                    "api"}
# The API wires the rooms: one module per use case, above every room, below the CLI and the console.
LOWER["api"] = set(LOWER) - {"console"}
# The CLI parses, calls one use case of the API and prints: on top of everything.
LOWER["cli"] = set(LOWER) | {"__init__"}  # ``import piitracer``: the package's names are the API's
WIRING = {"__init__"}  # piitracer/__init__.py re-exports the API's names (lazily): it may import every layer
# What "touches files or Spark" means for the pure layers.
IMPURE_MODULES = {
    "pyspark", "deltalake", "pyiceberg", "pyarrow", "fastavro", "pandas", "os", "pathlib", "io",
    "shutil", "glob", "tempfile", "sqlite3", "subprocess", "socket", "yaml",
}
PURE_LAYERS = {"planner", "graph", "model"}


def imported_modules(source: str, package: str = "piitracer") -> list[tuple[int, str]]:
    """(line, dotted module) for every import: statements (relative ones resolved against
    ``package``, the importing module's package), and calls of ``importlib.import_module`` or
    ``__import__`` with a literal name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                if node.module:
                    found.append((node.lineno, ".".join(base + [node.module])))
                    found.extend((node.lineno, ".".join(base + [node.module, alias.name])) for alias in node.names
                                 if alias.name != "*")
                else:  # from . import x, y: each name is a module of that package
                    found.extend((node.lineno, ".".join(base + [alias.name])) for alias in node.names)
            elif node.module:
                found.append((node.lineno, node.module))
                # `from a.b import c` imports the module a.b.c when there is one (a caller that
                # needs modules drops the names that are not)
                found.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names if alias.name != "*")
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in ("import_module", "__import__"):
                found.append((node.lineno, node.args[0].value))
    return found


def layer_of(path: Path, root: Path = PACKAGE) -> str:
    relative = path.relative_to(root)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def violations(layer: str, source: str, where: str, package: str | None = None) -> list[str]:
    """Every import in ``source`` (a module of ``layer``, in ``package``) that crosses the layer direction."""
    if layer in WIRING:
        return []
    allowed = LOWER[layer] | {layer}
    problems = []
    seen = set()  # one problem per line and layer (`from a.b import c` is listed as a.b and a.b.c)
    for line, module in imported_modules(source, package or f"piitracer.{layer}"):
        parts = module.split(".")
        if parts[0] == "piitracer":
            target = parts[1] if len(parts) > 1 else "__init__"
            if target not in allowed and (line, target) not in seen:
                seen.add((line, target))
                problems.append(f"{where}:{line}: layer '{layer}' imports '{module}' (allowed: {sorted(allowed)})")
        elif layer in PURE_LAYERS and parts[0] in IMPURE_MODULES:
            problems.append(f"{where}:{line}: pure layer '{layer}' imports '{module}'")
    if layer in PURE_LAYERS and "open(" in source:
        problems.append(f"{where}: pure layer '{layer}' calls open()")
    return problems


def package_modules(root: Path = PACKAGE) -> list[Path]:
    return sorted(root.rglob("*.py"))


def test_every_layer_is_known() -> None:
    for path in package_modules():
        layer = layer_of(path)
        assert layer in LOWER or layer in WIRING, f"{path}: unknown layer {layer!r}; add it to design.md and here"


def package_of(path: Path, root: Path = PACKAGE) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts if path.name == "__init__.py" else parts[:-1]).removesuffix(".__init__")


def all_violations(root: Path = PACKAGE) -> list[str]:
    """Every wrong-way import of the package at ``root`` (tests/unit/architecture/test_layout.py runs it on a copy)."""
    problems = []
    for path in package_modules(root):
        problems += violations(layer_of(path, root), path.read_text(), str(path.relative_to(root.parent)),
                               package_of(path, root))
    return problems


def test_imports_point_one_way() -> None:
    assert all_violations() == []


def test_only_the_cli_imports_the_console() -> None:
    # api and __init__ are wiring (they may import any layer), but the console sits on top of the
    # API: an import of it from below would be a circle.
    found = [f"{path.relative_to(PACKAGE.parent)}:{line}" for path in package_modules()
             if layer_of(path) not in ("cli", "console")
             for line, module in imported_modules(path.read_text(), package_of(path))
             if module == "piitracer.console" or module.startswith("piitracer.console.")]
    assert found == []


@pytest.mark.parametrize(
    ("layer", "source"),
    [
        ("model", "from piitracer.graph.lineage_graph import LineageGraph"),
        ("graph", "import piitracer.ingest.openlineage.events"),
        ("planner", "from piitracer.executor import run"),
        ("planner", "import pyspark.sql"),
        ("planner", "from pathlib import Path"),
        ("graph", "data = open('x').read()"),
        ("render", "from piitracer.cli.main import cli"),
        ("ingest", "from piitracer import api"),
        ("storage", "from piitracer.formats import iceberg"),
        ("formats", "from piitracer.executor.runner import PlanExecutor"),
        ("formats", "from ..verify import verifier"),
        ("formats", "import importlib\nimportlib.import_module('piitracer.executor.journal')"),
        ("storage", "__import__('piitracer.formats.delta')"),
        ("model", "from piitracer.storage import guard"),
        ("serve", "from piitracer.console.app import create_server"),
        ("console", "from piitracer.cli.main import cli"),
        ("requests", "from piitracer.console import tokens"),
        ("api", "from piitracer.cli.main import cli"),
        ("api", "from piitracer.cli import terminal"),
        ("api", "from piitracer.console.app import create_server"),
        ("verify", "from piitracer.api import verify_plan"),
        ("audit", "from piitracer.api.audit import audit_log"),
        ("requests", "import piitracer.cli.terminal"),
        ("executor", "from piitracer.api.wiring import execution_context"),
        ("shred", "from piitracer.api import session"),
        ("shred", "from piitracer.cli.main import cli"),
        ("shred", "from piitracer.executor.runner import PlanExecutor"),
        ("shred", "from piitracer.verify import verifier"),
        ("formats", "from piitracer.shred.vault import KeyVault"),
        ("crypto", "from piitracer.shred.keys import SubjectKey"),
    ],
)
def test_the_check_catches_a_wrong_import(layer: str, source: str) -> None:
    assert violations(layer, source, "x.py"), f"{layer}: {source!r} should be a violation"


def test_the_check_allows_the_right_direction() -> None:
    assert violations("planner", "from piitracer.graph.lineage_graph import LineageGraph", "x.py") == []
    assert violations("formats", "from . import iceberg\nfrom ..storage.guard import canonical", "x.py", "piitracer.formats") == []
    assert violations("executor", "from piitracer.formats import table_schema", "x.py") == []
    assert violations("cli", "import pyspark\nfrom piitracer.executor import x", "x.py") == []
    assert violations("cli", "from piitracer.api import plan_deletion\nfrom piitracer.console import app", "x.py") == []
    assert violations("api", "from piitracer.verify import verify_datasets\nfrom piitracer.demo import x", "x.py") == []
    assert violations("api", "from .plan import seal_plan", "x.py", "piitracer.api") == []
    assert violations("shred", "from piitracer.formats import delta\nfrom piitracer.crypto.envelope import MasterKey", "x.py") == []
    assert violations("executor", "from piitracer.shred.vault import KeyVault", "x.py") == []
    assert violations("verify", "from piitracer.shred.cipher import decrypt_array", "x.py") == []
