"""Docstrings that teach (issue 39.5): every public function and method of the API a notebook or a
program calls (the session, its keys, ``piitracer.open`` and the use cases' functions
``piitracer.api`` exports) says what it takes, gives and refuses in the Google style the reference
site renders (mkdocs.yml: ``docstring_style: google``):

- ``Args:`` names every parameter, and only parameters the function has;
- ``Returns:`` (or ``Yields:``) when it gives something;
- ``Raises:`` names an exception class that exists, and every error the function raises itself
  (``raise SomeError(...)`` in its body) is named there or through a base class.

What the errors of the functions it calls are is the author's judgement; what it raises itself is
checked."""

from __future__ import annotations

import ast
import builtins
import importlib
import textwrap

import griffe
import pytest

import piitracer.api
from paths import PACKAGE, REPO

# The use cases' modules (wiring is the API's own plumbing: a program calls the use cases).
MODULES = ("session", "keys", "lineage", "catalog", "plan", "execute", "verify", "audit", "requests", "demo",
           "demo_shred", "workspace_init")
API = griffe.load("piitracer.api", search_paths=[str(REPO)], docstring_parser="google")


def public_callables() -> list[str]:
    """``module:name`` or ``module:Class.method`` of every function and public method in scope."""
    exported = {name for name, module in piitracer.api._EXPORTS.items() if module in MODULES}
    found = []
    for module in MODULES:
        for name, member in API[module].members.items():
            if member.is_alias or name.startswith("_") or (name not in exported and module != "session"):
                continue
            if member.is_function:
                found.append(f"{module}:{name}")
            elif member.is_class:
                found += [f"{module}:{name}.{method}" for method, function in member.members.items()
                          if function.is_function and not method.startswith("_") and "property" not in function.labels]
    return sorted(found)


def sections(function: griffe.Function) -> dict[str, list]:
    parsed = function.docstring.parse("google") if function.docstring else []
    found: dict[str, list] = {}
    for section in parsed:
        found.setdefault(section.kind.value, []).extend(section.value if isinstance(section.value, list) else [section.value])
    return found


def raised_names(function: griffe.Function) -> set[str]:
    """Names of the exception classes a function raises by name in its own body."""
    tree = ast.parse(textwrap.dedent(function.source))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(target, ast.Name) and target.id[:1].isupper():
                names.add(target.id)
    return names


def class_index() -> dict[str, list[str]]:
    """Class name -> the modules of the package that define a class of that name."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(module)
    return found


CLASSES = class_index()


def resolve(name: str, function: griffe.Function, module: str) -> type | None:
    """The exception class ``name`` means in the function: a name of its module, one it imports
    inside its body, else the package's one class of that name (an error raised by a function it
    calls), else a builtin."""
    value = getattr(importlib.import_module(f"piitracer.api.{module}"), name, None)
    if value is None:
        for node in ast.walk(ast.parse(textwrap.dedent(function.source))):
            if isinstance(node, ast.ImportFrom) and node.module and name in {a.asname or a.name for a in node.names}:
                value = getattr(importlib.import_module(node.module), name, None)
    if value is None and len(CLASSES.get(name, [])) == 1:
        value = getattr(importlib.import_module(CLASSES[name][0]), name, None)
    if value is None:
        value = getattr(builtins, name, None)
    return value if isinstance(value, type) and issubclass(value, BaseException) else None


def test_the_scope_is_the_session_and_the_use_cases() -> None:
    names = public_callables()
    for expected in ("session:open", "session:Session.plan", "session:Session.execute", "keys:Keys.load",
                     "plan:plan_deletion", "plan:load_plan", "session:execute_plan", "verify:verify_plan",
                     "audit:audit_log", "demo:run_demo"):
        assert expected in names
    assert len(names) > 60


@pytest.mark.parametrize("name", public_callables())
def test_its_docstring_says_what_it_takes_gives_and_refuses(name: str) -> None:
    module, _, path = name.partition(":")
    function = API[module]
    for part in path.split("."):
        function = function[part]
    assert function.docstring and function.docstring.value.strip(), f"{name}: no docstring"
    found = sections(function)
    parameters = [p.name for p in function.parameters if p.name not in ("self", "cls")]
    documented = [p.name.lstrip("*") for p in found.get("parameters", [])]
    assert documented == [p for p in parameters if p in documented], f"{name}: Args out of the signature's order"
    assert set(parameters) - set(documented) == set(), f"{name}: Args does not name {sorted(set(parameters) - set(documented))}"
    assert set(documented) - set(parameters) == set(), f"{name}: Args names {sorted(set(documented) - set(parameters))}, not parameters"
    gives = function.returns is not None and str(function.returns) not in ("None", "'None'")
    if gives:
        assert found.get("returns") or found.get("yields"), f"{name}: no Returns: (it returns {function.returns})"
    named = {}
    for item in found.get("raises", []):
        error = resolve(str(item.annotation), function, module)
        assert error is not None, f"{name}: Raises names {item.annotation}, not an exception class it can see"
        named[str(item.annotation)] = error
    for raised in raised_names(function):
        error = resolve(raised, function, module)
        assert error is not None, f"{name}: raises {raised}, which this test cannot resolve"
        assert any(issubclass(error, documented_error) for documented_error in named.values()), \
            f"{name}: raises {raised} but its Raises: does not say so"
