"""Searching a BM25 index: an index loaded memory-mapped, the best rows of each segment merged, and the kind's
ranker, which hands every query to the engine.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from groundkit.artifacts.lines import round_floats
from groundkit.artifacts.seals import Digest, file_sha256
from groundkit.config import TokenizeParams
from groundkit.corpus.passage import Chunk
from groundkit.errors import ParamsError
from groundkit.retrieval.bm25.build import SEGMENT_ROWS, _count_all, _tokenizer_for, weigh_segment
from groundkit.retrieval.bm25.format import _STAGE, IndexWriter, Segment, _RowTable, _select, read_index
from groundkit.retrieval.bm25.stats import GlobalStats
from groundkit.retrieval.ports import Run, Sources

if TYPE_CHECKING:
    from groundkit.config import Params
    from groundkit.retrieval.kinds import RetrieverKind
    from groundkit.retrieval.ports import Engine, SegmentedIndex

def query_terms(index_or_stats: SegmentedIndex | GlobalStats, query: str) -> np.ndarray:
    """Global term ids of ``query``'s tokens (int64), in query order, repeats kept, unknown tokens dropped."""
    ids = index_or_stats.term_ids
    tokens = _tokenizer_for(index_or_stats.tokenizer)(query)
    return np.fromiter((t for t in map(ids.get, tokens) if t is not None), dtype=np.int64)


def merge_top(parts: Sequence[tuple[np.ndarray, np.ndarray]], depth: int) -> tuple[np.ndarray, np.ndarray]:
    """The best ``depth`` of several segments' tops (each in that order): score descending, then global row
    ascending."""
    if not parts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    if len(parts) == 1:  # one segment's top is in that order already
        rows, scores = parts[0]
        return np.asarray(rows, dtype=np.int64)[:depth], np.asarray(scores, dtype=np.float32)[:depth]
    rows = np.concatenate([np.asarray(p[0], dtype=np.int64) for p in parts])
    scores = np.concatenate([np.asarray(p[1], dtype=np.float32) for p in parts])
    order = np.lexsort((rows, -scores))[:depth]
    return rows[order], scores[order]


DECODED_IDS = 1 << 20
"""An index of at most this many chunks keeps its ids decoded once searched (a 16-character str is 65 bytes)."""


class BM25Index:
    """A BM25 index whose rows are chunks ordered by (document path, start_offset).

    That row order is the documented tie-break: equal scores rank by row.
    """

    def __init__(
        self,
        *,
        k1: float,
        b: float,
        vocab: list[str],
        table: dict[str, np.ndarray],
        documents: list[str] | Path,
        segments: list[Segment],
        avg_tokens: float,
        total_tokens: int,
        tokenizer: TokenizeParams | None = None,
    ) -> None:
        self.tokenizer = tokenizer or TokenizeParams()
        self.k1 = k1
        self.b = b
        self.vocab = vocab
        self.term_ids = dict(zip(vocab, range(len(vocab)), strict=True))
        self.segments = segments
        self._table = table
        self._documents = documents
        self._avg_tokens = avg_tokens
        self._total_tokens = total_tokens
        self._stats: GlobalStats | None = None  # the statistics of an index built in memory, for save()

    @property
    def num_chunks(self) -> int:
        return len(self._table["chunk_ids.npy"])

    @cached_property
    def rows(self) -> list[tuple[str, str, int]]:
        """``(chunk_id, document, start_offset)`` per row; a loaded index reads its document names only here."""
        documents = self._documents
        if isinstance(documents, Path):
            documents = [json.loads(line) for line in documents.read_text(encoding="utf-8").splitlines()]
        names = [documents[i] for i in self._table["row_documents.npy"].tolist()]
        return list(zip(self.chunk_ids(np.arange(self.num_chunks)), names,
                        self._table["start_offsets.npy"].tolist(), strict=True))

    def chunk_ids(self, rows: np.ndarray) -> list[str]:
        """The chunk ids of ``rows`` (global row numbers)."""
        if self.num_chunks <= DECODED_IDS:
            decoded: list[str] = self._decoded_ids[rows].tolist()  # an object array's gather, in C
            return decoded
        return [cid.decode("ascii") for cid in self._table["chunk_ids.npy"][rows].tolist()]

    @cached_property
    def _decoded_ids(self) -> np.ndarray:
        # Every id decoded once, held as an object array: a search at depth 1000 decodes each of SciFact's
        # 5,183 ids 58 times.
        return np.array([cid.decode("ascii") for cid in self._table["chunk_ids.npy"].tolist()], dtype=object)

    @classmethod
    def build(
        cls, chunks: Sequence[Chunk], *, k1: float, b: float, tokenizer: TokenizeParams | None = None,
        segment_rows: int = SEGMENT_ROWS,
    ) -> BM25Index:
        """Tokenize and index ``chunks`` in memory; their order is kept as the row order."""
        tokenizer = tokenizer or TokenizeParams()
        table = _RowTable()
        records = ((c.chunk_id, c.document, c.start_offset, c.indexed_text) for c in chunks)
        stats, counted = _count_all(records, table.add, tokenizer, segment_rows, spill=None, total=len(chunks))
        segments = [weigh_segment(counts, stats, k1=k1, b=b) for counts in counted]
        index = cls(k1=k1, b=b, vocab=stats.vocab, table=table.arrays(), documents=table.documents,
                    segments=segments, avg_tokens=stats.avgdl, total_tokens=stats.total_tokens, tokenizer=tokenizer)
        index._stats = stats
        return index

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every row for ``query`` (float32, zero where no token is shared).

        Summed in float32, one query token at a time in query order, exactly as bm25s does.
        """
        terms = query_terms(self, query)
        return np.concatenate([s.scores(terms) for s in self.segments] or [np.zeros(0, dtype=np.float32)])

    def search(self, query: str, depth: int) -> list[tuple[str, float]]:
        """Top ``depth`` chunks with a score above zero, as ``(chunk_id, score)``.

        Order: score descending, then row ascending, i.e. (document path,
        start_offset). The tie-break never depends on a sort's stability.
        """
        terms = query_terms(self, query)
        rows, values = merge_top([s.top(terms, depth) for s in self.segments], depth)
        return list(zip(self.chunk_ids(rows), values.tolist(), strict=True))

    def save(self, directory: str | Path) -> None:
        """Write an index built in memory (:meth:`build`) through the format's one writer."""
        if self._stats is None:
            raise ValueError("only an index built in memory is saved; a loaded one is already on disk")
        with IndexWriter(directory, k1=self.k1, b=self.b, tokenizer=self.tokenizer) as writer:
            chunk_ids, documents, offsets = zip(*self.rows, strict=True) if self.num_chunks else ((), (), ())
            writer.add_rows(chunk_ids, documents, offsets)
            for segment in self.segments:
                writer.add_segment(segment)
            writer.finish(self._stats)

    @classmethod
    def load(cls, directory: str | Path, digest_of: Digest = file_sha256) -> BM25Index:
        """Load an index the index stage wrote, verifying every file's SHA-256 first; arrays are memory-mapped."""
        return cls(**read_index(directory, digest_of)._asdict())


def top_k(scores: np.ndarray, depth: int) -> list[tuple[int, float]]:
    """Rows with score > 0, best first, at most ``depth``; ties broken by row ascending.

    Selection is exact under ties: every row scoring above the cut-off value is
    kept, and rows equal to it are admitted in row order.
    """
    rows, values = _select(scores, depth)
    # tolist() turns float32 into the same Python floats float() would, in one call.
    return list(zip(rows.tolist(), values.tolist(), strict=True))


class IndexRanker:
    """The index stage's index, its queries searched by the engine (every query at once: a Ray cluster splits
    them by segment and batch)."""

    def __init__(self, index: BM25Index, engine: Engine) -> None:
        self.index, self.engine = index, engine

    def rank(self, queries: Sequence[tuple[str, str]], depth: int) -> Run:
        ranked = self.engine.search(self.index, [query for _, query in queries], depth)
        rankings: dict[str, list[tuple[str, float | None]]] = {
            query_id: list(ranking) for (query_id, _), ranking in zip(queries, ranked, strict=True)}
        return Run(rankings, [])


def ranker(kind: RetrieverKind, sources: Sources, params: Params, engine: Engine) -> IndexRanker:
    """The ``bm25`` kind: the index stage's index, which carries its own rows (the chunks are not read)."""
    return IndexRanker(load_for(params, sources.index_dir, sources.digest), engine)


def load_for(params: Params, directory: str | Path, digest_of: Digest = file_sha256) -> BM25Index:
    """The index in ``directory``, refused unless it was built with the k1, b and tokenizer ``params`` hold.

    The retrieve stage reads params.yaml after the index stage did: an edit in between (or an index of
    another run) would rank with one setting while run.json reports the other.
    """
    index = BM25Index.load(directory, digest_of)
    built = {"bm25.k1": index.k1, "bm25.b": index.b,
             **{f"tokenize.{key}": value for key, value in index.tokenizer.model_dump().items()}}
    # As the manifest and run.json record them: floats at FLOAT_DIGITS decimals.
    wanted = round_floats({"bm25.k1": params.bm25.k1, "bm25.b": params.bm25.b,
                           **{f"tokenize.{key}": value for key, value in params.tokenize.model_dump().items()}})
    for key, value in built.items():
        if value != wanted[key]:
            raise ParamsError(params.source, f"is {wanted[key]!r}, but the index in {directory} was built with "
                              f"{value!r}: params.yaml changed while the pipeline ran, or the index is another "
                              "run's; ranked with it, the run would be reported under a setting that did not make it",
                              key=key, fix=f"build the index again and go on: dvc repro -f -s {_STAGE} && dvc repro "
                                           "(with groundkit run: run it again)")
    return index
