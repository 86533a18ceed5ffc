"""The ``hybrid`` retriever: reciprocal rank fusion of BM25 and dense."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

from groundkit.corpus.passage import Chunk
from groundkit.retrieval.bm25 import load_for
from groundkit.retrieval.dense import build as build_dense
from groundkit.retrieval.ports import Ranking, Retriever
from groundkit.retrieval.searching import Searching

if TYPE_CHECKING:
    from groundkit.config import Params
    from groundkit.retrieval.kinds import RetrieverKind
    from groundkit.retrieval.ports import Engine, Sources


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[tuple[str, float]]], order_key: Mapping[str, tuple[str, int]], rrf_k: int, depth: int
) -> Ranking:
    """Fuse rankings by RRF (Cormack, Clarke and Büttcher, SIGIR 2009).

    score(d) = sum over the rankings that hold d of 1 / (rrf_k + rank(d)), ranks 1-based.
    Sums are exact fractions, so two chunks tie exactly when their sums are equal
    and the tie goes to ``order_key`` (document, start_offset); floats only for display.
    """
    fused: dict[str, Fraction] = {}
    for ranking in rankings:
        for rank, (chunk_id, _score) in enumerate(ranking, start=1):
            fused[chunk_id] = fused.get(chunk_id, Fraction(0)) + Fraction(1, rrf_k + rank)
    ordered = sorted(fused, key=lambda chunk_id: (-fused[chunk_id], order_key[chunk_id]))
    return [(chunk_id, float(fused[chunk_id])) for chunk_id in ordered[:depth]]


class HybridRetriever:
    """Reciprocal rank fusion of BM25 and dense, each searched to the same depth."""

    def __init__(self, chunks: Sequence[Chunk], bm25: Retriever, dense: Retriever, rrf_k: int) -> None:
        self._order = {c.chunk_id: (c.document, c.start_offset) for c in chunks}
        self._bm25, self._dense, self.rrf_k = bm25, dense, rrf_k

    def search(self, query: str, depth: int) -> Ranking:
        runs = [self._bm25.search(query, depth), self._dense.search(query, depth)]
        return reciprocal_rank_fusion(runs, self._order, self.rrf_k, depth)


def ranker(kind: RetrieverKind, sources: Sources, params: Params, engine: Engine) -> Searching:
    """The ``hybrid`` kind: BM25 over the index and dense over the embeddings, fused with ``hybrid.rrf_k``."""
    chunks = sources.chunks()
    retriever = HybridRetriever(chunks, load_for(params, sources.index_dir),
                                build_dense(params, chunks, sources.embeddings_dir), params.hybrid.rrf_k)
    return Searching(retriever)
