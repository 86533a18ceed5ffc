"""The kinds of retriever: every value ``retrieve.retriever`` may take, parsed once into an object that travels.

A retriever ranks passages for a query. Those that search groundkit's chunks offer one method::

    class Retriever(Protocol):
        def search(self, query: str, depth: int) -> list[tuple[str, float]]: ...

returning at most ``depth`` ``(chunk_id, score)`` pairs, higher score better. Built in: ``bm25`` (the
baseline, the index stage's index), ``dense`` (groundkit/retrieval/dense.py) and ``hybrid``
(reciprocal rank fusion of the two). ``external`` searches nothing: it reads the ranked passages of
another system from ``retrieve.run`` (groundkit/retrieval/external.py).

Your own retriever: ``retrieve.retriever: python:MODULE:FACTORY``. groundkit imports MODULE (the
current directory is searched first, then the installed packages), calls ``FACTORY(chunks, options)``
once with every chunk (a list of groundkit.corpus.passage.Chunk: ``chunk_id``, ``document``,
``start_offset``, ``end_offset``, ``text``, and ``prefix``, the context ``chunk.context`` adds, which
``indexed_text`` puts before the text) and ``retrieve.options`` (a dict), and calls
``search(query, depth)`` on what it returns for every query. groundkit checks every result (a known
chunk id, at most once, a finite score, at most ``depth`` results) and then orders them itself: score
descending, then (document, start_offset). Returning nothing is how a retriever abstains.
groundkit/retrieval/plugin.py holds the checks.

Each kind is one class here, registered in ``BUILT_IN``: its name, its run tag, the params sections its
numbers depend on and those its retrieval reads, what it needs (an index, embeddings, the chunks, a run
file) and the function that builds it, named as ``module:function`` so that this module imports no
retriever's code (params validation reads it in every stage). A package adds a kind through the entry
point group ``groundkit.retrievers`` (``name = "package.module:KindClass"``). :func:`parse` is the one
place a ``retrieve.retriever`` string is read; everything else asks the object it returns.
"""

from __future__ import annotations

import enum
import importlib
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from groundkit._seals import Digest, file_sha256

if TYPE_CHECKING:
    from groundkit.config import Params
    from groundkit.corpus.passage import Chunk, Document, Excerpt
    from groundkit.execution import Engine

Ranking = list[tuple[str, float]]

ENTRY_POINTS = "groundkit.retrievers"
"""The entry point group through which other packages register kinds of retriever."""


class Retriever(Protocol):
    """What every retriever that searches chunks offers: a ranked list of (chunk_id, score) for a query."""

    def search(self, query: str, depth: int) -> Ranking:
        """At most ``depth`` results, best first."""
        ...


class Need(enum.Enum):
    """What a kind of retriever needs from the stages before retrieve."""

    INDEX = "the BM25 index"
    EMBEDDINGS = "the chunk embeddings (the embed stage computes them only for kinds that need them)"
    CHUNKS = "the chunks themselves"
    RUN_FILE = "a run file (retrieve.run): it ranks passages of its own, not groundkit's chunks"


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


Builder = Callable[["RetrieverKind", Sources, "Params", "Engine"], Ranker]


@dataclass(frozen=True)
class RetrieverKind:
    """One kind of retriever; an instance is a parsed ``retrieve.retriever`` value (with its arguments, if any).

    Class attributes, declared by each kind:
        name: The name in params.yaml; for a kind written with arguments, the part before the first colon.
        usage: How params.yaml writes it, e.g. ``python:MODULE:FACTORY``.
        run_tag: The tag column of its TREC run.
        sections: The params sections, besides retrieve and score, its numbers depend on (kept in run.json).
        reads: The params sections its retrieval reads at the retrieve stage, which DVC re-runs it for.
        needs: What it needs from the stages before retrieve.
        takes_options: ``retrieve.options`` are its own (recorded in run.json).
        builder: ``module:function`` building its :class:`Ranker` from (kind, sources, params, engine).
    """

    name: ClassVar[str]
    usage: ClassVar[str]
    run_tag: ClassVar[str]
    sections: ClassVar[tuple[str, ...]] = ()
    reads: ClassVar[tuple[str, ...]] = ()
    needs: ClassVar[frozenset[Need]] = frozenset()
    takes_options: ClassVar[bool] = False
    builder: ClassVar[str]

    @classmethod
    def from_arguments(cls, arguments: Sequence[str]) -> RetrieverKind:
        """The kind written with ``arguments`` (the parts after its name); a kind without any takes none."""
        if arguments:
            raise ValueError(f"{cls.name} takes no arguments")
        return cls()

    @property
    def spec(self) -> str:
        """The value of ``retrieve.retriever`` this kind is written as."""
        return self.name

    @property
    def ranks_chunks(self) -> bool:
        """It ranks groundkit's chunks, so that every relevant passage is known; else its run's own passages."""
        return Need.RUN_FILE not in self.needs

    def build(self, sources: Sources, params: Params, engine: Engine) -> Ranker:
        """The ranker of this kind, ready for every query; the engine runs what the kind hands to one."""
        module, _, function = self.builder.partition(":")
        build: Builder = getattr(importlib.import_module(module), function)
        return build(self, sources, params, engine)


@dataclass(frozen=True)
class BM25(RetrieverKind):
    name = "bm25"
    usage = "bm25"
    run_tag = "groundkit-bm25"
    sections = ("chunk", "bm25", "tokenize")
    needs = frozenset({Need.INDEX})
    builder = "groundkit.retrieval.bm25.search:ranker"


@dataclass(frozen=True)
class Dense(RetrieverKind):
    name = "dense"
    usage = "dense"
    run_tag = "groundkit-dense"
    sections = ("chunk", "dense")
    reads = ("dense",)
    needs = frozenset({Need.EMBEDDINGS, Need.CHUNKS})
    builder = "groundkit.retrieval.dense:ranker"


@dataclass(frozen=True)
class Hybrid(RetrieverKind):
    name = "hybrid"
    usage = "hybrid"
    run_tag = "groundkit-hybrid"
    sections = ("chunk", "bm25", "tokenize", "dense", "hybrid")
    reads = ("dense", "hybrid")
    needs = frozenset({Need.INDEX, Need.EMBEDDINGS, Need.CHUNKS})
    builder = "groundkit.retrieval.hybrid:ranker"


@dataclass(frozen=True)
class External(RetrieverKind):
    # An external run brings its own passages, so not even the chunk parameters shape its numbers.
    name = "external"
    usage = "external"
    run_tag = "groundkit-external"
    needs = frozenset({Need.RUN_FILE})
    builder = "groundkit.retrieval.external:ranker"


@dataclass(frozen=True)
class Python(RetrieverKind):
    """``python:MODULE:FACTORY``: a factory of the user's, imported by name."""

    module: str = ""
    factory: str = ""
    name = "python"
    usage = "python:MODULE:FACTORY"
    run_tag = "groundkit-python"
    sections = ("chunk",)
    needs = frozenset({Need.CHUNKS})
    takes_options = True
    builder = "groundkit.retrieval.plugin:ranker"

    @classmethod
    def from_arguments(cls, arguments: Sequence[str]) -> RetrieverKind:
        if len(arguments) != 2 or not all(part.strip() for part in arguments):
            raise ValueError("takes a module and a factory: python:MODULE:FACTORY")
        return cls(module=arguments[0], factory=arguments[1])

    @property
    def spec(self) -> str:
        return f"python:{self.module}:{self.factory}"


@dataclass(frozen=True)
class PythonObject(Python):
    """A retriever object (or its factory) handed over in Python (the notebook API): no import, no string.

    Its ``spec`` names where the factory was defined, for run.json; ``made`` is what builds it.
    """

    made: Any = None
    builder = "groundkit.retrieval.plugin:object_ranker"

    @classmethod
    def of(cls, retriever: Any) -> PythonObject | None:
        """The kind of a retriever object with ``search(query, depth)`` or of a factory ``(chunks, options)``;
        None for anything else."""
        if callable(getattr(retriever, "search", None)):
            made, named = (lambda chunks, options: retriever), type(retriever)
        elif callable(retriever):
            made, named = retriever, retriever
        else:
            return None
        module = getattr(named, "__module__", None) or "__main__"
        name = getattr(named, "__qualname__", None) or getattr(named, "__name__", None) or "retriever"
        return cls(module=module, factory=name, made=made)


BUILT_IN: tuple[type[RetrieverKind], ...] = (BM25, Dense, Hybrid, External, Python)
"""Every kind groundkit ships, in the order messages list them."""

_BY_NAME: dict[str, type[RetrieverKind]] = {kind.name: kind for kind in BUILT_IN}


def _registered(name: str) -> type[RetrieverKind] | None:
    """A built-in kind, or one a package registers under ``name`` in the entry point group."""
    if name in _BY_NAME:
        return _BY_NAME[name]
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINTS, name=name):
        kind = point.load()
        if isinstance(kind, type) and issubclass(kind, RetrieverKind) and kind.name == name:
            return kind
        raise ValueError(f"the entry point {point.value!r} registered as {name!r} is not a RetrieverKind named "
                         f"{name!r}")
    return None


def parse(retriever: str) -> RetrieverKind:
    """The kind ``retriever`` (a value of ``retrieve.retriever``) names, with its arguments.

    Raises:
        ValueError: it names none, or gives the wrong arguments (params validation reports it as a
            ParamsError on ``retrieve.retriever``).
    """
    name, *arguments = retriever.split(":")
    kind = _registered(name)
    if kind is None:
        usages = [k.usage for k in BUILT_IN]
        raise ValueError(f"unknown retriever; use one of {', '.join(usages[:-1])} or {usages[-1]}")
    try:
        return kind.from_arguments(arguments)
    except ValueError as exc:
        raise ValueError(f"{retriever!r}: {kind.name} {exc}; write {kind.usage}") from None


def sections_read() -> tuple[str, ...]:
    """The params sections the built-in kinds read at retrieval, in order: the retrieve stage's params."""
    return tuple(dict.fromkeys(section for kind in BUILT_IN for section in kind.reads))


SECTIONS: tuple[str, ...] = tuple(dict.fromkeys(section for kind in BUILT_IN for section in kind.sections))
"""The params sections some built-in kind's numbers depend on, in order; run.json keeps those of the kind used."""
