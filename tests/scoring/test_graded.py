"""Graded relevance: a gold quote's grade is its passages' gain in nDCG, checked by hand and against ir_measures."""

from __future__ import annotations

import csv
import json
import math
import random
from pathlib import Path

import ir_measures
import pytest
from ir_measures import RR, Success, nDCG

from groundkit.cli import main
from groundkit.corpus.judgments import Category, GoldSpan, Judgment, parse_judgment
from groundkit.corpus.passage import Chunk, Excerpt
from groundkit.corpus.spans import ResolvedJudgment, ResolvedSpan
from groundkit.errors import JudgmentsError
from groundkit.retrieval.trec import qrels_lines, write_run
from groundkit.scoring.measures.ndcg import ndcg_at_k
from groundkit.scoring.score import score_run
from tests.conftest import rank_metrics

TEXT = "alpha beta gamma delta epsilon"
CHUNKS = [Chunk(document="a.md", start_offset=s, end_offset=e, text=TEXT[s:e])
          for s, e in [(0, 10), (11, 22), (23, 30)]]
A, B, C = (c.chunk_id for c in CHUNKS)
BY_ID = {c.chunk_id: c for c in CHUNKS}
LOG3 = math.log2(3)


def span(start: int, end: int, grade: int = 1) -> ResolvedSpan:
    return ResolvedSpan(document="a.md", quote=TEXT[start:end], start=start, end=end, grade=grade)


def judgment(*spans: ResolvedSpan, qid: str = "q1") -> ResolvedJudgment:
    return ResolvedJudgment(query_id=qid, query=qid, category=Category.FACTOID, spans=list(spans))


def test_grade_is_the_gain_worked_by_hand():
    # "beta" (grade 2) lies in A, "epsilon" (grade 3) in C; B is not relevant.
    graded = judgment(span(6, 10, 2), span(23, 30, 3))
    result, qrels = score_run([graded], {"q1": [A, B, C]}, BY_ID, rank_metrics([1, 3]), universe=CHUNKS)
    assert qrels == {"q1": {A: 2, C: 3}}
    metrics = result.queries[0].metrics
    # DCG@3 = 2/log2(2) + 0 + 3/log2(4) = 3.5; the ideal puts C (3) first, then A (2): 3 + 2/log2(3).
    assert metrics["ndcg@3"] == pytest.approx(3.5 / (3 + 2 / LOG3), abs=1e-12)
    # At 1 the ideal is C alone (gain 3); A gives 2.
    assert metrics["ndcg@1"] == pytest.approx(2 / 3, abs=1e-12)
    # Hit rate and MRR count any grade: A is relevant.
    assert (metrics["recall@1"], metrics["mrr"]) == (1.0, 1.0)


def test_a_passage_takes_the_highest_grade_of_the_spans_it_overlaps():
    # Chunk A ("alpha beta") overlaps "alpha" (grade 1) and "beta" (grade 3).
    _, qrels = score_run([judgment(span(0, 5, 1), span(6, 10, 3))], {"q1": [A]}, BY_ID, rank_metrics([1]),
                         universe=CHUNKS)
    assert qrels == {"q1": {A: 3}}


def test_binary_judgments_score_exactly_as_before_grades():
    # The pre-grade formula: binary gain, IDCG over min(|gold|, k) ranks.
    result, _ = score_run([judgment(span(6, 16))], {"q1": [C, B, A]}, BY_ID, rank_metrics([3]), universe=CHUNKS)
    dcg = 1.0 / math.log2(3) + 1.0 / math.log2(4)
    assert result.queries[0].metrics["ndcg@3"] == dcg / (1.0 + 1.0 / math.log2(3))
    assert ndcg_at_k([C, B, A], {A, B}, 3) == ndcg_at_k([C, B, A], {A: 1, B: 1}, 3)


def test_an_external_runs_placeholders_carry_their_spans_grade():
    graded = judgment(span(6, 10, 2), span(23, 30, 3))
    # Only A was retrieved; "epsilon" was not, so a placeholder of grade 3 stands for it in the ideal ranking.
    result, qrels = score_run([graded], {"q1": [A]}, BY_ID, rank_metrics([3]), universe=None)
    assert sorted(qrels["q1"].values()) == [2, 3] and qrels["q1"][A] == 2
    assert result.queries[0].metrics["ndcg@3"] == pytest.approx(2 / (3 + 2 / LOG3), abs=1e-12)


def _random_collection(seed: int) -> tuple[list[ResolvedJudgment], dict[str, list[str]], list[Excerpt]]:
    """Forty documents of ten 20-character chunks, 60 queries with 1-4 graded quotes, 30-deep rankings."""
    rng = random.Random(seed)
    chunks = [Excerpt(document=f"d{d}.md", start=20 * i, end=20 * i + 20, text="x" * 20)
              for d in range(40) for i in range(10)]
    judgments, rankings = [], {}
    for q in range(60):
        spans = []
        for _ in range(rng.randint(1, 4)):
            doc, start = f"d{rng.randrange(40)}.md", rng.randrange(190)
            end = min(200, start + rng.randint(1, 45))  # some quotes straddle two or three chunks
            spans.append(ResolvedSpan(document=doc, quote="x" * (end - start), start=start, end=end,
                                      grade=rng.choice([1, 1, 2, 3, 4])))
        qid = f"q{q:02d}"
        judgments.append(ResolvedJudgment(query_id=qid, query=qid, category=Category.FACTOID, spans=spans))
        # Bias rankings towards relevant documents so that most queries find something.
        near = [c for c in chunks if c.document in {s.document for s in spans}]
        pool = rng.sample(near, min(len(near), 8)) + rng.sample(chunks, 30)
        rankings[qid] = list(dict.fromkeys(c.passage_id for c in pool))[:30]
        rng.shuffle(rankings[qid])
    return judgments, rankings, chunks


@pytest.mark.parametrize("known_universe", [True, False], ids=["chunk-run", "external-run"])
def test_graded_ndcg_equals_ir_measures_on_the_same_graded_qrels(known_universe, tmp_path: Path):
    judgments, rankings, chunks = _random_collection(seed=13)
    by_id = {c.passage_id: c for c in chunks}
    result, qrels = score_run(judgments, rankings, by_id, rank_metrics([1, 5, 10]),
                              universe=chunks if known_universe else None)
    assert len({g for grades in qrels.values() for g in grades.values()}) >= 3  # the fixture is graded
    # The files groundkit exports, read by ir_measures.
    (tmp_path / "qrels.trec").write_text("".join(line + "\n" for line in qrels_lines(qrels)))
    scored = {q: [(p, float(-rank)) for rank, p in enumerate(ids, 1)] for q, ids in rankings.items()}
    write_run(tmp_path / "run.trec", scored, "t")
    qrels_file = list(ir_measures.read_trec_qrels(str(tmp_path / "qrels.trec")))
    run = list(ir_measures.read_trec_run(str(tmp_path / "run.trec")))
    measures = [nDCG @ 10, nDCG @ 5, nDCG @ 1, Success @ 10, RR]
    reference = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels_file, run)}
    names = {"nDCG@10": "ndcg@10", "nDCG@5": "ndcg@5", "nDCG@1": "ndcg@1", "Success@10": "recall@10", "RR": "mrr"}
    for row in result.queries:
        for measure, name in names.items():
            assert abs(row.metrics[name] - reference.get((row.query_id, measure), 0.0)) <= 1e-9, (row.query_id, name)


@pytest.mark.parametrize("grade, problem", [(0, "greater than or equal to 1"), (-2, "greater than or equal to 1"),
                                            ("2", "valid integer"), (True, "valid integer"), (2.0, "valid integer"),
                                            (10**6, "less than or equal to 1000")])
def test_a_bad_grade_names_the_line_and_the_key(grade, problem):
    record = {"query_id": "q1", "query": "q", "category": "factoid",
              "gold": [{"document": "a.md", "quote": "beta", "grade": grade}]}
    with pytest.raises(JudgmentsError) as caught:
        parse_judgment(Path("judgments.jsonl"), 7, json.dumps(record))
    message = str(caught.value)
    assert message.startswith("judgments.jsonl:7: key 'gold.0.grade'") and problem in message
    assert "fix:" in message


def test_a_grade_of_one_is_not_written_and_any_other_is():
    plain = Judgment(query_id="q1", query="q", category=Category.FACTOID,
                     gold=[GoldSpan(document="a.md", quote="beta"), GoldSpan(document="a.md", quote="gamma", grade=3)])
    assert json.loads(plain.to_json())["gold"] == [{"document": "a.md", "quote": "beta"},
                                                   {"document": "a.md", "grade": 3, "quote": "gamma"}]
    assert "exclude_documents" not in plain.to_json()


# --- end to end: groundkit run on a graded corpus with an excluded document --------------------------------------


def test_groundkit_run_exports_graded_qrels_and_honours_excluded_documents(tmp_path: Path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    docs = {
        "raft.md": "Raft elects a leader by majority vote. The leader appends entries to followers.",
        "paxos.md": "Paxos reaches consensus with proposers and acceptors. A leader is optional in Paxos.",
        "gossip.md": "Gossip spreads membership by random peer exchange. No leader is elected.",
        "leader.md": "How does a cluster elect a leader and replicate entries to followers?",
    }
    for name, text in docs.items():
        (corpus / name).write_text(text + "\n", encoding="utf-8")
    judgments = tmp_path / "judgments.jsonl"
    records = [
        {"query_id": "q1", "query": "how does a cluster elect a leader and replicate entries",
         "category": "multi_passage", "exclude_documents": ["leader.md"],
         "gold": [{"document": "raft.md", "quote": "Raft elects a leader by majority vote", "grade": 3},
                  {"document": "paxos.md", "quote": "A leader is optional in Paxos"}]},
        {"query_id": "q2", "query": "membership spread by peer exchange", "category": "factoid",
         "gold": [{"document": "gossip.md", "quote": "Gossip spreads membership", "grade": 2}]},
    ]
    judgments.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["run", "--corpus", str(corpus), "--judgments", str(judgments), "--out", str(out),
                 "--set", "chunk.strategy=document",
                 "--set", "score.measures=[recall@1, recall@3, recall@10, mrr, ndcg@1, ndcg@3, ndcg@10]",
                 "--set", "score.headline=[ndcg@10]"]) == 0

    chunks = {json.loads(line)["chunk_id"]: json.loads(line)["document"]
              for line in (out / "chunks.jsonl").read_text().splitlines()}
    run = list(ir_measures.read_trec_run(str(out / "run.trec")))
    # The query's near-copy (leader.md) is excluded, so it is nowhere in q1's run...
    assert [chunks[d.doc_id] for d in run if d.query_id == "q1"] == ["raft.md", "paxos.md", "gossip.md"]
    # ...where, not excluded, it ranks first.
    records[0].pop("exclude_documents")
    judgments.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert main(["run", "--corpus", str(corpus), "--judgments", str(judgments), "--out", str(tmp_path / "plain"),
                 "--set", "chunk.strategy=document"]) == 0
    plain = list(ir_measures.read_trec_run(str(tmp_path / "plain" / "run.trec")))
    assert next(chunks[d.doc_id] for d in plain if d.query_id == "q1") == "leader.md"
    qrels = list(ir_measures.read_trec_qrels(str(out / "qrels.trec")))
    assert sorted((q.query_id, chunks[q.doc_id], q.relevance) for q in qrels) == [
        ("q1", "paxos.md", 1), ("q1", "raft.md", 3), ("q2", "gossip.md", 2)]
    with (out / "per_query.csv").open(encoding="utf-8") as handle:
        rows = {r["query_id"]: r for r in csv.DictReader(handle)}
    measured = ir_measures.iter_calc([nDCG @ 10, nDCG @ 1], qrels, run)
    reference = {(m.query_id, str(m.measure)): m.value for m in measured}
    for query_id in ("q1", "q2"):
        assert float(rows[query_id]["ndcg@10"]) == pytest.approx(reference[query_id, "nDCG@10"], abs=5e-7)
        assert float(rows[query_id]["ndcg@1"]) == pytest.approx(reference[query_id, "nDCG@1"], abs=5e-7)


def test_an_excluded_document_missing_from_the_corpus_is_an_error(tmp_path: Path, capsys):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("Raft elects a leader by majority vote.\n", encoding="utf-8")
    judgments = tmp_path / "judgments.jsonl"
    judgments.write_text(json.dumps({"query_id": "q1", "query": "leader election", "category": "factoid",
                                     "exclude_documents": ["b.md"],
                                     "gold": [{"document": "a.md", "quote": "elects a leader"}]}) + "\n")
    assert main(["run", "--corpus", str(corpus), "--judgments", str(judgments), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "judgments.jsonl:1: key 'exclude_documents'" in err and "'b.md'" in err and "fix:" in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()
