"""``chonkie:CLASS``: a Chonkie chunker; each chunk's ``start_index`` is used where it checks out."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

from groundkit.corpus.chunking.adapters import AdapterSplitter, Library
from groundkit.corpus.chunking.adapters import build as build_adapter
from groundkit.corpus.chunking.checked import Located

if TYPE_CHECKING:
    from groundkit.config import ChunkParams
    from groundkit.corpus.chunking.kinds import Adapter


def _accepts(module: ModuleType, cls: type) -> bool:
    return issubclass(cls, module.BaseChunker) and cls is not module.BaseChunker


def _split(chunker: Any, text: str) -> list[Located | str]:
    return [Located(chunk.text, chunk.start_index) for chunk in chunker.chunk(text)]


LIBRARY = Library(module="chonkie", package="chonkie", accepts=_accepts, split=_split)


def build(kind: Adapter, params: ChunkParams) -> AdapterSplitter:
    return build_adapter(kind, LIBRARY, params.options, params.source)
