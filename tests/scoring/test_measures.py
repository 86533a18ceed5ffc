"""Metrics: hand-worked cases, then a cross-check against ir_measures (pytrec_eval)."""

import math
import random

import ir_measures
import pytest
from ir_measures import RR, Qrel, ScoredDoc, Success, nDCG

from groundkit.corpus.passage import Passage
from groundkit.scoring.measures import first_gold_rank, mrr, ndcg_at_k, recall_at_k


def _p(document: str, start: int, end: int) -> Passage:
    return Passage(document=document, start=start, end=end)

RANKING = ["c1", "c2", "c3", "c4", "c5"]


def test_recall_at_k_is_hit_rate_not_set_recall():
    gold = {"c2", "c9"}  # c9 never retrieved
    assert recall_at_k(RANKING, gold, 1) == 0.0
    assert recall_at_k(RANKING, gold, 2) == 1.0  # one of two gold found: still 1, not 0.5
    assert recall_at_k([], gold, 10) == 0.0


def test_mrr_is_reciprocal_rank_of_first_gold():
    assert mrr(RANKING, {"c3", "c5"}) == pytest.approx(1 / 3)
    assert mrr(RANKING, {"zz"}) == 0.0
    assert first_gold_rank(RANKING, {"c4"}) == 4
    assert first_gold_rank([], {"c4"}) is None


def test_ndcg_hand_worked():
    # gold at ranks 2 and 4: DCG = 1/log2(3) + 1/log2(5) = 0.63093 + 0.43068 = 1.06161
    # two gold ids, k=5: IDCG = 1 + 1/log2(3) = 1.63093; nDCG = 0.65092
    assert ndcg_at_k(RANKING, {"c2", "c4"}, 5) == pytest.approx(0.650921, abs=1e-6)
    # k=3 cuts rank 4 off: DCG = 0.63093; IDCG over min(2, 3) = 2 positions: 0.38685
    assert ndcg_at_k(RANKING, {"c2", "c4"}, 3) == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))


def test_ndcg_ideal_is_capped_at_k():
    # 5 gold ids, k=2, both top positions gold: perfect score
    assert ndcg_at_k(RANKING, set(RANKING), 2) == pytest.approx(1.0)


def test_ndcg_of_empty_ranking_is_zero():
    assert ndcg_at_k([], {"c1"}, 10) == 0.0


def test_invalid_arguments_raise():
    with pytest.raises(ValueError):
        recall_at_k(RANKING, {"c1"}, 0)
    with pytest.raises(ValueError):
        ndcg_at_k(RANKING, set(), 10)


def _generated_case(seed: int):
    rng = random.Random(seed)
    pool = [f"d{i}" for i in range(40)]
    qrels, run, rankings, golds = [], [], {}, {}
    for q in range(60):
        qid = f"q{q}"
        gold = set(rng.sample(pool, rng.randint(1, 4)))
        ranking = rng.sample(pool, rng.randint(0, 25))
        golds[qid], rankings[qid] = gold, ranking
        qrels += [Qrel(qid, d, 1) for d in sorted(gold)]
        # Strictly decreasing scores so trec_eval's own sort reproduces our order.
        run += [ScoredDoc(qid, d, float(100 - r)) for r, d in enumerate(ranking)]
    return qrels, run, rankings, golds


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_metrics_agree_with_ir_measures(seed):
    qrels, run, rankings, golds = _generated_case(seed)
    measures = [Success @ 1, Success @ 3, Success @ 10, RR, nDCG @ 3, nDCG @ 10]
    reference: dict[tuple[str, str], float] = {}
    for m in ir_measures.iter_calc(measures, qrels, run):
        reference[(m.query_id, str(m.measure))] = m.value
    for qid, ranking in rankings.items():
        gold = golds[qid]

        # trec_eval leaves queries with an empty run out; groundkit scores them 0.
        def ref(name: str, qid: str = qid) -> float:
            return reference.get((qid, name), 0.0)

        assert recall_at_k(ranking, gold, 1) == pytest.approx(ref("Success@1"))
        assert recall_at_k(ranking, gold, 3) == pytest.approx(ref("Success@3"))
        assert recall_at_k(ranking, gold, 10) == pytest.approx(ref("Success@10"))
        assert mrr(ranking, gold) == pytest.approx(ref("RR"))
        assert ndcg_at_k(ranking, gold, 3) == pytest.approx(ref("nDCG@3"))
        assert ndcg_at_k(ranking, gold, 10) == pytest.approx(ref("nDCG@10"))


def test_context_chars_sums_passage_lengths_up_to_k():
    from groundkit.scoring.measures import context_chars_at_k

    passages = [_p("a.md", 0, 300), _p("b.md", 100, 900), _p("a.md", 300, 350)]
    assert [context_chars_at_k(passages, k) for k in (1, 2, 3, 10)] == [300, 1100, 1150, 1150]


def test_budget_hit_counts_only_the_visible_prefix():
    from groundkit.scoring.measures import budget_hit

    # Rank 1: 300 chars of a.md, no gold. Rank 2: b.md [100, 900) with gold at [600, 620).
    passages = [_p("a.md", 0, 300), _p("b.md", 100, 900)]
    gold = [_p("b.md", 600, 620)]
    # Budget 700: 300 chars for rank 1, 400 visible of rank 2 -> b.md [100, 500): misses [600, 620).
    assert budget_hit(passages, gold, 700) == 0.0
    # Budget 801: rank 2 visible [100, 601): the first gold character (600) is inside.
    assert budget_hit(passages, gold, 800) == 0.0
    assert budget_hit(passages, gold, 801) == 1.0
    # A gold span in another document never counts, and the budget caps the walk.
    assert budget_hit(passages, [_p("c.md", 0, 10)], 10_000) == 0.0
    assert budget_hit([_p("b.md", 600, 700)], gold, 1) == 1.0  # one visible character is enough
    assert budget_hit([], gold, 500) == 0.0
