"""The retriever registry: every kind of ``retrieve.retriever``, what it needs, and how to run it.

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

Each kind is declared once, in ``RETRIEVERS``: the name, the module that
implements it, what it needs and which params sections its numbers depend
on. Everything that used to ask "is the retriever dense?" asks the kind
instead. The implementing module is imported by name, only when the kind
runs: params validation reads this table in every stage, and must pull
neither torch nor every retriever's code into every stage.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from groundkit._progress import track

if TYPE_CHECKING:
    from groundkit.config import Params
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
        module: The module implementing it: ``build(params, chunks, index_dir, embeddings_dir)`` for a kind that
            searches, ``read(params, sources, query_ids)`` for one that reads a run.
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
    module: str
    run_tag: str
    sections: tuple[str, ...] = ()
    searches: bool = True
    needs_index: bool = False
    needs_embeddings: bool = False
    needs_chunks: bool = False
    takes_options: bool = False


BM25 = RetrieverKind("bm25", "bm25", "groundkit.retrieval.bm25", "groundkit-bm25",
                     sections=("chunk", "bm25", "tokenize"), needs_index=True)
DENSE = RetrieverKind("dense", "dense", "groundkit.retrieval.dense", "groundkit-dense",
                      sections=("chunk", "dense"), needs_embeddings=True, needs_chunks=True)
HYBRID = RetrieverKind("hybrid", "hybrid", "groundkit.retrieval.hybrid", "groundkit-hybrid",
                       sections=("chunk", "bm25", "tokenize", "dense", "hybrid"), needs_index=True,
                       needs_embeddings=True, needs_chunks=True)
# An external run brings its own passages, so not even the chunk parameters shape its numbers.
EXTERNAL = RetrieverKind("external", "external", "groundkit.retrieval.external", "groundkit-external",
                         searches=False)
PYTHON = RetrieverKind("python", "python:MODULE:FACTORY", "groundkit.retrieval.plugin", "groundkit-python",
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


def build_retriever(params: Params, chunks: Sequence[Chunk], index_dir: Path, embeddings_dir: Path) -> Retriever:
    """The retriever ``params.retrieve.retriever`` names, ready to search ``chunks``."""
    kind = kind_of(params.retrieve.retriever)
    if not kind.searches:
        raise ValueError(f"{params.retrieve.retriever!r} is not a retriever that searches chunks")
    built: Retriever = importlib.import_module(kind.module).build(params, chunks, index_dir, embeddings_dir)
    return built


def retrieve(params: Params, sources: Sources, queries: Sequence[tuple[str, str]]) -> Run:
    """Rank passages for every ``(query_id, query)`` with the retriever ``params`` names, or read its run."""
    kind = kind_of(params.retrieve.retriever)
    if not kind.searches:
        run: Run = importlib.import_module(kind.module).read(params, sources, [query_id for query_id, _ in queries])
        return run
    retriever = build_retriever(params, sources.chunks() if kind.needs_chunks else [], sources.index_dir,
                                sources.embeddings_dir)
    depth = params.retrieve.depth
    rankings: dict[str, list[tuple[str, float | None]]] = {
        query_id: list(retriever.search(query, depth))
        for query_id, query in track(queries, desc="retrieve", unit="query")
    }
    return Run(rankings, [])
