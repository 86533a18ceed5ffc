"""External runs: scored by hand on the tiny corpus, by offsets and by text; every bad line named."""

from __future__ import annotations

import csv
import json
import math
import re
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from groundkit.artifacts.seals import file_sha256
from groundkit.cli import main
from groundkit.config import ChunkParams, load_params
from groundkit.corpus.chunking import chunk_documents
from groundkit.corpus.documents import load_corpus
from groundkit.corpus.judgments import load_judgments
from groundkit.corpus.passage import content_id
from groundkit.corpus.spans import resolve_judgments
from groundkit.errors import RunFileError
from groundkit.retrieval.external import read_external_run
from groundkit.scoring.schema import RunMetadata
from groundkit.scoring.score import score_run
from tests.bad_inputs import RUN_FILE_CASES
from tests.conftest import REPO, rank_metrics, write_judgments, write_tiny_corpus
from tests.dvc_helpers import clone_working_tree, env, repro, run

QUERIES = ["q1", "q2", "q3", "q4"]
LENIENT = ("--set", "audit.max_trivial_share=1.0")


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
    rankings = {q: [p.passage_id for p in ranked] for q, ranked in run.items()}
    result, qrels = score_run(resolved, rankings, {p.passage_id: p for r in run.values() for p in r},
                              rank_metrics([1, 3]),
                              universe=None)
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
    ranked = {q: [c.chunk_id for c in ranking] for q in QUERIES[:3]}
    by_id = {c.chunk_id: c for c in chunks}
    native, _ = score_run(resolved, ranked, by_id, rank_metrics([1, 3], budgets), universe=chunks)
    external, _ = score_run(resolved, ranked, by_id, rank_metrics([1, 3], budgets), universe=None)
    assert max(q.first_gold_rank or 0 for q in native.queries) > 1  # not trivially all at rank 1
    for a, b in zip(native.queries[:3], external.queries[:3], strict=True):
        same = ("recall@1", "recall@3", "mrr", "chars@1", "chars@3", "recall@30chars", "recall@60chars",
                "recall@120chars")
        assert {k: a.metrics[k] for k in same} == {k: b.metrics[k] for k in same}
        assert a.first_gold_rank == b.first_gold_rank


@pytest.mark.parametrize("name", sorted(RUN_FILE_CASES))
def test_bad_run_file_names_file_and_line(tiny_corpus, tmp_path, name):
    _corpus, documents, _ = _load(tiny_corpus)
    case = RUN_FILE_CASES[name]
    path = tmp_path / "run.jsonl"
    path.write_bytes(case.data)
    with pytest.raises(RunFileError) as info:
        read_external_run(path, documents, QUERIES)
    assert info.value.line == case.line, str(info.value)
    assert case.what in str(info.value)
    assert str(info.value).startswith(f"{path}:{case.line}:" if case.line else f"{path}: ")
    assert info.value.fix


@pytest.mark.parametrize("name", sorted(RUN_FILE_CASES))
def test_bad_run_file_through_score_run(tiny_corpus, tmp_path, capsys, name):
    """One message (file, line, what, fix), exit 1, no traceback, and nothing left where --out would be."""
    corpus, judgments = tiny_corpus
    case = RUN_FILE_CASES[name]
    path = tmp_path / "run.jsonl"
    path.write_bytes(case.data)
    out = tmp_path / "out"
    code = main(["score-run", str(path), "--corpus", str(corpus), "--judgments", str(judgments), "--out", str(out),
                 *LENIENT])
    stderr = capsys.readouterr().err
    assert code == 1, stderr
    assert stderr.startswith(f"error: {path}:{case.line}:" if case.line else f"error: {path}: "), stderr
    assert stderr.count("error: ") == 1 and case.what in stderr and "\n  fix: " in stderr, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus", "judgments.jsonl", "run.jsonl"]


def test_huge_run_file_fails_at_its_first_line_under_a_memory_cap(tiny_corpus, tmp_path):
    """A 1 GiB run file whose first line is bad fails at line 1, in a process that cannot hold the file."""
    corpus, judgments = tiny_corpus
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as handle:
        handle.write(b"not json\n")
        handle.truncate(1 << 30)  # sparse: the rest reads as NUL bytes, without a newline
    cap = 512 << 20  # score-run needs under 300 MiB of address space; reading the file whole needs over 1 GiB

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    result = subprocess.run(
        [sys.executable, "-m", "groundkit.cli", "score-run", str(path), "--corpus", str(corpus), "--judgments",
         str(judgments), "--out", str(tmp_path / "out"), *LENIENT],
        capture_output=True, text=True, env=env(OPENBLAS_NUM_THREADS="1"), preexec_fn=limit_memory, check=False)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith(f"error: {path}:1: invalid JSON") and "fix: " in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


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
    metrics = json.loads((out / "detail.json").read_text())
    assert metrics["answerable"]["mrr"] == pytest.approx(0.833333)
    # The run has ranks, not scores: separability is not available (not worked out from invented scores).
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


def test_an_external_run_without_scores_has_no_top_score_and_no_separability(tiny_corpus, tmp_path, capsys):
    # Issue 35 item 2: the TREC file's -rank placeholder reached top_score (-1.0 for every query), and
    # no_answer.separability read 0.5 ("the score tells nothing") off those invented values.
    corpus, judgments = tiny_corpus
    run = _write_run(tmp_path / "run.jsonl", corpus, by="text")
    with run.open("a", encoding="utf-8") as handle:  # the no_answer query retrieves something too
        handle.write(json.dumps({"query_id": "q4", "rank": 1, "document": "ops/backup.md",
                                 "text": "A full backup runs weekly."}) + "\n")
    out = tmp_path / "out"
    assert main(["score-run", str(run), "--corpus", str(corpus), "--judgments", str(judgments), "--out", str(out),
                 *LENIENT]) == 0, capsys.readouterr().err
    with (out / "per_query.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["query_id"], r["top_score"]) for r in rows] == [(q, "") for q in QUERIES]
    assert [r["retrieved"] for r in rows] == ["2", "2", "2", "1"]
    assert json.loads((out / "detail.json").read_text())["no_answer"] == {"queries": 1, "abstained": 0,
                                                                           "abstention_rate": 0.0}


# --- paths are taken literally -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["results #2.jsonl", "yes", "null", "123"])
def test_score_run_takes_its_path_literally(tiny_corpus, tmp_path, monkeypatch, capsys, name):
    """YAML would read these as 'results', true, None and 123; each is the name of the run file."""
    corpus, judgments = tiny_corpus
    run_file = _write_run(tmp_path / name, corpus, by="offsets")
    monkeypatch.chdir(tmp_path)
    code = main(["score-run", name, "--corpus", str(corpus), "--judgments", str(judgments), "--out", "out", *LENIENT])
    assert code == 0, capsys.readouterr().err
    assert json.loads((tmp_path / "out" / "detail.json").read_text())["answerable"]["mrr"] == pytest.approx(5 / 6)
    recorded = json.loads((tmp_path / "out" / "run.json").read_text())["external_run"]
    assert recorded == {"name": name, "sha256": file_sha256(run_file)}


def test_set_takes_path_keys_verbatim():
    params = load_params(None, ["corpus.root=yes", "corpus.judgments=null", "retrieve.retriever=external",
                                "retrieve.run=runs/results #2.jsonl", "chunk.size=400"])
    assert params.corpus.root == "yes" and params.corpus.judgments == "null"
    assert params.retrieve.run == "runs/results #2.jsonl"
    assert params.chunk.size == 400  # other keys are still YAML values
    assert load_params(None, ["retrieve.retriever=external", "retrieve.run=123"]).retrieve.run == "123"


# --- what run.json records ----------------------------------------------------------------------------------------


def test_run_json_names_the_scored_run_file_only_for_external_runs(tiny_corpus, tmp_path, capsys):
    corpus, judgments = tiny_corpus
    run_file = _write_run(tmp_path / "mine.jsonl", corpus, by="text")
    inputs = ["--corpus", str(corpus), "--judgments", str(judgments), *LENIENT]
    assert main(["score-run", str(run_file), *inputs, "--out", str(tmp_path / "external")]) == 0
    assert main(["run", *inputs, "--out", str(tmp_path / "bm25")]) == 0, capsys.readouterr().err
    external = (tmp_path / "external" / "run.json").read_text()
    assert json.loads(external)["external_run"] == {"name": "mine.jsonl", "sha256": file_sha256(run_file)}
    assert str(tmp_path) not in external
    assert "external_run" not in json.loads((tmp_path / "bm25" / "run.json").read_text())


def test_committed_run_json_keeps_its_bytes():
    """RunMetadata without an external run writes exactly the committed BM25 run.json."""
    from groundkit.artifacts.lines import dumps_json

    committed = (REPO / "metrics" / "run.json").read_text(encoding="utf-8")
    metadata = RunMetadata.model_validate_json(committed)
    assert metadata.external_run is None
    assert dumps_json(metadata.document()) == committed


# --- exported TREC files agree with ir_measures -------------------------------------------------------------------


# q1's gold is never retrieved; q2 finds one of its two spans at rank 2; q3 finds two passages of its one span;
# q4 (no_answer) retrieves one passage; q5 is left out of the run.
COVERAGE_RUN = [
    ("q1", "isolation.md", "Snapshot isolation lets a transaction read a consistent view."),
    ("q1", "ops/backup.md", "A full backup runs weekly."),
    ("q2", "ops/backup.md", "Backups take a snapshot of every range."),
    ("q2", "ops/replicas.md", "A lagging replica receives a snapshot"),
    ("q2", "isolation.md", "Write skew is possible under it."),
    ("q3", "isolation.md", "Write skew is possible under it."),
    ("q3", "ops/backup.md", "Incremental backups run hourly"),
    ("q3", "isolation.md", "consistent view.\nWrite skew"),
    ("q4", "ops/replicas.md", "Snapshot transfers are limited to 32 MiB per second by default."),
]


def test_exported_trec_files_of_an_external_run_agree_with_ir_measures(tiny_corpus, tmp_path):
    import ir_measures
    from ir_measures import RR, Success, nDCG

    corpus, judgments = tiny_corpus
    records = [json.loads(line) for line in judgments.read_text().splitlines()]
    q5 = {"query_id": "q5", "query": "how often does a full backup run", "category": "factoid",
          "gold": [{"document": "ops/backup.md", "quote": "A full backup runs weekly"}]}
    write_judgments(judgments, [*records, q5])
    ranks: dict[str, int] = {}
    lines = []
    for query_id, document, passage in COVERAGE_RUN:
        ranks[query_id] = ranks.get(query_id, 0) + 1
        lines.append(json.dumps({"query_id": query_id, "rank": ranks[query_id], **_offsets(corpus, document, passage)}))
    run_file = tmp_path / "run.jsonl"
    run_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["score-run", str(run_file), "--corpus", str(corpus), "--judgments", str(judgments), "--out", str(out),
                 "--set", "audit.max_trivial_share=1.0"]) == 0

    qrels = list(ir_measures.read_trec_qrels(str(out / "qrels.trec")))
    run_docs = list(ir_measures.read_trec_run(str(out / "run.trec")))
    # Every answerable query is in the qrels; the spans no passage reached stand in as placeholders.
    by_query: dict[str, set[str]] = {}
    for qrel in qrels:
        by_query.setdefault(qrel.query_id, set()).add(qrel.doc_id)
    span = {quote: "gold-" + content_id(doc, (corpus / doc).read_text().index(quote),
                                        (corpus / doc).read_text().index(quote) + len(quote))
            for doc, quote in [("ops/backup.md", "Incremental backups run hourly"),
                               ("ops/replicas.md", "limited to 32 MiB per second"),
                               ("ops/backup.md", "A full backup runs weekly")]}
    assert sorted(by_query) == ["q1", "q2", "q3", "q5"]
    assert by_query["q1"] == {span["Incremental backups run hourly"]}
    assert span["limited to 32 MiB per second"] in by_query["q2"] and len(by_query["q2"]) == 2
    assert len(by_query["q3"]) == 2 and not any(d.startswith("gold-") for d in by_query["q3"])
    assert by_query["q5"] == {span["A full backup runs weekly"]}
    assert not {d.doc_id for d in run_docs} & {d for ids in by_query.values() for d in ids if d.startswith("gold-")}
    scores: dict[str, list[float]] = {}
    for doc in run_docs:
        scores.setdefault(doc.query_id, []).append(doc.score)
    # The run gave ranks, not scores: the score column is -rank, tie-free, so trec_eval keeps groundkit's order.
    assert scores == {q: [-float(rank) for rank in range(1, len(s) + 1)] for q, s in scores.items()}
    assert {line.rsplit(" ", 1)[1] for line in (out / "run.trec").read_text().splitlines()} == {"groundkit-external"}

    names = {"Success@1": "recall@1", "Success@3": "recall@3", "Success@10": "recall@10", "RR": "mrr",
             "nDCG@1": "ndcg@1", "nDCG@3": "ndcg@3", "nDCG@10": "ndcg@10"}
    measures = [Success @ 1, Success @ 3, Success @ 10, RR, nDCG @ 1, nDCG @ 3, nDCG @ 10]
    reference = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels, run_docs)}
    with (out / "per_query.csv").open(encoding="utf-8") as handle:
        rows = {r["query_id"]: r for r in csv.DictReader(handle) if r["category"] != "no_answer"}
    assert sorted(rows) == sorted(by_query)
    summary = json.loads((out / "detail.json").read_text())["answerable"]
    for measure, name in names.items():
        # trec_eval leaves out a query the run does not mention (q5); groundkit and the qrels count it as 0.
        values = {q: reference.get((q, measure), 0.0) for q in by_query}
        for query_id, value in values.items():
            assert abs(float(rows[query_id][name]) - round(value, 6)) <= 1e-9, (query_id, name)
        assert abs(summary[name] - round(sum(values.values()) / len(values), 6)) <= 1e-9, name
    g3 = 1 / math.log2(3)
    assert float(rows["q2"]["ndcg@3"]) == pytest.approx(g3 / (1 + g3), abs=1e-6)  # worked by hand


# --- through real DVC ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def external_workspace(tmp_path_factory) -> Path:
    """A clone with the tiny corpus whose params.yaml makes the retrieve stage read runs/run.jsonl."""
    repo = clone_working_tree(tmp_path_factory.mktemp("external") / "repo")
    shutil.rmtree(repo / "evals" / "corpus")
    write_tiny_corpus(repo / "evals" / "corpus", repo / "evals" / "judgments.jsonl")
    params = yaml.safe_load((repo / "params.yaml").read_text(encoding="utf-8"))
    params["audit"]["max_trivial_share"] = 1.0
    params["retrieve"].update(retriever="external", run="runs/run.jsonl")
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    (repo / "runs").mkdir()
    _write_run(repo / "runs" / "run.jsonl", repo / "evals" / "corpus", by="offsets")
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-q", "-m", "tiny corpus, external run"], repo)
    return repo


@pytest.mark.integration
def test_dvc_records_the_scored_run_file(external_workspace):
    repo = external_workspace
    run_file = _write_run(repo / "runs" / "run.jsonl", repo / "evals" / "corpus", by="offsets")
    ran, _ = repro(repo)
    assert "score" in ran
    recorded = (repo / "metrics" / "run.json").read_text()
    assert json.loads(recorded)["external_run"] == {"name": "run.jsonl", "sha256": file_sha256(run_file)}
    assert str(repo) not in recorded


DVC_CASES = ["empty file", "invalid UTF-8", "nested 100,000 deep", "query_id a list", "unknown query"]


@pytest.mark.integration
@pytest.mark.parametrize("name", DVC_CASES)
def test_bad_run_file_stops_dvc_at_retrieve(external_workspace, name):
    repo = external_workspace
    case = RUN_FILE_CASES[name]
    (repo / "runs" / "run.jsonl").write_bytes(case.data)
    before = {p: p.read_bytes() for p in (repo / "metrics").rglob("*") if p.is_file()}
    ran, result = repro(repo, check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "retrieve" in ran and "score" not in ran, ran
    where = f"runs/run.jsonl:{case.line}:" if case.line else "runs/run.jsonl: "
    assert f"error: {where}" in output and case.what in output and "fix: " in output, output
    assert "Traceback" not in output and "internal error" not in output
    assert {p: p.read_bytes() for p in (repo / "metrics").rglob("*") if p.is_file()} == before


# --- the bulk reader of offsets-only runs ------------------------------------------------------------


SEPARATORS = ((",", ":"), (", ", ": "), (" , ", " :\t"))


def _offsets_run(path: Path, documents: dict, seed: int, *, extra: str = "", spaced: bool = True) -> Path:
    """A valid offsets-only run over the tiny corpus, lines shuffled, blank lines between, passages repeated."""
    import random

    rng = random.Random(seed)
    lines = []
    for query in QUERIES[:3]:
        spans = set()
        while len(spans) < 6:
            document = rng.choice(sorted(documents))
            start = rng.randrange(len(documents[document].text) - 1)
            spans.add((document, start, rng.randint(start + 1, len(documents[document].text))))
        for rank, (document, start, end) in enumerate(sorted(spans), start=1):
            separators = SEPARATORS[rank % len(SEPARATORS)] if spaced else SEPARATORS[0]
            lines.append(json.dumps({"end": end, "query_id": query, "start": start, "rank": rank,
                                     "document": document}, separators=separators))
    rng.shuffle(lines)
    path.write_text("\n \n".join(lines) + "\n" + extra, encoding="utf-8")
    return path


@pytest.mark.parametrize("seed", range(4))
def test_the_bulk_reader_reads_what_the_line_reader_reads(tiny_corpus, tmp_path, seed):
    from groundkit.retrieval.external import _read_line_by_line, _read_offsets

    _corpus, documents, _ = _load(tiny_corpus)
    path = _offsets_run(tmp_path / "run.jsonl", documents, seed)
    bulk = _read_offsets(path, documents, QUERIES)
    assert bulk is not None  # the file is read in bulk, not left to the line reader
    assert bulk == _read_line_by_line(path, documents, QUERIES)
    assert [[p.passage_id for p in ranking] for ranking in bulk.values()] == \
        [[content_id(p.document, p.start, p.end, p.text) for p in ranking] for ranking in bulk.values()]


BULK_REFUSES = {
    "a key twice": ('{"query_id": "q1", "query_id": "q1", "rank": 9, "document": "ops/backup.md", "start": 0, '
                    '"end": 4}', "appears twice"),
    "a key twice, one spaced": ('{"query_id" : "q1", "query_id":"q1", "rank":7, "document":"ops/backup.md", '
                                '"start":1, "end":2}', "appears twice"),
    "rank true": ('{"query_id": "q1", "rank": true, "document": "ops/backup.md", "start": 0, "end": 4}',
                  "rank must be an integer"),
    "rank past 64 bits": ('{"query_id": "q1", "rank": 18446744073709551615, "document": "ops/backup.md", '
                          '"start": 0, "end": 4}', "has rank 18446744073709551615 but no rank"),
    "start a float": ('{"query_id": "q1", "rank": 9, "document": "ops/backup.md", "start": 0.0, "end": 4}',
                      "must be integers"),
    "rank gap": ('{"query_id": "q1", "rank": 9, "document": "ops/backup.md", "start": 0, "end": 4}',
                 "has rank 9 but no rank 7"),
    "rank repeated": ('{"query_id": "q1", "rank": 1, "document": "ops/backup.md", "start": 0, "end": 4}',
                      "twice (first on line"),
    "same passage": (None, "ranks the same passage twice"),
    "end past the document": ('{"query_id": "q1", "rank": 7, "document": "ops/backup.md", "start": 0, '
                              '"end": 100000}', "not a non-empty range"),
    "unknown document": ('{"query_id": "q1", "rank": 7, "document": "nope.md", "start": 0, "end": 4}',
                         "is not a file in the corpus"),
    "escaping path": ('{"query_id": "q1", "rank": 7, "document": "../judgments.jsonl", "start": 0, "end": 4}',
                      "not a corpus-relative path"),
    "unknown query": ('{"query_id": "q9", "rank": 1, "document": "ops/backup.md", "start": 0, "end": 4}',
                      "is not a query of the judgments"),
    "a field more": ('{"query_id": "q1", "rank": 7, "document": "ops/backup.md", "start": 0, "end": 4, "x": 1}',
                     "unknown field 'x'"),
    "two records on one line": ('{"query_id": "q1", "rank": 7, "document": "ops/backup.md", "start": 0, "end": 4}, '
                                '{"query_id": "q1", "rank": 8, "document": "ops/backup.md", "start": 0, "end": 5}',
                                "invalid JSON"),
}


@pytest.mark.parametrize("name", sorted(BULK_REFUSES))
def test_the_bulk_reader_leaves_a_bad_offsets_run_to_the_line_reader(tiny_corpus, tmp_path, name):
    from groundkit.retrieval.external import _read_offsets

    _corpus, documents, _ = _load(tiny_corpus)
    line, message = BULK_REFUSES[name]
    good = _offsets_run(tmp_path / "good.jsonl", documents, 0)
    if line is None:  # the last line's passage again, at the next rank of its query
        line = json.dumps({**json.loads(good.read_text(encoding="utf-8").rstrip("\n").rsplit("\n", 1)[-1]),
                           "rank": 7})
    # Keys written with no space before the colon but in the bad line: counting '":' alone would miss a key twice.
    path = _offsets_run(tmp_path / "run.jsonl", documents, 0, extra=line + "\n", spaced=False)
    assert _read_offsets(path, documents, QUERIES) is None
    number = path.read_text(encoding="utf-8").count("\n")
    with pytest.raises(RunFileError, match=re.escape(message)) as caught:
        read_external_run(path, documents, QUERIES)
    assert caught.value.line == number


@pytest.mark.parametrize("name", sorted(RUN_FILE_CASES))
def test_no_bad_run_file_is_read_in_bulk(tiny_corpus, tmp_path, name):
    from groundkit.retrieval.external import _read_offsets

    _corpus, documents, _ = _load(tiny_corpus)
    path = tmp_path / "run.jsonl"
    path.write_bytes(RUN_FILE_CASES[name].data)
    assert _read_offsets(path, documents, QUERIES) is None


def test_a_key_like_string_sends_a_good_run_to_the_line_reader(tiny_corpus, tmp_path):
    """A value holding '":' looks like one key more: the bulk reader declines, and the line reader reads it."""
    from groundkit.retrieval.external import _read_offsets

    corpus, documents, _ = _load(tiny_corpus)
    (corpus / 'odd":name.md').write_text("An odd file name.\n", encoding="utf-8")
    documents = {d.path: d for d in load_corpus(corpus)}
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps({"query_id": "q1", "rank": 1, "document": 'odd":name.md', "start": 0, "end": 6}) + "\n",
                    encoding="utf-8")
    assert _read_offsets(path, documents, QUERIES) is None
    assert read_external_run(path, documents, QUERIES)["q1"][0].text == "An odd"
