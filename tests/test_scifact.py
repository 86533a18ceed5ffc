"""SciFact (BEIR) through the real pipeline, guarded like an Anserini regression.

The dataset is imported with ``groundkit import-beir`` and evaluated with
``groundkit run`` (one chunk per document, BM25, depth 100). The trec-style
measures of the run (ir_measures nDCG@10, R@100, RR@10) must equal, to four
decimals, two independent implementations scored by ir_measures on the same
tokens: Lucene BM25 written here from the formula, and bm25s used directly.
They must also equal the figures recorded below, so a change that moves them
fails until the record is updated on purpose (and the guide's table in docs/importing.md with it).

The data is read from ``<repo>/../shared/data/scifact`` (where CI keeps it
beside the clone) or from ``$GROUNDKIT_SCIFACT``. Missing data is a failure,
not a skip: a regression guard that silently does not run guards nothing.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
from collections import Counter
from pathlib import Path

import ir_measures
import numpy as np
import pytest
from ir_measures import RR, R, nDCG

from tests.dvc_helpers import env

REPO = Path(__file__).resolve().parent.parent
MEASURES = [nDCG @ 10, R @ 100, RR @ 10]
DEPTH = 100

# name: (params overrides, recorded nDCG@10, R@100, RR@10). "anserini-flat" is the
# setting of Anserini's BM25 flat regression (published 0.6789 / 0.9253): Lucene's
# English stopwords, Porter stemmer, k1=0.9, b=0.4.
SETTINGS = {
    "default": ({}, {"nDCG@10": 0.6634, "R@100": 0.8826, "RR@10": 0.6309}),
    "anserini-flat": (
        {"tokenize.stopwords": "en", "tokenize.stemmer": "porter", "bm25.k1": "0.9", "bm25.b": "0.4"},
        {"nDCG@10": 0.6769, "R@100": 0.9287, "RR@10": 0.6423},
    ),
}


def scifact_dir() -> Path:
    """``$GROUNDKIT_SCIFACT`` if set, else ``<repo>/../shared/data/scifact``; fails if absent."""
    override = os.environ.get("GROUNDKIT_SCIFACT")
    path = Path(override) if override else REPO.parent / "shared" / "data" / "scifact"
    if not (path / "corpus.jsonl").is_file():
        pytest.fail(
            f"SciFact not found: looked for corpus.jsonl in {path} "
            f"({'from $GROUNDKIT_SCIFACT' if override else '<repo>/../shared/data/scifact'}); "
            "put BEIR SciFact there or set GROUNDKIT_SCIFACT to its folder",
            pytrace=False,
        )
    return path


def groundkit(*args: str) -> None:
    result = subprocess.run(["groundkit", *args], capture_output=True, text=True, env=env(), check=False)
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def dataset() -> Path:
    return scifact_dir()


@pytest.fixture(scope="module")
def imported(dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("scifact") / "imported"
    groundkit("import-beir", str(dataset), "--out", str(out))
    return out


@pytest.fixture(scope="module")
def beir_texts(dataset: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Documents (title + " " + text, as Anserini's flat index joins them) and queries, read straight from BEIR."""
    docs, queries = {}, {}
    with (dataset / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            docs[record["_id"]] = record["title"] + " " + record["text"]
    with (dataset / "queries.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            queries[record["_id"]] = record["text"]
    return docs, queries


def beir_qrels(dataset: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    lines = (dataset / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()
    for line in lines[1:]:
        query_id, doc_id, score = line.split("\t")
        if int(score) > 0:
            qrels.setdefault(query_id, {})[doc_id] = int(score)
    return qrels


def reference_tokenizer(overrides: dict[str, str]):
    """The tokenizer the overrides ask for, assembled here from its parts rather than from groundkit."""
    stop: frozenset[str] = frozenset()
    if overrides.get("tokenize.stopwords") == "en":
        from bm25s.stopwords import STOPWORDS_EN

        stop = frozenset(STOPWORDS_EN)
    stem = None
    if overrides.get("tokenize.stemmer", "none") != "none":
        import Stemmer

        stem = Stemmer.Stemmer(overrides["tokenize.stemmer"]).stemWords

    def tokenize(text: str) -> list[str]:
        tokens = [t for t in re.findall(r"\w+", text.lower()) if t not in stop]
        return stem(tokens) if stem else tokens

    return tokenize


def _top(doc_ids: list[str], scores: np.ndarray) -> dict[str, float]:
    """The DEPTH highest positive scores, ties by document id, as {document id: score}."""
    hit = np.flatnonzero(scores > 0)
    if len(hit) > DEPTH:
        # Only what can reach the top DEPTH is sorted: every score at or above the DEPTH-th largest, ties included.
        floor = np.partition(scores[hit], len(hit) - DEPTH)[len(hit) - DEPTH]
        hit = hit[scores[hit] >= floor]
    ranked = sorted(hit, key=lambda i: (-scores[i], doc_ids[i]))[:DEPTH]
    return {doc_ids[i]: float(scores[i]) for i in ranked}


def reference_lucene_bm25(docs: dict[str, list[str]], queries: dict[str, list[str]], k1: float, b: float):
    """Lucene BM25 from the formula (float64, inverted lists), sharing no code with bm25s or groundkit.

    A term's list holds its documents and their saturated term frequencies; a query adds idf times each list
    into the documents' scores, term by term, in the query's order.
    """
    doc_ids = list(docs)
    postings: dict[str, tuple[list[int], list[float]]] = {}
    n, avgdl = len(docs), sum(len(tokens) for tokens in docs.values()) / len(docs)
    for number, tokens in enumerate(docs.values()):
        norm = k1 * (1 - b + b * len(tokens) / avgdl)
        for term, tf in Counter(tokens).items():
            where, saturated = postings.setdefault(term, ([], []))
            where.append(number)
            saturated.append(tf / (tf + norm))
    lists = {term: (np.array(where), np.array(saturated)) for term, (where, saturated) in postings.items()}
    run = {}
    for query_id, tokens in queries.items():
        scores = np.zeros(n)
        for term in tokens:  # a repeated query token counts once per occurrence
            where, saturated = lists.get(term, (np.array([], dtype=int), np.array([])))
            idf = math.log(1 + (n - len(where) + 0.5) / (len(where) + 0.5))
            scores[where] += idf * saturated  # a document is at most once in a list
        run[query_id] = _top(doc_ids, scores)
    return run


def bm25s_direct(docs: dict[str, list[str]], queries: dict[str, list[str]], k1: float, b: float):
    """bm25s used as its own README shows, on the same tokens."""
    import bm25s

    doc_ids = list(docs)
    engine = bm25s.BM25(k1=k1, b=b, method="lucene")
    engine.index(list(docs.values()), show_progress=False)
    vocab = engine.vocab_dict
    run = {}
    for query_id, tokens in queries.items():
        known = [t for t in tokens if t in vocab]
        run[query_id] = _top(doc_ids, np.asarray(engine.get_scores(known), dtype=np.float64))
    return run


def measure(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> dict[str, float]:
    return {str(m): v for m, v in ir_measures.calc_aggregate(MEASURES, qrels, run).items()}


def groundkit_run_by_document(out: Path) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]:
    """run.trec and qrels.trec with chunk ids mapped back to BEIR document ids (one chunk per document)."""
    to_doc = {}
    for line in (out / "chunks.jsonl").read_text(encoding="utf-8").splitlines():
        chunk = json.loads(line)
        assert chunk["chunk_id"] not in to_doc
        to_doc[chunk["chunk_id"]] = chunk["document"].removesuffix(".txt")
    run: dict[str, dict[str, float]] = {}
    for line in (out / "run.trec").read_text(encoding="utf-8").splitlines():
        query_id, _, chunk_id, _, score, _ = line.split(" ")
        run.setdefault(query_id, {})[to_doc[chunk_id]] = float(score)
    qrels: dict[str, dict[str, int]] = {}
    for line in (out / "qrels.trec").read_text(encoding="utf-8").splitlines():
        query_id, _, chunk_id, grade = line.split(" ")
        qrels.setdefault(query_id, {})[to_doc[chunk_id]] = int(grade)
    return run, qrels


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_scifact_bm25_matches_independent_implementations_and_the_record(
    dataset, imported, beir_texts, tmp_path, setting
):
    overrides, recorded = SETTINGS[setting]
    out = tmp_path / "run"
    sets = [arg for key, value in overrides.items() for arg in ("--set", f"{key}={value}")]
    groundkit("run", "--corpus", str(imported / "corpus"), "--judgments", str(imported / "judgments.jsonl"),
              "--out", str(out), "--set", "chunk.strategy=document", "--set", f"retrieve.depth={DEPTH}",
              # SciFact's claims often hold a term found only in the cited abstract; the audit
              # reports that share (about 16%), which is a property of the collection, not a defect.
              "--set", "audit.max_trivial_share=1.0", *sets)

    run, qrels = groundkit_run_by_document(out)
    expected_qrels = beir_qrels(dataset)
    assert qrels == expected_qrels  # whole-document spans export exactly BEIR's relevant pairs
    measured = measure(qrels, run)

    tokenize = reference_tokenizer(overrides)
    docs = {doc_id: tokenize(text) for doc_id, text in beir_texts[0].items()}
    queries = {query_id: tokenize(text) for query_id, text in beir_texts[1].items() if query_id in expected_qrels}
    k1, b = float(overrides.get("bm25.k1", 1.2)), float(overrides.get("bm25.b", 0.75))
    for reference in (reference_lucene_bm25, bm25s_direct):
        independent = measure(expected_qrels, reference(docs, queries, k1, b))
        assert measured == pytest.approx(independent, abs=5e-5), reference.__name__

    assert measured == pytest.approx(recorded, abs=5e-5), f"{setting}: measured {measured}, recorded {recorded}"

    # groundkit's own metrics agree where the definitions coincide (binary gain, one chunk per document).
    metrics = json.loads((out / "detail.json").read_text(encoding="utf-8"))["answerable"]
    assert metrics["queries"] == len(expected_qrels) == 300
    assert metrics["ndcg@10"] == pytest.approx(measured["nDCG@10"], abs=5e-5)
    full_rr = ir_measures.calc_aggregate([RR], qrels, run)[RR]
    assert metrics["mrr"] == pytest.approx(full_rr, abs=5e-5)


@pytest.fixture(scope="module")
def windowed(imported: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    """SciFact cut in overlapping windows (600 characters, 200 shared), run in process; what its scoring was
    given (the metrics, the retrieved passages and the labels) is kept for the tests."""
    import groundkit.scoring.score as score_module
    from groundkit.cli import main
    from groundkit.scoring.providers import compute

    calls: list = []

    def kept(metrics, retrieved, labels, using=None):
        calls.append((metrics, retrieved, labels))
        return compute(metrics, retrieved, labels, using)

    out = tmp_path_factory.mktemp("scifact-windows") / "run"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(score_module, "compute", kept)
        assert main(["run", "--corpus", str(imported / "corpus"), "--judgments", str(imported / "judgments.jsonl"),
                     "--out", str(out), "--set", "chunk.size=600", "--set", "chunk.overlap=200",
                     "--set", "audit.max_trivial_share=1.0"]) == 0
    return out, calls


def test_scifact_every_query_scores_the_same_through_both_providers(windowed):
    from groundkit.scoring.measures import MEASURES
    from tests.scoring.test_providers import EXTRA, assert_agree

    _, calls = windowed
    ((metrics, retrieved, labels),) = calls
    assert len(retrieved) == 300 and sum(map(len, labels.qrels)) > 300  # overlapping windows: several per quote
    assert_agree([*metrics, *MEASURES.parse_all(EXTRA)], retrieved, labels)


@pytest.mark.parametrize("params", [{}, {"tokenize": {"stemmer": "english", "stopwords": "en"}}])
def test_scifact_top_passages_are_marked_as_word_by_word(windowed, params):
    from tests.reports.test_highlighting import assert_same_marks

    out, _ = windowed
    texts = {}
    for line in (out / "chunks.jsonl").read_text(encoding="utf-8").splitlines():
        chunk = json.loads(line)
        texts[chunk["chunk_id"]] = (chunk["text"][:2000], chunk["start_offset"])
    queries = {}
    for line in (out / "gold_spans.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        queries[record["query_id"]] = record["query"]
    ranked: dict[str, list[str]] = {}
    for line in (out / "run.trec").read_text(encoding="utf-8").splitlines():
        query_id, _, chunk_id, *_ = line.split()
        ranked.setdefault(query_id, []).append(chunk_id)
    cases = [(queries[q], *texts[c]) for q, ids in ranked.items() for c in ids[:10]]
    assert len(cases) == 3000 and any(not text.isascii() for _, text, _ in cases)
    assert assert_same_marks(params, cases) > 15000


@pytest.mark.integration
@pytest.mark.parametrize("params", [{}, {"tokenize": {"stemmer": "english", "stopwords": "en"}}])
def test_scifact_marks_in_chromium_are_the_word_by_word_reference(windowed, browser, params, tmp_path):
    """Chromium opens every one of the 300 queries of SciFact's report; the bold words of each of its top 10
    passages are those of the word-by-word reference (half of SciFact's documents hold a character beyond ASCII)."""
    from tests.reports.test_highlighting import assert_page_marks_as_the_reference

    out, _ = windowed
    page = browser.page()
    try:
        assert assert_page_marks_as_the_reference(page, out, params, tmp_path / "report.html") > 15000
    finally:
        page.close()
