"""A judge's name, parsed once: ``openai:MODEL`` or ``python:MODULE:FACTORY``.

A leaf module (nothing of the HTTP client): params validation parses ``judge.model`` with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from groundkit.errors import FixableValueError

_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
FIX = ("name the judge as openai:MODEL (an OpenAI-compatible chat-completions endpoint, judge.base_url) or "
       "python:MODULE:FACTORY (your own code)")


@dataclass(frozen=True)
class JudgeSpec:
    """A parsed judge name. ``kind`` is ``openai`` or ``python``; ``spec`` is the name as written, the judge's id
    in every label and cache key."""

    spec: str
    kind: str
    model: str = ""
    module: str = ""
    factory: str = ""


def parse_judge(name: str) -> JudgeSpec:
    """Parse a judge's name (the one place a judge's name is split).

    Raises:
        FixableValueError: the name is neither form.
    """
    spec = name
    kind, _, rest = name.partition(":")
    if kind == "openai":
        if not rest.strip() or rest != rest.strip():
            raise FixableValueError(f"{spec!r} names no model after openai:", FIX)
        return JudgeSpec(spec, "openai", model=rest)
    if kind == "python":
        module, _, factory = rest.partition(":")
        if not _MODULE.match(module) or not _NAME.match(factory):
            raise FixableValueError(f"{spec!r} is not python:MODULE:FACTORY (a dotted module, a function name)", FIX)
        return JudgeSpec(spec, "python", module=module, factory=factory)
    raise FixableValueError(f"{spec!r} is not a judge groundkit knows", FIX)
