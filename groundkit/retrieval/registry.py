"""The retriever registry: each kind of retriever paired with the module that implements it.

A kind that searches is built by its module's ``build(params, chunks, index_dir,
embeddings_dir)``; one that reads another system's run by ``read(params, sources,
query_ids)``. The modules are imported here, plainly, so that the retrieve stage's
import closure (and so its DVC deps) holds every retriever's code; torch stays
out, imported inside groundkit/retrieval/dense.py only when a dense model runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from groundkit._progress import track
from groundkit.retrieval import bm25, dense, external, hybrid, plugin
from groundkit.retrieval.bm25 import BM25Index
from groundkit.retrieval.kinds import (
    BM25,
    DENSE,
    EXTERNAL,
    HYBRID,
    PYTHON,
    Ranking,
    Retriever,
    RetrieverKind,
    Run,
    Sources,
    kind_of,
)

if TYPE_CHECKING:
    from groundkit.config import Params
    from groundkit.corpus.passage import Chunk

IMPLEMENTATIONS: dict[RetrieverKind, ModuleType] = {
    BM25: bm25, DENSE: dense, HYBRID: hybrid, EXTERNAL: external, PYTHON: plugin,
}
"""The module of every kind in ``kinds.RETRIEVERS``."""


def build_retriever(params: Params, chunks: Sequence[Chunk], index_dir: Path, embeddings_dir: Path) -> Retriever:
    """The retriever ``params.retrieve.retriever`` names, ready to search ``chunks``."""
    kind = kind_of(params.retrieve.retriever)
    if not kind.searches:
        raise ValueError(f"{params.retrieve.retriever!r} is not a retriever that searches chunks")
    built: Retriever = IMPLEMENTATIONS[kind].build(params, chunks, index_dir, embeddings_dir)
    return built


def retrieve(params: Params, sources: Sources, queries: Sequence[tuple[str, str]], *,
             search_index: Callable[[BM25Index, Sequence[str], int], list[Ranking]] | None = None) -> Run:
    """Rank passages for every ``(query_id, query)`` with the retriever ``params`` names, or read its run.

    ``search_index`` answers every query at once when the retriever is a BM25 index (an engine's
    search, groundkit/execution/); other retrievers are asked one query at a time.
    """
    kind = kind_of(params.retrieve.retriever)
    if not kind.searches:
        run: Run = IMPLEMENTATIONS[kind].read(params, sources, [query_id for query_id, _ in queries])
        return run
    retriever = build_retriever(params, sources.chunks() if kind.needs_chunks else [], sources.index_dir,
                                sources.embeddings_dir)
    depth, texts = params.retrieve.depth, [query for _, query in queries]
    if search_index is not None and isinstance(retriever, BM25Index):
        ranked = search_index(retriever, texts, depth)
    else:
        ranked = [list(retriever.search(query, depth)) for query in track(texts, desc="retrieve", unit="query")]
    rankings: dict[str, list[tuple[str, float | None]]] = {
        query_id: list(ranking) for (query_id, _), ranking in zip(queries, ranked, strict=True)
    }
    return Run(rankings, [])
