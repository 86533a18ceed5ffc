"""External runs: scored by hand on the tiny corpus, by offsets and by text; every bad line named."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

from groundkit.chunking import ChunkParams, chunk_documents
from groundkit.documents import load_corpus
from groundkit.errors import RunFileError
from groundkit.evals.corpus import load_judgments
from groundkit.evals.external import read_external_run
from groundkit.evals.scoring import score_passages, score_rankings
from groundkit.evals.spans import resolve_judgments
from tests.dvc_helpers import env

QUERIES = ["q1", "q2", "q3", "q4"]
LENIENT = ("--set", "audit.max_trivial_share=1.0", "--set", "score.ks=[1, 3]")


def _offsets(corpus: Path, document: str, passage: str) -> dict:
    text = (corpus / document).read_text(encoding="utf-8")
    start = text.index(passage)
    return {"document": document, "start": start, "end": start + len(passage)}


def _passages(corpus: Path) -> list[tuple[str, int, str, str]]:
    """(query_id, rank, document, passage): the run worked out by hand below."""
    del corpus
    return [
        # q1: a miss, then the answer at rank 2.
        ("q1", 1, "isolation.md", "Snapshot isolation lets a transaction read a consistent view."),
        ("q1", 2, "ops/backup.md", "Incremental backups run hourly and keep 30 days of history."),
        # q2: one of its two gold spans at rank 1, then a miss; the other span never retrieved.
        ("q2", 1, "ops/replicas.md", "A lagging replica receives a snapshot instead of log entries."),
        ("q2", 2, "ops/backup.md", "A full backup runs weekly."),
        # q3: two overlapping passages, both overlapping the one gold span.
        ("q3", 1, "isolation.md", "Write skew is possible under it."),
        ("q3", 2, "isolation.md", "consistent view.\nWrite skew"),
        # q4 (no_answer) is absent: scored as an abstention.
    ]


def _write_run(path: Path, corpus: Path, *, by: str) -> Path:
    lines = []
    for query_id, rank, document, passage in _passages(corpus):
        where = _offsets(corpus, document, passage) if by == "offsets" else {"document": document, "text": passage}
        lines.append(json.dumps({"query_id": query_id, "rank": rank, **where}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _load(tiny_corpus):
    corpus, judgments = tiny_corpus
    documents = {d.path: d for d in load_corpus(corpus)}
    resolved = resolve_judgments(load_judgments(judgments), documents)
    return corpus, documents, resolved


@pytest.mark.parametrize("by", ["offsets", "text"])
def test_external_run_scored_by_hand(tiny_corpus, tmp_path, by):
    corpus, documents, resolved = _load(tiny_corpus)
    run = read_external_run(_write_run(tmp_path / "run.jsonl", corpus, by=by), documents, QUERIES)
    result, qrels = score_passages(resolved, run, [1, 3])
    # The cost-side metrics (chars@k) are checked against groundkit's own chunks in the next test.
    per = {q.query_id: q.model_copy(update={"metrics": {k: v for k, v in q.metrics.items()
                                                        if not k.startswith("chars@")}})
           for q in result.queries}
    g3 = 1 / math.log2(3)
    assert per["q1"].metrics == pytest.approx({"recall@1": 0, "recall@3": 1, "mrr": 0.5, "ndcg@1": 0, "ndcg@3": g3})
    # Two gold spans, one retrieved: the ideal has two positions.
    assert per["q2"].gold_chunks == 2
    assert per["q2"].metrics == pytest.approx(
        {"recall@1": 1, "recall@3": 1, "mrr": 1, "ndcg@1": 1, "ndcg@3": 1 / (1 + g3)})
    # One span, two relevant passages: the ideal grows to two, so nDCG stays 1.
    assert per["q3"].gold_chunks == 2
    assert per["q3"].metrics == pytest.approx({"recall@1": 1, "recall@3": 1, "mrr": 1, "ndcg@1": 1, "ndcg@3": 1})
    assert (per["q4"].retrieved, len(qrels["q3"])) == (0, 2)
    summary = result.summary()
    assert summary["answerable"]["mrr"] == pytest.approx((0.5 + 1 + 1) / 3)
    assert summary["answerable"]["ndcg@3"] == pytest.approx((g3 + 1 / (1 + g3) + 1) / 3)
    assert summary["no_answer"] == {"queries": 1, "abstained": 1, "abstention_rate": 1.0}


def test_chunks_given_as_an_external_run_score_like_groundkit(tiny_corpus):
    """Hit rate and MRR of a run do not depend on whether groundkit or another system made the passages."""
    _corpus, documents, resolved = _load(tiny_corpus)
    chunks = chunk_documents(documents.values(), ChunkParams(size=40))
    # A fixed, arbitrary ranking: every chunk, in reverse corpus order, for every query but q4.
    ranking = list(reversed(chunks))
    budgets = [30, 60, 120]
    native, _ = score_rankings(resolved, chunks, {q: [c.chunk_id for c in ranking] for q in QUERIES[:3]}, [1, 3],
                               budgets)
    external, _ = score_passages(resolved, {q: ranking for q in QUERIES[:3]}, [1, 3], budgets)
    assert max(q.first_gold_rank or 0 for q in native.queries) > 1  # not trivially all at rank 1
    for a, b in zip(native.queries[:3], external.queries[:3], strict=True):
        same = ("recall@1", "recall@3", "mrr", "chars@1", "chars@3", "recall@30chars", "recall@60chars",
                "recall@120chars")
        assert {k: a.metrics[k] for k in same} == {k: b.metrics[k] for k in same}
        assert a.first_gold_rank == b.first_gold_rank


GOOD = '{"query_id": "q1", "rank": 1, "document": "ops/backup.md", "start": 0, "end": 7}'
BAD_LINES = {
    "bad json": ('{"query_id": "q1", "rank": 2,', "invalid JSON"),
    "not an object": ("[1, 2]", "expected a JSON object"),
    "unknown field": ('{"query_id": "q1", "rank": 2, "document": "ops/backup.md", "text": "weekly", "scor": 1}',
                      "unknown field 'scor'"),
    "missing rank": ('{"query_id": "q1", "document": "ops/backup.md", "text": "weekly"}', "rank is required"),
    "unknown query": ('{"query_id": "q9", "rank": 1, "document": "ops/backup.md", "text": "weekly"}',
                      "query_id 'q9' is not a query"),
    "rank zero": ('{"query_id": "q2", "rank": 0, "document": "ops/backup.md", "text": "weekly"}',
                  "rank must be an integer from 1"),
    "rank as string": ('{"query_id": "q2", "rank": "1", "document": "ops/backup.md", "text": "weekly"}',
                       "rank must be an integer"),
    "duplicate rank": ('{"query_id": "q1", "rank": 1, "document": "ops/backup.md", "text": "weekly"}',
                       "rank 1 twice (first on line 1)"),
    "rank gap": ('{"query_id": "q1", "rank": 3, "document": "ops/backup.md", "text": "weekly"}',
                 "has rank 3 but no rank 2"),
    "unknown document": ('{"query_id": "q1", "rank": 2, "document": "ops/restore.md", "text": "weekly"}',
                         "'ops/restore.md' is not a file in the corpus"),
    "escaping path": ('{"query_id": "q1", "rank": 2, "document": "../judgments.jsonl", "text": "q1"}',
                      "not a corpus-relative path"),
    "both": ('{"query_id": "q1", "rank": 2, "document": "ops/backup.md", "start": 0, "end": 3, "text": "Bac"}',
             "both offsets and text"),
    "neither": ('{"query_id": "q1", "rank": 2, "document": "ops/backup.md"}', "neither start/end offsets nor text"),
    "only start": ('{"query_id": "q1", "rank": 2, "document": "ops/backup.md", "start": 3}', "only one of start"),
    "start not below end": ('{"query_id": "q1", "rank": 2, "document": "ops/backup.md", "start": 5, "end": 5}',
                            "offsets [5, 5) are not a non-empty range"),
    "end past the document": ('{"query_id": "q1", "rank": 2, "document": "ops/backup.md", "start": 0, "end": 999}',
                              "<= 127)"),
    "float offsets": ('{"query_id": "q1", "rank": 2, "document": "ops/backup.md", "start": 0.0, "end": 4}',
                      "must be integers"),
    "text not found": ('{"query_id": "q1", "rank": 2, "document": "ops/backup.md", "text": "runs daily"}',
                       "text not found in 'ops/backup.md'"),
    "text with collapsed line break": (
        '{"query_id": "q1", "rank": 2, "document": "ops/backup.md", "text": "weekly. Incremental"}',
        "whitespace is collapsed"),
    "text with curly quote": ('{"query_id": "q1", "rank": 2, "document": "isolation.md", '
                              '"text": "Write skew is possible under it\\u2019"}', "not found"),
    "text twice": ('{"query_id": "q1", "rank": 2, "document": "ops/backup.md", "text": "backup"}',
                   "text occurs 2 times"),
    "same passage twice": ('{"query_id": "q1", "rank": 2, "document": "ops/backup.md", "text": "Backups"}',
                           "ranks the same passage twice (also line 1)"),
}


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_bad_line_names_file_and_line(tiny_corpus, tmp_path, case):
    _corpus, documents, _ = _load(tiny_corpus)
    line, fragment = BAD_LINES[case]
    path = tmp_path / "run.jsonl"
    path.write_text(f"{GOOD}\n{line}\n", encoding="utf-8")
    with pytest.raises(RunFileError) as info:
        read_external_run(path, documents, QUERIES)
    assert info.value.line == 2, str(info.value)
    assert fragment in str(info.value)
    assert str(info.value).startswith(f"{path}:2")
    assert info.value.fix


def test_curly_quote_hint(tiny_corpus, tmp_path):
    corpus, documents, _ = _load(tiny_corpus)
    (corpus / "quoted.md").write_text("The operator said \"drain it\" before the upgrade.\n", encoding="utf-8")
    documents = {d.path: d for d in load_corpus(corpus)}
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps({"query_id": "q1", "rank": 1, "document": "quoted.md",
                                "text": "said \u201cdrain it\u201d before"}) + "\n", encoding="utf-8")
    with pytest.raises(RunFileError, match="curly quotes"):
        read_external_run(path, documents, QUERIES)


def test_score_run_command(tiny_corpus, tmp_path):
    corpus, judgments = tiny_corpus
    run = _write_run(tmp_path / "run.jsonl", corpus, by="text")
    out = tmp_path / "out"
    args = ["groundkit", "score-run", str(run), "--corpus", str(corpus), "--judgments", str(judgments),
            "--out", str(out), *LENIENT]
    ok = subprocess.run(args, capture_output=True, text=True, env=env(), check=False)
    assert ok.returncode == 0, ok.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["answerable"]["mrr"] == pytest.approx(0.833333)
    assert metrics["by_category"]["no_answer"] == {"queries": 1, "abstained": 1, "abstention_rate": 1.0}
    params = json.loads((out / "run.json").read_text())["params"]
    assert params["retrieve"] == {"depth": 100, "retriever": "external"}
    assert str(tmp_path) not in (out / "run.json").read_text()

    run.write_text(run.read_text() + '{"query_id": "q2", "rank": 3, "document": "ops/backup.md", "text": "backup"}\n')
    bad = subprocess.run([*args[:-len(LENIENT) - 2], "--out", str(tmp_path / "bad"), *LENIENT],
                         capture_output=True, text=True, env=env(), check=False)
    assert bad.returncode == 1
    assert bad.stderr.startswith(f"error: {run}:7") and "occurs 2 times" in bad.stderr
    assert "Traceback" not in bad.stderr and not (tmp_path / "bad").exists()
