"""``llamaindex:CLASS``: a node parser of llama-index-core, run on one Document per text.

Each node's text is its chunk, and its ``start_char_idx`` the offset LlamaIndex reports (used where it
checks out). LlamaIndex's text splitters count tokens with tiktoken's cl100k_base, which llama-index-core
ships in its own cache, so they run offline.
"""

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
    return issubclass(cls, module.NodeParser)


def _split(parser: Any, text: str) -> list[Located | str]:
    from llama_index.core import Document

    nodes = parser.get_nodes_from_documents([Document(text=text)])
    return [Located(node.text, node.start_char_idx) for node in nodes]


LIBRARY = Library(
    module="llama_index.core.node_parser", package="llama-index-core", accepts=_accepts, split=_split,
    refused={
        "HierarchicalNodeParser": Refused("it returns nested chunks at several sizes, each text once per level",
                                          "recursive or sentence at one size (a sweep compares sizes)"),
        "JSONNodeParser": Refused("it parses the JSON and returns re-serialised pieces of it", "recursive"),
        "HTMLNodeParser": Refused("it strips the HTML markup and returns the text between the tags", "recursive"),
        "MarkdownElementNodeParser": Refused("it rewrites tables and elements with a language model", "markdown"),
        "UnstructuredElementNodeParser": Refused("it rewrites tables and elements with a language model",
                                                 "markdown"),
        "LlamaParseJsonNodeParser": Refused("it reads LlamaParse's JSON, not the document text", "markdown"),
    },
)


def build(kind: Adapter, params: ChunkParams) -> AdapterSplitter:
    return build_adapter(kind, LIBRARY, params.options, params.source)
