"""Measures: pure per-query functions, and the one registry that names them.

Every metric groundkit reports is declared once, at the bottom of this module, as a
:class:`Measure`: its name, the kind of cut-off it takes, whether it scores retrieval quality or
the context it costs, a one-line description, and its per-query function. Scoring, the per-query
CSV and its reader, compare, sweep-plot and the command line's defaults all take metric names from
:data:`MEASURES`; none of them spells a name out by itself.

Names follow ir_measures, so every number here can be checked against
trec_eval: groundkit's ``recall@k`` is *hit rate* (ir_measures ``Success@k``),
``mrr`` is ``RR`` over the retrieved depth, ``ndcg@k`` is ``nDCG@k`` with the
relevance grade as gain (binary unless judgments give grades). Hit rate and
MRR count any relevant id, whatever its grade. An answerable query that retrieved nothing scores 0 on all of
them; it is never dropped from the mean. The cut-off is part of the name:
``name@k`` for a rank cut-off, ``name@Nchars`` for a context budget of N characters.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence, Set
from dataclasses import dataclass
from enum import Enum

from groundkit.corpus.passage import Passage
from groundkit.errors import MeasureError


def first_gold_rank(ranking: Sequence[str], gold: Set[str] | Mapping[str, int]) -> int | None:
    """1-based rank of the first gold id in ``ranking``, or None if there is none."""
    for rank, item in enumerate(ranking, start=1):
        if item in gold:
            return rank
    return None


def recall_at_k(ranking: Sequence[str], gold: Set[str] | Mapping[str, int], k: int) -> float:
    """Hit rate at k: 1.0 if any of the top ``k`` ids is gold, else 0.0.

    This is not set recall (|top k ∩ gold| / |gold|): a query whose answer
    straddles two chunks must not score half for retrieving one of them.
    Equals ir_measures ``Success@k``.
    """
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    return 1.0 if any(item in gold for item in ranking[:k]) else 0.0


def mrr(ranking: Sequence[str], gold: Set[str] | Mapping[str, int]) -> float:
    """Reciprocal rank of the first gold id, 1/r, or 0.0 if none was retrieved.

    Averaged over queries this is the mean reciprocal rank; the cut-off is the
    retrieval depth. Equals ir_measures ``RR`` on a run truncated to that depth.
    """
    rank = first_gold_rank(ranking, gold)
    return 0.0 if rank is None else 1.0 / rank


def ndcg_at_k(ranking: Sequence[str], gold: Set[str] | Mapping[str, int], k: int) -> float:
    """Normalised discounted cumulative gain at k, with each relevant id's grade as its gain.

    DCG@k = sum over ranks r <= k of grade(id at r) / log2(r + 1), a non-relevant id adding 0;
    IDCG@k = the same sum over the relevant ids sorted by grade, best first;
    nDCG@k = DCG@k / IDCG@k (Järvelin and Kekäläinen, 2002).

    ``gold`` maps each relevant id to its grade (a set means grade 1 for each: binary gain). The gain
    is the grade itself, as trec_eval's and ir_measures' ``nDCG@k`` use it, so this equals ir_measures
    on the same qrels. ``gold`` holds chunk ids, so a quote straddling two chunks puts two ids in it
    and raises IDCG; see KNOWN_LIMITATIONS.md. An external run's qrels also hold placeholder ids for
    gold it did not retrieve (see scoring/score.py); they count in IDCG only, as in trec_eval.
    """
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    grades = gold if isinstance(gold, Mapping) else dict.fromkeys(gold, 1)
    if not grades:
        raise ValueError("nDCG is undefined for a query without gold ids")
    dcg = sum(grades[item] / math.log2(rank + 1) for rank, item in enumerate(ranking[:k], start=1) if item in grades)
    best = heapq.nlargest(k, grades.values())
    ideal = sum(grade / math.log2(rank + 1) for rank, grade in enumerate(best, start=1))
    return dcg / ideal


def context_chars_at_k(passages: Sequence[Passage], k: int) -> int:
    """Characters of context the top ``k`` passages put in front of a reader: the sum of their lengths.

    Two rankings with the same hit rate are not equally good if one needs four times the text to get
    there; this is the cost side of ``recall@k``.
    """
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    return sum(passage.length for passage in passages[:k])


def budget_hit(passages: Sequence[Passage], gold: Sequence[Passage], budget: int) -> float:
    """Hit rate at a context budget: 1.0 if the first ``budget`` characters of context reach a gold span.

    The ranking is read as a reader with a ``budget``-character context window would receive it:
    passages concatenated in rank order and cut at ``budget`` characters. It is a hit if the part of
    some passage inside the budget overlaps a gold span of the same document by at least one
    character, the same overlap rule that makes a chunk relevant. A passage cut by the budget counts
    only for its visible prefix, so a large chunk cannot win by the text it carries past the budget.
    """
    if budget <= 0:
        raise ValueError(f"budget must be positive, got {budget}")
    used = 0
    for passage in passages:
        visible = budget - used
        for span in gold:  # a plain loop: a generator per passage was a fifth of scoring's time
            if passage.overlaps(span, within=visible):
                return 1.0
        used += passage.length
        if used >= budget:
            break
    return 0.0


def budget_needed(passages: Sequence[Passage], gold: Sequence[Passage]) -> int | None:
    """The smallest budget at which :func:`budget_hit` is 1.0 for these passages (None: none of them reach gold).

    ``budget_hit(passages, gold, b) == 1.0`` exactly when ``b >= budget_needed(passages, gold)``: passage i,
    after ``used`` characters, shows gold within ``w`` characters, ``w`` being one past where the span
    starts in it (1 if the span starts before it), so it hits from budget ``used + w`` on. One walk answers
    every budget of a curve, where asking :func:`budget_hit` walks the ranking once per budget.
    """
    needed: int | None = None
    used = 0
    for passage in passages:
        if needed is not None and used >= needed:
            break
        for span in gold:
            if passage.overlaps(span):
                at = used + max(span.start - passage.start, 0) + 1
                needed = at if needed is None else min(needed, at)
        used += passage.length
    return needed


# --- the registry --------------------------------------------------------------------------------


class Cutoff(Enum):
    """What a measure's cut-off counts, and so how it is written in the metric's name."""

    NONE = "none"
    """No cut-off (the whole retrieved depth): the name is the measure's name, e.g. ``mrr``."""
    RANK = "rank"
    """Each k of ``score.ks``: ``name@k``, e.g. ``ndcg@10``."""
    BUDGET = "budget"
    """Each budget of ``score.budgets``, in characters: ``name@Nchars``, e.g. ``recall@1000chars``."""


class Aspect(Enum):
    """Whether a measure says how well a run retrieved, or how much context it took to get there."""

    QUALITY = "quality"
    COST = "cost"


@dataclass(frozen=True)
class QueryRun:
    """What a per-query measure reads of one answerable query.

    Attributes:
        ranking: Retrieved ids, best first.
        gold: The relevant ids (the query's qrels). For an external run they include placeholder
            ids for gold it did not retrieve.
        passages: The passages of (at least) the head of ``ranking``, in its order: the top
            max(ks), and enough to fill the largest budget.
        spans: The query's gold spans.
        grades: Each relevant id's grade, the gain nDCG gives it; None means 1 for every id of ``gold``.
    """

    ranking: Sequence[str]
    gold: Set[str]
    passages: Sequence[Passage]
    spans: Sequence[Passage]
    grades: Mapping[str, int] | None = None


_STEM = re.compile(r"[a-z][a-z0-9_]*")
# The inverse of Measure.label: a stem, then for a cut-off "@" and a positive whole number without
# leading zeros (so a name has one spelling), then "chars" for a budget.
_NAME = re.compile(r"(?P<stem>[a-z][a-z0-9_]*)(?:@(?P<cutoff>[1-9][0-9]*)(?P<chars>chars)?)?")


PerQuery = Callable[["QueryRun", int | None], float]
"""A measure's value for one query at one cut-off (None for a measure without one)."""


@dataclass(frozen=True)
class Measure:
    """One measure: how it is named, what cut-offs it takes, and how one query scores on it.

    Attributes:
        name: The name, and the part of every metric name before ``@``.
        cutoff: The kind of cut-off; with ``name`` it identifies the measure (``recall@k`` and
            ``recall@Nchars`` are two measures).
        aspect: Quality (better retrieval) or cost (context spent).
        description: One line, for help texts and for readers of the registry.
        per_query: The query's value at one cut-off (None for :attr:`Cutoff.NONE`).
        decimals: Decimal places a report shows (not per_query.csv, which keeps six for all).
        directed: Higher is better. False for a measure whose change is neither better nor worse by itself
            (the context a ranking costs): reports show its delta unjudged, and no verdict is gated on it.
    """

    name: str
    cutoff: Cutoff
    aspect: Aspect
    description: str
    per_query: PerQuery
    decimals: int = 4
    directed: bool = True

    @property
    def pattern(self) -> str:
        """The metric name with a placeholder for its cut-off: ``recall@k``, ``mrr``, ``recall@Nchars``."""
        suffix = {Cutoff.NONE: "", Cutoff.RANK: "@k", Cutoff.BUDGET: "@Nchars"}[self.cutoff]
        return self.name + suffix

    def label(self, cutoff: int | None = None) -> str:
        """The metric name at ``cutoff``: ``ndcg@10`` for (ndcg, 10), ``recall@500chars`` for a budget of 500."""
        if self.cutoff is Cutoff.NONE:
            if cutoff is not None:
                raise ValueError(f"{self.name} takes no cut-off, got {cutoff}")
            return self.name
        if cutoff is None or cutoff <= 0:
            raise ValueError(f"{self.pattern} needs a positive cut-off, got {cutoff}")
        return f"{self.name}@{cutoff}chars" if self.cutoff is Cutoff.BUDGET else f"{self.name}@{cutoff}"


class Registry:
    """The measures groundkit reports, in report order; :data:`MEASURES` is the one in use."""

    def __init__(self) -> None:
        self._measures: list[Measure] = []
        # (ks, budgets) -> [(name, per-query function, cut-off)]: score() runs once per query, and
        # building the names each time was a third of the score stage's time.
        self._plans: dict[tuple[tuple[int, ...], tuple[int, ...]], list[tuple[str, PerQuery, int | None]]] = {}

    def __iter__(self) -> Iterator[Measure]:
        return iter(tuple(self._measures))

    def register(self, measure: Measure) -> Measure:
        """Append ``measure`` to the report order and return it.

        Raises:
            ValueError: The name is not a lower-case identifier, or a measure of the same name and
                cut-off kind is registered already (its metric names would be ambiguous).
        """
        if not _STEM.fullmatch(measure.name):
            raise ValueError(f"measure name {measure.name!r} must be lower-case letters, digits and _, "
                             "starting with a letter")
        if any((m.name, m.cutoff) == (measure.name, measure.cutoff) for m in self._measures):
            raise ValueError(f"a measure {measure.pattern} is already registered")
        self._measures.append(measure)
        self._plans.clear()
        return measure

    def unregister(self, measure: Measure) -> None:
        """Remove ``measure`` (a test's throwaway measure, say)."""
        self._measures.remove(measure)
        self._plans.clear()

    @staticmethod
    def cutoffs(measure: Measure, ks: Sequence[int], budgets: Sequence[int]) -> list[int | None]:
        """The cut-offs ``measure`` is reported at for these ``score.ks`` and ``score.budgets``."""
        return {Cutoff.NONE: [None], Cutoff.RANK: list(ks), Cutoff.BUDGET: list(budgets)}[measure.cutoff]

    def names(self, ks: Sequence[int], budgets: Sequence[int], *, aspect: Aspect | None = None) -> list[str]:
        """Every metric name a run with these cut-offs reports, in report order (optionally of one aspect only).

        The order is measure by measure, each over its cut-offs: recall@k, mrr, ndcg@k, chars@k,
        recall@Nchars. metrics.json and per_query.csv follow it, so it is part of their bytes.
        """
        return [m.label(c) for m in self._measures if aspect is None or m.aspect is aspect
                for c in self.cutoffs(m, ks, budgets)]

    def parse(self, name: str) -> tuple[Measure, int | None]:
        """The measure and cut-off a metric name stands for: ``"ndcg@10"`` gives (the nDCG measure, 10).

        Raises:
            MeasureError: No registered measure writes ``name``.
        """
        match = _NAME.fullmatch(name)
        if match is not None:
            cutoff = match["cutoff"]
            kind = Cutoff.NONE if cutoff is None else Cutoff.BUDGET if match["chars"] else Cutoff.RANK
            for measure in self._measures:
                if (measure.name, measure.cutoff) == (match["stem"], kind):
                    return measure, None if cutoff is None else int(cutoff)
        raise MeasureError(f"{name!r} is not a metric groundkit reports; the metrics are "
                           f"{', '.join(m.pattern for m in self._measures)}")

    def score(self, run: QueryRun, ks: Sequence[int], budgets: Sequence[int]) -> dict[str, float]:
        """Every metric of one answerable query, keyed by name, in report order."""
        key = (tuple(ks), tuple(budgets))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = [(m.label(c), m.per_query, c) for m in self._measures
                                       for c in self.cutoffs(m, ks, budgets)]
        return {name: per_query(run, cutoff) for name, per_query, cutoff in plan}


MEASURES = Registry()
"""The measures every run reports. Adding one is one ``MEASURES.register(Measure(...))`` below, plus its test."""

RECALL = MEASURES.register(Measure(
    "recall", Cutoff.RANK, Aspect.QUALITY,
    "hit rate at k: 1 if any of the top k is gold, else 0 (ir_measures Success@k)",
    lambda q, k: recall_at_k(q.ranking, q.gold, k)))
MRR = MEASURES.register(Measure(
    "mrr", Cutoff.NONE, Aspect.QUALITY,
    "reciprocal rank of the first gold id over the retrieved depth (ir_measures RR)",
    lambda q, _: mrr(q.ranking, q.gold)))
NDCG = MEASURES.register(Measure(
    "ndcg", Cutoff.RANK, Aspect.QUALITY,
    "nDCG at k, the relevance grade as gain (ir_measures nDCG@k)",
    lambda q, k: ndcg_at_k(q.ranking, q.gold if q.grades is None else q.grades, k)))
CHARS = MEASURES.register(Measure(
    "chars", Cutoff.RANK, Aspect.COST,
    "characters of context in the top k passages",
    lambda q, k: float(context_chars_at_k(q.passages, k)), decimals=1, directed=False))
BUDGET_RECALL = MEASURES.register(Measure(
    "recall", Cutoff.BUDGET, Aspect.COST,
    "hit rate when the ranking is cut at N characters of context",
    lambda q, b: budget_hit(q.passages, q.spans, b)))
