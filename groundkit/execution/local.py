"""The local engine: every step in the stage's own process, one segment or batch after another.

Each method imports what it calls, so a stage pays only for its own step (the embed stage never
loads the BM25 code, nor the retrieve stage the index builder's).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from groundkit.config import BM25Params, TokenizeParams
    from groundkit.corpus.passage import Chunk
    from groundkit.retrieval.bm25 import BM25Index
    from groundkit.retrieval.dense import Encoder
    from groundkit.retrieval.kinds import Ranking, Retriever


class LocalEngine:
    """Calls groundkit/retrieval/bm25.py and dense.py directly; the reference the Ray engine is held to."""

    name = "local"

    def __enter__(self) -> LocalEngine:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        return None

    def build_index(self, chunks: Sequence[Chunk], bm25: BM25Params, tokenizer: TokenizeParams) -> BM25Index:
        """The BM25 index over ``chunks`` (not yet saved)."""
        from groundkit.retrieval.bm25 import BM25Index

        return BM25Index.build(chunks, k1=bm25.k1, b=bm25.b, tokenizer=tokenizer)

    def search(self, retriever: Retriever, queries: Sequence[str], depth: int) -> list[Ranking]:
        """``retriever.search`` for every query, in order."""
        from groundkit.retrieval.registry import search_each

        return search_each(retriever, queries, depth)

    def embed(self, encoder: Encoder, texts: Sequence[str]) -> np.ndarray:
        """``encoder.encode``, batch after batch."""
        return encoder.encode(texts, progress=True)
