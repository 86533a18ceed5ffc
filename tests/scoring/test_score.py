"""score_run and StageResult: per-query metrics, aggregation and abstention, worked by hand."""

import pytest

from groundkit.corpus.judgments import Category
from groundkit.corpus.passage import Chunk
from groundkit.corpus.spans import ResolvedJudgment, ResolvedSpan
from groundkit.scoring.score import score_run, unretrieved_gold_id
from tests.conftest import rank_metrics

TEXT = "alpha beta gamma delta epsilon"
CHUNKS = [
    Chunk(document="a.md", start_offset=s, end_offset=e, text=TEXT[s:e]) for s, e in [(0, 10), (11, 22), (23, 30)]
]
A, B, C = (c.chunk_id for c in CHUNKS)
BY_ID = {c.chunk_id: c for c in CHUNKS}


def score_rankings(judgments, rankings, ks, budgets=(), *, universe=CHUNKS):
    """Score rankings of chunk ids, by default as a chunk run: every chunk is a passage the retriever could return."""
    return score_run(judgments, rankings, BY_ID, rank_metrics(ks, budgets), universe=universe)


def resolved(qid: str, category: str, spans: list[tuple[int, int]]) -> ResolvedJudgment:
    return ResolvedJudgment(
        query_id=qid, query=qid, category=Category(category),
        spans=[ResolvedSpan(document="a.md", quote=TEXT[s:e], start=s, end=e) for s, e in spans],
    )


def test_hand_worked_run():
    judgments = [
        resolved("q1", "factoid", [(6, 10)]),          # "beta": chunk A only
        resolved("q2", "boundary", [(6, 16)]),         # "beta gamma": straddles A and B
        resolved("q3", "factoid", [(23, 30)]),         # "epsilon": chunk C, but nothing retrieved
        resolved("q4", "no_answer", []),
        resolved("q5", "no_answer", []),
    ]
    rankings = {"q1": [B, A], "q2": [B, C, A], "q3": [], "q4": [], "q5": [C]}
    result, qrels = score_rankings(judgments, rankings, [1, 3])
    assert qrels == {"q1": {A: 1}, "q2": {A: 1, B: 1}, "q3": {C: 1}}
    by_id = {q.query_id: q for q in result.queries}
    assert by_id["q1"].first_gold_rank == 2 and by_id["q1"].metrics["mrr"] == 0.5
    # q2: gold at ranks 1 and 3, two gold chunks: nDCG@3 = (1 + 1/log2(4)) / (1 + 1/log2(3)) = 1.5 / 1.63093
    assert by_id["q2"].metrics["ndcg@3"] == pytest.approx(1.5 / 1.6309298, abs=1e-6)
    assert by_id["q3"].metrics == {"recall@1": 0.0, "recall@3": 0.0, "mrr": 0.0, "ndcg@1": 0.0, "ndcg@3": 0.0,
                                   "chars@1": 0.0, "chars@3": 0.0}
    # q2 reads B (11 characters), C (7) and A (10)
    assert (by_id["q2"].metrics["chars@1"], by_id["q2"].metrics["chars@3"]) == (11.0, 28.0)
    assert result.no_answer_abstained_count == 1

    summary = result.summary()
    answerable = summary["answerable"]
    assert answerable["queries"] == 3 and answerable["false_abstentions"] == 1
    assert answerable["recall@1"] == pytest.approx(1 / 3)          # only q2 hits at rank 1
    assert answerable["recall@3"] == pytest.approx(2 / 3)
    assert answerable["mrr"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert summary["no_answer"] == {"queries": 2, "abstained": 1, "abstention_rate": 0.5}
    assert summary["by_category"]["factoid"]["queries"] == 2
    assert summary["by_category"]["boundary"]["recall@1"] == 1.0
    assert "lexical_gap" not in summary["by_category"]


def test_an_unknown_universe_counts_one_ideal_passage_per_span_and_stands_in_for_the_unretrieved():
    judgments = [
        resolved("q1", "factoid", [(6, 10)]),          # "beta": chunk A only
        resolved("q2", "boundary", [(6, 16)]),         # "beta gamma": straddles A and B
        resolved("q3", "factoid", [(23, 30)]),         # "epsilon": chunk C, but nothing retrieved
    ]
    rankings = {"q1": [B, A], "q2": [B], "q3": []}
    known, known_qrels = score_rankings(judgments, rankings, [1, 3])
    unknown, unknown_qrels = score_rankings(judgments, rankings, [1, 3], universe=None)
    assert known_qrels == {"q1": {A: 1}, "q2": {A: 1, B: 1}, "q3": {C: 1}}
    # Without the universe only retrieved passages are known relevant; q3's span stands in for its own passage.
    assert unknown_qrels == {"q1": {A: 1}, "q2": {B: 1}, "q3": {unretrieved_gold_id(judgments[2].spans[0]): 1}}
    known_q, unknown_q = ({q.query_id: q for q in r.queries} for r in (known, unknown))
    # q2 retrieved B alone. Known: two relevant chunks, IDCG@3 = 1 + 1/log2(3). Unknown: one span, IDCG@3 = 1.
    assert known_q["q2"].metrics["ndcg@3"] == pytest.approx(1 / 1.6309298, abs=1e-6)
    assert unknown_q["q2"].metrics["ndcg@3"] == 1.0
    assert (known_q["q2"].gold_chunks, unknown_q["q2"].gold_chunks) == (2, 1)
    # Everything else is the same passages scored the same way.
    for qid in ("q1", "q3"):
        assert known_q[qid] == unknown_q[qid]
    assert {k: v for k, v in known_q["q2"].metrics.items() if not k.startswith("ndcg")} == {
        k: v for k, v in unknown_q["q2"].metrics.items() if not k.startswith("ndcg")}


def test_an_unknown_universe_keeps_a_missed_span_in_the_ideal_however_often_another_was_retrieved():
    # Gold spans "beta" (A) and "epsilon" (C). The run retrieves "beta" twice, as two passages of its own (A, and a
    # window [0, 16) overlapping it), and never "epsilon". Both passages are relevant; "epsilon" must still stand
    # in the ideal ranking: 3 ids, not max(2 spans, 2 relevant) = 2, which made this run score 1.0.
    window = Chunk(document="a.md", start_offset=0, end_offset=16, text=TEXT[0:16])
    judgments = [resolved("q1", "multi_passage", [(6, 10), (23, 30)])]
    epsilon = unretrieved_gold_id(judgments[0].spans[1])
    result, qrels = score_run(judgments, {"q1": [A, window.chunk_id]}, {**BY_ID, window.chunk_id: window},
                             rank_metrics([1, 3]),
                              universe=None)
    assert qrels == {"q1": {A: 1, window.chunk_id: 1, epsilon: 1}}
    # DCG@3 = 1 + 1/log2(3); IDCG@3 = 1 + 1/log2(3) + 1/log2(4) = 2.1309298.
    assert result.queries[0].metrics["ndcg@3"] == pytest.approx(1.6309298 / 2.1309298, abs=1e-6)
    assert result.queries[0].gold_chunks == 3
    # ir_measures on these qrels (what qrels.trec holds) and the run agrees.
    import ir_measures
    from ir_measures import nDCG

    reference = ir_measures.calc_aggregate([nDCG @ 3], qrels, {"q1": {A: 2.0, window.chunk_id: 1.0}})
    assert reference[nDCG @ 3] == pytest.approx(result.queries[0].metrics["ndcg@3"], abs=1e-9)
    # Retrieving both spans, once each, is the ideal: 1.0.
    both, _ = score_run(judgments, {"q1": [A, C]}, BY_ID, rank_metrics([1, 3]), universe=None)
    assert both.queries[0].metrics["ndcg@3"] == 1.0


def test_per_query_csv_has_one_row_per_query():
    judgments = [resolved("q1", "factoid", [(6, 10)]), resolved("q4", "no_answer", [])]
    result, _ = score_rankings(judgments, {"q1": [A], "q4": []}, [1])
    assert result.per_query_csv().splitlines() == [
        "query_id,query,category,retrieved,gold_chunks,first_gold_rank,abstained,top_score,recall@1,mrr,ndcg@1,"
        "chars@1",
        # No scores were handed to score_run: top_score is empty (tests/scoring/test_separability.py has them).
        "q1,q1,factoid,1,1,1,,,1.000000,1.000000,1.000000,10.000000",
        "q4,q4,no_answer,0,0,,1,,,,,",
    ]


def test_budget_hit_rate_by_hand():
    # q1's gold "beta" is A[6:10); the ranking is B (11 characters), then A.
    judgments = [resolved("q1", "factoid", [(6, 10)])]
    budgets = [11, 17, 18]
    result, _ = score_rankings(judgments, {"q1": [B, A]}, [1], budgets)
    metrics = result.queries[0].metrics
    # 11: B only. 17: B + A[0:6) ends just before "beta". 18: A[0:7) reaches its first character.
    assert [metrics[f"recall@{b}chars"] for b in budgets] == [0.0, 0.0, 1.0]


def test_hit_rate_curve_by_hand():
    from groundkit.scoring.score import hit_rate_curve

    judgments = [resolved("q1", "factoid", [(6, 10)]), resolved("q2", "factoid", [(23, 30)]),
                 resolved("q4", "no_answer", [])]
    result, _ = score_rankings(judgments, {"q1": [B, A], "q2": [], "q4": [C]}, [1])
    # q1 first hits at rank 2, q2 never: hit rate 0, then 1/2 from k = 2 on; no_answer is left out.
    assert hit_rate_curve(result, 3) == [{"k": 1, "recall": 0.0}, {"k": 2, "recall": 0.5}, {"k": 3, "recall": 0.5}]


def test_hit_rate_curve_at_the_deepest_depth_has_bounded_rows():
    from groundkit.scoring.schema import QueryResult, StageResult
    from groundkit.scoring.score import hit_rate_curve

    def query(qid: str, first: int | None, category: str = "factoid") -> QueryResult:
        return QueryResult(query_id=qid, query=qid, category=Category(category), retrieved=100_000,
                           gold_chunks=1, first_gold_rank=first, metrics={})

    # Four answerable queries first hit at ranks 1, 150, 1000 and 5000; one never; no_answer is left out.
    result = StageResult(measures=["recall@1"], queries=[query("a", 1), query("b", 150), query("c", 1000),
                                                         query("d", 5000), query("e", None),
                                                         query("f", None, "no_answer")])
    curve = {row["k"]: row["recall"] for row in hit_rate_curve(result, 100_000)}
    # Every k up to 100, then 20 per decade (R20: 112, 125, ..., 900, 1000, 1120, ...) and the depth itself.
    assert len(curve) == 100 + 19 + 20 + 20 + 1
    assert list(curve)[:100] == list(range(1, 101))
    assert list(curve)[100:104] == [112, 125, 140, 160] and list(curve)[-3:] == [80_000, 90_000, 100_000]
    assert (curve[1], curve[100], curve[140], curve[160], curve[900], curve[1000]) == (0.2, 0.2, 0.2, 0.4, 0.4, 0.6)
    assert (curve[4500], curve[5000], curve[100_000]) == (0.6, 0.8, 0.8)
    # A depth between two table entries ends on the depth: 150 gives 100, 112, 125, 140, 150.
    assert [row["k"] for row in hit_rate_curve(result, 150)][99:] == [100, 112, 125, 140, 150]
    assert [row["k"] for row in hit_rate_curve(result, 100)] == list(range(1, 101))


def test_a_registered_measure_reaches_the_summary_and_the_per_query_csv(throwaway_measure):
    judgments = [resolved("q1", "factoid", [(6, 10)]), resolved("q2", "boundary", [(6, 16)]),
                 resolved("q4", "no_answer", [])]
    metrics = [*rank_metrics([1, 3], [11]), "hits@1", "hits@3"]
    result, _ = score_run(judgments, {"q1": [B, A], "q2": [B, C, A], "q4": []}, BY_ID, metrics, universe=CHUNKS)
    # q1 (gold A) ranks B, A: 0 gold in the top 1, 1 in the top 3. q2 (gold A, B) ranks B, C, A: 1, then 2.
    assert result.metric_names == metrics  # score.measures' order
    summary = result.summary()
    assert (summary["answerable"]["hits@1"], summary["answerable"]["hits@3"]) == (0.5, 1.5)
    assert summary["by_category"]["boundary"]["hits@3"] == 2.0
    lines = result.per_query_csv().splitlines()
    assert lines[0].endswith(",recall@11chars,hits@1,hits@3")
    assert lines[1].endswith(",0.000000,1.000000") and lines[2].endswith(",1.000000,2.000000")
    assert lines[3].endswith(",,")  # no_answer: no metrics


def test_a_measure_no_module_registers_is_refused_by_name():
    from groundkit.errors import MeasureError

    with pytest.raises(MeasureError, match="'hits@1' is not a metric groundkit reports; the measures are chars@k, "):
        score_run([resolved("q1", "factoid", [(6, 10)])], {"q1": [A]}, BY_ID, ["recall@1", "hits@1"], universe=CHUNKS)


def test_a_rule_no_chunk_meets_scores_the_query_0_and_counts_it_unreachable():
    from groundkit.scoring.cautions import unreachable
    from groundkit.scoring.measures import Relevance

    # "beta gamma" [6, 16) straddles A [0, 10) and B [11, 22): A holds 4 of its 10 characters, B 5.
    judgments = [resolved("q1", "boundary", [(6, 16)]), resolved("q2", "factoid", [(23, 30)])]
    metrics = [*rank_metrics([1, 3]), "set_recall@3", "span_recall@3", "coverage@3"]
    half, _ = score_run(judgments, {"q1": [A, B], "q2": [C]}, BY_ID, metrics, universe=CHUNKS,
                        relevance=Relevance(0.4))
    strict, qrels = score_run(judgments, {"q1": [A, B], "q2": [C]}, BY_ID, metrics, universe=CHUNKS,
                              relevance=Relevance(0.6))
    assert half.queries[0].metrics["ndcg@3"] == 1.0 and half.summary()["answerable"]["unreachable"] == 0
    assert qrels["q1"] == {}  # no chunk holds 6 of its characters
    q1 = strict.queries[0].metrics
    assert (q1["recall@3"], q1["mrr"], q1["ndcg@3"], q1["set_recall@3"], q1["span_recall@3"]) == (0, 0, 0, 0, 0)
    assert q1["coverage@3"] == 0.9  # what is read does not depend on the rule: all but the space at 10
    block = strict.summary()["answerable"]
    assert block["unreachable"] == 1 and block["ndcg@3"] == 0.5  # q2 is found whole at rank 1
    warning = unreachable(strict.summary(), 0.6)
    assert warning.startswith("1 of 2 answerable queries have no passage holding 60% of a gold quote")
    assert unreachable(half.summary(), 0.4) is None


@pytest.mark.parametrize("seed", range(40))
def test_the_qrels_of_all_queries_at_once_equal_those_of_one_query_at_a_time(seed):
    import random

    from groundkit.corpus.passage import PassageLocator
    from groundkit.scoring.measures import Relevance
    from groundkit.scoring.score import _graded, graded_in

    rng = random.Random(seed)
    documents = ["a.md", "b.md", "c/é.md"]
    universe = []
    for document in documents[:rng.randint(1, 3)]:
        for _ in range(rng.randint(1, 15)):
            start = rng.randint(0, 300)
            end = start + rng.randint(1, 120)
            universe.append(Chunk(document=document, start_offset=start, end_offset=end, text="x" * (end - start)))
    spans = []
    for _ in range(rng.randint(1, 12)):
        group = []
        for _ in range(rng.randint(0, 4)):
            start = rng.randint(0, 400)
            end = start + rng.randint(1, 60)
            group.append(ResolvedSpan(document=rng.choice([*documents, "gone.md"]), quote=None, start=start, end=end,
                                      grade=rng.choice([1, 1, 2, 3])))
        spans.append(group)
    relevance = Relevance(rng.choice([0.0, 0.3, 0.5, 1.0]))
    locator = PassageLocator(universe)
    expected = [_graded(group, locator, relevance) for group in spans]
    found = graded_in(universe, spans, relevance)
    assert [list(g.items()) for g in found] == [list(g.items()) for g in expected]  # same keys, same order
