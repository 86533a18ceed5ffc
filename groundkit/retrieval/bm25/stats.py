"""The corpus statistics of a BM25 index: what every segment's weights depend on.

A leaf of the bm25 package: ``build`` merges segments' summaries into :class:`GlobalStats`, ``format``
writes them into an index's manifest, ``search`` weighs an index built in memory with them; none of
those needs another to name the type.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from groundkit.config import TokenizeParams


def _lucene_idf(df: np.ndarray, n_docs: int) -> np.ndarray:
    """float32 idf per term, through ``math.log`` as bm25s does (numpy's log may differ in the last bit)."""
    values, inverse = np.unique(df, return_inverse=True)
    idf = np.array([math.log(1 + (n_docs - int(d) + 0.5) / (int(d) + 0.5)) for d in values], dtype=np.float64)
    return idf.astype(np.float32)[inverse]


@dataclass(frozen=True, eq=False)
class GlobalStats:
    """Exact corpus statistics, merged from every segment's summary.

    Attributes:
        vocab: Every term, sorted; a term's position is its global id.
        df: Rows holding each term (int64).
        n_docs: Rows in the corpus.
        total_tokens: Tokens in the corpus.
        tokenizer: The tokenizer every segment was counted with.
    """

    vocab: list[str]
    df: np.ndarray
    n_docs: int
    total_tokens: int
    tokenizer: TokenizeParams
    # first_row -> global id of each term of that segment's vocab, known from the merge; weighing a
    # segment looks its terms up in term_ids when it is not here.
    segment_terms: dict[int, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def avgdl(self) -> float:
        """Mean tokens per row; the integer sum is exact, so this equals bm25s's ``lengths.mean()``."""
        return self.total_tokens / self.n_docs if self.n_docs else 0.0

    @cached_property
    def idf(self) -> np.ndarray:
        """Lucene idf per term (float32)."""
        return _lucene_idf(self.df, self.n_docs)

    @cached_property
    def term_ids(self) -> dict[str, int]:
        """Term -> global id."""
        return dict(zip(self.vocab, range(len(self.vocab)), strict=True))
