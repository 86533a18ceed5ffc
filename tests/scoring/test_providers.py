"""The providers agree: the vectorised provider equals the per-query one (each measure's definition) to 1e-12.

Every default measure and more cut-offs, on random fixtures built to break a vectorised shortcut (windows
that overlap, a passage ranked twice, two ids of one passage, gold quoted twice and overlapping, empty
rankings, rankings shorter than the cut-off, grades that tie, placeholder ids no ranking holds, each
``score.min_overlap``), and on every query of real runs: the committed corpus (with overlapping windows
too, and an external run) here, SciFact in tests/test_scifact.py. The per-query functions themselves are held
to hand-worked values, to a character-by-character reference (test_span_measures.py) and to
ir_measures/pytrec_eval (test_measures.py, test_trec_measures.py).
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest

import groundkit.scoring.score as score_module
from groundkit.cli import main
from groundkit.config import DEFAULT_MEASURES
from groundkit.corpus.passage import Passage
from groundkit.scoring.measures import MEASURES, Metric, Relevance
from groundkit.scoring.providers import Labels, Retrieved, compute
from groundkit.scoring.providers.per_query import PER_QUERY
from groundkit.scoring.providers.vectorised import VECTORISED

REPO = Path(__file__).resolve().parents[2]
EXTRA = ["recall@2", "recall@100", "ndcg@2", "ndcg@100", "set_recall@1", "set_recall@3", "set_recall@100",
         "chars@2", "chars@100", "recall@1chars", "recall@37chars", "recall@5000chars", "coverage@2",
         "coverage@100", "coverage@7chars", "coverage@151chars", "precision@60chars", "iou@400chars",
         "iou@100", "span_recall@2", "span_recall@100"]
METRICS = MEASURES.parse_all([*DEFAULT_MEASURES, *EXTRA])


def assert_agree(metrics: list[Metric], retrieved: Retrieved, labels: Labels) -> None:
    assert all(VECTORISED.supports(metric) for metric in metrics)
    fast = VECTORISED.compute(metrics, retrieved, labels)
    slow = PER_QUERY.compute(metrics, retrieved, labels)
    for metric in metrics:
        assert fast[metric.name].shape == (len(retrieved),)
        np.testing.assert_allclose(fast[metric.name], slow[metric.name], rtol=0, atol=1e-12, err_msg=metric.name)


def random_case(seed: int) -> tuple[Retrieved, Labels]:
    rng = random.Random(seed)
    documents = ["a", "b", "c", "d/é.md"]
    passages: dict[str, Passage] = {}
    for n in range(rng.randint(1, 40)):
        start = rng.randint(0, 150)
        passages[f"p{n}"] = Passage(document=rng.choice(documents), start=start, end=start + rng.randint(1, 80))
    for n in range(rng.randint(0, 3)):  # two ids of one passage, as a hybrid or an external run may give
        passages[f"twin{n}"] = passages[rng.choice(list(passages))]
    ids = list(passages)
    relevance = Relevance(rng.choice([0.0, 0.0, 0.25, 0.5, 1.0]))
    rankings, qrels, spans = [], [], []
    for _ in range(rng.randint(1, 30)):
        ranking = rng.sample(ids, rng.randint(0, len(ids))) if rng.random() > 0.15 else []
        if ranking and rng.random() < 0.3:
            ranking.insert(rng.randrange(len(ranking) + 1), rng.choice(ranking))  # an id ranked twice
        gold = []
        for _ in range(rng.randint(1, 4)):
            start = rng.randint(0, 200)
            gold.append((Passage(document=rng.choice(documents), start=start, end=start + rng.randint(1, 40)),
                         rng.choice([1, 1, 2, 3])))
        if rng.random() < 0.3:
            gold.append(gold[0])  # quoted twice
        graded: dict[str, int] = {}
        for passage_id, passage in passages.items():
            for span, grade in gold:
                if relevance.holds(passage, span) and grade > graded.get(passage_id, 0):
                    graded[passage_id] = grade
        if rng.random() < 0.3:
            graded[f"gold-{rng.randrange(10**6)}"] = rng.choice([1, 2])  # a placeholder no ranking holds
        rankings.append(ranking), qrels.append(graded), spans.append([span for span, _ in gold])
    return Retrieved(rankings, passages), Labels(qrels, spans, relevance)


@pytest.mark.parametrize("seed", range(100))
def test_vectorised_equals_per_query_on_random_fixtures(seed):
    assert_agree(METRICS, *random_case(seed))


def test_nothing_retrieved_anywhere_and_no_query_at_all():
    passages = {"p": Passage(document="a", start=0, end=10)}
    spans = [[Passage(document="a", start=2, end=5)]] * 3
    assert_agree(METRICS, Retrieved([[], [], []], passages), Labels([{"p": 1}, {}, {"gold-x": 2}], spans))
    assert_agree(METRICS, Retrieved([], passages), Labels([], []))


def test_overlapping_windows_credit_the_union_of_what_was_read():
    # [0,10) then [5,15) of a, gold [8,12): rank 1 reads gold 8-9, rank 2 only 10-11 more (8-9 read already).
    passages = {"w1": Passage(document="a", start=0, end=10), "w2": Passage(document="a", start=5, end=15)}
    retrieved = Retrieved([["w1", "w2", "w1"]], passages)
    labels = Labels([{"w1": 1, "w2": 1}], [[Passage(document="a", start=8, end=12)]])
    values = VECTORISED.compute(MEASURES.parse_all(["coverage@1", "coverage@2", "precision@3", "coverage@12chars",
                                                    "coverage@17chars", "iou@25chars"]), retrieved, labels)
    assert {name: float(v[0]) for name, v in values.items()} == pytest.approx({
        "coverage@1": 2 / 4, "coverage@2": 4 / 4, "precision@3": 4 / 30,
        # 12 characters: all of w1 (gold 8-9), then w2's first 2 ([5,7)), which hold no new gold.
        "coverage@12chars": 2 / 4,
        # 17: w2's first 7 ([5,12)) add gold 10-11.
        "coverage@17chars": 4 / 4,
        # 25: w1 again for 5, nothing new: I = 4, C = 25.
        "iou@25chars": 4 / (4 + 25 - 4)}, abs=1e-15)
    assert_agree(MEASURES.parse_all(["coverage@1", "coverage@2", "precision@3", "coverage@12chars"]), retrieved,
                 labels)


def test_ndcg_and_the_rank_measures_by_hand():
    retrieved = Retrieved([["x", "a", "b", "x2", "c"]])
    labels = Labels([{"a": 2, "c": 1, "z": 3}])
    values = VECTORISED.compute(MEASURES.parse_all(["recall@1", "recall@2", "mrr", "ndcg@3", "set_recall@5"]),
                                retrieved, labels)
    ideal = 3 + 2 / math.log2(3) + 1 / 2
    assert {name: float(v[0]) for name, v in values.items()} == pytest.approx({
        "recall@1": 0.0, "recall@2": 1.0, "mrr": 1 / 2, "ndcg@3": (2 / math.log2(3)) / ideal,
        "set_recall@5": 2 / 3}, abs=1e-15)


def test_compute_takes_the_labels_as_an_argument_and_falls_back_to_per_query(throwaway_measure):
    retrieved, labels = random_case(3)
    other = Labels([dict(list(q.items())[:1]) for q in labels.qrels], labels.spans, Relevance(0.5))
    metrics = MEASURES.parse_all(["ndcg@10", "coverage@3", "hits@5"])
    assert not VECTORISED.supports(metrics[2]) and PER_QUERY.supports(metrics[2])
    for these in (labels, other):
        values = compute(metrics, retrieved, these)
        assert list(values) == ["ndcg@10", "coverage@3", "hits@5"]
        reference = PER_QUERY.compute(metrics, retrieved, these)
        for name in values:
            np.testing.assert_allclose(values[name], reference[name], rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="labels for 1 queries given with"):
        compute(metrics, retrieved, Labels(labels.qrels[:1], labels.spans[:1]))


def test_what_reads_characters_is_declared_by_the_measure_or_its_budget():
    reads = {name: MEASURES.parse(name).reads_characters for name in (
        "recall@10", "recall@500chars", "mrr", "ndcg@10", "set_recall@100", "chars@5", "coverage@1",
        "precision@1000chars", "iou@3", "span_recall@5")}
    assert reads == {"recall@10": False, "recall@500chars": True, "mrr": False, "ndcg@10": False,
                     "set_recall@100": False, "chars@5": True, "coverage@1": True, "precision@1000chars": True,
                     "iou@3": True, "span_recall@5": True}


# --- real runs: every query scored by `groundkit run`, through both providers ----------------------------


@pytest.fixture
def spy(monkeypatch):
    """Checks that every scoring call of the run gives the same values through both providers."""
    seen: list[int] = []

    def checked(metrics, retrieved, labels, using=None):
        assert_agree([*metrics, *MEASURES.parse_all(EXTRA)], retrieved, labels)
        seen.append(len(retrieved))
        return compute(metrics, retrieved, labels, using)

    monkeypatch.setattr(score_module, "compute", checked)
    return seen


@pytest.mark.parametrize("sets", [[], ["chunk.size=300", "chunk.overlap=120", "score.min_overlap=0.5"],
                                  ["retrieve.retriever=external"]])
def test_vectorised_equals_per_query_on_the_committed_corpus(tmp_path, spy, sets):
    args = ["run", "--corpus", str(REPO / "evals" / "corpus"), "--judgments", str(REPO / "evals" / "judgments.jsonl"),
            "--params", str(REPO / "params.yaml"), "--out", str(tmp_path / "out")]
    assert main([*args, *(arg for s in sets for arg in ("--set", s))]) == 0
    assert spy and spy[0] > 20
