"""Building a kind's ranker: the one place a kind's ``builder`` string becomes code.

A kind (groundkit/retrieval/kinds.py) names the function that builds its ranker as ``module:function``,
so the table of kinds imports no retriever. This module imports that function when a run needs it and
calls it with what the stages before retrieve wrote and the engine to hand work to.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from groundkit.config import Params
    from groundkit.retrieval.kinds import RetrieverKind
    from groundkit.retrieval.ports import Engine, Ranker, Sources

Builder = Callable[["RetrieverKind", "Sources", "Params", "Engine"], "Ranker"]
"""What a kind's ``builder`` names: (kind, sources, params, engine) -> its ranker."""


def build(kind: RetrieverKind, sources: Sources, params: Params, engine: Engine) -> Ranker:
    """The ranker of ``kind``, ready for every query; the engine runs what the kind hands to one."""
    module, _, function = kind.builder.partition(":")
    builder: Builder = getattr(importlib.import_module(module), function)
    return builder(kind, sources, params, engine)
