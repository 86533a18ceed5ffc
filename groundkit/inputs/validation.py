"""Turning pydantic validation errors into one readable sentence."""

from __future__ import annotations

import difflib
import types
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError


def describe(exc: ValidationError, prefix: str = "", model: type[BaseModel] | None = None) -> tuple[str, str]:
    """Return ``(dotted key, problem)`` for the first error in ``exc``.

    Given the ``model`` that was validated, an unknown key names the known one it is closest to (``chunk.sise``:
    did you mean ``chunk.size``?).
    """
    error = exc.errors(include_url=False)[0]
    loc = ".".join(str(part) for part in error["loc"])
    key = f"{prefix}.{loc}" if prefix and loc else (prefix or loc)
    kind = error["type"]
    if kind == "missing":
        problem = "is required but missing"
    elif kind == "extra_forbidden":
        problem = "is not a known field (a typo?)"
        near = _nearest_field(model, error["loc"]) if model is not None else None
        if near is not None:
            parent = ".".join(str(part) for part in error["loc"][:-1])
            problem += f"; did you mean {'.'.join(filter(None, (prefix, parent, near)))}?"
    else:
        message = error["msg"]
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        given = error.get("input")
        # Echoing a whole record or params section back would bury the one value that is wrong.
        problem = message if isinstance(given, dict) else f"{message} (got {given!r})"
    return key, problem


def _nearest_field(model: type[BaseModel], loc: tuple[Any, ...]) -> str | None:
    """The field of the model at ``loc[:-1]`` whose name is closest to ``loc[-1]``, if one is close."""
    current: Any = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue  # an item of a list: ``current`` is already the item's type
        fields = getattr(current, "model_fields", None)
        if not isinstance(fields, dict) or part not in fields:
            return None
        current = _item_type(fields[part].annotation)
    fields = getattr(current, "model_fields", None)
    if not isinstance(fields, dict):
        return None
    near = difflib.get_close_matches(str(loc[-1]), sorted(fields), n=1, cutoff=0.6)
    return near[0] if near else None


def _item_type(annotation: Any) -> Any:
    """The model inside ``list[M]``, ``M | None`` and the like; the annotation itself otherwise."""
    origin = get_origin(annotation)
    if origin in (list, tuple, set, frozenset, Union, types.UnionType):
        for arg in get_args(annotation):
            found = _item_type(arg)
            if isinstance(found, type) and issubclass(found, BaseModel):
                return found
    return annotation
