"""The span measures against a second implementation written from their definitions, character by character.

For an answerable query, G is the set of the gold spans' characters (per document), "read" the characters a
reader reads at the cut-off (whole passages at the top k; at a budget of B, the first B characters of the
passages concatenated in rank order), C the number of characters read (a character read twice counts
twice) and I the characters of G read at least once. Then coverage = I / |G|, precision = I / C and
iou = I / (|G| + C - I), each 0 when nothing is read; span_recall@k is the share of the distinct gold spans
a passage of the top k holds at least max(1, ceil(min_overlap x span length)) characters of.

The reference below sets characters in Python sets and lists; it shares no code with groundkit's
interval arithmetic (groundkit/scoring/measures/_read.py).
"""

from __future__ import annotations

import math
import random

import pytest

from groundkit.corpus.passage import Passage
from groundkit.scoring.measures import MEASURES, QueryRun, Relevance, score


def _p(document: str, start: int, end: int) -> Passage:
    return Passage(document=document, start=start, end=end)


def reference(passages: list[Passage], spans: list[Passage], name: str, value: int, kind: str,
              min_overlap: float = 0.0) -> float:
    gold = {(s.document, i) for s in spans for i in range(s.start, s.end)}
    read: list[tuple[str, int]] = []
    if kind == "rank":
        for p in passages[:value]:
            read += [(p.document, i) for i in range(p.start, p.end)]
    else:
        left = value
        for p in passages:
            take = min(p.end - p.start, left)
            read += [(p.document, i) for i in range(p.start, p.start + take)]
            left -= take
            if left <= 0:
                break
    c, i = len(read), len(gold & set(read))
    if name == "span_recall":
        distinct = {(s.document, s.start, s.end) for s in spans}
        found = 0
        for document, start, end in distinct:
            need = max(1, math.ceil(min_overlap * (end - start) - 1e-9))
            if any(p.document == document and len(set(range(p.start, p.end)) & set(range(start, end))) >= need
                   for p in passages[:value]):
                found += 1
        return found / len(distinct)
    if c == 0:
        return 0.0
    return {"coverage": i / len(gold), "precision": i / c, "iou": i / (len(gold) + c - i)}[name]


def groundkit(passages: list[Passage], spans: list[Passage], metric: str, min_overlap: float = 0.0) -> float:
    run = QueryRun(ranking=[f"p{n}" for n in range(len(passages))], gold=set(), passages=passages, spans=spans,
                   relevance=Relevance(min_overlap))
    return score([MEASURES.parse(metric)], run)[metric]


# --- hand-worked cases ------------------------------------------------------------------------------


def test_overlapping_windows_read_a_character_twice_but_hold_it_once():
    # Windows [0,10) and [5,15) of a.md, gold [8,12): the union [0,15) holds all 4 gold characters; 20 read.
    passages, spans = [_p("a", 0, 10), _p("a", 5, 15), _p("a", 10, 20)], [_p("a", 8, 12)]
    assert groundkit(passages, spans, "coverage@2") == 1.0
    assert groundkit(passages, spans, "precision@2") == pytest.approx(4 / 20)
    assert groundkit(passages, spans, "iou@2") == pytest.approx(4 / (4 + 20 - 4))
    # At the top 1, [0,10) holds gold [8,10): 2 of 4.
    assert groundkit(passages, spans, "coverage@1") == pytest.approx(0.5)
    assert groundkit(passages, spans, "precision@1") == pytest.approx(2 / 10)


def test_a_passage_ranked_twice_costs_twice():
    passages, spans = [_p("a", 0, 10), _p("a", 0, 10)], [_p("a", 0, 5)]
    assert groundkit(passages, spans, "coverage@2") == 1.0
    assert groundkit(passages, spans, "precision@2") == pytest.approx(5 / 20)
    assert groundkit(passages, spans, "iou@2") == pytest.approx(5 / (5 + 20 - 5))


def test_the_passage_the_budget_cuts_counts_for_its_visible_prefix():
    # 100 characters of b.md (no gold), then a.md [200,300) whose gold is [250,260).
    passages, spans = [_p("b", 0, 100), _p("a", 200, 300)], [_p("a", 250, 260)]
    # 150: a.md [200,250) is read, no gold yet.
    assert [groundkit(passages, spans, f"{m}@150chars") for m in ("coverage", "precision", "iou")] == [0.0] * 3
    # 155: a.md [200,255): 5 of the 10 gold characters, 155 read.
    assert groundkit(passages, spans, "coverage@155chars") == pytest.approx(0.5)
    assert groundkit(passages, spans, "precision@155chars") == pytest.approx(5 / 155)
    assert groundkit(passages, spans, "iou@155chars") == pytest.approx(5 / (10 + 155 - 5))
    # A budget past the whole ranking reads the ranking, 200 characters, no more.
    assert groundkit(passages, spans, "precision@5000chars") == pytest.approx(10 / 200)


def test_gold_in_two_documents_is_one_union():
    passages, spans = [_p("a", 0, 20)], [_p("a", 0, 10), _p("b", 0, 10), _p("a", 5, 10)]
    assert groundkit(passages, spans, "coverage@1") == pytest.approx(10 / 20)
    assert groundkit(passages, spans, "precision@1") == pytest.approx(10 / 20)
    assert groundkit(passages, spans, "iou@1") == pytest.approx(10 / (20 + 20 - 10))
    # span_recall counts spans, not characters: a [0,10) and a [5,10) are found, b [0,10) is not.
    assert groundkit(passages, spans, "span_recall@1") == pytest.approx(2 / 3)


def test_nothing_read_scores_zero():
    for metric in ("coverage@10", "precision@10", "iou@10", "coverage@500chars", "span_recall@10"):
        assert groundkit([], [_p("a", 0, 5)], metric) == 0.0


def test_span_recall_holds_a_passage_to_the_overlap_it_must_have():
    passages, spans = [_p("a", 6, 20)], [_p("a", 0, 10)]  # holds 4 of the span's 10 characters
    assert groundkit(passages, spans, "span_recall@1", min_overlap=0.0) == 1.0
    assert groundkit(passages, spans, "span_recall@1", min_overlap=0.4) == 1.0
    assert groundkit(passages, spans, "span_recall@1", min_overlap=0.41) == 0.0
    assert groundkit(passages, spans, "span_recall@1", min_overlap=1.0) == 0.0


# --- the random fixture -------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(60))
def test_every_span_measure_equals_the_reference_on_random_rankings(seed):
    rng = random.Random(seed)

    def passage() -> Passage:
        start = rng.randint(0, 120)
        return _p(rng.choice(["a", "b", "c"]), start, start + rng.randint(1, 60))

    passages = [passage() for _ in range(rng.randint(0, 12))]
    if passages and rng.random() < 0.3:
        passages.append(passages[rng.randrange(len(passages))])  # a duplicate
    spans = [passage() for _ in range(rng.randint(1, 4))]
    min_overlap = rng.choice([0.0, 0.25, 0.5, 1.0])
    for name in ("coverage", "precision", "iou", "span_recall"):
        for value in (1, 2, 3, 5, 10):
            expected = reference(passages, spans, name, value, "rank", min_overlap)
            assert groundkit(passages, spans, f"{name}@{value}", min_overlap) == pytest.approx(expected, abs=1e-12)
        if name != "span_recall":
            for budget in (1, 7, 50, 150, 400, 2000):
                expected = reference(passages, spans, name, budget, "budget")
                assert groundkit(passages, spans, f"{name}@{budget}chars") == pytest.approx(expected, abs=1e-12)
