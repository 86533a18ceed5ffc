"""The ports of retrieval: what a retriever offers, what it reads and emits, and the engine it hands work to.

Retrieval declares these, and the other sides implement them: a user's retriever offers
:class:`Retriever`, each kind's ranker offers :class:`Ranker`, and groundkit/execution/ implements
:class:`Engine`. Every type here is named against protocols and data, never against a class of
execution's, so retrieval imports nothing from the layers that use it.

A retriever ranks passages for a query. Those that search groundkit's chunks offer one method::

    class Retriever(Protocol):
        def search(self, query: str, depth: int) -> list[tuple[str, float]]: ...

returning at most ``depth`` ``(chunk_id, score)`` pairs, higher score better.

Your own retriever: ``retrieve.retriever: python:MODULE:FACTORY``. groundkit imports MODULE (the
current directory is searched first, then the installed packages), calls ``FACTORY(chunks, options)``
once with every chunk (a list of groundkit.corpus.passage.Chunk: ``chunk_id``, ``document``,
``start_offset``, ``end_offset``, ``text``) and ``retrieve.options`` (a dict), and calls
``search(query, depth)`` on what it returns for every query. groundkit checks every result (a known
chunk id, at most once, a finite score, at most ``depth`` results) and then orders them itself: score
descending, then (document, start_offset). Returning nothing is how a retriever abstains.
groundkit/retrieval/plugin.py holds the checks.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from groundkit.artifacts.seals import Digest, file_sha256

if TYPE_CHECKING:
    import numpy as np

    from groundkit.config import BM25Params, DenseParams, TokenizeParams
    from groundkit.corpus.passage import Chunk, Document, Excerpt
    from groundkit.corpus.tokenizing import Tokenizer
    from groundkit.retrieval.bm25.format import IndexSummary, Segment

Ranking = list[tuple[str, float]]


class Retriever(Protocol):
    """What every retriever that searches chunks offers: a ranked list of (chunk_id, score) for a query."""

    def search(self, query: str, depth: int) -> Ranking:
        """At most ``depth`` results, best first."""
        ...


class SegmentedIndex(Retriever, Protocol):
    """A BM25 index as an engine searches it (groundkit/retrieval/bm25/search.py's ``BM25Index``):
    its segments, its terms' global ids, the tokenizer its chunks were counted with, its rows' chunk ids."""

    segments: list[Segment]
    term_ids: dict[str, int]
    tokenizer: TokenizeParams

    def chunk_ids(self, rows: np.ndarray) -> list[str]:
        """The chunk ids of ``rows`` (global row numbers)."""
        ...


class Encoder(Protocol):
    """A dense model as an engine runs it (groundkit/retrieval/dense.py's ``Encoder``): its params, a
    fingerprint of its weights (an engine's workers load the same model), and batches of texts embedded."""

    params: DenseParams

    @property
    def fingerprint(self) -> str:
        """The SHA-256 of the model's files."""
        ...

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        """float32 rows, one per text, in order."""
        ...


class Engine(Protocol):
    """Where the heavy steps run (groundkit/execution/ implements it: local or Ray).

    Each method's result is the same bytes whichever engine ran it.
    """

    name: str

    def write_index(self, records: Iterable[tuple[str, str, int, str]], directory: Path, bm25: BM25Params,
                    tokenizer: TokenizeParams, *, tokenize: Tokenizer | None = None,
                    digest_of: Digest = ...) -> IndexSummary:
        """Index ``(chunk_id, document, start_offset, text)`` records, in their order, into ``directory``.

        ``tokenize`` is the tokenizer ``tokenizer`` describes, where the caller has one that shares its
        tokens (an engine that tokenizes elsewhere ignores it); ``digest_of`` hashes the written files.
        """
        ...

    def search(self, index: SegmentedIndex, queries: Sequence[str], depth: int) -> list[Ranking]:
        """``index.search(query, depth)`` for every query, in order."""
        ...

    def embed(self, encoder: Encoder, texts: Sequence[str]) -> np.ndarray:
        """``encoder.encode(texts)``: float32 rows in the order of ``texts``."""
        ...


@dataclass(frozen=True)
class Sources:
    """What a retriever may read: the artifacts of the stages before retrieve, loaded only when asked for.

    ``digest`` hashes a file the retriever checks against a manifest (the run's store knows its own files).
    """

    chunks: Callable[[], list[Chunk]]
    documents: Callable[[], list[Document]]
    index_dir: Path
    embeddings_dir: Path
    digest: Digest = file_sha256


@dataclass(frozen=True)
class Run:
    """What retrieval emits: per query, passage ids best first.

    Attributes:
        rankings: ``query_id -> [(passage_id, score), ...]``; the score is None for a run that gave
            ranks only (an external run), which the TREC run file writes as ``-rank``.
        passages: The passages ranked that are not groundkit's chunks (an external run's), ordered by
            (document, start, end); empty when the chunks are what was ranked.
    """

    rankings: dict[str, list[tuple[str, float | None]]]
    passages: list[Excerpt]

    def excluding(self, excluded: Mapping[str, Collection[str]], ranked_from: Iterable[Excerpt]) -> Run:
        """This run with every passage of a query's excluded documents taken out of its ranking.

        ``excluded`` maps a query id to the documents its run may not return (a judgment's
        ``exclude_documents``); ``ranked_from`` holds the passages ranked, to know each one's document.
        The rest keep their order and scores, so a ranking cut at ``depth`` then loses the excluded
        passages, as BEIR drops them from a run retrieved at its depth.
        """
        document = {p.passage_id: p.document for p in ranked_from}
        rankings = {
            query_id: [entry for entry in ranking if document[entry[0]] not in excluded[query_id]]
            if query_id in excluded else ranking
            for query_id, ranking in self.rankings.items()
        }
        return Run(rankings, self.passages)


class Ranker(Protocol):
    """A built retriever of any kind: it ranks every query at once."""

    def rank(self, queries: Sequence[tuple[str, str]], depth: int) -> Run:
        """``(query_id, query)`` pairs in, a :class:`Run` out."""
        ...
