"""A run scored under a judge's labels and a person's: per-query values by hand, per_query.csv's human. columns
read back, and the PPI block against ppi_py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate

from groundkit.errors import ArtifactError
from groundkit.scoring.ppi import ALPHA
from groundkit.scoring.schema import read_per_query
from groundkit.scoring.score import score_run, score_two_label_sets
from groundkit.scoring.two_labels import LabelSets, estimate, headline
from tests.scoring.test_score import BY_ID, CHUNKS, A, B, C, resolved

METRICS = ["recall@1", "mrr", "ndcg@3", "chars@1"]


def _two_sets():
    # The judge: q1's gold is "beta" (A), q2's "epsilon" (C), q3 nothing relevant, q4 "gamma" (B).
    machine = [resolved("q1", "factoid", [(6, 10)]), resolved("q2", "factoid", [(23, 30)]),
               resolved("q3", "no_answer", []), resolved("q4", "factoid", [(11, 16)])]
    # The person labelled q1 as the judge did, q2 as "gamma" (B), q3 as "alpha" (A); not q4. q9 the judge never saw.
    human = [resolved("q1", "factoid", [(6, 10)]), resolved("q2", "factoid", [(11, 16)]),
             resolved("q3", "factoid", [(0, 5)]), resolved("q9", "factoid", [(0, 5)])]
    rankings = {"q1": [A, B], "q2": [B, C], "q3": [B, A], "q4": [C]}
    return machine, human, rankings


def test_each_query_scores_under_both_label_sets_by_hand():
    machine, human, rankings = _two_sets()
    result, qrels = score_two_label_sets(machine, human, rankings, BY_ID, METRICS, universe=CHUNKS)
    assert result.human_measures == ["recall@1", "mrr", "ndcg@3"]  # chars@1 does not depend on the labels
    by_id = {q.query_id: q for q in result.queries}
    assert list(by_id) == ["q1", "q2", "q3", "q4"]  # the judge's queries: q9 is not among them
    assert by_id["q1"].metrics["mrr"] == 1.0 and by_id["q1"].human_metrics == {"recall@1": 1.0, "mrr": 1.0,
                                                                                "ndcg@3": 1.0}
    # q2: the judge's gold C at rank 2 (mrr 1/2, nDCG@3 1/log2(3)); the person's B at rank 1.
    assert by_id["q2"].metrics["mrr"] == 0.5
    assert by_id["q2"].metrics["ndcg@3"] == pytest.approx(1 / math.log2(3))
    assert by_id["q2"].human_metrics == {"recall@1": 1.0, "mrr": 1.0, "ndcg@3": 1.0}
    # q3: nothing relevant for the judge (no values, the no_answer row); the person's A at rank 2.
    assert by_id["q3"].metrics == {} and by_id["q3"].human_metrics["mrr"] == 0.5
    assert by_id["q4"].human_metrics is None
    assert qrels == score_run(machine, rankings, BY_ID, METRICS, universe=CHUNKS)[1]


def test_a_query_the_person_found_nothing_relevant_for_scores_zero():
    machine = [resolved("q1", "factoid", [(6, 10)])]
    human = [resolved("q1", "no_answer", [])]
    result, _ = score_two_label_sets(machine, human, {"q1": [A]}, BY_ID, METRICS, universe=CHUNKS)
    assert result.queries[0].human_metrics == {"recall@1": 0.0, "mrr": 0.0, "ndcg@3": 0.0}


def test_per_query_csv_carries_human_columns_and_reads_back():
    machine, human, rankings = _two_sets()
    result, _ = score_two_label_sets(machine, human, rankings, BY_ID, METRICS, universe=CHUNKS)
    text = result.per_query_csv()
    header = text.splitlines()[0].split(",")
    assert header[-3:] == ["human.recall@1", "human.mrr", "human.ndcg@3"]
    assert text.splitlines()[4].endswith(",,,")  # q4: not labelled by the person
    table = read_per_query(text, "per_query.csv")
    assert table.metric_names == METRICS and table.human_names == ["recall@1", "mrr", "ndcg@3"]
    assert table.human_values[1].tolist() == [1.0, 1.0, 1.0]
    assert np.isnan(table.human_values[3]).all()
    sets = LabelSets.from_per_query(table)
    # The judge's q3 found nothing relevant: 0 under the judge's labels, in the estimate's rows.
    assert sets.machine[2].tolist() == [0.0, 0.0, 0.0]
    assert sets.labelled.tolist() == [True, True, True, False]
    from_result = LabelSets.from_result(result)
    # per_query.csv keeps six decimals
    assert np.allclose(from_result.machine, sets.machine, rtol=0, atol=5e-7)
    assert np.allclose(from_result.human, sets.human, rtol=0, atol=5e-7, equal_nan=True)


def test_one_label_set_writes_today_s_file():
    machine, _, rankings = _two_sets()
    plain, _ = score_run(machine, rankings, BY_ID, METRICS, universe=CHUNKS)
    assert "human." not in plain.per_query_csv()
    table = read_per_query(plain.per_query_csv(), "per_query.csv")
    assert table.human_values is None and LabelSets.from_per_query(table) is None


def _cell(text, row, column, value):
    lines = [line.split(",") for line in text.splitlines()]
    lines[row][lines[0].index(column)] = value
    return "\n".join(",".join(line) for line in lines) + "\n"


@pytest.mark.parametrize(("edit", "problem"), [
    (lambda t: t.replace("human.mrr,", "", 1), r"has the columns \['human.recall@1', 'human.ndcg@3'\]"),
    (lambda t: t.replace("human.mrr", "human.chars@1", 1), "has the columns"),
    (lambda t: _cell(t, 1, "human.mrr", ""), "'human.mrr' of query 'q1' holds an empty cell"),
    (lambda t: _cell(t, 4, "human.mrr", "0.5"), "'human.recall@1' of query 'q4' holds an empty cell"),
    (lambda t: _cell(t, 2, "human.ndcg@3", "nan"), "'human.ndcg@3' of query 'q2' holds 'nan'"),
])
def test_an_edited_human_column_is_refused(edit, problem):
    machine, human, rankings = _two_sets()
    result, _ = score_two_label_sets(machine, human, rankings, BY_ID, METRICS, universe=CHUNKS)
    text = result.per_query_csv()
    edited = edit(text)
    assert edited != text
    with pytest.raises(ArtifactError, match=problem):
        read_per_query(edited, "per_query.csv")


def _random_sets(n, N, seed, *, noise=0.2):
    rng = np.random.default_rng(seed)
    truth = rng.random((n + N, 2))
    judged = np.clip(truth + rng.normal(0, noise, truth.shape), 0, 1)
    human = truth.copy()
    human[n:] = np.nan
    order = rng.permutation(n + N)  # labelled queries anywhere in the file, not first
    return LabelSets(names=["ndcg@10", "mrr"], machine=judged[order], human=human[order]), truth[:n], judged


def test_the_block_equals_ppi_py_and_names_what_stands_beside_it():
    sets, _, _ = _random_sets(50, 94, 5)
    block = estimate(sets, drawn=True)
    assert (block["n"], block["N"], block["warnings"]) == (50, 94, [])
    mask = sets.labelled
    for j, name in enumerate(sets.names):
        Y, Yhat, Yhat_u = sets.human[mask, j], sets.machine[mask, j], sets.machine[~mask, j]
        figures = block["metrics"][name]
        assert figures["estimate"] == pytest.approx(float(ppi_mean_pointestimate(Y, Yhat, Yhat_u)[0]), abs=1e-9)
        low, high = ppi_mean_ci(Y, Yhat, Yhat_u, alpha=ALPHA)
        assert (figures["ci_low"], figures["ci_high"]) == pytest.approx((low[0], high[0]), abs=1e-9)
        low, high = classical_mean_ci(Y, alpha=ALPHA)
        assert (figures["human_only"]["ci_low"], figures["human_only"]["ci_high"]) == pytest.approx((low, high),
                                                                                                    abs=1e-9)
        assert figures["machine_only"] == {"mean": pytest.approx(sets.machine[:, j].mean()), "biased": True}
        assert figures["width_ratio"] == pytest.approx((high_minus_low := figures["ci_high"] - figures["ci_low"])
                                                       / (high - low))
        assert high_minus_low < high - low  # a judge this good narrows the interval
    assert headline(block, ["mrr"]) == {"ppi": {"mrr": {k: block["metrics"]["mrr"][k]
                                                        for k in ("estimate", "ci_low", "ci_high")}}}


def test_warnings_few_labels_no_sample_record_poor_agreement():
    sets, _, _ = _random_sets(20, 100, 6, noise=3.0)
    block = estimate(sets, drawn=False)
    text = "\n".join(block["warnings"])
    assert "no sample record" in text
    assert "only 20 machine-judged queries have a person's label" in text
    poor = next(w for w in block["warnings"] if "agrees poorly" in w)
    assert "ndcg@10 (correlation" in poor and "mrr (correlation" in poor
    good = estimate(_random_sets(40, 100, 6)[0])
    assert good["warnings"] == []


def test_too_few_labels_gives_no_interval_and_all_labelled_gives_the_person_s_mean():
    sets, _, _ = _random_sets(1, 30, 7)
    block = estimate(sets)
    assert block["metrics"] == {} and "needs at least 2" in block["warnings"][0]
    everyone, _, _ = _random_sets(40, 0, 8)
    block = estimate(everyone)
    assert block["N"] == 0
    assert block["metrics"]["mrr"]["estimate"] == pytest.approx(everyone.human[:, 1].mean())
    assert block["metrics"]["mrr"]["lambda"] == 0.0
