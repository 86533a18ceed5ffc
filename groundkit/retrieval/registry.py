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


def search_each(retriever: Retriever, queries: Sequence[str], depth: int) -> list[Ranking]:
    """``retriever.search(query, depth)`` for every query, in order, with a progress bar on a terminal."""
    return [list(retriever.search(query, depth)) for query in track(queries, desc="retrieve", unit="query")]


def retrieve(params: Params, sources: Sources, queries: Sequence[tuple[str, str]], *,
             search: Callable[[Retriever, Sequence[str], int], list[Ranking]] = search_each) -> Run:
    """Rank passages for every ``(query_id, query)`` with the retriever ``params`` names, or read its run.

    ``search`` answers all the queries with the built retriever (an engine's, groundkit/execution/).
    """
    kind = kind_of(params.retrieve.retriever)
    if not kind.searches:
        run: Run = IMPLEMENTATIONS[kind].read(params, sources, [query_id for query_id, _ in queries])
        return run
    retriever = build_retriever(params, sources.chunks() if kind.needs_chunks else [], sources.index_dir,
                                sources.embeddings_dir)
    ranked = search(retriever, [query for _, query in queries], params.retrieve.depth)
    rankings: dict[str, list[tuple[str, float | None]]] = {
        query_id: list(ranking) for (query_id, _), ranking in zip(queries, ranked, strict=True)
    }
    return Run(rankings, [])
