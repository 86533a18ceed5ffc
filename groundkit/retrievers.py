"""Retrievers: anything that ranks chunks for a query, chosen by ``retrieve.retriever``.

The contract is one method::

    class Retriever(Protocol):
        def search(self, query: str, depth: int) -> list[tuple[str, float]]: ...

returning at most ``depth`` ``(chunk_id, score)`` pairs, higher score better.
Built in: ``bm25`` (the baseline, the index stage's index), ``dense``
(groundkit/dense.py) and ``hybrid`` (reciprocal rank fusion of the two).

Your own retriever: ``retrieve.retriever: python:MODULE:FACTORY``. groundkit
imports MODULE (the current directory is searched first, then the installed
packages), calls ``FACTORY(chunks, options)`` once with every chunk (a list of
groundkit.contracts.Chunk: ``chunk_id``, ``document``, ``start_offset``,
``end_offset``, ``text``) and ``retrieve.options`` (a dict), and calls
``search(query, depth)`` on what it returns for every query. groundkit checks
every result (a known chunk id, at most once, a finite score, at most
``depth`` results) and then orders them itself: score descending, then
(document, start_offset). Returning nothing is how a retriever abstains.
"""

from __future__ import annotations

import importlib
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from groundkit.contracts import Chunk
from groundkit.errors import RetrieverError
from groundkit.params import Params

Ranking = list[tuple[str, float]]


class Retriever(Protocol):
    """What every retriever offers: a ranked list of (chunk_id, score) for a query."""

    def search(self, query: str, depth: int) -> Ranking:
        """At most ``depth`` results, best first."""
        ...


RetrieverFactory = Callable[[Sequence[Chunk], Mapping[str, Any]], Retriever]


def rank_rows(scores: np.ndarray, depth: int) -> list[tuple[int, float]]:
    """Every row, best first, at most ``depth``: score descending, then row ascending.

    Unlike BM25's ``top_k`` no row is dropped for a score at or below zero: a
    cosine can be negative and still be the best there is.
    """
    rows = np.arange(scores.size)
    order = np.lexsort((rows, -scores.astype(np.float64)))[:depth]
    return [(int(row), float(scores[row])) for row in order]


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


def load_factory(spec: str) -> RetrieverFactory:
    """Import the factory named by ``python:MODULE:FACTORY``."""
    _, module_name, attribute = spec.split(":")
    where = {"path": "params.yaml", "key": "retrieve.retriever"}
    added = str(Path.cwd())
    sys.path.insert(0, added)  # like `python -m`: a module next to params.yaml is found
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise RetrieverError(**where, problem=f"cannot import module {module_name!r}: {type(exc).__name__}: {exc}",
                             fix="put the module in the current directory or on PYTHONPATH, or install it") from None
    finally:
        sys.path.remove(added)
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise RetrieverError(**where, problem=f"module {module_name!r} has no callable {attribute!r}",
                             fix="name a function (or class) taking (chunks, options) that returns a retriever")
    return factory


class CheckedRetriever:
    """Wraps a user's retriever: checks each result and imposes groundkit's total order."""

    def __init__(self, spec: str, inner: Retriever, chunks: Sequence[Chunk]) -> None:
        self.spec = spec
        self._inner = inner
        self._order = {c.chunk_id: (c.document, c.start_offset) for c in chunks}
        if not callable(getattr(inner, "search", None)):
            self._fail(f"the factory returned {type(inner).__name__}, which has no search(query, depth) method")

    def _fail(self, problem: str) -> None:
        raise RetrieverError("params.yaml", f"retriever {self.spec!r}: {problem}", key="retrieve.retriever",
                             fix="see the contract in groundkit/retrievers.py: search(query, depth) returns at most "
                                 "depth (chunk_id, score) pairs")

    def search(self, query: str, depth: int) -> Ranking:
        try:
            returned = self._inner.search(query, depth)
        except Exception as exc:
            # The user's code failed, not groundkit's: say so; --debug shows their traceback (chained).
            raise RetrieverError("params.yaml", f"retriever {self.spec!r}: search({query!r}, {depth}) raised "
                                 f"{type(exc).__name__}: {exc}", key="retrieve.retriever",
                                 fix="fix the retriever; re-run with --debug for its traceback") from exc
        try:
            results = list(returned)
        except TypeError:
            self._fail(f"search(query, depth) returned {type(returned).__name__}, not a list of (chunk_id, score)")
            raise  # unreachable: _fail raises
        if len(results) > depth:
            self._fail(f"returned {len(results)} results for depth {depth}")
        seen: dict[str, float] = {}
        for item in results:
            if not (isinstance(item, tuple | list) and len(item) == 2):
                self._fail(f"returned {item!r}, not a (chunk_id, score) pair")
            chunk_id, score = item
            if chunk_id not in self._order:
                self._fail(f"returned chunk id {chunk_id!r}, which is not one of the chunks it was built from")
            if chunk_id in seen:
                self._fail(f"returned chunk {chunk_id!r} twice for one query")
            if isinstance(score, bool) or not isinstance(score, int | float | np.floating | np.integer) \
                    or not math.isfinite(float(score)):
                self._fail(f"returned score {score!r} for chunk {chunk_id!r}; scores must be finite numbers")
            seen[chunk_id] = float(score)
        ordered = sorted(seen, key=lambda chunk_id: (-seen[chunk_id], self._order[chunk_id]))
        return [(chunk_id, seen[chunk_id]) for chunk_id in ordered]


def build_retriever(params: Params, chunks: Sequence[Chunk], index_dir: Path, embeddings_dir: Path) -> Retriever:
    """The retriever ``params.retrieve.retriever`` names, ready to search ``chunks``."""
    name = params.retrieve.retriever
    if name == "bm25":
        from groundkit.bm25 import BM25Index

        return BM25Index.load(index_dir)
    if name in ("dense", "hybrid"):
        from groundkit.dense import DenseRetriever, Encoder, load_embeddings

        encoder = Encoder(params.dense)
        dense = DenseRetriever(chunks, load_embeddings(embeddings_dir, chunks, encoder), encoder)
        if name == "dense":
            return dense
        from groundkit.bm25 import BM25Index

        return HybridRetriever(chunks, BM25Index.load(index_dir), dense, params.hybrid.rrf_k)
    if name.startswith("python:"):
        factory = load_factory(name)
        try:
            built = factory(list(chunks), dict(params.retrieve.options))
        except Exception as exc:
            raise RetrieverError("params.yaml", f"retriever {name!r}: the factory raised {type(exc).__name__}: {exc}",
                                 key="retrieve.retriever",
                                 fix="fix the factory; re-run with --debug for its traceback") from exc
        return CheckedRetriever(name, built, chunks)
    raise ValueError(f"{name!r} is not a retriever that searches chunks")
