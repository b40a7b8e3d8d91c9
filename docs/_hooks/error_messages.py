"""The troubleshooting page's reference, generated from the code at every build: for each named kind
of error (``piitracer.model.errors.error_kinds``) its exit code, when it happens and what to do,
then every message piitracer raises of that kind, as written in the code (``raise SomeError(f"...")``
read from the source with ``ast``; a value only known at run time is shown as ``‹name›``), with the
module that raises it. A message built elsewhere and raised by name is not listed (its kind still is).
Used by the ``exit_codes`` hook; a test checks every kind and some known messages are on the page."""

from __future__ import annotations

import ast
import html
import importlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "piitracer"


def _error_classes() -> dict[str, list[type]]:
    """Class name -> the PiitracerError subclasses of that name (every module imported once)."""
    from piitracer.model.errors import PiitracerError

    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        importlib.import_module(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    found: dict[str, list[type]] = {}
    todo = [PiitracerError]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.startswith("piitracer") and sub not in found.get(sub.__name__, []):
                found.setdefault(sub.__name__, []).append(sub)
                todo.append(sub)
    return found


def _placeholder(node: ast.expr) -> str:
    """A short name for a value known only at run time: ``path``, ``error``, ``…``."""
    while isinstance(node, (ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return "…"


def _template(node: ast.expr) -> str | None:
    """The message of a string literal, an f-string or a concatenation of them; None otherwise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else f"‹{_placeholder(part.value)}›"
                       for part in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _template(node.left), _template(node.right)
        return None if left is None or right is None else left + right
    return None


def messages_by_kind() -> dict[str, list[tuple[str, str]]]:
    """Kind -> sorted ``(message, module)`` of every message raised with a literal text."""
    from piitracer.model.errors import kind_of

    classes = _error_classes()
    found: dict[str, set[tuple[str, str]]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = str(path.relative_to(PACKAGE.parent))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args):
                continue
            name = node.exc.func.attr if isinstance(node.exc.func, ast.Attribute) else getattr(node.exc.func, "id", "")
            candidates = classes.get(name, [])
            if not candidates:
                continue
            kinds = {kind_of(candidate).kind for candidate in candidates}
            message = _template(node.exc.args[0])
            if message is None or len(kinds) != 1:
                continue
            found.setdefault(kinds.pop(), set()).add((" ".join(message.split()), module))
    return {kind: sorted(messages) for kind, messages in found.items()}


def _cell(text: str) -> str:
    """A message as a table cell: HTML-escaped, pipes escaped, backticks kept when they pair."""
    text = html.escape(text, quote=False).replace("|", "\\|").replace("*", "\\*")
    return text if text.count("`") % 2 == 0 else text.replace("`", "&#96;")


def troubleshooting_reference() -> str:
    """The Markdown that replaces ``<!-- error-kinds -->`` on the troubleshooting page."""
    from piitracer.model.errors import error_kinds

    messages = messages_by_kind()
    out = []
    for kind in error_kinds():
        found = messages.get(kind.kind, [])
        out += [f"### `{kind.kind}` (exit {kind.exit_code})", "",
                " ".join((kind.__doc__ or "").split()), "",
                f"**What to do:** {kind.what_to_do}.", ""]
        if found:
            out += [f"{len(found)} message(s) of this kind:", "", "| message | raised in |", "| --- | --- |"]
            out += [f"| {_cell(message)} | `{module}` |" for message, module in found]
            out.append("")
    return "\n".join(out)
