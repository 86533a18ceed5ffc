"""Metrics: hand-worked cases, then a cross-check against ir_measures (pytrec_eval)."""

import math
import random
import re
from importlib import metadata

import ir_measures
import pytest
from ir_measures import RR, Qrel, ScoredDoc, Success, nDCG

from groundkit.corpus.passage import Passage
from groundkit.errors import MeasureError
from groundkit.scoring.measures import MEASURES, Cut, Cutoff, Measure, QueryRun, Registry, score
from groundkit.scoring.measures.chars import context_chars_at_k
from groundkit.scoring.measures.mrr import first_gold_rank, mrr
from groundkit.scoring.measures.ndcg import ndcg_at_k
from groundkit.scoring.measures.recall import budget_hit, budget_needed, recall_at_k


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
    passages = [_p("a.md", 0, 300), _p("b.md", 100, 900), _p("a.md", 300, 350)]
    assert [context_chars_at_k(passages, k) for k in (1, 2, 3, 10)] == [300, 1100, 1150, 1150]


def test_budget_hit_counts_only_the_visible_prefix():
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


@pytest.mark.parametrize("seed", range(30))
def test_the_budget_a_ranking_needs_is_where_budget_hit_turns_to_one(seed):
    """budget_curve answers every budget from one walk: it must agree with budget_hit at every budget."""
    rng = random.Random(seed)

    def passage() -> Passage:
        start = rng.randint(0, 60)
        return _p(rng.choice(["a.md", "b.md", "c.md"]), start, start + rng.randint(1, 30))

    passages = [passage() for _ in range(rng.randint(0, 8))]
    gold = [passage() for _ in range(rng.randint(1, 3))]
    needed = budget_needed(passages, gold)
    total = sum(p.length for p in passages)
    assert [budget_hit(passages, gold, b) for b in range(1, total + 2)] == \
        [float(needed is not None and b >= needed) for b in range(1, total + 2)]


# --- the registry ----------------------------------------------------------------------------------


def test_the_registry_finds_every_measure_module():
    assert {m.name for m in MEASURES} >= {"recall", "mrr", "ndcg", "chars", "coverage", "precision", "iou",
                                         "span_recall"}


@pytest.mark.parametrize(("name", "measure", "cut"), [
    ("recall@1", "recall", Cut(Cutoff.RANK, 1)), ("recall@10", "recall", Cut(Cutoff.RANK, 10)),
    ("mrr", "mrr", None), ("ndcg@10", "ndcg", Cut(Cutoff.RANK, 10)), ("chars@3", "chars", Cut(Cutoff.RANK, 3)),
    ("recall@1000chars", "recall", Cut(Cutoff.BUDGET, 1000)),
    ("coverage@500chars", "coverage", Cut(Cutoff.BUDGET, 500)),
    ("span_recall@5", "span_recall", Cut(Cutoff.RANK, 5)),
])
def test_a_name_parses_back_to_its_measure_and_cutoff(name, measure, cut):
    metric = MEASURES.parse(name)
    assert (metric.measure.name, metric.cut, metric.name) == (measure, cut, name)
    assert metric.measure.label(cut) == name
    assert metric.size_fair == (cut is not None and cut.kind is Cutoff.BUDGET)


@pytest.mark.parametrize("name", ["map@10", "hits@3", "nope"])
def test_an_unknown_measure_is_refused_with_the_known_ones(name):
    with pytest.raises(MeasureError, match=rf"^{name!r} is not a metric groundkit reports; the measures are .*"
                                           r"recall@k\|recall@Nchars"):
        MEASURES.parse(name)


@pytest.mark.parametrize(("name", "problem"), [
    ("mrr@10", "'mrr@10': mrr is written mrr"), ("ndcg@10chars", "ndcg is written ndcg@k"),
    ("chars@500chars", "chars is written chars@k"), ("recall", "recall is written recall@k|recall@Nchars"),
    ("span_recall@500chars", "span_recall is written span_recall@k"),
])
def test_a_cutoff_the_measure_does_not_take_is_refused(name, problem):
    with pytest.raises(MeasureError, match=re.escape(problem)):
        MEASURES.parse(name)


@pytest.mark.parametrize("name", ["", "Recall@1", "recall@0", "recall@05", "recall@-1", "recall@1 ", "recall@@1",
                                  "recall@1000char"])
def test_a_badly_written_name_is_refused(name):
    with pytest.raises(MeasureError, match="is not a metric name"):
        MEASURES.parse(name)


def test_label_refuses_a_cutoff_the_measure_does_not_take():
    with pytest.raises(ValueError, match="takes no cut-off"):
        MEASURES["mrr"].label(Cut(Cutoff.RANK, 10))
    with pytest.raises(ValueError, match="takes no cut-off"):
        MEASURES["ndcg"].label(Cut(Cutoff.BUDGET, 10))
    with pytest.raises(ValueError, match="needs a cut-off"):
        MEASURES["recall"].label()


def test_a_registry_refuses_a_name_twice_and_a_bad_name():
    registry = Registry()
    first = registry.register(Measure("hits", frozenset({Cutoff.RANK}), "gold ids in the top k", lambda q, c: 0.0))
    with pytest.raises(ValueError, match="a measure 'hits' is already registered"):
        registry.register(Measure("hits", frozenset({Cutoff.BUDGET}), "again", lambda q, c: 1.0))
    for bad in ("Hits", "hits@k", "2hits", "hits chars", ""):
        with pytest.raises(ValueError, match="must be lower-case"):
            registry.register(Measure(bad, frozenset(), "bad", lambda q, c: 0.0))
    assert registry.parse("hits@3").name == "hits@3"
    registry.unregister(first)
    with pytest.raises(MeasureError):
        registry.parse("hits@3")
    assert MEASURES.parse("recall@3").name == "recall@3"  # another registry is untouched


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_registry_names_score_what_ir_measures_calls_them(seed):
    # Each quality metric, computed through the registry under its groundkit name, equals the
    # ir_measures measure its docstring names: a name wired to the wrong function fails here.
    qrels, run, rankings, golds = _generated_case(seed)
    equivalent = {"recall@1": "Success@1", "recall@3": "Success@3", "recall@10": "Success@10", "mrr": "RR",
                  "ndcg@1": "nDCG@1", "ndcg@3": "nDCG@3", "ndcg@10": "nDCG@10"}
    reference = {(m.query_id, str(m.measure)): m.value
                 for m in ir_measures.iter_calc([ir_measures.parse_measure(v) for v in equivalent.values()],
                                                qrels, run)}
    metrics = MEASURES.parse_all(list(equivalent))
    for qid, ranking in rankings.items():
        scored = score(metrics, QueryRun(ranking=ranking, gold=golds[qid], passages=[], spans=[]))
        for ours, theirs in equivalent.items():
            assert scored[ours] == pytest.approx(reference.get((qid, theirs), 0.0)), (qid, ours)


def test_registry_scores_the_cost_side_by_hand():
    # Passages of 300 and 800 characters; the gold span lies at [600, 620) of the second.
    run = QueryRun(ranking=["p1", "p2"], gold={"p2"}, passages=[_p("a.md", 0, 300), _p("b.md", 100, 900)],
                   spans=[_p("b.md", 600, 620)])
    names = ["chars@1", "chars@2", "recall@800chars", "recall@801chars"]
    scored = score(MEASURES.parse_all(names), run)
    assert (scored["chars@1"], scored["chars@2"]) == (300.0, 1100.0)
    assert (scored["recall@800chars"], scored["recall@801chars"]) == (0.0, 1.0)
    assert list(scored) == names


PLUGGED = Measure("plugged", frozenset({Cutoff.RANK}), "a measure another package declares", lambda q, c: 0.0)


def test_a_package_adds_a_measure_through_its_entry_point_found_only_when_needed(monkeypatch):
    from groundkit.scoring import measures

    asked = []
    point = metadata.EntryPoint(name="plugged", value="tests.scoring.test_measures:PLUGGED",
                                group=measures.ENTRY_POINTS)

    def entry_points(group):
        asked.append(group)
        return [point] if group == measures.ENTRY_POINTS else []

    monkeypatch.setattr(measures, "entry_points", entry_points)
    registry = measures.Registry(measures._modules(), plugins=measures._entry_points)
    assert registry.parse("ndcg@10").measure is measures.MEASURES["ndcg"] and asked == []  # built-ins: no search
    assert registry.parse("plugged@5").measure is PLUGGED and asked == [measures.ENTRY_POINTS]
    assert list(registry)[-1] is PLUGGED and asked == [measures.ENTRY_POINTS]  # searched once
    with pytest.raises(ValueError, match="'plugged' is already registered"):
        registry.register(PLUGGED)
    fresh = measures.Registry(measures._modules(), plugins=measures._entry_points)
    with pytest.raises(ValueError, match="'plugged' is already registered"):  # the entry point is searched first
        fresh.register(PLUGGED)
