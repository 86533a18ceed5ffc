"""Turning pydantic validation errors into one readable sentence."""

from __future__ import annotations

from pydantic import ValidationError


def describe(exc: ValidationError, prefix: str = "") -> tuple[str, str]:
    """Return ``(dotted key, problem)`` for the first error in ``exc``."""
    error = exc.errors(include_url=False)[0]
    loc = ".".join(str(part) for part in error["loc"])
    key = f"{prefix}.{loc}" if prefix and loc else (prefix or loc)
    kind = error["type"]
    if kind == "missing":
        problem = "is required but missing"
    elif kind == "extra_forbidden":
        problem = "is not a known field (a typo?)"
    else:
        message = error["msg"]
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        given = error.get("input")
        # Echoing a whole record or params section back would bury the one value that is wrong.
        problem = message if isinstance(given, dict) else f"{message} (got {given!r})"
    return key, problem
