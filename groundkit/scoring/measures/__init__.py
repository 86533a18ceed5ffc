"""Measures: pure per-query functions, one module each, and the one registry that names them.

Each module of this package but the private ones defines ``MEASURE``, one :class:`Measure`: its
name, the kinds of cut-off it takes, whether a higher value is better, a one-line description,
and its per-query function. The registry finds them by themselves, so a new measure is one module
(and its test); packages add theirs through the entry point group ``groundkit.measures``. What a
run computes is ``score.measures`` in params.yaml, a list of metric names, each a measure at a
cut-off; ``score.headline`` is what metrics.json keeps. Scoring, per_query.csv and its reader,
compare, the sweep view, the report and the command line take metric names from here.

Names follow ir_measures, so every number can be checked against trec_eval: ``recall@k`` is *hit
rate* (ir_measures ``Success@k``), ``mrr`` is ``RR`` over the retrieved depth, ``ndcg@k`` is
``nDCG@k`` with the relevance grade as gain. The cut-off is part of the name: ``name@k`` for the top
k passages, ``name@Nchars`` for the first N characters of the ranking, the passages concatenated
in rank order (the one the budget cuts counts only for its visible prefix). A measure at a budget
is *size-fair*: a larger passage cannot win by the text it carries past the budget. An answerable
query that retrieved nothing scores 0 on every measure; it is never dropped from the mean.

Relevance: a passage is relevant to a gold span when it holds at least ``score.min_overlap`` of
the span's characters, and at least one (the default, 0, is the design record's rule: any overlap).
"""

from __future__ import annotations

import importlib
import math
import pkgutil
from collections.abc import Callable, Iterator, Mapping, Sequence, Set
from dataclasses import dataclass, field
from functools import cached_property
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

from groundkit.corpus.passage import Passage
from groundkit.errors import MeasureError, ParamsError
from groundkit.scoring.names import STEM, Cut, Cutoff, split_name

if TYPE_CHECKING:
    from groundkit.config import Params

ENTRY_POINTS = "groundkit.measures"
"""The entry point group through which other packages add measures (each pointing at a Measure)."""


@dataclass(frozen=True)
class Relevance:
    """When a retrieved passage counts as relevant to a gold span: it holds at least ``min_overlap`` of the span's
    characters (a fraction from 0 to 1), and at least one."""

    min_overlap: float = 0.0

    def needed(self, span: Passage) -> int:
        """How many of ``span``'s characters a passage must hold."""
        return max(1, math.ceil(self.min_overlap * span.length - 1e-9))

    def holds(self, passage: Passage, span: Passage, *, within: int | None = None) -> bool:
        """Whether ``passage`` (only its first ``within`` characters, when given) is relevant to ``span``."""
        if passage.document != span.document:
            return False
        end = passage.end if within is None else min(passage.end, passage.start + within)
        return min(end, span.end) - max(passage.start, span.start) >= self.needed(span)


ANY_OVERLAP = Relevance()
"""The design record's rule: one shared character makes a passage relevant."""


@dataclass(frozen=True)
class QueryRun:
    """What a per-query measure reads of one answerable query.

    Attributes:
        ranking: Retrieved ids, best first.
        gold: The relevant ids (the query's qrels). For an external run they include placeholder
            ids for gold it did not retrieve.
        passages: The passages of (at least) the head of ``ranking``, in its order: the top
            max(k), and enough to fill the largest budget.
        spans: The query's gold spans.
        grades: Each relevant id's grade, the gain nDCG gives it; None means 1 for every id of ``gold``.
        relevance: The rule that made ``gold``, for measures that read the spans themselves.
        shared: What one measure worked out that another at the same cut-off reads too (coverage, precision
            and IoU read the same characters), kept for this query alone; a measure's own business.
    """

    ranking: Sequence[str]
    gold: Set[str]
    passages: Sequence[Passage]
    spans: Sequence[Passage]
    grades: Mapping[str, int] | None = None
    relevance: Relevance = ANY_OVERLAP
    shared: dict[object, object] = field(default_factory=dict, compare=False, repr=False)


PerQuery = Callable[[QueryRun, Cut | None], float]
"""A measure's value for one query at one cut-off (None for a measure without one)."""

@dataclass(frozen=True)
class Measure:
    """One measure: its name, the cut-offs it takes, and how one query scores on it.

    Attributes:
        name: The part of every metric name before ``@``.
        cutoffs: The kinds of cut-off it is reported at; empty for one without (``mrr``).
        description: One line, for help texts and for readers of the registry.
        per_query: The query's value at one cut-off (None for a measure without one).
        decimals: Decimal places a report shows (not per_query.csv, which keeps six for all).
        directed: Higher is better. False for a measure whose change is neither better nor worse by itself
            (the context a ranking costs): reports show its delta unjudged, and no verdict is gated on it.
        reads_characters: It reads the passages' characters (their offsets) and the gold spans, not only the
            ranked ids and the qrels. Such a measure means nothing for a document-level run, which has ids
            alone: ``groundkit score-trec`` refuses it for that reason. A budget cut-off (``@Nchars``) reads
            characters whatever the measure.
    """

    name: str
    cutoffs: frozenset[Cutoff]
    description: str
    per_query: PerQuery = field(compare=False)
    decimals: int = 4
    directed: bool = True
    reads_characters: bool = False

    @property
    def pattern(self) -> str:
        """How its metric names are written: ``recall@k|recall@Nchars``, ``mrr``."""
        suffix = {Cutoff.RANK: "@k", Cutoff.BUDGET: "@Nchars"}
        return "|".join(self.name + suffix[c] for c in Cutoff if c in self.cutoffs) or self.name

    def label(self, cut: Cut | None = None) -> str:
        """The metric name at ``cut``: ``ndcg@10``, ``recall@500chars``, ``mrr``."""
        if cut is None:
            if self.cutoffs:
                raise ValueError(f"{self.pattern} needs a cut-off")
            return self.name
        if cut.kind not in self.cutoffs or cut.value <= 0:
            raise ValueError(f"{self.pattern} takes no cut-off {cut.suffix}")
        return self.name + cut.suffix


@dataclass(frozen=True)
class Metric:
    """A metric: a measure at a cut-off (``coverage@1000chars``), parsed from its name."""

    measure: Measure
    cut: Cut | None

    @cached_property
    def name(self) -> str:
        return self.measure.label(self.cut)

    @property
    def size_fair(self) -> bool:
        """Read at a context budget: a larger passage cannot win by the text it carries past the budget."""
        return self.cut is not None and self.cut.kind is Cutoff.BUDGET

    @property
    def reads_characters(self) -> bool:
        """It reads passages' characters and gold spans (a character measure, or any measure at a budget)."""
        return self.measure.reads_characters or self.size_fair

    def value(self, run: QueryRun) -> float:
        return self.measure.per_query(run, self.cut)


class Registry:
    """The measures groundkit knows; :data:`MEASURES` is the one in use (this package's modules, and entry points)."""

    def __init__(self, measures: Sequence[Measure] = (), *,
                 plugins: Callable[[], Sequence[Measure]] | None = None) -> None:
        """``plugins`` gives more measures, asked for only when a name is not among ``measures`` or every measure
        is listed: finding the entry points of every installed package takes a DVC stage about 15 ms."""
        self._measures: dict[str, Measure] = {}
        self._plugins: Callable[[], Sequence[Measure]] | None = None
        for measure in measures:
            self.register(measure)
        self._plugins = plugins

    def _add_plugins(self) -> None:
        if self._plugins is not None:
            found, self._plugins = self._plugins, None
            for measure in found():
                self.register(measure)

    def __iter__(self) -> Iterator[Measure]:
        self._add_plugins()
        return iter(tuple(self._measures.values()))

    def __getitem__(self, name: str) -> Measure:
        """The measure named ``name`` (``MEASURES["ndcg"]``)."""
        if name not in self._measures:
            self._add_plugins()
        return self._measures[name]

    def register(self, measure: Measure) -> Measure:
        """Add ``measure`` and return it.

        Raises:
            ValueError: The name is not a lower-case identifier, or a measure of that name is registered already.
        """
        if not STEM.fullmatch(measure.name):
            raise ValueError(f"measure name {measure.name!r} must be lower-case letters, digits and _, "
                             "starting with a letter")
        self._add_plugins()  # a name may be a plugin's
        if measure.name in self._measures:
            raise ValueError(f"a measure {measure.name!r} is already registered")
        self._measures[measure.name] = measure
        return measure

    def unregister(self, measure: Measure) -> None:
        """Remove ``measure`` (a test's throwaway measure, say)."""
        del self._measures[measure.name]

    def parse(self, name: str) -> Metric:
        """The metric a name stands for: ``"ndcg@10"`` gives nDCG at the top 10.

        Raises:
            MeasureError: No registered measure writes ``name``.
        """
        try:
            stem, cut = split_name(name)
        except ValueError as exc:
            raise MeasureError(str(exc)) from None
        if stem not in self._measures:
            self._add_plugins()
        measure = self._measures.get(stem)
        if measure is None:
            known = ", ".join(m.pattern for m in self)
            raise MeasureError(f"{name!r} is not a metric groundkit reports; the measures are {known}")
        if (cut is None and measure.cutoffs) or (cut is not None and cut.kind not in measure.cutoffs):
            raise MeasureError(f"{name!r}: {measure.name} is written {measure.pattern}")
        return Metric(measure, cut)

    def parse_all(self, names: Sequence[str]) -> list[Metric]:
        return [self.parse(name) for name in names]


def metrics_of(params: Params) -> list[Metric]:
    """The metrics ``score.measures`` names, parsed; a name no measure writes is an error naming its key."""
    metrics = []
    for number, name in enumerate(params.score.measures):
        try:
            metrics.append(MEASURES.parse(name))
        except MeasureError as exc:
            raise ParamsError(params.source, str(exc), key=f"score.measures.{number}",
                              fix="name a measure groundkit reports at a cut-off it takes (the guide's "
                                  "docs/reference/metrics.md lists them)") from None
    return metrics


def score(metrics: Sequence[Metric], run: QueryRun) -> dict[str, float]:
    """Every metric of one answerable query, keyed by name, in the order given."""
    return {metric.name: metric.measure.per_query(run, metric.cut) for metric in metrics}


def _modules() -> list[Measure]:
    """The ``MEASURE`` of every public module of this package."""
    return [importlib.import_module(f"{__name__}.{module.name}").MEASURE
            for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)
            if not module.name.startswith("_")]


def _entry_points() -> list[Measure]:
    """The measures of the entry point group, which other packages declare."""
    found = []
    for point in entry_points(group=ENTRY_POINTS):
        loaded = point.load()
        if not isinstance(loaded, Measure):
            raise MeasureError(f"the entry point {point.value!r} in group {ENTRY_POINTS} is not a Measure")
        found.append(loaded)
    return found


MEASURES = Registry(_modules(), plugins=_entry_points)
"""The measures groundkit knows: one module of this package each, and those packages add."""
