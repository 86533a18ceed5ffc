"""Chunking: split documents into ``[start, end)`` character spans, by the strategy ``chunk.strategy`` names.

The strategies are registered in groundkit/corpus/chunking/kinds.py, each a module of this package (or of
adapters/); groundkit/corpus/chunking/chunks.py turns their spans into chunks. The names below are
imported on first use: params validation (every stage) imports kinds.py, and so this package, but no
chunker.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from groundkit.corpus.chunking.chunks import chunk_documents, chunk_fixed, chunk_whole

__all__ = ["chunk_documents", "chunk_fixed", "chunk_whole"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("groundkit.corpus.chunking.chunks"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
