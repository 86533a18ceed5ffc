"""Document-level measures: worked by hand, and equal to pytrec_eval and ir_measures per query on random runs."""

from __future__ import annotations

import math
import random
from pathlib import Path

import ir_measures
import pytest
import pytrec_eval
from ir_measures import RR, R, Success, nDCG

from groundkit.config import DEFAULT_MEASURES
from groundkit.errors import MeasureError
from groundkit.scoring.measures.set_recall import set_recall_at_k
from groundkit.scoring.trec.files import read_qrels, read_run
from groundkit.scoring.trec.measures import default_measures, parse_measures, score
from groundkit.scoring.trec.result import summary

G3 = 1 / math.log2(3)


def _files(tmp_path: Path, run: list[str], qrels: list[str]) -> tuple[Path, Path]:
    (tmp_path / "run.trec").write_text("".join(f"{line}\n" for line in run), encoding="utf-8")
    (tmp_path / "qrels.trec").write_text("".join(f"{line}\n" for line in qrels), encoding="utf-8")
    return tmp_path / "run.trec", tmp_path / "qrels.trec"


def _scored(tmp_path: Path, run: list[str], qrels: list[str], measures: list[str], **options):
    run_path, qrels_path = _files(tmp_path, run, qrels)
    return score(read_run(run_path), read_qrels(qrels_path), measures, **options)


def _row(scores, query_id: str) -> dict[str, float]:
    i = scores.query_ids.index(query_id)
    return {name: float(values[i]) for name, values in scores.metrics.items()}


def test_a_query_worked_by_hand(tmp_path):
    # q1 ranks A (3), then C and B tied at 2 (C first: ids descending), then D; the rank column is not read.
    run = ["q1 Q0 A 4 3.0 t", "q1 Q0 B 1 2.0 t", "q1 Q0 C 2 2 t", "q1 Q0 D 3 1.0 t"]
    qrels = ["q1 0 C 2", "q1 0 D 1", "q1 0 E 1", "q1 0 B 0"]
    names = ["recall@1", "recall@3", "mrr", "ndcg@3", "set_recall@3", "set_recall@4"]
    scores = _scored(tmp_path, run, qrels, names)
    ideal = 2 + G3 + 1 / 2  # grades 2, 1, 1 at ranks 1, 2, 3
    assert _row(scores, "q1") == pytest.approx({
        "recall@1": 0, "recall@3": 1, "mrr": 1 / 2, "ndcg@3": (2 * G3) / ideal, "set_recall@3": 1 / 3,
        "set_recall@4": 2 / 3}, abs=1e-12)
    assert (scores.first_relevant.tolist(), scores.relevant.tolist(), scores.retrieved.tolist()) == ([2], [3], [4])
    assert (scores.tied_pairs, scores.tied_queries, scores.single_precision_ties) == (1, 1, 0)


def test_queries_missing_on_either_side_and_without_relevant_documents(tmp_path):
    run = ["q1 Q0 a 1 1.0 t", "q9 Q0 a 1 1.0 t", "q3 Q0 a 1 5.0 t"]
    qrels = ["q1 0 a 1", "q2 0 b 3", "q3 0 a 0", "q3 0 b -1"]
    scores = _scored(tmp_path, run, qrels, ["mrr", "ndcg@10"])
    assert scores.query_ids == ["q1", "q2", "q3"]
    assert (scores.absent, scores.unjudged, scores.depth) == (1, 1, 1)
    assert _row(scores, "q2") == {"mrr": 0.0, "ndcg@10": 0.0}  # in the qrels, not in the run: 0 (trec_eval -c)
    # Nothing relevant to find: an answerable query scoring 0, as trec_eval -c counts it ...
    assert scores.answerable.tolist() == [True, True, True]
    assert _row(scores, "q3") == {"mrr": 0.0, "ndcg@10": 0.0}
    # ... or, asked for, no_answer, left out of the means.
    old = _scored(tmp_path, run, qrels, ["mrr", "ndcg@10"], empty_qrels_as_no_answer=True)
    assert old.answerable.tolist() == [True, True, False]
    assert all(math.isnan(v) for v in _row(old, "q3").values())


def test_scores_tie_in_single_precision_as_trec_eval_reads_them(tmp_path):
    # 1 + 1e-9 and 1.0 are one float32: a tie, broken by id descending, so b comes before a.
    scores = _scored(tmp_path, ["q Q0 a 1 1.000000001 t", "q Q0 b 2 1.0 t", "q Q0 c 3 -0.0 t", "q Q0 d 4 0.0 t"],
                     ["q 0 a 1"], ["mrr"])
    assert _row(scores, "q") == {"mrr": 0.5}
    assert (scores.tied_pairs, scores.single_precision_ties) == (2, 1)  # (a, b) and (-0.0, 0.0)


def test_document_ids_tie_in_code_point_order(tmp_path):
    ids = ["a", "B", "aa", "a10", "a9", "é", "z", "\U0001f600"]
    for relevant in ids:
        scores = _scored(tmp_path, [f"q Q0 {d} 1 7.5 t" for d in ids], [f"q 0 {relevant} 1"], ["mrr"])
        rank = sorted(ids, reverse=True).index(relevant) + 1
        assert _row(scores, "q") == {"mrr": 1 / rank}, relevant
    assert scores.tied_pairs == len(ids) * (len(ids) - 1) // 2


def test_set_recall_by_hand():
    assert set_recall_at_k(["a", "x", "b", "c"], {"a", "b", "c", "d"}, 3) == 2 / 4
    assert set_recall_at_k(["x"], {"a"}, 10) == 0.0
    with pytest.raises(ValueError):
        set_recall_at_k(["a"], set(), 1)


def test_measures_are_named_once_in_report_order():
    assert [n for n, _ in parse_measures(["set_recall@100", "ndcg@10", "mrr", "ndcg@3", "recall@10", "mrr"])] \
        == ["recall@10", "mrr", "ndcg@3", "ndcg@10", "set_recall@100"]
    # The document-level measures of score.measures, and set recall at 100.
    assert default_measures(DEFAULT_MEASURES) == ["recall@1", "recall@3", "recall@5", "recall@10", "mrr", "ndcg@1",
                                                  "ndcg@3", "ndcg@5", "ndcg@10", "set_recall@100"]
    assert default_measures(["ndcg@10", "set_recall@50", "coverage@1000chars"]) == ["ndcg@10", "set_recall@50"]
    for bad in ("chars@10", "recall@500chars", "map", "ndcg@0", []):
        with pytest.raises(MeasureError):
            parse_measures(bad if isinstance(bad, list) else [bad])


# --- against the references ------------------------------------------------------------------------

DOCUMENTS = [f"d{i}" for i in range(40)] + ["D7", "é", "z", "a10", "a9", "doc-Ω"]
SCORES = [1.0, 2.0, 0.5, 3.25, -1.5, 0.0, -0.0, 1.000000001]  # ties, and a tie only in single precision


def _random_case(seed: int) -> tuple[list[str], list[str], dict, dict]:
    """A graded run and qrels: queries on either side only, grade 0 and -1, no relevant document, ties."""
    rng = random.Random(seed)
    run_lines, qrel_lines, run, qrels = [], [], {}, {}
    for q in range(60):
        query = f"q{q}"
        if q % 6:  # every sixth query is missing from the run
            for rank, document in enumerate(rng.sample(DOCUMENTS, rng.randint(1, 30)), start=1):
                value = rng.choice(SCORES) if rng.random() < 0.5 else round(rng.uniform(-5, 5), rng.randint(1, 9))
                run_lines.append(f"{query} Q0 {document} {rank} {value!r} run")
                run.setdefault(query, {})[document] = value
        if q % 7:  # every seventh is missing from the qrels
            for document in rng.sample(DOCUMENTS, rng.randint(1, 12)):
                grade = rng.choice([0, 1, 1, 2, 3, -1]) if q % 5 else 0  # every fifth has nothing relevant
                qrel_lines.append(f"{query} 0 {document} {grade}")
                qrels.setdefault(query, {})[document] = grade
    return run_lines, qrel_lines, run, qrels


PAIRS = {"ndcg@10": ("ndcg_cut_10", nDCG @ 10), "mrr": ("recip_rank", RR), "recall@10": ("success_10", Success @ 10),
         "set_recall@100": ("recall_100", R @ 100)}


@pytest.mark.parametrize("seed", range(8))
def test_every_query_equals_pytrec_eval_and_ir_measures(tmp_path, seed):
    run_lines, qrel_lines, run, qrels = _random_case(seed)
    scores = _scored(tmp_path, run_lines, qrel_lines, list(PAIRS))
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recip_rank", "success.10", "recall.100"})
    trec = evaluator.evaluate(run)
    qrel_records = [ir_measures.Qrel(q, d, g) for q, graded in qrels.items() for d, g in graded.items()]
    run_records = [ir_measures.ScoredDoc(q, d, s) for q, ranked in run.items() for d, s in ranked.items()]
    theirs = {(m.query_id, str(m.measure)): m.value
              for m in ir_measures.iter_calc([m for _, m in PAIRS.values()], qrel_records, run_records)}
    checked = 0
    assert scores.answerable.all()  # a query grading nothing above 0 too, as trec_eval -c counts it
    for i, query in enumerate(scores.query_ids):
        for name, (trec_name, measure) in PAIRS.items():
            ours = float(scores.metrics[name][i])
            # pytrec_eval scores the queries of the run only; groundkit a missing one as 0, as ir_measures does.
            assert ours == pytest.approx(trec[query][trec_name] if query in trec else 0.0, abs=1e-9), (query, name)
            assert ours == pytest.approx(theirs[query, str(measure)], abs=1e-9), (query, name)
            checked += 1
    assert checked > 100
    assert scores.tied_pairs > 0 and scores.single_precision_ties > 0 and scores.absent > 0 and scores.unjudged > 0
    assert any(not any(g > 0 for g in graded.values()) for graded in qrels.values())


@pytest.mark.parametrize("seed", range(4))
def test_the_means_are_trec_eval_dash_c_means_over_every_qrels_query(tmp_path, seed):
    # Issue 35 item 1: a query whose qrels grade nothing above 0 was no_answer and left out of the means
    # (ndcg@10 0.001700 against ir_measures' 0.001638). trec_eval -c counts it as 0, and so does groundkit.
    run_lines, qrel_lines, run, qrels = _random_case(seed)
    scores = _scored(tmp_path, run_lines, qrel_lines, list(PAIRS))
    means = summary(scores, list(PAIRS))["answerable"]
    qrel_records = [ir_measures.Qrel(q, d, g) for q, graded in qrels.items() for d, g in graded.items()]
    run_records = [ir_measures.ScoredDoc(q, d, s) for q, ranked in run.items() for d, s in ranked.items()]
    theirs = {(m.query_id, str(m.measure)): m.value
              for m in ir_measures.iter_calc([m for _, m in PAIRS.values()], qrel_records, run_records)}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recip_rank", "success.10", "recall.100"})
    trec = evaluator.evaluate(run)
    assert means["queries"] == len(qrels)
    for name, (trec_name, measure) in PAIRS.items():
        # -c: every query of the qrels, a query the run lacks as 0.
        reference = sum(theirs.get((q, str(measure)), 0.0) for q in qrels) / len(qrels)
        assert means[name] == pytest.approx(reference, abs=1e-12), name
        assert means[name] == pytest.approx(sum(trec[q][trec_name] if q in trec else 0.0 for q in qrels)
                                            / len(qrels), abs=1e-12), name
    # The old reading, asked for: those queries are no_answer and the means are over the others.
    old = _scored(tmp_path, run_lines, qrel_lines, list(PAIRS), empty_qrels_as_no_answer=True)
    kept = [q for q, graded in qrels.items() if any(g > 0 for g in graded.values())]
    assert summary(old, list(PAIRS))["answerable"]["queries"] == len(kept) < len(qrels)


def test_a_query_without_results_in_the_run_is_zero_in_ir_measures_too():
    # The convention the comparison above leans on: ir_measures reports a judged query the run lacks as 0.
    values = {m.query_id: m.value for m in ir_measures.iter_calc(
        [nDCG @ 10], [ir_measures.Qrel("a", "d", 1), ir_measures.Qrel("b", "d", 1)],
        [ir_measures.ScoredDoc("a", "d", 1.0)])}
    assert values == {"a": 1.0, "b": 0.0}
