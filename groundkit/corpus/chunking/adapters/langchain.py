"""``langchain:CLASS``: a splitter of langchain-text-splitters; ``split_text`` gives texts, located in order."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

from groundkit.corpus.chunking.adapters import AdapterSplitter, Library, Refused
from groundkit.corpus.chunking.adapters import build as build_adapter
from groundkit.corpus.chunking.checked import Located

if TYPE_CHECKING:
    from groundkit.config import ChunkParams
    from groundkit.corpus.chunking.kinds import Adapter


def _accepts(module: ModuleType, cls: type) -> bool:
    return issubclass(cls, module.TextSplitter) and cls is not module.TextSplitter


def _split(splitter: Any, text: str) -> list[Located | str]:
    return list(splitter.split_text(text))


_HEADINGS = Refused("it strips the heading lines and returns each section's body with its headings as metadata",
                    "markdown (with chunk.context: headings for the heading path)")
_HTML = Refused("it strips the HTML markup and returns the text between the tags", "recursive, over the extracted "
                "text of the documents")

LIBRARY = Library(
    module="langchain_text_splitters", package="langchain-text-splitters", accepts=_accepts, split=_split,
    refused={
        "MarkdownHeaderTextSplitter": _HEADINGS,
        "ExperimentalMarkdownSyntaxTextSplitter": _HEADINGS,
        "HTMLHeaderTextSplitter": _HTML,
        "HTMLSectionSplitter": _HTML,
        "HTMLSemanticPreservingSplitter": _HTML,
        "RecursiveJsonSplitter": Refused("it parses the JSON and returns re-serialised pieces of it", "recursive"),
    },
)


def build(kind: Adapter, params: ChunkParams) -> AdapterSplitter:
    return build_adapter(kind, LIBRARY, params.options, params.source)
