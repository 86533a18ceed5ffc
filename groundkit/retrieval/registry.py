"""Retrievers: anything that ranks chunks for a query, chosen by ``retrieve.retriever``.

The contract is one method::

    class Retriever(Protocol):
        def search(self, query: str, depth: int) -> list[tuple[str, float]]: ...

returning at most ``depth`` ``(chunk_id, score)`` pairs, higher score better.
Built in: ``bm25`` (the baseline, the index stage's index), ``dense``
(groundkit/retrieval/dense.py) and ``hybrid`` (reciprocal rank fusion of the two).

Your own retriever: ``retrieve.retriever: python:MODULE:FACTORY``. groundkit
imports MODULE (the current directory is searched first, then the installed
packages), calls ``FACTORY(chunks, options)`` once with every chunk (a list of
groundkit.corpus.passage.Chunk: ``chunk_id``, ``document``, ``start_offset``,
``end_offset``, ``text``) and ``retrieve.options`` (a dict), and calls
``search(query, depth)`` on what it returns for every query. groundkit checks
every result (a known chunk id, at most once, a finite score, at most
``depth`` results) and then orders them itself: score descending, then
(document, start_offset). Returning nothing is how a retriever abstains.

Whatever leaves the user's code other than a return (an exception, or a
``sys.exit`` that would otherwise end ``groundkit run`` with status 0 and
nothing written) becomes one RetrieverError naming the retriever and the step:
the import, the factory, or a search. Only KeyboardInterrupt and SIGTERM (the guard's
Terminated) pass through: they come from outside the plugin.
"""

from __future__ import annotations

import copy
import importlib
import itertools
import math
import sys
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path
from typing import Any, NoReturn, Protocol

import numpy as np

from groundkit.config import NO_FILE, Params
from groundkit.corpus.passage import Chunk
from groundkit.errors import RetrieverError, Terminated

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


def _where(source: str) -> dict[str, str]:
    """An error's place: the key ``retrieve.retriever`` of the params file ``source`` (``Params.source``)."""
    return {"path": source, "key": "retrieve.retriever"}


_SHOWN_CHARS = 200  # of a value or message the user's code made: enough to recognise it, never a flood


_FROM_OUTSIDE = (KeyboardInterrupt, Terminated)
"""Exceptions that reach the plugin's code from outside it; they end the run as they would anywhere."""


def _shown(value: object, *, text: bool = False) -> str:
    """``repr`` (or ``str``) of a value the user's code made, cut short.

    Showing it runs their ``__repr__``, which may itself raise or exit; that must
    not replace the error being reported.
    """
    try:
        shown = str(value) if text else repr(value)
    except _FROM_OUTSIDE:
        raise
    except BaseException:
        shown = f"<{type(value).__name__} that cannot be shown>"
    return shown if len(shown) <= _SHOWN_CHARS else shown[:_SHOWN_CHARS] + "..."


@contextmanager
def _user_code(spec: str, source: str, step: str, fix: str) -> Iterator[None]:
    """Run the retriever's own code; anything but a normal return becomes a RetrieverError naming ``step``.

    SystemExit is caught too: a plugin that exits (even with 0) must not end the run as a success
    with nothing written. KeyboardInterrupt (the person at the terminal) and Terminated (SIGTERM, turned
    into an exception by groundkit's guard) come from outside the plugin and pass through.
    """
    try:
        yield
    except _FROM_OUTSIDE:
        raise
    except SystemExit as exc:
        raise RetrieverError(**_where(source), problem=f"retriever {spec!r}: {step} tried to end the process "
                             f"(SystemExit with code {_shown(exc.code)}); plugin code must return or raise, "
                             "never exit",
                             fix="remove the sys.exit() (or exit()) call from the retriever's code; raise an "
                                 "exception to report a problem") from exc
    except BaseException as exc:
        # The user's code failed, not groundkit's: say so; --debug shows their traceback (chained).
        detail = _shown(exc, text=True)
        raised = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
        raise RetrieverError(**_where(source), problem=f"retriever {spec!r}: {step} raised {raised}", fix=fix) from exc


def load_factory(spec: str, source: str = NO_FILE) -> RetrieverFactory:
    """Import the factory named by ``python:MODULE:FACTORY``; errors name the params file ``source``."""
    _, module_name, attribute = spec.split(":")
    added = str(Path.cwd())
    sys.path.insert(0, added)  # like `python -m`: a module next to params.yaml is found
    try:
        with _user_code(spec, source, f"importing module {module_name!r}",
                        fix="put the module in the current directory or on PYTHONPATH, or install it; if it is "
                            "there, fix the error its import raises (--debug shows the traceback)"):
            module = importlib.import_module(module_name)
            factory = getattr(module, attribute, None)
    finally:
        if added in sys.path:  # the module's own code may already have taken it out
            sys.path.remove(added)
    if not callable(factory):
        raise RetrieverError(**_where(source), problem=f"retriever {spec!r}: module {module_name!r} has no callable "
                             f"{attribute!r}",
                             fix="name a function (or class) taking (chunks, options) that returns a retriever")
    return factory


def _read_pair(item: object) -> tuple[str, float] | str:
    """One result as (plain str, finite float), or a sentence saying what is wrong with it."""
    if not (isinstance(item, tuple | list) and len(item) == 2):
        return f"returned {_shown(item)}, not a (chunk_id, score) pair"
    chunk_id, score = item
    if not isinstance(chunk_id, str):
        return f"returned chunk id {_shown(chunk_id)} ({type(chunk_id).__name__}); chunk ids are strings"
    # A str subclass (numpy.str_, or one with its own __hash__/__eq__) becomes a plain str, so the
    # lookups below and the run file see the characters and nothing else.
    chunk_id = str.__str__(chunk_id)
    if isinstance(score, bool) or not isinstance(score, int | float | np.floating | np.integer):
        return f"returned score {_shown(score)} for chunk {_shown(chunk_id)}; scores must be finite numbers"
    try:
        value = float(score)
    except OverflowError:  # an int beyond the float range, such as 10**400 (its repr may be too long to make)
        digits = int(int(score).bit_length() * math.log10(2)) + 1
        return (f"returned an integer score of about {digits} digits for chunk {_shown(chunk_id)}, too large for a "
                "float; scores must be finite numbers")
    if not math.isfinite(value):
        return f"returned score {_shown(score)} for chunk {_shown(chunk_id)}; scores must be finite numbers"
    return chunk_id, value


class CheckedRetriever:
    """Wraps a user's retriever: checks each result and imposes groundkit's total order."""

    def __init__(self, spec: str, inner: Retriever, chunks: Sequence[Chunk], source: str = NO_FILE) -> None:
        self.spec, self.source = spec, source
        self._inner = inner
        self._order = {c.chunk_id: (c.document, c.start_offset) for c in chunks}
        with _user_code(spec, source, "looking up search() on what the factory returned",
                        fix="fix the retriever class; re-run with --debug for its traceback"):
            search = getattr(inner, "search", None)
        if not callable(search):
            self._fail(f"the factory returned {type(inner).__name__}, which has no search(query, depth) method")

    def _fail(self, problem: str) -> NoReturn:
        raise RetrieverError(**_where(self.source), problem=f"retriever {self.spec!r}: {problem}",
                             fix="see the contract in groundkit/retrieval/registry.py: search(query, depth) returns "
                                 "at most "
                                 "depth (chunk_id, score) pairs")

    def search(self, query: str, depth: int) -> Ranking:
        call = f"search({_shown(query)}, {depth})"
        fix = "fix the retriever; re-run with --debug for its traceback"
        with _user_code(self.spec, self.source, call, fix=fix):
            returned = self._inner.search(query, depth)
        if isinstance(returned, str | bytes | Mapping) or not isinstance(returned, Iterable):
            self._fail(f"search(query, depth) returned {type(returned).__name__}, not a list of (chunk_id, score)")
        with _user_code(self.spec, self.source, f"iterating the results of {call}", fix=fix):
            # One past depth tells that there are too many; an endless generator must not hang the run.
            results = list(itertools.islice(returned, depth + 1))
            if isinstance(returned, Generator):
                returned.close()  # runs its cleanup here, where a failure is reported, not at garbage collection
        if len(results) > depth:
            self._fail(f"returned more than {depth} results for depth {depth}")
        seen: dict[str, float] = {}
        for position, item in enumerate(results, start=1):
            # Reading a result runs the user's __len__, __iter__, __float__ or __repr__, any of which may misbehave.
            with _user_code(self.spec, self.source, f"reading result {position} of {call}", fix=fix):
                pair = _read_pair(item)
            if isinstance(pair, str):
                self._fail(pair)
            chunk_id, score = pair
            if chunk_id not in self._order:
                self._fail(f"returned chunk id {_shown(chunk_id)}, which is not one of the chunks it was built from")
            if chunk_id in seen:
                self._fail(f"returned chunk {chunk_id!r} twice for one query")
            seen[chunk_id] = score
        ordered = sorted(seen, key=lambda chunk_id: (-seen[chunk_id], self._order[chunk_id]))
        return [(chunk_id, seen[chunk_id]) for chunk_id in ordered]


def build_retriever(params: Params, chunks: Sequence[Chunk], index_dir: Path, embeddings_dir: Path) -> Retriever:
    """The retriever ``params.retrieve.retriever`` names, ready to search ``chunks``."""
    name = params.retrieve.retriever
    if name == "bm25":
        from groundkit.retrieval.bm25 import BM25Index

        return BM25Index.load(index_dir)
    if name in ("dense", "hybrid"):
        from groundkit.retrieval.dense import DenseRetriever, Encoder, load_embeddings

        encoder = Encoder(params.dense, source=params.source)
        dense = DenseRetriever(chunks, load_embeddings(embeddings_dir, chunks, encoder), encoder)
        if name == "dense":
            return dense
        from groundkit.retrieval.bm25 import BM25Index

        return HybridRetriever(chunks, BM25Index.load(index_dir), dense, params.hybrid.rrf_k)
    if name.startswith("python:"):
        factory = load_factory(name, params.source)
        # A deep copy: the factory may edit its options in place, and run.json must record what the user wrote.
        options = copy.deepcopy(dict(params.retrieve.options))
        with _user_code(name, params.source, "the factory",
                        fix="fix the factory; re-run with --debug for its traceback"):
            built = factory(list(chunks), options)
        return CheckedRetriever(name, built, chunks, params.source)
    raise ValueError(f"{name!r} is not a retriever that searches chunks")
