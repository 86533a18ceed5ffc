"""The local engine: every step in the stage's own process, one segment or batch after another.

Each method imports what it calls, so a stage pays only for its own step (the embed stage never
loads the BM25 code, nor the retrieve stage the index builder's).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from groundkit.artifacts.seals import Digest, file_sha256
from groundkit.console.progress import track

if TYPE_CHECKING:
    import numpy as np

    from groundkit.config import BM25Params, TokenizeParams
    from groundkit.corpus.tokenizing import Tokenizer
    from groundkit.retrieval.bm25.format import IndexSummary
    from groundkit.retrieval.ports import Encoder, Ranking, SegmentedIndex


class LocalEngine:
    """Calls groundkit/retrieval/bm25.py and dense.py directly; the reference the Ray engine is held to."""

    name = "local"

    def __enter__(self) -> LocalEngine:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        return None

    def write_index(self, records: Iterable[tuple[str, str, int, str]], directory: Path, bm25: BM25Params,
                    tokenizer: TokenizeParams, *, tokenize: Tokenizer | None = None,
                    digest_of: Digest = file_sha256) -> IndexSummary:
        """``bm25.write_index``: every segment counted, then weighed, in this process, with ``tokenize``."""
        from groundkit.retrieval.bm25 import write_index

        return write_index(records, directory, k1=bm25.k1, b=bm25.b, tokenizer=tokenizer, tokenize=tokenize,
                           digest_of=digest_of)

    def search(self, index: SegmentedIndex, queries: Sequence[str], depth: int) -> list[Ranking]:
        """``index.search`` for every query, in order."""
        return [index.search(query, depth) for query in track(queries, desc="retrieve", unit="query")]

    def embed(self, encoder: Encoder, texts: Sequence[str]) -> np.ndarray:
        """``encoder.encode``, batch after batch."""
        return encoder.encode(texts, progress=True)
