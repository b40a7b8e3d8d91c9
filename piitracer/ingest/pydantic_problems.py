"""Pydantic validation errors as one-line reasons for ingest problems.

``describe`` turns a ``ValidationError`` into ``run.runId: Field required; inputs: expected a
list``: the field's path in the document and what was expected, wording a data engineer reads
without knowing pydantic. ``validate_part`` validates one part of a document and notes the reason
instead of raising, so one bad part does not hide the others. ``in_words`` says one of pydantic's
errors about a file a person wrote (``piitracer.yaml``) in that file's words: ``expected a list``,
not ``Input should be a valid tuple``; an unknown key with the nearest key the place takes (``did
you mean 'lineage'?``), not ``Extra inputs are not permitted``.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

_EXPECTED = {
    "string_type": "expected a string",
    "list_type": "expected a list",
    "dict_type": "expected an object",
    "model_type": "expected an object",
    "model_attributes_type": "expected an object",
    "bool_type": "expected a boolean",
    "bool_parsing": "expected a boolean",
}

_M = TypeVar("_M", bound=BaseModel)


def validate_part(model_type: type[_M], value: Any, path: str, problems: list[str]) -> _M | None:
    """Validate a facet part; on failure note why (prefixed by ``path``) and return None."""
    try:
        return model_type.model_validate(value)
    except ValidationError as exc:
        problems.append(describe(exc, prefix=path))
        return None


def describe(exc: ValidationError, prefix: str = "") -> str:
    """``run.runId: Field required; inputs: expected a list`` from pydantic's errors."""
    reasons = []
    for error in exc.errors():
        where = _join_path(prefix, error["loc"])
        kind = error["type"]
        if kind in _EXPECTED:
            what = _EXPECTED[kind]
        elif kind == "literal_error":
            what = f"expected one of {error['ctx']['expected']}, got {error['input']!r}"
        elif kind == "value_error":
            what = str(error["ctx"]["error"])
        else:
            what = error["msg"]
        reasons.append(f"{where}: {what}" if where else what)
    return "; ".join(reasons)


def _join_path(prefix: str, loc: tuple[int | str, ...]) -> str:
    path = prefix
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


# What each of pydantic's error types means for a value in a file a person wrote.
_WORDS = {
    "missing": "required",
    "string_type": "expected a text", "string_sub_type": "expected a text",
    "list_type": "expected a list", "tuple_type": "expected a list", "set_type": "expected a list",
    "frozen_set_type": "expected a list", "iterable_type": "expected a list",
    "dict_type": "expected a mapping of keys", "model_type": "expected a mapping of keys",
    "model_attributes_type": "expected a mapping of keys", "dataclass_type": "expected a mapping of keys",
    "bool_type": "expected true or false", "bool_parsing": "expected true or false",
    "int_type": "expected a whole number", "int_parsing": "expected a whole number",
    "int_from_float": "expected a whole number", "float_type": "expected a number", "float_parsing": "expected a number",
    "datetime_type": "expected a date and time (2026-11-20T09:00:00Z)",
    "datetime_parsing": "expected a date and time (2026-11-20T09:00:00Z)",
    "datetime_from_date_parsing": "expected a date and time (2026-11-20T09:00:00Z)",
    "date_type": "expected a date (2026-11-20)", "date_parsing": "expected a date (2026-11-20)",
    "none_required": "expected nothing (null)",
}
_LIMITS = {"greater_than": "greater than {gt}", "greater_than_equal": "at least {ge}", "less_than": "less than {lt}",
           "less_than_equal": "at most {le}"}


def in_words(problem: dict[str, Any], model: type[BaseModel] | None = None, loc: tuple[Any, ...] | None = None) -> str:
    """One pydantic error (an item of ``ValidationError.errors()``) in the words of the file the
    data came from: what was expected there, and for an unknown key the nearest key that place
    takes. ``model`` is the document's model (for the keys a place takes); ``loc`` the error's
    path without pydantic's validator tags (default: its own)."""
    kind, message, context = problem["type"], problem.get("msg", ""), problem.get("ctx") or {}
    loc = tuple(problem["loc"]) if loc is None else loc
    if kind == "extra_forbidden":
        return unknown_key(str(loc[-1]) if loc else "", keys_at(model, loc[:-1]) if model is not None else None,
                           _section(loc[:-1]))
    if kind in _WORDS:
        return _WORDS[kind]
    if kind in ("enum", "literal_error") and "expected" in context:
        return f"expected {context['expected']}"
    if kind in _LIMITS:
        return "expected a number " + _LIMITS[kind].format(**context)
    if kind == "value_error":
        return message.removeprefix("Value error, ")
    if kind == "assertion_error":
        return message.removeprefix("Assertion failed, ")
    return re.sub(r"^Input should be ", "expected ", message)


def as_written(value: Any) -> str:
    """A value as the file wrote it: ``null``, ``true``, ``'orc'``, ``5``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def unknown_key(key: str, known: list[str] | None, section: str) -> str:
    """``not a catalog field: did you mean 'columns'?`` (or the keys the place takes, when none is
    near)."""
    said = f"not a {section} field"
    if not known:
        return said
    nearest = difflib.get_close_matches(key.lower(), known, n=1, cutoff=0.6)
    if nearest:
        return f"{said}: did you mean {nearest[0]!r}?"
    return f"{said} (expected one of {', '.join(sorted(known))})"


def _section(parent: tuple[Any, ...]) -> str:
    """How a person names the place a key sits in: the workspace, a catalog entry, a section."""
    if not parent:
        return "workspace"
    if parent[0] == "catalog" and len(parent) == 2:
        return "catalog"
    return ".".join(str(part) for part in parent if not isinstance(part, int) and not (parent[0] == "catalog"
                                                                                       and part == parent[1]))


def keys_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str] | None:
    """The keys the mapping at ``loc`` of a ``model`` document takes (field names and aliases);
    None when the place is not a model (a free mapping) or the path leads nowhere known."""
    annotation: Any = model
    for part in loc:
        annotation = _model_or_container(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = annotation.model_fields.get(str(part)) or next(
                (f for f in annotation.model_fields.values() if f.alias == part), None)
            if field is None:
                return None
            annotation = field.annotation
        elif typing.get_origin(annotation) in (dict, Mapping):
            annotation = typing.get_args(annotation)[1]
        elif typing.get_origin(annotation) in (tuple, list, set, frozenset) and isinstance(part, int):
            annotation = typing.get_args(annotation)[0]
        else:
            return None
    annotation = _model_or_container(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return sorted({name for name in annotation.model_fields}
                      | {f.alias for f in annotation.model_fields.values() if f.alias})
    return None


def _model_or_container(annotation: Any) -> Any:
    """``X | None``, ``Optional[X]`` and ``Annotated[X, ...]`` as ``X`` (the model, when one of a union is)."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            models = [a for a in members if isinstance(a, type) and issubclass(a, BaseModel)]
            annotation = models[0] if models else members[0] if len(members) == 1 else annotation
            if not models and len(members) != 1:
                return annotation
        else:
            return annotation


__all__ = ["as_written", "describe", "in_words", "keys_at", "unknown_key", "validate_part"]
