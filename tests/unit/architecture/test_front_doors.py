"""One session, many front doors (issue 39.1): the CLI, the console, the HTTP endpoint and the demo
call the session's use cases (:mod:`piitracer.api.session`); none opens the request store, the
audit log, the journal or the lineage endpoint's store itself. A test fails when a front door does."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

from paths import PACKAGE

# Who opens piitracer's stores: the session (and the functions below it that receive them).
OPENERS = {"request_store", "audit_log", "RequestStore", "AuditLog", "Journal", "ReceivedEvents"}
FRONT_DOORS = ("cli", "console", "serve", "api/demo.py", "api/demo_shred.py")


def stores_opened(root: Path = PACKAGE) -> list[str]:
    """``file:line: name`` of every call in a front door that opens a store."""
    found = []
    for door in FRONT_DOORS:
        place = root / door
        for path in sorted([place] if place.suffix == ".py" else place.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Call):
                    func = node.func
                    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
                    if name in OPENERS:
                        found.append(f"{path.relative_to(root)}:{node.lineno}: {name}")
    return found


def test_no_front_door_opens_a_store_itself() -> None:
    assert stores_opened() == []


def test_the_check_catches_a_front_door_that_opens_one(tmp_path: Path) -> None:
    root = tmp_path / "piitracer"
    shutil.copytree(PACKAGE, root, ignore=shutil.ignore_patterns("__pycache__"))
    with (root / "cli" / "requests.py").open("a") as module:
        module.write("\n\ndef sneak(workspace):\n    from piitracer.api import request_store\n"
                     "    return request_store(workspace)\n")
    with (root / "api" / "demo.py").open("a") as module:
        module.write("\n\ndef sneak(workspace, key):\n    from piitracer.api import audit_log\n"
                     "    return audit_log(workspace, key=key)\n")
    assert [line.split(":")[0] for line in stores_opened(root)] == ["cli/requests.py", "api/demo.py"]


def test_the_demo_is_a_script_over_the_session() -> None:
    """The demo's flow calls the session's plan, execute, verify, attest, close, report and
    certificate: the checks execute makes (seal, preflight, origin) and the failed-run record
    cannot drift from the CLI's again."""
    tree = ast.parse((PACKAGE / "api" / "demo.py").read_text())
    # run_demo and the function it attests the person steps with (the issue-52 test attests with it too)
    flow = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in ("run_demo", "attest_as_simulated_owners")]
    assert len(flow) == 2
    called = {node.func.attr for function in flow for node in ast.walk(function) if isinstance(node, ast.Call)
              and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
              and node.func.value.id == "session"}
    assert {"plan", "execute", "verify", "attest", "close", "report", "certificate"} <= called
