"""The vectorised provider: every groundkit measure for all queries at once, in a few numpy operations.

Rank measures (``recall@k``, ``mrr``, ``ndcg@k``, ``set_recall@k``) read :class:`Ranked`: the rows of the
relevant ids each ranking holds (query, rank, grade), and each query's ideal ranking. A relevant id is
looked up in its ranking (a scan in C), never the ranking's every id in Python. ``groundkit score-trec``
builds the same rows from a TREC run and its qrels, and reads these functions too.

Character measures (``chars@k``, ``coverage``, ``precision``, ``iou``, ``span_recall@k`` and ``recall@Nchars``)
read the head of each ranking as flat arrays and cut the gold and the passages read into elementary
segments (between consecutive offsets of any span or passage of one query in one document). Each segment
of the gold is credited to the first rank whose passage covers it: what was read before is not credited
again, so overlapping windows, a passage ranked twice and the overlapping passages of a hybrid run count
the union of what was read. A prefix sum over ranks then gives the gold characters read at every cut-off;
at a budget, the passage it cuts adds the part of its newly read segments inside its visible prefix.

Every value equals the per-query provider's (groundkit/scoring/providers/per_query.py), the measures'
definitions, to 1e-12 (tests/scoring/test_providers.py): the sums run in the same order and nDCG's discounts
are the same ``math.log2`` values, so in practice they are the same floats.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from groundkit.corpus.passage import Passage
from groundkit.scoring.measures import (
    Cutoff,
    Measure,
    Metric,
    chars,
    coverage,
    iou,
    mrr,
    ndcg,
    precision,
    recall,
    set_recall,
    span_recall,
)
from groundkit.scoring.providers.inputs import Labels, Retrieved, reach

_NONE = np.iinfo(np.int64).max
"""A rank no passage has: "not found"."""


# --- rank measures ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ranked:
    """What the rank measures read of every query at once.

    Attributes:
        n: The number of queries.
        query, rank, grade: One entry per relevant id a ranking holds (an id of its qrels, at its 1-based rank,
            with its grade), sorted by query, then rank.
        ideal_query, ideal_rank, ideal_grade: Each query's relevant ids, best grade first: nDCG's ideal ranking.
        relevant: Relevant ids per query.
        first: Rank of each query's first relevant id; 0 for none.
    """

    n: int
    query: np.ndarray
    rank: np.ndarray
    grade: np.ndarray
    ideal_query: np.ndarray
    ideal_rank: np.ndarray
    ideal_grade: np.ndarray
    relevant: np.ndarray
    first: np.ndarray

    @classmethod
    def of(cls, n: int, query: np.ndarray, rank: np.ndarray, grade: np.ndarray, ideal_query: np.ndarray,
           ideal_grade: np.ndarray) -> Ranked:
        """From the relevant rows (any order) and every query's relevant grades (any order)."""
        order = np.lexsort((rank, query))
        query, rank, grade = query[order], rank[order], grade[order].astype(np.float64)
        relevant = np.bincount(ideal_query, minlength=n)
        by_grade = np.lexsort((-ideal_grade, ideal_query))
        ideal_query, ideal_grade = ideal_query[by_grade], ideal_grade[by_grade].astype(np.float64)
        starts = np.concatenate(([0], np.cumsum(relevant)[:-1]))
        first = np.zeros(n, dtype=np.int64)
        if len(query):
            opening = np.concatenate(([True], query[1:] != query[:-1]))
            first[query[opening]] = rank[opening]
        return cls(n, query, rank, grade, ideal_query, np.arange(len(ideal_query)) - starts[ideal_query] + 1,
                   ideal_grade, relevant, first)

    @classmethod
    def from_labels(cls, retrieved: Retrieved, labels: Labels) -> Ranked:
        """The relevant rows of ``retrieved``'s rankings under ``labels``' qrels.

        The last pair's rows are kept while both objects live (weak references), so the measures and
        :func:`first_relevant` of one scoring call look the rankings through once. The invariant: a Retrieved
        and a Labels are not changed once made (frozen dataclasses; their sequences are not edited in place).
        """
        global _last
        if _last is not None and _last[0]() is retrieved and _last[1]() is labels:
            return _last[2]
        ranked = cls._built(retrieved, labels)
        _last = (weakref.ref(retrieved), weakref.ref(labels), ranked)
        return ranked

    @classmethod
    def _built(cls, retrieved: Retrieved, labels: Labels) -> Ranked:
        query: list[int] = []
        rank: list[int] = []
        grade: list[int] = []
        for i, (ranking, qrels) in enumerate(zip(retrieved.rankings, labels.qrels, strict=True)):
            for item, value in qrels.items():
                if item in ranking:  # a scan in C; the ids of a ranking are rarely relevant
                    at = ranking.index(item)
                    query.append(i), rank.append(at + 1), grade.append(value)
                    if ranking.count(item) > 1:  # the per-query measures count an id ranked twice twice
                        for again in range(at + 1, len(ranking)):
                            if ranking[again] == item:
                                query.append(i), rank.append(again + 1), grade.append(value)
        relevant = [len(qrels) for qrels in labels.qrels]
        return cls.of(len(retrieved), np.array(query, dtype=np.int64), np.array(rank, dtype=np.int64),
                      np.array(grade, dtype=np.int64), np.repeat(np.arange(len(relevant)), relevant),
                      np.fromiter(chain.from_iterable(q.values() for q in labels.qrels), dtype=np.int64,
                                  count=sum(relevant)))


_last: tuple[weakref.ref[Retrieved], weakref.ref[Labels], Ranked] | None = None


def first_relevant(retrieved: Retrieved, labels: Labels) -> list[int | None]:
    """Each query's rank of its first relevant id (None for none): per_query.csv's ``first_gold_rank``."""
    first = Ranked.from_labels(retrieved, labels).first.tolist()
    return [rank or None for rank in first]


def _discounts(k: int) -> np.ndarray:
    # The per-query definition divides by math.log2(rank + 1): the same floats, not numpy's log2.
    return np.array([math.log2(rank + 1) for rank in range(1, k + 1)], dtype=np.float64)


def _hit_rate(r: Ranked, k: int) -> np.ndarray:
    return ((r.first > 0) & (r.first <= k)).astype(np.float64)


def _reciprocal_rank(r: Ranked, k: int) -> np.ndarray:
    return np.divide(1.0, r.first, out=np.zeros(r.n), where=r.first > 0)


def _ndcg(r: Ranked, k: int) -> np.ndarray:
    discounts = _discounts(k)
    top = r.rank <= k
    dcg = np.bincount(r.query[top], weights=r.grade[top] / discounts[r.rank[top] - 1], minlength=r.n)
    within = r.ideal_rank <= k
    ideal = np.bincount(r.ideal_query[within], weights=r.ideal_grade[within] / discounts[r.ideal_rank[within] - 1],
                        minlength=r.n)
    return np.divide(dcg, ideal, out=np.zeros(r.n), where=ideal > 0)


def _set_recall(r: Ranked, k: int) -> np.ndarray:
    found = np.bincount(r.query[r.rank <= k], minlength=r.n).astype(np.float64)
    return np.divide(found, r.relevant, out=np.zeros(r.n), where=r.relevant > 0)


RankFunction = Callable[[Ranked, int], np.ndarray]


# --- character measures -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Read:
    """What the character measures read of every query at once: the heads of the rankings as flat rows, and the
    gold characters each rank reads first.

    Attributes:
        n: The number of queries.
        offsets: Query i's rows are ``offsets[i]:offsets[i + 1]``, in rank order.
        start, length: Each row's passage.
        read: Characters read through each row (its query's passages up to it, included).
        credited: Gold characters read through each row, each counted once: the union of what was read.
        gold: Each query's gold characters (the union of its spans).
        segments: The gold segments some row reads, as (query, rank first reading it, start, end).
        span_query, span_first: Each distinct gold span's query, and the first rank relevant to it under the
            run's rule (``_NONE`` for none).
        spans: Distinct gold spans per query.
        needed: Each query's smallest budget at which ``recall`` is 1 (``_NONE`` for none): the least, over the
            pairs of a passage and a span it is relevant to, of the characters read before the passage, then up
            to the span's start, then the overlap the rule needs (recall.budget_needed's walk, as arrays).
    """

    n: int
    offsets: np.ndarray
    start: np.ndarray
    length: np.ndarray
    read: np.ndarray
    credited: np.ndarray
    gold: np.ndarray
    segments: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    span_query: np.ndarray
    span_first: np.ndarray
    spans: np.ndarray
    needed: np.ndarray

    def at_rank(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(gold characters read, characters read) at the top ``k``, per query."""
        rows = np.minimum(self.offsets[:-1] + k, self.offsets[1:]) - 1
        some = rows >= self.offsets[:-1]
        rows = np.maximum(rows, 0)
        return (np.where(some, self.credited[rows] if len(self.credited) else 0, 0),
                np.where(some, self.read[rows] if len(self.read) else 0, 0))

    def at_budget(self, budget: int) -> tuple[np.ndarray, np.ndarray]:
        """(gold characters read, characters read) within the first ``budget`` characters, per query."""
        covered, read = self.at_rank(np.iinfo(np.int64).max // 2)
        counts = np.diff(self.offsets)
        if not len(self.read):
            return covered, read
        # The row the budget cuts: the first whose characters read reach it.
        row_query = np.repeat(np.arange(self.n), counts)
        scale = int(self.read.max()) + budget + 1
        cut = np.searchsorted(row_query * scale + self.read, np.arange(self.n) * scale + budget, side="left")
        cuts = cut < self.offsets[1:]
        cut = np.minimum(cut, len(self.read) - 1)
        before = self.read[cut] - self.length[cut]
        visible = budget - before
        # Gold read before the cut row, then the cut row's first reading of its visible prefix.
        previous = np.where(cut > self.offsets[:-1], self.credited[np.maximum(cut - 1, 0)], 0)
        s_query, s_rank, s_start, s_end = self.segments
        rank_of_cut = cut - self.offsets[:-1] + 1
        mine = cuts[s_query] & (s_rank == rank_of_cut[s_query])
        window_end = self.start[cut] + visible
        part = np.clip(np.minimum(s_end, window_end[s_query]) - s_start, 0, None)
        partial = np.bincount(s_query[mine], weights=part[mine], minlength=self.n)
        return (np.where(cuts, previous + partial, covered), np.where(cuts, budget, read))

    @classmethod
    def from_labels(cls, retrieved: Retrieved, labels: Labels, k: int, budget: int) -> Read:
        n = len(retrieved)
        assert retrieved.passages is not None
        codes: dict[str, int] = {}
        p_query, p_rank, p_doc, p_start, p_end = _heads(retrieved.rankings, retrieved.passages, k, budget, codes)
        counts = np.bincount(p_query, minlength=n)
        offsets = np.concatenate(([0], np.cumsum(counts)))
        rows = p_query
        length = p_end - p_start
        read = _within(np.cumsum(length), offsets, p_query)

        spans = labels.spans or [()] * n
        s_count = np.fromiter(map(len, spans), dtype=np.int64, count=n)
        flat = list(chain.from_iterable(spans))
        s_query = np.repeat(np.arange(n), s_count)
        s_doc = np.array([codes.setdefault(s.document, len(codes)) for s in flat], dtype=np.int64)
        s_start = np.array([s.start for s in flat], dtype=np.int64)
        s_end = np.array([s.end for s in flat], dtype=np.int64)
        # A span quoted twice is one span.
        order = np.lexsort((s_end, s_start, s_doc, s_query))
        s_query, s_doc, s_start, s_end = s_query[order], s_doc[order], s_start[order], s_end[order]
        distinct = np.ones(len(order), dtype=bool)
        distinct[1:] = ((s_query[1:] != s_query[:-1]) | (s_doc[1:] != s_doc[:-1]) | (s_start[1:] != s_start[:-1])
                        | (s_end[1:] != s_end[:-1]))
        s_query, s_doc, s_start, s_end = s_query[distinct], s_doc[distinct], s_start[distinct], s_end[distinct]

        # Groups: a query's gold in one document. Only the passages of such a group can read gold.
        n_docs = max(len(codes), 1)
        groups = np.unique(s_query * n_docs + s_doc)
        p_raw = p_query * n_docs + p_doc
        p_group = np.searchsorted(groups, p_raw)
        inside = (p_group < len(groups)) & (groups[np.minimum(p_group, max(len(groups) - 1, 0))] == p_raw) \
            if len(groups) else np.zeros(len(rows), dtype=bool)
        s_group = np.searchsorted(groups, s_query * n_docs + s_doc)
        g_query = groups // n_docs

        scale = int(max(p_end.max(initial=0), s_end.max(initial=0))) + 1
        r_rows = np.flatnonzero(inside)
        r_group, r_start, r_end = p_group[r_rows], p_start[r_rows], p_end[r_rows]
        keys = np.unique(np.concatenate((s_group * scale + s_start, s_group * scale + s_end,
                                         r_group * scale + r_start, r_group * scale + r_end)))
        segment_count = max(len(keys) - 1, 0)
        seg_start, seg_end = keys[:-1] % scale, keys[:-1] % scale + np.diff(keys)
        seg_query = g_query[keys[:-1] // scale] if segment_count else np.zeros(0, dtype=np.int64)
        # Gold segments: those a span covers (a +1 at its first segment, a -1 past its last).
        cover = np.cumsum(np.bincount(np.searchsorted(keys, s_group * scale + s_start), minlength=len(keys) + 1)
                          - np.bincount(np.searchsorted(keys, s_group * scale + s_end), minlength=len(keys) + 1))
        is_gold = cover[:segment_count] > 0
        seg_len = np.diff(keys)
        gold = np.bincount(seg_query[is_gold], weights=seg_len[is_gold], minlength=n)
        # Each segment's first reader: the lowest rank among the passages that cover it.
        first = np.full(segment_count, _NONE, dtype=np.int64)
        lo = np.searchsorted(keys, r_group * scale + r_start)
        hi = np.searchsorted(keys, r_group * scale + r_end)
        covered, which = _expand(lo, hi)
        np.minimum.at(first, covered, p_rank[r_rows][which])
        credit = is_gold & (first != _NONE)
        c_query, c_rank = seg_query[credit], first[credit]
        per_row = np.bincount(offsets[:-1][c_query] + c_rank - 1, weights=seg_len[credit], minlength=len(rows))
        credited = _within(np.cumsum(per_row), offsets, p_query)

        # Pairs of a relevant passage and a distinct span of its group: relevance and the budget each needs.
        by_group = np.argsort(s_group, kind="stable")
        sorted_groups = s_group[by_group]
        pairs_s, pairs_p = _expand(np.searchsorted(sorted_groups, r_group, side="left"),
                                   np.searchsorted(sorted_groups, r_group, side="right"))
        pair_row, pair_span = r_rows[pairs_p], by_group[pairs_s]
        a_start, a_end = p_start[pair_row], p_end[pair_row]
        b_start, b_end = s_start[pair_span], s_end[pair_span]
        need = np.maximum(1, np.ceil(labels.relevance.min_overlap * (b_end - b_start) - 1e-9)).astype(np.int64)
        holds = np.minimum(a_end, b_end) - np.maximum(a_start, b_start) >= need
        span_first = np.full(len(s_query), _NONE, dtype=np.int64)
        np.minimum.at(span_first, pair_span[holds], p_rank[pair_row][holds])
        at = (read[pair_row] - length[pair_row]) + np.maximum(b_start - a_start, 0) + need
        needed = np.full(n, _NONE, dtype=np.int64)
        np.minimum.at(needed, p_query[pair_row][holds], at[holds])
        return cls(n, offsets, p_start, length, read, credited, gold,
                   (c_query, c_rank, seg_start[credit], seg_end[credit]), s_query, span_first,
                   np.bincount(s_query, minlength=n), needed)


def _heads(rankings: Sequence[Sequence[str]], passages: Mapping[str, Passage], k: int, budget: int,
           codes: dict[str, int]) -> tuple[np.ndarray, ...]:
    """The rows of every ranking's head (:func:`~groundkit.scoring.providers.head`), in query then rank order:
    (query, rank, document code, start, end). Each distinct passage is looked up once."""
    n = len(rankings)
    taken = [max(k, 1)] * n
    ids = [ranking[:k] for ranking in rankings]
    while True:
        counts = np.fromiter(map(len, ids), dtype=np.int64, count=n)
        flat = list(chain.from_iterable(ids))
        distinct = list(dict.fromkeys(flat))
        found = [passages[passage_id] for passage_id in distinct]
        u_doc = np.array([codes.setdefault(p.document, len(codes)) for p in found], dtype=np.int64)
        u_start = np.array([p.start for p in found], dtype=np.int64)
        u_end = np.array([p.end for p in found], dtype=np.int64)
        at = np.fromiter(map(dict(zip(distinct, range(len(distinct)), strict=True)).__getitem__, flat), dtype=np.int64,
                         count=len(flat))
        query = np.repeat(np.arange(n), counts)
        total = np.bincount(query, weights=(u_end - u_start)[at], minlength=n)
        # A ranking whose head holds fewer than `budget` characters and has more to give reads further.
        short = [i for i in np.flatnonzero(total < budget).tolist() if len(rankings[i]) > len(ids[i])]
        if not short:
            break
        for i in short:
            taken[i] = max(taken[i] * 2, 8)
            ids[i] = rankings[i][:taken[i]]
    offsets = np.concatenate(([0], np.cumsum(counts)))
    rank = np.arange(len(flat)) - offsets[:-1][query] + 1
    length = (u_end - u_start)[at]
    before = _within(np.cumsum(length), offsets, query) - length
    # The head: the top k, then passages while fewer than `budget` characters were read before them.
    keep = (rank <= k) | (before < budget)
    return query[keep], rank[keep], u_doc[at][keep], u_start[at][keep], u_end[at][keep]


def _within(cumulative: np.ndarray, offsets: np.ndarray, query: np.ndarray) -> np.ndarray:
    """A running sum over all rows restarted at each query's first row."""
    base = np.concatenate(([0], cumulative))[offsets[:-1]]
    return cumulative - base[query]


def _expand(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every ``j`` in ``range(lo[i], hi[i])`` for every ``i``, as (j, i)."""
    counts = np.maximum(hi - lo, 0)
    which = np.repeat(np.arange(len(lo)), counts)
    steps = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    return lo[which] + steps, which


def _fraction(numerator: np.ndarray, denominator: np.ndarray, when: np.ndarray) -> np.ndarray:
    return np.divide(numerator.astype(np.float64), denominator, out=np.zeros(len(numerator)),
                     where=when & (denominator > 0))


def _held(read: Read, cut: int, kind: Cutoff) -> tuple[np.ndarray, np.ndarray]:
    return read.at_rank(cut) if kind is Cutoff.RANK else read.at_budget(cut)


def _chars(read: Read, cut: int, kind: Cutoff) -> np.ndarray:
    return read.at_rank(cut)[1].astype(np.float64)


def _coverage(read: Read, cut: int, kind: Cutoff) -> np.ndarray:
    covered, chars_read = _held(read, cut, kind)
    return _fraction(covered, read.gold, chars_read > 0)


def _precision(read: Read, cut: int, kind: Cutoff) -> np.ndarray:
    covered, chars_read = _held(read, cut, kind)
    return _fraction(covered, chars_read, chars_read > 0)


def _iou(read: Read, cut: int, kind: Cutoff) -> np.ndarray:
    covered, chars_read = _held(read, cut, kind)
    return _fraction(covered, read.gold + chars_read - covered, chars_read > 0)


def _span_recall(read: Read, cut: int, kind: Cutoff) -> np.ndarray:
    found = np.bincount(read.span_query[read.span_first <= cut], minlength=read.n)
    return _fraction(found, read.spans, read.spans > 0)


def _budget_hit(read: Read, cut: int, kind: Cutoff) -> np.ndarray:
    return (read.needed <= cut).astype(np.float64)


CharacterFunction = Callable[[Read, int, Cutoff], np.ndarray]


# --- the provider ------------------------------------------------------------------------------------


class VectorisedProvider:
    """Computes groundkit's own measures (not those a package adds) for every query at once."""

    name = "vectorised"

    def __init__(self) -> None:
        self._rank: dict[str, tuple[Measure, RankFunction]] = {
            m.name: (m, f) for m, f in ((recall.MEASURE, _hit_rate), (mrr.MEASURE, _reciprocal_rank),
                                        (ndcg.MEASURE, _ndcg), (set_recall.MEASURE, _set_recall))}
        self._characters: dict[str, tuple[Measure, CharacterFunction]] = {
            m.name: (m, f) for m, f in ((chars.MEASURE, _chars), (coverage.MEASURE, _coverage),
                                        (precision.MEASURE, _precision), (iou.MEASURE, _iou),
                                        (span_recall.MEASURE, _span_recall), (recall.MEASURE, _budget_hit))}

    def _rank_function(self, metric: Metric) -> RankFunction | None:
        found = self._rank.get(metric.measure.name)
        if found is None or found[0] is not metric.measure or metric.reads_characters:
            return None
        return found[1]

    def _character_function(self, metric: Metric) -> CharacterFunction | None:
        found = self._characters.get(metric.measure.name)
        if found is None or found[0] is not metric.measure or not metric.reads_characters:
            return None
        return found[1]

    def supports(self, metric: Metric) -> bool:
        return self._rank_function(metric) is not None or self._character_function(metric) is not None

    def supports_ranked(self, metric: Metric) -> bool:
        """Whether ``metric`` is computed from :class:`Ranked` alone (what a document-level run has)."""
        return self._rank_function(metric) is not None

    def ranked(self, metrics: Sequence[Metric], ranked: Ranked) -> dict[str, np.ndarray]:
        """``metrics`` (each :meth:`supports_ranked`) from relevant rows a caller built (score-trec)."""
        out = {}
        for metric in metrics:
            function = self._rank_function(metric)
            assert function is not None
            out[metric.name] = function(ranked, metric.cut.value if metric.cut is not None else 0)
        return out

    def compute(self, metrics: Sequence[Metric], retrieved: Retrieved, labels: Labels) -> dict[str, np.ndarray]:
        rank_metrics = [m for m in metrics if self._rank_function(m) is not None]
        character_metrics = [m for m in metrics if self._rank_function(m) is None]
        out = self.ranked(rank_metrics, Ranked.from_labels(retrieved, labels)) if rank_metrics else {}
        if character_metrics and any(p.prefix_length for p in retrieved.passages.values()):
            # Chunks carrying a context prefix (chunk.context) read characters that are not the document's: the
            # per-query definitions count them (read, never gold); the flat rows here know only document spans.
            from groundkit.scoring.providers.per_query import PER_QUERY

            out.update(PER_QUERY.compute(character_metrics, retrieved, labels))
        elif character_metrics:
            k, budget = reach(character_metrics)
            read = Read.from_labels(retrieved, labels, k, budget)
            for metric in character_metrics:
                function = self._character_function(metric)
                assert function is not None and metric.cut is not None
                out[metric.name] = function(read, metric.cut.value, metric.cut.kind)
        return out


VECTORISED = VectorisedProvider()
