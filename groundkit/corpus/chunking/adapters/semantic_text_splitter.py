"""``semantic-text-splitter:CLASS``: ``TextSplitter`` or ``MarkdownSplitter``; ``chunk_indices`` gives each chunk
with its character offset, used where it checks out."""

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
    return cls in (module.TextSplitter, module.MarkdownSplitter)


def _split(splitter: Any, text: str) -> list[Located | str]:
    return [Located(chunk, start) for start, chunk in splitter.chunk_indices(text)]


def _arguments(options: dict[str, Any]) -> dict[str, Any]:
    # A capacity range is a tuple to the library; YAML writes it as a list: capacity: [200, 1000].
    if isinstance(options.get("capacity"), list):
        options["capacity"] = tuple(options["capacity"])
    return options


LIBRARY = Library(module="semantic_text_splitter", package="semantic-text-splitter", accepts=_accepts, split=_split,
                  arguments=_arguments)


def build(kind: Adapter, params: ChunkParams) -> AdapterSplitter:
    return build_adapter(kind, LIBRARY, params.options, params.source)
