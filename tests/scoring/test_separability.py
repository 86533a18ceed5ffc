"""no_answer.separability: the AUC of the top-1 score, held to scikit-learn's roc_auc_score and to hand counts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from groundkit.corpus.judgments import Category
from groundkit.reports.compare import compare
from groundkit.reports.sides import _parse_side
from groundkit.scoring.schema import QueryResult, StageResult, read_per_query
from groundkit.scoring.separability import _counts, _Run, paired_bootstrap, separability

RUN_JSON = '{"corpus_hash": "c", "judgments_hash": "j", "params": {}, "groundkit_version": "0"}'


def _sklearn(positives, negatives) -> float:
    """roc_auc_score, which refuses infinities: minus infinity becomes a score below every finite one (the same
    order, so the same AUC)."""
    scores = np.array([*positives, *negatives], dtype=float)
    finite = scores[np.isfinite(scores)]
    floor = (finite.min() if len(finite) else 0.0) - 1.0
    return float(roc_auc_score([1] * len(positives) + [0] * len(negatives), np.where(np.isinf(scores), floor, scores)))


def test_a_hand_counted_case_ties_count_one_half_and_nothing_retrieved_is_lowest():
    # Pairs (answerable, no_answer): 3>2, 3>1, 2=2 (a half), 2>1, and -inf below both: 3.5 of 6.
    assert separability([3.0, 2.0, -math.inf], [2.0, 1.0]) == pytest.approx(3.5 / 6)
    # Two queries that both retrieved nothing tie.
    assert separability([-math.inf], [-math.inf]) == 0.5
    assert separability([5.0, 4.0], [1.0, 0.5]) == 1.0 and separability([0.0], [1.0]) == 0.0


@pytest.mark.parametrize("seed", range(6))
def test_it_equals_roc_auc_score_with_ties_and_empty_rankings(seed):
    rng = np.random.default_rng(seed)
    for _ in range(50):
        positives = rng.integers(0, 6, rng.integers(1, 40)).astype(float)  # few values: many ties
        negatives = rng.integers(0, 6, rng.integers(1, 40)).astype(float)
        positives[rng.random(len(positives)) < 0.1] = -np.inf
        negatives[rng.random(len(negatives)) < 0.3] = -np.inf
        assert separability(list(positives), list(negatives)) == pytest.approx(_sklearn(positives, negatives),
                                                                            abs=1e-12)
    continuous = rng.normal(size=300), rng.normal(0.5, 1, size=200)
    assert separability(*continuous) == pytest.approx(_sklearn(*continuous), abs=1e-12)


def test_it_is_not_available_without_both_kinds_of_query():
    assert separability([], [1.0]) is None and separability([1.0], []) is None
    with pytest.raises(ValueError, match="NaN"):
        separability([math.nan], [1.0])


def test_the_bootstrap_scores_each_resample_as_the_resampled_queries_would_score():
    rng = np.random.default_rng(7)
    positives, negatives = rng.integers(0, 4, 25).astype(float), rng.integers(0, 4, 15).astype(float)
    negatives[:3] = -np.inf
    run = _Run(list(positives), list(negatives))
    pos, neg = _counts(rng, 20, len(positives)), _counts(rng, 20, len(negatives))
    assert (pos.sum(axis=1) == len(positives)).all() and (neg.sum(axis=1) == len(negatives)).all()
    for row, expected in enumerate(run.auc(pos, neg)):
        drawn = np.repeat(positives, pos[row]), np.repeat(negatives, neg[row])
        assert expected == pytest.approx(_sklearn(*drawn), abs=1e-12)


def test_the_paired_bootstrap_finds_a_real_difference_and_none_between_equal_runs():
    rng = np.random.default_rng(3)
    answerable, no_answer = rng.normal(1.0, 1, 120), rng.normal(0.0, 1, 60)
    base = (list(answerable), list(no_answer))
    same = paired_bootstrap(base, base)
    assert (same.delta, same.ci_low, same.ci_high, same.p_value) == (0.0, 0.0, 0.0, 1.0)
    # The candidate pushes every answerable query's top score up by 2: it separates far better.
    better = paired_bootstrap(base, (list(answerable + 2.0), list(no_answer)), resamples=2000)
    assert better.baseline == pytest.approx(_sklearn(*base)) and better.candidate > 0.95
    assert 0 < better.ci_low <= better.delta <= better.ci_high and better.p_value == pytest.approx(2 / 2001)
    with pytest.raises(ValueError, match="same queries"):
        paired_bootstrap(base, (list(answerable), list(no_answer[:-1])))


def _query(qid: str, category: str, retrieved: int, top: float | None) -> QueryResult:
    answerable = category != "no_answer"
    return QueryResult(query_id=qid, query=qid, category=Category(category), retrieved=retrieved,
                       gold_chunks=1 if answerable else 0, first_gold_rank=1 if answerable else None,
                       metrics={"recall@1": 1.0} if answerable else {}, top_score=top)


def test_the_summary_reports_it_and_per_query_csv_carries_the_scores_exactly():
    queries = [_query("a", "factoid", 5, 2.5), _query("b", "factoid", 0, None), _query("c", "factoid", 5, 0.1),
               _query("n1", "no_answer", 5, 0.1), _query("n2", "no_answer", 0, None),
               _query("n3", "no_answer", 5, 1 / 3)]
    result = StageResult(measures=["recall@1"], queries=queries)
    summary = result.summary()
    # a beats all three; b (nothing) ties n2 and loses to the rest; c ties n1, beats n2, loses to n3: 5 of 9.
    assert summary["no_answer"]["separability"] == pytest.approx(5 / 9)
    assert summary["by_category"]["no_answer"]["separability"] == summary["no_answer"]["separability"]
    table = read_per_query(result.per_query_csv(), "per_query.csv")
    assert table.top_score == [2.5, -math.inf, 0.1, 0.1, -math.inf, 1 / 3]  # 1/3 read back to the last bit
    assert "separability" not in StageResult(measures=["recall@1"], queries=queries[:3]).summary()["no_answer"]
    # A run that carried no scores (an answerable query retrieved something, score unknown): not available.
    unknown = [*queries[:2], _query("c", "factoid", 5, None), *queries[3:]]
    assert "separability" not in StageResult(measures=["recall@1"], queries=unknown).summary()["no_answer"]


def test_a_hand_edited_top_score_is_refused_with_its_line():
    text = StageResult(measures=["recall@1"], queries=[_query("a", "factoid", 5, 2.5)]).per_query_csv()
    with pytest.raises(Exception, match=r"top_score.*'inf'") as caught:
        read_per_query(text.replace(",2.5,", ",inf,"), "per_query.csv")
    assert caught.value.line == 2


def test_compare_pairs_it_by_bootstrap_and_says_why_when_it_is_missing():
    def side(label: str, tops: list[float | None]) -> object:
        queries = [_query(f"q{i}", "factoid" if i < 4 else "no_answer", 0 if t is None else 3, t)
                   for i, t in enumerate(tops)]
        csv = StageResult(measures=["recall@1"], queries=queries).per_query_csv()
        return _parse_side(label, csv, RUN_JSON, f"{label}/per_query.csv", f"{label}/run.json")

    base = side("base", [3.0, 2.0, 1.0, None, 2.0, 0.5])
    cand = side("cand", [3.0, 2.0, 1.5, 1.0, 0.5, 0.2])
    figure = compare(base, [cand], gate=[]).candidates[0].no_answer["separability"]
    assert figure["baseline"] == pytest.approx(_sklearn([3.0, 2.0, 1.0, -np.inf], [2.0, 0.5]))
    assert figure["candidate"] == 1.0
    assert figure["delta"] == pytest.approx(figure["candidate"] - figure["baseline"])
    assert figure["ci95"][0] <= figure["delta"] <= figure["ci95"][1] and 0 < figure["p_value"] <= 1
    old = _parse_side("old", "\n".join(line.rsplit(",", 2)[0] + "," + line.rsplit(",", 1)[1]
                                       for line in base_csv_without_scores()), RUN_JSON, "old/per_query.csv",
                      "old/run.json")
    assert "no top-1 scores" in compare(old, [cand], gate=[]).candidates[0].no_answer["separability"]["note"]
    only_answerable = side("a", [3.0, 2.0, 1.0, 0.5])
    (only,) = compare(only_answerable, [only_answerable], gate=[]).candidates
    assert "needs both" in only.no_answer["separability"]["note"]


def base_csv_without_scores() -> list[str]:
    """A per_query.csv as groundkit wrote it before the top_score column (every row: top_score cut out)."""
    queries = [_query(f"q{i}", "factoid" if i < 4 else "no_answer", 3, 1.0) for i in range(6)]
    return StageResult(measures=["recall@1"], queries=queries).per_query_csv().splitlines()
