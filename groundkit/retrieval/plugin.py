"""``python:MODULE:FACTORY`` retrievers: the user's own code, checked and ordered by groundkit.

The contract is in groundkit/retrieval/ports.py. Whatever leaves the user's
code other than a return (an exception, or a ``sys.exit`` that would otherwise
end ``groundkit run`` with status 0 and nothing written) becomes one
RetrieverError naming the retriever and the step: the import, the factory, or a
search. Only KeyboardInterrupt and SIGTERM (the guard's Terminated) pass
through: they come from outside the plugin.
"""

from __future__ import annotations

import copy
import importlib
import itertools
import math
import sys
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from groundkit.corpus.passage import Chunk
from groundkit.errors import RetrieverError, Terminated
from groundkit.retrieval.kinds import Python, PythonObject
from groundkit.retrieval.ports import Ranking, Retriever, Sources
from groundkit.retrieval.searching import Searching

if TYPE_CHECKING:
    from groundkit.config import Params
    from groundkit.retrieval.ports import Engine

RetrieverFactory = Callable[[Sequence[Chunk], Mapping[str, Any]], Retriever]


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


def load_factory(kind: Python, source: str) -> RetrieverFactory:
    """Import the factory ``python:MODULE:FACTORY`` names; errors name the params file ``source``."""
    spec, module_name, attribute = kind.spec, kind.module, kind.factory
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

    def __init__(self, spec: str, inner: Retriever, chunks: Sequence[Chunk], source: str) -> None:
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
                             fix="see the contract in groundkit/retrieval/ports.py: search(query, depth) returns "
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


def build(kind: Python, factory: RetrieverFactory, params: Params, chunks: Sequence[Chunk]) -> CheckedRetriever:
    """Call the factory once with the chunks and ``retrieve.options``, and check what it made."""
    # A deep copy: the factory may edit its options in place, and run.json must record what the user wrote.
    options = copy.deepcopy(dict(params.retrieve.options))
    with _user_code(kind.spec, params.source, "the factory",
                    fix="fix the factory; re-run with --debug for its traceback"):
        built = factory(list(chunks), options)
    return CheckedRetriever(kind.spec, built, chunks, params.source)


def ranker(kind: Python, sources: Sources, params: Params, engine: Engine) -> Searching:
    """The ``python:MODULE:FACTORY`` kind: the factory imported by name, called once, its retriever checked."""
    return Searching(build(kind, load_factory(kind, params.source), params, sources.chunks()))


def object_ranker(kind: PythonObject, sources: Sources, params: Params, engine: Engine) -> Searching:
    """A retriever (or factory) handed over in Python: called as a ``python:`` factory is, with the same checks."""
    return Searching(build(kind, kind.made, params, sources.chunks()))
