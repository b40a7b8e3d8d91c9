"""Pydantic validation errors as one-line reasons for ingest problems.

``describe`` turns a ``ValidationError`` into ``run.runId: Field required; inputs: expected a
list``: the field's path in the document and what was expected, wording a data engineer reads
without knowing pydantic. ``validate_part`` validates one part of a document and notes the reason
instead of raising, so one bad part does not hide the others.
"""

from __future__ import annotations

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


__all__ = ["describe", "validate_part"]
