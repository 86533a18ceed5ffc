"""The kinds of retriever: every value ``retrieve.retriever`` may take, and what each needs.

A retriever ranks passages for a query. Those that search groundkit's chunks
offer one method::

    class Retriever(Protocol):
        def search(self, query: str, depth: int) -> list[tuple[str, float]]: ...

returning at most ``depth`` ``(chunk_id, score)`` pairs, higher score better.
Built in: ``bm25`` (the baseline, the index stage's index), ``dense``
(groundkit/retrieval/dense.py) and ``hybrid`` (reciprocal rank fusion of the
two). ``external`` searches nothing: it reads the ranked passages of another
system from ``retrieve.run`` (groundkit/retrieval/external.py).

Your own retriever: ``retrieve.retriever: python:MODULE:FACTORY``. groundkit
imports MODULE (the current directory is searched first, then the installed
packages), calls ``FACTORY(chunks, options)`` once with every chunk (a list of
groundkit.corpus.passage.Chunk: ``chunk_id``, ``document``, ``start_offset``,
``end_offset``, ``text``) and ``retrieve.options`` (a dict), and calls
``search(query, depth)`` on what it returns for every query. groundkit checks
every result (a known chunk id, at most once, a finite score, at most
``depth`` results) and then orders them itself: score descending, then
(document, start_offset). Returning nothing is how a retriever abstains.
groundkit/retrieval/plugin.py holds the checks.

Each kind is declared once, in ``RETRIEVERS``: the name, what it needs and
which params sections its numbers depend on. Everything that would ask "is
the retriever dense?" asks the kind instead. This module is only the table:
params validation reads it in every stage, so it imports no retriever's code.
groundkit/retrieval/registry.py pairs each kind with the module implementing it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from groundkit.corpus.passage import Chunk, Document, Excerpt

Ranking = list[tuple[str, float]]


class Retriever(Protocol):
    """What every retriever that searches chunks offers: a ranked list of (chunk_id, score) for a query."""

    def search(self, query: str, depth: int) -> Ranking:
        """At most ``depth`` results, best first."""
        ...


@dataclass(frozen=True)
class RetrieverKind:
    """One kind of retriever, as ``retrieve.retriever`` names it.

    Attributes:
        name: The name in params.yaml; for a kind written with arguments, the part before the first colon.
        usage: How params.yaml writes it, e.g. ``python:MODULE:FACTORY``.
        run_tag: The tag column of its TREC run.
        sections: The params sections, besides retrieve and score, its numbers depend on (kept in run.json).
        searches: True if it ranks groundkit's chunks, so that every relevant chunk is known; False if it
            reads a run of its own passages.
        needs_index: It searches the BM25 index of the index stage.
        needs_embeddings: The embed stage must embed the chunks for it.
        needs_chunks: It is handed the chunks themselves (BM25 reads its own rows from the index).
        takes_options: ``retrieve.options`` are its own (handed to a plugin's factory) and recorded in run.json.
    """

    name: str
    usage: str
    run_tag: str
    sections: tuple[str, ...] = ()
    searches: bool = True
    needs_index: bool = False
    needs_embeddings: bool = False
    needs_chunks: bool = False
    takes_options: bool = False


BM25 = RetrieverKind("bm25", "bm25", "groundkit-bm25",
                     sections=("chunk", "bm25", "tokenize"), needs_index=True)
DENSE = RetrieverKind("dense", "dense", "groundkit-dense",
                      sections=("chunk", "dense"), needs_embeddings=True, needs_chunks=True)
HYBRID = RetrieverKind("hybrid", "hybrid", "groundkit-hybrid",
                       sections=("chunk", "bm25", "tokenize", "dense", "hybrid"), needs_index=True,
                       needs_embeddings=True, needs_chunks=True)
# An external run brings its own passages, so not even the chunk parameters shape its numbers.
EXTERNAL = RetrieverKind("external", "external", "groundkit-external",
                         searches=False)
PYTHON = RetrieverKind("python", "python:MODULE:FACTORY", "groundkit-python",
                       sections=("chunk",), needs_chunks=True, takes_options=True)

RETRIEVERS: tuple[RetrieverKind, ...] = (BM25, DENSE, HYBRID, EXTERNAL, PYTHON)
"""Every kind, in the order messages list them."""

SECTIONS = frozenset(section for kind in RETRIEVERS for section in kind.sections)
"""The params sections some retriever depends on; run.json keeps those of the retriever used."""

_BY_NAME = {kind.name: kind for kind in RETRIEVERS}


def kind_of(retriever: str) -> RetrieverKind:
    """The kind ``retriever`` (a value of ``retrieve.retriever``) names.

    Raises:
        ValueError: it names none, or gives the wrong number of non-empty ``:`` arguments (params validation
            reports it as a ParamsError on ``retrieve.retriever``).
    """
    parts = retriever.split(":")
    kind = _BY_NAME.get(parts[0])
    if kind is not None and len(parts) == kind.usage.count(":") + 1 and all(p.strip() for p in parts[1:]):
        return kind
    usages = [k.usage for k in RETRIEVERS]
    raise ValueError(f"unknown retriever; use one of {', '.join(usages[:-1])} or {usages[-1]}")


@dataclass(frozen=True)
class Sources:
    """What a retriever may read: the artifacts of the stages before retrieve, loaded only when asked for."""

    chunks: Callable[[], list[Chunk]]
    documents: Callable[[], list[Document]]
    index_dir: Path
    embeddings_dir: Path


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
